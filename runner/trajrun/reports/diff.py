"""``trajrun diff OLD.json NEW.json``: what changed between two runs, read from their JSON reports.

Cases are matched by suite name and case name (not by id, which holds the suite file's path
relative to the folder a run started in). A case is *regressed* when it passed (or xfailed) in OLD
and failed, erred or xpassed in NEW; *fixed* the other way round; *still failing* when it failed in
both. For a regressed case the calls of the two runs are aligned: calls the same, moved, with other
arguments, removed and added.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import TrajrunError, inline
from ..match.steps_report import json_path
from ..match.values import MISSING, Diff, compare_value, render_value
from ..run.results import PROBLEMS
from . import html

VERSION = 1
GOOD = ("passed", "xfailed")
MAX_CALLS = 2_000
"""Calls of one run past which a regressed case gets no call table (aligning costs their square)."""
MAX_ROWS = 100
MAX_DIFFS = 10
Key = tuple[str, str]
Suite = Mapping[str, Any]
SECTIONS = ("regressed", "fixed", "still_failing", "added", "removed", "changed", "scores")


class DiffError(TrajrunError):
    """Two reports that cannot be compared at all: exit status 2."""


@dataclass(frozen=True, slots=True)
class CallRow:
    """One row of a regressed case's call table: the call in OLD and in NEW, and the verdict."""

    old: int | None
    new: int | None
    old_label: str
    new_label: str
    verdict: str
    name: str = ""
    diffs: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class CaseChange:
    """A case whose outcome or score differs between the reports (or that is in one only)."""

    id: str
    suite: str
    name: str
    old: str | None
    new: str | None
    message: str = ""
    old_score: float | None = None
    new_score: float | None = None
    calls: tuple[CallRow, ...] = ()
    calls_note: str = ""


@dataclass(frozen=True, slots=True)
class ReportDiff:
    """Everything ``trajrun diff`` reports, in the order it prints it."""

    old_file: str
    new_file: str
    old_headline: str
    new_headline: str
    regressed: tuple[CaseChange, ...] = ()
    broken: tuple[str, ...] = ()
    """Suite files that loaded in OLD and could not be loaded in NEW, a line each (regressions)."""
    fixed: tuple[CaseChange, ...] = ()
    still_failing: tuple[CaseChange, ...] = ()
    added: tuple[CaseChange, ...] = ()
    removed: tuple[CaseChange, ...] = ()
    changed: tuple[CaseChange, ...] = ()
    scores: tuple[CaseChange, ...] = ()
    not_compared: tuple[str, ...] = ()

    def exit_code(self) -> int:
        """1 when a case regressed or a suite file no longer loads, else 0."""
        return 1 if self.regressed or self.broken else 0

    def counts(self) -> dict[str, int]:
        """How many entries each section holds, in the order of the closing line."""
        return {
            "regressed": len(self.regressed) + len(self.broken),
            "fixed": len(self.fixed),
            "still failing": len(self.still_failing),
            "new": len(self.added),
            "removed": len(self.removed),
            "changed": len(self.changed),
            "score changes": len(self.scores),
        }

    def summary_line(self) -> str:
        """``1 regressed, 2 fixed, 1 still failing`` (zeros left out), or ``no changes``."""
        parts = [
            f"{n} {'score change' if word == 'score changes' and n == 1 else word}"
            for word, n in self.counts().items()
            if n
        ]
        return ", ".join(parts) or "no changes"


def load_pair(old_path: str, new_path: str) -> ReportDiff:
    """Read and compare two saved ``--json`` reports; raises ``ReportReadError`` (the field at
    fault) or ``DiffError``."""
    return compare(html.load_json(old_path), html.load_json(new_path), old_path, new_path)


def failing_cases(data: Mapping[str, Any]) -> frozenset[Key]:
    """The ``(suite, case)`` names that failed, erred or xpassed in a JSON report (what
    ``--baseline`` knows)."""
    cases = _cases(data).items()
    return frozenset(key for key, (case, _) in cases if case.get("outcome") in PROBLEMS)


