"""OpenTelemetry spans as trajrun reads them: OTLP/JSON exports (Tempo's ``batches`` too), SDK and
Phoenix span lists, Jaeger's JSON and JS ``ReadableSpan`` lists (``otel_layouts`` rewrites them as
OTLP), one trace.

Normalises every shape the ``otel`` reader accepts into ``Span`` objects (attributes flattened,
ids as lowercase hex, start times in nanoseconds), in start-time order, and decides whether the
traces of a document are one run (``one_run``).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from ..builder import NotOneRun, NotThisFormat
from .otel_layouts import (
    from_jaeger,
    from_js,
    is_jaeger_span,
    is_js_span,
    jaeger_select,
    jaeger_traces,
    js_select,
)  # fmt: skip

_HEX = frozenset("0123456789abcdef")


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


_FRACTION = re.compile(r"\.(\d+)")
_EXPORT_KEYS = ("resourceSpans", "resource_spans", "batches")  # batches: Grafana Tempo's name
_SCOPE_KEYS = ("scopeSpans", "scope_spans", "instrumentationLibrarySpans")  # the last: OTLP < 0.15
_WRAPPERS = ("trace", "result")  # Tempo's /api/v2/traces and Jaeger's /api/v3/traces wrap an export
_SELECT = "$..spans[?(@.{key} == '{id}')]"
"""Picks one trace's spans out of OTLP exports: a path to the ``spans`` lists, then a filter (the
older jsonpath-ng that Python 3.10 gets cannot parse a filter straight after ``..``)."""
_FLAT_SELECT = "$[?(@.{key} == '{id}')]"
"""Picks one trace's spans out of a flat list of spans."""
_MESSAGE_KEYS = frozenset(
    {"role", "content", "name", "tool_calls", "tool_call_id", "function_call", "refusal"}
)
"""A Chat Completions message's keys: none is one a span, an export or a trace is known by."""
MERGED = " traces read as one run"
"""What the note on a run read from several traces says (after their number)."""


@dataclass(frozen=True, slots=True)
class Span:
    """One span, whatever the exporter: flat attributes, events, ids, start time and status."""

    index: int
    name: str
    attrs: dict[str, Any]
    events: tuple[tuple[str, dict[str, Any]], ...]
    span_id: str | None
    parent_id: str | None
    trace_id: str | None
    trace_ref: tuple[str, str]
    oi_kind: str | None
    start: int | None
    failed: bool
    times: tuple[int, int] | None = None
    """Start and end in nanoseconds since the epoch, where both were recorded in a known unit."""

    @property
    def duration_ms(self) -> float | None:
        """How long the span took, in milliseconds, where its times were recorded."""
        return None if self.times is None else (self.times[1] - self.times[0]) / 1e6


def _raw_spans(doc: Any) -> list[dict[str, Any]]:
    """The span mappings of any accepted shape, in file order, each in OTLP's shape."""
    traces = jaeger_traces(doc)
    if traces is not None:
        found = (span for trace in traces for span in trace["spans"] if isinstance(span, dict))
        return _some(list(map(from_jaeger, found)))
    doc = _unwrapped(doc)
    if isinstance(doc, dict):
        if _is_export(doc):
            return _some(_export_spans(doc))
        for key in ("spans", "data"):
            items = doc.get(key)
            if isinstance(items, list) and items and all(map(_is_span, items)):
                return [_otlp_shaped(item) for item in items]
        if _is_span(doc):
            return [_otlp_shaped(doc)]
        raise NotThisFormat("no 'resourceSpans' or 'batches', no list of spans or Jaeger traces, "
                            "and not a span (no spanId)")  # fmt: skip
    if not isinstance(doc, list) or not doc:
        raise NotThisFormat("not an OTLP document, a list of spans or a span")
    spans: list[dict[str, Any]] = []
    for i, item in enumerate(doc):
        if isinstance(item, dict) and _is_export(item):
            spans += _export_spans(item)
        elif _is_span(item):
            spans.append(_otlp_shaped(item))
        else:
            raise NotThisFormat(f"item {i} is neither an OTLP document nor a span")
    return _some(spans)


def _unwrapped(doc: Any) -> Any:
    """The export inside ``{trace: …}`` or ``{result: …}``, else the document itself."""
    if isinstance(doc, dict) and len(doc) == 1:
        inner = next(iter(doc.values()))
        if next(iter(doc)) in _WRAPPERS and isinstance(inner, dict) and _is_export(inner):
            return inner
    return doc


