"""Views of one trajectory for ``trajrun show``: an aligned table, YAML and JSON."""

from __future__ import annotations

import json
from typing import Any

import yaml

from ..trajectory import Trajectory

MAX_CELL = 60


def _cell(value: Any) -> str:
    """Compact JSON (or the raw string), cut at ``MAX_CELL`` characters."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    text = text.replace("\n", "\\n")
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - 1] + "…"


def render_table(traj: Trajectory) -> str:
    """One aligned row per call (position, turn, tool, args, result), then turns, usage and answer."""
    rows = [("#", "turn", "tool", "args", "result")]
    for call in traj.calls:
        result = _cell(call.result) if call.has_result else "-"
        if call.error:
            result = f"ERROR {result}"
        rows.append((str(call.position), str(call.turn), call.name, _cell(call.args), result))
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
    if traj.nodes is not None:
        lines.append("nodes: " + " | ".join(" ".join(turn) for turn in traj.nodes))
    lines.append(f"answer: {_cell(traj.answer) if traj.answer is not None else '-'}")
    return "\n".join(lines)


def render_json(traj: Trajectory) -> str:
    """The contract's fixed JSON shape; it reads back as format ``trajectory``."""
    return json.dumps(traj.to_dict(), indent=2, ensure_ascii=False)


def render_yaml(traj: Trajectory) -> str:
    """The same data as ``render_json``, as YAML."""
    return yaml.safe_dump(traj.to_dict(), sort_keys=False, allow_unicode=True)
