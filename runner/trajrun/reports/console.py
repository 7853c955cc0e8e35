"""Console report, pytest-style: progress as cases finish, then failures,
errors and the summary line."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Mapping
from typing import TextIO

from ..errors import inline
from ..run.results import CaseResult, Repeats, RunResult, SuiteResult
from .text import judge_text, not_a_command, terminal_safe

LETTERS = {
    "passed": ".",
    "failed": "F",
    "error": "E",
    "skipped": "s",
    "xfailed": "x",
    "xpassed": "X",
}
WORDS = {
    "passed": "PASSED",
    "failed": "FAILED",
    "error": "ERROR",
    "skipped": "SKIPPED",
    "xfailed": "XFAIL",
    "xpassed": "XPASS",
}
COLORS = {
    "passed": "green",
    "failed": "red",
    "error": "red",
    "skipped": "yellow",
    "xfailed": "yellow",
    "xpassed": "red",
}
PROBLEMS = ("failed", "error", "xpassed")
BASELINE_WORDS = {
    "new": "new failure: it did not fail in the baseline",
    "known": "known failure: it failed in the baseline too",
}
PROGRESS_MIN_CASES = 50
DEFAULT_WIDTH = 80

_SGR = {"red": "31", "green": "32", "yellow": "33", "bold": "1", "red bold": "31;1"}
_VERDICT = re.compile(r"\b(MISSING|UNEXPECTED|differs?|ok)\b")
_LOUD_VERDICT = re.compile(r"\b(MISSING|UNEXPECTED)\b|\b(differs?|ok)\s*$")


def use_color(stream: TextIO, color: bool | None, environ: Mapping[str, str] = os.environ) -> bool:
    """Whether to colour: an explicit choice wins, then NO_COLOR, FORCE_COLOR, TERM=dumb, isatty."""
    if color is not None:
        return color
    if environ.get("NO_COLOR"):
        return False
    if environ.get("FORCE_COLOR"):
        return True
    return _isatty(stream) and environ.get("TERM") != "dumb"


def _isatty(stream: TextIO) -> bool:
    """``stream.isatty()``, false for streams that lack it."""
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def paint(text: str, color: str, on: bool) -> str:
    """Wrap ``text`` in an ANSI colour when ``on``."""
    return f"\x1b[{_SGR[color]}m{text}\x1b[0m" if on and text else text


def rule(title: str, char: str, width: int) -> str:
    """A separator line with ``title`` centred, as pytest draws ``==== FAILURES ====``."""
    if not title:
        return char * width
    side = max((width - len(title) - 2) // 2, 1)
    line = f"{char * side} {title} {char * side}"
    return line + char * max(width - len(line), 0)


def _paint_verdicts(line: str) -> str:
    """Colour the verdict words of one details line: failures red, ``ok`` green."""
    head, bar, tail = line.rpartition("|")
    pattern = _VERDICT if bar else _LOUD_VERDICT

    def swap(match: re.Match[str]) -> str:
        """The matched verdict word painted, trailing blanks kept."""
        word = match.group().rstrip()
        return paint(word, "green" if word == "ok" else "red", True) + match.group()[len(word) :]

    return head + bar + pattern.sub(swap, tail)


def _details(text: str, color: bool) -> list[str]:
    """The details body as lines, made terminal-safe, verdict words coloured when ``color``."""
    lines = terminal_safe(text).splitlines()
    return [_paint_verdicts(line) for line in lines] if color else lines


def _failure_block(case: CaseResult, color: bool, width: int) -> list[str]:
    """One failed, erred or xpassed case: header, ``file:line``, message, details and notes."""
    lines = [paint(rule(inline(case.case_id), "_", width), "red bold", color)]
    lines.append(f"{inline(case.file)}:{case.line}")
    if case.baseline:
        lines.append(BASELINE_WORDS[case.baseline])
    if case.repeats is not None:
        lines.append(case.repeats.line())
        lines.extend(_run_lines(case.repeats))
    # a message's own lines (a command's stderr tail) stay lines here, each
    # escaped; the summary joins them
    for line in (case.message or WORDS[case.outcome]).split("\n"):
        lines.append(paint(inline(line), COLORS[case.outcome], color))
    if case.details:
        lines.extend(_details(case.details, color))
    verdict = case.evaluation.judge if case.evaluation else None
    if verdict is not None and verdict.passed:  # a failing judge is in the details already
        lines.append(inline(judge_text(verdict)))
    lines.extend(f"note: {inline(note)}" for note in case.notes)
    return lines


def _run_lines(repeats: Repeats) -> list[str]:
    """``run 2 FAILED: 1 check failed: steps (1 args differ)``: each run that did not pass (a
    message's own lines, such as a command's stderr tail, as lines of their own)."""
    lines = []
    for n, run in enumerate(repeats.each, 1):
        if run.outcome != "passed":
            first, *rest = run.message.split("\n")
            lines.append(f"run {n} {WORDS[run.outcome]}: {inline(first)}")
            lines.extend(map(inline, rest))
    return lines


def _flaky(run: RunResult) -> list[str]:
    """Each case whose runs disagree, with the runs that did not pass when no failure block shows
    them (a case that passed on ``pass_rate``)."""
    lines = []
    for case in run.cases:
        if case.repeats is not None and case.repeats.flaky:
            lines.append(f"{inline(case.case_id)}: {case.repeats.line()}")
            if case.outcome not in PROBLEMS:
                lines.extend(f"  {line}" for line in _run_lines(case.repeats))
    return lines


def _load_block(suite: SuiteResult, color: bool, width: int) -> list[str]:
    """One suite that could not be loaded: header and every error, one per line."""
    lines = [paint(rule(f"ERROR loading {inline(suite.file)}", "_", width), "red bold", color)]
    lines.extend(map(inline, suite.load_errors))
    return lines


def _short_summary(run: RunResult, color: bool) -> list[str]:
    """pytest's short summary: one line per load error and per failed, erred or xpassed case."""
    lines = []
    for suite in run.suites:
        if suite.load_errors:
            n = len(suite.load_errors)
            detail = f"suite could not be loaded ({n} error{'s' if n > 1 else ''})"
            lines.append(f"{paint('ERROR', 'red', color)} {inline(suite.file)} - {detail}")
    for case in run.cases:
        if case.outcome in PROBLEMS:
            word = paint(WORDS[case.outcome], COLORS[case.outcome], color)
            shown = inline(case.case_id) + (f" [{case.baseline}]" if case.baseline else "")
            shown += " [flaky]" if case.repeats is not None and case.repeats.flaky else ""
            lines.append(f"{word} {shown} - {inline(case.message)}".rstrip(" -"))
    return lines


