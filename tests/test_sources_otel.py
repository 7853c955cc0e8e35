"""OpenTelemetry reader: GenAI semconv and OpenInference spans, every document shape, and the traps of real traces."""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path
from typing import Any

import pytest
from trajrun.errors import SourceError
from trajrun.sources import load_document, load_trajectory, read_trajectory
from trajrun.sources.readers.otel import NOT_CAPTURED
from trajrun.suites.load import load_suite
from trajrun.trajectory import Trajectory, Usage

SAMPLES = Path(__file__).parent / "data" / "samples"
GENAI = SAMPLES / "otel_genai" / "otlp_trace_genai_semconv.json"
GENAI_FLAT = SAMPLES / "otel_genai" / "spans_flat_genai_semconv.json"
PROTO_EXAMPLE = SAMPLES / "otel_genai" / "otlp_proto_examples_trace.json"
OPENINFERENCE = SAMPLES / "openinference" / "otlp_trace_openinference_openai.json"
OPENINFERENCE_FLAT = SAMPLES / "openinference" / "spans_flat_openinference_openai.json"
OI_TRACES = ("1b4a6c01c2aa53583070582904b8d2c2", "997555ba4089920f44c6b945f9d165b6")

DELETE_ID, CREATE_ID = "call_jYdIdRZHxZTn5bWCq5jlMrJi", "call_TmlTVWQbzrXCZ4jNsCVNbNqu"
ANSWER = "The file `.env` has been deleted and `test.txt` has been created successfully."
CALLS = [("delete_file", {"path": ".env"}, DELETE_ID, 0), ("create_file", {"path": "test.txt"}, CREATE_ID, 0)]


def _calls(t: Trajectory) -> list[tuple[Any, ...]]:
    """Name, arguments, id and turn of every call."""
    return [(c.name, c.args, c.id, c.turn) for c in t.calls]


def _error(doc: Any, fmt: str = "auto") -> str:
    """The SourceError text reading ``doc`` raises."""
    with pytest.raises(SourceError) as info:
        read_trajectory(doc, fmt, origin="trace.json")
    return str(info.value)


def _value(value: Any) -> dict[str, Any]:
    """A Python value as an OTLP/JSON AnyValue (intValue as a string, as OTLP/JSON writes it)."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, list):
        return {"arrayValue": {"values": [_value(v) for v in value]}}
    return {"stringValue": value}


def _otlp_span(name: str, span_id: str, parent: str | None, start: int, attrs: dict[str, Any],
               trace: str = "ab" * 16, **extra: Any) -> dict[str, Any]:
    """One OTLP/JSON span (hex ids, string nanoseconds, attributes as key/value pairs)."""
    pairs = [{"key": k, "value": _value(v)} for k, v in attrs.items()]
    span = {"traceId": trace, "spanId": span_id, "name": name, "kind": 1, "startTimeUnixNano": str(start),
            "endTimeUnixNano": str(start + 1000), "attributes": pairs, "status": {}, **extra}  # fmt: skip
    if parent:
        span["parentSpanId"] = parent
    return span


def _export(*spans: dict[str, Any]) -> dict[str, Any]:
    """An ExportTraceServiceRequest holding ``spans`` in one scope."""
    scope = {"scope": {"name": "t"}, "spans": list(spans)}
    return {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [scope]}]}


def _genai_spans() -> list[dict[str, Any]]:
    """The spans of the GenAI sample, in file order."""
    doc = load_document(GENAI)
    return [span for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for span in ss["spans"]]


def _drop(span: dict[str, Any], *keys: str) -> dict[str, Any]:
    """A copy of an OTLP span without the named attributes (what content capture off leaves out)."""
    span = copy.deepcopy(span)
    span["attributes"] = [kv for kv in span["attributes"] if kv["key"] not in keys]
    return span


# The shared samples


@pytest.mark.parametrize("path", [GENAI, GENAI_FLAT], ids=["otlp", "flat"])
def test_genai_execute_tool_spans_are_the_calls(path: Path) -> None:
    """openai-v2 + util-genai: two execute_tool spans after one chat span share turn 0; JSON results decoded."""
    t = load_trajectory(path)
    assert t.format == "otel"
    assert _calls(t) == CALLS
    assert [(c.result, c.has_result, c.error) for c in t.calls] == [
        ({"status": "ok", "path": ".env"}, True, False), ({"status": "ok", "path": "test.txt"}, True, False),
    ]  # fmt: skip
    assert (t.turns, t.usage, t.answer) == (2, Usage(71 + 133, 46 + 19), ANSWER)


def test_openinference_flat_spans_give_the_requested_calls() -> None:
    """No tool spans: calls from llm.output_messages, results from the next LLM span's tool input messages."""
    t = load_trajectory(OPENINFERENCE_FLAT)
    assert (t.format, _calls(t)) == ("otel", CALLS)
    assert [c.result for c in t.calls] == ['{"status": "ok", "path": ".env"}', '{"status": "ok", "path": "test.txt"}']
    assert [c.error for c in t.calls] == [None, None]
    assert (t.turns, t.usage, t.answer) == (2, Usage(204, 65), ANSWER)


