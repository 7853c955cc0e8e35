"""OpenAI Chat Completions: a messages list, one message, or a whole completion (``choices[0].message``)."""

from __future__ import annotations

from typing import Any

from ..trajectory import Trajectory
from ._build import Builder, NotThisFormat, as_list, make_usage, text_of

FORMAT = "openai"
_INPUTS = ("prompt_tokens",)
_OUTPUTS = ("completion_tokens",)


def read(doc: Any, *, auto: bool = False) -> Trajectory:
    """Read Chat Completions messages; every item needs a ``role``. The generic last resort of detection."""
    messages, usage = _messages(doc)
    builder = Builder()
    for i, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if not isinstance(role, str):
            raise NotThisFormat(f"item {i} has no 'role'")
        if role == "assistant":
            _assistant(builder, message)
        elif role == "tool":
            builder.result(message.get("content"), message.get("tool_call_id"), message.get("name"))
        elif role == "function":
            builder.result(message.get("content"), None, message.get("name"))
    return builder.finish(FORMAT, usage)


def _messages(doc: Any) -> tuple[list[Any], Any]:
    """The message list and the response-level usage (a completion's ``usage``), if any."""
    if isinstance(doc, dict) and isinstance(doc.get("choices"), list):
        choices = doc["choices"]
        message = choices[0].get("message") if choices and isinstance(choices[0], dict) else None
        if not isinstance(message, dict):
            raise NotThisFormat("'choices' has no first choice with a 'message'")
        return [message], make_usage(doc.get("usage"), _INPUTS, _OUTPUTS)
    messages = as_list(doc, lambda d: "role" in d)
    if messages is None:
        raise NotThisFormat("not a list of messages with 'role', one message, or a completion with 'choices'")
    return messages, None


def _assistant(builder: Builder, message: dict[str, Any]) -> None:
    """One assistant turn: its text, its ``tool_calls`` (function or custom), its legacy ``function_call``."""
    builder.turn(text_of(message.get("content")))
    for call in message.get("tool_calls") or ():
        if not isinstance(call, dict):
            raise NotThisFormat("a 'tool_calls' entry is not a mapping")
        spec = call.get("function") or call.get("custom")
        if isinstance(spec, dict):
            builder.call(spec.get("name"), spec.get("arguments", spec.get("input")), call.get("id"))
        else:
            builder.call(call.get("name"), call.get("args", call.get("arguments")), call.get("id"))
    legacy = message.get("function_call")
    if isinstance(legacy, dict):
        builder.call(legacy.get("name"), legacy.get("arguments"))
