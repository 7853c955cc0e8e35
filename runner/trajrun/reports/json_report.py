"""JSON report: a pure ``render`` to plain data (``version`` 1) and an atomic ``write``.

Each case also carries ``steps`` (added within version 1; readers of older reports treat it as
absent): ``null`` without a steps check, else ``{"mode", "passed", "score", "summary", "expected",
"pairs", "nearest"}``. ``expected`` lists the steps as checked (golden steps included), each
``{"name", "args", "any_args", "group", "result", "expects_result", "error"}``: ``args`` and
``result`` are JSON with each inline matcher written as its description (``"<regex 'x'>"``),
``args`` is ``null`` when ``any_args``, ``group`` numbers the step's ``parallel`` group or is
``null``, and ``error`` is ``true``/``false``/``null`` (not checked). ``pairs`` is
``[{"step", "call"}]`` (a step index and the position of the call that satisfied it in
``trajectory.tool_calls``), ``nearest`` is ``[{"step", "call", "diffs", "note"}]`` for the first
unmatched steps: the closest free call (or ``null``), each differing field as
``"$.path: expected X, got Y"`` (long texts from where they part: ``"$.body: expected …'to Lisbon.',
got …'to Lisboa.' (differs at character 212)"``), and why there is none or how to accept the call
(``args_mode is exact; args_mode: superset allows extra keys``).

Each case also carries ``judge`` and the summary ``judge_skipped`` (both added within version 1):
the LLM judge's verdict, ``null`` for a case without a ``judge:`` check.

Each case also carries ``baseline`` and the summary ``gates`` (both added within version 1):
with ``--baseline``, ``"new"`` or ``"known"`` for a failed, erred or xpassed case (``null``
otherwise); ``gates`` is ``null`` unless ``--baseline`` or ``--min-pass-rate`` was given, else
``{"baseline", "new", "known", "fail_on", "min_pass_rate", "pass_rate"}``.

Each case also carries ``bulk`` (added within version 1): ``null`` but for a bulk case (a source
with ``each``), where it holds ``{"each", "files", "records", "passed", "failed", "error",
"passed_share", "pass_rate", "by_check", "worst", "score", "engine", "records_file"}``: ``by_check``
maps a check's label (``never (refund_all)``, ``budget``) to the records it failed, ``worst`` lists
the first failing records, each ``{"record", "outcome", "checks", "message", "score"}``.

Each case also carries ``repeats`` and the summary ``flaky`` (both added within version 1):
``repeats`` is ``null`` but for a case with ``repeat``, where it holds ``{"runs", "passed",
"passed_share", "pass_at_k", "pass_all_k", "flaky", "flipped", "outcomes"}``: ``pass_at_k`` that a
run passed, ``pass_all_k`` that all did, ``flaky`` that some did and some did not, ``flipped`` the
checks that failed in some runs and held in others (``error`` when only some runs erred),
``outcomes`` each run's ``{"outcome", "message", "score"}``; ``flaky`` counts the flaky cases.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Iterator
from typing import Any

from ..files import atomic_write
from ..match.expectation import ANY_ARGS, UNSET, Step
from ..match.values import Matcher
from ..run.results import OUTCOME_ORDER, CaseResult, RunResult, SuiteResult
from ..trajectory import Trajectory, finite
from .text import json_safe

VERSION = 1


def render(run: RunResult) -> dict[str, Any]:
    """The whole run as JSON-ready data: a summary, then every suite with its cases."""
    return _plain(_report(run))


def write(run: RunResult, path: str | os.PathLike[str]) -> None:
    """Write the report of ``run`` to ``path`` atomically as UTF-8 JSON, streamed
    case by case and call by call.

    Streaming keeps the memory a report needs to about one case, not a copy of the whole run: a
    million-call history costs a few megabytes here, not gigabytes. JSON has no NaN or infinity:
    such numbers in a tool's arguments or results are written as the strings ``"NaN"``,
    ``"Infinity"`` and ``"-Infinity"``. Raises ``FileWriteError``.
    """
    atomic_write(path, lambda handle: handle.writelines(_chunks(run)))


def encode(run: RunResult) -> bytes:
    """The report as the bytes ``write`` puts in a file (``--json -`` prints them)."""
    return b"".join(_chunks(run))


class _Items:
    """A list written one item at a time (the suites, a suite's cases, a
    run's calls), never held whole."""

    __slots__ = ("items",)

    def __init__(self, items: Iterable[Any]) -> None:
        self.items = items


def _report(run: RunResult) -> dict[str, Any]:
    """The report with its long lists as ``_Items``."""
    return {"version": VERSION, "summary": _summary(run), "suites": _Items(map(_suite, run.suites))}


def _plain(value: Any) -> Any:
    """``value`` with every ``_Items`` made a list."""
    if isinstance(value, _Items):
        return [_plain(item) for item in value.items]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value


def _chunks(run: RunResult) -> Iterator[bytes]:
    """The report's bytes, indented as ``json.dumps(indent=2)`` indents, in pieces
    of at most one case or call."""
    yield from _stream(_report(run), 0)
    yield b"\n"


def _stream(value: Any, depth: int) -> Iterator[bytes]:
    """``value`` at nesting ``depth``: ``_Items`` and the maps holding them
    piece by piece, the rest whole."""
    inner = ("\n" + "  " * (depth + 1)).encode()
    if isinstance(value, _Items):
        empty = True
        for item in value.items:
            yield (b"[" if empty else b",") + inner
            yield from _stream(item, depth + 1)
            empty = False
        yield b"[]" if empty else ("\n" + "  " * depth + "]").encode()
    elif _lazy(value):
        for i, (key, item) in enumerate(value.items()):
            yield (b"{" if i == 0 else b",") + inner + _text(key, 0) + b": "
            yield from _stream(item, depth + 1)
        yield ("\n" + "  " * depth + "}").encode()
    else:
        yield _text(value, depth)


def _lazy(value: Any) -> bool:
    """Whether ``value`` is or holds an ``_Items`` (only the report's own maps
    do: a call's arguments never)."""
    return isinstance(value, _Items) or type(value) is dict and any(map(_lazy, value.values()))


def _text(value: Any, depth: int) -> bytes:
    """One value as indented UTF-8 JSON; escaped ASCII instead when it holds a lone
    surrogate (``json_safe`` escapes what could break a line or read as a workflow
    command: ``--json -`` prints it)."""
    try:
        text = _dumps(value, ascii_only=False)
    except ValueError:  # a NaN or an infinity: rare, so only then walk the value to replace them
        value = finite(value)
        text = _dumps(value, ascii_only=False)
    try:
        data = json_safe(text).encode("utf-8")
    except UnicodeEncodeError:
        data = json_safe(_dumps(value, ascii_only=True)).encode("ascii")
    return data.replace(b"\n", ("\n" + "  " * depth).encode()) if depth else data


def _dumps(data: Any, ascii_only: bool) -> str:
    """Strict JSON text (raises ``ValueError`` on NaN or infinity), indented."""
    return json.dumps(data, indent=2, ensure_ascii=ascii_only, allow_nan=False, default=str)


def _number(value: float | None) -> float | None:
    """A finite float or ``None``: JSON has no NaN or infinity."""
    if value is None or not math.isfinite(value):
        return None
    return round(value, 6)


def _summary(run: RunResult) -> dict[str, Any]:
    """Counts per outcome in the contract's order, then totals, duration and exit code."""
    counts = run.counts()
    summary: dict[str, Any] = {outcome: counts[outcome] for outcome in OUTCOME_ORDER}
    summary["total"] = len(run.cases)
    summary["deselected"] = run.deselected
    summary["judge_skipped"] = run.judge_skipped
    summary["flaky"] = run.flaky
    summary["load_errors"] = sum(1 for s in run.suites if s.load_errors)
    summary["duration"] = _number(run.duration) or 0.0
    summary["exit_code"] = run.exit_code()
    summary["gates"] = _gates(run)
    return summary


def _gates(run: RunResult) -> dict[str, Any] | None:
    """``--baseline``, ``--fail-on`` and ``--min-pass-rate`` with what they counted; ``None`` when
    none was given."""
    gates = run.gates
    if gates.baseline is None and gates.min_pass_rate is None:
        return None
    marks = [c.baseline for c in run.cases]
    return {
        "baseline": gates.baseline,
        "new": marks.count("new"),
        "known": marks.count("known"),
        "fail_on": gates.fail_on,
        "min_pass_rate": gates.min_pass_rate,
        "pass_rate": _number(run.pass_rate),
    }


def _suite(suite: SuiteResult) -> dict[str, Any]:
    """One suite file: its name, file, load errors (if it could not be loaded) and cases."""
    return {
        "name": suite.name,
        "file": suite.file,
        "load_errors": list(suite.load_errors),
        "cases": _Items(map(_case, suite.cases)),
    }


def _case(case: CaseResult) -> dict[str, Any]:
    """One case: identity, outcome, message, score, the steps' diff, checks and the trajectory."""
    evaluation = case.evaluation
    steps = _steps_report(evaluation.steps if evaluation else None)
    return {
        "id": case.case_id,
        "name": case.name,
        "file": case.file,
        "line": case.line,
        "outcome": case.outcome,
        "duration": _number(case.duration) or 0.0,
        "message": case.message,
        "details": case.details,
        "score": _number(case.score),
        "missing": list(steps.get("missing") or []),
        "unexpected": list(steps.get("unexpected") or []),
        "checks": [
            {"check": f.check, "summary": f.summary, "detail": f.detail}
            for f in evaluation.failures
        ]
        if evaluation
        else [],
        "errors": list(evaluation.errors) if evaluation else [],
        "notes": list(case.notes),
        "judge": _judge(evaluation.judge if evaluation else None),
        "trajectory": _trajectory(case.trajectory) if case.trajectory else None,
        "steps": _steps(evaluation.steps if evaluation else None),
        "bulk": case.bulk.to_dict() if case.bulk is not None else None,
        "baseline": case.baseline,
        "repeats": _repeats(case),
    }


def _repeats(case: CaseResult) -> dict[str, Any] | None:
    """``repeat``'s runs (``None`` for a case without ``repeat``), each score finite or ``None``."""
    if case.repeats is None:
        return None
    data = case.repeats.to_dict()
    for run in data["outcomes"]:
        run["score"] = _number(run["score"])
    return data


def _trajectory(traj: Trajectory) -> dict[str, Any]:
    """The run as ``trajrun show -o json`` prints it, its calls written one at a time."""
    data = traj.to_dict(calls=False)
    data["tool_calls"] = _Items(
        call.to_dict() for call in traj.calls
    )  # keeps its place among the keys
    return data


def _judge(verdict: Any) -> dict[str, Any] | None:
    """The LLM judge's verdict (``score``, ``threshold``, ``passed``, ``reasoning``, ``model``,
    ``cached``, ``skipped``, ``error``), or ``None`` for a case without a ``judge:`` check."""
    if verdict is None:
        return None
    data = verdict.to_dict()
    data["score"] = _number(data["score"])
    return data


def _steps_report(steps: Any) -> dict[str, Any]:
    """The steps matcher's report as a dict (empty when there is none or it gives no dict)."""
    to_dict = getattr(steps, "to_dict", None)
    data = to_dict() if callable(to_dict) else None
    return data if isinstance(data, dict) else {}


def _steps(report: Any) -> dict[str, Any] | None:
    """The steps check for a timeline view: mode, verdict, expected
    steps, pairs and nearest calls."""
    data = _steps_report(report)
    if not data:
        return None
    keys = ("mode", "passed", "score", "summary", "pairs", "nearest")
    found = {key: data.get(key) for key in keys}
    found["score"] = _number(found["score"])
    return {**found, "expected": [_step(step) for step in getattr(report, "expected_steps", ())]}


def _step(step: Step) -> dict[str, Any]:
    """One expected step as JSON; matchers become their descriptions."""
    any_args = step.args is ANY_ARGS
    return {
        "name": step.name,
        "args": None if any_args else _described(step.args),
        "any_args": any_args,
        "group": step.group,
        "result": None if step.result is UNSET else _described(step.result),
        "expects_result": step.result is not UNSET,
        "error": step.error,
    }


def _described(value: Any) -> Any:
    """Expected data as plain JSON: each inline matcher as ``"<regex 'x'>"``, tuples as lists."""
    if isinstance(value, Matcher):
        return f"<{value.describe()}>"
    if isinstance(value, dict):
        return {str(key): _described(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_described(item) for item in value]
    return value