def gate_lines(run: RunResult) -> list[str]:
    """What ``--baseline``, ``--fail-on new`` and ``--min-pass-rate`` made of the failures, a line
    each."""
    gates, lines = run.gates, []
    if gates.baseline is not None:
        known = sum(1 for c in run.cases if c.baseline == "known")
        new = sum(1 for c in run.cases if c.baseline == "new")
        failures = f"{new} new failure{'s' if new != 1 else ''}"
        shown = inline(gates.baseline)
        lines.append(f"--baseline {shown}: {failures}, {known} known (failing there too)")
        if gates.fail_on == "new" and known:
            verb = "s do" if known != 1 else " does"
            lines.append(f"--fail-on new: the {known} known failure{verb} not fail the run")
    rate = run.pass_rate
    if gates.min_pass_rate is not None and rate is not None:
        ran = sum(1 for c in run.cases if c.outcome != "skipped")
        verdict = (
            "the failures do not fail the run"
            if run.rate_holds()
            else "below it: the failures fail the run"
        )
        lines.append(
            f"--min-pass-rate {gates.min_pass_rate:g}: {rate:.1%} of the {ran} "
            f"case{'s' if ran != 1 else ''} that ran passed; {verdict}"
        )
    return lines


def _notes(run: RunResult) -> list[str]:
    """Notes of cases outside the failures section (a golden file updated on a passing case)."""
    return [
        f"{inline(case.case_id)}: {inline(note)}"
        for case in run.cases
        if case.outcome not in PROBLEMS
        for note in case.notes
    ]


