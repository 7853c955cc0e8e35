"""A pass found fast: a run that surely passes a case's checks, told from its calls' names, its
turns and usage.

A bulk case runs its checks on every record of a log, and most records pass. ``quick_pass`` turns
a plan whose steps are tool names alone (the usual policy over logs: ``steps: [lookup_user]``,
``never``, ``calls``, ``budget``) into one test of a run. A record that passes it needs no
matching, report or failure list; any other record goes through ``evaluate``, which words its
failures. The tests compare the two on every small run and on random ones.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from ..trajectory import Trajectory
from .checks import BEFORE, BUDGET, CALLS, NEVER
from .expectation import Budget
from .plan import Plan

QuickPass = Callable[[Trajectory], bool]
"""True only for a run on which ``evaluate`` finds no failure and no error."""
_FROM_NAMES = (NEVER, BEFORE, CALLS, BUDGET)
"""The checks the quick test tells from names, turns and usage; it runs any other as it is."""


def quick_pass(plan: Plan) -> tuple[QuickPass, float | None] | None:
    """The quick test of a plan and the score of a run that passes it (1.0 with steps, else
    none); None when the steps need the matching (arguments, results, groups, an ordered mode, a
    threshold, no step at all: ``Plan.by_name`` is None) or failed calls are left out."""
    expect = plan.expect
    if expect.failed_calls == "ignore":  # the test reads names alone, not which calls failed
        return None
    holds = plan.by_name
    if expect.steps is not None and holds is None:
        return None
    never, before = expect.never, expect.before
    rest = tuple(check for check in plan.checks if check not in _FROM_NAMES)
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
        return all(check.run(expect, run).holds for check in rest)

    return passes, 1.0 if expect.steps else None