def test_openinference_otlp_of_two_fragment_traces_is_one_run() -> None:
    """Each ChatCompletion span of the sample is its own trace, and no span wraps them: fragments of one run, read
    as the flat list of the same spans is, with a note; ``traces: one`` refuses them, naming the select for one."""
    t, flat = load_trajectory(OPENINFERENCE), load_trajectory(OPENINFERENCE_FLAT)
    assert (t.calls, t.turns, t.usage, t.answer) == (flat.calls, flat.turns, flat.usage, flat.answer)
    assert (_calls(t), t.turns, t.usage) == (CALLS, 2, Usage(204, 65))
    assert t.notes == (f"2 traces read as one run, in time order ({', '.join(OI_TRACES)}): no trace has an agent "
                       "or chain span over its calls",)  # fmt: skip
    with pytest.raises(SourceError) as info:
        load_trajectory(OPENINFERENCE, traces="one")
    assert str(info.value) == (
        f"{OPENINFERENCE}: the document holds 2 traces ({', '.join(OI_TRACES)}) and traces: one reads a run from one "
        f"trace; pick one with select: \"$..spans[?(@.traceId == '{OI_TRACES[0]}')]\""
    )


def test_select_picks_one_trace() -> None:
    """The suggested select keeps one trace: the first has the requests, the second the answer."""
    first = load_trajectory(OPENINFERENCE, select=f"$..spans[?(@.traceId == '{OI_TRACES[0]}')]")
    assert (_calls(first), first.records_results, first.turns, first.usage, first.answer) == (
        CALLS, False, 1, Usage(71, 46), None,
    )  # fmt: skip
    second = load_trajectory(OPENINFERENCE, select=f"$..spans[?(@.traceId == '{OI_TRACES[1]}')]")
    assert (second.calls, second.turns, second.usage, second.answer) == ((), 1, Usage(133, 19), ANSWER)


def test_a_flat_span_list_gets_a_select_for_a_list(tmp_path: Path) -> None:
    """The sample's spans as one flat list: the suggested select filters the list itself, and reads
    one trace."""
    export = json.loads(OPENINFERENCE.read_text())
    spans = [span for rs in export["resourceSpans"] for ss in rs["scopeSpans"] for span in ss["spans"]]
    flat = tmp_path / "spans.json"
    flat.write_text(json.dumps(spans))
    with pytest.raises(SourceError) as info:
        load_trajectory(flat, traces="one")
    select = f"$[?(@.traceId == '{OI_TRACES[0]}')]"
    assert str(info.value).endswith(f'pick one with select: "{select}"')
    second = load_trajectory(flat, select=select.replace(OI_TRACES[0], OI_TRACES[1]))
    assert (second.calls, second.turns, second.usage, second.answer) == ((), 1, Usage(133, 19), ANSWER)


