"""The steps check: match modes over the compatibility graph, the partial-credit score,
``evaluate``.

``unordered``, ``superset`` and ``subset`` use a maximum matching (never a greedy pairing).
``strict`` and ``in_order`` respect turns: calls of one turn are parallel, so each turn takes a
block of consecutive steps matched to its calls by a maximum matching; the longest feasible block
per turn is optimal (taking more steps earlier never hurts later turns).
"""

from __future__ import annotations

import functools

from ..errors import CheckError
from ..trajectory import Trajectory
from .callindex import CallIndex
from .compatibility import Candidates
from .expectation import ORDERED_MODES, UNSET, Expectation
from .failed import unflagged, without_failed
from .pairing import by_name, max_size, pair
from .plan import Plan
from .steps_report import StepsReport, build_report
from .verdict import CheckFailure, Evaluation


def evaluate(
    expect: Expectation,
    traj: Trajectory,
    *,
    shortcuts: bool = True,
    verdict_only: bool = False,
    plan: Plan | None = None,
) -> Evaluation:
    """Evaluate every check of a case on one run.

    Failures come in check order (steps, never, before, calls, budget, latency, nodes, answer);
    checks that cannot be evaluated give a sentence in ``errors`` instead. ``shortcuts=False``
    turns off the fast paths of the steps check (the equivalence tests compare both ways; the
    result is the same). ``verdict_only`` (a bulk case keeps each record's outcome, checks, message
    and score alone): a steps check that passes on tool names alone reports its mode, verdict and
    score, not its pairs and unpaired calls. ``plan``: ``Plan(expect)``, for a caller evaluating
    one expectation on many runs. With ``failed_calls: ignore``, steps and the counting checks
    (``Check.counting``) see the run without failed calls.
    """
    if plan is None:
        plan = Plan(expect)
    failures: list[CheckFailure] = []
    errors: list[str] = []
    report: StepsReport | None = None
    counted = traj
    if expect.failed_calls == "ignore":
        counted = without_failed(traj)
        if (problem := unflagged(traj)) is not None:
            errors.append(problem)
    if expect.steps is not None:
        try:
            report, failure = check_steps(
                plan, counted, shortcuts=shortcuts, verdict_only=verdict_only
            )
        except CheckError as exc:
            errors.append(f"steps: {exc}")
        else:
            failures.extend([failure] if failure else [])
    for check in plan.checks:
        found = check.run(expect, counted if check.counting else traj)
        failures.extend(found.failures)
        errors.extend(found.errors)
    return Evaluation(tuple(failures), tuple(errors), report.score if report else None, report)


def check_steps(
    plan: Plan, traj: Trajectory, *, shortcuts: bool = True, verdict_only: bool = False
) -> tuple[StepsReport, CheckFailure | None]:
    """Run the steps check of a plan (``verdict_only``: see ``evaluate``); raises ``CheckError``
    when it cannot be evaluated on this run."""
    expect = plan.expect
    _require_recorded(expect, traj)
    _require_ordered(expect)
    cand = Candidates(plan, CallIndex(traj.calls), shortcuts=shortcuts)
    named = by_name(cand) if shortcuts else None
    if named is not None:  # steps by tool name alone, as most policies over logs are: passed
        if verdict_only:
            return _passed(expect.mode), None
        return build_report(expect, cand, named, True, 1.0, False), None
    pairs, mode_ok = pair(expect.mode, cand)
    total = None if mode_ok and expect.threshold is None else max_size(cand)
    score = 1.0 if total is None else f1(expect.mode, total, len(cand.steps), len(cand.calls))
    passed = mode_ok if expect.threshold is None else score >= expect.threshold
    in_order = expect.mode in ORDERED_MODES
    order_only = (
        not mode_ok
        and in_order
        and total == len(cand.steps)
        and (expect.mode == "in_order" or total == len(cand.calls))
    )
    report = build_report(expect, cand, pairs, passed, score, order_only)
    if passed:
        return report, None
    return report, CheckFailure("steps", report.summary, report.detail)


@functools.cache
def _passed(mode: str) -> StepsReport:
    """A passing steps check's verdict alone, one per mode: immutable, so every record shares it."""
    return StepsReport(mode, True, 1.0)


def _require_ordered(expect: Expectation) -> None:
    """``parallel`` groups (from a golden file or a library caller) need a mode that checks
    turns."""
    grouped = next((i for i, s in enumerate(expect.steps or ()) if s.group is not None), None)
    if grouped is not None and expect.mode not in ORDERED_MODES:
        raise CheckError(
            f"step {grouped} is in a parallel group, which needs mode strict or in_order; mode "
            f"'{expect.mode}' ignores turns — list the steps without `parallel`"
        )


def _require_recorded(expect: Expectation, traj: Trajectory) -> None:
    """A ``result`` or ``error`` the source never records makes the check impossible."""
    steps = expect.steps or ()
    if all(s.result is UNSET and s.error is None for s in steps):
        return
    with_result = [i for i, s in enumerate(steps) if s.result is not UNSET]
    if with_result and not traj.records_results:
        raise CheckError(
            f"step {with_result[0]} ({steps[with_result[0]].name}) expects a `result`, but this "
            "run recorded no tool results; remove `result` or use a source that keeps tool messages"
        )
    with_error = [i for i, s in enumerate(steps) if s.error is not None]
    if with_error and not traj.records_errors:
        raise CheckError(
            f"step {with_error[0]} ({steps[with_error[0]].name}) expects `error`, but format "
            f"'{traj.format}' records no per-call error flag; remove `error` from the step, or "
            "mark failed calls with the source's error_when (such as "
            "`error_when: {$regex: '^Error'}`)"
        )


def f1(mode: str, matched: int, n_expected: int, n_actual: int) -> float:
    """The F1 score of a matching; superset/in_order count precision 1, subset recall 1."""
    precision = 1.0 if mode in ("superset", "in_order") or not n_actual else matched / n_actual
    recall = 1.0 if mode == "subset" or not n_expected else matched / n_expected
    return 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)
