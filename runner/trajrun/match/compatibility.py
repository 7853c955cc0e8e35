"""Which actual calls each expected step matches: the compatibility graph, built fast.

Identical steps share one class and are evaluated once (``Plan.step_class``). Calls are grouped by
tool name; exact arguments are looked up by a canonical key, and partial rules are narrowed
through the values of one plain-valued key before the full comparison runs (``CallIndex``).

The ``zip`` calls on the matching path go without ``strict=`` (``noqa: B905``): the keyword costs an
argument parse per call, more than zipping a few items, and they run per class, turn or path.
"""

from __future__ import annotations

from bisect import bisect_left
from itertools import chain, repeat
from operator import attrgetter, ne
from typing import Any, Hashable

from ..trajectory import ToolCall
from .argrules import ArgRule, args_match
from .callindex import CallIndex
from .expectation import ANY_ARGS, UNSET, Step
from .matchers import result_as_compared
from .plan import Plan, StepTest
from .values import (
    FLAT_TYPES,
    Matcher,
    compare_value,
    flat_match,
    has_matcher,
    same_flat,
)

_NAME = attrgetter("name")
_ARGS = attrgetter("args")
_OWN = attrgetter("args_mode", "result", "error")
_PLAIN = (None, UNSET, None)
_DICT_ONLY = frozenset({dict})


