"""The checks beside the steps: never, before, calls, budget, latency, nodes, answer.

Each takes the expectation, the run and a list to which it appends a sentence for every part
that cannot be evaluated on this run; it returns its failures (none when it holds). Tool and node
names are escaped by ``inline`` where the text embeds them, so none can break a line of a report.
"""

from __future__ import annotations

from collections import Counter
from itertools import compress
from typing import Any, Callable

from ..errors import CheckError, inline
from ..trajectory import Trajectory
from .expectation import TOTAL, UNSET, CountBound, Expectation
from .values import Matcher, compare_value, contains_hint, parting, render_value
from .verdict import CheckFailure

Check = Callable[[Expectation, Trajectory, list[str]], list[CheckFailure]]
ANSWER_WIDTH = 200


def check_never(expect: Expectation, traj: Trajectory, errors: list[str]) -> list[CheckFailure]:
    """No forbidden tool was called; the detail says where each one was."""
    called = [name for name in expect.never if traj.calls_named(name)]
    if not called:
        return []
    lines = [f"{inline(c.name)} called at turn {c.turn}, position {c.position}"
             for name in called for c in traj.calls_named(name)]  # fmt: skip
    return [CheckFailure("never", ", ".join(map(inline, called)), "\n".join(lines))]


def check_before(expect: Expectation, traj: Trajectory, errors: list[str]) -> list[CheckFailure]:
    """Each ``[a, b]``: some call of ``a`` is in an earlier turn than some call of ``b``."""
    broken, lines = [], []
    for first, then in expect.before:
        if traj.called_before(first, then):
            continue
        broken.append(f"{inline(first)} before {inline(then)}")
        lines.append(_before_detail(traj, first, then))
    return [CheckFailure("before", ", ".join(broken), "\n".join(lines))] if broken else []


def _before_detail(traj: Trajectory, first: str, then: str) -> str:
    """Why ``[first, then]`` does not hold: a tool never called, or the turns."""
    missing = [inline(name) for name in (first, then) if not traj.calls_named(name)]
    a, b = inline(first), inline(then)
    if missing:
        return f"{a} before {b}: {' and '.join(missing)} never called"
    turn_a = min(c.turn for c in traj.calls_named(first))
    turn_b = max(c.turn for c in traj.calls_named(then))
    return f"{a} before {b}: first {a} at turn {turn_a}, last {b} at turn {turn_b}"


def check_calls(expect: Expectation, traj: Trajectory, errors: list[str]) -> list[CheckFailure]:
    """Per-tool call counts within their inclusive bounds.

    The summary names each broken bound; the detail adds every bounded tool's bound and count, and is
    empty when every bound broke (the summary then says it all).
    """
    counts = {name: len(traj.calls_named(name)) for name in expect.calls}
    problems = [
        p
        for name, bound in expect.calls.items()
        if (p := _count_problem(name, counts[name], bound))
    ]
    if not problems:
        return []
    detail = "" if len(problems) == len(counts) else _calls_table(expect, counts)
    return [CheckFailure("calls", ", ".join(problems), detail)]


