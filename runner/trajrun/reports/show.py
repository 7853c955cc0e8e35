"""Views of one trajectory for ``trajrun show``: an aligned table, YAML and JSON.

Each view is text any terminal or UTF-8 stream takes: control characters and lone surrogates
(``"\\ud800"`` in a JSON source) come out escaped, never raw.
"""

from __future__ import annotations

import json
import re
from typing import Any

import yaml

from ..trajectory import Trajectory
from .text import terminal_safe

MAX_CELL = 60
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _cell(value: Any) -> str:
    """Compact JSON (or the raw string), terminal-safe, cut at ``MAX_CELL`` characters."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    text = terminal_safe(text.replace("\n", "\\n"))
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - 1] + "…"


def render_table(traj: Trajectory) -> str:
    """One aligned row per call (position, turn, tool, args, milliseconds where recorded, result), then turns,
    usage, wall time where recorded, and answer."""
    timed = traj.records_durations
    rows = [("#", "turn", "tool", "args", *(("ms",) if timed else ()), "result")]
    for call in traj.calls:
        result = _cell(call.result) if call.has_result else "-"
        if call.error:
            result = f"ERROR {result}"
        took = (_ms(call.duration_ms),) if timed else ()
        rows.append((str(call.position), str(call.turn), terminal_safe(call.name), _cell(call.args), *took, result))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    usage = traj.usage
    lines.append("")
    lines.append(f"format: {traj.format}   calls: {len(traj.calls)}   turns: {traj.turns}")
    lines.append(
        f"usage: {usage.input_tokens} in + {usage.output_tokens} out = {usage.total_tokens} tokens"
        if usage
        else "usage: not recorded"
    )
    if traj.wall_ms is not None:
        lines.append(f"time: {_ms(traj.wall_ms)} ms")
    if traj.nodes is not None:
        lines.append("nodes: " + terminal_safe(" | ".join(" ".join(turn) for turn in traj.nodes)))
    lines.append(f"answer: {_cell(traj.answer) if traj.answer is not None else '-'}")
    return "\n".join(lines)


def _ms(value: float | None) -> str:
    """Milliseconds to a tenth (``12.5``), or ``-`` where none was recorded."""
    return "-" if value is None else f"{value:.1f}"


def render_json(traj: Trajectory) -> str:
    """The contract's fixed JSON shape; it reads back as format ``trajectory``.

    Non-ASCII text is written as is, unless some string holds a lone surrogate, which no UTF-8
    stream can carry: then the whole document is ASCII with ``\\u`` escapes (it reads back the same).
    """
    text = json.dumps(traj.to_dict(), indent=2, ensure_ascii=False)
    if _LONE_SURROGATE.search(text):
        return json.dumps(traj.to_dict(), indent=2, ensure_ascii=True)
    return text


def render_yaml(traj: Trajectory) -> str:
    """The same data as ``render_json``, as YAML (PyYAML's emitter escapes control characters and surrogates)."""
    return yaml.safe_dump(traj.to_dict(), sort_keys=False, allow_unicode=True)
