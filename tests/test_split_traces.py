"""A run split across traces (each model and tool call its own trace) is one run; several whole runs are refused;
``traces`` forces either; LangChain ``ToolMessage`` results read as their content."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from trajrun.errors import SourceError, SuiteErrors
from trajrun.run.runner import RunOptions, run_paths
from trajrun.sources import load_document, load_trajectory, read_trajectory
from trajrun.suites.load import load_suite
from trajrun.trajectory import Trajectory, Usage

SPLIT = Path(__file__).parent / "data" / "traces" / "openinference_langchain_split_traces.json"
TRACES = ("4f0c9a1e7b3d5f2a8c6e0b4d2f9a7c15", "b83e2d6f1a9c4e07d5b2f8a6c3e1d940", "07d9f3b1c5e8a2f46b0d4e9c7a3f1b28",
          "e2a6c0f4b8d1e5a9f3c7b2d6e0a4f813")  # fmt: skip
PARIS, TOKYO = "call_Qm3vT8kYp2LwZ6RaE1dHxNc4", "call_B7nUe0sXj5GfK9VhM2qPzLo3"
CALLS = [("get_weather", {"city": "Paris"}, PARIS, 0, "Paris: 18°C, light rain, wind 14 km/h", False),
         ("get_weather", {"city": "Tokyo"}, TOKYO, 0, "Tokyo: 24°C, clear, wind 6 km/h", False)]  # fmt: skip
ANSWER = "It's 18°C with light rain in Paris, and 24°C and clear in Tokyo."
MERGED = (f"4 traces read as one run, in time order ({', '.join(TRACES)}): no trace has an agent or chain span "
          "over its calls")  # fmt: skip
UNWRAPPED = ("2 tool results are the content of a LangChain ToolMessage serialised in the tool span (output.value), "
             "which keeps the whole message")  # fmt: skip
ONE = (f"the document holds 4 traces ({', '.join(TRACES)}) and traces: one reads a run from one trace; pick one "
       f"with select: \"$..spans[?(@.traceId == '{TRACES[0]}')]\"")  # fmt: skip


def _calls(t: Trajectory) -> list[tuple[Any, ...]]:
    """Name, arguments, id, turn, result and error flag of every call."""
    return [(c.name, c.args, c.id, c.turn, c.result, c.error) for c in t.calls]


def _spans() -> list[dict[str, Any]]:
    """The fixture's OTLP spans, in file order."""
    doc = load_document(SPLIT)
    return [span for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for span in ss["spans"]]


def _phoenix(span: dict[str, Any]) -> dict[str, Any]:
    """An OTLP span as Phoenix's REST API gives it: ``context``, ``span_kind``, flat attributes, ISO-free nanos."""
    attrs = {kv["key"]: _plain(kv["value"]) for kv in span["attributes"]}
    return {"name": span["name"], "context": {"trace_id": span["traceId"], "span_id": span["spanId"]},
            "parent_id": None, "span_kind": attrs.pop("openinference.span.kind"), "status_code": "OK",
            "start_time_unix_nano": span["startTimeUnixNano"], "end_time_unix_nano": span["endTimeUnixNano"],
            "attributes": attrs}  # fmt: skip


def _plain(value: dict[str, Any]) -> Any:
    """An OTLP/JSON AnyValue as a plain value (``intValue`` is a string there)."""
    return int(value["intValue"]) if "intValue" in value else next(iter(value.values()))


def _tool_output(span: dict[str, Any], value: Any) -> dict[str, Any]:
    """A copy of a tool span whose ``output.value`` is ``value`` as JSON text."""
    span = copy.deepcopy(span)
    for kv in span["attributes"]:
        if kv["key"] == "output.value":
            kv["value"] = {"stringValue": json.dumps(value)}
    return span


# The rule