def _calls_table(expect: Expectation, counts: dict[str, int]) -> str:
    """Each bounded tool's bound against its count, aligned: ``search  at most 2  actual 3  too many``."""
    rows = [(inline(name), _bound_text(bound), counts[name], _count_verdict(counts[name], bound))
            for name, bound in expect.calls.items()]  # fmt: skip
    name_width = max(len(name) for name, _, _, _ in rows)
    bound_width = max(len(text) for _, text, _, _ in rows)
    digits = max(len(str(count)) for _, _, count, _ in rows)
    return "\n".join(
        f"{name.ljust(name_width)}  {text.ljust(bound_width)}  actual {str(count).rjust(digits)}  {verdict}"
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


def check_budget(expect: Expectation, traj: Trajectory, errors: list[str]) -> list[CheckFailure]:
    """Calls, turns and tokens within their inclusive upper bounds."""
    budget = expect.budget
    if budget is None:
        return []
    figures = [("calls", budget.calls, len(traj.calls)), ("turns", budget.turns, traj.turns)]
    if budget.tokens is not None:
        if traj.usage is None:
            errors.append(
                f"budget: tokens: {budget.tokens} cannot be checked: the {traj.format} source records no token usage "
                "(or some turn lacks it); remove the token bound or use a source that records usage"
            )
        else:
            figures.append(("tokens", budget.tokens, traj.usage.total_tokens))
    bounded = [(name, limit, value) for name, limit, value in figures if limit is not None]
    over = [f"{name} {value} > {limit}" for name, limit, value in bounded if value > limit]
    return [CheckFailure("budget", ", ".join(over), _budget_table(bounded))] if over else []


def _budget_table(rows: list[tuple[str, int, int]]) -> str:
    """Each bounded figure against its limit, aligned: ``calls  limit 2  actual 3  OVER``."""
    width = max(len(name) for name, _, _ in rows)
    digits = max(len(str(n)) for _, limit, value in rows for n in (limit, value))
    return "\n".join(
        f"{name.ljust(width)}  limit {str(limit).rjust(digits)}  actual {str(value).rjust(digits)}  "
        f"{'OVER' if value > limit else 'ok'}"
        for name, limit, value in rows
    )


def check_latency(expect: Expectation, traj: Trajectory, errors: list[str]) -> list[CheckFailure]:
    """Each call of a bounded tool, and the run's wall time (``total``), within ``max_ms``; where the source
    records no time, the bound cannot be checked and the case errs."""
    rows: list[tuple[str, float, float]] = []
    for name, limit in expect.latency.items():
        if name == TOTAL:
            if traj.wall_ms is None:
                errors.append(f"latency: total cannot be checked: the {traj.format} source records no run time; "
                              "remove the bound or read the run from a trace (otel)")  # fmt: skip
            else:
                rows.append(("total", limit, traj.wall_ms))
            continue
        calls = traj.calls_named(name)
        untimed = [c.position for c in calls if c.duration_ms is None]
        if untimed or not traj.records_durations:
            why = (f"call [{untimed[0]}] of {inline(name)} has no recorded duration" if traj.records_durations
                   else f"the {traj.format} source records no call durations")  # fmt: skip
            errors.append(f"latency: {inline(name)} cannot be checked: {why}; remove the bound or read the run "
                          "from a trace (otel)")  # fmt: skip
            continue
        rows.extend((f"{inline(name)} [{c.position}]", limit, c.duration_ms) for c in calls)  # type: ignore[misc]
    over = [f"{name} {value:.1f} ms > {limit:g} ms" for name, limit, value in rows if value > limit]
    return [CheckFailure("latency", ", ".join(over), _latency_table(rows))] if over else []


def _latency_table(rows: list[tuple[str, float, float]]) -> str:
    """Each timed call or the run against its bound: ``search [0]  max 800 ms  took 912.4 ms  OVER``."""
    width = max(len(name) for name, _, _ in rows)
    return "\n".join(f"{name.ljust(width)}  max {limit:g} ms  took {value:.1f} ms  {'OVER' if value > limit else 'ok'}"
                     for name, limit, value in rows)  # fmt: skip


def check_nodes(expect: Expectation, traj: Trajectory, errors: list[str]) -> list[CheckFailure]:
    """Graph nodes per turn, the mode applied turn by turn (turns aligned by index)."""
    if expect.nodes is None:
        return []
    if traj.nodes is None:
        errors.append(
            f"nodes: the {traj.format} source has no graph steps; `nodes` needs a graph trajectory (agentevals steps)"
        )
        return []
    if len(expect.nodes) != len(traj.nodes):
        summary = f"{len(expect.nodes)} turns expected, {len(traj.nodes)} found"
        return [CheckFailure("nodes", summary, _nodes_table(expect.nodes, traj.nodes))]
    bad = [
        t
        for t, (e, a) in enumerate(zip(expect.nodes, traj.nodes))
        if not nodes_match(expect.mode, e, a)
    ]
    if not bad:
        return []
    summary = ", ".join(f"turn {t} differs" for t in bad[:3]) + (
        f" (+{len(bad) - 3})" if len(bad) > 3 else ""
    )
    return [CheckFailure("nodes", summary, _nodes_table(expect.nodes, traj.nodes))]


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


def check_answer(expect: Expectation, traj: Trajectory, errors: list[str]) -> list[CheckFailure]:
    """The final assistant text satisfies the matcher or equals the value."""
    if expect.answer is UNSET:
        return []
    if traj.answer is None:
        errors.append(
            "answer: the run has no assistant message with text, so `answer` cannot be checked"
        )
        return []
    try:
        ok = compare_value(expect.answer, traj.answer, "exact")
    except CheckError as exc:
        errors.append(f"answer: {exc}")
        return []
    if ok:
        return []
    return [CheckFailure("answer", "answer differs", _answer_detail(expect.answer, traj.answer))]


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


COUNTING_CHECKS: tuple[Check, ...] = (check_never, check_calls, check_budget)
"""The checks beside steps that ``failed_calls: ignore`` runs on the run without failed calls."""
OTHER_CHECKS: tuple[Check, ...] = (
    check_never,
    check_before,
    check_calls,
    check_budget,
    check_latency,
    check_nodes,
    check_answer,
)


def checks_for(expect: Expectation) -> tuple[Check, ...]:
    """The checks of ``OTHER_CHECKS`` that ``expect`` sets, in order; the others hold on every run (a bulk case
    finds them once and skips them on each of a million records)."""
    used = (
        expect.never,
        expect.before,
        expect.calls,
        expect.budget is not None,
        expect.latency,
        expect.nodes is not None,
        expect.answer is not UNSET,
    )
    return tuple(compress(OTHER_CHECKS, used))