def _judged(run: RunResult) -> list[str]:
    """The judge's score and reasoning for each judged case outside the failures section."""
    return [
        f"{inline(case.case_id)}: {inline(text)}"
        for case in run.cases
        if case.outcome not in PROBLEMS
        and (text := judge_text(case.evaluation.judge if case.evaluation else None))
    ]


def _status_color(run: RunResult) -> str:
    """Red when the run fails, yellow when nothing passed, green otherwise (pytest's scheme)."""
    if run.exit_code() in (1, 2):
        return "red"
    return "green" if run.counts()["passed"] else "yellow"


def render_summary(
    run: RunResult, *, color: bool = False, width: int = DEFAULT_WIDTH, verbosity: int = 0
) -> list[str]:
    """Everything printed after the cases ran, as lines; the last is ``run.summary_line()`` exactly.

    A suite's or a source's strings are escaped to stay within their line (``inline``), and no line
    is left that GitHub Actions would read as a workflow command (``not_a_command``)."""
    lines: list[str] = []
    # as pytest's: suites not loaded and cases that could not run under ERRORS, then FAILURES
    errors = [line for s in run.suites if s.load_errors for line in _load_block(s, color, width)]
    errors += [
        line for c in run.cases if c.outcome == "error" for line in _failure_block(c, color, width)
    ]
    failures = [
        line
        for c in run.cases
        if c.outcome in ("failed", "xpassed")
        for line in _failure_block(c, color, width)
    ]
    sections = [
        ("ERRORS", errors),
        ("FAILURES", failures),
        ("notes", _notes(run)),
        ("flaky", _flaky(run)),
        ("judge", _judged(run) if verbosity >= 0 else []),
        ("short test summary info", _short_summary(run, color)),
        ("gates", gate_lines(run)),
    ]
    if run.usage_error:
        sections.insert(0, ("USAGE ERROR", [inline(run.usage_error)]))
    for title, body in sections:
        if body:
            lines.append(paint(rule(title, "=", width), "bold", color))
            lines.extend(body)
    if run.nothing_found:  # on its own line: the summary line after it ends with the time
        lines.append(inline(run.nothing_found))
    if verbosity >= 0:
        lines.append(paint(rule("", "=", width), _status_color(run), color))
    lines.append(run.summary_line())
    return [not_a_command(line) for line in lines]