def test_langchain_run_whose_every_call_is_a_trace_reads_as_one_run() -> None:
    """OpenInference's LangChain export, the agent not wrapped in a chain: 4 traces (model, tool, tool, model) are
    one run in time order; the tools' Python-repr inputs give way to the model's requests (paired by the
    ToolMessage's call id) and their results are the ToolMessage content."""
    t = load_trajectory(SPLIT)
    assert _calls(t) == CALLS
    assert (t.format, t.turns, t.usage, t.answer) == ("otel", 2, Usage(82 + 171, 47 + 26), ANSWER)
    assert t.notes == (MERGED, UNWRAPPED)
    assert [c.duration_ms for c in t.calls] == [235.0, 271.0]


def test_the_same_spans_as_a_flat_list_follow_the_same_rule() -> None:
    """One rule for OTLP and span lists: Phoenix's spans of the 4 traces read as the OTLP export does, and are
    refused the same way with ``traces: one``."""
    flat = {"data": [_phoenix(span) for span in _spans()]}
    t, otlp = read_trajectory(flat), load_trajectory(SPLIT)
    assert (_calls(t), t.turns, t.usage, t.answer, t.notes) == (_calls(otlp), 2, otlp.usage, ANSWER, otlp.notes)
    with pytest.raises(SourceError) as info:
        read_trajectory(flat, traces="one")
    assert str(info.value).startswith(f"<inline>: the document holds 4 traces ({', '.join(TRACES)}) and traces: "
                                      "one reads a run from one trace; pick one with select: ")  # fmt: skip


def test_several_whole_runs_still_ask_for_a_select() -> None:
    """The split run twice, once under an agent span: that trace is a whole run, so the document is refused with
    the select, each: trace and traces: merge; ``traces: merge`` then reads everything as one run."""
    second = []
    for span in copy.deepcopy(_spans()):
        span["traceId"] = "ab" * 16
        span["parentSpanId"] = "00000000000000aa"
        for key in ("startTimeUnixNano", "endTimeUnixNano"):
            span[key] = str(int(span[key]) + 100_000_000_000)
        second.append(span)
    agent = {"traceId": "ab" * 16, "spanId": "00000000000000aa", "name": "LangGraph", "kind": 1,
             "startTimeUnixNano": "1796342500000000000", "endTimeUnixNano": "1796342503000000000",
             "attributes": [{"key": "openinference.span.kind", "value": {"stringValue": "CHAIN"}}]}  # fmt: skip
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [*_spans(), agent, *second]}]}]}
    with pytest.raises(SourceError) as info:
        read_trajectory(doc, origin="traces.json")
    assert str(info.value) == (
        f"traces.json: the document holds 5 traces ({', '.join(TRACES)}, {'ab' * 16}), and trace {'ab' * 16} is a "
        "whole run (its root span 'LangGraph' is no model or tool call); pick one with select: "
        f"\"$..spans[?(@.traceId == '{TRACES[0]}')]\", check each with each: trace, or read them as one run with "
        "traces: merge"
    )
    merged = read_trajectory(doc, traces="merge")
    assert (len(merged.calls), merged.turns) == (4, 4)
    assert merged.notes[0] == (f"5 traces read as one run, in time order ({', '.join(TRACES)}, {'ab' * 16}): as "
                               "traces: merge asks")  # fmt: skip


def test_traces_one_refuses_fragments_and_unknown_rules_are_an_error() -> None:
    """``traces: one`` keeps the old rule (a run is one trace); a rule not in the list is an error, not a guess."""
    with pytest.raises(SourceError) as info:
        load_trajectory(SPLIT, traces="one")
    assert str(info.value) == f"{SPLIT}: {ONE}"
    with pytest.raises(SourceError) as info:
        load_trajectory(SPLIT, traces="merged")
    assert str(info.value) == f"{SPLIT}: unknown traces 'merged'; use one of: auto, merge, one"


# LangChain ToolMessage results


