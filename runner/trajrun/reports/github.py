"""GitHub Actions output: an ``::error`` workflow command per failed
case, and a Markdown job summary.

GitHub reads workflow commands from a step's output and shows each as an annotation on the
suite file's line; the job summary is Markdown appended to the file ``$GITHUB_STEP_SUMMARY``
names. Every name, message and path in it is text: HTML and Markdown escaped, so a suite
renders no tag, link or image.
"""

# No ``from __future__ import annotations``: the name is this module's ``annotations`` function.
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from ..errors import inline
from ..run.results import CaseResult, RunResult
from .text import one_line, terminal_safe

PROBLEMS = ("failed", "error", "xpassed")
MAX_SUMMARY_ROWS = 50
"""Failures listed in the job summary table; the rest are counted."""
_LOAD_LINE = re.compile(r"^(?P<file>.+?):(?P<line>\d+)(?::\d+)?: (?P<message>.*)$")
_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
# Markdown's inline syntax (emphasis, code, links and images and the ``(`` after their ``]``,
# tables, strikethrough, escapes), and what GFM links by itself: ``scheme://`` and ``www.`` (the
# colon and the dot broken by a backslash), ``@``.
_MARKDOWN = re.compile(r"[\\`*_\[\]|~!@]|(?<=\])\(|:(?=//)|(?<=www)\.", re.IGNORECASE)


def enabled(choice: str | None, environ: Mapping[str, str] = os.environ) -> bool:
    """``--annotations github`` on, ``none`` off; by default on inside GitHub
    Actions (``GITHUB_ACTIONS=true``)."""
    if choice is not None:
        return choice == "github"
    return environ.get("GITHUB_ACTIONS") == "true"


def annotations(run: RunResult, workspace: str | None = None) -> list[str]:
    """One ``::error file=…,line=…,title=…::message`` line per failed, erred or
    xpassed case and per load error."""
    root = Path(workspace or os.environ.get("GITHUB_WORKSPACE") or Path.cwd())
    lines = [
        _load_error(suite.file, error, root) for suite in run.suites for error in suite.load_errors
    ]
    for case in run.cases:
        if case.outcome in PROBLEMS:
            title = f"{case.suite} :: {case.name} {_outcome(case)}"
            # a known failure that --fail-on new lets pass: a warning
            tolerated = case.baseline == "known" and run.gates.fail_on == "new"
            lines.append(
                _command(
                    _relative(case.file, root),
                    case.line,
                    title,
                    _case_text(case),
                    "warning" if tolerated else "error",
                )
            )
    return lines


def _outcome(case: CaseResult) -> str:
    """``failed``, or with ``--baseline`` ``failed (new failure)`` / ``failed (known failure)``."""
    return f"{case.outcome} ({case.baseline} failure)" if case.baseline else case.outcome


def summary(run: RunResult) -> str:
    """The Markdown job summary: the closing line, counts per outcome, and a table of
    the cases that did not pass."""
    counts = run.counts()
    lines = [
        "## trajrun",
        "",
        f"**{_cell(run.summary_line())}**",
        "",
        _row(counts),
        "|" + " ---: |" * len(counts),
        _row(str(n) for n in counts.values()),
    ]
    problems = [case for case in run.cases if case.outcome in PROBLEMS]
    loads = [(suite.file, error) for suite in run.suites for error in suite.load_errors]
    if problems or loads:
        lines += ["", "| case | outcome | message |", "| --- | --- | --- |"]
        lines += [
            f"| <code>{_cell(file)}</code> | load error | {_cell(error)} |" for file, error in loads
        ]
        for c in problems[:MAX_SUMMARY_ROWS]:
            case = f"{_cell(c.suite)} :: {_cell(c.name)} (<code>{_cell(c.file)}:{c.line}</code>)"
            lines.append(_row([case, _outcome(c), _cell(c.message)]))
        if len(problems) > MAX_SUMMARY_ROWS:
            lines.append(
                f"| … | | {len(problems) - MAX_SUMMARY_ROWS} more; see the JUnit or HTML report |"
            )
    return "\n".join(lines) + "\n"


def _row(cells: Iterable[str]) -> str:
    """A Markdown table row."""
    return "| " + " | ".join(cells) + " |"


def append_summary(run: RunResult, environ: Mapping[str, str] = os.environ) -> None:
    """Append the summary to ``$GITHUB_STEP_SUMMARY`` when GitHub set it (a plain
    append, as GitHub expects)."""
    target = environ.get("GITHUB_STEP_SUMMARY")
    if target:
        with open(target, "a", encoding="utf-8", errors="replace") as handle:
            handle.write(summary(run))


def _case_text(case: CaseResult) -> str:
    """The annotation's text: the one-line message, then the details the console prints."""
    return "\n".join(part for part in (case.message, case.details) if part)


def _load_error(file: str, error: str, root: Path) -> str:
    """A load error (``file:line:col: path: message``) as an annotation on its line."""
    found = _LOAD_LINE.match(error)
    line = int(found["line"]) if found else 1
    return _command(
        _relative(file, root),
        line,
        f"{Path(file).name} could not be loaded",
        found["message"] if found else error,
    )


def _command(file: str, line: int, title: str, message: str, level: str = "error") -> str:
    """``::error file=F,line=L,title=T::message`` (or ``::warning``) escaped as the workflow-command
    rules require."""
    props = f"file={_property(file)},line={max(line, 1)},title={_property(title)}"
    return f"::{level} {props}::{_data(terminal_safe(message))}"


def _data(text: str) -> str:
    """A command's message: ``%``, CR and LF escaped (GitHub turns
    ``%0A`` back into a line break)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    """A command property: one line (``inline``), escaped as ``_data`` plus ``:`` and
    ``,``, which end a property."""
    return _data(inline(text)).replace(":", "%3A").replace(",", "%2C")


def _relative(file: str, root: Path) -> str:
    """The file relative to the workspace (GitHub places annotations by
    repository path), else as given."""
    try:
        return Path(os.path.relpath(Path(file).resolve(), root.resolve())).as_posix()
    except ValueError:
        return Path(file).as_posix()


def _cell(text: str) -> str:
    """Text for a Markdown table cell: one line cut to a readable length, shown as written (HTML's
    ``&<>`` as entities, Markdown's punctuation and what GFM would autolink backslash-escaped)."""
    line = one_line(terminal_safe(text))
    line = line if len(line) <= 200 else line[:199] + "…"
    return _MARKDOWN.sub(r"\\\g<0>", "".join(_HTML.get(char, char) for char in line))
