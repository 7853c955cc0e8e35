"""Which actual calls each expected step matches: the compatibility graph, built fast.

Identical steps share one class and are evaluated once. Calls are grouped by tool name; exact
arguments are looked up by a canonical hash key (computed once per call), and partial rules are
narrowed through an index on one plain-valued key before the full comparison runs.
"""

from __future__ import annotations

from bisect import bisect_left
from enum import Enum
from itertools import chain, compress, repeat
from operator import attrgetter, eq, ne
from typing import Any, Hashable

from ..trajectory import ToolCall, Trajectory
from .argrules import ArgRule, args_match, rule_for
from .expectation import ANY_ARGS, UNSET, Expectation, Step
from .matchers import result_as_compared
from .values import (
    FLAT_TYPES,
    Matcher,
    canon,
    compare_value,
    flat_match,
    has_matcher,
    is_flat,
    plain_key,
    same_flat,
    spec_key,
)

_NAME = attrgetter("name")
_ARGS = attrgetter("args")
_OWN = attrgetter("args_mode", "result", "error")
_PLAIN = (None, UNSET, None)
_DICT_ONLY = frozenset({dict})
_RAW = "\x00raw"
_UNSET_SPEC = "\x00unset"
_ABSENT = object()
_NOT_MAP = object()


class StepTest(Enum):
    """How a step tests one call directly (``Candidates.accepts``), decided once per step."""

    ANY = "any arguments"
    SAME = "flat map, exact: same_flat"
    FLAT = "flat map, partial rule: flat_match"
    GENERAL = "the step's class's candidate list"


def args_key(args: Any) -> Hashable:
    """The canonical key of arguments: raw strings tagged apart from decoded objects."""
    return (_RAW, args) if isinstance(args, str) else canon(args)


