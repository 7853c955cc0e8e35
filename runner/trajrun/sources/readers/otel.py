"""OpenTelemetry traces (GenAI semantic conventions, both generations, and OpenInference) read as
one agent run.

Documents: an OTLP/JSON export (``resourceSpans → scopeSpans → spans``, camelCase or protobuf's
snake_case), a list of them (the Collector's file exporter writes one per line, so a ``.jsonl`` file
reads as that list), a list of spans, ``{spans: […]}``, Phoenix's ``{data: […]}``, or one span;
Grafana Tempo's ``{batches: […]}`` (``scopeSpans`` or the older ``instrumentationLibrarySpans``),
Jaeger's JSON (``{data: [{traceID, spans, processes}]}``, a trace, its spans) and OTel JS
``ReadableSpan`` lists (see ``otel_layouts``). A span is OTLP (attributes as ``[{key, value}]``),
the Python SDK's ``to_json`` (``context.span_id``, ISO times, ``0x`` ids), Phoenix's (``span_kind``)
or a flat ``{span_id, attributes}``. Ids may be hex or base64; spans are put in start-time order
(parents first on ties), or parents before children and siblings in file order when times are
missing.

**One run** (``otel_spans.one_run``). A document holding several traces, one of which is a whole run
(a root span that is no model or tool call: an agent's, a chain's, a request's), is refused with
their ids and the ``select`` that picks one (``$..spans[?(@.traceId == '…')]``): the Collector
writes every run of a service to one file, and silently merging runs would mix them. Traces whose
roots are all model or tool calls (an agent not wrapped in a span, each call starting its own trace)
are fragments of one run, read as one in time order, with a note saying so. The source's ``traces``
forces either: ``merge`` reads every trace as one run, ``one`` refuses several. Spans without a
trace id belong to no trace.

**Calls** are the tool-execution spans (``gen_ai.operation.name: execute_tool``, or OpenInference
``TOOL``) in start-time order, except ADK's ``execute_tool (merged)`` summary of parallel calls. A
trace with none gives the calls requested in LLM spans' output messages (``gen_ai.output.messages``
as an attribute or an event, OpenInference ``llm.output_messages.N.message.tool_calls.M``,
OpenLLMetry's indexed ``gen_ai.completion.N.tool_calls.M``, ``gen_ai.choice`` events); their results
are the tool messages that follow the last assistant message in a later LLM span's input. Input
messages are history and never count as calls. A trace with no LLM or tool span, or whose LLM spans
finished to call tools without recording which, is an error that says what is missing.

**Times**: a tool span's duration is its call's ``duration_ms``; the trace's extent is ``wall_ms``.

**Turns** are model calls; a call's turn is the latest model call that started before it, so
parallel calls requested by one LLM span share its turn. A trace with no LLM span makes each call
its own turn. Usage is each model call's ``gen_ai.usage.*`` or ``llm.token_count.*``; the answer is
the text of the last LLM output that has text.

**One call counted once** (``otel_calls``): LLM spans nested in an LLM span of the same call, or
sharing a ``gen_ai.response.id``, are one model call, each part (usage, text, requests) from the
innermost span that has it; a tool span nested in a tool span of the same name or call id is one
tool call. The trajectory's ``notes`` say which spans were merged.

**Arguments not captured** (content capture is opt-in): a tool span's missing arguments come from
the LLM span's request with the same call id, or of the same tool in its turn, when that was
captured; otherwise they are the string :data:`NOT_CAPTURED`. A raw string is what ``ToolCall.args``
holds for arguments that cannot be read, so a step with arguments fails showing that string instead
of comparing against a made-up ``{}``; a bare name step still matches. Results recorded as JSON text
(``gen_ai.tool.call.result``, ``output.value``) are decoded; a tool span's error flag is its status.
A result that is a LangChain ``ToolMessage`` as OpenInference serialises it (``{"output": …}``,
``{type: tool, data: {content, …}}``, ``dumpd``'s constructor, ``model_dump``) is its content, its
``status: error`` an error; the whole message stays in the span, and a note counts them.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any, NamedTuple

from ...trajectory import Trajectory, Usage
from ..builder import Builder, NotOneRun, decode_args, make_usage
from .langchain import tool_message
from .otel_calls import one_call_each
from .otel_spans import Span, first, no_run, one_run, spans_of, wall_ms
from .otel_spans import refuses as refuses  # the Reader's refusal test lives with the span parsing

FORMAT = "otel"
READS = "document"
RANK = 10
NOT_CAPTURED = "<not captured>"
"""The arguments of a call whose span did not capture them (content capture off) and whose request
was not seen."""

_LLM_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})
_AGENT_OPERATIONS = frozenset({"invoke_agent", "create_agent"})
_STEP_KINDS = frozenset({"RETRIEVER", "EMBEDDING", "RERANKER", "GUARDRAIL", "EVALUATOR", "PROMPT"})
"""OpenInference kinds of a step of a run, which a trace of its own is a fragment of (as LLM and
TOOL are)."""
_ASSISTANT = frozenset({"assistant", "model"})
_TOOL_CALL_REASONS = frozenset({"tool_calls", "tool_call", "function_call", "tool_use"})
_MERGED = (
    "(merged tools)"  # google-adk's extra span for parallel calls: its children are already counted
)
_EVENT_ROLES = {
    "gen_ai.system.message": "system", "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant", "gen_ai.tool.message": "tool",
}  # fmt: skip
_USAGE_KEYS = (
    ("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"),
    ("llm.token_count.prompt", "llm.token_count.completion"),
    (
        "gen_ai.usage.prompt_tokens",
        "gen_ai.usage.completion_tokens",
    ),  # before semconv 1.27, and OpenLLMetry
)


class _Message(NamedTuple):
    """A chat message as far as a run needs it: text, requested calls, tool results."""

    role: Any
    text: str | None
    calls: list[tuple[Any, Any, Any]]
    results: list[tuple[Any, Any, Any]]


class _Turn(NamedTuple):
    """An LLM span: its output text and requested calls, usage, and the tool results new in its
    input."""

    text: str | None
    usage: Usage | None
    requests: list[tuple[Any, Any, Any]]
    results: list[tuple[Any, Any, Any]]
    unseen_calls: bool


class _Execution(NamedTuple):
    """A tool-execution span: name, arguments (``None`` when not captured), call id, result, error
    flag."""

    name: str
    args: Any
    call_id: Any
    result: Any
    has_result: bool
    error: bool
    duration_ms: float | None
    unwrapped: bool = False
    """The result is the content of a serialised LangChain ``ToolMessage``."""


def read(doc: Any, *, auto: bool = False, details: bool = True, traces: str = "auto") -> Trajectory:
    """Read a trace's GenAI or OpenInference spans into a run, each model or tool call once; several
    traces as ``traces`` (``formats.TRACE_RULES``) says."""
    spans = spans_of(doc)
    merged = one_run(spans, doc, traces, _whole_run)
    kinds = {span.index: _kind(span) for span in spans}
    calls = one_call_each(spans, kinds, _tool_key)
    steps: list[_Turn | _Execution] = []
    for span in spans:
        group = calls.spans.get(span.index)
        if group is None:
            continue
        if kinds[span.index] == "llm":
            steps.append(_one_turn([_turn(member) for member in group]))
        else:
            steps.append(_one_execution([_execution(member) for member in group]))
    if not steps:
        raise NotOneRun(no_run(spans))
    executed = any(isinstance(step, _Execution) for step in steps)
    run = (
        _from_executions(steps, details)
        if executed
        else _from_requests([s for s in steps if isinstance(s, _Turn)], details)
    )
    unwrapped = sum(isinstance(step, _Execution) and step.unwrapped for step in steps)
    notes = [
        *([merged] if merged else []),
        *calls.notes,
        *([_unwrapped_note(unwrapped)] if unwrapped else []),
    ]
    return dataclasses.replace(run, wall_ms=wall_ms(spans), notes=tuple(notes))


def _unwrapped_note(count: int) -> str:
    """The note on results read from serialised LangChain ``ToolMessage`` objects."""
    which = "1 tool result is" if count == 1 else f"{count} tool results are"
    return (
        f"{which} the content of a LangChain ToolMessage serialised in the tool span "
        "(output.value), which keeps the whole message"
    )


# Span kinds


def _whole_run(span: Span) -> bool:
    """Whether a root span makes its trace a run of its own: it is no model, tool or other step's
    span."""
    kind = _kind(span)
    step = kind in ("llm", "tool", "merged") or span.oi_kind in _STEP_KINDS
    return not step and span.attrs.get("gen_ai.operation.name") != "embeddings"


def _kind(span: Span) -> str | None:
    """``tool`` for a tool execution, ``merged`` for ADK's summary of parallel ones, ``llm`` for a
    model call, ``agent`` for an agent's run, else None (chain, HTTP, …)."""
    attrs = span.attrs
    operation = attrs.get("gen_ai.operation.name")
    if attrs.get("gen_ai.tool.name") == _MERGED or span.name == "execute_tool (merged)":
        return "merged"
    if operation == "execute_tool" or span.oi_kind == "TOOL":
        return "tool"
    if span.oi_kind == "AGENT" or (isinstance(operation, str) and operation in _AGENT_OPERATIONS):
        return "agent"
    if (isinstance(operation, str) and operation in _LLM_OPERATIONS) or span.oi_kind == "LLM":
        return "llm"
    if operation is None and span.oi_kind in (
        None,
        "UNKNOWN",
    ):  # Phoenix says UNKNOWN for a non-OpenInference span
        if "gen_ai.tool.name" in attrs:
            return "tool"
        request = attrs.get("llm.request.type")  # OpenLLMetry, which sets no operation name
        if request in ("chat", "completion") or (
            request is None and "gen_ai.request.model" in attrs
        ):
            return "llm"
    return None