def compare(
    old: Mapping[str, Any], new: Mapping[str, Any], old_file: str, new_file: str
) -> ReportDiff:
    """The differences between two JSON reports' data (the file names as shown: one line each);
    raises ``DiffError`` when they share no suite."""
    old_file, new_file = inline(old_file), inline(new_file)
    old_suites, new_suites = _suites(old), _suites(new)
    old_suites, new_suites = _named(old_suites, new_suites), _named(new_suites, old_suites)
    if not set(old_suites) & set(new_suites):
        raise DiffError(
            f"{old_file} and {new_file} share no suite ({old_file}: "
            f"{_names(old_suites)}; {new_file}: {_names(new_suites)}); compare two "
            "reports of the same suites"
        )
    notes, broken = _suite_notes(old_suites, new_suites, old_file, new_file)
    skipped = {
        name
        for name, suite in [*old_suites.items(), *new_suites.items()]
        if suite.get("load_errors")
    }
    olds, news = _cases(old), _cases(new)
    sections: dict[str, list[CaseChange]] = {k: [] for k in SECTIONS}
    for key, (case, suite) in news.items():
        if key in olds:
            _sort_case(olds[key][0], case, key, sections, (old_file, new_file))
        elif suite not in skipped:
            sections["added"].append(_change(None, case, key))
    for key, (case, suite) in olds.items():
        if key not in news and suite not in skipped:
            sections["removed"].append(_change(case, None, key))
    return ReportDiff(
        old_file,
        new_file,
        html.headline(old.get("summary") or {}),
        html.headline(new.get("summary") or {}),
        broken=tuple(broken),
        not_compared=tuple(notes),
        **{k: tuple(v) for k, v in sections.items()},
    )


def _sort_case(
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    key: Key,
    sections: dict[str, list[CaseChange]],
    files: tuple[str, str],
) -> None:
    """File a case found in both reports under its section (and under score changes when its score
    moved)."""
    was, now = old.get("outcome"), new.get("outcome")
    if was in GOOD and now in PROBLEMS:
        sections["regressed"].append(_regressed(old, new, key, files))
    elif was in PROBLEMS and now in GOOD:
        sections["fixed"].append(_change(old, new, key))
    elif was in PROBLEMS and now in PROBLEMS:
        sections["still_failing"].append(_change(old, new, key))
    elif was != now:
        sections["changed"].append(_change(old, new, key))
    before, after = old.get("score"), new.get("score")
    if before is not None and after is not None and abs(after - before) > 1e-6:
        sections["scores"].append(_change(old, new, key))


def _suites(data: Mapping[str, Any]) -> dict[str, Suite]:
    """A report's suites by name (the first of a name: a run never has two)."""
    found: dict[str, Suite] = {}
    for suite in data.get("suites") or []:
        found.setdefault(str(suite.get("name") or suite.get("file") or ""), suite)
    return found


def _named(suites: dict[str, Suite], other: Mapping[str, Suite]) -> dict[str, Suite]:
    """``suites`` with each that could not be loaded (named after its file) under the name the other
    report gives the suite of that file."""
    names = {s.get("file"): name for name, s in other.items() if not s.get("load_errors")}
    return {
        names.get(suite.get("file"), name) if suite.get("load_errors") else name: suite
        for name, suite in suites.items()
    }


def _cases(data: Mapping[str, Any]) -> dict[Key, tuple[Mapping[str, Any], str]]:
    """A report's cases by ``(suite name, case name)``, each with its suite's name."""
    found: dict[Key, tuple[Mapping[str, Any], str]] = {}
    for name, suite in _suites(data).items():
        for case in suite.get("cases") or []:
            found.setdefault((name, str(case.get("name") or case.get("id") or "")), (case, name))
    return found


def _names(suites: Mapping[str, Any]) -> str:
    """Up to three suite names, quoted, and how many more."""
    shown = [repr(inline(name)) for name in list(suites)[:3]]
    more = f" and {len(suites) - 3} more" if len(suites) > 3 else ""
    return (", ".join(shown) or "no suites") + more


def _suite_notes(
    olds: Mapping[str, Suite], news: Mapping[str, Suite], old_file: str, new_file: str
) -> tuple[list[str], list[str]]:
    """What cannot be compared, suite by suite, and the suite files that no longer load."""
    notes, broken = [], []
    for name in olds.keys() | news.keys():
        old, new = olds.get(name), news.get(name)
        shown = f"suite {inline(name)!r}"
        if old is None or new is None:
            here = new_file if old is None else old_file
            count = len((old or new or {}).get("cases") or [])
            what = "new" if old is None else "removed"
            cases = f"{count} case{'s are' if count != 1 else ' is'}"
            notes.append(f"{shown} is only in {here}: its {cases} listed as {what}")
        elif new.get("load_errors"):
            first = inline(str(new["load_errors"][0]))
            if old.get("load_errors"):
                notes.append(f"{shown} could not be loaded in either report: {first}")
            else:
                count = len(old.get("cases") or [])
                file = inline(str(new.get("file", "")))
                broken.append(
                    f"{shown} ({file}) could not be loaded in {new_file} ({count} "
                    f"case{'s' if count != 1 else ''} in {old_file}): {first}"
                )
        elif old.get("load_errors"):
            notes.append(
                f"{shown} could not be loaded in {old_file}: its cases in {new_file} are "
                "not compared"
            )
    return sorted(notes), sorted(broken)


