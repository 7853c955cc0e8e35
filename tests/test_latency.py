"""Durations and the `latency` check: traces record how long each call and the run took; others record no time."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from trajrun.cli import main
from trajrun.match.evaluate import evaluate
from trajrun.match.expectation import Expectation
from trajrun.sources import load_trajectory, read_trajectory
from trajrun.suites.load import load_suite
from trajrun.trajectory import ToolCall, Trajectory

ROOT = Path(__file__).resolve().parent.parent
TRACE = ROOT / "suites" / "runs" / "nightly" / "file_agent.otlp.jsonl"


def span(name: str, start: object, end: object, key: str = "UnixNano") -> dict[str, object]:
    """An execute_tool span with its start and end written under OTLP's keys (or another key style)."""
    times = ({"startTimeUnixNano": start, "endTimeUnixNano": end} if key == "UnixNano"
             else {"start_time": start, "end_time": end})  # fmt: skip
    return {"spanId": f"{abs(hash(name)) % 16**16:016x}", "name": f"execute_tool {name}", **times,
            "attributes": {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name}}


def timed(*durations: float | None, wall: float | None = None) -> Trajectory:
    """A run of `search` calls, each with a duration (or none)."""
    calls = tuple(ToolCall("search", {}, position=i, turn=i, duration_ms=d) for i, d in enumerate(durations))
    return Trajectory(calls, len(calls), format="otel" if wall is not None else "openai", wall_ms=wall)


def test_a_trace_records_each_call_and_the_run() -> None:
    """Tool spans give calls their durations; the spans' extent is the run's wall time; JSON keeps both."""
    traj = load_trajectory(TRACE)
    assert [round(c.duration_ms or 0, 6) for c in traj.calls] == [0.034762, 0.030746]
    assert traj.wall_ms is not None and round(traj.wall_ms, 3) == 12.148
    assert read_trajectory(json.loads(json.dumps(traj.to_dict()))) == traj


def test_times_in_an_unknown_unit_record_no_duration() -> None:
    """ISO times count; a bare number under start_time has no known unit, so no duration is made up."""
    iso = read_trajectory([span("a", "2025-01-01T00:00:00Z", "2025-01-01T00:00:01.5Z", "iso")])
    assert iso.calls[0].duration_ms == 1500.0 and iso.wall_ms == 1500.0
    bare = read_trajectory([span("a", 1, 2, "iso")])
    assert bare.calls[0].duration_ms is None and bare.wall_ms is None and not bare.records_durations


def test_other_formats_record_no_time() -> None:
    """A chat history has no times: no durations, no wall time, and the JSON shape stays as before."""
    traj = read_trajectory([{"role": "assistant", "tool_calls": [
        {"id": "1", "type": "function", "function": {"name": "search", "arguments": "{}"}}]}])
    assert traj.calls[0].duration_ms is None and traj.wall_ms is None
    assert "duration_ms" not in traj.to_dict()["tool_calls"][0] and "wall_ms" not in traj.to_dict()


def test_latency_bounds_each_call_and_the_total() -> None:
    """Every call of a bounded tool and the run's wall time within max_ms; the failure shows each against its bound."""
    traj = timed(120.0, 950.5, wall=1500.0)
    assert evaluate(Expectation(latency={"search": 1000.0, "total": 2000.0}), traj).passed
    result = evaluate(Expectation(latency={"search": 800.0, "total": 1000.0}), traj)
    assert [(f.check, f.summary) for f in result.failures] == [
        ("latency", "search [1] 950.5 ms > 800 ms, total 1500.0 ms > 1000 ms")]
    assert result.failures[0].detail == ("search [0]  max 800 ms  took 120.0 ms  ok\n"
                                         "search [1]  max 800 ms  took 950.5 ms  OVER\n"
                                         "total       max 1000 ms  took 1500.0 ms  OVER")  # fmt: skip
    assert evaluate(Expectation(latency={"book": 10.0}), traj).passed  # a tool never called took no time


def test_latency_where_no_time_is_recorded_is_a_case_error() -> None:
    """A bound the source cannot answer is an error, never a silent pass."""
    result = evaluate(Expectation(latency={"search": 800.0, "total": 5000.0}), timed(None, None))
    assert result.errors == (
        "latency: search cannot be checked: the openai source records no call durations; remove the bound or read "
        "the run from a trace (otel)",
        "latency: total cannot be checked: the openai source records no run time; remove the bound or read the run "
        "from a trace (otel)",
    )
    partial = evaluate(Expectation(latency={"search": 800.0}), timed(10.0, None, wall=20.0))
    assert partial.errors == ("latency: search cannot be checked: call [1] of search has no recorded duration; "
                              "remove the bound or read the run from a trace (otel)",)  # fmt: skip


def test_latency_loads_and_merges_from_defaults(tmp_path: Path) -> None:
    """`latency` counts as a check, and merges key by key with the defaults' bounds."""
    path = tmp_path / "t.suite.yaml"
    path.write_text("defaults: {latency: {total: {max_ms: 5000}}}\n"
                    "cases:\n  - {name: a, source: run.json, latency: {search: {max_ms: 800}}}\n")  # fmt: skip
    assert dict(load_suite(path).cases[0].expect.latency) == {"total": 5000.0, "search": 800.0}


def test_show_prints_durations_and_wall_time() -> None:
    """`trajrun show` adds an ms column and a time line where the source records time."""
    shown = CliRunner().invoke(main, ["show", str(TRACE)])
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    assert lines[0].split() == ["#", "turn", "tool", "args", "ms", "result"]
    assert lines[1].split()[4] == "0.0" and "time: 12.1 ms" in lines
