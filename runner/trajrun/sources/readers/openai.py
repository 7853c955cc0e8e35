"""OpenAI Chat Completions: a messages list, one message, or a whole completion
(``choices[0].message``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...trajectory import Trajectory
from ..builder import Builder, NotThisFormat, as_list, make_usage, text_of

FORMAT = "openai"
READS = "messages"
RANK = 100  # the last resort: any list of messages with a role
_INPUTS = ("prompt_tokens",)
_OUTPUTS = ("completion_tokens",)
_ABSENT = object()


def read(doc: Any, *, auto: bool = False, details: bool = True) -> Trajectory:
    """Read Chat Completions messages; every item needs a ``role``. The generic last resort of
    detection."""
    messages, usage = _messages(doc)
    builder = Builder(details)
    call, result, turn = builder.call, builder.result, builder.turn  # once, not per message
    for message in messages:  # no enumerate: an error finds its item's index (_index)
        role = message.get("role") if isinstance(message, dict) else None
        if role == "tool":
            if details:  # else the builder pairs no result
                result(message.get("content"), message.get("tool_call_id"), message.get("name"))
        elif role == "assistant":
            content = message.get("content")
            turn(text_of(content) if content else None)  # messages carry no usage of their own
            calls = message.get("tool_calls")
            if calls and not isinstance(calls, (list, tuple)):
                raise NotThisFormat(
                    f"item {_index(messages, message)} has 'tool_calls' that is not a list"
                )
            for entry in calls or ():
                spec = entry.get("function") if type(entry) is dict else None
                if type(spec) is dict and "arguments" in spec:
                    call(spec.get("name"), spec["arguments"], entry.get("id"))
                else:
                    _call(call, entry)
            legacy = message.get("function_call")
            if legacy is not None and isinstance(legacy, dict):  # None first: most have none
                call(legacy.get("name"), legacy.get("arguments"))
        elif not isinstance(role, str):
            raise NotThisFormat(f"item {_index(messages, message)} has no 'role'")
        elif role == "function":
            result(message.get("content"), None, message.get("name"))
    return builder.finish(FORMAT, usage)


def refuses(doc: Any) -> bool:
    """Whether ``read(doc, auto=True)`` surely refuses: neither a list nor a mapping. Anything else
    it can tell only by reading."""
    return not isinstance(doc, (list, dict))


def _index(messages: list[Any], message: Any) -> int:
    """The index of ``message`` itself (not an equal one) in ``messages``."""
    return next(i for i, item in enumerate(messages) if item is message)


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
        raise NotThisFormat(
            "not a list of messages with 'role', one message, or a completion with 'choices'"
        )
    return messages, None


def _call(add: Callable[..., None], call: Any) -> None:
    """One ``tool_calls`` entry other than a function call with ``arguments``: custom, or a loose
    shape."""
    if not isinstance(call, dict):
        raise NotThisFormat("a 'tool_calls' entry is not a mapping")
    spec = call.get("function") or call.get("custom")
    if isinstance(spec, dict):
        args = spec.get("arguments", _ABSENT)
        add(spec.get("name"), spec.get("input") if args is _ABSENT else args, call.get("id"))
    else:
        add(call.get("name"), call.get("args", call.get("arguments")), call.get("id"))
