"""trajrun's own trajectory (``trajrun show -o json``) and the Elixir LangChain
``Trajectory.to_map`` shape.

Own shape: ``{tool_calls: [{name, args, id?, turn?, result?, error?, has_result?, duration_ms?}],
turns?, usage?, answer?, nodes?, format?, wall_ms?}`` (``has_result: true`` marks a recorded
``null`` result); what ``Trajectory.to_dict()`` writes reads back equal (a recorded ``format`` is
kept, and detection keeps it when it names a known format, so a round trip keeps where the run came
from). A call without ``turn`` is its own turn. Elixir shape: ``{messages, tool_calls, token_usage:
{input, output}, metadata}``; its ``messages`` give turns, results and error flags (paired by order
and name: it has no ids).
"""

from __future__ import annotations

import math
from typing import Any

from ...trajectory import ToolCall, Trajectory, Usage
from ..builder import (
    Builder,
    NotThisFormat,
    check_depth,
    decode_args,
    make_usage,
    result_content,
    text_of,
)

FORMAT = "trajectory"
READS = "document"
RANK = 40
_FOREIGN_KEYS = frozenset({"role", "type", "content", "data", "kwargs", "parts"})


def refuses(doc: Any) -> bool:
    """Whether ``read(doc)`` surely refuses: no top-level ``tool_calls`` list. Detection skips the
    reader then."""
    return not isinstance(doc, dict) or not isinstance(doc.get("tool_calls"), list)


def read(doc: Any, *, auto: bool = False, details: bool = True) -> Trajectory:
    """Read trajrun's own shape, or the Elixir shape when ``messages`` is there too."""
    if not isinstance(doc, dict) or not isinstance(doc.get("tool_calls"), list):
        raise NotThisFormat("no top-level 'tool_calls' list")
    if _FOREIGN_KEYS & doc.keys():
        raise NotThisFormat("a message (it has 'role', 'type' or 'content'), not a trajectory")
    for i, call in enumerate(doc["tool_calls"]):
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            raise NotThisFormat(f"tool_calls[{i}] has no string 'name'")
    if isinstance(doc.get("messages"), list):
        return _elixir(doc, details)
    return _own(doc)


def _own(doc: dict[str, Any]) -> Trajectory:
    """trajrun's own shape, field for field."""
    calls = []
    turn = -1
    for position, raw in enumerate(doc["tool_calls"]):
        given = raw.get("turn")
        turn = given if isinstance(given, int) and not isinstance(given, bool) else turn + 1
        result = result_content(raw.get("result"))
        error = raw.get("error")
        args = decode_args(raw.get("args", raw.get("arguments")))
        has_result = result is not None or raw.get("has_result") is True
        calls.append(
            ToolCall(
                raw["name"],
                args,
                raw.get("id"),
                turn,
                position,
                result,
                has_result,
                error if isinstance(error, bool) else None,
                _milliseconds(raw.get("duration_ms")),
            )
        )
    turns = doc.get("turns")
    if not isinstance(turns, int) or isinstance(turns, bool):
        turns = turn + 1
    fmt = doc.get("format")
    names = [call.name for call in calls]
    check_depth(names, [call.args for call in calls], "arguments")
    check_depth(names, [call.result for call in calls], "result")
    return Trajectory(
        tuple(calls),
        turns,
        _usage(doc.get("usage")),
        _text(doc.get("answer")),
        _nodes(doc.get("nodes")),
        fmt if isinstance(fmt, str) else FORMAT,
        _milliseconds(doc.get("wall_ms")),
    )


def _milliseconds(raw: Any) -> float | None:
    """A recorded time in milliseconds (``duration_ms``, ``wall_ms``); anything but a finite number
    is none."""
    if not isinstance(raw, (int, float)) or isinstance(raw, bool):
        return None
    try:
        value = float(raw)
    except OverflowError:  # an integer past a float's range
        return None
    return value if math.isfinite(value) else None


def _elixir(doc: dict[str, Any], details: bool) -> Trajectory:
    """The Elixir ``to_map`` shape: messages when there are any, else the flat call list, one turn
    each."""
    builder = Builder(details)
    messages = doc["messages"]
    if not messages:
        for call in doc["tool_calls"]:
            builder.turn()
            builder.call(call["name"], call.get("arguments"))
    for message in messages:
        if not isinstance(message, dict):
            raise NotThisFormat("a 'messages' entry is not a mapping")
        if message.get("role") == "assistant":
            builder.turn(text_of(message.get("content")))
            for call in _mappings(message, "tool_calls"):
                builder.call(call.get("name"), call.get("arguments"), call.get("call_id"))
        for res in _mappings(message, "tool_results"):
            builder.result(
                res.get("content"),
                res.get("tool_call_id"),
                res.get("name"),
                bool(res.get("is_error")),
            )
    return builder.finish(FORMAT, _usage(doc.get("token_usage")))


def _mappings(message: dict[str, Any], key: str) -> list[dict[str, Any]]:
    """A message's list of mappings under ``key`` (none when missing or empty); anything else is not
    this format."""
    items = message.get(key) or []
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        raise NotThisFormat(f"a message's '{key}' is not a list of mappings")
    return items


def _usage(raw: Any) -> Usage | None:
    """``{input_tokens, output_tokens}`` (own shape) or ``{input, output}`` (Elixir); ``null`` is no
    usage."""
    return make_usage(raw, ("input_tokens", "input"), ("output_tokens", "output"))


def _nodes(raw: Any) -> tuple[tuple[str, ...], ...] | None:
    """Graph steps per turn, when recorded."""
    if not isinstance(raw, list):
        return None
    return tuple(tuple(str(node) for node in step) for step in raw if isinstance(step, list))


def _text(raw: Any) -> str | None:
    """The answer when it is a string."""
    return raw if isinstance(raw, str) else None