def _otlp_shaped(raw: dict[str, Any]) -> dict[str, Any]:
    """A span mapping as OTLP or an SDK writes it: Jaeger's and JS's rewritten, others as they
    are."""
    if is_jaeger_span(raw):
        return from_jaeger(raw)
    return from_js(raw) if is_js_span(raw) else raw


def refuses(doc: Any) -> bool:
    """Whether ``_raw_spans(doc)`` surely refuses, so the ``otel`` reader raises ``NotThisFormat``
    before any ``NotOneRun``: a mapping neither an export nor a span with no ``spans`` or ``data``
    list, an empty list, or a list whose item 0 is neither. Detection skips the reader then."""
    if isinstance(doc, list) and doc and type(doc[0]) is dict and doc[0].keys() <= _MESSAGE_KEYS:
        return True  # a chat message list (the usual bulk record), told at C speed
    if jaeger_traces(doc) is not None:  # a list of Jaeger traces, whose item 0 is no span
        return False
    doc = _unwrapped(doc)
    if isinstance(doc, dict):
        lists = any(isinstance(doc.get(key), list) and doc[key] for key in ("spans", "data"))
        return not (_is_export(doc) or lists or _is_span(doc))
    if not isinstance(doc, list) or not doc:
        return True
    head = doc[0]
    return not (isinstance(head, dict) and _is_export(head)) and not _is_span(head)


def _is_export(doc: dict[str, Any]) -> bool:
    """An OTLP ``ExportTraceServiceRequest`` (camelCase as OTLP/JSON, snake_case as protobuf field
    names), or Tempo's ``batches`` of resource spans."""
    if isinstance(doc.get("resourceSpans", doc.get("resource_spans")), list):
        return True
    batches = doc.get("batches")
    return isinstance(batches, list) and bool(batches) and isinstance(batches[0], dict) \
        and any(key in batches[0] for key in _SCOPE_KEYS)  # fmt: skip


def _is_span(item: Any) -> bool:
    """A span mapping: it has a span id somewhere an exporter puts one."""
    if not isinstance(item, dict):
        return False
    has_id = _field(item, "spanId", "span_id", "context.span_id")[1] is not None
    return has_id or is_jaeger_span(item) or is_js_span(item)


