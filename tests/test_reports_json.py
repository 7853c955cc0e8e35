"""The JSON report: version 1 shape, round trip through json.loads, atomic writes."""

from __future__ import annotations

import json
import math
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from trajrun.match.verdict import CheckFailure, Evaluation
from trajrun.reports import json_report
from trajrun.run.results import CaseResult, RunResult, SuiteResult
from trajrun.trajectory import ToolCall, Trajectory, Usage

W = "suites/weather.suite.yaml"
BAD = "suites/bad.suite.yaml"
CASE_KEYS = {"id", "name", "file", "line", "outcome", "duration", "message", "details", "score", "judge", "missing",
             "unexpected", "checks", "errors", "notes", "trajectory", "steps", "bulk", "baseline", "repeats"}


class StepsReport:
    """A stand-in for the matcher's steps report: only ``to_dict`` matters here."""

    def __init__(self, data: Any) -> None:
        self.data = data

    def to_dict(self) -> Any:
        """The report as the matcher would give it."""
        return self.data


def case(name: str, outcome: str, **kw: Any) -> CaseResult:
    """A case of the weather suite."""
    return CaseResult(case_id=f"{W}::{name}", suite="weather", name=name, file=W, line=kw.pop("line", 9),
                      outcome=outcome, **kw)


ROME_TRAJ = Trajectory(calls=(ToolCall("get_forecast", {"city": "Rome"}, id="call_1", result="sunny", has_result=True),
                              ToolCall("refund_all", "{not json", id="call_2", turn=1, position=1)),
                       turns=2, usage=Usage(200, 50), answer="Sunny in Rome.")
ROME_EVAL = Evaluation(
    failures=(CheckFailure("steps", "1 missing", "table"), CheckFailure("never", "refund_all")),
    score=0.5,
    steps=StepsReport({"missing": [{"name": "search", "args": {"q": "rome"}}],
                       "unexpected": [{"name": "refund_all", "args": "{not json"}], "matched": 1}),
)


def sample_run() -> RunResult:
    """A load error and a suite with a failed, an erred, a passed and a skipped case."""
    weather = SuiteResult("weather", W, cases=(
        case("rome", "failed", line=14, duration=0.5, message=ROME_EVAL.message(), details=ROME_EVAL.details(),
             check_type="steps", score=0.5, evaluation=ROME_EVAL, trajectory=ROME_TRAJ),
        case("oslo", "error", message="token budget needs usage", check_type="error",
             evaluation=Evaluation(errors=("token budget needs usage, but the source has none",))),
        case("paris", "passed", score=1.0, notes=("golden file updated: golden/paris.yaml",),
             evaluation=Evaluation(score=1.0, steps=StepsReport({"matched": 2}))),
        case("tokyo", "skipped", message="flaky upstream"),
    ))
    bad = SuiteResult("bad", BAD, load_errors=(f"{BAD}:4:7: cases[0]: unknown key 'mdoe'",))
    return RunResult((bad, weather), duration=1.25, deselected=3)


def round_trip(run: RunResult) -> dict[str, Any]:
    """The report after json.dumps and json.loads."""
    return json.loads(json.dumps(json_report.render(run), allow_nan=False))


def test_top_level_shape_and_summary() -> None:
    """version 1, counts in contract order with totals, duration and the exit code."""
    data = round_trip(sample_run())
    assert list(data) == ["version", "summary", "suites"] and data["version"] == 1
    assert data["summary"] == {"passed": 1, "failed": 1, "error": 1, "skipped": 1, "xfailed": 0, "xpassed": 0,
                               "total": 4, "deselected": 3, "judge_skipped": 0, "flaky": 0, "load_errors": 1, "duration": 1.25,
                               "exit_code": 2, "gates": None}


def test_suites_keep_order_files_and_load_errors() -> None:
    """Each suite has name, file, load errors and cases; a suite that could not load has no cases."""
    suites = round_trip(sample_run())["suites"]
    assert [(s["name"], s["file"], len(s["cases"])) for s in suites] == [("bad", BAD, 0), ("weather", W, 4)]
    assert suites[0]["load_errors"] == [f"{BAD}:4:7: cases[0]: unknown key 'mdoe'"]
    assert suites[1]["load_errors"] == []