# LLM spans


def _turn(span: Span) -> _Turn:
    """An LLM span's first output message (choice 0), usage, and the tool results its input adds."""
    outputs = _messages(span, _OUTPUT_READERS)
    first = outputs[0] if outputs else _Message(None, None, [], [])
    reasons = span.attrs.get("gen_ai.response.finish_reasons")
    if isinstance(reasons, str):  # Jaeger writes a list as its JSON text
        reasons = _json(reasons)
    unseen = not outputs and bool(
        _TOOL_CALL_REASONS.intersection(reasons if isinstance(reasons, list) else ())
    )
    requests = [(name, args, _id(call_id)) for name, args, call_id in first.calls]
    return _Turn(
        first.text,
        _usage(span.attrs),
        requests,
        _new_results(_messages(span, _INPUT_READERS)),
        unseen,
    )


def _one_turn(turns: list[_Turn]) -> _Turn:
    """The LLM spans of one model call (innermost first) as one turn, each part from the innermost
    span that has it."""
    if len(turns) == 1:
        return turns[0]
    requests = next((turn.requests for turn in turns if turn.requests), [])
    return _Turn(next((turn.text for turn in turns if turn.text is not None), None),
                 next((turn.usage for turn in turns if turn.usage is not None), None), requests,
                 next((turn.results for turn in turns if turn.results), []),
                 not requests and any(turn.unseen_calls for turn in turns))  # fmt: skip