def _export_spans(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Every span of an OTLP export (resource, then scope, then span)."""
    return [
        span
        for resource in first(doc, *_EXPORT_KEYS) or ()
        if isinstance(resource, dict)
        for scope in first(resource, *_SCOPE_KEYS) or ()
        if isinstance(scope, dict)
        for span in scope.get("spans") or ()
        if isinstance(span, dict)
    ]


def _some(spans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The spans of OTLP documents, refusing none at all (an export of nothing is no run)."""
    if not spans:
        raise NotOneRun("an OTLP document with no spans: nothing to read as a run")
    return spans


def _span(raw: dict[str, Any], index: int) -> Span:
    """One span mapping in the normal form."""
    attrs = _attributes(raw.get("attributes"))
    events = tuple(
        (str(e.get("name", "")), _attributes(e.get("attributes")))
        for e in raw.get("events") or ()
        if isinstance(e, dict)
    )
    trace_key, trace = _field(raw, "traceId", "trace_id", "context.trace_id")
    # Phoenix moves the kind out
    oi_kind = attrs.get("openinference.span.kind", raw.get("span_kind"))
    return Span(
        index, str(raw.get("name") or ""), attrs, events,
        _hex_id(_field(raw, "spanId", "span_id", "context.span_id")[1]),
        _hex_id(_field(raw, "parentSpanId", "parent_span_id", "parent_id")[1]),
        _hex_id(trace), (trace_key, str(trace)),
        oi_kind.upper() if isinstance(oi_kind, str) else None,
        _start(_field(raw, "startTimeUnixNano", "start_time_unix_nano", "start_time")[1]),
        _failed(raw, attrs), _times(raw),
    )  # fmt: skip


def _times(raw: dict[str, Any]) -> tuple[int, int] | None:
    """Start and end in nanoseconds: OTLP's ``*UnixNano`` or ISO times (a bare number under
    ``start_time`` has no known unit); None when either is missing or the end comes first."""
    start_key, start = _field(raw, "startTimeUnixNano", "start_time_unix_nano", "start_time")
    end_key, end = _field(raw, "endTimeUnixNano", "end_time_unix_nano", "end_time")
    pairs = ((start_key, start), (end_key, end))
    if start is None or end is None or any(k.endswith("_time") and not isinstance(v, str)
                                           for k, v in pairs):  # fmt: skip
        return None
    begun, ended = _start(start), _start(end)
    return (begun, ended) if begun is not None and ended is not None and ended >= begun else None


def _field(raw: dict[str, Any], *names: str) -> tuple[str, Any]:
    """The first of ``names`` present (``a.b`` looks inside mapping ``a``): the name and its
    value."""
    for name in names:
        head, _, tail = name.partition(".")
        holder = raw.get(head) if tail else raw
        value = holder.get(tail or name) if isinstance(holder, dict) else None
        if value is not None and value != "":
            return name, value
    return names[0], None


def first(mapping: dict[str, Any], *keys: str) -> Any:
    """The value of the first key present."""
    return next((mapping[key] for key in keys if mapping.get(key) is not None), None)


def _attributes(raw: Any) -> dict[str, Any]:
    """Attributes as a flat mapping: OTLP's ``[{key, value: AnyValue}]`` decoded, a mapping as
    is."""
    if isinstance(raw, dict):
        return raw
    if not isinstance(raw, list):
        return {}
    pairs = (kv for kv in raw if isinstance(kv, dict) and isinstance(kv.get("key"), str))
    return {kv["key"]: _any_value(kv.get("value")) for kv in pairs}


def _any_value(value: Any) -> Any:
    """An OTLP ``AnyValue`` as a plain value; ``intValue`` is a string in OTLP/JSON."""
    if not isinstance(value, dict):
        return value
    for key, item in value.items():
        if key in ("intValue", "int_value"):
            return (
                int(item)
                if isinstance(item, (int, str)) and str(item).lstrip("-").isdigit()
                else item
            )
        if key in ("arrayValue", "array_value"):
            return [_any_value(v) for v in (item or {}).get("values") or ()]
        if key in ("kvlistValue", "kvlist_value"):
            return _attributes((item or {}).get("values"))
        return item
    return None


def _hex_id(raw: Any) -> str | None:
    """A trace or span id as lowercase hex: OTLP/JSON writes hex, protobuf's MessageToJson base64,
    the SDK ``0x…``."""
    if not isinstance(raw, str):
        return None if raw is None else str(raw)
    text = raw.lower().removeprefix("0x")
    if len(text) in (16, 32) and set(text) <= _HEX:
        return text if text.strip("0") else None
    try:
        data = base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        return raw
    return data.hex() if len(data) in (8, 16) else raw


def _start(raw: Any) -> int | None:
    """A start time as one sortable integer: OTLP nanoseconds (a string in OTLP/JSON), or an ISO
    time."""
    if isinstance(raw, bool) or raw is None:
        return None
    if isinstance(raw, (int, float)):
        return int(raw)  # whatever the unit: every span of one document has the same
    text = str(raw)
    if text.isdigit():
        return int(text)
    # Python 3.10's fromisoformat takes neither "Z" nor nanoseconds
    text = _FRACTION.sub(
        lambda m: "." + m[1][:6].ljust(6, "0"), text.replace("Z", "+00:00"), count=1
    )
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    moment = moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)
    return (moment - _EPOCH) // timedelta(microseconds=1) * 1000


def _failed(raw: dict[str, Any], attrs: dict[str, Any]) -> bool:
    """Whether the status is ERROR (``2``, ``STATUS_CODE_ERROR``, ``StatusCode.ERROR``) or
    ``error.type`` is set."""
    status = raw.get("status")
    code = first(status, "code", "status_code") if isinstance(status, dict) else status
    code = raw.get("status_code") if code is None else code
    return (
        code == 2
        or (isinstance(code, str) and code.upper().endswith("ERROR"))
        or "error.type" in attrs
    )


def _ordered(spans: list[Span]) -> list[Span]:
    """Spans by start time, parents before children on ties; without times, the tree in file
    order."""
    tree = _preorder(spans)
    if any(span.start is None for span in spans):
        return tree
    rank = {span.index: i for i, span in enumerate(tree)}
    return sorted(spans, key=lambda span: (span.start, rank[span.index]))


def _preorder(spans: list[Span]) -> list[Span]:
    """Every span after its parent, siblings in file order (exporters write spans as they end)."""
    known = {span.span_id for span in spans}
    children: dict[str | None, list[Span]] = {}
    for span in spans:
        children.setdefault(span.parent_id if span.parent_id in known else None, []).append(span)
    out: list[Span] = []
    stack = list(reversed(children.get(None, [])))
    while stack:
        span = stack.pop()
        out.append(span)
        stack += reversed(children.pop(span.span_id, []) if span.span_id is not None else [])
    seen = {span.index for span in out}
    return out + [
        span for span in spans if span.index not in seen
    ]  # a cycle of parents: file order