class Candidates:
    """Step classes and, per class, the sorted positions of the calls it matches; direct tests of one pair.

    Classes and candidate lists are built on first use: a run whose steps pair with calls directly
    (the usual passing run) never needs them.
    """

    def __init__(self, expect: Expectation, traj: Trajectory, *, shortcuts: bool = True) -> None:
        """Keep the steps and calls; everything else is computed on demand.

        ``shortcuts`` is the one switch of the fast paths (``aligned``, ``accepts``, and the pairing's
        direct blocks and disjoint classes): off, every pair goes through the general matching.
        """
        self.shortcuts = shortcuts
        self.steps = expect.steps or ()
        self.calls = traj.calls
        self._expect = expect
        self._rules: dict[tuple[str, str | None], ArgRule] = {}
        self._rule_list: list[ArgRule] | None = None
        self._kinds: list[StepTest] | None = None
        self._aligned: bool | None = None
        self._step_class: list[int] | None = None
        self._class_steps: list[list[int]] = []
        self._class_rep: list[int] = []
        self._class_key: list[Hashable | None] = []
        self._names: list[str] | None = None
        self._by_name: dict[str, list[int]] = {}
        self._grouped = False
        self._keys: dict[int, Hashable] = {}
        self._exact: dict[str, dict[Hashable, list[int]]] = {}
        self._key_index: dict[tuple[str, str], tuple[dict[Hashable, list[int]], list[int]]] = {}
        self._key_values: dict[tuple[str, str], list[Any]] = {}
        self._unique: dict[str, dict[Any, int] | None] = {}
        self._lists: dict[int, list[int]] = {}
        self._sets: dict[int, set[int]] = {}
        self._turns: dict[int, dict[int, list[int]]] = {}
        self._turn_lists: dict[int, list[int]] = {}

    def rule(self, index: int) -> ArgRule:
        """The argument rule of one step (resolved once per tool and step ``args_mode``)."""
        step = self.steps[index]
        found = self._rules.get((step.name, step.args_mode))
        if found is None:
            found = self._rules[(step.name, step.args_mode)] = rule_for(step, self._expect)
        return found

    @property
    def rules(self) -> list[ArgRule]:
        """The argument rule of every step (built once)."""
        if self._rule_list is None:
            self._rule_list = [self.rule(i) for i in range(len(self.steps))]
        return self._rule_list

    @property
    def kinds(self) -> list[StepTest]:
        """How each step tests one call directly."""
        if self._kinds is None:
            self._kinds = [self._kind(i) for i in range(len(self.steps))]
        return self._kinds

    def _kind(self, index: int) -> StepTest:
        """One step's kind: flat argument maps under a plain rule compare in one loop, the rest via classes."""
        step = self.steps[index]
        if step.result is not UNSET or step.error is not None:
            return StepTest.GENERAL
        rule = self.rule(index)
        if step.args is ANY_ARGS or rule.mode == "ignore":
            return StepTest.ANY
        if rule.fields or rule.compare or not is_flat(step.args):
            return StepTest.GENERAL
        return StepTest.SAME if rule.mode == "exact" else StepTest.FLAT

    def accepts(self, index: int, pos: int) -> bool:
        """Whether step ``index`` matches the call at ``pos``: ``matches`` without building candidate lists."""
        step, call = self.steps[index], self.calls[pos]
        if step.name != call.name:
            return False
        kind = self.kinds[index]
        if kind is StepTest.SAME:
            return same_flat(step.args, call.args)
        if kind is StepTest.FLAT:
            return flat_match(step.args, call.args, self.rule(index).mode)
        return kind is StepTest.ANY or self.matches(index, pos)

    def aligned(self) -> bool:
        """Whether step ``i`` matches call ``i`` for every ``i`` and no call can match steps of two classes.

        Calls cannot match two classes (candidate lists are disjoint) when every step's arguments
        are a flat map compared exactly, or under ``superset`` with the same keys as every other step
        of its tool, and no step has its own ``args_mode``, ``result`` or ``error``.
        """
        if self._aligned is None:
            self._aligned = self.shortcuts and self._check_aligned()
        return self._aligned

    def _check_aligned(self) -> bool:
        """Compute ``aligned``: names, per-step rules and argument types column by column, then the arguments."""
        steps, calls = self.steps, self.calls
        names = list(map(_NAME, steps))
        if len(steps) != len(calls) or names != list(map(_NAME, calls)):
            return False
        if any(map(ne, map(_OWN, steps), repeat(_PLAIN))):
            return False
        expected, actual = list(map(_ARGS, steps)), list(map(_ARGS, calls))
        if not set(map(type, expected)) <= _DICT_ONLY:
            return False
        first = dict(zip(reversed(names), range(len(names) - 1, -1, -1)))
        modes = {name: _plain_mode(self.rule(index)) for name, index in first.items()}
        if all(mode == "exact" for mode in modes.values()):
            return expected == actual and _flat_values(expected) and _flat_values(actual)
        keys: dict[str, Any] = {}
        for name, args, found in zip(names, expected, actual):
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
        keys = {self.class_key(i)[0] for i in range(start, stop)}
        return len(keys) == stop - start

    @property
    def step_class(self) -> list[int]:
        """The class of every step."""
        if self._step_class is None:
            self._classify()
        return self._step_class  # type: ignore[return-value]

    @property
    def class_steps(self) -> list[list[int]]:
        """The steps of every class, ascending."""
        if self._step_class is None:
            self._classify()
        return self._class_steps

    def class_key(self, index: int) -> tuple[Hashable, bool]:
        """A step's class identity (name, rule, arguments, result, error) and whether its arguments are plain."""
        step = self.steps[index]
        args, plain = _spec(step.args)
        result = _UNSET_SPEC if step.result is UNSET else _spec(step.result)[0]
        return (step.name, step.args_mode, args, result, step.error), plain

    def _classify(self) -> None:
        """Group identical steps (same name, rule, arguments, result and error) into classes."""
        seen: dict[Hashable, int] = {}
        step_class = self._step_class = []
        for index in range(len(self.steps)):
            key, plain = self.class_key(index)
            cls = seen.setdefault(key, len(seen))
            if cls == len(self._class_steps):
                self._class_steps.append([])
                self._class_rep.append(index)
                self._class_key.append(key[2] if plain else None)  # type: ignore[index]
            self._class_steps[cls].append(index)
            step_class.append(cls)

    def of_class(self, cls: int) -> list[int]:
        """Positions of the calls a class matches, ascending."""
        found = self._lists.get(cls)
        if found is None:
            index = self._class_rep[cls]
            if self.shortcuts and self.kinds[index] is StepTest.FLAT:
                found = self._flat(self.steps[index], self.rule(index).mode)
            else:
                found = self._compute(self.steps[index], self.rule(index), self._class_key[cls])
            self._lists[cls] = found
        return found

    def _flat(self, step: Step, mode: str) -> list[int]:
        """``_compute`` for a flat map under a partial rule: the calls holding its first string value (any call of
        the tool under ``subset``, where the key may be absent), each tested by ``flat_match`` in one loop. Most
        steps are like these (a tool and a few scalar arguments), and one loop costs them less than
        the general narrowing and ``args_match``."""
        args = step.args
        pool = None
        if mode != "subset":
            for key, value in args.items():
                if type(value) is str:
                    pool = self._with_value(step.name, key, value, False)
                    break
        if pool is None:
            pool = self.positions(step.name)
        calls = self.calls
        return [pos for pos in pool if flat_match(args, calls[pos].args, mode)]

    def _unique_index(self, key: str) -> dict[Any, int] | None:
        """Each call's value of ``key`` to its position, when every call's arguments are a map and no value is held
        by two calls (calls without ``key`` aside); None otherwise (or for a value that cannot be a key)."""
        args = list(map(_ARGS, self.calls))
        if not set(map(type, args)) <= _DICT_ONLY:
            return None
        held = list(map(dict.get, args, repeat(key), repeat(_ABSENT)))
        try:
            index = dict(zip(held, range(len(held))))
        except TypeError:  # a list or a map
            return None
        without = held.count(_ABSENT)
        return index if len(index) + max(without - 1, 0) == len(held) else None

    def matches(self, step_index: int, pos: int) -> bool:
        """Whether a step matches the call at ``pos``."""
        cls = self.step_class[step_index]
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

    def positions(self, name: str) -> list[int]:
        """The positions of one tool's calls, ascending, found once per tool.

        The first tool asked for is found by a scan at C speed: a policy over logs often names one tool, and
        grouping every call by name in Python was a large part of its check. The second groups every
        call at once, which costs less than a scan per tool from the third on.
        """
        found = self._by_name.get(name)
        if found is None:
            names = self._names
            if names is None:
                names = self._names = list(map(_NAME, self.calls))
                found = list(compress(range(len(names)), map(name.__eq__, names)))
            elif not self._grouped:
                groups: dict[str, list[int]] = {}
                for pos, called in enumerate(names):
                    groups.setdefault(called, []).append(pos)
                self._by_name.update(groups)
                self._grouped = True
                found = groups.get(name, [])
            else:
                found = []
            self._by_name[name] = found
        return found

    def _compute(self, step: Step, rule: ArgRule, key: Hashable | None) -> list[int]:
        """Every call matching one step: name, then arguments, then result and error."""
        pool = self.positions(step.name)
        args = step.args
        if args is ANY_ARGS or rule.mode == "ignore" or not pool:
            found = pool
        elif rule.mode == "exact" and not rule.fields and not rule.compare and key is not None:
            found = self._exact_bucket(step.name).get(key, [])
        else:
            narrowed = self._narrow(step, rule, pool)
            calls = self.calls
            found = [p for p in narrowed if args_match(args, calls[p].args, rule)]
        if step.result is not UNSET or step.error is not None:
            found = [p for p in found if result_ok(step, self.calls[p])]
        return found

    def _exact_bucket(self, name: str) -> dict[Hashable, list[int]]:
        """Calls of one tool by canonical argument key, built once per tool."""
        bucket = self._exact.get(name)
        if bucket is None:
            bucket = self._exact[name] = {}
            for pos in self.positions(name):
                bucket.setdefault(self._key(pos), []).append(pos)
        return bucket

    def _key(self, pos: int) -> Hashable:
        """A call's canonical argument key, computed once per evaluation."""
        key = self._keys.get(pos)
        if key is None:
            key = self._keys[pos] = args_key(self.calls[pos].args)
        return key

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
            bucket = self._with_value(step.name, key, value, rule.mode == "subset")
            if len(bucket) < len(best):
                best = bucket
        return best

    def _with_value(self, name: str, key: str, value: Any, or_absent: bool) -> list[int]:
        """The calls of one tool whose ``key`` can hold ``value`` (with ``or_absent``, and those without ``key``).

        A string is looked up in ``_unique_index`` when every call's value of ``key`` is unique (the usual ids and
        queries: each step then touches one call, not every call of its tool), else found by a scan at C speed over
        the tool's values of ``key`` (indexing every call's value by its canonical key cost more than the scans).
        Other values use that canonical index.
        """
        if type(value) is not str:
            values, absent = self._index(name, key)
            bucket = values.get(canon(value), [])
            return sorted(bucket + absent) if or_absent and absent else bucket
        if not or_absent:
            if key not in self._unique:
                self._unique[key] = self._unique_index(key)  # once per key, at C speed
            unique = self._unique[key]
            if unique is not None:
                pos = unique.get(value)
                return [pos] if pos is not None and self.calls[pos].name == name else []
        pool, held = self.positions(name), self._values(name, key)
        if or_absent:
            return [pos for pos, got in zip(pool, held) if got is _ABSENT or got == value]
        return list(compress(pool, map(eq, held, repeat(value))))

    def _values(self, name: str, key: str) -> list[Any]:
        """Each call of one tool's value of ``key`` (``_ABSENT`` without it, ``_NOT_MAP`` for arguments not a map)."""
        found = self._key_values.get((name, key))
        if found is None:
            args = list(map(_ARGS, map(self.calls.__getitem__, self.positions(name))))
            if set(map(type, args)) <= _DICT_ONLY:  # the usual case, at C speed
                found = list(map(dict.get, args, repeat(key), repeat(_ABSENT)))
            else:
                found = [a.get(key, _ABSENT) if isinstance(a, dict) else _NOT_MAP for a in args]
            self._key_values[(name, key)] = found
        return found

    def _index(self, name: str, key: str) -> tuple[dict[Hashable, list[int]], list[int]]:
        """Calls of one tool by the canonical value of one argument key (and those without it)."""
        found = self._key_index.get((name, key))
        if found is None:
            values: dict[Hashable, list[int]] = {}
            absent: list[int] = []
            for pos in self.positions(name):
                args = self.calls[pos].args
                if isinstance(args, dict):
                    if key in args:
                        values.setdefault(canon(args[key]), []).append(pos)
                    else:
                        absent.append(pos)
            found = self._key_index[(name, key)] = (values, absent)
        return found


def _flat_values(maps: list[dict[str, Any]]) -> bool:
    """Whether every value of every map is a string, a non-boolean number or null (see ``is_flat``)."""
    return set(map(type, chain.from_iterable(map(dict.values, maps)))) <= FLAT_TYPES


def _plain_mode(rule: ArgRule) -> str:
    """The rule's mode when it compares whole argument maps (no fields, no callable), else ``""``."""
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


def _spec(value: Any) -> tuple[Hashable, bool]:
    """The class key of an expected value, and whether it is plain (no matchers, a lookup key)."""
    if value is ANY_ARGS:
        return "\x00any", False
    if value is UNSET:
        return "\x00unset", False
    if isinstance(value, str):
        return (_RAW, value), True
    key = plain_key(value)
    return (
        (("\x00spec", spec_key(value)), False) if key is None and value is not None else (key, True)
    )


def result_ok(step: Step, call: ToolCall) -> bool:
    """Whether the call's recorded result and error flag satisfy the step's ``result`` and ``error``."""
    if step.error is not None and bool(call.error) != step.error:
        return False
    if step.result is UNSET:
        return True
    return call.has_result and compare_value(
        step.result, result_as_compared(step.result, call.result), "exact"
    )
