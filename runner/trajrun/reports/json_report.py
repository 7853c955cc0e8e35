"""JSON report: a pure ``render`` to plain data (``version`` 1) and an atomic ``write``."""

from __future__ import annotations

import json
import math
import os
from typing import Any

from ..run.results import OUTCOME_ORDER, CaseResult, RunResult, SuiteResult
from .files import atomic_write

VERSION = 1


def render(run: RunResult) -> dict[str, Any]:
    """The whole run as JSON-ready data: a summary, then every suite with its cases."""
    return {
        "version": VERSION,
        "summary": _summary(run),
        "suites": [_suite(s) for s in run.suites],
    }


def write(run: RunResult, path: str | os.PathLike[str]) -> None:
    """Render ``run`` and write it to ``path`` atomically as UTF-8 JSON."""
    data = render(run)
    atomic_write(path, lambda handle: handle.write(_encode(data)))


def _encode(data: dict[str, Any]) -> bytes:
    """Indented UTF-8 JSON; escaped ASCII instead when some string holds a lone surrogate."""
    text = json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n"
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return (json.dumps(data, indent=2, ensure_ascii=True, default=str) + "\n").encode("ascii")


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
    summary["load_errors"] = sum(1 for s in run.suites if s.load_errors)
    summary["duration"] = _number(run.duration) or 0.0
    summary["exit_code"] = run.exit_code()
    return summary


def _suite(suite: SuiteResult) -> dict[str, Any]:
    """One suite file: its name, file, load errors (if it could not be loaded) and cases."""
    return {
        "name": suite.name,
        "file": suite.file,
        "load_errors": list(suite.load_errors),
        "cases": [_case(c) for c in suite.cases],
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
        "checks": [{"check": f.check, "summary": f.summary} for f in evaluation.failures] if evaluation else [],
        "errors": list(evaluation.errors) if evaluation else [],
        "notes": list(case.notes),
        "trajectory": case.trajectory.to_dict() if case.trajectory else None,
    }


def _steps_report(steps: Any) -> dict[str, Any]:
    """The steps matcher's report as a dict (empty when there is none or it gives no dict)."""
    to_dict = getattr(steps, "to_dict", None)
    data = to_dict() if callable(to_dict) else None
    return data if isinstance(data, dict) else {}
