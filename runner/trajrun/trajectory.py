"""The normal form every message source is read into: ordered tool calls grouped by assistant
turn."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import repeat
from operator import attrgetter
from typing import Any, NamedTuple, TypeVar

Row = TypeVar("Row", bound=tuple)


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts for a run: input includes cache reads and writes, output includes reasoning."""

    input_tokens: int
    output_tokens: int

    @property
    def total_tokens(self) -> int:
        """Input plus output, the figure a ``budget.tokens`` bound checks."""
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens
        )

    def to_dict(self) -> dict[str, int]:
        """The JSON shape of ``trajrun show -o json``."""
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "total_tokens": self.total_tokens,
        }


class ToolCall(NamedTuple):
    """One tool call: ``args`` is a dict, or the raw string when the arguments could not be decoded.

    ``turn`` is the 0-based assistant turn that made the call, ``position`` its index in the run.
    ``result`` is the tool's returned content when ``has_result``; ``error`` is ``None`` where the
    format records no error flag; ``duration_ms`` is ``None`` where it records no time. A named
    tuple (immutable like a frozen dataclass) because readers build thousands per run and a tuple is
    built from a column row at C speed (every column, this last one too: see ``Builder.finish``).
    """

    name: str
    args: dict[str, Any] | str
    id: str | None = None
    turn: int = 0
    position: int = 0
    result: Any = None
    has_result: bool = False
    error: bool | None = None
    duration_ms: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of one call in ``trajrun show -o json``.

        A tool that returned ``null`` also gets ``"has_result": true``, so reading the shape back
        tells it from a call with no recorded result (both write ``"result": null``);
        ``duration_ms`` is written only where the source recorded it.
        """
        out = {
            "name": self.name,
            "args": self.args,
            "id": self.id,
            "turn": self.turn,
            "result": self.result if self.has_result else None,
            "error": self.error,
        }
        if self.has_result and self.result is None:
            out["has_result"] = True
        if self.duration_ms is not None:
            out["duration_ms"] = self.duration_ms
        return out


_NAME = attrgetter("name")


def rows_as(cls: type[Row], rows: Iterable[tuple[Any, ...]]) -> tuple[Row, ...]:
    """Named tuples of ``cls`` from plain rows in field order, built at C speed.

    ``tuple.__new__`` mapped over the rows skips the named tuple's Python-level ``__new__`` (one
    frame per row): readers and ``steps_of`` build thousands of calls or steps per run this way.
    """
    return tuple(map(_TUPLE_NEW, repeat(cls), rows))


_TUPLE_NEW = tuple.__new__


@dataclass(frozen=True, slots=True)
class Trajectory:
    """An agent run as trajrun checks it.

    ``turns`` counts assistant turns (text-only ones included); ``usage`` is ``None`` when the
    source carries no usage or some turn lacks it; ``nodes`` holds graph steps per turn for graph
    sources; ``answer`` is the text of the last assistant message that has text; ``wall_ms`` is the
    run's wall time where the source records time (a trace), else ``None``.
    """

    calls: tuple[ToolCall, ...] = ()
    turns: int = 0
    usage: Usage | None = None
    answer: str | None = None
    nodes: tuple[tuple[str, ...], ...] | None = None
    format: str = "trajectory"
    wall_ms: float | None = None
    notes: tuple[str, ...] = field(default=(), compare=False)
    """What the reader merged or left out to read the source as one run (``show -v`` prints it)."""

    @property
    def names(self) -> list[str]:
        """Tool names in call order (at C speed: a bulk case's quick pass asks on every record)."""
        return list(map(_NAME, self.calls))

    def calls_named(self, name: str) -> tuple[ToolCall, ...]:
        """Every call of one tool, in order."""
        return tuple(c for c in self.calls if c.name == name)

    def calls_in_turn(self, turn: int) -> tuple[ToolCall, ...]:
        """The calls one assistant turn made (parallel: no order among them)."""
        return tuple(c for c in self.calls if c.turn == turn)

    def called_before(self, first: str, then: str) -> bool:
        """True when some call of ``first`` is in an earlier turn than some call of ``then``."""
        a, b = self.calls_named(first), self.calls_named(then)
        return bool(a and b) and min(c.turn for c in a) < max(c.turn for c in b)

    @property
    def records_results(self) -> bool:
        """Whether the source recorded any tool result at all."""
        return any(c.has_result for c in self.calls)

    @property
    def records_durations(self) -> bool:
        """Whether the source recorded how long any call took."""
        return any(c.duration_ms is not None for c in self.calls)

    @property
    def records_errors(self) -> bool:
        """Whether the source carries a per-call error flag (Anthropic, Bedrock, LangChain)."""
        return any(c.error is not None for c in self.calls)

    def to_dict(self, calls: bool = True) -> dict[str, Any]:
        """The fixed JSON shape of ``trajrun show -o json``; reads back as format ``trajectory``.

        ``calls=False`` leaves ``tool_calls`` empty, for a writer that streams them one at a time.
        """
        out: dict[str, Any] = {
            "format": self.format,
            "tool_calls": [c.to_dict() for c in self.calls] if calls else [],
            "turns": self.turns,
            "usage": self.usage.to_dict() if self.usage else None,
            "answer": self.answer,
        }
        if self.nodes is not None:
            out["nodes"] = [list(t) for t in self.nodes]
        if self.wall_ms is not None:
            out["wall_ms"] = self.wall_ms
        return out


def finite(value: Any) -> Any:
    """``value`` with every NaN or infinite float, as a value or a key, replaced by its name as a
    string (``"NaN"``, ``"Infinity"``, ``"-Infinity"``): JSON has no such numbers, and the JSON
    report writes them so too."""
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"
    if isinstance(value, dict):
        return {finite(key): finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(item) for item in value]
    return value
