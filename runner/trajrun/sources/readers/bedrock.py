"""Amazon Bedrock Converse: messages whose content blocks are one-key unions (``text``, ``toolUse``,
``toolResult``)."""

from __future__ import annotations

from typing import Any

from ...trajectory import Trajectory, Usage
from ..builder import Builder, NotThisFormat, as_list, make_usage, text_of

FORMAT = "bedrock"
READS = "messages"
RANK = 70
_INPUTS = ("inputTokens", "cacheReadInputTokens", "cacheWriteInputTokens")
_OUTPUTS = ("outputTokens",)


def read(doc: Any, *, auto: bool = False, details: bool = True) -> Trajectory:
    """Read Converse messages, one message, or a whole Converse response (``output.message``)."""
    messages, response_usage = _messages(doc)
    builder = Builder(details)
    for i, message in enumerate(messages):
        _message(builder, message, i, response_usage)
    if auto and not messages:
        raise NotThisFormat("no messages")
    return builder.finish(FORMAT)


def refuses(messages: Any) -> bool:
    """Whether ``read(messages, auto=True)`` surely refuses a list: empty, or message 0 not a user
    or assistant message with a list of blocks. False for anything but a list: it cannot tell
    cheaply."""
    if not isinstance(messages, list):
        return False
    if not messages:
        return True
    head = messages[0]
    return (
        not isinstance(head, dict)
        or head.get("role") not in ("user", "assistant")
        or not isinstance(head.get("content"), list)
    )


def _messages(doc: Any) -> tuple[list[Any], Usage | None]:
    """The message list, and the response usage when ``doc`` is a whole Converse response."""
    if isinstance(doc, dict) and isinstance(doc.get("output"), dict):
        message = doc["output"].get("message")
        if not isinstance(message, dict):
            raise NotThisFormat("'output' has no 'message'")
        return [message], make_usage(doc.get("usage"), _INPUTS, _OUTPUTS)
    messages = as_list(doc, lambda d: "role" in d and "content" in d)
    if messages is None:
        raise NotThisFormat(
            "not a list of {role, content} messages or a response with 'output.message'"
        )
    return messages, None


def _message(builder: Builder, message: Any, i: int, usage: Usage | None) -> None:
    """One message: an assistant one is a turn; ``toolUse`` blocks are calls, ``toolResult`` blocks
    results."""
    role = message.get("role") if isinstance(message, dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    if role not in ("user", "assistant") or not isinstance(content, list):
        raise NotThisFormat(
            f"message {i} is not a {{role: user|assistant, content: [blocks]}} message"
        )
    for block in content:
        if not isinstance(block, dict) or "type" in block:
            raise NotThisFormat(
                f"message {i} has a typed content block, not a Converse union block"
            )
    if role == "assistant":
        builder.turn(text_of(content), usage)
    for block in content:
        if "toolUse" in block:
            use = block["toolUse"]
            builder.call(use.get("name"), use.get("input"), use.get("toolUseId"))
        elif "toolResult" in block:
            res = block["toolResult"]
            builder.result(
                res.get("content"), res.get("toolUseId"), None, res.get("status") == "error"
            )
