"""A pass found fast: a run that surely passes a case's checks, told from its calls' names, its turns and usage.

A bulk case runs its checks on every record of a log, and most records pass. ``quick_pass`` turns an expectation
whose steps are tool names alone (the usual policy over logs: ``steps: [lookup_user]``, ``never``, ``calls``,
``budget``) into one test of a run. A record that passes it needs no matching, report or failure list; any other
record goes through ``evaluate``, which words its failures. The tests compare the two on every small run and on
random ones.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable
from operator import le

from ..trajectory import Trajectory
from .checks import check_answer, check_latency, check_nodes, checks_for
from .expectation import Budget, Expectation, Step, is_bare

QuickPass = Callable[[Trajectory], bool]
"""True only for a run on which ``evaluate`` finds no failure and no error."""
_BY_NAME = ("unordered", "superset", "subset")
_ELSEWHERE = (check_latency, check_nodes, check_answer)
"""Checks the quick test runs as they are: rare in policies over logs."""


def quick_pass(expect: Expectation) -> tuple[QuickPass, float | None] | None:
    """The quick test of ``expect`` and the score of a run that passes it (1.0 with steps, else none); None when
    the steps need the matching (arguments, results, groups, an ordered mode, a threshold, no step at all) or
    failed calls are left out."""
    steps = expect.steps
    if expect.failed_calls == "ignore":  # the test reads names alone, not which calls failed
        return None
    if steps is not None and not (
        steps and expect.mode in _BY_NAME and expect.threshold is None and all(map(is_bare, steps))
    ):
        return None
    holds = _steps_test(expect.mode, steps) if steps else None
    never, before, rest = (
        expect.never,
        expect.before,
        tuple(c for c in checks_for(expect) if c in _ELSEWHERE),
    )
    bounds = tuple(
        (name, bound.min or 0, sys.maxsize if bound.max is None else bound.max)
        for name, bound in expect.calls.items()
    )
    budget = expect.budget or Budget()
    most_calls, most_turns = (
        sys.maxsize if most is None else most for most in (budget.calls, budget.turns)
    )
    tokens = budget.tokens

    def passes(run: Trajectory) -> bool:
        names = run.names
        if (
            len(names) > most_calls
            or run.turns > most_turns
            or (holds is not None and not holds(names))
        ):
            return False
        if never and any(map(names.__contains__, never)):
            return False
        if bounds and any(not low <= names.count(name) <= high for name, low, high in bounds):
            return False
        if tokens is not None and (run.usage is None or run.usage.total_tokens > tokens):
            return False
        if before and not all(run.called_before(first, then) for first, then in before):
            return False
        errors: list[str] = []
        return not any(check(expect, run, errors) for check in rest) and not errors

    return passes, 1.0 if steps else None


def _steps_test(mode: str, steps: tuple[Step, ...]) -> Callable[[list[str]], bool]:
    """Whether the calls' names pass steps that are names alone, as ``by_name`` pairs them: ``superset``, each
    name called at least as often as steps name it; ``unordered``, exactly as often and no other tool;
    ``subset``, at most as often and no other tool."""
    wanted = Counter(step.name for step in steps)
    tools, times = tuple(wanted), tuple(wanted.values())
    if mode == "superset":
        return lambda names: all(map(le, times, map(names.count, tools)))
    if mode == "unordered":
        return lambda names: len(names) == len(steps) and tuple(map(names.count, tools)) == times

    def subset(names: list[str]) -> bool:
        found = tuple(map(names.count, tools))
        return sum(found) == len(names) and all(map(le, found, times))

    return subset
