"""Shared reader machinery: argument decoding, result normalising, call/result pairing and turn
bookkeeping.

Every format reader walks its history once and feeds a :class:`Builder`; the builder owns the rules
the contract fixes for all formats, so no reader decodes, pairs or sums on its own.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from itertools import repeat
from json.scanner import make_scanner
from math import isfinite
from typing import Any

from ..errors import SourceError
from ..trajectory import ToolCall, Trajectory, Usage, rows_as
from ..yaml_core import MAX_DEPTH

_TEXT_TYPES = frozenset({"text", "input_text", "output_text"})
_NO_JSON = object()
_SCAN = make_scanner(json.JSONDecoder())  # type: ignore[arg-type]  # typeshed: a scanner
_JSON_SPACE = " \t\n\r"
_DICT_ONLY = frozenset({dict})
_FLAT = frozenset({str, int, float, bool, type(None)})


class TooDeep(SourceError):
    """A call's arguments or result nest past ``MAX_DEPTH``: a source error whatever the format
    (detection stops), which ``read_trajectory`` gives the source's name."""


class NotOneRun(Exception):
    """A document in a reader's format that is not one readable run (an OpenTelemetry export of
    several runs): detection stops here with the reason instead of trying the next format."""

    def __init__(self, reason: str) -> None:
        """Keep the reason for the error message."""
        super().__init__(reason)
        self.reason = reason


class NotThisFormat(Exception):
    """Raised by a reader when a document is not in its format; ``reason`` says why in a few
    words."""

    def __init__(self, reason: str) -> None:
        """Keep the reason for the detection report."""
        super().__init__(reason)
        self.reason = reason


def decode_args(raw: Any) -> dict[str, Any] | str:
    """Arguments per the contract: a dict as is, ``""``/missing as ``{}``, a JSON object string
    decoded.

    Anything else (invalid JSON, a JSON list or number) stays the raw string; a non-string,
    non-mapping value is kept as its JSON text so it still compares as a string."""
    if isinstance(raw, str):
        if raw[:1] == "{":
            return _decode_object(raw, 0)
        if not raw:
            return {}
        start = len(raw) - len(raw.lstrip(_JSON_SPACE))
        return _decode_object(raw, start) if raw[start : start + 1] == "{" else raw
    if isinstance(raw, dict):
        return raw
    return {} if raw is None else json.dumps(raw)


def _decode_object(raw: str, start: int) -> dict[str, Any] | str:
    """The object whose text starts at ``start`` (JSON whitespace only after it), else the raw
    string.

    Calls the C scanner directly: ``json.loads`` costs three Python frames per string around the
    same scan."""
    try:
        value, end = _SCAN(raw, start)
    except (
        ValueError,
        StopIteration,
        RecursionError,
    ):  # nested past the recursion limit: kept as text too
        return raw
    if end != len(raw) and raw[end:].strip(_JSON_SPACE):
        return raw
    return value


def _decode_all(raws: Sequence[Any]) -> list[Any]:
    """``decode_args`` of every item.

    The usual list (every item the exact text of one JSON object) goes through the C scanner in one
    ``map``; any other item makes the whole list take ``decode_args`` item by item. (The scanner's
    StopIteration, for text with no value at 0, ends the ``map`` early: hence the length check.)
    """
    try:
        scanned = list(map(_SCAN, raws, repeat(0)))
    except (ValueError, TypeError, RecursionError):
        return list(map(decode_args, raws))
    if len(scanned) == len(raws) and scanned:
        values, ends = zip(*scanned, strict=True)
        if list(ends) == list(map(len, raws)) and set(map(type, values)) <= _DICT_ONLY:
            return list(values)
    return list(map(decode_args, raws))


def _block_text(block: Any) -> str | None:
    """The text of a text content block (typed or Bedrock-style ``{text}``), else None."""
    if not isinstance(block, dict):
        return block if isinstance(block, str) else None
    kind = block.get("type")
    text = block.get("text")
    if not isinstance(text, str):
        return None
    return (
        text
        if (isinstance(kind, str) and kind in _TEXT_TYPES) or (kind is None and len(block) == 1)
        else None
    )


def _block_json(block: Any) -> Any:
    """The object of a single JSON block (``{"json": …}`` or ``{"type": "json", "json": …}``)."""
    if isinstance(block, dict) and "json" in block and block.get("type", "json") == "json":
        return block["json"]
    return _NO_JSON


def result_content(content: Any) -> Any:
    """A tool result as recorded: a list of text blocks joined with no separator, one JSON block as
    its object."""
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
    """The text of a message's content: a string, or its text blocks joined; None when it has
    none."""
    if isinstance(content, str):
        return content or None
    if isinstance(content, list):
        joined = "".join(t for t in map(_block_text, content) if t)
        return joined or None
    return None


