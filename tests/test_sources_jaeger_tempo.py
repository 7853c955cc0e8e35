"""Traces as people download them (Jaeger's JSON, Tempo's batches, OTel JS ReadableSpans), and one
model or tool call counted once when several instrumentations recorded it."""

from __future__ import annotations

import base64
import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from trajrun.errors import SourceError
from trajrun.sources import load_document, load_trajectory, read_trajectory
from trajrun.sources.readers.otel_spans import spans_of, trace_groups
from trajrun.trajectory import Trajectory, Usage

TRACES = Path(__file__).parent / "data" / "traces"
JAEGER = TRACES / "jaeger_adk_openllmetry.json"
TEMPO = TRACES / "tempo_batches_adk.json"
TEMPO_OI = TRACES / "tempo_batches_openinference_genai.json"
JS = TRACES / "js_readable_spans_vercel.json"

LIST_ID, GET_ID = "call_Qm3nV8xLr2TfW6yZp0KdJ1sA", "call_Hk7sB2eRt9UwX4vN1cYq5LmZ"
JAEGER_CALLS = [
    ("helm_list_releases", {"all_namespaces": "true"}, LIST_ID, 0),
    ("helm_get_release", {"name": "grafana", "namespace": "monitoring"}, GET_ID, 1),
]
JAEGER_ANSWER = (
    "One release is installed: kagent (namespace kagent, revision 2, deployed). "
    "There is no release named grafana in the monitoring namespace."
)
JAEGER_NOTES = [
    "spans 'openai.chat' (e2b8a4d06f1c3957), 'call_llm' (d1a7f3c95e0b2846) are one model call",
    "spans 'openai.chat' (2c6f4e8b0a3d5179), 'call_llm' (1b5e3d7a9f2c4068) are one model call",
    "spans 'openai.chat' (6a0d8c2f4e7b9513), 'call_llm' (5f9c7b1e3d6a8402) are one model call",
]
TEMPO_NOTES = [
    (
        "spans 'openai.chat' (4d6f8b0c2e3a5c79), 'generate_content gpt-4.1-mini' "
        "(3c5e7a9b1d2f4b68), 'call_llm' (2b4d6f8a0c1e3a57) are one model call"
    ),
    (
        "spans 'openai.chat' (8b0d2f4a6c7e9ab3), 'generate_content gpt-4.1-mini' "
        "(7a9c1e3f5b6d8fa2), 'call_llm' (6f8b0d2e4a5c7e91) are one model call"
    ),
]
LISTING = (
    "NAME       \tNAMESPACE\tREVISION\tSTATUS  \tCHART\n"
    "kagent     \tkagent   \t2       \tdeployed\tkagent-0.7.14"
)
TRACE = "ab" * 16


def _calls(t: Trajectory) -> list[tuple[Any, ...]]:
    """Name, arguments, id and turn of every call."""
    return [(c.name, c.args, c.id, c.turn) for c in t.calls]


def _error(doc: Any, fmt: str = "auto") -> str:
    """The SourceError text reading ``doc`` raises."""
    with pytest.raises(SourceError) as info:
        read_trajectory(doc, fmt, origin="trace.json")
    return str(info.value)


