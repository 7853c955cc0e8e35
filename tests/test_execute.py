"""Last lines of defence in running a case: a bug while reading a source is an error of that case, not the run's end."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from trajrun.run import execute
from trajrun.run.runner import RunInterrupted, RunOptions, run_paths
from trajrun.run.results import CaseResult

RUN = {"tool_calls": [{"name": "search", "args": {"q": "x"}}]}


def _run(tmp_path: Path, cases: str) -> dict[str, CaseResult]:
    """Write ``run.json`` and a suite of ``cases`` beside it, run it; results by case name."""
    (tmp_path / "run.json").write_text(json.dumps(RUN), encoding="utf-8")
    (tmp_path / "t.suite.yaml").write_text("cases:\n" + cases, encoding="utf-8")
    result = run_paths([tmp_path / "t.suite.yaml"], RunOptions(root=tmp_path))
    assert not any(s.load_errors for s in result.suites), result.suites
    return {case.name: case for case in result.cases}


def _crash(*args: Any, **kwargs: Any) -> Any:
    """A reader with a bug."""
    raise TypeError("unhashable type: 'list'")


FILE_CASES = """\
  - {name: first, source: run.json, steps: [search]}
  - {name: second, source: run.json, steps: [search]}
  - {name: inline, source: {messages: {tool_calls: [{name: search}]}}, steps: [search]}
"""


def test_a_reader_bug_is_an_error_of_its_cases_and_the_run_goes_on(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A file source whose reader raises: its cases err with the exception named, the other cases still pass."""
    monkeypatch.delenv(execute.TRACEBACK_VAR, raising=False)
    monkeypatch.setattr(execute, "load_trajectory", _crash)
    results = _run(tmp_path, FILE_CASES)
    path = tmp_path / "run.json"
    for name in ("first", "second"):
        assert results[name].outcome == "error"
        assert results[name].message == (f"source: internal error reading {path}: TypeError: unhashable type: 'list' "
                                          "(please report it)")
        assert results[name].details == "set TRAJRUN_TRACEBACK=1 to see the traceback here"
    assert results["inline"].outcome == "passed"


def test_the_traceback_is_in_the_details_with_trajrun_traceback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``TRAJRUN_TRACEBACK=1`` puts the reader's traceback in the case's details, for a bug report."""
    monkeypatch.setenv(execute.TRACEBACK_VAR, "1")
    monkeypatch.setattr(execute, "load_trajectory", _crash)
    details = _run(tmp_path, FILE_CASES)["first"].details
    assert details.startswith("Traceback (most recent call last):")
    assert "in _crash" in details and details.endswith("TypeError: unhashable type: 'list'")


def test_inline_and_live_reader_bugs_are_case_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Inline messages and a command's output go through the same guard, each naming its origin."""
    monkeypatch.setattr(execute, "read_trajectory", _crash)
    command = f"{sys.executable} -c 'print(1)'"
    results = _run(tmp_path, f"""\
  - {{name: inline, source: {{messages: []}}, steps: [search]}}
  - name: live
    source: {{command: {json.dumps(command)}}}
    steps: [search]
  - {{name: file, source: run.json, steps: [search]}}
""")
    assert results["inline"].message == ("source: internal error reading inline messages: TypeError: unhashable type: "
                                         "'list' (please report it)")
    assert results["live"].message == (f"source: internal error reading {command}: TypeError: unhashable type: "
                                       "'list' (please report it)")
    assert results["file"].outcome == "passed"


def test_an_evaluation_bug_is_a_case_error_asking_for_a_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug in a check is an internal error of that case, with the same traceback switch."""
    monkeypatch.delenv(execute.TRACEBACK_VAR, raising=False)
    monkeypatch.setattr(execute, "evaluate", _crash)
    result = _run(tmp_path, FILE_CASES)["first"]
    assert result.outcome == "error"
    assert result.message == "internal error: TypeError: unhashable type: 'list' (please report it)"
    assert result.details == "set TRAJRUN_TRACEBACK=1 to see the traceback here"


def test_keyboard_interrupt_is_not_swallowed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only exceptions become case errors: Ctrl-C while reading still stops the run."""
    def interrupt(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(execute, "load_trajectory", interrupt)
    with pytest.raises(RunInterrupted):
        _run(tmp_path, FILE_CASES)
