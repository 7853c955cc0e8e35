"""LangChain messages: ``messages_to_dict`` (``{type, data}``), ``dumpd`` (``lc`` constructors),
flat ``model_dump``.

An AI message's calls come from ``tool_calls``, ``additional_kwargs.tool_calls``,
``additional_kwargs.function_call``, ``invalid_tool_calls`` (arguments kept as the raw string) and
``tool_use``/``tool_call`` content blocks, de-duplicated by id.
"""

from __future__ import annotations

from typing import Any

from ...trajectory import Trajectory
from ..builder import Builder, NotThisFormat, make_usage, text_of

FORMAT = "langchain"
READS = "messages"
RANK = 90
_KINDS = {
    "ai": "ai",
    "AIMessageChunk": "ai",
    "AIMessage": "ai",
    "tool": "tool",
    "ToolMessageChunk": "tool",
    "ToolMessage": "tool",
    "function": "function",
    "FunctionMessageChunk": "function",
    "FunctionMessage": "function",
    "human": "other",
    "system": "other",
    "chat": "other",
    "remove": "other",
    "developer": "other",
    "HumanMessage": "other",
    "SystemMessage": "other",
    "ChatMessage": "other",
    "RemoveMessage": "other",
    "HumanMessageChunk": "other",
    "SystemMessageChunk": "other",
    "ChatMessageChunk": "other",
}
_BLOCK_ARGS = {"tool_use": "input", "tool_call": "args"}
_USAGE_KEYS = (("input_tokens",), ("output_tokens",))


def read(doc: Any, *, auto: bool = False, details: bool = True) -> Trajectory:
    """Read LangChain messages (a list or one message) in any of the three serialisations."""
    if isinstance(doc, dict):
        doc = [doc]
    if not isinstance(doc, list):
        raise NotThisFormat("not a list of LangChain messages")
    if auto and not doc:
        raise NotThisFormat("no messages")
    return read_messages(doc, FORMAT, details)


def refuses(items: Any) -> bool:
    """Whether ``read(items, auto=True)`` surely refuses a list: empty, or item 0 not a mapping or
    of no LangChain message type (``lc`` constructors, type ``constructor``, are left to the
    reader). False for anything but a list: it cannot tell cheaply."""
    if not isinstance(items, list):
        return False
    if not items:
        return True
    kind = items[0].get("type") if isinstance(items[0], dict) else None
    return not isinstance(kind, str) or (kind not in _KINDS and kind != "constructor")


def read_messages(messages: list[Any], fmt: str, details: bool = True) -> Trajectory:
    """Read a LangChain message list into a Trajectory reported as format ``fmt``."""
    builder = Builder(details)
    for i, item in enumerate(messages):
        kind, data = _unpack(item, i)
        if kind == "ai":
            _ai(builder, data)
        elif kind == "tool":
            error = data.get("status") == "error"
            builder.result(data.get("content"), data.get("tool_call_id"), data.get("name"), error)
        elif kind == "function":
            builder.result(data.get("content"), None, data.get("name"))
    return builder.finish(fmt)


def _unpack(item: Any, i: int) -> tuple[str, dict[str, Any]]:
    """The message kind (ai, tool, function, other) and its fields, whichever serialisation it
    uses."""
    if not isinstance(item, dict):
        raise NotThisFormat(f"item {i} is not a mapping")
    if item.get("lc") == 1 and item.get("type") == "constructor":
        path = item.get("id")
        name, data = (path[-1] if isinstance(path, list) and path else None), item.get("kwargs")
    elif isinstance(item.get("data"), dict):
        name, data = item.get("type"), item["data"]
    else:
        name, data = item.get("type"), item
    kind = _KINDS.get(name) if isinstance(name, str) else None
    if kind is None or not isinstance(data, dict):
        raise NotThisFormat(f"item {i} is not a LangChain message (type {name!r})")
    return kind, data


def tool_message(value: Any) -> tuple[Any, Any, bool] | None:
    """A ``ToolMessage`` serialised any of the three ways (the flat ``model_dump`` only with its
    ``tool_call_id``): its content, call id and whether its status is ``error``; None for any other
    value."""
    if not isinstance(value, dict):
        return None
    if (
        not isinstance(value.get("data"), dict)
        and value.get("lc") != 1
        and "tool_call_id" not in value
    ):
        return None  # a tool's own {"type": "tool", ...} output is no message
    try:
        kind, data = _unpack(value, 0)
    except NotThisFormat:
        return None
    if kind != "tool" or "content" not in data:
        return None
    return data["content"], data.get("tool_call_id"), data.get("status") == "error"


def _ai(builder: Builder, data: dict[str, Any]) -> None:
    """One AI message: a turn with its usage, text and every call it records, each id once."""
    content = data.get("content")
    builder.turn(text_of(content), make_usage(data.get("usage_metadata"), *_USAGE_KEYS))
    seen: set[Any] = set()
    for name, args, call_id in _calls(data, content):
        if call_id is not None and not isinstance(
            call_id, (list, dict)
        ):  # a list or map id is no id (never pairs)
            if call_id in seen:
                continue
            seen.add(call_id)
        builder.call(name, args, call_id)


def _calls(data: dict[str, Any], content: Any) -> list[tuple[Any, Any, Any]]:
    """Every ``(name, args, id)`` an AI message records, in the order the fields are listed
    above."""
    found = [(c.get("name"), c.get("args"), c.get("id")) for c in _mappings(data, "tool_calls")]
    extra = data.get("additional_kwargs") or {}
    if not isinstance(extra, dict):
        raise NotThisFormat("an AI message's 'additional_kwargs' is not a mapping")
    for call in _mappings(extra, "tool_calls"):
        spec = call.get("function")
        spec = spec if isinstance(spec, dict) else {}
        found.append((spec.get("name"), spec.get("arguments"), call.get("id")))
    legacy = extra.get("function_call")
    if isinstance(legacy, dict):
        found.append((legacy.get("name"), legacy.get("arguments"), None))
    invalid = _mappings(data, "invalid_tool_calls")
    found += [(c.get("name"), c.get("args"), c.get("id")) for c in invalid if c.get("name")]
    if isinstance(content, list):
        for block in content:
            kind = block.get("type") if isinstance(block, dict) else None
            key = _BLOCK_ARGS.get(kind) if isinstance(kind, str) else None
            if key:
                found.append((block.get("name"), block.get(key), block.get("id")))
    return found


def _mappings(holder: dict[str, Any], key: str) -> list[dict[str, Any]]:
    """The list of mappings under ``key`` (none when missing or empty); any other value is not
    LangChain."""
    items = holder.get(key) or []
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        raise NotThisFormat(f"an AI message's '{key}' is not a list of mappings")
    return items
