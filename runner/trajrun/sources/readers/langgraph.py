"""LangGraph checkpoints and states: ``channel_values.messages`` or ``values.messages``, read as
LangChain messages.

Accepted: a checkpoint, a ``get_tuple`` dump (``{checkpoint: …}``), a legacy ``"json"`` serde
payload (``{type: json, payload: …}``, messages as ``lc`` constructors), and a state snapshot or
LangGraph Server thread state (``{values: …}``). A state without ``messages`` is an empty run.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ...trajectory import Trajectory
from ..builder import NotThisFormat
from . import openai
from .langchain import read_messages

FORMAT = "langgraph"
READS = "document"
RANK = 30
_STATE_KEYS = frozenset(
    {"next", "config", "checkpoint", "metadata", "tasks", "created_at", "parent_config"}
)


def refuses(doc: Any) -> bool:
    """Whether ``read(doc)`` surely refuses: not a mapping holding channels or a state. Detection
    skips it then."""
    return not isinstance(doc, dict) or _channels(doc) is None


def read(doc: Any, *, auto: bool = False, details: bool = True) -> Trajectory:
    """Read the messages of a LangGraph checkpoint or state."""
    state = _state(doc)
    messages = state.get("messages")
    if messages is None:
        return Trajectory(format=FORMAT)
    if not isinstance(messages, list):
        raise NotThisFormat("'messages' is not a list")
    try:
        return read_messages(messages, FORMAT, details)
    except NotThisFormat as exc:
        return _as_openai(messages, exc, details)


def _state(doc: Any) -> dict[str, Any]:
    """The mapping that holds the graph's channels: ``channel_values`` or a state's ``values``."""
    if not isinstance(doc, dict):
        raise NotThisFormat("not a mapping")
    channels = _channels(doc)
    if channels is None:
        raise NotThisFormat("no 'channel_values' or state 'values' mapping")
    return channels


def _channels(doc: dict[str, Any]) -> dict[str, Any] | None:
    """``channel_values`` (of the document, its checkpoint or its payload), or a state's ``values``;
    else None."""
    for holder in (doc, doc.get("checkpoint"), doc.get("payload")):
        if isinstance(holder, dict) and isinstance(holder.get("channel_values"), dict):
            return holder["channel_values"]
    values = doc.get("values")
    if isinstance(values, dict) and ("messages" in values or _STATE_KEYS & doc.keys()):
        return values
    return None


def _as_openai(messages: list[Any], langchain_error: NotThisFormat, details: bool) -> Trajectory:
    """Messages a graph kept as plain ``{role, content}`` dicts; the LangChain reason if they are
    not."""
    try:
        trajectory = openai.read(messages, details=details)
    except NotThisFormat:
        raise NotThisFormat(f"messages: {langchain_error.reason}") from None
    return dataclasses.replace(trajectory, format=FORMAT)
