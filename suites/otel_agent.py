"""A weather agent traced with the OpenTelemetry SDK, for `capture: otlp` (no model, no network).

It sets up tracing as an instrumented agent does: a TracerProvider with the standard OTLP/HTTP span
exporter, which reads OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (trajrun points it at its receiver). The spans
follow the GenAI semantic conventions: an LLM span whose output asks for one forecast per city at
once, an execute_tool span per call, and an LLM span with the answer.
"""

from __future__ import annotations

import json

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

FORECASTS = {"Paris": "sunny, 24°C", "Tokyo": "light rain, 19°C", "Oslo": "cloudy, 12°C"}


def _chat(tracer, output: list[dict]) -> None:  # type: ignore[no-untyped-def]
    """One model call: an LLM span with its output message and token usage."""
    with tracer.start_as_current_span("chat gpt-4o") as span:
        span.set_attributes({"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
                             "gen_ai.usage.input_tokens": 60, "gen_ai.usage.output_tokens": 25,
                             "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": output}])})


def run(cities: list[str]) -> None:
    """Answer "what is the weather in these cities?", exporting the spans over OTLP."""
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    tracer = provider.get_tracer("otel_agent")
    calls = [(f"call_{city.lower()}", {"city": city}) for city in cities]
    with tracer.start_as_current_span("invoke_agent weather", attributes={"gen_ai.operation.name": "invoke_agent"}):
        _chat(tracer, [{"type": "tool_call", "id": i, "name": "get_forecast", "arguments": a} for i, a in calls])
        for call_id, args in calls:
            with tracer.start_as_current_span("execute_tool get_forecast") as span:
                span.set_attributes({"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_forecast",
                                     "gen_ai.tool.call.id": call_id, "gen_ai.tool.call.arguments": json.dumps(args),
                                     "gen_ai.tool.call.result": FORECASTS[args["city"]]})
        _chat(tracer, [{"type": "text", "content": ". ".join(f"{c}: {FORECASTS[c]}" for c in cities)}])
    provider.shutdown()  # flush the spans before the process ends
