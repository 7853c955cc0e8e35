"""Views of one trajectory for ``trajrun show`` and ``trajrun record``:
an aligned table, YAML and JSON.

Each view is text any terminal or UTF-8 stream takes: control characters and lone surrogates
(``"\\ud800"`` in a JSON source) come out escaped, never raw. No line of a view is one GitHub
Actions would read as a workflow command (``::`` first on a line, ``##[`` anywhere): the table
escapes a source's strings; YAML and JSON, when some value would make such a line, switch to
escapes that read back the same.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import yaml

from ..errors import inline
from ..trajectory import Trajectory, finite
from .text import json_safe, not_a_command, terminal_safe

MAX_CELL = 60
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _cell(value: Any) -> str:
    """Compact JSON (or the raw string), escaped to one line by ``inline``, cut
    at ``MAX_CELL`` characters."""
    text = (
        value
        if isinstance(value, str)
        else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    )
    text = inline(text)
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - 1] + "…"


def render_table(traj: Trajectory) -> str:
    """One aligned row per call (position, turn, tool, args, milliseconds where recorded, result),
    then turns, usage, wall time where recorded, and answer."""
    timed = traj.records_durations
    rows = [("#", "turn", "tool", "args", *(("ms",) if timed else ()), "result")]
    for call in traj.calls:
        result = _cell(call.result) if call.has_result else "-"
        if call.error:
            result = f"ERROR {result}"
        took = (_ms(call.duration_ms),) if timed else ()
        rows.append(
            (str(call.position), str(call.turn), inline(call.name), _cell(call.args), *took, result)
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
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
        lines.append("nodes: " + " | ".join(" ".join(map(inline, turn)) for turn in traj.nodes))
    lines.append(f"answer: {_cell(traj.answer) if traj.answer is not None else '-'}")
    return not_a_command("\n".join(lines))


def _ms(value: float | None) -> str:
    """Milliseconds to a tenth (``12.5``), or ``-`` where none was recorded."""
    return "-" if value is None else f"{value:.1f}"


def render_json(traj: Trajectory) -> str:
    """The contract's fixed JSON shape; it reads back as format ``trajectory``.

    Non-ASCII text is written as is, unless some string holds a lone surrogate,
    which no UTF-8 stream can carry: then the whole document is ASCII with ``\\u``
    escapes (it reads back the same).
    """
    data = traj.to_dict()
    text = json.dumps(data, indent=2, ensure_ascii=False)
    if "NaN" in text or "Infinity" in text:
        # maybe a number JSON has not (Python writes it bare): as strings
        data = finite(data)
        text = json.dumps(data, indent=2, ensure_ascii=False)
    if _LONE_SURROGATE.search(text):
        text = json.dumps(data, indent=2, ensure_ascii=True)
    return json_safe(text)


def render_yaml(traj: Trajectory) -> str:
    """The same data as ``render_json``, as YAML (PyYAML's emitter escapes control characters and
    surrogates); when a value would put a workflow command on a line of its own, as
    ``_QuotingDumper`` writes it."""
    text = yaml.safe_dump(traj.to_dict(), sort_keys=False, allow_unicode=True)
    if not _risky(text):
        return text
    text = yaml.dump(
        traj.to_dict(), Dumper=_QuotingDumper, sort_keys=False, allow_unicode=True, width=math.inf
    )
    # ``_QuotingDumper`` double-quotes every string that holds it
    return text.replace("##[", "##\\x5b")


def render_steps(traj: Trajectory) -> str:
    """``trajrun record``: the steps as a golden file holds them; when a value would put a
    workflow command on a line of its own, one line per call (``compact_steps``: JSON
    strings, which escape line breaks)."""
    from ..suites.golden import compact_steps, dump_steps  # deferred: ``show`` does not need it

    text = dump_steps(traj)
    return not_a_command(json_safe(compact_steps(traj))) if _risky(text) else text


def _risky(text: str) -> bool:
    """Whether some line of ``text`` reads as a workflow command, or it holds a
    character that a reader could take for a line break (``\\r``, ``\\x85``,
    ``\\u2028``) or that a terminal acts on."""
    return not_a_command(text) != text or terminal_safe(text) != text


class _QuotingDumper(yaml.SafeDumper):
    """A safe dumper that double-quotes, with escapes, every string holding a control
    character or a line break, or reading as a workflow command: with no line width, each such
    string then stays on its line."""


def _quoted(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    """A string, double-quoted when it could start or hold a line GitHub
    Actions reads as a command."""
    risky = inline(value) != value or not_a_command(value) != value
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style='"' if risky else None)


_QuotingDumper.add_representer(str, _quoted)
