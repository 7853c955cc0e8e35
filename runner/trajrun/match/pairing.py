"""Pairing steps with calls per match mode: maximum matchings, and turn-aware blocks for ordered
modes.

``unordered``, ``superset`` and ``subset`` use a maximum matching (never a greedy pairing).
``strict`` and ``in_order`` respect turns: calls of one turn are parallel, so each turn takes a
block of consecutive steps (a ``parallel`` group never split) matched to its calls by a maximum
matching. The longest feasible block per turn decides whether every step can be paired; when
some cannot, a DP over (step, turn) finds the alignment with the most pairs for the report.

The ``zip`` calls on the matching path go without ``strict=`` (``noqa: B905``): the keyword costs an
argument parse per call, more than zipping a few items, and they run per class, turn or path.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from operator import attrgetter, le
from typing import Any

from ..trajectory import ToolCall
from .bipartite import max_matching
from .compatibility import Candidates
from .expectation import Step

Pairs = dict[int, int]
"""Expected step index -> actual call position."""
_GROUP = attrgetter("group")


def pair(mode: str, cand: Candidates) -> tuple[Pairs, bool]:
    """The mode's pairing and whether the mode holds."""
    n, m = len(cand.steps), len(cand.calls)
    if cand.aligned() and (
        mode not in ("strict", "in_order") or _rising(cand.calls) and _together(cand)
    ):
        return dict(zip(range(n), range(m))), True  # noqa: B905
    if mode in ("strict", "in_order"):
        pairs = _ordered(cand)
        return pairs, len(pairs) == n and (mode == "in_order" or n == m)
    pairs = _unordered(cand)
    need_steps = mode in ("unordered", "superset")
    need_calls = mode in ("unordered", "subset")
    return pairs, (not need_steps or len(pairs) == n) and (not need_calls or len(pairs) == m)


def by_name(cand: Candidates) -> Pairs | None:
    """The pairs of a passing steps check whose steps are tool names alone (``Plan.by_name``),
    without candidate classes: each tool's steps in order with its calls in order, as the general
    matching pairs them; None when the plan has no such test or the run fails it (the general
    matching then reports it)."""
    passes = cand.plan.by_name
    if passes is None or not passes(cand.index.names):
        return None
    taken: dict[str, int] = {}
    pairs: Pairs = {}
    for index, step in enumerate(cand.steps):
        pool, k = cand.index.positions(step.name), taken.get(step.name, 0)
        if k < len(pool):
            pairs[index] = pool[k]
            taken[step.name] = k + 1
    return pairs


def _rising(calls: tuple[ToolCall, ...]) -> bool:
    """Whether turn numbers never decrease along the calls (always so for calls read from a
    source)."""
    turns = [call.turn for call in calls]
    return all(map(le, turns, turns[1:]))


def _together(cand: Candidates) -> bool:
    """Whether, pairing step ``i`` with call ``i``, every parallel group's calls share one turn."""
    if set(map(_GROUP, cand.steps)) <= {None}:
        return True
    turns: dict[int, int] = {}
    for step, call in zip(cand.steps, cand.calls):  # noqa: B905
        if step.group is not None and turns.setdefault(step.group, call.turn) != call.turn:
            return False
    return True


def max_size(cand: Candidates) -> int:
    """The size of a maximum matching, order ignored."""
    return len(cand.steps) if cand.aligned() else len(_unordered(cand))


def _unordered(cand: Candidates) -> Pairs:
    """A maximum matching between all steps and all calls.

    When no two classes share a candidate (the usual case with exact arguments), each class
    simply takes its own candidates in order; otherwise the bipartite matching decides.
    """
    classes = list(range(len(cand.plan.class_steps)))
    lists = [cand.of_class(c) for c in classes]
    if cand.shortcuts and sum(map(len, lists)) == len(set().union(*lists)):
        pairs: Pairs = {}
        for members, found in zip(cand.plan.class_steps, lists):  # noqa: B905
            pairs.update(zip(members, found))  # noqa: B905
        return pairs
    return _match_block(cand, classes, [cand.plan.class_steps[c] for c in classes], cand.of_class)


def _match_block(
    cand: Candidates, classes: list[int], members: list[list[int]], edges: Any
) -> Pairs:
    """Match classes (each with its step indices) to calls given by ``edges(cls)``; pair in
    order."""
    local: dict[int, int] = {}
    adj: list[list[int]] = []
    for cls in classes:
        row = []
        for pos in edges(cls):
            row.append(local.setdefault(pos, len(local)))
        adj.append(row)
    owner = max_matching([len(m) for m in members], adj, len(local))
    taken: list[list[int]] = [[] for _ in classes]
    for pos, slot in local.items():
        if owner[slot] >= 0:
            taken[owner[slot]].append(pos)
    pairs: Pairs = {}
    for steps, positions in zip(members, taken):  # noqa: B905
        pairs.update(zip(steps, sorted(positions)))  # noqa: B905
    return pairs