def one_run(spans: list[Span], doc: Any, traces: str, whole: Callable[[Span], bool]) -> str | None:
    """Check that the spans are one run, as ``traces`` (one of ``formats.TRACE_RULES``) says; the
    note on the run when several traces were read as one. ``whole`` says whether a trace's root span
    makes the trace a run of its own (an agent's or a chain's span): traces none of whose roots is
    one are fragments of a run."""
    ids = {span.trace_id: span.trace_ref for span in spans if span.trace_id is not None}
    if len(ids) < 2:
        return None
    refs = list(ids.values())
    shown = ", ".join(raw for _, raw in refs[:5]) + (", …" if len(refs) > 5 else "")
    key, raw = refs[0]
    select = _select(doc).format(key=key, id=raw)
    if traces == "one":
        raise NotOneRun(
            f"the document holds {len(refs)} traces ({shown}) and traces: one reads a run from "
            f'one trace; pick one with select: "{select}"'
        )
    root = None if traces == "merge" else _whole_root(spans, whole)
    if root is None:
        why = (
            "as traces: merge asks"
            if traces == "merge"
            else "no trace has an agent or chain span over its calls"
        )
        return f"{len(refs)}{MERGED}, in time order ({shown}): {why}"
    raise NotOneRun(
        f"the document holds {len(refs)} traces ({shown}), and trace {root.trace_ref[1]} is a "
        f"whole run (its root span {root.name!r} is no model or tool call); pick one with "
        f'select: "{select}", check each with each: trace, or read them as one run with '
        "traces: merge"
    )


def _whole_root(spans: list[Span], whole: Callable[[Span], bool]) -> Span | None:
    """The first root span of a trace (no parent in the document) that makes the trace a run of its
    own, if any."""
    known = {span.span_id for span in spans if span.span_id is not None}
    roots = (span for span in spans if span.trace_id is not None and span.parent_id not in known)
    return next((span for span in roots if whole(span)), None)


def _select(doc: Any) -> str:
    """The ``select`` that picks one trace of ``doc``, by the layout's own trace id field."""
    if jaeger_traces(doc) is not None or (isinstance(doc, list) and doc and is_jaeger_span(doc[0])):
        return jaeger_select(doc)
    if isinstance(doc, list) and doc and is_js_span(doc[0]):
        return js_select()
    if isinstance(doc, list) and doc and isinstance(doc[0], dict) and "resourceSpans" not in doc[0]:
        return _FLAT_SELECT
    return _SELECT


def wall_ms(spans: list[Span]) -> float | None:
    """From the first span's start to the last one's end, in milliseconds; None when no span
    recorded its times."""
    times = [span.times for span in spans if span.times is not None]
    return (
        (max(end for _, end in times) - min(start for start, _ in times)) / 1e6 if times else None
    )


def no_run(spans: list[Span]) -> str:
    """What a trace without LLM or tool spans lacks, for the error message."""
    names = ", ".join(repr(span.name) for span in spans[:4]) + (", …" if len(spans) > 4 else "")
    count = f"{len(spans)} span{'s' if len(spans) != 1 else ''}"
    return (
        f"an OpenTelemetry trace of {count} ({names}) with no LLM or tool span: no span has "
        "gen_ai.operation.name chat, generate_content, text_completion or execute_tool, "
        "gen_ai.tool.name, or openinference.span.kind LLM or TOOL; trace the agent with a GenAI "
        "or OpenInference instrumentation"
    )


def spans_of(doc: Any) -> list[Span]:
    """The spans of a document, every trace's, in start-time order (``one_run`` says whether they
    are one run)."""
    return _ordered([_span(raw, i) for i, raw in enumerate(_raw_spans(doc))])


def trace_groups(doc: Any) -> list[tuple[str, list[dict[str, Any]]]]:
    """The spans of a document grouped by trace id, in order of first appearance, each a list of raw
    spans that reads as one run (bulk sources' ``each: trace``); spans without a trace id form one
    group named ``-``."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for raw in _raw_spans(doc):
        trace = _hex_id(_field(raw, "traceId", "trace_id", "context.trace_id")[1])
        groups.setdefault(trace if trace is not None else "-", []).append(raw)
    return list(groups.items())