def make_usage(raw: Any, inputs: Iterable[str], outputs: Iterable[str]) -> Usage | None:
    """Usage from a provider mapping: the named input keys summed, the named output keys summed.

    None when ``raw`` is not a mapping or carries none of the keys (so "no usage" stays distinct
    from 0); NaN and infinities count as missing."""
    if not isinstance(raw, Mapping):
        return None
    found = False
    totals = [0, 0]
    for slot, keys in enumerate((inputs, outputs)):
        for key in keys:
            value = raw.get(key)
            if (isinstance(value, int) and not isinstance(value, bool)) or (
                type(value) is float and isfinite(value)
            ):
                totals[slot] += int(value)
                found = True
    return Usage(totals[0], totals[1]) if found else None


class Builder:
    """Collects one run's turns, calls and results in history order and builds the Trajectory.

    Results pair with calls made before them: by id first, then by order and name (the first call of
    that name still waiting for a result), then by order alone when the result names no tool. Calls
    and results are only recorded as the reader walks; names are checked, arguments decoded and
    results paired in :meth:`finish`, each in one pass, so a reader that gives up half-way (format
    detection) pays for none of it and the per-call cost while walking stays small. With
    ``details=False`` (a caller that reads neither), results stay unpaired and arguments undecoded
    where all are text (neither can fail then: an id that cannot be hashed pairs with nothing, text
    that is not one JSON object stays text)."""

    __slots__ = (
        "_names",
        "_args",
        "_ids",
        "_turns",
        "_pending",
        "_queues",
        "_queued",
        "_usages",
        "answer",
        "_details",
    )

    def __init__(self, details: bool = True) -> None:
        """Start with no turns and no calls; ``details=False``: arguments and results unread
        (``read_trajectory``)."""
        self._details = details
        self._names: list[Any] = []
        self._args: list[Any] = []
        self._ids: list[Any] = []
        self._turns: list[int] = []
        self._pending: list[tuple[Any, Any, Any, bool | None, int]] = []
        self._queues: dict[Any, deque[int]] = {}
        self._queued = 0
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
        usages = self._usages
        if not usages:
            usages.append(None)
        self._names.append(name)
        self._args.append(args)
        self._ids.append(call_id)
        self._turns.append(len(usages) - 1)

    def result(
        self, content: Any, call_id: Any = None, name: Any = None, error: bool | None = None
    ) -> None:
        """Record a tool result; :meth:`finish` pairs it with a call made before it, or drops it."""
        self._pending.append((content, call_id, name, error, len(self._names)))

    def finish(self, fmt: str, run_usage: Usage | None = None) -> Trajectory:
        """The Trajectory: a run-level usage wins, else the turns' usage summed when every turn has
        one."""
        names = self._names
        if not all(map(isinstance, names, repeat(str))):
            bad = next(i for i, name in enumerate(names) if not isinstance(name, str))
            raise NotThisFormat(f"tool call {bad} has no string name")
        count = len(names)
        results: list[Any] = [None] * count
        has_result = [False] * count
        errors: list[bool | None] = [None] * count
        lean = not self._details
        if self._pending and not lean:
            self._pair(results, has_result, errors)
        raws = self._args
        # text never fails to decode (it stays text); another value is dumped as JSON, which can
        # fail: decoded even lean
        args = raws if lean and all(map(isinstance, raws, repeat(str))) else _decode_all(raws)
        columns = (
            names,
            args,
            self._ids,
            self._turns,
            range(count),
            results,
            has_result,
            errors,
            repeat(None),
        )  # no durations: trace readers set them afterwards
        usage = run_usage if run_usage is not None else _sum_usage(self._usages)
        if not lean:
            _check_depths(names, raws, args, results)
        return Trajectory(
            rows_as(ToolCall, zip(*columns, strict=False)),  # repeat(None) has no end
            len(self._usages),
            usage,
            self.answer,
            None,
            fmt,
        )

    def _pair(self, results: list[Any], has_result: list[bool], errors: list[bool | None]) -> None:
        """Fill the result columns: each recorded result, in history order, with the call it pairs
        with."""
        first = _first_index(self._ids)
        for content, call_id, name, error, known in self._pending:
            try:
                index = known if call_id is None else first.get(call_id, known)
            except TypeError:  # an id that cannot be hashed (a list, a mapping) names no call
                index = known
            if index >= known or has_result[index]:
                waiting = self._next_waiting(name, known, has_result)
                if waiting is None:
                    continue
                index = waiting
            results[index] = result_content(content) if isinstance(content, list) else content
            has_result[index] = True
            if error is not None:
                errors[index] = error

    def _next_waiting(self, name: Any, known: int, has_result: list[bool]) -> int | None:
        """Pop the first of the first ``known`` calls still without a result: of tool ``name``, or
        any when None.

        A ``name`` that cannot be hashed (a list, a mapping) names no tool: the result pairs with
        nothing."""
        queues = self._queues
        names = self._names
        for index in range(self._queued, known):
            queues.setdefault(names[index], deque()).append(index)
            queues.setdefault(None, deque()).append(index)
        self._queued = max(self._queued, known)
        queue = _lookup(queues, name, None)
        while queue:
            index = queue.popleft()
            if not has_result[index]:
                return index
        return None


