"""One expectation compiled once: its steps' rules, kinds and classes, the checks it sets, whether
it reads calls' details, and the verdict of steps that are tool names alone.

``evaluate`` compiles the plan of the expectation it is given; a caller evaluating one expectation
on many runs (a bulk case) compiles it once and passes it along (``evaluate(..., plan=plan)``). The
parts only some runs need (rules, kinds, classes) are worked out on first use and then kept.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable
from enum import Enum
from operator import le
from typing import Any

from .argrules import ArgRule, rule_for
from .callindex import RAW
from .checks import Check, checks_for
from .expectation import ANY_ARGS, UNSET, Expectation, Step, is_bare
from .values import is_flat, plain_key, spec_key

BY_NAME_MODES = ("unordered", "superset", "subset")
"""The modes in which steps that are tool names alone pass on the calls' names
(``Plan.by_name``)."""
NamesTest = Callable[[list[str]], bool]
"""Whether the calls' names, in call order, pass the steps."""
_UNSET_SPEC = "\x00unset"


class StepTest(Enum):
    """How a step tests one call directly (``Candidates.accepts``), decided once per step."""

    ANY = "any arguments"
    SAME = "flat map, exact: same_flat"
    FLAT = "flat map, partial rule: flat_match"
    GENERAL = "the step's class's candidate list"


class Plan:
    """What evaluating ``expect`` on any run takes, worked out once.

    ``checks``: the checks beside the steps that ``expect`` sets (``checks_for``), in report order.
    ``by_name``: for steps that are tool names alone in an unordered mode with no ``threshold``, the
    test of the calls' names that passes exactly the runs the steps pass (the one shortcut for
    bare names: the quick pass of a bulk record and the steps check both use it); else None.
    ``reads_details``: whether some check reads calls' arguments, results or error flags, derived
    from the steps and from each check's ``reads_details`` (a lean read is safe only without).
    """

    __slots__ = (
        "expect",
        "steps",
        "checks",
        "by_name",
        "_reads_details",
        "_rules",
        "_rule_list",
        "_kinds",
        "_step_class",
        "_class_steps",
        "class_rep",
        "class_args_key",
    )

    def __init__(self, expect: Expectation, checks: tuple[Check, ...] | None = None) -> None:
        """Compile ``expect``; ``checks`` replaces ``checks_for(expect)`` (a test runs them all)."""
        self.expect = expect
        self.steps = expect.steps or ()
        self.checks = checks_for(expect) if checks is None else checks
        self.by_name = _names_test(expect)
        self._reads_details: bool | None = None
        self._rules: dict[tuple[str, str | None], ArgRule] = {}
        self._rule_list: list[ArgRule] | None = None
        self._kinds: list[StepTest] | None = None
        self._step_class: list[int] | None = None
        self._class_steps: list[list[int]] = []
        self.class_rep: list[int] = []
        """The first step of every class (filled when ``step_class`` is first asked for)."""
        self.class_args_key: list[Hashable | None] = []
        """The canonical key of every class's arguments when they are plain (no matchers), else
        None (filled with ``class_rep``)."""

    @property
    def reads_details(self) -> bool:
        """Whether some check reads calls' arguments, results or error flags."""
        if self._reads_details is None:
            expect = self.expect
            self._reads_details = (
                expect.failed_calls == "ignore"  # which calls failed is their error flag
                or any(map(_step_reads_details, self.steps))
                or any(check.reads_details(expect) for check in self.checks)
            )
        return self._reads_details

    def rule(self, index: int) -> ArgRule:
        """The argument rule of one step (resolved once per tool and step ``args_mode``)."""
        step = self.steps[index]
        found = self._rules.get((step.name, step.args_mode))
        if found is None:
            found = self._rules[(step.name, step.args_mode)] = rule_for(step, self.expect)
        return found

    @property
    def rules(self) -> list[ArgRule]:
        """The argument rule of every step."""
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
        """One step's kind: flat argument maps under a plain rule compare in one loop, the rest via
        classes."""
        step = self.steps[index]
        if step.result is not UNSET or step.error is not None:
            return StepTest.GENERAL
        rule = self.rule(index)
        if step.args is ANY_ARGS or rule.mode == "ignore":
            return StepTest.ANY
        if rule.fields or rule.compare or not is_flat(step.args):
            return StepTest.GENERAL
        return StepTest.SAME if rule.mode == "exact" else StepTest.FLAT

    @property
    def step_class(self) -> list[int]:
        """The class of every step: identical steps (same name, rule, arguments, result and error)
        share one and are evaluated once."""
        if self._step_class is None:
            self._step_class = self._classify()
        return self._step_class

    @property
    def class_steps(self) -> list[list[int]]:
        """The steps of every class, ascending."""
        if self._step_class is None:
            self._step_class = self._classify()
        return self._class_steps

    def class_key(self, index: int) -> tuple[tuple[Hashable, ...], bool]:
        """A step's class identity (name, rule, arguments, result, error) and whether its arguments
        are plain."""
        step = self.steps[index]
        args, plain = _spec(step.args)
        result = _UNSET_SPEC if step.result is UNSET else _spec(step.result)[0]
        return (step.name, step.args_mode, args, result, step.error), plain

    def _classify(self) -> list[int]:
        """Group identical steps into classes; the class of every step."""
        seen: dict[Hashable, int] = {}
        step_class = []
        for index in range(len(self.steps)):
            key, plain = self.class_key(index)
            cls = seen.setdefault(key, len(seen))
            if cls == len(self._class_steps):
                self._class_steps.append([])
                self.class_rep.append(index)
                self.class_args_key.append(key[2] if plain else None)
            self._class_steps[cls].append(index)
            step_class.append(cls)
        return step_class


def _step_reads_details(step: Step) -> bool:
    """Whether a step looks at a call's arguments, result or error flag."""
    return step.args is not ANY_ARGS or step.result is not UNSET or step.error is not None


def _names_test(expect: Expectation) -> NamesTest | None:
    """``Plan.by_name``: steps that are names alone pair each tool's steps in order with its calls
    in order (the general matching does the same: they make one class per tool, whose candidates
    no other class shares). ``superset`` passes when each tool is called at least as often as
    steps name it; ``unordered`` exactly as often and no other tool; ``subset`` at most as often
    and no other tool."""
    steps = expect.steps
    if not steps or expect.mode not in BY_NAME_MODES or expect.threshold is not None:
        return None
    if not all(map(is_bare, steps)):
        return None
    wanted = Counter(step.name for step in steps)
    tools, times, count = tuple(wanted), tuple(wanted.values()), len(steps)
    if expect.mode == "superset":
        return lambda names: all(map(le, times, map(names.count, tools)))
    if expect.mode == "unordered":
        return lambda names: len(names) == count and tuple(map(names.count, tools)) == times

    def subset(names: list[str]) -> bool:
        found = tuple(map(names.count, tools))
        return sum(found) == len(names) and all(map(le, found, times))

    return subset


def _spec(value: Any) -> tuple[Hashable, bool]:
    """The class key of an expected value, and whether it is plain (no matchers, a lookup key)."""
    if value is ANY_ARGS:
        return "\x00any", False
    if value is UNSET:
        return _UNSET_SPEC, False
    if isinstance(value, str):
        return (RAW, value), True
    key = plain_key(value)
    if key is None and value is not None:
        return ("\x00spec", spec_key(value)), False
    return key, True
