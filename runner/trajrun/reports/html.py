"""HTML report: one self-contained page (inline CSS and script, no network)
built from the JSON report's data.

The page embeds the JSON report as ``<script type="application/json">`` and its script builds rows
in chunks and case bodies only when opened, so 10,000 cases open quickly. A run renders through
``json_report.render``, so ``trajrun run --html`` and ``trajrun report RESULTS.json --html`` give
the same page. Template, CSS and script are package data in ``reports/html/``.
"""

from __future__ import annotations

import functools
import json
import math
import os
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from ..errors import TrajrunError
from ..files import atomic_write, special_kind
from ..run.results import OUTCOME_ORDER, RunResult
from . import json_report

MAX_TEXT = 10_000
"""Characters of a tool result or final answer kept in the page; the JSON report keeps them all."""


class ReportReadError(TrajrunError):
    """A saved JSON report that cannot be read: names the file, what is wrong and what to do."""


def render(data: Mapping[str, Any]) -> str:
    """The page for a JSON report's data: what ``json_report.render`` returns
    or a ``--json`` file holds."""
    summary = data.get("summary") or {}
    return _template().render(
        title=f"trajrun: {headline(summary)}",
        headline=headline(summary),
        report_version=data.get("version", json_report.VERSION),
        css=Markup(_asset("report.css")),
        js=Markup(_asset("report.js")),
        data=Markup(_script_json(_page_data(data))),
    )


def write(report: RunResult | Mapping[str, Any], path: str | os.PathLike[str]) -> None:
    """Write the page for a run, or for a JSON report's data, to ``path``
    atomically; raises ``FileWriteError``."""
    data = json_report.render(report) if isinstance(report, RunResult) else report
    page = render(data).encode("utf-8")
    atomic_write(path, lambda handle: handle.writelines([page]))


def render_from_json(path: str | os.PathLike[str]) -> str:
    """The page for a saved ``--json`` report; raises ``ReportReadError``."""
    return render(load_json(path))


