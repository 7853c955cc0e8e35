"""Pairing steps with calls per match mode: maximum matchings, and turn-aware blocks for ordered modes.

``unordered``, ``superset`` and ``subset`` use a maximum matching (never a greedy pairing).
``strict`` and ``in_order`` respect turns: calls of one turn are parallel, so each turn takes a
block of consecutive steps matched to its calls by a maximum matching; the longest feasible block
per turn is optimal (taking more steps earlier never hurts later turns).
"""

from __future__ import annotations

from operator import le
from typing import Any

from ..trajectory import ToolCall
from .bipartite import max_matching
from .compatibility import Candidates

Pairs = dict[int, int]
"""Expected step index -> actual call position."""


def pair(mode: str, cand: Candidates) -> tuple[Pairs, bool]:
    """The mode's pairing and whether the mode holds."""
    n, m = len(cand.steps), len(cand.calls)
    if cand.aligned() and (mode not in ("strict", "in_order") or _rising(cand.calls)):
        return dict(zip(range(n), range(m))), True
    if mode in ("strict", "in_order"):
        pairs = _ordered(cand)
        return pairs, len(pairs) == n and (mode == "in_order" or n == m)
    pairs = _unordered(cand)
    need_steps = mode in ("unordered", "superset")
    need_calls = mode in ("unordered", "subset")
    return pairs, (not need_steps or len(pairs) == n) and (not need_calls or len(pairs) == m)



def _rising(calls: tuple[ToolCall, ...]) -> bool:
    """Whether turn numbers never decrease along the calls (always so for calls read from a source)."""
    turns = [call.turn for call in calls]
    return all(map(le, turns, turns[1:]))



def max_size(cand: Candidates) -> int:
    """The size of a maximum matching, order ignored."""
    return len(cand.steps) if cand.aligned() else len(_unordered(cand))



def _unordered(cand: Candidates) -> Pairs:
    """A maximum matching between all steps and all calls.

    When no two classes share a candidate (the usual case with exact arguments), each class
    simply takes its own candidates in order; otherwise the bipartite matching decides.
    """
    classes = list(range(len(cand.class_steps)))
    lists = [cand.of_class(c) for c in classes]
    if cand.shortcuts and sum(map(len, lists)) == len(set().union(*lists)):
        pairs: Pairs = {}
        for members, found in zip(cand.class_steps, lists):
            pairs.update(zip(members, found))
        return pairs
    return _match_block(cand, classes, [cand.class_steps[c] for c in classes], cand.of_class)



def _match_block(cand: Candidates, classes: list[int], members: list[list[int]], edges: Any) -> Pairs:
    """Match classes (each with its step indices) to calls given by ``edges(cls)``; pair in order."""
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
    for steps, positions in zip(members, taken):
        pairs.update(zip(steps, sorted(positions)))
    return pairs



def _ordered(cand: Candidates) -> Pairs:
    """Pair steps to calls with turn numbers never decreasing along the steps (a maximal prefix).

    A step that no call at or after the current turn can take is left unpaired (missing) so the
    report still aligns the steps after it.
    """
    turns: dict[int, list[int]] = {}
    for pos, call in enumerate(cand.calls):
        turns.setdefault(call.turn, []).append(pos)
    pairs: Pairs = {}
    i, n = 0, len(cand.steps)
    for turn in sorted(turns):
        if i == n:
            break
        block = _direct_block(cand, i, turns[turn]) if cand.shortcuts else None
        if block is None:
            block = _longest_block(cand, i, turn, turns[turn])
        if not block and _reachable(cand, i, turn) is None:
            while i < n and _reachable(cand, i, turn) is None:
                i += 1
            block = _longest_block(cand, i, turn, turns[turn]) if i < n else {}
        pairs.update(block)
        i += len(block)
    return pairs



def _reachable(cand: Candidates, index: int, turn: int) -> int | None:
    """The first turn at or after ``turn`` where the step has a candidate call."""
    return cand.next_turn(cand.step_class[index], turn)



def _direct_block(cand: Candidates, start: int, calls: list[int]) -> Pairs | None:
    """The turn's calls paired in order with the next steps, when each matches and no two steps share a class.

    That is exactly what ``_longest_block`` finds then (its matching takes each class's first free
    candidate in order); None sends the turn through ``_longest_block``.
    """
    stop = min(len(cand.steps), start + len(calls))
    if not all(map(cand.accepts, range(start, stop), calls)):
        return None
    if stop - start > 1 and not cand.distinct(start, stop):
        return None
    return dict(zip(range(start, stop), calls))



def _longest_block(cand: Candidates, start: int, turn: int, calls: list[int]) -> Pairs:
    """The longest run of steps from ``start`` that the calls of one turn can all take."""
    if len(calls) == 1:
        return {start: calls[0]} if cand.matches(start, calls[0]) else {}
    lo, hi = start, min(len(cand.steps), start + len(calls))
    best = _block(cand, start, hi, turn)
    if len(best) == hi - start:
        return best
    best = {}
    while lo < hi:
        mid = (lo + hi + 1) // 2
        trial = _block(cand, start, mid, turn)
        if len(trial) == mid - start:
            lo, best = mid, trial
        else:
            hi = mid - 1
    return best



def _block(cand: Candidates, start: int, stop: int, turn: int) -> Pairs:
    """A maximum matching of steps ``start:stop`` to the calls of one turn."""
    members: dict[int, list[int]] = {}
    for index in range(start, stop):
        members.setdefault(cand.step_class[index], []).append(index)
    classes = list(members)
    return _match_block(cand, classes, [members[c] for c in classes], lambda cls: cand.in_turn(cls, turn))
