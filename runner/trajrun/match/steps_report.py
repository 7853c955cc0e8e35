"""The human diff of the steps check: an aligned table, then each unmatched step's nearest call.

Plain text, no colour (the console adds it). Rows follow the actual run's order; a step with no
call sits after the steps before it (in ordered modes, before the call paired with the step after
it); argument maps are compact JSON cut at about 60 chars (more on a wide terminal: ``cell_width``).
"""

from __future__ import annotations

import difflib
import re
import sys
from bisect import bisect_left, insort
from dataclasses import dataclass, field
from itertools import accumulate, filterfalse
from typing import Any

from ..errors import inline
from ..trajectory import ToolCall
from .argrules import args_match
from .compatibility import Candidates
from .expectation import ANY_ARGS, UNSET, Expectation, Step
from .matchers import result_as_compared
from .pairing import Pairs
from .values import MISSING, Diff, Matcher, compare_value, contains_hint, parting, render_value

MAX_NEAREST = 20
MAX_SCAN = 50
MAX_ROWS = 100
MAX_DIFFS = 10
ARGS_WIDTH = 60
"""Where the table cuts an argument map (with ``…``) off a terminal, or on one of 80 columns or
less."""
SHOW_WIDTH = 60
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
Row = tuple[int | None, int | None, str]


@dataclass(frozen=True, slots=True)
class Nearest:
    """The closest actual call to an unmatched expected step, and how it differs.

    ``note`` says why there is no such call, why a call that matches is not paired with the step,
    or, beside ``diffs``, how to accept the call (``args_mode is exact; args_mode: superset allows
    extra keys``).
    """

    step: int
    call: int | None
    diffs: tuple[str, ...] = ()
    note: str = ""


