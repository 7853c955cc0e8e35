"""The checks beside the steps: never, before, calls, budget, latency, nodes, answer.

Each takes the expectation and the run and returns its ``Findings``: its failures (none when it
holds) and a sentence for every part that cannot be evaluated on this run. ``CHECKS`` lists them
with what each reads, so a plan (``match.plan``) knows which a case sets and whether they need
calls' details. Tool and node names are escaped by ``inline`` where the text embeds them, so none
can break a line of a report.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable, NamedTuple

from ..errors import CheckError, inline
from ..trajectory import Trajectory
from .expectation import TOTAL, UNSET, CountBound, Expectation
from .values import Matcher, compare_value, contains_hint, parting, render_value
from .verdict import CheckFailure

ANSWER_WIDTH = 200


class Findings(NamedTuple):
    """What one check found on one run: its failures, and why a part of it cannot be evaluated."""

    failures: tuple[CheckFailure, ...] = ()
    errors: tuple[str, ...] = ()

    @property
    def holds(self) -> bool:
        """Whether the check neither failed nor erred."""
        return not (self.failures or self.errors)


HOLDS = Findings()
"""The findings of a check that holds."""


def _failed(check: str, summary: str, detail: str = "") -> Findings:
    """The findings of one failure."""
    return Findings((CheckFailure(check, summary, detail),))


def check_never(expect: Expectation, traj: Trajectory) -> Findings:
    """No forbidden tool was called; the detail says where each one was."""
    called = [name for name in expect.never if traj.calls_named(name)]
    if not called:
        return HOLDS
    lines = [
        f"{inline(c.name)} called at turn {c.turn}, position {c.position}"
        for name in called
        for c in traj.calls_named(name)
    ]
    return _failed("never", ", ".join(map(inline, called)), "\n".join(lines))


def check_before(expect: Expectation, traj: Trajectory) -> Findings:
    """Each ``[a, b]``: some call of ``a`` is in an earlier turn than some call of ``b``."""
    broken, lines = [], []
    for first, then in expect.before:
        if traj.called_before(first, then):
            continue
        broken.append(f"{inline(first)} before {inline(then)}")
        lines.append(_before_detail(traj, first, then))
    return _failed("before", ", ".join(broken), "\n".join(lines)) if broken else HOLDS


def _before_detail(traj: Trajectory, first: str, then: str) -> str:
    """Why ``[first, then]`` does not hold: a tool never called, or the turns."""
    missing = [inline(name) for name in (first, then) if not traj.calls_named(name)]
    a, b = inline(first), inline(then)
    if missing:
        return f"{a} before {b}: {' and '.join(missing)} never called"
    turn_a = min(c.turn for c in traj.calls_named(first))
    turn_b = max(c.turn for c in traj.calls_named(then))
    return f"{a} before {b}: first {a} at turn {turn_a}, last {b} at turn {turn_b}"


def check_calls(expect: Expectation, traj: Trajectory) -> Findings:
    """Per-tool call counts within their inclusive bounds.

    The summary names each broken bound; the detail adds every bounded tool's bound and count, and
    is empty when every bound broke (the summary then says it all).
    """
    counts = {name: len(traj.calls_named(name)) for name in expect.calls}
    problems = [
        p
        for name, bound in expect.calls.items()
        if (p := _count_problem(name, counts[name], bound))
    ]
    if not problems:
        return HOLDS
    detail = "" if len(problems) == len(counts) else _calls_table(expect, counts)
    return _failed("calls", ", ".join(problems), detail)


def _calls_table(expect: Expectation, counts: dict[str, int]) -> str:
    """Each bounded tool's bound against its count, aligned:
    ``search  at most 2  actual 3  too many``."""
    rows = [
        (inline(name), _bound_text(bound), counts[name], _count_verdict(counts[name], bound))
        for name, bound in expect.calls.items()
    ]
    name_width = max(len(name) for name, _, _, _ in rows)
    bound_width = max(len(text) for _, text, _, _ in rows)
    digits = max(len(str(count)) for _, _, count, _ in rows)
    return "\n".join(
        f"{name.ljust(name_width)}  {text.ljust(bound_width)}  "
        f"actual {str(count).rjust(digits)}  {verdict}"
        for name, text, count, verdict in rows
    )


def _bound_text(bound: CountBound) -> str:
    """``exactly 1``, ``0 to 3``, ``at least 1`` or ``at most 2``."""
    if bound.min is not None and bound.max is not None:
        return f"exactly {bound.min}" if bound.min == bound.max else f"{bound.min} to {bound.max}"
    return f"at least {bound.min}" if bound.min is not None else f"at most {bound.max}"


def _count_verdict(count: int, bound: CountBound) -> str:
    """``too many``, ``too few`` or ``ok``."""
    if bound.max is not None and count > bound.max:
        return "too many"
    return "too few" if bound.min is not None and count < bound.min else "ok"


def _count_problem(name: str, count: int, bound: CountBound) -> str:
    """The sentence for a count outside its bounds, or empty."""
    if bound.min is not None and bound.min == bound.max and count != bound.min:
        limit = f"expected {bound.min}"
    elif bound.max is not None and count > bound.max:
        limit = f"max {bound.max}"
    elif bound.min is not None and count < bound.min:
        limit = f"min {bound.min}"
    else:
        return ""
    return f"{inline(name)} called {count} time{'s' if count != 1 else ''}, {limit}"


def check_budget(expect: Expectation, traj: Trajectory) -> Findings:
    """Calls, turns and tokens within their inclusive upper bounds."""
    budget = expect.budget
    if budget is None:
        return HOLDS
    figures = [("calls", budget.calls, len(traj.calls)), ("turns", budget.turns, traj.turns)]
    errors: tuple[str, ...] = ()
    if budget.tokens is not None:
        if traj.usage is None:
            errors = (
                f"budget: tokens: {budget.tokens} cannot be checked: the {traj.format} source "
                "records no token usage (or some turn lacks it); remove the token bound or use a "
                "source that records usage",
            )
        else:
            figures.append(("tokens", budget.tokens, traj.usage.total_tokens))
    bounded = [(name, limit, value) for name, limit, value in figures if limit is not None]
    over = [f"{name} {value} > {limit}" for name, limit, value in bounded if value > limit]
    if not over:
        return Findings((), errors)
    return Findings((CheckFailure("budget", ", ".join(over), _budget_table(bounded)),), errors)


def _budget_table(rows: list[tuple[str, int, int]]) -> str:
    """Each bounded figure against its limit, aligned: ``calls  limit 2  actual 3  OVER``."""
    width = max(len(name) for name, _, _ in rows)
    digits = max(len(str(n)) for _, limit, value in rows for n in (limit, value))
    return "\n".join(
        f"{name.ljust(width)}  limit {str(limit).rjust(digits)}  "
        f"actual {str(value).rjust(digits)}  {'OVER' if value > limit else 'ok'}"
        for name, limit, value in rows
    )


def check_latency(expect: Expectation, traj: Trajectory) -> Findings:
    """Each call of a bounded tool, and the run's wall time (``total``), within ``max_ms``; where
    the source records no time, the bound cannot be checked and the case errs."""
    rows: list[tuple[str, float, float]] = []
    errors: list[str] = []
    for name, limit in expect.latency.items():
        if name == TOTAL:
            if traj.wall_ms is None:
                errors.append(
                    f"latency: total cannot be checked: the {traj.format} source records no run "
                    "time; remove the bound or read the run from a trace (otel)"
                )
            else:
                rows.append(("total", limit, traj.wall_ms))
            continue
        calls = traj.calls_named(name)
        untimed = [c.position for c in calls if c.duration_ms is None]
        if untimed or not traj.records_durations:
            why = (
                f"call [{untimed[0]}] of {inline(name)} has no recorded duration"
                if traj.records_durations
                else f"the {traj.format} source records no call durations"
            )
            errors.append(
                f"latency: {inline(name)} cannot be checked: {why}; remove the bound or read the "
                "run from a trace (otel)"
            )
            continue
        rows.extend(
            (f"{inline(name)} [{c.position}]", limit, c.duration_ms)
            for c in calls
            if c.duration_ms is not None
        )
    over = [f"{name} {value:.1f} ms > {limit:g} ms" for name, limit, value in rows if value > limit]
    if not over:
        return Findings((), tuple(errors))
    failure = CheckFailure("latency", ", ".join(over), _latency_table(rows))
    return Findings((failure,), tuple(errors))


def _latency_table(rows: list[tuple[str, float, float]]) -> str:
    """Each timed call or the run against its bound:
    ``search [0]  max 800 ms  took 912.4 ms  OVER``."""
    width = max(len(name) for name, _, _ in rows)
    return "\n".join(
        f"{name.ljust(width)}  max {limit:g} ms  took {value:.1f} ms  "
        f"{'OVER' if value > limit else 'ok'}"
        for name, limit, value in rows
    )


def check_nodes(expect: Expectation, traj: Trajectory) -> Findings:
    """Graph nodes per turn, the mode applied turn by turn (turns aligned by index)."""
    if expect.nodes is None:
        return HOLDS
    if traj.nodes is None:
        return Findings(
            errors=(
                f"nodes: the {traj.format} source has no graph steps; `nodes` needs a graph "
                "trajectory (agentevals steps)",
            )
        )
    if len(expect.nodes) != len(traj.nodes):
        summary = f"{len(expect.nodes)} turns expected, {len(traj.nodes)} found"
        return _failed("nodes", summary, _nodes_table(expect.nodes, traj.nodes))
    bad = [
        t
        for t, (e, a) in enumerate(zip(expect.nodes, traj.nodes, strict=True))
        if not nodes_match(expect.mode, e, a)
    ]
    if not bad:
        return HOLDS
    summary = ", ".join(f"turn {t} differs" for t in bad[:3]) + (
        f" (+{len(bad) - 3})" if len(bad) > 3 else ""
    )
    return _failed("nodes", summary, _nodes_table(expect.nodes, traj.nodes))


def nodes_match(mode: str, expected: tuple[str, ...], actual: tuple[str, ...]) -> bool:
    """One turn's node names under a match mode."""
    if mode == "strict":
        return tuple(expected) == tuple(actual)
    if mode == "in_order":
        rest = iter(actual)
        return all(any(name == got for got in rest) for name in expected)
    want, got = Counter(expected), Counter(actual)
    if mode == "superset":
        return not (want - got)
    if mode == "subset":
        return not (got - want)
    return want == got