def _ordered(cand: Candidates) -> Pairs:
    """The most pairs with turn numbers never decreasing along the steps, a parallel group within
    one turn.

    Turn by turn, the longest block of whole steps (a group counts as one) that the turn's calls can
    all take; when that leaves a step unpaired, the optimal alignment (``_optimal``) replaces it, so
    the report names only the true differences (one missing step, not a cascade).
    """
    units = _units(cand.steps)
    turns = _turns(cand.calls)
    pairs = _greedy(cand, units, turns)
    if len(pairs) < len(cand.steps) and len(units) * len(turns) <= ALIGN_CELLS:
        return _optimal(cand, units, turns, len(pairs)) or pairs
    return pairs


ALIGN_CELLS = 250_000
"""Above this many (step, turn) cells the ordered modes keep the turn-by-turn pairing: the verdict
is exact either way, but the diagnosis may then list more differences than the fewest possible."""
ALIGN_WORK = 2_000_000
"""The most augmenting-path steps the optimal alignment may take before it gives up on a huge
run."""


def _units(steps: tuple[Step, ...]) -> list[int]:
    """Where each unit starts (a plain step, or a whole parallel group), then ``len(steps)``."""
    starts = [
        i
        for i, step in enumerate(steps)
        if step.group is None or i == 0 or steps[i - 1].group != step.group
    ]
    return [*starts, len(steps)]


def _turns(calls: tuple[ToolCall, ...]) -> list[tuple[int, list[int]]]:
    """Each turn number with the positions of its calls, in turn order."""
    turns: dict[int, list[int]] = {}
    for pos, call in enumerate(calls):
        turns.setdefault(call.turn, []).append(pos)
    return sorted(turns.items())


def _greedy(cand: Candidates, units: list[int], turns: list[tuple[int, list[int]]]) -> Pairs:
    """Turn by turn, the longest block of whole units from the current one that the turn's calls all
    take.

    Optimal when every step can be paired (taking more steps earlier never hurts later turns); a
    unit no later turn can take is skipped so the rest still align.
    """
    pairs: Pairs = {}
    u, last, edges = 0, len(units) - 1, set(units)
    for turn, calls in turns:
        if u == last:
            break
        block = _direct_block(cand, units[u], edges, calls) if cand.shortcuts else None
        if block is None:
            block = _longest_block(cand, units, u, turn, calls)
        if not block and _reachable(cand, units[u], turn) is None:
            while u < last and _reachable(cand, units[u], turn) is None:
                u += 1
            block = _longest_block(cand, units, u, turn, calls) if u < last else {}
        pairs.update(block)
        u = bisect_left(units, units[u] + len(block), u) if block else u
    return pairs


def _optimal(
    cand: Candidates, units: list[int], turns: list[tuple[int, list[int]]], floor: int
) -> Pairs | None:
    """The most pairs when each turn takes a block of whole units and skipped steps are missing: a
    DP over (unit, turn), each block a maximum matching; None when it would take more than
    ``ALIGN_WORK`` steps.

    ``best[t][u]`` is the most pairs units ``u:`` can make with turns ``t:``; a block that cannot
    grow its matching any further (every call of the turn taken, or ``_reach`` says none can be)
    stops.
    """
    count, budget = len(units) - 1, [ALIGN_WORK]
    best = [[0] * (count + 1) for _ in range(len(turns) + 1)]
    cut = [[0] * (count + 1) for _ in range(len(turns))]
    for t in range(len(turns) - 1, -1, -1):
        turn, calls = turns[t]
        useful, reach = _reach(cand, units, turn)
        row, after = best[t], best[t + 1]
        for u in range(count - 1, -1, -1):
            row[u], cut[t][u] = after[u], u
            growing, limit = _Growing(cand, turn, budget), len(reach) - bisect_left(reach, u)
            for k in useful[bisect_left(useful, u) :]:
                if not growing.add_all(range(units[k], units[k + 1])):
                    return None
                if growing.size + after[k + 1] > row[u]:
                    row[u], cut[t][u] = growing.size + after[k + 1], k + 1
                if growing.size >= limit:
                    break
    return _trace(cand, units, turns, cut) if best[0][0] > floor else None


def _reach(cand: Candidates, units: list[int], turn: int) -> tuple[list[int], list[int]]:
    """The units with a step that some call of ``turn`` matches, and for each such call the last
    unit that can take it (sorted): from unit ``u`` a block can pair at most the calls whose reach
    is ``>= u``."""
    useful: list[int] = []
    last: dict[int, int] = {}
    for k in range(len(units) - 1):
        found = [
            pos
            for i in range(units[k], units[k + 1])
            for pos in cand.in_turn(cand.plan.step_class[i], turn)
        ]
        if found:
            useful.append(k)
            last.update(dict.fromkeys(found, k))
    return useful, sorted(last.values())


