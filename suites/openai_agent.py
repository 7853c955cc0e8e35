"""A weather agent on the official ``openai`` SDK: Chat Completions, streamed, with two tools.

It knows nothing of trajrun: its client takes the base URL and key from ``OPENAI_BASE_URL`` and
``OPENAI_API_KEY``, as the SDK does, so the model proxy sees its traffic. ``live_openai.suite.yaml``
replays the committed cassette (no model, no network, no key); ``--cassettes record`` would call the model.
"""

from __future__ import annotations

import json
from typing import Any

import openai

TOOLS: list[Any] = [
    {"type": "function", "function": {"name": "get_weather", "description": "Current weather in a city",
                                      "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                     "required": ["city"]}}},
    {"type": "function", "function": {"name": "get_forecast", "description": "Forecast for the next days",
                                      "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                                                                                      "days": {"type": "integer"}},
                                                     "required": ["city", "days"]}}},
]


def get_weather(city: str) -> str:
    """The weather now (a stand-in for a real API)."""
    return "sunny, 24°C"


def get_forecast(city: str, days: int) -> str:
    """The forecast (a stand-in for a real API)."""
    return "rain tomorrow"


def run(question: str = "What is the weather in Paris, and tomorrow?") -> str:
    """Ask the model, run the tools it calls, until it answers; the answer."""
    client = openai.OpenAI()
    messages: list[Any] = [{"role": "user", "content": question}]
    while True:
        message = _streamed(client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS,
                                                           stream=True, stream_options={"include_usage": True}))
        messages.append(message)
        if not message.get("tool_calls"):
            return str(message["content"])
        for call in message["tool_calls"]:
            tool: Any = {"get_weather": get_weather, "get_forecast": get_forecast}[call["function"]["name"]]
            result = tool(**json.loads(call["function"]["arguments"]))
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})


def _streamed(chunks: Any) -> dict[str, Any]:
    """A streamed reply put together: its text and its tool calls."""
    text, calls = "", {}  # type: tuple[str, dict[int, dict[str, Any]]]
    for chunk in chunks:
        for choice in chunk.choices:
            text += choice.delta.content or ""
            for part in choice.delta.tool_calls or ():
                call = calls.setdefault(part.index, {"id": "", "type": "function",
                                                     "function": {"name": "", "arguments": ""}})
                call["id"] = part.id or call["id"]
                call["function"]["name"] += part.function.name or ""
                call["function"]["arguments"] += part.function.arguments or ""
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = [calls[index] for index in sorted(calls)]
    return message
