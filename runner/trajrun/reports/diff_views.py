"""``trajrun diff`` shown: console lines (pytest-style sections, a regressed case's call table as a
failure's steps table) and a one-file HTML page in the report's style (its CSS, no script,
everything escaped as text)."""

from __future__ import annotations

import functools
import os
from importlib import resources
from typing import Any

import jinja2
from markupsafe import Markup

from ..errors import inline
from ..files import atomic_write
from .console import DEFAULT_WIDTH, rule
from .diff import CaseChange, ReportDiff, calls_summary, table
from .text import not_a_command, terminal_safe

TITLES = {
    "regressed": "REGRESSED",
    "fixed": "fixed",
    "still_failing": "still failing",
    "added": "new cases",
    "removed": "removed cases",
    "changed": "other outcome changes",
    "scores": "score changes",
}


def render_text(diff: ReportDiff, width: int = DEFAULT_WIDTH) -> list[str]:
    """The console report: both runs' closing lines, a section per kind of change, counts last."""
    lines = [
        f"old: {diff.old_file}: {inline(diff.old_headline)}",
        f"new: {diff.new_file}: {inline(diff.new_headline)}",
    ]
    for attr, title in TITLES.items():
        changes: tuple[CaseChange, ...] = getattr(diff, attr)
        body = [line for change in changes for line in _entry(attr, change, width)]
        count = len(changes)
        if attr == "regressed":
            body = [f"{line} (exit status 1)" for line in diff.broken] + body
            count += len(diff.broken)
        if body:
            lines += [rule(f"{title} ({count})", "=", width), *body]
    if diff.not_compared:
        lines += [rule("not compared", "=", width), *diff.not_compared]
    lines += [rule("", "=", width), diff.summary_line()]
    return [not_a_command(line) for line in lines]


def _entry(section: str, change: CaseChange, width: int) -> list[str]:
    """One case of a section: a regressed one as a failure block with its call table, the others
    one line."""
    shown = inline(change.id)
    if section != "regressed":
        return [f"{shown}: {what(section, change)}"]
    lines = [rule(f"{shown}: {change.old} -> {change.new}", "_", width)]
    lines += [inline(line) for line in change.message.split("\n") if line]
    if change.calls:
        lines.append(f"calls: {calls_summary(change.calls)}")
        lines += map(terminal_safe, table(change.calls))
    if change.calls_note:
        lines.append(change.calls_note)
    return lines


def what(section: str, change: CaseChange) -> str:
    """What changed for a case outside the regressed section:
    ``failed -> passed``, ``was passed``…"""
    if section == "scores" and change.old_score is not None and change.new_score is not None:
        delta = change.new_score - change.old_score
        return f"score {change.old_score:.2f} -> {change.new_score:.2f} ({delta:+.2f})"
    if section == "added":
        return f"{change.new}{_message(change)}"
    if section == "removed":
        return f"was {change.old}"
    return f"{change.old} -> {change.new}{_message(change)}"


def _message(change: CaseChange) -> str:
    """`` - the one-line message`` of a case that does not pass, else nothing."""
    failing = change.message and change.new not in ("passed", None)
    return f" - {inline(change.message)}" if failing else ""


def render_html(diff: ReportDiff) -> str:
    """The page: the report's CSS and look, no script; every name, message and call is text."""
    sections = []
    for attr, title in TITLES.items():
        changes = [_view(attr, change) for change in getattr(diff, attr)]
        broken = list(diff.broken) if attr == "regressed" else []
        if changes or broken:
            sections.append({"title": title, "key": attr, "changes": changes, "broken": broken})
    summary = diff.summary_line()
    return _template().render(
        diff=diff,
        sections=sections,
        css=Markup(_asset("report.css")),
        headline=summary,
        title=f"trajrun diff: {summary}",
    )


def write_html(diff: ReportDiff, path: str | os.PathLike[str]) -> None:
    """Write the page atomically; raises ``FileWriteError``."""
    page = render_html(diff).encode("utf-8")
    atomic_write(path, lambda handle: handle.writelines([page]))


def _view(section: str, change: CaseChange) -> dict[str, Any]:
    """What the template shows of one case."""
    moved = f"{change.old} -> {change.new}" if section == "regressed" else what(section, change)
    return {
        "change": change,
        "outcome": change.new or change.old or "",
        "what": moved,
        "summary": calls_summary(change.calls) if change.calls else "",
    }


def _asset(name: str) -> str:
    """A file of the report's pages (``reports/html``)."""
    return (resources.files(__package__) / "html" / name).read_text(encoding="utf-8")


@functools.lru_cache(maxsize=1)
def _template() -> jinja2.Template:
    """The page template, compiled once, with HTML autoescaping on (only the CSS is marked safe)."""
    environment = jinja2.Environment(autoescape=True, keep_trailing_newline=True)
    return environment.from_string(_asset("diff.html.j2"))