def test_trace_without_genai_spans_says_what_is_missing() -> None:
    """The official OTLP example is a trace but no run: a specific message, not the list of every format."""
    with pytest.raises(SourceError) as info:
        load_trajectory(PROTO_EXAMPLE)
    assert str(info.value) == (
        f"{PROTO_EXAMPLE}: an OpenTelemetry trace of 1 span (\"I'm a server span\") with no LLM or tool span: no span "
        "has gen_ai.operation.name chat, generate_content, text_completion or execute_tool, gen_ai.tool.name, or "
        "openinference.span.kind LLM or TOOL; trace the agent with a GenAI or OpenInference instrumentation"
    )


@pytest.mark.parametrize("path", [GENAI, GENAI_FLAT, OPENINFERENCE_FLAT], ids=lambda p: p.name)
def test_explicit_format_and_show_json_round_trip(path: Path) -> None:
    """``format: otel`` reads what detection reads, and ``show -o json`` reads back equal with format otel."""
    detected = load_trajectory(path)
    assert load_trajectory(path, format="otel") == detected
    assert read_trajectory(json.loads(json.dumps(detected.to_dict()))) == detected


# Document shapes and the traps of real traces


def test_base64_ids_and_spans_out_of_order() -> None:
    """Protobuf's MessageToJson writes base64 ids; spans reversed and spread over resources keep their run."""
    spans = _genai_spans()
    for span in spans:
        for key in ("traceId", "spanId", "parentSpanId"):
            if key in span:
                span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]} for span in reversed(spans)]}
    assert read_trajectory(doc) == load_trajectory(GENAI)


def test_uppercase_hex_and_protobuf_snake_case() -> None:
    """``resource_spans``/``scope_spans``, snake_case AnyValue and upper-case hex ids read like OTLP/JSON."""
    def snake(value: Any) -> Any:
        """The document as protobuf's ``preserving_proto_field_name`` writes it, ids in upper case."""
        if isinstance(value, dict):
            renamed = {"traceId": "trace_id", "spanId": "span_id", "parentSpanId": "parent_span_id",
                       "startTimeUnixNano": "start_time_unix_nano", "resourceSpans": "resource_spans",
                       "scopeSpans": "scope_spans", "stringValue": "string_value", "intValue": "int_value",
                       "arrayValue": "array_value"}  # fmt: skip
            return {renamed.get(k, k): snake(v.upper() if k.endswith("Id") else v) for k, v in value.items()}
        return [snake(v) for v in value] if isinstance(value, list) else value

    assert read_trajectory(snake(load_document(GENAI))) == load_trajectory(GENAI)


def test_two_traces_in_one_document(tmp_path: Path) -> None:
    """A second run of the agent in the same file: refused until a select picks one trace."""
    other = copy.deepcopy(load_document(GENAI))
    for scope in other["resourceSpans"][0]["scopeSpans"]:
        for span in scope["spans"]:
            span["traceId"] = "cd" * 16
    doc = {"resourceSpans": load_document(GENAI)["resourceSpans"] + other["resourceSpans"]}
    assert _error(doc) == (
        "trace.json: the document holds 2 traces (712f593bef4ac0168837501eb8e85e7f, cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd), "
        "and trace 712f593bef4ac0168837501eb8e85e7f is a whole run (its root span 'invoke_agent file_agent' is no "
        "model or tool call); pick one with select: \"$..spans[?(@.traceId == '712f593bef4ac0168837501eb8e85e7f')]\", "
        "check each with each: trace, or read them as one run with traces: merge"
    )
    merged = read_trajectory(doc, traces="merge")
    assert [c.name for c in merged.calls] == ["delete_file", "delete_file", "create_file", "create_file"]
    assert merged.notes[0] == ("2 traces read as one run, in time order (712f593bef4ac0168837501eb8e85e7f, "
                               "cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd): as traces: merge asks")  # fmt: skip
    path = tmp_path / "two.json"
    path.write_text(json.dumps(doc))
    picked = load_trajectory(path, select="$..spans[?(@.traceId == 'cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd')]")
    assert picked == load_trajectory(GENAI)