def _trace(
    cand: Candidates, units: list[int], turns: list[tuple[int, list[int]]], cut: list[list[int]]
) -> Pairs:
    """The pairs of the best alignment, block by block."""
    pairs: Pairs = {}
    u = 0
    for t, (turn, _) in enumerate(turns):
        stop = cut[t][u]
        if stop > u:
            growing = _Growing(cand, turn, [ALIGN_WORK])
            growing.add_all(range(units[u], units[stop]))
            pairs.update(growing.pairs())
            u = stop
    return pairs


class _Growing:
    """A maximum matching of a growing set of steps to the calls of one turn (one augmenting path
    per step).

    ``budget`` is a shared one-item list counting down the path steps left, so a huge run gives up
    early instead of running for minutes.
    """

    def __init__(self, cand: Candidates, turn: int, budget: list[int]) -> None:
        self.cand, self.turn, self.budget = cand, turn, budget
        self.owner: dict[int, int] = {}
        self.taken: dict[int, int] = {}
        self.size = 0

    def add_all(self, steps: range) -> bool:
        """Add steps, each taking a call if an augmenting path exists; False when the budget ran
        out."""
        for step in steps:
            if self._augment(step):
                self.size += 1
            if self.budget[0] <= 0:
                return False
        return True

    def pairs(self) -> Pairs:
        """Step -> call of the matching."""
        return dict(self.taken)

    def _edges(self, step: int) -> list[int]:
        """The calls of the turn that ``step`` matches."""
        return self.cand.in_turn(self.cand.plan.step_class[step], self.turn)

    def _augment(self, root: int) -> bool:
        """Find an alternating path from ``root`` to a free call and flip it (iterative: turns can
        be wide)."""
        parent: dict[int, int] = {}
        stack = [(root, iter(self._edges(root)))]
        while stack:
            self.budget[0] -= 1
            step, edges = stack[-1]
            for pos in edges:
                if pos in parent:
                    continue
                parent[pos] = step
                holder = self.owner.get(pos)
                if holder is None:
                    self._flip(pos, parent, root)
                    return True
                stack.append((holder, iter(self._edges(holder))))
                break
            else:
                stack.pop()
        return False

    def _flip(self, pos: int, parent: dict[int, int], root: int) -> None:
        """Give ``pos`` to the step that reached it, and so on back to ``root``."""
        while True:
            step = parent[pos]
            previous = self.taken.get(step)  # every step on the path but the root holds a call
            self.owner[pos], self.taken[step] = step, pos
            if step == root or previous is None:
                return
            pos = previous


def _reachable(cand: Candidates, index: int, turn: int) -> int | None:
    """The first turn at or after ``turn`` where the step has a candidate call."""
    return cand.next_turn(cand.plan.step_class[index], turn)


def _direct_block(cand: Candidates, start: int, edges: set[int], calls: list[int]) -> Pairs | None:
    """The turn's calls paired in order with the next steps, when each matches, the block ends on a
    unit's edge and no two steps share a class.

    That is exactly what ``_longest_block`` finds then (its matching takes each class's first free
    candidate in order); None sends the turn through ``_longest_block``.
    """
    stop = min(len(cand.steps), start + len(calls))
    if stop not in edges or not all(map(cand.accepts, range(start, stop), calls)):
        return None
    if stop - start > 1 and not cand.distinct(start, stop):
        return None
    return dict(zip(range(start, stop), calls))  # noqa: B905


def _longest_block(
    cand: Candidates, units: list[int], u: int, turn: int, calls: list[int]
) -> Pairs:
    """The longest run of whole units from unit ``u`` that the calls of one turn can all take."""
    start = units[u]
    edges = units[u + 1 : bisect_right(units, start + len(calls))]
    if not edges:
        return {}
    best = _block(cand, start, edges[-1], turn)
    if len(best) == edges[-1] - start:
        return best
    lo, hi, best = 0, len(edges) - 1, {}
    while lo < hi:
        mid = (lo + hi + 1) // 2
        trial = _block(cand, start, edges[mid - 1], turn)
        if len(trial) == edges[mid - 1] - start:
            lo, best = mid, trial
        else:
            hi = mid - 1
    return best


def _block(cand: Candidates, start: int, stop: int, turn: int) -> Pairs:
    """A maximum matching of steps ``start:stop`` to the calls of one turn."""
    members: dict[int, list[int]] = {}
    for index in range(start, stop):
        members.setdefault(cand.plan.step_class[index], []).append(index)
    classes = list(members)
    return _match_block(
        cand, classes, [members[c] for c in classes], lambda cls: cand.in_turn(cls, turn)
    )