def _nodes_table(expected: tuple[tuple[str, ...], ...], actual: tuple[tuple[str, ...], ...]) -> str:
    """Expected and actual nodes, one line per turn."""
    lines = []
    for turn in range(max(len(expected), len(actual))):
        exp = ", ".join(map(inline, expected[turn])) if turn < len(expected) else "-"
        act = ", ".join(map(inline, actual[turn])) if turn < len(actual) else "-"
        lines.append(f"turn {turn}: expected [{exp}], got [{act}]")
    return "\n".join(lines)


def check_answer(expect: Expectation, traj: Trajectory) -> Findings:
    """The final assistant text satisfies the matcher or equals the value."""
    if expect.answer is UNSET:
        return HOLDS
    if traj.answer is None:
        return Findings(
            errors=(
                "answer: the run has no assistant message with text, so `answer` cannot be checked",
            )
        )
    try:
        ok = compare_value(expect.answer, traj.answer, "exact")
    except CheckError as exc:
        return Findings(errors=(f"answer: {exc}",))
    if ok:
        return HOLDS
    return _failed("answer", "answer differs", _answer_detail(expect.answer, traj.answer))


def _answer_detail(expected: Any, answer: str) -> str:
    """Expected and actual answer, long texts from where they part, and the ``$contains`` hint."""
    parted = parting(expected, answer, ANSWER_WIDTH)
    if parted is None:
        matcher = isinstance(expected, Matcher)
        wanted = expected.describe() if matcher else render_value(expected, ANSWER_WIDTH)
        lines = [f"expected: {wanted}", f"actual:   {render_value(answer, ANSWER_WIDTH)}"]
    else:
        shown_exp, shown_act, where = parted
        lines = [
            f"expected: {shown_exp}",
            f"actual:   {shown_act}",
            *([f"({where})"] if where else []),
        ]
    hint = contains_hint(expected, answer)
    return "\n".join(lines + ([f"({hint})"] if hint else []))


