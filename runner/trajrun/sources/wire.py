"""``capture: wire``: a live run read from its model traffic, the exchanges the model proxy saw.

Calls come from the model's responses, their results from the requests that follow (matched by call
id), usage from the responses, the answer from the last response with text. The exchanges become one
history in the format of their API, read by its reader: Chat Completions (``openai``), Responses
(``openai-responses``) or Anthropic Messages (``anthropic``). Streamed responses are put back
together from their events. Requests to other endpoints (models, embeddings) and error responses are
left out.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from typing import Any

from ..errors import SourceError
from ..trajectory import Trajectory, Usage
from .builder import make_usage
from .readers import anthropic, openai, openai_responses

_ENDPOINTS = {("openai", "/chat/completions"): "openai",
              ("openai", "/responses"): "openai-responses",
              ("anthropic", "/v1/messages"): "anthropic"}  # fmt: skip
_NAMES = {"openai": "OpenAI Chat Completions", "openai-responses": "OpenAI Responses",
          "anthropic": "Anthropic Messages"}  # fmt: skip
_USAGE = {"openai": (("prompt_tokens",), ("completion_tokens",)),
          "openai-responses": (("input_tokens",), ("output_tokens",)),
          "anthropic": (("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"),
                        ("output_tokens",))}  # fmt: skip


def read_wire(exchanges: Iterable[dict[str, Any]], origin: str) -> Trajectory:
    """The run the exchanges hold; no model call among them, or calls to two APIs, is a
    ``SourceError``."""
    calls: list[tuple[str, dict[str, Any], dict[str, Any]]] = []
    for exchange in exchanges:
        request, response = exchange["request"], exchange["response"]
        api = _ENDPOINTS.get((request["api"], request["path"].split("?")[0].rstrip("/")))
        if (
            api is not None
            and 200 <= response["status"] < 300
            and isinstance(request["body"], dict)
        ):
            calls.append((api, request["body"], response))
    apis = sorted({api for api, _, _ in calls})
    if not apis:
        raise SourceError(
            "capture: wire found no successful model call (Chat Completions, Responses or "
            "Anthropic Messages) in the traffic",
            origin,
        )
    if len(apis) > 1:
        raise SourceError(
            f"capture: wire found calls to {' and '.join(_NAMES[a] for a in apis)} in one run; it "
            "reads one conversation per case",
            origin,
        )
    api = apis[0]
    history, usages = _HISTORIES[api](calls)
    reader = {
        "openai": openai.read,
        "openai-responses": openai_responses.read,
        "anthropic": anthropic.read,
    }[api]
    inputs, outputs = _USAGE[api]
    usage: Usage | None = Usage(0, 0)
    for raw in usages:
        counted = make_usage(raw, inputs, outputs)
        usage = None if usage is None or counted is None else usage + counted
    return dataclasses.replace(reader(history), usage=usage)


def _chat(calls: list[tuple[str, dict[str, Any], dict[str, Any]]]) -> tuple[list[Any], list[Any]]:
    """Chat Completions: each response's message, then the ``tool`` messages of the next requests
    that answer it."""
    history: list[Any] = []
    usages: list[Any] = []
    asked: set[Any] = set()
    for _, body, response in calls:
        history += _answers(
            body.get("messages"),
            asked,
            lambda m: [m] if m.get("role") == "tool" else [],
            lambda m: m.get("tool_call_id"),
        )
        message, usage = _chat_message(response)
        history.append(message)
        usages.append(usage)
        asked |= {
            call.get("id") for call in message.get("tool_calls") or () if isinstance(call, dict)
        }
    return history, usages


def _chat_message(response: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    """The assistant message of a completion, whole or streamed, and its usage."""
    if "body" in response:
        body = response["body"] if isinstance(response["body"], dict) else {}
        choices = body.get("choices") or [{}]
        whole = choices[0].get("message") if isinstance(choices[0], dict) else None
        return whole if isinstance(whole, dict) else {"role": "assistant"}, body.get("usage")
    text: list[str] = []
    tools: dict[int, dict[str, Any]] = {}
    usage = None
    for data in _data(response):
        usage = data.get("usage") or usage
        for choice in data.get("choices") or ():
            delta = choice.get("delta") if isinstance(choice, dict) else None
            if not isinstance(delta, dict):
                continue
            if isinstance(delta.get("content"), str):
                text.append(delta["content"])
            for part in delta.get("tool_calls") or ():
                _tool_delta(
                    tools.setdefault(
                        part.get("index", 0), {"function": {"name": "", "arguments": ""}}
                    ),
                    part,
                )
    message: dict[str, Any] = {"role": "assistant", "content": "".join(text) or None}
    if tools:
        message["tool_calls"] = [tools[index] for index in sorted(tools)]
    return message, usage


def _tool_delta(call: dict[str, Any], part: dict[str, Any]) -> None:
    """One streamed piece of a tool call: its id and name once, its arguments a piece at a time."""
    if part.get("id"):
        call["id"], call["type"] = part["id"], "function"
    function = part.get("function") or {}
    call["function"]["name"] += function.get("name") or ""
    call["function"]["arguments"] += function.get("arguments") or ""


def _responses(
    calls: list[tuple[str, dict[str, Any], dict[str, Any]]],
) -> tuple[list[Any], list[Any]]:
    """Responses: each response's output items, then the ``*_call_output`` items of the next
    requests."""
    history: list[Any] = []
    usages: list[Any] = []
    asked: set[Any] = set()
    for _, body, response in calls:
        history += _answers(
            body.get("input"),
            asked,
            lambda i: [i] if str(i.get("type", "")).endswith("_call_output") else [],
            lambda i: i.get("call_id"),
        )
        whole = response.get("body") if "body" in response else _completed(response)
        whole = whole if isinstance(whole, dict) else {}
        output = [item for item in whole.get("output") or () if isinstance(item, dict)]
        history += output
        usages.append(whole.get("usage"))
        asked |= {item.get("call_id") for item in output if item.get("call_id")}
    return history, usages


def _completed(response: dict[str, Any]) -> dict[str, Any]:
    """A streamed response as its last ``response.*`` event holds it, its output items gathered if
    it has none."""
    whole: dict[str, Any] = {}
    done = []
    for data in _data(response):
        if isinstance(data.get("response"), dict):
            whole = data["response"]
        if data.get("type") == "response.output_item.done" and isinstance(data.get("item"), dict):
            done.append(data["item"])
    return whole if whole.get("output") else {**whole, "output": done}


def _anthropic(
    calls: list[tuple[str, dict[str, Any], dict[str, Any]]],
) -> tuple[list[Any], list[Any]]:
    """Anthropic Messages: each response's content, then the ``tool_result`` blocks of the next
    requests."""
    history: list[Any] = []
    usages: list[Any] = []
    asked: set[Any] = set()
    for _, body, response in calls:
        results = _answers(
            body.get("messages"), asked, _result_blocks, lambda b: b.get("tool_use_id")
        )
        if results:
            history.append({"role": "user", "content": results})
        message = response.get("body") if "body" in response else _message(response)
        message = message if isinstance(message, dict) else {}
        content: list[Any] = message["content"] if isinstance(message.get("content"), list) else []
        history.append({"role": "assistant", "content": content})
        usages.append(message.get("usage"))
        asked |= {
            block.get("id") for block in content if isinstance(block, dict) and block.get("id")
        }
    return history, usages


def _result_blocks(message: dict[str, Any]) -> list[Any]:
    """The ``tool_result`` blocks of a user message."""
    content = message.get("content") if message.get("role") == "user" else None
    if not isinstance(content, list):
        return []
    return [
        block for block in content if isinstance(block, dict) and block.get("type") == "tool_result"
    ]


def _message(response: dict[str, Any]) -> dict[str, Any]:
    """A streamed Message put back together: its blocks from their start and deltas, its usage
    merged."""
    blocks: dict[int, dict[str, Any]] = {}
    partial: dict[int, list[str]] = {}
    usage: dict[str, Any] = {}
    for data in _data(response):
        kind, index = data.get("type"), data.get("index", 0)
        if kind == "message_start" and isinstance(data.get("message"), dict):
            usage.update(data["message"].get("usage") or {})
        elif kind == "content_block_start" and isinstance(data.get("content_block"), dict):
            blocks[index] = dict(data["content_block"])
        elif (
            kind == "content_block_delta"
            and isinstance(data.get("delta"), dict)
            and index in blocks
        ):
            delta = data["delta"]
            if delta.get("type") == "text_delta":
                blocks[index]["text"] = blocks[index].get("text", "") + str(delta.get("text", ""))
            elif delta.get("type") == "input_json_delta":
                partial.setdefault(index, []).append(str(delta.get("partial_json", "")))
        elif kind == "message_delta":
            usage.update(data.get("usage") or {})
    for index, pieces in partial.items():
        try:
            blocks[index]["input"] = json.loads("".join(pieces)) if "".join(pieces).strip() else {}
        except (ValueError, RecursionError):
            blocks[index]["input"] = "".join(pieces)
    return {"content": [blocks[index] for index in sorted(blocks)], "usage": usage or None}


def _answers(items: Any, asked: set[Any], pick: Any, key: Any) -> list[Any]:
    """What ``pick`` finds in a request's items that answers a call the model made and no earlier
    request answered (``key`` is its call id; an answered id leaves ``asked``)."""
    out = []
    for item in items if isinstance(items, list) else ():
        for found in pick(item) if isinstance(item, dict) else ():
            if key(found) in asked:
                asked.discard(key(found))
                out.append(found)
    return out


def _data(response: dict[str, Any]) -> list[dict[str, Any]]:
    """The JSON objects a streamed response's events carry."""
    return [
        event["data"]
        for event in response.get("events") or ()
        if isinstance(event.get("data"), dict)
    ]


_HISTORIES = {"openai": _chat, "openai-responses": _responses, "anthropic": _anthropic}