@dataclass(frozen=True, slots=True)
class StepsReport:
    """The steps check in detail: pairs, missing steps, unexpected calls, nearest candidates.

    ``detail`` is the human diff (aligned table, then each unmatched step's nearest call); it is
    empty when the check passed.
    """

    mode: str
    passed: bool
    score: float
    summary: str = ""
    pairs: tuple[tuple[int, int], ...] = ()
    missing: tuple[int, ...] = ()
    unexpected: tuple[int, ...] = ()
    nearest: tuple[Nearest, ...] = ()
    detail: str = ""
    expected_steps: tuple[Step, ...] = field(default=(), repr=False, compare=False)
    actual_calls: tuple[ToolCall, ...] = field(default=(), repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe data for the JSON report."""
        return {
            "mode": self.mode,
            "passed": self.passed,
            "score": self.score,
            "summary": self.summary,
            "pairs": [{"step": s, "call": c} for s, c in self.pairs],
            "missing": [
                {"step": s, "expected": step_label(self.expected_steps[s])} for s in self.missing
            ],
            "unexpected": [
                {"call": c, "actual": call_label(self.actual_calls[c])} for c in self.unexpected
            ],
            "nearest": [
                {"step": n.step, "call": n.call, "diffs": list(n.diffs), "note": n.note}
                for n in self.nearest
            ],
        }


def build_report(
    expect: Expectation,
    cand: Candidates,
    pairs: Pairs,
    passed: bool,
    score: float,
    order_only: bool,
) -> StepsReport:
    """The steps report; the table and nearest candidates only when the check failed."""
    n, m = len(cand.steps), len(cand.calls)
    missing = () if len(pairs) == n else tuple(i for i in range(n) if i not in pairs)
    unexpected = () if len(pairs) == m else _unpaired(m, set(pairs.values()))
    summary, detail = "", ""
    nearest: tuple[Nearest, ...] = ()
    if not passed:
        nearest = _nearest_all(cand, missing, unexpected)
        rows = _rows(expect.mode, pairs, missing, unexpected, nearest)
        summary = _summary(expect, rows, score, order_only)
        detail = "\n".join([render_table(cand, rows), *_nearest_lines(cand, nearest)]).rstrip()
    return StepsReport(
        mode=expect.mode,
        passed=passed,
        score=score,
        summary=summary,
        pairs=tuple(sorted(pairs.items())),
        missing=missing,
        unexpected=unexpected,
        nearest=nearest,
        detail=detail,
        expected_steps=tuple(cand.steps),
        actual_calls=tuple(cand.calls),
    )


def _unpaired(count: int, paired: set[int]) -> tuple[int, ...]:
    """The call positions below ``count`` that no step took."""
    return tuple(filterfalse(paired.__contains__, range(count)))


def step_label(step: Step, width: int = ARGS_WIDTH) -> str:
    """``search {"query":"weather in Paris"}``, the arguments cut past ``width``; a step with any
    arguments is its bare name (names escaped by ``inline``, as every suite's or source's string in
    the report's text)."""
    if step.args is ANY_ARGS:
        return inline(step.name)
    return f"{inline(step.name)} {render_value(step.args, width)}"


def call_label(call: ToolCall, width: int = ARGS_WIDTH) -> str:
    """``search {"query":"weather in Lyon"}``, the arguments cut past ``width``."""
    return f"{inline(call.name)} {render_value(call.args, width)}"


def cell_width() -> int:
    """Where the table cuts an argument map: ``ARGS_WIDTH``, or on a terminal wider than 80 columns
    its width less 20 (``COLUMNS`` first, as ``shutil.get_terminal_size`` reads it), so a wide
    terminal shows long arguments whole. Off a terminal (CI logs, report files, pytest's captured
    output) the table is the same everywhere.
    """
    import shutil  # deferred: start-up (shutil loads bz2 and lzma); only a failure's table needs it

    isatty = getattr(sys.stdout, "isatty", None)
    if not (isatty and isatty()):
        return ARGS_WIDTH
    return max(ARGS_WIDTH, shutil.get_terminal_size((80, 24)).columns - 20)


def step_diffs(cand: Candidates, index: int, call: ToolCall) -> list[str]:
    """Every difference between an expected step and one call, one line each."""
    step, rule = cand.steps[index], cand.plan.rules[index]
    lines = [] if call.name == step.name else [f"name: expected {step.name!r}, got {call.name!r}"]
    if rule.compare and step.args is not ANY_ARGS:
        if not args_match(step.args, call.args, rule):
            lines.append(
                f"$: compare {inline(rule.compare)} returned false for {render_value(call.args)}"
            )
    else:
        diffs: list[Diff] = []
        args_match(step.args, call.args, rule, diffs)
        lines += [_diff_line("$", d) for d in diffs]
    if step.result is not UNSET:
        if not call.has_result:
            lines.append(f"result: expected {_show(step.result)}, got no recorded result")
        else:
            diffs = []
            actual = result_as_compared(step.result, call.result)
            compare_value(step.result, actual, "exact", (), frozenset(), diffs)
            lines += [_diff_line("result", d) for d in diffs]
    if step.error is not None and bool(call.error) != step.error:
        lines.append(
            f"error: expected {str(step.error).lower()}, got {str(bool(call.error)).lower()}"
        )
    return lines


def _diff_line(root: str, diff: Diff) -> str:
    """One ``path: expected X, got Y`` line; long strings from where they part (``parting``)."""
    path, expected, actual = diff
    parted = parting(expected, actual, SHOW_WIDTH, repr)
    if parted is None:
        return f"{json_path(root, path)}: expected {_show(expected)}, got {_show(actual)}"
    shown_exp, shown_act, where = parted
    line = f"{json_path(root, path)}: expected {shown_exp}, got {shown_act}"
    return f"{line} ({where})" if where else line


def step_hints(cand: Candidates, index: int, call: ToolCall) -> list[str]:
    """How to accept a call that differs from its step where a setting would: extra argument keys
    the argument rule refuses, a result that contains the expected one."""
    step, rule = cand.steps[index], cand.plan.rules[index]
    hints = []
    refuses_extra = rule.mode in ("exact", "subset") and not rule.compare and not rule.only_fields
    if step.args is not ANY_ARGS and refuses_extra:
        diffs: list[Diff] = []
        args_match(step.args, call.args, rule, diffs)
        if diffs and all(expected is MISSING for _, expected, _ in diffs):
            hints.append(f"args_mode is {rule.mode}; args_mode: superset allows extra keys")
    if step.result is not UNSET and call.has_result:
        hints.append(contains_hint(step.result, result_as_compared(step.result, call.result)))
    return [hint for hint in hints if hint]


def json_path(root: str, path: tuple[Any, ...]) -> str:
    """``$.location.city``, ``$.items[0]``, ``$['odd key']``."""
    text = root
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if _IDENT.match(str(part)) else f"[{str(part)!r}]"
    return text


def _show(value: Any) -> str:
    """A value in a diff line: matchers described, strings quoted, long text cut."""
    if isinstance(value, Matcher):
        return value.describe()
    if isinstance(value, str):
        return repr(value) if len(value) <= SHOW_WIDTH else repr(value[: SHOW_WIDTH - 1]) + "…"
    return "absent" if value is MISSING else render_value(value)


def _nearest_all(
    cand: Candidates, missing: tuple[int, ...], unexpected: tuple[int, ...]
) -> tuple[Nearest, ...]:
    """The nearest unpaired call for each of the first missing steps."""
    free: dict[str, list[int]] = {}
    for pos in unexpected:
        free.setdefault(cand.calls[pos].name, []).append(pos)
    return tuple(_nearest(cand, index, free) for index in missing[:MAX_NEAREST])


def _nearest(cand: Candidates, index: int, free: dict[str, list[int]]) -> Nearest:
    """The unpaired call of the same tool with the fewest differing fields, or why there is none."""
    step = cand.steps[index]
    options = free.get(step.name, [])
    if options:
        scored = [(step_diffs(cand, index, cand.calls[p]), p) for p in options[:MAX_SCAN]]
        diffs, pos = min(scored, key=lambda item: (len(item[0]), item[1]))
        if diffs:
            note = "; ".join(step_hints(cand, index, cand.calls[pos]))
        elif step.group is not None:
            turn = cand.calls[pos].turn
            note = f"called in turn {turn}, apart from the rest of its parallel group"
        else:
            note = ""
        return Nearest(index, pos, tuple(diffs), note)
    same = sum(1 for c in cand.calls if c.name == step.name)
    if same:
        wanted = sum(1 for s in cand.steps if s.name == step.name)
        return Nearest(
            index,
            None,
            note=f"every call of {inline(step.name)} is paired with another step ({same} calls "
            f"for {wanted} steps)",
        )
    names = sorted({c.name for c in cand.calls})
    near = [n for n in names if step.name in n or n in step.name] or difflib.get_close_matches(
        step.name, names, n=1, cutoff=0.75
    )
    if near:
        hint = f"; did you mean {inline(near[0])}?"
    elif names:
        hint = f"; called: {', '.join(map(inline, names))}"
    else:
        hint = "; no tool was called"
    return Nearest(index, None, note=f"no call of {inline(step.name)}{hint}")


def _rows(
    mode: str,
    pairs: Pairs,
    missing: tuple[int, ...],
    unexpected: tuple[int, ...],
    nearest: tuple[Nearest, ...],
) -> list[Row]:
    """Table rows in the actual run's order, each step without a call at its slot (see
    ``_slots``)."""
    rows: list[Row] = [(i, p, "ok") for i, p in pairs.items()]
    used: set[int] = set()
    combined: set[int] = set()
    for near in nearest:
        if near.call is not None and near.call not in used:
            used.add(near.call)
            combined.add(near.step)
            rows.append((near.step, near.call, _verdict(near)))
    absent_ok, extra_ok = mode == "subset", mode in ("superset", "in_order")
    rows += [
        (i, None, "not called" if absent_ok else "MISSING") for i in missing if i not in combined
    ]
    rows += [(None, p, "extra" if extra_ok else "UNEXPECTED") for p in unexpected if p not in used]
    slots = _slots(rows, pairs if mode in ("strict", "in_order") else {})

    def key(row: Row) -> tuple[int, int, int]:
        """Sort key: by actual position; a step without a call right after the position of its
        slot."""
        index, pos, _ = row
        if pos is not None:
            return (pos, 0, -1 if index is None else index)
        step = -1 if index is None else index  # every row has a step, a call or both
        return (slots[step], 1, step)

    return sorted(rows, key=key)


def _slots(rows: list[Row], ordered: Pairs) -> dict[int, int]:
    """For each step shown without a call, the position its row follows (-1: the top).

    That is the latest call shown for a step before it, so it comes after every step before it; in
    an ordered mode (``ordered`` holds its pairs) only calls before the first call paired with a
    step after it count, so it sits where the run should have made it, not after an out-of-order
    nearest call.
    """
    shown = sorted((i, p) for i, p, _ in rows if i is not None and p is not None)
    paired = sorted(ordered.items())
    bounds = list(accumulate(reversed([p for _, p in paired]), min))[::-1]
    seen: list[int] = []
    slots: dict[int, int] = {}
    k = 0
    for index in sorted(i for i, p, _ in rows if p is None and i is not None):
        while k < len(shown) and shown[k][0] < index:
            insort(seen, shown[k][1])
            k += 1
        after = bisect_left(paired, (index,))
        below = bisect_left(seen, bounds[after]) if after < len(bounds) else len(seen)
        slots[index] = seen[below - 1] if below else -1
    return slots


def _verdict(near: Nearest) -> str:
    """The verdict of a step shown beside its nearest call."""
    diffs = near.diffs
    if not diffs:
        return "other turn" if near.note else "out of order"
    first = diffs[0]
    return (
        "result differs"
        if first.startswith("result")
        else "error differs"
        if first.startswith("error")
        else "args differ"
    )


_COUNTED = (
    ("MISSING", "missing", "missing"),
    ("UNEXPECTED", "unexpected", "unexpected"),
    ("args differ", "arg differs", "args differ"),
    ("result differs", "result differs", "results differ"),
    ("error differs", "error differs", "errors differ"),
    ("out of order", "out of order", "out of order"),
    ("other turn", "in another turn", "in another turn"),
)
"""Each verdict the summary counts: its words for one row and for several."""


def _summary(expect: Expectation, rows: list[Row], score: float, order_only: bool) -> str:
    """A few words for the one-line message: ``1 missing, 2 unexpected``, ``order differs``."""
    counts: dict[str, int] = {}
    for _, _, verdict in rows:
        counts[verdict] = counts.get(verdict, 0) + 1
    parts = [f"{counts[v]} {one if counts[v] == 1 else many}"
             for v, one, many in _COUNTED if counts.get(v)]  # fmt: skip
    text = (
        "order differs"
        if order_only and not counts.get("other turn")
        else ", ".join(parts) or "no match"
    )
    if expect.threshold is not None:
        return f"score {score:.2f} < {expect.threshold:g} ({text})"
    return text


def render_table(cand: Candidates, rows: list[Row]) -> str:
    """The aligned table with columns ``#``, ``expected``, ``actual``, ``verdict``."""
    shown = rows if len(rows) <= MAX_ROWS else [r for r in rows if r[2] != "ok"][:MAX_ROWS]
    cells = [("#", "expected", "actual", "verdict")]
    width = cell_width()
    for index, pos, verdict in shown:
        expected = step_label(cand.steps[index], width) if index is not None else ""
        call = cand.calls[pos] if pos is not None else None
        actual = f"[{call.position}] {call_label(call, width)}" if call is not None else ""
        cells.append(("" if index is None else str(index), expected, actual, verdict))
    widths = [max(len(row[k]) for row in cells) for k in range(3)]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(row[:3], widths, strict=True)) + "  " + row[3]
        for row in cells
    ]
    if len(shown) < len(rows):
        lines.append(f"... {len(rows) - len(shown)} more rows not shown")
    return "\n".join(line.rstrip() for line in lines)


def _nearest_lines(cand: Candidates, nearest: tuple[Nearest, ...]) -> list[str]:
    """For each unmatched step: its nearest call and the differing fields, indented."""
    lines: list[str] = []
    width = cell_width()
    for near in nearest:
        head = f"step {near.step} {step_label(cand.steps[near.step], width)}"
        if near.call is None:
            lines.append(f"{head}: {near.note}")
            continue
        call = f"[{cand.calls[near.call].position}] {call_label(cand.calls[near.call], width)}"
        if not near.diffs:
            lines.append(f"{head}: {call} matches but is {near.note or 'out of order'}")
            continue
        lines.append(f"{head}: nearest {call}")
        lines += [f"  {d}" for d in near.diffs[:MAX_DIFFS]]
        if len(near.diffs) > MAX_DIFFS:
            lines.append(f"  ... {len(near.diffs) - MAX_DIFFS} more differences")
        if near.note:
            lines.append(f"  ({near.note})")
    return ["", *lines] if lines else []
