"""A weather agent traced with the OpenTelemetry SDK and its standard OTLP/HTTP exporter (no model, no network).

It records GenAI semantic-convention spans: an LLM span asking for two parallel tool calls, two
``execute_tool`` spans with arguments and results, and a second LLM span with the answer, all under one
``invoke_agent`` span. ``run(protocol=...)`` is a ``python:`` source; ``python otlp_agent.py PROTOCOL`` a
``command:``. ``http/protobuf`` exports with ``OTLPSpanExporter``; ``http/json`` with a small exporter that
posts OTLP/JSON, as exporters that only speak JSON do. Other modes misbehave on purpose.
"""

from __future__ import annotations

import json
import os
import sys
import time
import urllib.request
from collections.abc import Sequence

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

CALLS = [("call_paris", "get_forecast", {"city": "Paris"}, {"summary": "sunny", "high": 24}),
         ("call_tokyo", "get_forecast", {"city": "Tokyo"}, {"summary": "light rain", "high": 19})]


def _post(body: bytes, content_type: str) -> int:
    """POST one body to the traces endpoint the receiver set; the status it answers."""
    request = urllib.request.Request(os.environ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"], body,
                                     {"Content-Type": content_type})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


class JsonExporter(SpanExporter):
    """OTLP/JSON over HTTP: the SDK's protobuf encoding written in the OTLP/JSON mapping (hex ids, enum numbers)."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        from google.protobuf.json_format import MessageToDict
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        document = MessageToDict(encode_spans(spans), use_integers_for_enums=True)
        for resource in document["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                for span in scope["spans"]:
                    for key in ("traceId", "spanId", "parentSpanId"):
                        if key in span:
                            span[key] = __import__("base64").b64decode(span[key]).hex()
        ok = _post(json.dumps(document).encode(), "application/json") == 200
        return SpanExportResult.SUCCESS if ok else SpanExportResult.FAILURE


def _exporter(protocol: str) -> SpanExporter:
    if protocol == "http/json":
        return JsonExporter()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter()  # reads OTEL_EXPORTER_OTLP_TRACES_ENDPOINT


def _messages(*parts: dict) -> str:
    return json.dumps([{"role": "assistant", "parts": list(parts)}])


def _agent(tracer: trace.Tracer) -> None:
    """One run: ask, call both tools in parallel, answer."""
    with tracer.start_as_current_span("invoke_agent weather", attributes={"gen_ai.operation.name": "invoke_agent"}):
        with tracer.start_as_current_span("chat gpt-4o") as llm:
            llm.set_attributes({"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
                                "gen_ai.usage.input_tokens": 52, "gen_ai.usage.output_tokens": 30,
                                "gen_ai.output.messages": _messages(*[
                                    {"type": "tool_call", "id": i, "name": n, "arguments": a} for i, n, a, _ in CALLS])})
        for call_id, name, args, result in CALLS:
            with tracer.start_as_current_span(f"execute_tool {name}") as tool:
                tool.set_attributes({"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                                     "gen_ai.tool.call.id": call_id, "gen_ai.tool.call.arguments": json.dumps(args),
                                     "gen_ai.tool.call.result": json.dumps(result)})
                time.sleep(0.01)
        with tracer.start_as_current_span("chat gpt-4o") as llm:
            llm.set_attributes({"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
                                "gen_ai.usage.input_tokens": 120, "gen_ai.usage.output_tokens": 18,
                                "gen_ai.output.messages": _messages(
                                    {"type": "text", "content": "Paris: sunny, 24°C. Tokyo: light rain, 19°C."})})


def run(protocol: str = "http/protobuf") -> None:
    """Run the agent with its spans exported over OTLP (or misbehave: ``silent``, ``hang``, ``malformed``)."""
    if protocol == "hang":
        time.sleep(60)
    if protocol == "malformed":
        _post(b"\x0a\xff\xff\xff", "application/x-protobuf")
    provider = TracerProvider()
    if protocol != "silent":
        provider.add_span_processor(BatchSpanProcessor(_exporter(protocol)))
    _agent(provider.get_tracer("otlp_agent"))
    provider.shutdown()  # flushes the batch before the process ends


if __name__ == "__main__":
    run(sys.argv[1] if len(sys.argv) > 1 else "http/protobuf")