def _change(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None, key: Key) -> CaseChange:
    """One case's entry: its id and message from NEW (OLD for a removed case), outcomes, scores."""
    shown = new if new is not None else old
    assert shown is not None  # a case is in one report at least
    return CaseChange(
        str(shown.get("id") or "::".join(key)),
        key[0],
        key[1],
        old.get("outcome") if old is not None else None,
        new.get("outcome") if new is not None else None,
        str(shown.get("message") or ""),
        _score(old),
        _score(new),
    )


def _score(case: Mapping[str, Any] | None) -> float | None:
    """A case's score, or ``None``."""
    value = case.get("score") if case is not None else None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _regressed(
    old: Mapping[str, Any], new: Mapping[str, Any], key: Key, files: tuple[str, str]
) -> CaseChange:
    """A regressed case with the step-level difference of its two runs (or why there is none)."""
    change = _change(old, new, key)
    runs = [case.get("trajectory") for case in (old, new)]
    lacking = [file for file, run in zip(files, runs, strict=True) if not isinstance(run, dict)]
    if lacking:
        verb = "holds" if len(lacking) == 1 else "hold"
        note = (
            f"no call table: {' and '.join(lacking)} {verb} no run for this case (it could not "
            "run, or is a bulk case)"
        )
        return dataclasses.replace(change, calls_note=note)
    calls = [
        [c for c in run.get("tool_calls") or [] if isinstance(c, dict)]
        for run in runs
        if isinstance(run, dict)
    ]
    if max(map(len, calls)) > MAX_CALLS:
        note = (
            f"no call table: more than {MAX_CALLS:,} calls in a run; compare them with "
            "`trajrun show -o json`"
        )
        return dataclasses.replace(change, calls_note=note)
    return dataclasses.replace(change, calls=tuple(align(calls[0], calls[1])))


def align(old: Sequence[Mapping[str, Any]], new: Sequence[Mapping[str, Any]]) -> list[CallRow]:
    """The two runs' calls side by side, in NEW's order: equal calls in common order are ``same``,
    an equal call elsewhere ``moved``, a call of the same tool with other arguments ``args differ``,
    the rest ``REMOVED`` (OLD only) and ``ADDED`` (NEW only); a removed call sits after the call
    before it."""
    keys = [_key(c) for c in old], [_key(c) for c in new]
    matcher = difflib.SequenceMatcher(None, *keys, autojunk=False)
    pairs = [
        (a + k, b + k, "same") for a, b, size in matcher.get_matching_blocks() for k in range(size)
    ]
    taken_old, taken_new = {p[0] for p in pairs}, {p[1] for p in pairs}
    for verdict, same in (("moved", _key), ("args differ", _name)):
        waiting: dict[str, list[int]] = {}
        for j in range(len(new) - 1, -1, -1):
            if j not in taken_new:
                waiting.setdefault(same(new[j]), []).append(j)
        for i in range(len(old)):
            spots = waiting.get(same(old[i])) if i not in taken_old else None
            if spots:
                j = spots.pop()
                pairs.append((i, j, verdict))
                taken_old.add(i)
                taken_new.add(j)
    free_old = [i for i in range(len(old)) if i not in taken_old]
    free_new = [j for j in range(len(new)) if j not in taken_new]
    rows: list[tuple[int | None, int | None, str]] = [*pairs]
    rows += [(i, None, "REMOVED") for i in free_old] + [(None, j, "ADDED") for j in free_new]
    return [_row(old, new, i, j, verdict) for i, j, verdict in sorted(rows, key=_placing(rows))]


def _placing(rows: list[tuple[int | None, int | None, str]]) -> Any:
    """The sort key of ``align``'s rows: NEW's position, a removed call right after the call before
    it."""
    after: dict[int, int] = {}
    last = -1
    paired = {i: j for i, j, _ in rows if i is not None and j is not None}
    for i in sorted(i for i, _, _ in rows if i is not None):
        after[i] = last
        if i in paired:
            last = max(last, paired[i])

    def key(row: tuple[int | None, int | None, str]) -> tuple[int, int, int]:
        """By NEW's position; a removed call after the NEW position of the OLD call before it."""
        i, j, _ = row
        if j is not None:
            return (j, 0, 0)
        assert i is not None  # a row has a call in OLD, in NEW or in both
        return (after[i], 1, i)

    return key


def _key(call: Mapping[str, Any]) -> str:
    """A call's tool and arguments as one comparable text."""
    return json.dumps([call.get("name"), call.get("args")], sort_keys=True, default=str)


def _name(call: Mapping[str, Any]) -> str:
    """A call's tool name."""
    return str(call.get("name"))


