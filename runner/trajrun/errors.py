"""Errors trajrun reports to users: each names where (file, line, column, key path) and what."""

from __future__ import annotations

import difflib
import functools
import json
import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping


@dataclass(frozen=True, slots=True)
class Location:
    """Where a value came from: a file, a 1-based line and column, and a key path like
    ``cases[2].steps[0]``."""

    file: str
    line: int = 0
    column: int = 0
    path: str = ""

    def __str__(self) -> str:
        head = self.file
        if self.line:
            head += f":{self.line}:{self.column}" if self.column else f":{self.line}"
        return f"{head}: {self.path}" if self.path else head


class TrajrunError(Exception):
    """Base of every error trajrun reports without a traceback."""


class SuiteError(TrajrunError):
    """A problem in a suite file, printed as ``file:line:column: key.path: message``."""

    def __init__(self, message: str, loc: Location | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.loc = loc

    def __str__(self) -> str:
        return f"{self.loc}: {self.message}" if self.loc else self.message


class SuiteErrors(TrajrunError):
    """Every error found in one suite file, so a user fixes them all in one pass."""

    def __init__(self, errors: list[SuiteError]) -> None:
        super().__init__("\n".join(str(e) for e in errors))
        self.errors = tuple(errors)


class SourceError(TrajrunError):
    """A message source that cannot be read: names the file and says what was expected and found.

    ``reasons`` is set when no format fits a document: why each format tried does not, one
    ``"name: reason"`` per format, for ``trajrun show -v`` (the message itself stays one line).
    """

    def __init__(
        self, message: str, file: str | None = None, reasons: tuple[str, ...] = ()
    ) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.reasons = reasons

    def __str__(self) -> str:
        return f"{self.file}: {self.message}" if self.file else self.message


class SpecError(TrajrunError):
    """A malformed expectation (unknown ``$`` operator, mixed keys); ``path`` is relative to the
    value."""

    def __init__(self, message: str, path: tuple[str | int, ...] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.path = path


class CheckError(TrajrunError):
    """A check that cannot be evaluated on this run (no usage for a token budget, a ``compare`` that
    raised)."""


_SIMPLE_KEY = re.compile(r"^[A-Za-z_$][\w$-]*$")


def format_path(path: tuple[str | int, ...]) -> str:
    """``('cases', 2, 'steps', 0)`` as ``cases[2].steps[0]``; odd keys are quoted
    (``tools["$.a.b"]``)."""
    if not path:
        return ""
    out, part = _format_head(path[:-1]), path[-1]
    if isinstance(part, int):
        return f"{out}[{part}]"
    if _SIMPLE_KEY.match(part):
        return f"{out}.{part}" if out else part
    return f"{out}[{json.dumps(part)}]"


@functools.lru_cache(maxsize=4096)
def _format_head(path: tuple[str | int, ...]) -> str:
    """``format_path`` of a path's parent, kept: every step of a case, every key of a map shares one
    (a suite of 500,000 steps formats each step's location)."""
    return format_path(path)


def kind(value: Any) -> str:
    """A value's kind in YAML words, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {'true' if value else 'false'}"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, (list, dict)):
        noun = "list" if isinstance(value, list) else "map"
        return f"an empty {noun}" if not value else f"a {noun}"
    return type(value).__name__


def did_you_mean(
    word: str, choices: Iterable[str], meanings: Mapping[str, str] | None = None
) -> str:
    """`` — did you mean 'x'?`` for the closest choice, or ``; expected one of a, b`` when none is
    close.

    ``meanings`` maps names other tools use (lower case, words joined by ``_``) to a hint by
    meaning, which wins over spelling: ``ordered`` is closest to ``unordered`` in letters, not in
    meaning. A choice written in other case or with ``-`` or spaces (``IN_ORDER``, ``in-order``) is
    named as is.
    """
    choices = list(choices)
    plain = re.sub(r"[\s-]+", "_", word.strip()).lower()
    if meanings and plain in meanings:
        return f" — {meanings[plain]}"
    close = (
        [plain] if plain in choices else difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    )
    return f" — did you mean '{close[0]}'?" if close else f"; expected one of {', '.join(choices)}"


def exception_line(exc: BaseException) -> str:
    """The last line Python prints for an exception (``ValueError: bad``), for one-line messages."""
    import traceback  # deferred: only failures pay for it (linecache, tokenize: start-up time)

    return traceback.format_exception_only(type(exc), exc)[-1].strip()


def exception_trace(exc: BaseException) -> str:
    """The whole traceback of an exception, for details a user asks to see."""
    import traceback  # deferred, as in exception_line

    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)).rstrip()


# Characters that could end or rewrite a line of output: C0 controls (line feed, carriage return
# and tab included), DEL, C1 controls, Unicode line and paragraph separators, and lone surrogates.
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")
_NAMED_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def escape_char(match: re.Match[str]) -> str:
    """``\\n``, ``\\x1b`` or ``\\u2028`` for one unprintable character, here and in reports."""
    char = match.group()
    code = ord(char)
    return _NAMED_ESCAPES.get(char) or (f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}")


def inline(text: str) -> str:
    """A string from a suite or a source, made safe to embed in one line of a message: every control
    character, line separator and lone surrogate shown as an escape (a line feed as ``\\n``), so it
    cannot start a line."""
    return _UNPRINTABLE.sub(escape_char, text)