def test_collector_file_exporter_jsonl(tmp_path: Path) -> None:
    """The Collector writes one export per line: a .jsonl file is the list of them, read as one trace."""
    doc = load_document(GENAI)
    lines = [{"resourceSpans": [{"resource": rs["resource"], "scopeSpans": [ss]}]}
             for rs in doc["resourceSpans"] for ss in rs["scopeSpans"]]  # fmt: skip
    path = tmp_path / "traces.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert len(lines) == 2 and load_trajectory(path) == load_trajectory(GENAI)


def test_content_capture_off() -> None:
    """Without capture, calls keep name, id and turn; arguments are NOT_CAPTURED; no results, no answer."""
    content = ("gen_ai.tool.call.arguments", "gen_ai.tool.call.result",
               "gen_ai.input.messages", "gen_ai.output.messages")  # fmt: skip
    t = read_trajectory(_export(*(_drop(span, *content) for span in _genai_spans())))
    assert _calls(t) == [(name, NOT_CAPTURED, call_id, turn) for name, _, call_id, turn in CALLS]
    assert (t.records_results, [c.error for c in t.calls]) == (False, [False, False])
    assert (t.turns, t.usage, t.answer) == (2, Usage(204, 65), None)


def test_uncaptured_tool_arguments_come_from_the_request() -> None:
    """A tool span without arguments takes them from the LLM output's tool call with the same id."""
    spans = [_drop(span, "gen_ai.tool.call.arguments") for span in _genai_spans()]
    assert _calls(read_trajectory(_export(*spans))) == CALLS


def test_requested_calls_without_captured_messages_are_an_error() -> None:
    """No tool spans and no messages, but a tool_calls finish reason: say to turn capture on, not read zero calls."""
    spans = [_drop(span, "gen_ai.input.messages", "gen_ai.output.messages") for span in _genai_spans()
             if not span["name"].startswith("execute_tool")]  # fmt: skip
    assert _error(_export(*spans)).startswith(
        "trace.json: LLM span 0 finished to call tools, but the trace has no tool spans and no captured messages"
    )


