"""A weather agent on the official ``openai`` or ``anthropic`` SDK: it asks the model, runs the tools the model
calls, sends their results back, and returns the conversation once the model answers.

``run(api=..., stream=..., forecast=...)`` is a ``python:`` source, ``python sdk_agent.py API [stream]`` a
``command:`` (it prints the messages as JSON). ``api`` is ``chat`` (Chat Completions), ``responses`` or
``anthropic``. The model's base URL and key come from the environment, as the SDKs read them, except for
``api="ignores-base-url"``, which talks to a fixed address (an agent the model proxy never sees).
"""

from __future__ import annotations

import json
import sys
from typing import Any

TOOLS = {"get_weather": "weather in a city", "get_forecast": "forecast for a city"}
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}


def tool(name: str, args: dict[str, Any], forecast: str) -> str:
    """What a tool returns."""
    return "sunny, 24°C" if name == "get_weather" else forecast


def run(api: str = "chat", stream: bool = False, forecast: str = "rain tomorrow") -> Any:
    """Run the agent to its answer; the conversation in the API's own shape."""
    if api == "anthropic":
        return _anthropic(stream, forecast)
    if api == "ignores-base-url":
        import openai

        client = openai.OpenAI(base_url="http://127.0.0.1:9/v1", max_retries=0, timeout=5)
        client.chat.completions.create(model="fake", messages=[{"role": "user", "content": "hi"}])
    import openai

    client = openai.OpenAI()
    return _responses(client, stream, forecast) if api == "responses" else _chat(client, stream, forecast)


def _chat(client: Any, stream: bool, forecast: str) -> list[Any]:
    """Chat Completions, tool rounds until the answer."""
    tools = [{"type": "function", "function": {"name": n, "description": d, "parameters": SCHEMA}}
             for n, d in TOOLS.items()]
    messages: list[Any] = [{"role": "user", "content": "What is the weather in Paris?"}]
    while True:
        if stream:
            message = _streamed_chat(client.chat.completions.create(
                model="fake", messages=messages, tools=tools, stream=True, stream_options={"include_usage": True}))
        else:
            reply = client.chat.completions.create(model="fake", messages=messages, tools=tools)
            message = reply.choices[0].message.model_dump(exclude_none=True)
        messages.append(message)
        if not message.get("tool_calls"):
            return messages
        for call in message["tool_calls"]:
            args = json.loads(call["function"]["arguments"])
            messages.append({"role": "tool", "tool_call_id": call["id"],
                             "content": tool(call["function"]["name"], args, forecast)})


def _streamed_chat(chunks: Any) -> dict[str, Any]:
    """A streamed completion put together."""
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
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    return message


def _responses(client: Any, stream: bool, forecast: str) -> list[Any]:
    """Responses, tool rounds until the answer (the whole input sent each time)."""
    tools = [{"type": "function", "name": n, "description": d, "parameters": SCHEMA} for n, d in TOOLS.items()]
    items: list[Any] = [{"role": "user", "content": "What is the weather in Paris?"}]
    while True:
        if stream:
            done = None
            with client.responses.stream(model="fake", input=items, tools=tools) as events:
                for event in events:
                    if event.type == "response.completed":
                        done = event.response
            assert done is not None
            output = [item.model_dump(exclude_none=True) for item in done.output]
        else:
            output = [item.model_dump(exclude_none=True) for item in
                      client.responses.create(model="fake", input=items, tools=tools).output]
        items += output
        calls = [item for item in output if item["type"] == "function_call"]
        if not calls:
            return items
        for call in calls:
            result = tool(call["name"], json.loads(call["arguments"]), forecast)
            items.append({"type": "function_call_output", "call_id": call["call_id"], "output": result})


def _anthropic(stream: bool, forecast: str) -> list[Any]:
    """Anthropic Messages, tool rounds until the answer."""
    import anthropic

    client = anthropic.Anthropic()
    tools: list[Any] = [{"name": n, "description": d, "input_schema": SCHEMA} for n, d in TOOLS.items()]
    messages: list[Any] = [{"role": "user", "content": "What is the weather in Paris?"}]
    while True:
        reply: Any
        if stream:
            with client.messages.stream(model="fake", max_tokens=100, messages=messages, tools=tools) as events:
                reply = events.get_final_message()
        else:
            reply = client.messages.create(model="fake", max_tokens=100, messages=messages, tools=tools)
        content = [block.model_dump(exclude_none=True) for block in reply.content]
        messages.append({"role": "assistant", "content": content})
        uses = [block for block in content if block["type"] == "tool_use"]
        if not uses:
            return messages
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": use["id"], "content": tool(use["name"], use["input"], forecast)}
            for use in uses]})


if __name__ == "__main__":
    print(json.dumps(run(sys.argv[1], stream=sys.argv[2:] == ["stream"])))
