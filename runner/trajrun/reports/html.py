"""HTML report: one self-contained page (inline CSS and script, no network) built from the JSON report's data.

The page embeds the JSON report as ``<script type="application/json">`` and its script builds rows in
chunks and case bodies only when opened, so 10,000 cases open quickly. A run renders through
``json_report.render``, so ``trajrun run --html`` and ``trajrun report RESULTS.json --html`` give the same
page. Template, CSS and script are package data in ``reports/html/``.
"""

from __future__ import annotations

import functools
import json
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
    """The page for a JSON report's data: what ``json_report.render`` returns or a ``--json`` file holds."""
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
    """Write the page for a run, or for a JSON report's data, to ``path`` atomically; raises ``FileWriteError``."""
    data = json_report.render(report) if isinstance(report, RunResult) else report
    page = render(data).encode("utf-8")
    atomic_write(path, lambda handle: handle.write(page))


def render_from_json(path: str | os.PathLike[str]) -> str:
    """The page for a saved ``--json`` report; raises ``ReportReadError``."""
    return render(load_json(path))


def load_json(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A saved ``--json`` report's data, checked enough to render; raises ``ReportReadError`` saying why not."""
    kind = special_kind(path)
    if kind:
        raise ReportReadError(f"{path}: it is {kind}; give the file that `trajrun run --json FILE` wrote")
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        raise ReportReadError(f"{path}: file not found; write it with `trajrun run --json {path}`") from None
    except OSError as exc:
        raise ReportReadError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise ReportReadError(f"{path}: not JSON ({exc}); give the file that `trajrun run --json FILE` wrote") from None
    problem = _shape_problem(data)
    if problem:
        raise ReportReadError(f"{path}: {problem}")
    return data


def _shape_problem(data: Any) -> str | None:
    """Why ``data`` is not a JSON report this page can show, or None."""
    if not isinstance(data, dict) or not isinstance(data.get("suites"), list):
        return "not a trajrun JSON report (no `suites` list); give the file that `trajrun run --json FILE` wrote"
    version = data.get("version")
    if version != json_report.VERSION:
        return f"JSON report version {version!r}, but this trajrun reads version {json_report.VERSION}"
    for n, suite in enumerate(data["suites"]):
        if not isinstance(suite, dict) or not isinstance(suite.get("cases", []), list):
            return f"suites[{n}] is not a suite with a `cases` list"
        for k, case in enumerate(suite.get("cases", [])):
            if not isinstance(case, dict) or case.get("outcome") not in OUTCOME_ORDER:
                return f"suites[{n}].cases[{k}] has no valid `outcome` (one of {', '.join(OUTCOME_ORDER)})"
    return None


def headline(summary: Mapping[str, Any]) -> str:
    """``1 passed, 3 failed, 3 errors in 0.01s``, the way ``trajrun run`` ends, from the report's summary."""
    counts = {outcome: summary.get(outcome) or 0 for outcome in OUTCOME_ORDER}
    counts["error"] += summary.get("load_errors") or 0
    parts = [f"{n} {'errors' if outcome == 'error' and n > 1 else outcome}" for outcome, n in counts.items() if n]
    if summary.get("deselected"):
        parts.append(f"{summary['deselected']} deselected")
    if summary.get("judge_skipped"):
        n = summary["judge_skipped"]
        parts.append(f"{n} judge check{'s' if n != 1 else ''} skipped (--no-judge)")
    return f"{', '.join(parts) or 'no cases ran'} in {float(summary.get('duration') or 0):.2f}s"


def _page_data(data: Mapping[str, Any]) -> dict[str, Any]:
    """The report as the page embeds it: long results and answers cut to ``MAX_TEXT`` characters."""
    suites = [{**suite, "cases": [_page_case(c) for c in suite.get("cases", [])]} for suite in data.get("suites", [])]
    return {**data, "suites": suites}


def _page_case(case: dict[str, Any]) -> dict[str, Any]:
    """One case with its trajectory's long texts cut (a copy; the input is left as it is)."""
    traj = case.get("trajectory")
    if not isinstance(traj, dict):
        return case
    calls = [{**call, "result": _clip(call.get("result"))} if isinstance(call, dict) else call
             for call in traj.get("tool_calls") or []]
    return {**case, "trajectory": {**traj, "tool_calls": calls, "answer": _clip(traj.get("answer"))}}


def _clip(value: Any) -> Any:
    """A text cut to ``MAX_TEXT`` characters with a note of how much was left out; anything else as is."""
    if not isinstance(value, str) or len(value) <= MAX_TEXT:
        return value
    return f"{value[:MAX_TEXT]}… [{len(value) - MAX_TEXT:,} more characters in the JSON report]"


def _script_json(data: Any) -> str:
    """Compact ASCII JSON that is safe inside ``<script>``: every ``<`` escaped, NaN and infinities as strings."""
    try:
        text = json.dumps(data, separators=(",", ":"), allow_nan=False, default=str)
    except ValueError:  # a NaN or an infinity: written as the JSON report writes them
        finite = json.loads(json.dumps(data, default=str), parse_constant=str)
        text = json.dumps(finite, separators=(",", ":"), default=str)
    return text.replace("<", "\\u003c")


def _asset(name: str) -> str:
    """A file of the page (template, CSS, script), read from the package's ``reports/html`` folder."""
    return resources.files(__package__).joinpath("html", name).read_text(encoding="utf-8")


@functools.lru_cache(maxsize=1)
def _template() -> jinja2.Template:
    """The page template, compiled once, with HTML autoescaping on (CSS, script and data are marked safe)."""
    return jinja2.Environment(autoescape=True, keep_trailing_newline=True).from_string(_asset("report.html.j2"))