def _label(call: Mapping[str, Any], position: int) -> str:
    """``[1] search {"q":"paris"}``, the way a failure's table shows a call."""
    return f"[{position}] {inline(_name(call))} {render_value(call.get('args'))}"


def _row(
    old: Sequence[Mapping[str, Any]],
    new: Sequence[Mapping[str, Any]],
    i: int | None,
    j: int | None,
    verdict: str,
) -> CallRow:
    """One table row; for ``args differ``, each differing argument as ``$.q: was "a", now "b"``."""
    diffs: list[Diff] = []
    if i is not None and j is not None and verdict == "args differ":
        compare_value(old[i].get("args"), new[j].get("args"), "exact", (), frozenset(), diffs)
    lines = tuple(
        f"{json_path('$', path)}: was {_shown(was)}, now {_shown(now)}" for path, was, now in diffs
    )
    if j is not None:
        call = new[j]
    else:
        assert i is not None, "a row holds an old call, a new one, or both"
        call = old[i]
    return CallRow(
        i,
        j,
        _label(old[i], i) if i is not None else "",
        _label(new[j], j) if j is not None else "",
        verdict,
        _name(call),
        lines,
    )


def _shown(value: Any) -> str:
    """A value in a difference line: ``absent`` for a missing key, else compact JSON cut at 60
    characters."""
    return "absent" if value is MISSING else render_value(value)


def calls_summary(rows: Sequence[CallRow]) -> str:
    """``1 added, 1 arg differs`` for a call table (``same calls`` when no row differs)."""
    counts: dict[str, int] = {}
    for row in rows:
        if row.verdict != "same":
            counts[row.verdict] = counts.get(row.verdict, 0) + 1
    words = {"ADDED": "added", "REMOVED": "removed", "moved": "moved", "args differ": "args differ"}
    one = {"args differ": "arg differs"}
    parts = [
        f"{counts[v]} {one.get(v, w) if counts[v] == 1 else w}"
        for v, w in words.items()
        if v in counts
    ]
    return ", ".join(parts) or "same calls"


def table(rows: Sequence[CallRow]) -> list[str]:
    """The call table as a failure's steps table looks (columns ``old``, ``new``, ``verdict``), then
    each changed call's differing arguments."""
    shown = list(rows) if len(rows) <= MAX_ROWS else [r for r in rows if r.verdict != "same"]
    shown = shown[:MAX_ROWS]
    cells = [("old", "new", "verdict"), *((r.old_label, r.new_label, r.verdict) for r in shown)]
    widths = [max(len(cell[k]) for cell in cells) for k in range(2)]
    lines = [f"{a.ljust(widths[0])}  {b.ljust(widths[1])}  {v}".rstrip() for a, b, v in cells]
    if len(shown) < len(rows):
        lines.append(f"... {len(rows) - len(shown)} more rows not shown")
    for row in shown:
        if row.diffs:
            lines.append("")
            lines.append(f"{inline(row.name)}: old [{row.old}] -> new [{row.new}]")
            lines += [f"  {d}" for d in row.diffs[:MAX_DIFFS]]
            if len(row.diffs) > MAX_DIFFS:
                lines.append(f"  ... {len(row.diffs) - MAX_DIFFS} more differences")
    return lines


def to_json(diff: ReportDiff) -> dict[str, Any]:
    """The diff as JSON-ready data (``version`` 1), for ``trajrun diff --json``."""
    data: dict[str, Any] = {
        "version": VERSION,
        "old": {"file": diff.old_file, "headline": diff.old_headline},
        "new": {"file": diff.new_file, "headline": diff.new_headline},
    }
    for section in SECTIONS:
        data[section] = [_case_json(change) for change in getattr(diff, section)]
    data["broken"] = list(diff.broken)
    data["not_compared"] = list(diff.not_compared)
    data["summary"] = diff.summary_line()
    data["exit_code"] = diff.exit_code()
    return data


def _case_json(change: CaseChange) -> dict[str, Any]:
    """One case's entry as JSON: ``calls`` is ``null`` but for a regressed case."""
    data: dict[str, Any] = {
        "id": change.id,
        "suite": change.suite,
        "name": change.name,
        "old": change.old,
        "new": change.new,
        "message": change.message,
        "old_score": change.old_score,
        "new_score": change.new_score,
        "calls": None,
    }
    if change.calls or change.calls_note:
        rows = [
            {"old": r.old, "new": r.new, "verdict": r.verdict, "diffs": list(r.diffs)}
            for r in change.calls
        ]
        data["calls"] = {
            "summary": calls_summary(change.calls) if change.calls else "",
            "note": change.calls_note,
            "rows": rows,
        }
    return data