def load_json(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A saved ``--json`` report's data, checked enough to render; raises
    ``ReportReadError`` saying why not."""
    kind = special_kind(path)
    if kind:
        raise ReportReadError(
            f"{path}: it is {kind}; give the file that `trajrun run --json FILE` wrote"
        )
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        raise ReportReadError(
            f"{path}: file not found; write it with `trajrun run --json {path}`"
        ) from None
    except OSError as exc:
        raise ReportReadError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise ReportReadError(
            f"{path}: not JSON ({exc}); give the file that `trajrun run --json FILE` wrote"
        ) from None
    except RecursionError:
        raise ReportReadError(
            f"{path}: not a trajrun JSON report (lists and maps nest too deeply to decode); give "
            "the file that `trajrun run --json FILE` wrote"
        ) from None
    problem = _shape_problem(data)
    if problem:
        raise ReportReadError(f"{path}: {problem}")
    return data


_COUNT, _NUMBER, _TEXT, _LIST, _MAP = (
    "a whole number of 0 or more",
    "a number",
    "a string",
    "a list",
    "a map",
)
_SUMMARY = {
    **dict.fromkeys(
        (
            *OUTCOME_ORDER,
            "total",
            "deselected",
            "judge_skipped",
            "load_errors",
            "exit_code",
            "flaky",
        ),
        _COUNT,
    ),
    "duration": _NUMBER,
}
_SUITE = {"name": _TEXT, "file": _TEXT, "load_errors": _LIST, "cases": _LIST}
_CASE = {
    "id": _TEXT,
    "name": _TEXT,
    "file": _TEXT,
    "line": _COUNT,
    "duration": _NUMBER,
    "message": _TEXT,
    "details": _TEXT,
    "score": _NUMBER,
    "missing": _LIST,
    "unexpected": _LIST,
    "checks": _LIST,
    "errors": _LIST,
    "notes": _LIST,
    "judge": _MAP,
    "trajectory": _MAP,
    "steps": _MAP,
    "bulk": _MAP,
    "baseline": _TEXT,
    "repeats": _MAP,
}
_PARTS = {
    "trajectory": {"tool_calls": _LIST},
    "steps": {"expected": _LIST, "pairs": _LIST, "nearest": _LIST},
    "bulk": {
        "records": _COUNT,
        "files": _COUNT,
        "passed": _COUNT,
        "failed": _COUNT,
        "error": _COUNT,
        "by_check": _MAP,
        "worst": _LIST,
    },
    "judge": {"score": _NUMBER, "threshold": _NUMBER},
    "repeats": {"runs": _COUNT, "passed": _COUNT, "flipped": _LIST, "outcomes": _LIST},
}
"""The fields of a JSON report the page reads, by what each must be when present and not null."""


def _shape_problem(data: Any) -> str | None:
    """Why ``data`` is not a JSON report this page can show (the field at fault
    and what it holds), or None."""
    if not isinstance(data, dict) or not isinstance(data.get("suites"), list):
        return (
            "not a trajrun JSON report (no `suites` list); "
            "give the file that `trajrun run --json FILE` wrote"
        )
    version = data.get("version")
    if version != json_report.VERSION or isinstance(version, bool):
        small = isinstance(version, int) and not isinstance(version, bool) and abs(version) < 1000
        shown = version if small else _kind(version)
        return f"JSON report version {shown}, but this trajrun reads version {json_report.VERSION}"
    summary = data.get("summary")
    problem = _fields_problem(data, {"summary": _MAP}, "") or _fields_problem(
        summary, _SUMMARY, "summary"
    )
    for n, suite in enumerate(data["suites"]):
        if problem:
            break
        problem = _suite_problem(suite, f"suites[{n}]")
    return f"{problem}; give the file that `trajrun run --json FILE` wrote" if problem else None


def _suite_problem(suite: Any, where: str) -> str | None:
    """What is wrong with one suite of the report, or None."""
    if not isinstance(suite, dict):
        return f"{where} must be a map, found {_kind(suite)}"
    problem = _fields_problem(suite, _SUITE, where)
    for k, case in enumerate([] if problem else suite.get("cases") or []):
        problem = problem or _case_problem(case, f"{where}.cases[{k}]")
    return problem


def _case_problem(case: Any, where: str) -> str | None:
    """What is wrong with one case of the report, or None."""
    if not isinstance(case, dict) or case.get("outcome") not in OUTCOME_ORDER:
        return f"{where} has no valid `outcome` (one of {', '.join(OUTCOME_ORDER)})"
    problem = _fields_problem(case, _CASE, where)
    for part, fields in _PARTS.items():
        problem = problem or _fields_problem(case.get(part), fields, f"{where}.{part}")
    return problem


def _fields_problem(value: Any, fields: Mapping[str, str], where: str) -> str | None:
    """The first of ``fields`` of the map ``value`` (at ``where``; none when it is no map)
    that is not what it must be."""
    if not isinstance(value, dict):
        return None
    for name, kind in fields.items():
        item = value.get(name)
        if item is not None and not _is(item, kind):
            return f"{where}{'.' if where else ''}{name} must be {kind}, found {_kind(item)}"
    return None


def _is(value: Any, kind: str) -> bool:
    """Whether ``value`` is of ``kind`` (one of the ``_COUNT``… words)."""
    if kind in (_COUNT, _NUMBER):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or _infinite(value):
            return False
        return kind == _NUMBER or (isinstance(value, int) and value >= 0)
    return isinstance(value, {_TEXT: str, _LIST: list, _MAP: dict}[kind])


def _infinite(number: float) -> bool:
    """Whether ``number`` is NaN, an infinity, or an integer too large for a
    float (which the page reads)."""
    try:
        return not math.isfinite(number)
    except OverflowError:
        return True


def _kind(value: Any) -> str:
    """What a JSON value is, in words (not the value: it may be long, or hold anything)."""
    if value is None or isinstance(value, bool):
        return "null" if value is None else "true or false"
    if isinstance(value, (int, float)):
        if _infinite(value):
            return (
                "a whole number too large to read"
                if isinstance(value, int)
                else "NaN or an infinity"
            )
        kind = "whole" if isinstance(value, int) else "decimal"
        return f"a {'negative ' if value < 0 else ''}{kind} number"
    words = ((str, "a string"), (dict, "a map"), (list, "a list"))
    return next(word for cls, word in words if isinstance(value, cls))


def headline(summary: Mapping[str, Any]) -> str:
    """``1 passed, 3 failed, 3 errors in 0.01s``, the way ``trajrun run``
    ends, from the report's summary."""
    counts = {outcome: summary.get(outcome) or 0 for outcome in OUTCOME_ORDER}
    counts["error"] += summary.get("load_errors") or 0
    parts = [
        f"{n} {'errors' if outcome == 'error' and n > 1 else outcome}"
        for outcome, n in counts.items()
        if n
    ]
    if summary.get("deselected"):
        parts.append(f"{summary['deselected']} deselected")
    if summary.get("flaky"):
        parts.append(f"{summary['flaky']} flaky")
    if summary.get("judge_skipped"):
        n = summary["judge_skipped"]
        parts.append(f"{n} judge check{'s' if n != 1 else ''} skipped (--no-judge)")
    return f"{', '.join(parts) or 'no cases ran'} in {float(summary.get('duration') or 0):.2f}s"


def _page_data(data: Mapping[str, Any]) -> dict[str, Any]:
    """The report as the page embeds it: long results and answers cut to ``MAX_TEXT`` characters."""
    suites = [
        {**suite, "cases": [_page_case(c) for c in suite.get("cases") or []]}
        for suite in data.get("suites", [])
    ]
    return {**data, "suites": suites}


def _page_case(case: dict[str, Any]) -> dict[str, Any]:
    """One case with its trajectory's long texts cut (a copy; the input is left as it is)."""
    traj = case.get("trajectory")
    if not isinstance(traj, dict):
        return case
    calls = [
        {**call, "result": _clip(call.get("result"))} if isinstance(call, dict) else call
        for call in traj.get("tool_calls") or []
    ]
    return {
        **case,
        "trajectory": {**traj, "tool_calls": calls, "answer": _clip(traj.get("answer"))},
    }


def _clip(value: Any) -> Any:
    """A text cut to ``MAX_TEXT`` characters with a note of how much was
    left out; anything else as is."""
    if not isinstance(value, str) or len(value) <= MAX_TEXT:
        return value
    return f"{value[:MAX_TEXT]}… [{len(value) - MAX_TEXT:,} more characters in the JSON report]"


def _script_json(data: Any) -> str:
    """Compact ASCII JSON that is safe inside ``<script>``: every ``<`` escaped,
    NaN and infinities as strings."""
    try:
        text = json.dumps(data, separators=(",", ":"), allow_nan=False, default=str)
    except ValueError:  # a NaN or an infinity: written as the JSON report writes them
        finite = json.loads(json.dumps(data, default=str), parse_constant=str)
        text = json.dumps(finite, separators=(",", ":"), default=str)
    return text.replace("<", "\\u003c")


def _asset(name: str) -> str:
    """A file of the page (template, CSS, script), read from the
    package's ``reports/html`` folder."""
    return (resources.files(__package__) / "html" / name).read_text(encoding="utf-8")


@functools.lru_cache(maxsize=1)
def _template() -> jinja2.Template:
    """The page template, compiled once, with HTML autoescaping on (CSS,
    script and data are marked safe)."""
    return jinja2.Environment(autoescape=True, keep_trailing_newline=True).from_string(
        _asset("report.html.j2")
    )