def _usage(attrs: dict[str, Any]) -> Usage | None:
    """The span's token counts under the first convention it uses (OpenLLMetry writes two at
    once)."""
    for inputs, outputs in _USAGE_KEYS:
        usage = make_usage(attrs, (inputs,), (outputs,))
        if usage is not None:
            return usage
    return None


def _new_results(inputs: list[_Message]) -> list[tuple[Any, Any, Any]]:
    """The tool results after the last assistant message: the answers to the previous turn's
    calls."""
    last = max(
        (i for i, m in enumerate(inputs) if isinstance(m.role, str) and m.role in _ASSISTANT),
        default=-1,
    )
    return [
        (content, _id(call_id), name)
        for message in inputs[last + 1 :]
        for content, call_id, name in message.results
    ]


def _messages(span: Span, readers: tuple[Callable[[Span], list[_Message]], ...]) -> list[_Message]:
    """The messages of the first convention that has any."""
    for reader in readers:
        messages = reader(span)
        if messages:
            return messages
    return []


def _genai_reader(key: str) -> Callable[[Span], list[_Message]]:
    """Semconv ≥1.37 ``gen_ai.{input,output}.messages``: a JSON string on the span or on an
    event."""

    def read(span: Span) -> list[_Message]:
        value = span.attrs.get(key)
        if value is None:
            value = next((attrs[key] for _, attrs in span.events if key in attrs), None)
        items = _json(value)
        return (
            [_genai_message(m) for m in items if isinstance(m, dict)]
            if isinstance(items, list)
            else []
        )

    return read


