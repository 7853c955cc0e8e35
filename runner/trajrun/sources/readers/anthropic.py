"""Anthropic Messages: a history of ``{role, content}`` with ``tool_use`` blocks, or a whole Message
response."""

from __future__ import annotations

from typing import Any

from ...trajectory import Trajectory, Usage
from ..builder import Builder, NotThisFormat, as_list, make_usage, text_of

FORMAT = "anthropic"
READS = "messages"
RANK = 50
CALL_TYPES = frozenset({"tool_use", "server_tool_use", "mcp_tool_use"})
_MARKERS = frozenset({"thinking", "redacted_thinking"})
_INPUTS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
_OUTPUTS = ("output_tokens",)


def read(doc: Any, *, auto: bool = False, details: bool = True) -> Trajectory:
    """Read an Anthropic history; detection (``auto``) also needs a tool or thinking block or a
    Message response."""
    messages = as_list(doc, lambda d: "role" in d and "content" in d)
    if messages is None:
        raise NotThisFormat("not a list of {role, content} messages or a Message")
    builder = Builder(details)
    evidence = isinstance(doc, dict) and doc.get("type") == "message"
    for i, message in enumerate(messages):
        evidence |= _message(builder, message, i)
    if auto and not evidence:
        raise NotThisFormat(
            "no tool_use, tool_result or thinking blocks and not a Message response"
        )
    return builder.finish(FORMAT)


def refuses(messages: Any) -> bool:
    """Whether ``read(messages, auto=True)`` surely refuses: neither a list nor a mapping; or, in a
    list, a message with a role other than user or assistant (or content neither text nor blocks)
    comes before any content blocks or usage, or no message has blocks (so no evidence). False when
    it cannot tell cheaply."""
    if not isinstance(messages, list):
        return not isinstance(messages, dict)
    for message in messages:
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            return True
        content = message.get("content")
        if not isinstance(content, str):
            return not isinstance(content, list)
        if message.get("usage") is not None:  # make_usage sums it, and may raise (infinite)
            return False
    return True


def _message(builder: Builder, message: Any, i: int) -> bool:
    """Read one message; True when it holds a block only Anthropic writes."""
    role = message.get("role") if isinstance(message, dict) else None
    if role not in ("user", "assistant"):
        raise NotThisFormat(f"message {i} has role {role!r}, expected 'user' or 'assistant'")
    content = message.get("content")
    if not isinstance(content, (str, list)):
        raise NotThisFormat(
            f"message {i} has content {type(content).__name__}, expected a string or blocks"
        )
    if role == "assistant":
        builder.turn(text_of(content), _usage(message.get("usage")))
    return isinstance(content, list) and _blocks(builder, content, i)


def _blocks(builder: Builder, blocks: list[Any], i: int) -> bool:
    """Calls and results from content blocks, in order; True when an Anthropic-only block was
    seen."""
    evidence = False
    for block in blocks:
        kind = block.get("type") if isinstance(block, dict) else None
        if not isinstance(kind, str):
            raise NotThisFormat(f"message {i} has a content block without 'type'")
        if kind in CALL_TYPES:
            builder.call(block.get("name"), block.get("input"), block.get("id"))
        elif kind == "tool_result" or kind.endswith("_tool_result"):
            builder.result(block.get("content"), block.get("tool_use_id"), None, _is_error(block))
        elif kind not in _MARKERS:
            continue
        evidence = True
    return evidence


def _is_error(block: dict[str, Any]) -> bool:
    """``is_error`` (false when missing), or a server tool result whose content is an ``*_error``
    object."""
    content = block.get("content")
    if isinstance(content, dict) and str(content.get("type", "")).endswith("_error"):
        return True
    return bool(block.get("is_error", False))


def _usage(raw: Any) -> Usage | None:
    """A Message's usage: input counts cache writes and reads too."""
    return make_usage(raw, _INPUTS, _OUTPUTS)