class ConsoleReporter:
    """Prints a run as it goes: letters per suite file, or a line per case
    with ``-v``, then the summary.

    ``verbosity`` -1 prints nothing per case, 0 pytest's letters (``suites/a.suite.yaml ..F.``),
    1 or more one line per case. Like pytest, each file's line of letters (and each ``-v`` line)
    ends with the share of cases done, ``[ 42%]``; on a terminal, with 50 cases or more, the
    letters line redraws it after every case, so a long run never looks stuck.
    """

    def __init__(self, stream: TextIO, verbosity: int = 0, color: bool | None = None) -> None:
        self.stream = stream
        self.verbosity = verbosity
        self.color = use_color(stream, color)
        self.width = _terminal_width() if _isatty(stream) else DEFAULT_WIDTH
        self.total = 0
        self.done = 0
        self.progress = False
        self._line_file: str | None = None
        self._line_text = ""
        self._line_length = 0
        self._records_drawn = 0.0

    def start(self, total_cases: int) -> None:
        """Remember how many cases will run, and decide whether to show a percentage."""
        self.total = total_cases
        self.done = 0
        self.progress = (
            self.verbosity == 0 and _isatty(self.stream) and total_cases >= PROGRESS_MIN_CASES
        )

    def suite_load_error(self, result: SuiteResult) -> None:
        """Mark a suite file that could not be loaded (its errors are listed at the end)."""
        if self.verbosity >= 1:
            word = paint("ERROR", "red", self.color)
            self._write_line(f"{inline(result.file)} {word} (suite could not be loaded)")
        elif self.verbosity == 0:
            self._letter(result.file, paint("E", "red", self.color))

    def case_done(self, result: CaseResult) -> None:
        """Show one finished case: its letter, or its line with ``-v``."""
        if self.verbosity >= 1:
            self.done += 1
            line, length = self._case_line(result)
            self._write_line(line + self._percentage(length))
        elif self.verbosity == 0:
            file = result.case_id.partition("::")[0] if "::" in result.case_id else result.file
            self._letter(
                file, paint(LETTERS[result.outcome], COLORS[result.outcome], self.color), case=True
            )

    def finish(self, run: RunResult) -> None:
        """End the progress line, then print the sections and the summary line last."""
        self._end_line()
        lines = render_summary(run, color=self.color, width=self.width, verbosity=self.verbosity)
        if self.verbosity >= 0 and lines:
            self.stream.write("\n")
        self.stream.write("\n".join(lines) + "\n")
        self._flush()

    def records_progress(self, case_id: str, done: int, final: bool = False) -> None:
        """On a terminal, a bulk case's count of records read so far, drawn after the open line (at
        most ten times a second) and wiped when the case is done."""
        if self.verbosity < 0 or not _isatty(self.stream):
            return
        now = time.monotonic()
        if not final and now - self._records_drawn < 0.1:
            return
        self._records_drawn = now
        tag = "" if final else f" [{inline(case_id)}: {done:,} records]"
        self.stream.write("\r" + self._line_text + tag + "\x1b[K")
        self._flush()

    def _case_line(self, result: CaseResult) -> tuple[str, int]:
        """``suites/a.suite.yaml::paris PASSED``, with the reason after a skip or
        xfail, and its visible length."""
        plain = f"{inline(result.case_id)} {WORDS[result.outcome]}"
        word = paint(WORDS[result.outcome], COLORS[result.outcome], self.color)
        line = f"{inline(result.case_id)} {word}"
        if result.outcome in ("skipped", "xfailed") and result.message:
            reason = f" ({inline(result.message)})"
            plain, line = plain + reason, line + reason
        if result.repeats is not None:
            repeats = result.repeats
            runs = f" (repeat {repeats.letters}{', flaky' if repeats.flaky else ''})"
            plain, line = plain + runs, line + runs
        return line, len(plain)

    def _write_line(self, text: str) -> None:
        """Write a whole line, after ending any open letters line."""
        self._end_line()
        self.stream.write(not_a_command(text) + "\n")
        self._flush()

    def _letter(self, file: str, letter: str, case: bool = False) -> None:
        """Add one letter to the current suite file's line, starting a new line for
        a new file; ``case`` counts it as a finished case (after the previous
        file's line got its share done)."""
        if file != self._line_file:
            self._end_line()
            self._line_file = file
            shown = not_a_command(inline(file))
            self._add(shown + " ", len(shown) + 1)
        elif self.progress and self._line_length >= self.width - 8:
            self._end_line()
            self._line_file = file
        self.done += case
        self._add(letter, 1)
        if self.progress:
            self.stream.write("\r" + self._line_text + self._percentage(self._line_length))
        self._flush()

    def _add(self, text: str, length: int) -> None:
        """Append to the open line; without a percentage the text is written straight away."""
        self._line_text += text
        self._line_length += length
        if not self.progress:
            self.stream.write(text)

    def _percentage(self, length: int) -> str:
        """`` [ 42%]`` right-aligned to the terminal width after ``length`` visible characters."""
        percent = min(self.done * 100 // self.total, 100) if self.total else 100
        tag = f"[{percent:3d}%]"
        return " " * max(self.width - length - len(tag), 1) + tag

    def _end_line(self) -> None:
        """Close the open letters line, if any, with its percentage (already
        drawn when redrawing in place)."""
        if self._line_file is not None:
            self.stream.write(("" if self.progress else self._percentage(self._line_length)) + "\n")
        self._line_file = None
        self._line_text = ""
        self._line_length = 0

    def _flush(self) -> None:
        """Flush the stream so progress shows while cases run."""
        flush = getattr(self.stream, "flush", None)
        if flush:
            flush()


def _terminal_width() -> int:
    """The terminal's width (``COLUMNS`` first, as shutil reads it)."""
    import shutil  # deferred: start-up time (it loads bz2 and lzma); a run on CI has no terminal

    return shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns
