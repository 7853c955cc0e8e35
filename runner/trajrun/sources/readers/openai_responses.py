"""OpenAI Responses API: an item list (``input`` and/or ``output``), results paired by ``call_id``.

A turn is a run of consecutive assistant-side items; built-in ``*_call`` items (web search, MCP,
shell, …) are calls named by ``name`` or else by the type without ``_call``.
"""

from __future__ import annotations

from typing import Any

from ...trajectory import Trajectory
from ..builder import Builder, NotThisFormat, make_usage, text_of

FORMAT = "openai-responses"
READS = "messages"
RANK = 80
_INPUTS = ("input_tokens",)
_OUTPUTS = ("output_tokens",)
_SKIPPED = frozenset({"item_reference", "compaction"})


def read(doc: Any, *, auto: bool = False, details: bool = True) -> Trajectory:
    """Read Responses items; detection (``auto``) needs at least one typed item."""
    items, usage = _items(doc)
    if auto:
        _require_typed(items)
    builder = Builder(details)
    in_turn = False
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise NotThisFormat(f"item {i} is not a mapping")
        in_turn = _item(builder, item, i, in_turn)
    return builder.finish(FORMAT, usage)


def refuses(items: Any) -> bool:
    """Whether ``read(items, auto=True)`` surely refuses a list: it has no typed item before its
    first Chat Completions message. False for anything but a list: it cannot tell cheaply."""
    return isinstance(items, list) and _untyped(items) is not None


def _require_typed(items: list[Any]) -> None:
    """Detection needs a typed item before any Chat Completions message (role ``tool`` or
    ``tool_calls``)."""
    untyped = _untyped(items)
    if untyped is not None:
        raise NotThisFormat(
            f"item {untyped} is a Chat Completions message ('tool_calls' or role 'tool')"
            if untyped >= 0
            else "no typed items (function_call, message, …)"
        )


def _untyped(items: list[Any]) -> int | None:
    """The index of the Chat Completions message before any typed item (-1: no typed item at all),
    or None when a typed item comes first; the reason is worded only when the reader raises
    (detection asks on every record)."""
    for i, item in enumerate(items):
        if isinstance(item, dict):
            if "type" in item:
                return None
            if "tool_calls" in item or item.get("role") == "tool":
                return i
    return -1


def _items(doc: Any) -> tuple[list[Any], Any]:
    """The items of a list, a request (``input``) and/or a response (``output`` with ``usage``)."""
    if isinstance(doc, list):
        return doc, None
    if not isinstance(doc, dict):
        raise NotThisFormat("not a list of items or a response")
    inputs, outputs = doc.get("input"), doc.get("output")
    if not isinstance(inputs, list) and not isinstance(outputs, list):
        if "type" in doc:
            return [doc], None
        raise NotThisFormat("no 'input' or 'output' item list")
    items = (inputs if isinstance(inputs, list) else []) + (
        outputs if isinstance(outputs, list) else []
    )
    return items, make_usage(doc.get("usage"), _INPUTS, _OUTPUTS)


def _item(builder: Builder, item: dict[str, Any], i: int, in_turn: bool) -> bool:
    """Read one item; True when it is assistant-side (it opens or continues a turn)."""
    kind = item.get("type")
    if kind is None or kind == "message":
        return _message(builder, item, i, in_turn)
    if not isinstance(kind, str):
        raise NotThisFormat(f"item {i} has a non-string type")
    if kind == "function_call_output" or kind.endswith("_call_output"):
        builder.result(item.get("output"), item.get("call_id"))
        return False
    if kind == "reasoning" or kind.endswith("_call"):
        if not in_turn:
            builder.turn()
        if kind != "reasoning":
            _call(builder, item, kind)
        return True
    if kind in _SKIPPED:
        return in_turn
    raise NotThisFormat(f"item {i} has type {kind!r}, not a Responses API item")


def _message(builder: Builder, item: dict[str, Any], i: int, in_turn: bool) -> bool:
    """A message item or an easy ``{role, content}`` message; an assistant one is assistant-side."""
    role = item.get("role")
    if not isinstance(role, str):
        raise NotThisFormat(f"item {i} has neither 'type' nor 'role'")
    if role != "assistant":
        return False
    if not in_turn:
        builder.turn()
    builder.say(text_of(item.get("content")))
    return True


def _call(builder: Builder, item: dict[str, Any], kind: str) -> None:
    """A function, custom or built-in call; a built-in one carrying its ``output`` is its own
    result."""
    builtin = kind not in ("function_call", "custom_tool_call")
    name = item.get("name") or (kind[: -len("_call")] if builtin else None)
    if kind == "custom_tool_call":
        args = item.get("input")
    elif "arguments" in item:
        args = item["arguments"]
    else:
        args = item.get("action", {})
    call_id = item.get("call_id") or item.get("id")
    builder.call(name, args, call_id)
    if builtin and item.get("output") is not None:
        builder.result(item["output"], call_id)