def _check_depths(
    names: Sequence[str], raws: Sequence[Any], args: Sequence[Any], results: Sequence[Any]
) -> None:
    """``check_depth`` of the arguments and results, skipping what cannot nest deep at C speed:
    arguments that were text of at most ``MAX_DEPTH`` characters or brackets, results that are all
    plain values."""
    shallow = all(map(isinstance, raws, repeat(str))) and (
        max(map(len, raws), default=0) <= MAX_DEPTH
        or _most(raws, "{") + _most(raws, "[") <= MAX_DEPTH
    )
    if not shallow:
        check_depth(names, args, "arguments")
    if not _FLAT.issuperset(map(type, results)):
        check_depth(names, results, "result")


def _most(texts: Sequence[str], bracket: str) -> int:
    """The most times ``bracket`` occurs in one of ``texts``."""
    return max(map(str.count, texts, repeat(bracket)), default=0)


def check_depth(names: Sequence[str], values: Sequence[Any], part: str) -> None:
    """Refuse a call's arguments or result (``part``) nesting lists and maps past ``MAX_DEPTH``
    levels, the limit suites have: matching and reports walk them recursively, and a source nested
    900 deep ran them out of stack."""
    for position, value in enumerate(values):
        if type(value) in _FLAT or (
            type(value) is dict and _FLAT.issuperset(map(type, value.values()))
        ):
            continue
        if _deeper(value, MAX_DEPTH):
            raise TooDeep(
                f"tool call {position} ({names[position]}): its {part} nest lists and maps more "
                f"than {MAX_DEPTH} levels deep, at {_deep_path(value)}; trajrun reads at most "
                f"{MAX_DEPTH} levels — flatten them in the source"
            )


def _deeper(value: Any, limit: int) -> bool:
    """Whether ``value`` nests lists and maps more than ``limit`` levels deep (a flat list or map is
    one level)."""
    level = [value]
    for _ in range(limit):
        inner: list[Any] = []
        for item in level:
            inner.extend(item.values() if isinstance(item, dict) else item)
        level = [item for item in inner if isinstance(item, (dict, list))]
        if not level:
            return False
    return True


_PATH_SHOWN = 6


def _deep_path(value: Any) -> str:
    """Where ``value`` first nests past ``MAX_DEPTH`` levels, its first steps and the depth
    (``a.b[0]… level 201``)."""
    stack: list[tuple[Any, tuple[str, ...]]] = [(value, ())]
    while stack:
        item, path = stack.pop()
        if len(path) >= MAX_DEPTH:
            return f"{''.join(path[:_PATH_SHOWN]).lstrip('.')}… level {len(path) + 1}"
        pairs = item.items() if isinstance(item, dict) else enumerate(item)
        stack.extend(
            (inner, (*path, f".{key}" if isinstance(key, str) else f"[{key}]"))
            for key, inner in pairs
            if isinstance(inner, (dict, list))
        )
    return "some level"


def _first_index(ids: Sequence[Any]) -> dict[Any, int]:
    """The index of each id's first call; an id that cannot be hashed (a list, a mapping: no JSON
    scalar) never pairs."""
    try:
        return dict(zip(reversed(ids), range(len(ids) - 1, -1, -1), strict=True))
    except TypeError:
        return {
            call_id: index
            for index, call_id in reversed(list(enumerate(ids)))
            if _hashable(call_id)
        }


def _lookup(table: dict[Any, Any], key: Any, default: Any) -> Any:
    """``table.get(key, default)``; a key that cannot be hashed finds nothing."""
    try:
        return table.get(key, default)
    except TypeError:
        return default


def _hashable(value: Any) -> bool:
    """Whether ``value`` can be a dictionary key."""
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _sum_usage(usages: list[Usage | None]) -> Usage | None:
    """The turns' usage summed; None when there are no turns or some turn has none."""
    if not usages or None in usages:
        return None
    total = Usage(0, 0)
    for usage in usages:
        total += usage  # type: ignore[operator]
    return total


def as_list(doc: Any, is_message: Any) -> list[Any] | None:
    """``doc`` as a message list: a list as is, a single message (``is_message(doc)``) as a one-item
    list."""
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