class Candidates:
    """One plan against one run's calls: per class of steps, the sorted positions of the calls it
    matches; direct tests of one pair.

    Candidate lists are built on first use: a run whose steps pair with calls directly (the usual
    passing run) never needs them.
    """

    def __init__(self, plan: Plan, index: CallIndex, *, shortcuts: bool = True) -> None:
        """Keep the plan and the calls; everything else is computed on demand.

        ``shortcuts`` is the one switch of the fast paths (``aligned``, ``accepts``, the flat
        narrowing, and the pairing's direct blocks and disjoint classes): off, every pair goes
        through the general matching.
        """
        self.shortcuts = shortcuts
        self.plan = plan
        self.index = index
        self.steps = plan.steps
        self.calls = index.calls
        self._aligned: bool | None = None
        self._lists: dict[int, list[int]] = {}
        self._sets: dict[int, set[int]] = {}
        self._turns: dict[int, dict[int, list[int]]] = {}
        self._turn_lists: dict[int, list[int]] = {}

    def accepts(self, index: int, pos: int) -> bool:
        """Whether step ``index`` matches the call at ``pos``: ``matches`` without building
        candidate lists."""
        step, call = self.steps[index], self.calls[pos]
        if step.name != call.name:
            return False
        kind = self.plan.kinds[index]
        if kind is StepTest.SAME:
            return same_flat(step.args, call.args)
        if kind is StepTest.FLAT:
            return flat_match(step.args, call.args, self.plan.rule(index).mode)
        return kind is StepTest.ANY or self.matches(index, pos)

    def aligned(self) -> bool:
        """Whether step ``i`` matches call ``i`` for every ``i`` and no call can match steps of two
        classes.

        Calls cannot match two classes (candidate lists are disjoint) when every step's arguments
        are a flat map compared exactly, or under ``superset`` with the same keys as every other
        step of its tool, and no step has its own ``args_mode``, ``result`` or ``error``.
        """
        if self._aligned is None:
            self._aligned = self.shortcuts and self._check_aligned()
        return self._aligned

    def _check_aligned(self) -> bool:
        """Compute ``aligned``: names, per-step rules and argument types column by column, then the
        arguments."""
        steps, calls = self.steps, self.calls
        names = list(map(_NAME, steps))
        if len(steps) != len(calls) or names != list(map(_NAME, calls)):
            return False
        if any(map(ne, map(_OWN, steps), repeat(_PLAIN))):
            return False
        expected, actual = list(map(_ARGS, steps)), list(map(_ARGS, calls))
        if not set(map(type, expected)) <= _DICT_ONLY:
            return False
        first = dict(zip(reversed(names), range(len(names) - 1, -1, -1)))  # noqa: B905
        modes = {name: _plain_mode(self.plan.rule(index)) for name, index in first.items()}
        if all(mode == "exact" for mode in modes.values()):
            return expected == actual and _flat_values(expected) and _flat_values(actual)
        keys: dict[str, Any] = {}
        for name, args, found in zip(names, expected, actual):  # noqa: B905
            mode = modes[name]
            if mode == "exact":
                if not same_flat(args, found):
                    return False
            elif mode != "superset" or keys.setdefault(name, args.keys()) != args.keys():
                return False
            elif not flat_match(args, found, mode):
                return False
        return True

    def distinct(self, start: int, stop: int) -> bool:
        """Whether steps ``start:stop`` all belong to different classes."""
        names = {step.name for step in self.steps[start:stop]}
        if len(names) == stop - start:
            return True
        keys = {self.plan.class_key(i)[0] for i in range(start, stop)}
        return len(keys) == stop - start

    def of_class(self, cls: int) -> list[int]:
        """Positions of the calls a class matches, ascending."""
        found = self._lists.get(cls)
        if found is None:
            plan = self.plan
            index = plan.class_rep[cls]  # filled: ``cls`` came from ``step_class``
            step, rule = self.steps[index], plan.rule(index)
            if self.shortcuts and plan.kinds[index] is StepTest.FLAT:
                found = self._flat(step, rule.mode)
            else:
                found = self._compute(step, rule, plan.class_args_key[cls])
            self._lists[cls] = found
        return found

    def _flat(self, step: Step, mode: str) -> list[int]:
        """``_compute`` for a flat map under a partial rule: the calls holding its first string
        value (any call of the tool under ``subset``, where the key may be absent), each tested by
        ``flat_match`` in one loop. Most steps are like these (a tool and a few scalar arguments),
        and one loop costs them less than the general narrowing and ``args_match``."""
        args = step.args
        pool = None
        if mode != "subset":
            for key, value in args.items():
                if type(value) is str:
                    pool = self.index.with_value(step.name, key, value, False)
                    break
        if pool is None:
            pool = self.index.positions(step.name)
        calls = self.calls
        return [pos for pos in pool if flat_match(args, calls[pos].args, mode)]

    def matches(self, step_index: int, pos: int) -> bool:
        """Whether a step matches the call at ``pos``."""
        cls = self.plan.step_class[step_index]
        found = self._sets.get(cls)
        if found is None:
            found = self._sets[cls] = set(self.of_class(cls))
        return pos in found

    def in_turn(self, cls: int, turn: int) -> list[int]:
        """The class's candidate calls made in one turn."""
        return self._by_turn(cls).get(turn, [])

    def next_turn(self, cls: int, turn: int) -> int | None:
        """The first turn at or after ``turn`` holding a candidate of the class."""
        turns = self._turn_lists.get(cls)
        if turns is None:
            turns = self._turn_lists[cls] = sorted(self._by_turn(cls))
        at = bisect_left(turns, turn)
        return turns[at] if at < len(turns) else None

    def _by_turn(self, cls: int) -> dict[int, list[int]]:
        """The class's candidates grouped by turn, built once."""
        groups = self._turns.get(cls)
        if groups is None:
            groups = self._turns[cls] = {}
            for pos in self.of_class(cls):
                groups.setdefault(self.calls[pos].turn, []).append(pos)
        return groups

    def _compute(self, step: Step, rule: ArgRule, key: Hashable | None) -> list[int]:
        """Every call matching one step: name, then arguments, then result and error."""
        pool = self.index.positions(step.name)
        args = step.args
        if args is ANY_ARGS or rule.mode == "ignore" or not pool:
            found = pool
        elif rule.mode == "exact" and not rule.fields and not rule.compare and key is not None:
            found = self.index.exact_bucket(step.name).get(key, [])
        else:
            narrowed = self._narrow(step, rule, pool)
            calls = self.calls
            found = [p for p in narrowed if args_match(args, calls[p].args, rule)]
        if step.result is not UNSET or step.error is not None:
            found = [p for p in found if result_ok(step, self.calls[p])]
        return found

    def _narrow(self, step: Step, rule: ArgRule, pool: list[int]) -> list[int]:
        """The calls that can still match: those sharing one plain key's value (the rarest)."""
        args = step.args
        if rule.compare or rule.only_fields or not isinstance(args, dict) or not rule.plain_fields:
            return pool
        named = {name for name, _ in rule.fields}
        best = pool
        for key, value in args.items():
            if key in named or not _indexable(value, rule.mode):
                continue
            bucket = self.index.with_value(step.name, key, value, rule.mode == "subset")
            if len(bucket) < len(best):
                best = bucket
        return best


def _flat_values(maps: list[dict[str, Any]]) -> bool:
    """Whether every value of every map is a string, a non-boolean number or null (see
    ``is_flat``)."""
    return set(map(type, chain.from_iterable(map(dict.values, maps)))) <= FLAT_TYPES


def _plain_mode(rule: ArgRule) -> str:
    """The rule's mode when it compares whole argument maps (no fields, no callable), else
    ``""``."""
    return "" if rule.fields or rule.compare else rule.mode


def _indexable(value: Any, mode: str) -> bool:
    """Whether equality of canonical keys is necessary for this expected value to match."""
    if isinstance(value, (dict, list)):
        if has_matcher(value):
            return False
        return mode == "exact" or (
            isinstance(value, list) and not any(isinstance(v, (dict, list)) for v in value)
        )
    return not isinstance(value, Matcher)


def result_ok(step: Step, call: ToolCall) -> bool:
    """Whether the call's recorded result and error flag satisfy the step's ``result`` and
    ``error``."""
    if step.error is not None and bool(call.error) != step.error:
        return False
    if step.result is UNSET:
        return True
    return call.has_result and compare_value(
        step.result, result_as_compared(step.result, call.result), "exact"
    )