ADK_CALL_1, ADK_CALL_2 = "adk-4c1e0b7a-1d2f-4e36-9d55-0f1b2a3c4d5e", "adk-9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b"
ADK_SPANS = {"spans": [
    # google-adk 2.13 native spans with content capture off, in the order the SDK exports them (as they end)
    {"name": "execute_tool get_weather", "span_id": "0000000000000003", "parent_span_id": "0000000000000002",
     "attributes": {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
                    "gen_ai.tool.type": "FunctionTool", "gen_ai.tool.call.id": ADK_CALL_1}},
    {"name": "execute_tool get_weather", "span_id": "0000000000000004", "parent_span_id": "0000000000000002",
     "attributes": {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
                    "gen_ai.tool.type": "FunctionTool", "gen_ai.tool.call.id": ADK_CALL_2}},
    {"name": "execute_tool (merged)", "span_id": "0000000000000005", "parent_span_id": "0000000000000001",
     "attributes": {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "(merged tools)",
                    "gen_ai.tool.call.id": "e-merged"}},
    {"name": "generate_content gemini-2.5-flash", "span_id": "0000000000000002", "parent_span_id": "0000000000000001",
     "attributes": {"gen_ai.operation.name": "generate_content", "gen_ai.request.model": "gemini-2.5-flash",
                    "gen_ai.usage.input_tokens": 120, "gen_ai.usage.output_tokens": 30,
                    "gen_ai.response.finish_reasons": ["stop"]}},
    {"name": "generate_content gemini-2.5-flash", "span_id": "0000000000000006", "parent_span_id": "0000000000000001",
     "attributes": {"gen_ai.operation.name": "generate_content", "gen_ai.request.model": "gemini-2.5-flash",
                    "gen_ai.usage.input_tokens": 180, "gen_ai.usage.output_tokens": 12}},
    {"name": "invoke_agent weather_agent", "span_id": "0000000000000001", "parent_span_id": None,
     "attributes": {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather_agent"}},
]}  # fmt: skip


def test_adk_merged_span_is_not_a_call() -> None:
    """ADK's ``execute_tool (merged)`` repeats parallel calls; tools nested in their LLM span keep its turn."""
    t = read_trajectory(ADK_SPANS)
    assert _calls(t) == [("get_weather", NOT_CAPTURED, ADK_CALL_1, 0), ("get_weather", NOT_CAPTURED, ADK_CALL_2, 0)]
    assert (t.turns, t.usage, t.answer) == (2, Usage(300, 42), None)


def test_messages_on_span_events() -> None:
    """Messages recorded on a ``gen_ai.client.inference.operation.details`` event read like span attributes."""
    spans = []
    for span in _genai_spans():
        moved = [kv for kv in span["attributes"] if kv["key"] in ("gen_ai.input.messages", "gen_ai.output.messages")]
        span = _drop(span, "gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.arguments")
        span["events"] = [{"name": "gen_ai.client.inference.operation.details", "timeUnixNano": "1",
                           "attributes": moved}] if moved else []  # fmt: skip
        spans.append(span)
    t = read_trajectory(_export(*spans))
    assert (_calls(t), t.answer) == (CALLS, ANSWER)


def test_per_message_events_of_older_semconv() -> None:
    """Semconv 1.28–1.36 ``gen_ai.choice`` and ``gen_ai.tool.message`` events with an Azure-style JSON body."""
    call = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
    choice = {"finish_reason": "tool_calls", "index": 0, "message": {"content": "", "tool_calls": [call]}}

    def event(name: str, body: dict[str, Any]) -> dict[str, Any]:
        """A span event whose body is JSON in ``gen_ai.event.content``."""
        return {"name": name, "attributes": [{"key": "gen_ai.event.content", "value": _value(json.dumps(body))}]}

    doc = _export(
        _otlp_span("chat gpt-4o", "00000000000000a1", None, 10, {"gen_ai.operation.name": "chat"},
                   events=[event("gen_ai.user.message", {"content": "Weather?"}), event("gen_ai.choice", choice)]),
        _otlp_span("chat gpt-4o", "00000000000000a2", None, 20, {"gen_ai.operation.name": "chat"}, events=[
            event("gen_ai.assistant.message", {"tool_calls": [call]}),
            event("gen_ai.tool.message", {"content": "18C, sunny", "id": "call_1"}),
            event("gen_ai.choice", {"index": 0, "finish_reason": "stop", "message": {"content": "It is sunny."}}),
        ]),
    )  # fmt: skip
    t = read_trajectory(doc)
    assert (_calls(t), t.calls[0].result, t.turns, t.usage, t.answer) == (
        [("get_weather", {"city": "Paris"}, "call_1", 0)], "18C, sunny", 2, None, "It is sunny.",
    )  # fmt: skip


def test_openllmetry_indexed_attributes() -> None:
    """OpenLLMetry's ``gen_ai.completion.N.tool_calls.M.*`` and ``gen_ai.prompt.N.*``; twin token counts count once."""
    first = {"llm.request.type": "chat", "gen_ai.system": "openai", "gen_ai.request.model": "gpt-4o",
             "gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": "Weather in Paris and Rome?",
             "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.finish_reason": "tool_calls",
             "gen_ai.completion.0.tool_calls.0.id": "c1", "gen_ai.completion.0.tool_calls.0.name": "get_weather",
             "gen_ai.completion.0.tool_calls.0.arguments": '{"city": "Paris"}',
             "gen_ai.completion.0.tool_calls.1.id": "c2", "gen_ai.completion.0.tool_calls.1.name": "get_weather",
             "gen_ai.completion.0.tool_calls.1.arguments": '{"city": "Rome"}',
             "gen_ai.usage.input_tokens": 57, "gen_ai.usage.prompt_tokens": 57,
             "gen_ai.usage.output_tokens": 20, "gen_ai.usage.completion_tokens": 20}  # fmt: skip
    second = {"llm.request.type": "chat", "gen_ai.usage.prompt_tokens": 90, "gen_ai.usage.completion_tokens": 9,
              "gen_ai.prompt.1.role": "assistant", "gen_ai.prompt.1.tool_calls.0.id": "c1",
              "gen_ai.prompt.2.role": "tool", "gen_ai.prompt.2.tool_call_id": "c2", "gen_ai.prompt.2.content": "rain",
              "gen_ai.prompt.3.role": "tool", "gen_ai.prompt.3.tool_call_id": "c1", "gen_ai.prompt.3.content": "sun",
              "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": "Sun in Paris, rain in Rome."}
    embedding = {"llm.request.type": "embedding", "gen_ai.request.model": "text-embedding-3-small"}
    t = read_trajectory(_export(
        _otlp_span("openai.chat", "00000000000000b1", None, 10, first),
        _otlp_span("openai.embeddings", "00000000000000b3", None, 15, embedding),
        _otlp_span("openai.chat", "00000000000000b2", None, 20, second),
    ))  # fmt: skip
    assert _calls(t) == [("get_weather", {"city": "Paris"}, "c1", 0), ("get_weather", {"city": "Rome"}, "c2", 0)]
    assert ([c.result for c in t.calls], t.turns, t.usage) == (["sun", "rain"], 2, Usage(147, 29))
    assert t.answer == "Sun in Paris, rain in Rome."


def _openinference_langchain(status: dict[str, Any]) -> dict[str, Any]:
    """OpenInference LangChain: a TOOL span whose input is the bare argument and whose output is a ToolMessage."""
    llm = {"openinference.span.kind": "LLM", "llm.token_count.prompt": 40, "llm.token_count.completion": 12,
           "llm.output_messages.0.message.role": "assistant",
           "llm.output_messages.0.message.tool_calls.0.tool_call.id": "call_w",
           "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "get_weather",
           "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": '{"city": "Paris"}'}  # fmt: skip
    message = {"content": "18C", "type": "tool", "name": "get_weather", "tool_call_id": "call_w",
               "status": "error" if status else "success"}  # fmt: skip
    tool = {"openinference.span.kind": "TOOL", "tool.name": "get_weather", "input.value": "Paris",
            "output.value": json.dumps({"output": message}), "output.mime_type": "application/json"}  # fmt: skip
    return _export(
        _otlp_span("ChatModel", "00000000000000c1", "00000000000000c0", 10, llm),
        _otlp_span("get_weather", "00000000000000c2", "00000000000000c0", 20, tool, status=status),
        _otlp_span("LangGraph", "00000000000000c0", None, 5, {"openinference.span.kind": "CHAIN"}),
    )


def test_openinference_tool_span_with_a_bare_argument() -> None:
    """``input.value: Paris`` is no object: the request's arguments win; id and content come from the ToolMessage."""
    t = read_trajectory(_openinference_langchain({}))
    assert _calls(t) == [("get_weather", {"city": "Paris"}, "call_w", 0)]
    assert (t.calls[0].result, t.calls[0].error, t.turns, t.usage) == ("18C", False, 1, Usage(40, 12))


def test_tool_span_error_status() -> None:
    """A tool span with status ERROR is a call with ``error: true``."""
    assert read_trajectory(_openinference_langchain({"code": 2, "message": "boom"})).calls[0].error is True


def test_phoenix_rest_spans() -> None:
    """Phoenix ``{data: […]}``: ``context`` ids, ``span_kind`` outside the attributes, ISO times out of order."""
    def span(name: str, span_id: str, kind: str, start: str, attrs: dict[str, Any]) -> dict[str, Any]:
        """One span as Phoenix's REST API returns it."""
        return {"name": name, "context": {"trace_id": "f" * 32, "span_id": span_id}, "span_kind": kind,
                "parent_id": None, "start_time": start, "end_time": start, "status_code": "OK", "attributes": attrs}

    doc = {"next_cursor": None, "data": [
        span("answer", "2" * 16, "LLM", "2026-01-05T10:00:03.000000+00:00",
             {"llm.output_messages.0.message.role": "assistant", "llm.output_messages.0.message.content": "Done."}),
        span("lookup", "3" * 16, "TOOL", "2026-01-05T10:00:02.5+00:00",
             {"tool.name": "lookup", "input.value": '{"q": "x"}', "output.value": "found"}),
        span("plan", "1" * 16, "LLM", "2026-01-05T10:00:01.123456789Z", {}),
    ]}  # fmt: skip
    t = read_trajectory(doc)
    assert (_calls(t), t.calls[0].result, t.turns, t.answer) == ([("lookup", {"q": "x"}, None, 0)], "found", 2, "Done.")


def test_python_sdk_to_json_spans() -> None:
    """``ReadableSpan.to_json()``: ``0x`` ids under ``context``, ``parent_id``, ISO times, dict attributes."""
    def span(name: str, span_id: str, start: str, attrs: dict[str, Any]) -> dict[str, Any]:
        """One span as ``ReadableSpan.to_json()`` writes it."""
        return {"name": name, "context": {"trace_id": "0x" + "e" * 32, "span_id": span_id, "trace_state": "[]"},
                "kind": "SpanKind.INTERNAL", "parent_id": None, "start_time": start,
                "status": {"status_code": "UNSET"}, "attributes": attrs, "events": [], "links": []}  # fmt: skip

    tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "ping", "gen_ai.tool.call.arguments": "{}"}
    t = read_trajectory([
        span("execute_tool ping", "0x0000000000000002", "2026-01-05T10:00:02.000000Z", tool),
        span("chat m", "0x0000000000000001", "2026-01-05T10:00:01.000000Z", {"gen_ai.operation.name": "chat"}),
    ])  # fmt: skip
    assert (_calls(t), t.turns) == ([("ping", {}, None, 0)], 1)


def test_tool_spans_without_llm_spans_are_a_turn_each() -> None:
    """With no LLM span there are no turns to share: each call is its own turn."""
    tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "ping"}
    t = read_trajectory(_export(_otlp_span("a", "00000000000000d1", None, 1, tool),
                                _otlp_span("b", "00000000000000d2", None, 2, tool)))  # fmt: skip
    assert ([c.turn for c in t.calls], t.turns, t.usage) == ([0, 1], 2, None)