def _show(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``trajrun show ARGS`` as a real process."""
    command = [sys.executable, "-m", "trajrun", "show", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=cwd,
                          check=False)  # fmt: skip


def _span(name: str, span_id: str, parent: str | None, start: int,
          attrs: dict[str, Any]) -> dict[str, Any]:
    """An OTLP-like span with flat attributes (as converted exports have them), times in ns."""
    return {"traceId": TRACE, "spanId": span_id, "parentSpanId": parent, "name": name,
            "startTimeUnixNano": start, "endTimeUnixNano": start + 10, "attributes": attrs,
            "status": {}}  # fmt: skip


def _chat(span_id: str, parent: str | None, start: int, tokens: tuple[int, int] | None,
          **attrs: Any) -> dict[str, Any]:
    """A GenAI ``chat`` span, with usage when ``tokens`` are given."""
    usage = {} if tokens is None else {"gen_ai.usage.input_tokens": tokens[0],
                                       "gen_ai.usage.output_tokens": tokens[1]}  # fmt: skip
    return _span("chat gpt-4o", span_id, parent, start,
                 {"gen_ai.operation.name": "chat", **usage, **attrs})  # fmt: skip


def _tool(span_id: str, parent: str | None, start: int, name: str, **attrs: Any) -> dict[str, Any]:
    """A GenAI ``execute_tool`` span."""
    tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name}
    return _span(f"execute_tool {name}", span_id, parent, start, {**tool, **attrs})


# Jaeger


def test_jaeger_download_reads_with_each_call_once() -> None:
    """ADK + OpenLLMetry in Jaeger's JSON: 3 model calls (not 6), typed tags, the failed tool
    call, microsecond times."""
    t = load_trajectory(JAEGER)
    assert (t.format, _calls(t)) == ("otel", JAEGER_CALLS)
    assert [(c.result, c.error, c.duration_ms) for c in t.calls] == [
        ({"content": [{"type": "text", "text": LISTING}], "isError": False}, False, 61.244),
        ({"content": [{"type": "text", "text": "Error: release: not found"}], "isError": True},
         True, 48.133),
    ]  # fmt: skip
    usage = Usage(1734 + 1850 + 1981, 27 + 31 + 154)
    assert (t.turns, t.usage, t.answer, t.wall_ms) == (3, usage, JAEGER_ANSWER, 9412.005)
    assert list(t.notes) == JAEGER_NOTES


@pytest.mark.parametrize("select", ["$.data[0]", "$.data[0].spans", "$.data"])
def test_jaeger_trace_spans_or_trace_list_read_the_same(select: str) -> None:
    """One Jaeger trace, its span list (the select the old hint gave) or the list of traces: the
    same run."""
    whole, part = load_trajectory(JAEGER), load_trajectory(JAEGER, select=select)
    assert (_calls(part), part.turns, part.usage, part.answer, part.wall_ms) == (
        _calls(whole), whole.turns, whole.usage, whole.answer, whole.wall_ms,
    )  # fmt: skip


def test_jaeger_with_format_otel() -> None:
    """``format: otel`` takes a Jaeger document too (the old hint suggested it and it failed)."""
    assert _calls(read_trajectory(load_document(JAEGER), "otel")) == JAEGER_CALLS


def test_jaeger_several_traces_name_the_select_that_picks_one(tmp_path: Path) -> None:
    """Jaeger's search results hold several traces: the error gives a select on Jaeger's
    ``traceID``, and it works; bulk sources group the spans by trace."""
    doc = load_document(JAEGER)
    other = copy.deepcopy(doc["data"][0])
    other["traceID"] = "0123456789abcdef0123456789abcdef"
    for span in other["spans"]:
        span["traceID"] = other["traceID"]
    doc["data"].append(other)
    path = tmp_path / "traces.json"
    path.write_text(json.dumps(doc))
    select = "$.data[?(@.traceID == '7f3c1e9a0b2d4c6e8a1f3b5d7c9e0a24')]"
    with pytest.raises(SourceError) as info:
        load_trajectory(path)
    assert str(info.value) == (
        f"{path}: the document holds 2 traces (7f3c1e9a0b2d4c6e8a1f3b5d7c9e0a24, "
        "0123456789abcdef0123456789abcdef), and trace 7f3c1e9a0b2d4c6e8a1f3b5d7c9e0a24 is a whole run (its root "
        f"span 'POST /' is no model or tool call); pick one with select: \"{select}\", check each with each: trace, "
        "or read them as one run with traces: merge"
    )
    assert _calls(load_trajectory(path, select=select)) == JAEGER_CALLS
    assert [(trace, len(spans)) for trace, spans in trace_groups(doc)] == [
        ("7f3c1e9a0b2d4c6e8a1f3b5d7c9e0a24", 15), ("0123456789abcdef0123456789abcdef", 15),
    ]  # fmt: skip


def _jaeger(*spans: dict[str, Any]) -> dict[str, Any]:
    """A Jaeger query API answer holding one trace of ``spans``."""
    processes = {"p1": {"serviceName": "agent", "tags": []}}
    trace = {"traceID": TRACE, "spans": list(spans), "processes": processes}
    return {"data": [trace], "total": 0, "limit": 0, "offset": 0, "errors": None}


def _jaeger_span(span_id: str, name: str, start: int, tags: list[dict[str, Any]],
                 **extra: Any) -> dict[str, Any]:
    """A Jaeger span (microsecond times) with typed tags."""
    return {"traceID": TRACE, "spanID": span_id, "operationName": name, "references": [],
            "startTime": start, "duration": 1500, "tags": tags, "logs": [], "processID": "p1",
            **extra}  # fmt: skip


def _tag(key: str, kind: str, value: Any) -> dict[str, Any]:
    """A Jaeger tag."""
    return {"key": key, "type": kind, "value": value}


def test_jaeger_tag_types_references_and_status() -> None:
    """Tags read by type (int64 and bool as text, float64, binary), FOLLOWS_FROM and the old
    ``parentSpanID`` as parents, ``otel.status_code: ERROR`` as a failed call."""
    request = [{"role": "assistant",
                "parts": [{"type": "tool_call", "id": "c1", "name": "lookup", "arguments": {}}]}]
    chat = _jaeger_span("00000000000000a1", "chat", 1_000, [
        _tag("gen_ai.operation.name", "string", "chat"),
        _tag("gen_ai.usage.input_tokens", "int64", "120"),
        _tag("gen_ai.usage.output_tokens", "int64", 9),
        _tag("gen_ai.request.temperature", "float64", "0.2"),
        _tag("gen_ai.output.messages", "string", json.dumps(request)),
    ])  # fmt: skip
    inner = _jaeger_span("00000000000000a2", "chat", 1_100, [
        _tag("gen_ai.operation.name", "string", "chat"),
        _tag("gen_ai.usage.input_tokens", "int64", 120),
        _tag("gen_ai.usage.output_tokens", "int64", 9),
    ], references=[{"refType": "FOLLOWS_FROM", "traceID": TRACE, "spanID": "00000000000000a1"}])
    tool = _jaeger_span("00000000000000a3", "execute_tool lookup", 3_000, [
        _tag("gen_ai.operation.name", "string", "execute_tool"),
        _tag("gen_ai.tool.name", "string", "lookup"),
        _tag("gen_ai.tool.call.id", "string", "c1"),
        _tag("retried", "bool", "true"),
        _tag("payload", "binary", base64.b64encode(b"\x01\x02").decode()),
        _tag("otel.status_code", "string", "ERROR"),
    ], parentSpanID="00000000000000a1")  # fmt: skip
    doc = _jaeger(tool, inner, chat)
    attrs = {span.span_id: span.attrs for span in spans_of(doc)}
    assert attrs["00000000000000a1"]["gen_ai.request.temperature"] == 0.2
    assert (attrs["00000000000000a3"]["retried"], attrs["00000000000000a3"]["payload"]) == (
        True, "0102",
    )  # fmt: skip
    t = read_trajectory(doc)
    assert (_calls(t), t.calls[0].error, t.calls[0].duration_ms) == (
        [("lookup", {}, "c1", 0)], True, 1.5,
    )  # fmt: skip
    assert (t.turns, t.usage, t.wall_ms) == (1, Usage(120, 9), 3.5)
    assert list(t.notes) == [
        "spans 'chat' (00000000000000a2), 'chat' (00000000000000a1) are one model call"
    ]


def test_jaeger_trace_without_llm_or_tool_spans_says_so() -> None:
    """A Jaeger download of an HTTP trace is a trace with no run in it: that message, not the list
    of every format."""
    doc = _jaeger(_jaeger_span("00000000000000b1", "GET /health", 1,
                               [_tag("http.request.method", "string", "GET")]))  # fmt: skip
    assert _error(doc) == (
        "trace.json: an OpenTelemetry trace of 1 span ('GET /health') with no LLM or tool span: "
        "no span has gen_ai.operation.name chat, generate_content, text_completion or "
        "execute_tool, gen_ai.tool.name, or openinference.span.kind LLM or TOOL; trace the agent "
        "with a GenAI or OpenInference instrumentation"
    )


# Tempo


def test_tempo_batches_with_instrumentation_library_spans() -> None:
    """Older Tempo / Grafana download: call_llm → generate_content → openai.chat is one model
    call, not three."""
    t = load_trajectory(TEMPO)
    assert _calls(t) == [("helm_list_releases", {}, "call_Wd3pY7nKq1Xv5Tz9Lb2Rg6Hs", 0)]
    assert (t.calls[0].duration_ms, t.calls[0].result) == (
        75.5842, {"content": [{"type": "text", "text": LISTING}]},
    )  # fmt: skip
    assert (t.turns, t.usage, t.wall_ms) == (2, Usage(2107 + 2243, 14 + 31), 4702.118)
    assert t.answer == (
        "Two releases are deployed: kagent (revision 2) and kagent-crds (revision 1), both in "
        "kagent."
    )
    assert list(t.notes) == TEMPO_NOTES


def test_tempo_scope_spans_openinference_and_genai_on_one_call() -> None:
    """Tempo's API (scopeSpans, base64 ids): OpenInference and GenAI spans of one model call, and
    of one tool call, count once; arguments and result from the OpenInference tool span, the call
    id from the GenAI one."""
    t = load_trajectory(TEMPO_OI)
    assert _calls(t) == [("get_weather", {"city": "Lisbon"}, "call_7Fq2Lk9Xb4Rm1Tz6Vc3Np8Hs", 0)]
    assert (t.calls[0].result, t.calls[0].duration_ms) == (
        {"city": "Lisbon", "temperature_c": 19, "conditions": "sunny"}, 212.0,
    )  # fmt: skip
    assert (t.turns, t.usage, t.answer, t.wall_ms) == (
        2, Usage(84 + 131, 17 + 12), "It is sunny in Lisbon, 19 °C.", 3210.0,
    )  # fmt: skip
    assert list(t.notes) == [
        (
            "spans 'chat gpt-4o' (33c4d5e6f708192a), 'ChatCompletion' (22b3c4d5e6f70819) are one "
            "model call"
        ),
        (
            "spans 'execute_tool get_weather' (55e6f708192a3b4c), 'get_weather' "
            "(44d5e6f708192a3b) are one tool call"
        ),
        (
            "spans 'chat gpt-4o' (77081929a3b4c5d6), 'ChatCompletion' (66f708192a3b4c5d) are one "
            "model call"
        ),
    ]


@pytest.mark.parametrize("key", ["trace", "result"], ids=["tempo-v2", "jaeger-v3"])
def test_export_under_trace_or_result(key: str) -> None:
    """Tempo's /api/v2/traces (``{trace: …}``) and Jaeger's /api/v3/traces (``{result: …}``)
    hold an export."""
    doc = load_document(TEMPO_OI)
    export = {"resourceSpans": doc["batches"]}
    assert _calls(read_trajectory({key: export})) == _calls(read_trajectory(doc))


@pytest.mark.parametrize("doc", [{"batches": []}, {"batches": [{"id": 1, "size": 10}]}],
                         ids=["empty", "not-spans"])  # fmt: skip
def test_batches_that_are_not_tempo_are_left_to_other_formats(doc: Any) -> None:
    """A ``batches`` list of anything but resource spans is no trace: every format is tried."""
    assert _error(doc).startswith(
        "trace.json: cannot tell the format of a mapping with keys batches: none of otel, "
    )


# OTel JS ReadableSpans


def test_js_readable_spans_from_the_in_memory_exporter() -> None:
    """Vercel AI SDK spans saved from the JS SDK: ``spanContext`` ids, ``parentSpanId``,
    ``[s, ns]`` times, children first in the file; the AGENT ``ai.generateText`` span is no model
    call of its own."""
    t = load_trajectory(JS)
    args = {"query": "rate limits", "limit": 3}
    assert _calls(t) == [("searchDocs", args, "call_Rt5Yw1Gx8Zc3Vn6Kb9Lm2Qp4", 0)]
    assert (t.calls[0].result, t.calls[0].duration_ms) == (
        [{"title": "Rate limits", "url": "/docs/rate-limits"}], 301.0,
    )  # fmt: skip
    assert (t.turns, t.usage, t.wall_ms, t.notes) == (2, Usage(118 + 183, 22 + 29), 3912.0, ())
    assert t.answer == "The API allows 60 requests per minute per key; see /docs/rate-limits."


def test_js_sdk_2_parent_span_context_and_whole_span_objects() -> None:
    """SDK 2.x has ``parentSpanContext`` instead of ``parentSpanId``; a Span saved whole has
    ``_spanContext``."""
    doc = load_document(JS)
    for span in doc:
        parent = span.pop("parentSpanId", None)
        if parent is not None:
            trace = span["spanContext"]["traceId"]
            span["parentSpanContext"] = {"traceId": trace, "spanId": parent}
    doc[0]["_spanContext"] = doc[0].pop("spanContext")
    t = read_trajectory(doc)
    assert (_calls(t), t.turns, t.usage) == (_calls(load_trajectory(JS)), 2, Usage(301, 51))


def test_js_spans_of_several_traces(tmp_path: Path) -> None:
    """JS spans of two traces: the select names ``spanContext.traceId``, and it picks one."""
    doc = load_document(JS)
    other = copy.deepcopy(doc)
    for span in other:
        span["spanContext"]["traceId"] = "0123456789abcdef0123456789abcdef"
    path = tmp_path / "spans.json"
    path.write_text(json.dumps(doc + other))
    select = "$[?(@.spanContext.traceId == '9b2e4f6a8c0d1e3f5a7b9c1d3e5f7a0b')]"
    with pytest.raises(SourceError) as info:
        load_trajectory(path)
    assert f'pick one with select: "{select}", check each with each: trace' in str(info.value)
    assert load_trajectory(path, select=select).usage == Usage(301, 51)


# One call counted once: the rules on small traces


def test_llm_span_holding_several_calls_is_not_a_call_of_its_own() -> None:
    """A wrapper LLM span around two model calls (different response ids): the two count, the
    wrapper does not."""
    spans = [
        _chat("00000000000000c1", None, 100, (300, 30)),
        _chat("00000000000000c2", "00000000000000c1", 110, (100, 10),
              **{"gen_ai.response.id": "r1"}),
        _chat("00000000000000c3", "00000000000000c1", 150, (200, 20),
              **{"gen_ai.response.id": "r2"}),
    ]
    t = read_trajectory(spans)
    assert (t.turns, t.usage) == (2, Usage(300, 30))
    assert list(t.notes) == [
        (
            "span 'chat gpt-4o' (00000000000000c1) holds several model calls and counts as them, "
            "not as a call of its own"
        )
    ]


def test_llm_spans_sharing_a_response_id_are_one_call() -> None:
    """Two sibling LLM spans of one response (a logging callback beside the client's span) are
    one call."""
    spans = [
        _chat("00000000000000d1", None, 100, (50, 5), **{"gen_ai.response.id": "chatcmpl-1"}),
        _chat("00000000000000d2", None, 105, (50, 5), **{"gen_ai.response.id": "chatcmpl-1"}),
        _chat("00000000000000d3", None, 300, (70, 7), **{"gen_ai.response.id": "chatcmpl-2"}),
    ]
    t = read_trajectory(spans)
    assert (t.turns, t.usage, len(t.notes)) == (2, Usage(120, 12), 1)


def test_nested_llm_spans_with_different_response_ids_stay_two_calls() -> None:
    """An LLM span inside another one that answered something else is a call of its own."""
    spans = [
        _chat("00000000000000e1", None, 100, (50, 5), **{"gen_ai.response.id": "chatcmpl-1"}),
        _chat("00000000000000e2", "00000000000000e1", 105, (60, 6),
              **{"gen_ai.response.id": "chatcmpl-2"}),
    ]  # fmt: skip
    t = read_trajectory(spans)
    assert (t.turns, t.usage, t.notes) == (2, Usage(110, 11), ())


def test_usage_from_the_innermost_span_that_reports_it() -> None:
    """The inner span carries no usage: the outer's counts, once."""
    spans = [_chat("00000000000000f1", None, 100, (80, 8)),
             _chat("00000000000000f2", "00000000000000f1", 101, None)]  # fmt: skip
    t = read_trajectory(spans)
    assert (t.turns, t.usage) == (1, Usage(80, 8))


def test_sub_agent_calls_inside_a_tool_are_calls_of_their_own() -> None:
    """ADK's AgentTool: the sub-agent's model calls run inside execute_tool and invoke_agent
    spans nested in the parent's call_llm; they stay separate calls."""
    spans = [
        _chat("0000000000000101", None, 100, (500, 50)),
        _tool("0000000000000102", "0000000000000101", 200, "researcher"),
        _span("invoke_agent researcher", "0000000000000103", "0000000000000102", 210,
              {"gen_ai.operation.name": "invoke_agent"}),
        _chat("0000000000000104", "0000000000000103", 220, (90, 9)),
        _tool("0000000000000105", "0000000000000104", 300, "search"),
    ]  # fmt: skip
    t = read_trajectory(spans)
    assert ([c.name for c in t.calls], t.turns, t.usage, t.notes) == (
        ["researcher", "search"], 2, Usage(590, 59), (),
    )  # fmt: skip


def test_a_tool_span_inside_another_tool_of_another_name_is_another_call() -> None:
    """Nested tool spans of different names and no common call id stay two calls."""
    spans = [_chat("0000000000000201", None, 100, (10, 1)),
             _tool("0000000000000202", None, 200, "deploy", **{"gen_ai.tool.call.id": "c1"}),
             _tool("0000000000000203", "0000000000000202", 210, "build")]  # fmt: skip
    assert [c.name for c in read_trajectory(spans).calls] == ["deploy", "build"]


def test_mcp_span_inside_the_framework_tool_span_is_one_call() -> None:
    """A framework's tool span and the MCP client's ``tools/call`` span inside it (same tool
    name): one call, its result from the inner span, its duration the outer's."""
    mcp = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "helm_list_releases",
           "mcp.method.name": "tools/call", "gen_ai.tool.call.result": '{"releases": 2}'}
    spans = [_chat("0000000000000301", None, 100, (10, 1)),
             _tool("0000000000000302", None, 200, "helm_list_releases",
                   **{"gen_ai.tool.call.id": "c9"}),
             _span("tools/call helm_list_releases", "0000000000000303", "0000000000000302", 203,
                   mcp)]  # fmt: skip
    spans[1]["endTimeUnixNano"] = 260
    t = read_trajectory(spans)
    assert [(c.name, c.id, c.result, c.duration_ms) for c in t.calls] == [
        ("helm_list_releases", "c9", {"releases": 2}, 60 / 1e6),
    ]
    assert list(t.notes) == [
        (
            "spans 'tools/call helm_list_releases' (0000000000000303), 'execute_tool "
            "helm_list_releases' (0000000000000302) are one tool call"
        )
    ]


# show -v


def test_show_verbose_says_which_spans_were_merged(tmp_path: Path) -> None:
    """``trajrun show -v`` prints the merged spans on stderr after the run; without -v, nothing."""
    quiet, loud = _show(str(TEMPO), cwd=tmp_path), _show(str(TEMPO), "-v", cwd=tmp_path)
    assert (quiet.returncode, loud.returncode) == (0, 0)
    assert (quiet.stderr, loud.stdout) == ("", quiet.stdout)
    assert "turns: 2" in quiet.stdout
    assert loud.stderr.splitlines() == [f"note: {note}" for note in TEMPO_NOTES]


def test_show_verbose_escapes_span_names(tmp_path: Path) -> None:
    """A span name with a line break cannot start a line of its own in the note."""
    spans = [_chat("0000000000000401", None, 100, (10, 1)),
             _chat("0000000000000402", "0000000000000401", 101, None)]  # fmt: skip
    spans[1]["name"] = "chat\n::error::forged"
    path = tmp_path / "spans.json"
    path.write_text(json.dumps(spans))
    assert _show(str(path), "-v", cwd=tmp_path).stderr.splitlines() == [
        (
            "note: spans 'chat\\n::error::forged' (0000000000000402), 'chat gpt-4o' "
            "(0000000000000401) are one model call"
        )
    ]