def _reads_details(expect: Expectation) -> bool:
    """``Check.reads_details`` of a check that does not say: it may read anything."""
    return True


def _names_only(expect: Expectation) -> bool:
    """``Check.reads_details`` of a check that reads calls' names, turns, positions and timings, and
    the run's turns, usage, nodes and answer: no argument, result or error flag."""
    return False


class Check(NamedTuple):
    """One check beside the steps, and what it needs.

    ``sets`` tells whether a case asks for it (the others hold on every run: a bulk case finds them
    once and skips them on each of a million records). ``counting``: with ``failed_calls: ignore``
    it sees the run without failed calls. ``reads_details``: whether, as a case sets it, it looks
    at calls' arguments, results or error flags; a check that does not say reads them, so a lean
    read (``details=False``) never loses what a new check needs.
    """

    name: str
    run: Callable[[Expectation, Trajectory], Findings]
    sets: Callable[[Expectation], bool]
    counting: bool = False
    reads_details: Callable[[Expectation], bool] = _reads_details


NEVER = Check("never", check_never, lambda e: bool(e.never), True, _names_only)
BEFORE = Check("before", check_before, lambda e: bool(e.before), False, _names_only)
CALLS = Check("calls", check_calls, lambda e: bool(e.calls), True, _names_only)
BUDGET = Check("budget", check_budget, lambda e: e.budget is not None, True, _names_only)
LATENCY = Check("latency", check_latency, lambda e: bool(e.latency), False, _names_only)
NODES = Check("nodes", check_nodes, lambda e: e.nodes is not None, False, _names_only)
ANSWER = Check("answer", check_answer, lambda e: e.answer is not UNSET, False, _names_only)
OTHER_CHECKS: tuple[Check, ...] = (NEVER, BEFORE, CALLS, BUDGET, LATENCY, NODES, ANSWER)
"""Every check beside the steps, in the order their failures are reported."""


def checks_for(expect: Expectation) -> tuple[Check, ...]:
    """The checks of ``OTHER_CHECKS`` that ``expect`` sets, in order."""
    return tuple([check for check in OTHER_CHECKS if check.sets(expect)])