def _genai_message(raw: dict[str, Any]) -> _Message:
    """A ``{role, parts}`` message; a server tool call is a call like any other."""
    texts, calls, results = [], [], []
    for part in raw.get("parts") or ():
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and isinstance(part.get("content"), str):
            texts.append(part["content"])
        elif kind in ("tool_call", "server_tool_call"):
            calls.append(
                (
                    part.get("name"),
                    part.get("arguments", part.get("server_tool_call")),
                    part.get("id"),
                )
            )
        elif kind in ("tool_call_response", "server_tool_call_response"):
            results.append(
                (part.get("response", part.get("server_tool_call_response")), part.get("id"), None)
            )
    return _Message(raw.get("role"), "".join(texts) or None, calls, results)


def _indexed_reader(
    prefix: str, parse: Callable[[dict[str, Any]], _Message]
) -> Callable[[Span], list[_Message]]:
    """Messages flattened into indexed attributes (``prefix.N.…``)."""
    return lambda span: [parse(item) for item in _indexed(span.attrs, prefix)]


def _indexed(attrs: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """The items of a flattened list: ``prefix.N.rest`` keys grouped by N, or a list value
    (Phoenix)."""
    value = attrs.get(prefix)
    if isinstance(value, list):
        return [item for item in value if isinstance(item, dict)]
    items: dict[int, dict[str, Any]] = {}
    head = prefix + "."
    for key, item in attrs.items():
        if key.startswith(head):
            index, _, rest = key[len(head) :].partition(".")
            if index.isdigit() and rest:
                items.setdefault(int(index), {})[rest] = item
    return [items[i] for i in sorted(items)]


def _openinference_message(item: dict[str, Any]) -> _Message:
    """OpenInference's ``message.role``, ``.content`` or text ``.contents``, ``.tool_calls``,
    ``.tool_call_id``."""
    role, content = item.get("message.role"), item.get("message.content")
    if not isinstance(content, str):
        parts = _indexed(item, "message.contents")
        texts = [
            p.get("message_content.text")
            for p in parts
            if p.get("message_content.type", "text") == "text"
        ]
        content = "".join(t for t in texts if isinstance(t, str))
    calls = [
        (
            c.get("tool_call.function.name"),
            c.get("tool_call.function.arguments"),
            c.get("tool_call.id"),
        )
        for c in _indexed(item, "message.tool_calls")
    ]
    if "message.function_call_name" in item:  # legacy OpenAI function calling
        calls.append(
            (
                item["message.function_call_name"],
                item.get("message.function_call_arguments_json"),
                None,
            )
        )
    if role == "tool":
        return _Message(
            role, None, [], [(content, item.get("message.tool_call_id"), item.get("message.name"))]
        )
    return _Message(role, content or None, calls, [])


def _openllmetry_message(item: dict[str, Any]) -> _Message:
    """OpenLLMetry's ``role``, ``content``, ``tool_calls.M.{id,name,arguments}``,
    ``function_call.*``."""
    role, content = item.get("role"), item.get("content")
    calls = [(c.get("name"), c.get("arguments"), c.get("id")) for c in _indexed(item, "tool_calls")]
    if "function_call.name" in item:
        calls.append((item["function_call.name"], item.get("function_call.arguments"), None))
    if role == "tool":
        return _Message(role, None, [], [(content, item.get("tool_call_id"), None)])
    return _Message(role, content if isinstance(content, str) and content else None, calls, [])


def _event_inputs(span: Span) -> list[_Message]:
    """Semconv 1.28–1.36 per-message events (``gen_ai.user.message``, ``gen_ai.tool.message``,
    …)."""
    messages = []
    for name, attrs in span.events:
        role = _EVENT_ROLES.get(name)
        if role is not None:
            body = _event_body(attrs)
            results = [(body.get("content"), body.get("id"), None)] if role == "tool" else []
            messages.append(_Message(role, None, [], results))
    return messages


def _event_outputs(span: Span) -> list[_Message]:
    """Semconv 1.28–1.36 ``gen_ai.choice`` events: ``message`` with ``content`` and OpenAI-style
    ``tool_calls``."""
    messages = []
    for name, attrs in span.events:
        message = _event_body(attrs).get("message") if name == "gen_ai.choice" else None
        if isinstance(message, dict):
            calls = [
                (
                    c.get("function", {}).get("name"),
                    c.get("function", {}).get("arguments"),
                    c.get("id"),
                )
                for c in message.get("tool_calls") or ()
                if isinstance(c, dict)
            ]
            text = message.get("content")
            messages.append(
                _Message("assistant", text if isinstance(text, str) and text else None, calls, [])
            )
    return messages


def _event_body(attrs: dict[str, Any]) -> dict[str, Any]:
    """An event's body: the JSON in ``gen_ai.event.content`` (Azure SDKs), else its attributes."""
    body = _json(attrs.get("gen_ai.event.content"))
    return body if isinstance(body, dict) else attrs


_INPUT_READERS = (
    _genai_reader("gen_ai.input.messages"),
    _indexed_reader("llm.input_messages", _openinference_message),
    _indexed_reader("gen_ai.prompt", _openllmetry_message),
    _event_inputs,
)
_OUTPUT_READERS = (
    _genai_reader("gen_ai.output.messages"),
    _indexed_reader("llm.output_messages", _openinference_message),
    _indexed_reader("gen_ai.completion", _openllmetry_message),
    _event_outputs,
)


# Tool spans


def _tool_key(span: Span) -> tuple[str, Any]:
    """A tool span's tool name and call id."""
    attrs = span.attrs
    name = attrs.get("gen_ai.tool.name") or attrs.get("tool.name")
    name = name or span.name.removeprefix("execute_tool ")
    return str(name), _id(first(attrs, "gen_ai.tool.call.id", "tool_call.id"))


def _execution(span: Span) -> _Execution:
    """A tool span: GenAI ``gen_ai.tool.*``, OpenInference
    ``tool.name``/``input.value``/``output.value``, old ADK."""
    attrs = span.attrs
    name, call_id = _tool_key(span)
    args = first(attrs, "gen_ai.tool.call.arguments", "tool_call.function.arguments", "input.value",
                  "gcp.vertex.agent.tool_call_args")  # fmt: skip
    raw = first(attrs, "gen_ai.tool.call.result", "output.value", "gcp.vertex.agent.tool_response")
    value = _structured(raw)
    value = value["output"] if _only_output(value) else value
    message = tool_message(value)
    if message is None:
        return _Execution(
            name, args, call_id, value, raw is not None, span.failed, span.duration_ms
        )
    result, message_id, message_error = message
    call_id = call_id if call_id is not None else _id(message_id)
    return _Execution(
        name, args, call_id, result, True, span.failed or message_error, span.duration_ms, True
    )


def _one_execution(runs: list[_Execution]) -> _Execution:
    """The tool spans of one execution (innermost first) as one: the outermost's name and duration,
    the innermost arguments, call id and result recorded, failed if any span failed."""
    if len(runs) == 1:
        return runs[0]
    outer, recorded = runs[-1], next((run for run in runs if run.has_result), runs[-1])
    args = next((run.args for run in runs if run.args is not None), None)
    call_id = next((run.call_id for run in runs if run.call_id is not None), None)
    return _Execution(
        outer.name,
        args,
        call_id,
        recorded.result,
        recorded.has_result,
        any(run.error for run in runs),
        outer.duration_ms,
        recorded.unwrapped,
    )


def _id(value: Any) -> Any:
    """A call id as recorded; a list or a map (an odd attribute value) is no id, as it cannot
    pair."""
    return None if isinstance(value, (list, dict)) else value


def _only_output(value: Any) -> bool:
    """``{"output": …}``: how OpenInference's LangChain instrumentation records a tool's return
    value."""
    return isinstance(value, dict) and list(value) == ["output"]


# Building the run


def _from_executions(steps: list[_Turn | _Execution], details: bool) -> Trajectory:
    """Calls from tool spans: turns from LLM spans, arguments from requests when the span has
    none."""
    builder = Builder(details)
    turns = [step for step in steps if isinstance(step, _Turn)]
    by_id = {
        call_id: args for turn in turns for _, args, call_id in turn.requests if call_id is not None
    }
    answers = {i: content for turn in turns for content, i, _ in turn.results if i is not None}
    waiting: list[tuple[Any, Any, Any]] = []
    executions = []
    for step in steps:
        if isinstance(step, _Turn):
            builder.turn(step.text, step.usage)
            waiting = list(step.requests)
            continue
        if not turns:
            builder.turn()
        builder.call(step.name, _arguments(step, by_id, waiting), step.call_id)
        executions.append(step)
    trajectory = builder.finish(FORMAT)
    calls = tuple(
        call._replace(result=e.result, has_result=True, error=e.error, duration_ms=e.duration_ms)
        if e.has_result
        else call._replace(
            result=answers.get(e.call_id),
            has_result=e.call_id in answers,
            error=e.error,
            duration_ms=e.duration_ms,
        )
        for call, e in zip(trajectory.calls, executions, strict=True)
    )
    return dataclasses.replace(trajectory, calls=calls)


def _arguments(step: _Execution, by_id: dict[Any, Any], waiting: list[tuple[Any, Any, Any]]) -> Any:
    """The span's arguments when they decode to an object; else its request's (by id, or the turn's
    next by name)."""
    by_name = step.call_id not in by_id
    request = next(
        (r for r in waiting if (r[0] == step.name if by_name else r[2] == step.call_id)), None
    )
    if request is not None:
        waiting.remove(request)
    args = None if step.args is None else decode_args(step.args)
    if isinstance(args, dict):
        return args
    if not by_name:
        return by_id[step.call_id]
    if request is not None:
        return request[1]
    return NOT_CAPTURED if args is None else args


def _from_requests(turns: list[_Turn], details: bool) -> Trajectory:
    """Calls requested in LLM outputs, each turn's results from the next LLM span's input."""
    unseen = next((i for i, turn in enumerate(turns) if turn.unseen_calls), None)
    if unseen is not None:
        raise NotOneRun(
            f"LLM span {unseen} finished to call tools, but the trace has no tool spans and no "
            "captured messages to say which; turn on content capture "
            "(OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_"
            "CONTENT) or trace the tools"
        )
    builder = Builder(details)
    for turn in turns:
        for content, call_id, name in turn.results:
            builder.result(content, call_id, name)
        builder.turn(turn.text, turn.usage)
        for name, args, call_id in turn.requests:
            builder.call(name, args, call_id)
    return builder.finish(FORMAT)


def _json(value: Any) -> Any:
    """A JSON-string attribute decoded; structured values as they are, bad JSON as None."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return None


def _structured(value: Any) -> Any:
    """A result recorded as JSON text (as OpenTelemetry records structured values) decoded; other
    text as is."""
    if isinstance(value, str) and value.lstrip()[:1] in ("{", "["):
        decoded = _json(value)
        return value if decoded is None else decoded
    return value