@pytest.mark.parametrize("doc", [
    [{"name": "x", "attributes": {}}],
    {"spans": [{"role": "user", "content": "hi"}]},
    {"data": [{"id": 1}]},
    [],
], ids=["span-without-id", "spans-of-messages", "data-of-records", "empty"])  # fmt: skip
def test_documents_that_are_no_trace_are_left_to_other_formats(doc: Any) -> None:
    """Only span ids or resourceSpans make a trace: anything else falls through (an empty list is openai)."""
    try:
        fmt = read_trajectory(doc).format
    except SourceError as exc:
        assert exc.reasons[0].startswith("otel: ")
    else:
        assert fmt == "openai"


def test_explicit_otel_on_a_chat_history() -> None:
    """``format: otel`` on messages says what it expected."""
    assert _error([{"role": "user", "content": "hi"}], "otel") == (
        "trace.json: expected an otel document, found a list of 1 item: item 0 is neither an OTLP document nor a span; "
        "check the format, or use format: auto"
    )


def test_suite_accepts_format_otel(tmp_path: Path) -> None:
    """A suite may name ``format: otel``."""
    path = tmp_path / "t.suite.yaml"
    path.write_text("cases:\n  - name: traced\n    source: {file: trace.json, format: otel}\n    steps: [search]\n")
    source = load_suite(path).cases[0].source
    assert source is not None and source.format == "otel"
