"""Which actual calls each expected step matches: the compatibility graph, built fast.

Identical steps share one class and are evaluated once. Calls are grouped by tool name; exact
arguments are looked up by a canonical hash key (computed once per call), and partial rules are
narrowed through an index on one plain-valued key before the full comparison runs.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import Any, Hashable

from .argrules import ArgRule, args_match, rule_for
from .expected import ANY_ARGS, UNSET, Expectation, Step
from .trajectory import ToolCall, Trajectory
from .values import Matcher, canon, compare_value, has_matcher, plain_key, spec_key

_RAW = "\x00raw"


def args_key(args: Any) -> Hashable:
    """The canonical key of arguments: raw strings tagged apart from decoded objects."""
    return (_RAW, args) if isinstance(args, str) else canon(args)


class Candidates:
    """Step classes and, per class, the sorted positions of the calls it matches."""

    def __init__(self, expect: Expectation, traj: Trajectory) -> None:
        self.steps = expect.steps or ()
        self.calls = traj.calls
        rules: dict[tuple[str, str | None], ArgRule] = {}
        self.rules = [
            rules.get((s.name, s.args_mode)) or rules.setdefault((s.name, s.args_mode), rule_for(s, expect))
            for s in self.steps
        ]
        self.step_class: list[int] = []
        self.class_steps: list[list[int]] = []
        self._class_rep: list[int] = []
        self._class_key: list[Hashable | None] = []
        self._classify()
        self._by_name: dict[str, list[int]] = {}
        for pos, call in enumerate(self.calls):
            self._by_name.setdefault(call.name, []).append(pos)
        self._keys: dict[int, Hashable] = {}
        self._exact: dict[str, dict[Hashable, list[int]]] = {}
        self._key_index: dict[tuple[str, str], tuple[dict[Hashable, list[int]], list[int]]] = {}
        self._lists: dict[int, list[int]] = {}
        self._sets: dict[int, set[int]] = {}
        self._turns: dict[int, dict[int, list[int]]] = {}
        self._turn_lists: dict[int, list[int]] = {}

    def _classify(self) -> None:
        """Group identical steps (same name, rule, arguments, result and error) into classes."""
        seen: dict[Hashable, int] = {}
        for index, step in enumerate(self.steps):
            args, plain = _spec(step.args)
            key = (step.name, step.args_mode, args, _spec(step.result)[0], step.error)
            cls = seen.setdefault(key, len(seen))
            if cls == len(self.class_steps):
                self.class_steps.append([])
                self._class_rep.append(index)
                self._class_key.append(args if plain else None)
            self.class_steps[cls].append(index)
            self.step_class.append(cls)

    def of_class(self, cls: int) -> list[int]:
        """Positions of the calls a class matches, ascending."""
        found = self._lists.get(cls)
        if found is None:
            index = self._class_rep[cls]
            found = self._compute(self.steps[index], self.rules[index], self._class_key[cls])
            self._lists[cls] = found
        return found

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

    def _compute(self, step: Step, rule: ArgRule, key: Hashable | None) -> list[int]:
        """Every call matching one step: name, then arguments, then result and error."""
        pool = self._by_name.get(step.name, [])
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
            for pos in self._by_name[name]:
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
            values, absent = self._index(step.name, key)
            bucket = values.get(canon(value), [])
            if rule.mode == "subset" and absent:
                bucket = sorted(bucket + absent)
            if len(bucket) < len(best):
                best = bucket
        return best

    def _index(self, name: str, key: str) -> tuple[dict[Hashable, list[int]], list[int]]:
        """Calls of one tool by the canonical value of one argument key (and those without it)."""
        found = self._key_index.get((name, key))
        if found is None:
            values: dict[Hashable, list[int]] = {}
            absent: list[int] = []
            for pos in self._by_name[name]:
                args = self.calls[pos].args
                if isinstance(args, dict):
                    if key in args:
                        values.setdefault(canon(args[key]), []).append(pos)
                    else:
                        absent.append(pos)
            found = self._key_index[(name, key)] = (values, absent)
        return found


def _indexable(value: Any, mode: str) -> bool:
    """Whether equality of canonical keys is necessary for this expected value to match."""
    if isinstance(value, (dict, list)):
        if has_matcher(value):
            return False
        return mode == "exact" or (isinstance(value, list) and not any(isinstance(v, (dict, list)) for v in value))
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
    return (("\x00spec", spec_key(value)), False) if key is None and value is not None else (key, True)


def result_ok(step: Step, call: ToolCall) -> bool:
    """Whether the call's recorded result and error flag satisfy the step's ``result`` and ``error``."""
    if step.error is not None and bool(call.error) != step.error:
        return False
    if step.result is UNSET:
        return True
    return call.has_result and compare_value(step.result, call.result, "exact")