@pytest.mark.parametrize("shape", ["output", "dumpd", "model_dump"])
def test_every_serialisation_of_a_tool_message_is_its_content(shape: str) -> None:
    """``{"output": {type, data}}``, ``dumpd``'s constructor and the flat ``model_dump`` read as the content; a
    ``status: error`` message is a failed call."""
    data = {"content": "no such city: Pariss", "type": "tool", "name": "get_weather", "tool_call_id": PARIS,
            "status": "error"}  # fmt: skip
    value = {"output": {"type": "tool", "data": data},
             "dumpd": {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", "ToolMessage"],
                       "kwargs": data},
             "model_dump": data}[shape]  # fmt: skip
    spans = _spans()
    spans[0] = _tool_output(spans[0], value)
    t = read_trajectory({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]})
    assert (t.calls[0].result, t.calls[0].error, t.calls[0].id) == ("no such city: Pariss", True, PARIS)
    assert t.calls[1].result == CALLS[1][4]


def test_a_tool_returning_a_map_with_type_tool_is_left_as_it_is() -> None:
    """A tool's own result that only looks like a message (``type: tool`` without a call id or ``data``) is the
    result as returned, and no note says otherwise."""
    spans = _spans()
    spans[0] = _tool_output(spans[0], {"type": "tool", "name": "thermometer", "celsius": 18})
    t = read_trajectory({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]})
    assert t.calls[0].result == {"type": "tool", "name": "thermometer", "celsius": 18}
    assert t.notes[-1] == UNWRAPPED.replace("2 tool results are", "1 tool result is")


# In a suite, and in trajrun show


def test_a_suite_forces_either_rule(tmp_path: Path) -> None:
    """``traces: one`` makes the split run a case error; ``merge`` and the default read it."""
    (tmp_path / "split.json").write_text(SPLIT.read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "t.suite.yaml").write_text(
        "cases:\n"
        "  - {name: auto, source: split.json, steps: [get_weather, get_weather]}\n"
        "  - {name: merge, source: {file: split.json, traces: merge}, steps: [get_weather, get_weather]}\n"
        "  - {name: one, source: {file: split.json, traces: one}, steps: [get_weather, get_weather]}\n",
        encoding="utf-8",
    )
    cases = {case.name: case for case in run_paths([tmp_path / "t.suite.yaml"], RunOptions(root=tmp_path)).cases}
    assert (cases["auto"].outcome, cases["merge"].outcome, cases["one"].outcome) == ("passed", "passed", "error")
    assert cases["one"].message == f"source: {tmp_path / 'split.json'}: {ONE}"


@pytest.mark.parametrize(("source", "error"), [
    ("{file: split.json, traces: merged}", "3:40: cases[0].source.traces: unknown traces 'merged' — did you mean "
                                           "'merge'?"),
    ("{file: 'logs/*.json', each: trace, traces: merge}",
     "3:48: cases[0].source.traces: traces says how one run is read from several traces, but each reads every record "
     "alone (each: trace, every trace); remove traces"),
])  # fmt: skip
def test_suite_traces_key_errors(tmp_path: Path, source: str, error: str) -> None:
    """A wrong ``traces`` value, or ``traces`` with ``each``, is a load error at its key."""
    path = tmp_path / "t.suite.yaml"
    path.write_text(f"cases:\n  - name: c\n    source: {source}\n    steps: [get_weather]\n", encoding="utf-8")
    with pytest.raises(SuiteErrors) as info:
        load_suite(path)
    assert str(info.value) == f"{path}:{error}"


def _show(*args: str) -> subprocess.CompletedProcess[str]:
    """``trajrun show`` as a real process."""
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-m", "trajrun", "show", *args], capture_output=True, text=True,
                          env=env, timeout=120)  # fmt: skip


def test_show_says_how_many_traces_it_merged_and_takes_traces() -> None:
    """Without -v, ``show`` prints only the merge note; ``--traces one`` exits 2 with the reason."""
    shown = _show(str(SPLIT))
    assert shown.returncode == 0, shown.stderr
    assert "get_weather  {\"city\":\"Paris\"}" in shown.stdout
    assert shown.stderr == f"note: {MERGED}\n"
    verbose = _show(str(SPLIT), "-v")
    assert verbose.stderr == f"note: {MERGED}\nnote: {UNWRAPPED}\n"
    refused = _show(str(SPLIT), "--traces", "one")
    assert (refused.returncode, refused.stdout) == (2, "")
    assert refused.stderr == f"trajrun: error: {SPLIT}: {ONE}\n"
