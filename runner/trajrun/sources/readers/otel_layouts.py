"""Trace layouts that are not OTLP, rewritten as OTLP-shaped span mappings for the ``otel`` reader.

Jaeger's JSON (its query API ``/api/traces`` and the UI's "Download JSON": ``{data: [trace]}``, a
trace ``{traceID, spans, processes}``, or its spans) and the OpenTelemetry JS SDK's ``ReadableSpan``
objects as people save them from the in-memory exporter (``spanContext``, ``parentSpanId`` or
``parentSpanContext``, ``startTime: [seconds, nanoseconds]``). Grafana Tempo's ``{batches: [...]}``
is OTLP under another key and needs no rewriting (``otel_spans`` reads it). Jaeger's ``processes``
(the service of each span) are left out: the reader takes nothing from a span's resource.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

_PARENT_REFS = ("CHILD_OF", "FOLLOWS_FROM")
"""Jaeger reference kinds in the order a parent is taken from them (OTLP's parent is a CHILD_OF)."""


def is_jaeger_trace(item: Any) -> bool:
    """A Jaeger trace: ``{traceID, spans: [...], processes}``."""
    return isinstance(item, dict) and isinstance(item.get("spans"), list) and "traceID" in item


def is_jaeger_span(item: Any) -> bool:
    """A Jaeger span: ``spanID`` and ``operationName`` (OTLP and the SDKs spell ``spanId``)."""
    return isinstance(item, dict) and "spanID" in item and "operationName" in item


def is_js_span(item: Any) -> bool:
    """A JS ``ReadableSpan`` as saved: ids in ``spanContext`` (``_spanContext`` if saved whole)."""
    context = _js_context(item) if isinstance(item, dict) else None
    return context is not None and context.get("spanId") is not None


def jaeger_traces(doc: Any) -> list[dict[str, Any]] | None:
    """The traces of a Jaeger document (``{data: [trace, …]}``, a trace, a list of traces), else
    None."""
    data = doc.get("data") if isinstance(doc, dict) else None
    if isinstance(data, list) and data and all(map(is_jaeger_trace, data)):
        return data
    if is_jaeger_trace(doc):
        return [doc]
    if isinstance(doc, list) and doc and all(map(is_jaeger_trace, doc)):
        return doc
    return None


def jaeger_select(doc: Any) -> str:
    """The ``select`` that picks one trace of a Jaeger document (``{id}``: the trace id)."""
    where = "$.data" if isinstance(doc, dict) and "data" in doc else "$"
    return where + "[?(@.traceID == '{id}')]"


def js_select() -> str:
    """The ``select`` that picks one trace of a list of JS spans (``{id}``: the trace id)."""
    return "$[?(@.spanContext.traceId == '{id}')]"


def from_jaeger(raw: dict[str, Any]) -> dict[str, Any]:
    """A Jaeger span as OTLP: typed tags as attributes, the first CHILD_OF (else FOLLOWS_FROM)
    reference as the parent, microseconds as nanoseconds, logs as events (named by their
    ``event`` field), and ``otel.status_code: ERROR`` or ``error: true`` as an error status."""
    attrs = _jaeger_tags(raw.get("tags"))
    start, duration = _micros(raw.get("startTime")), _micros(raw.get("duration"))
    end = None if start is None or duration is None else (start + duration) * 1000
    failed = attrs.get("otel.status_code") == "ERROR" or attrs.get("error") is True
    return {
        "traceId": raw.get("traceID"), "spanId": raw.get("spanID"),
        "parentSpanId": _jaeger_parent(raw), "name": raw.get("operationName"),
        "attributes": attrs, "events": _jaeger_logs(raw.get("logs")),
        "startTimeUnixNano": None if start is None else start * 1000, "endTimeUnixNano": end,
        "status": {"code": 2 if failed else 0},
    }  # fmt: skip


def _jaeger_parent(raw: dict[str, Any]) -> Any:
    """The parent: a CHILD_OF reference, else FOLLOWS_FROM, else the old ``parentSpanID``."""
    refs = [ref for ref in raw.get("references") or () if isinstance(ref, dict)]
    for kind in _PARENT_REFS:
        parent = next((ref.get("spanID") for ref in refs if ref.get("refType") == kind), None)
        if parent is not None:
            return parent
    return raw.get("parentSpanID")


def _jaeger_tags(tags: Any) -> dict[str, Any]:
    """Jaeger's ``[{key, type, value}]`` as a flat mapping, each value read as its ``type`` says."""
    if not isinstance(tags, list):
        return {}
    pairs = (tag for tag in tags if isinstance(tag, dict) and isinstance(tag.get("key"), str))
    return {tag["key"]: _typed(tag.get("type"), tag.get("value")) for tag in pairs}


def _typed(kind: Any, value: Any) -> Any:
    """A tag's value as its type says: ``int64`` and ``float64`` may come as text, ``bool`` as
    ``"true"``, ``binary`` as base64 (read as hex; text that is no base64 stays as it is)."""
    if not isinstance(value, str):
        return value
    try:
        if kind == "int64":
            return int(value)
        if kind == "float64":
            return float(value)
        if kind == "binary":
            return base64.b64decode(value, validate=True).hex()
    except (ValueError, binascii.Error):
        return value
    return value.lower() == "true" if kind == "bool" else value


def _jaeger_logs(logs: Any) -> list[dict[str, Any]]:
    """Jaeger logs as OTLP events: the ``event`` field names one, the other fields are its
    attributes."""
    events = []
    for log in logs if isinstance(logs, list) else ():
        fields = _jaeger_tags(log.get("fields")) if isinstance(log, dict) else {}
        name = fields.pop("event", "")
        events.append({"name": str(name), "attributes": fields})
    return events


def _micros(value: Any) -> int | None:
    """A Jaeger time or duration in microseconds: a number, or digits in a string."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return int(value)
    return int(value) if isinstance(value, str) and value.isdigit() else None


def from_js(raw: dict[str, Any]) -> dict[str, Any]:
    """A JS ``ReadableSpan`` as OTLP: ids from ``spanContext``, the parent from ``parentSpanId``
    (SDK 1.x) or ``parentSpanContext`` (2.x), ``[seconds, nanoseconds]`` times as nanoseconds."""
    context = _js_context(raw) or {}
    parent = raw.get("parentSpanContext")
    parent_id = raw.get("parentSpanId")
    if parent_id is None and isinstance(parent, dict):
        parent_id = parent.get("spanId")
    events = [{"name": event.get("name"), "attributes": event.get("attributes")}
              for event in raw.get("events") or () if isinstance(event, dict)]  # fmt: skip
    return {
        "traceId": context.get("traceId"), "spanId": context.get("spanId"),
        "parentSpanId": parent_id, "name": raw.get("name"), "attributes": raw.get("attributes"),
        "events": events, "startTimeUnixNano": _hrtime(raw.get("startTime")),
        "endTimeUnixNano": _hrtime(raw.get("endTime")), "status": raw.get("status"),
    }  # fmt: skip


def _js_context(raw: dict[str, Any]) -> dict[str, Any] | None:
    """The span's ``SpanContext``."""
    context = raw.get("spanContext", raw.get("_spanContext"))
    return context if isinstance(context, dict) else None


def _hrtime(value: Any) -> int | None:
    """An ``HrTime`` (``[seconds, nanoseconds]``) as nanoseconds since the epoch."""
    if isinstance(value, list) and len(value) == 2 and all(type(part) is int for part in value):
        return value[0] * 1_000_000_000 + value[1]
    return None