def test_failed_case_carries_diff_checks_and_trajectory() -> None:
    """missing/unexpected come from the steps report, checks from the failures, trajectory from to_dict."""
    rome = round_trip(sample_run())["suites"][1]["cases"][0]
    assert set(rome) == CASE_KEYS
    assert (rome["id"], rome["line"], rome["outcome"], rome["score"]) == (f"{W}::rome", 14, "failed", 0.5)
    assert rome["message"] == "2 checks failed: steps (1 missing), never (refund_all)"
    assert rome["missing"] == [{"name": "search", "args": {"q": "rome"}}]
    assert rome["unexpected"] == [{"name": "refund_all", "args": "{not json"}]
    assert [(c["check"], c["summary"]) for c in rome["checks"]] == [("steps", "1 missing"), ("never", "refund_all")]
    assert rome["trajectory"] == json.loads(json.dumps(ROME_TRAJ.to_dict()))


def test_error_case_lists_the_checks_that_could_not_run() -> None:
    """An erred case's ``errors`` are the evaluation's reasons; no trajectory gives null."""
    oslo = round_trip(sample_run())["suites"][1]["cases"][1]
    assert oslo["errors"] == ["token budget needs usage, but the source has none"]
    assert (oslo["outcome"], oslo["trajectory"], oslo["missing"], oslo["checks"]) == ("error", None, [], [])


def test_steps_report_without_lists_and_no_evaluation_give_empty_lists() -> None:
    """A to_dict without missing/unexpected, or no evaluation at all, gives empty lists and null score."""
    cases = round_trip(sample_run())["suites"][1]["cases"]
    paris, tokyo = cases[2], cases[3]
    assert (paris["missing"], paris["unexpected"], paris["notes"]) == ([], [], ["golden file updated: golden/paris.yaml"])
    assert (tokyo["missing"], tokyo["errors"], tokyo["score"], tokyo["message"]) == ([], [], None, "flaky upstream")


def test_non_finite_numbers_become_null() -> None:
    """A NaN score cannot break strict JSON parsers: it is written as null."""
    run = RunResult((SuiteResult("w", W, cases=(case("a", "failed", score=math.nan, duration=math.inf),)),))
    only = round_trip(run)["suites"][0]["cases"][0]
    assert (only["score"], only["duration"]) == (None, 0.0)


def test_write_round_trips_unicode(tmp_path: Path) -> None:
    """The written file is UTF-8 JSON equal to render(), unicode kept readable."""
    run = RunResult((SuiteResult("météo", W, cases=(case("東京 ☕", "passed"),)),))
    path = tmp_path / "report.json"
    json_report.write(run, path)
    assert "東京 ☕" in path.read_text(encoding="utf-8")
    assert json.loads(path.read_text(encoding="utf-8")) == round_trip(run)


def test_write_escapes_lone_surrogates(tmp_path: Path) -> None:
    """A lone surrogate (undecodable tool output) is written as an ASCII escape, not a crash."""
    run = RunResult((SuiteResult("w", W, cases=(case("a", "failed", message="bad \ud800 byte"),)),))
    path = tmp_path / "report.json"
    json_report.write(run, path)
    assert json.loads(path.read_bytes())["suites"][0]["cases"][0]["message"] == "bad \ud800 byte"


def test_failed_write_keeps_the_previous_report(tmp_path: Path) -> None:
    """When encoding fails half-way through the stream, the old report stays and no temp file remains."""
    path = tmp_path / "report.json"
    path.write_text('{"version": 1}')

    class Unprintable:
        def __str__(self) -> str:
            raise RuntimeError("cannot be shown")

    calls = tuple(ToolCall("search", {"q": i}, turn=i, position=i) for i in range(1000))
    traj = Trajectory(calls + (ToolCall("search", {"q": Unprintable()}, turn=1000, position=1000),), turns=1001)
    run = RunResult((SuiteResult("s", "s.suite.yaml", cases=(
        CaseResult("s.suite.yaml::c", "s", "c", "s.suite.yaml", 1, "passed", trajectory=traj),)),))
    with pytest.raises(RuntimeError, match="cannot be shown"):
        json_report.write(run, path)
    assert path.read_text() == '{"version": 1}'
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


def test_report_streams_a_long_history_in_small_pieces(tmp_path: Path) -> None:
    """A 5,000-call history is written a call at a time: the write allocates a small fraction of the file."""
    calls = tuple(ToolCall("search", {"query": f"q{i}", "page": i}, turn=i, position=i) for i in range(5_000))
    run = RunResult((SuiteResult("s", "s.suite.yaml", cases=(
        CaseResult("s.suite.yaml::c", "s", "c", "s.suite.yaml", 1, "passed", trajectory=Trajectory(calls, turns=5_000)),)),))
    tracemalloc.start()
    try:
        json_report.write(run, tmp_path / "big.json")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    size = (tmp_path / "big.json").stat().st_size
    assert size > 500_000 and peak < size / 10, (size, peak)
    assert len(json.loads((tmp_path / "big.json").read_text())["suites"][0]["cases"][0]["trajectory"]["tool_calls"]) == 5_000
