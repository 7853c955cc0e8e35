"""Shared reader machinery: argument decoding, result normalising, call/result pairing and turn bookkeeping.

Every format reader walks its history once and feeds a :class:`Builder`; the builder owns the rules
the contract fixes for all formats, so no reader decodes, pairs or sums on its own.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any

from ..trajectory import ToolCall, Trajectory, Usage

_TEXT_TYPES = frozenset({"text", "input_text", "output_text"})
_NO_JSON = object()
_DECODE = json.JSONDecoder().decode


class NotThisFormat(Exception):
    """Raised by a reader when a document is not in its format; ``reason`` says why in a few words."""

    def __init__(self, reason: str) -> None:
        """Keep the reason for the detection report."""
        super().__init__(reason)
        self.reason = reason


def decode_args(raw: Any) -> dict[str, Any] | str:
    """Arguments per the contract: a dict as is, ``""``/missing as ``{}``, a JSON object string decoded.

    Anything else (invalid JSON, a JSON list or number) stays the raw string; a non-string,
    non-mapping value is kept as its JSON text so it still compares as a string.
    """
    if isinstance(raw, dict):
        return raw
    if raw is None or raw == "":
        return {}
    if not isinstance(raw, str):
        return json.dumps(raw)
    if raw.lstrip()[:1] != "{":
        return raw
    try:
        value = _DECODE(raw)
    except ValueError:
        return raw
    return value if isinstance(value, dict) else raw


def _block_text(block: Any) -> str | None:
    """The text of a text content block (typed or Bedrock-style ``{text}``), else None."""
    if not isinstance(block, dict):
        return block if isinstance(block, str) else None
    kind = block.get("type")
    text = block.get("text")
    if isinstance(text, str) and (kind in _TEXT_TYPES or (kind is None and len(block) == 1)):
        return text
    return None


def _block_json(block: Any) -> Any:
    """The object of a single JSON block (``{"json": …}`` or ``{"type": "json", "json": …}``)."""
    if isinstance(block, dict) and "json" in block and block.get("type", "json") == "json":
        return block["json"]
    return _NO_JSON


def result_content(content: Any) -> Any:
    """A tool result as recorded: a list of text blocks joined with no separator, one JSON block as its object."""
    if not isinstance(content, list):
        return content
    texts = [_block_text(b) for b in content]
    if None not in texts:
        return "".join(texts)  # type: ignore[arg-type]
    if len(content) == 1:
        value = _block_json(content[0])
        if value is not _NO_JSON:
            return value
    return content


def text_of(content: Any) -> str | None:
    """The text of a message's content: a string, or its text blocks joined; None when it has none."""
    if isinstance(content, str):
        return content or None
    if isinstance(content, list):
        joined = "".join(t for t in map(_block_text, content) if t)
        return joined or None
    return None


def make_usage(raw: Any, inputs: Iterable[str], outputs: Iterable[str]) -> Usage | None:
    """Usage from a provider mapping: the named input keys summed, the named output keys summed.

    None when ``raw`` is not a mapping or carries none of the keys (so "no usage" stays distinct from 0).
    """
    if not isinstance(raw, Mapping):
        return None
    found = False
    totals = [0, 0]
    for slot, keys in enumerate((inputs, outputs)):
        for key in keys:
            value = raw.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                totals[slot] += int(value)
                found = True
    return Usage(totals[0], totals[1]) if found else None


class Builder:
    """Collects one run's turns, calls and results in history order and builds the Trajectory.

    Results pair with calls by id first, then by order and name (the first call of that name
    still waiting for a result), then by order alone when the result names no tool.
    """

    __slots__ = ("_calls", "_by_id", "_waiting", "_waiting_all", "_usages", "answer")

    def __init__(self) -> None:
        """Start with no turns and no calls."""
        self._calls: list[list[Any]] = []
        self._by_id: dict[str, int] = {}
        self._waiting: dict[str, deque[int]] = {}
        self._waiting_all: deque[int] = deque()
        self._usages: list[Usage | None] = []
        self.answer: str | None = None

    def turn(self, text: str | None = None, usage: Usage | None = None) -> None:
        """Start an assistant turn; its text (if any) becomes the answer so far."""
        self._usages.append(usage)
        if text:
            self.answer = text

    def say(self, text: str | None) -> None:
        """Record assistant text inside the current turn."""
        if text:
            self.answer = text

    def call(self, name: Any, args: Any, call_id: Any = None) -> None:
        """Add a tool call to the current turn (starting one if the history opened with a call)."""
        if not isinstance(name, str):
            raise NotThisFormat(f"tool call {len(self._calls)} has no string name")
        if not self._usages:
            self._usages.append(None)
        index = len(self._calls)
        self._calls.append([name, decode_args(args), call_id, len(self._usages) - 1, None, False, None])
        if call_id is not None:
            self._by_id.setdefault(call_id, index)
        self._waiting.setdefault(name, deque()).append(index)
        self._waiting_all.append(index)

    def result(self, content: Any, call_id: Any = None, name: Any = None, error: bool | None = None) -> None:
        """Pair a tool result with its call; a result that pairs with nothing is ignored."""
        index = self._by_id.get(call_id) if call_id is not None else None
        if index is None or self._calls[index][5]:
            queue = self._waiting.get(name) if name is not None else self._waiting_all
            index = _next_waiting(queue, self._calls)
        if index is None:
            return
        entry = self._calls[index]
        entry[4], entry[5], entry[6] = result_content(content), True, error

    def finish(self, fmt: str, run_usage: Usage | None = None) -> Trajectory:
        """The Trajectory: a run-level usage wins, else the turns' usage summed when every turn has one."""
        calls = tuple(
            ToolCall(name, args, cid, turn, pos, res, has, err)
            for pos, (name, args, cid, turn, res, has, err) in enumerate(self._calls)
        )
        usage = run_usage if run_usage is not None else _sum_usage(self._usages)
        return Trajectory(calls, len(self._usages), usage, self.answer, None, fmt)


def _next_waiting(queue: deque[int] | None, calls: list[list[Any]]) -> int | None:
    """Pop the first call in ``queue`` that has no result yet."""
    while queue:
        index = queue.popleft()
        if not calls[index][5]:
            return index
    return None


def _sum_usage(usages: list[Usage | None]) -> Usage | None:
    """The turns' usage summed; None when there are no turns or some turn has none."""
    if not usages or None in usages:
        return None
    total = Usage(0, 0)
    for usage in usages:
        total += usage  # type: ignore[operator]
    return total


def as_list(doc: Any, is_message: Any) -> list[Any] | None:
    """``doc`` as a message list: a list as is, a single message (``is_message(doc)``) as a one-item list."""
    if isinstance(doc, list):
        return doc
    if isinstance(doc, dict) and is_message(doc):
        return [doc]
    return None


def describe(doc: Any) -> str:
    """A short description of a document's top level, for error messages."""
    if isinstance(doc, dict):
        keys = list(doc)
        shown = ", ".join(map(str, keys[:6])) + (", …" if len(keys) > 6 else "")
        return f"a mapping with keys {shown}" if keys else "an empty mapping"
    if isinstance(doc, list):
        return f"a list of {len(doc)} item{'s' if len(doc) != 1 else ''}"
    if doc is None:
        return "null"
    kind = "string" if isinstance(doc, str) else "boolean" if isinstance(doc, bool) else "number"
    return f"a {kind} ({str(doc)[:40]!r})"
