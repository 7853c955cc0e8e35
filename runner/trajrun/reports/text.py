"""Text clean-up shared by the reports: XML-safe, terminal-safe and
one-line strings, time figures."""

from __future__ import annotations

import math
import re
from typing import Any

from ..errors import escape_char

# XML 1.0 allows #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF];
# everything else (other C0 controls, lone surrogates, U+FFFE, U+FFFF) cannot appear in a
# document at all. Written as that complement: the negated class of the allowed ranges was
# slow to compile, at every start.
_XML_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")

# Characters a terminal would act on instead of showing: C0 controls but tab and newline, DEL,
# C1 controls, Unicode line separators (``splitlines`` would break there), and lone surrogates
# (which no encoder can write).
_TERMINAL_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")

# What GitHub's runner reads as a workflow command in a line of a step's output: ``::`` first after
# blanks, or the legacy ``##[`` anywhere.
_WORKFLOW_COMMAND = re.compile(r"^(\s*)::|##\[", re.MULTILINE)

# In JSON text, what can only be inside a string and that some reader would still take for a line
# break (C1 controls, Unicode line separators) or for a workflow command (``##[``).
_JSON_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029]|##\\[")

_LINE_BREAKS = re.compile(r"\s*[\r\n]+\s*")


def _hex_notation(match: re.Match[str]) -> str:
    """``#x0B`` for a forbidden character, as pytest's ``bin_xml_escape`` writes it."""
    code = ord(match.group())
    return f"#x{code:02X}" if code <= 0xFF else f"#x{code:04X}"


def xml_safe(text: str) -> str:
    """Replace every character XML 1.0 forbids with its ``#xNN`` notation, so the report parses."""
    return _XML_ILLEGAL.sub(_hex_notation, text)


def terminal_safe(text: str) -> str:
    """Show control characters as escapes, so tool output cannot move the cursor or recolour."""
    return _TERMINAL_UNSAFE.sub(escape_char, text)


def not_a_command(text: str) -> str:
    """Console text no line of which GitHub Actions reads as a workflow command: a leading
    ``::`` becomes ``\\::`` and ``##[`` becomes ``##\\[``. trajrun's own annotations are
    printed apart, never through this."""
    return _WORKFLOW_COMMAND.sub(_defuse, text)


def _defuse(match: re.Match[str]) -> str:
    """The workflow-command marker of ``_WORKFLOW_COMMAND`` with a backslash that breaks it."""
    return "##\\[" if match.group(1) is None else match.group(1) + "\\::"


def json_safe(text: str) -> str:
    """JSON text with ``_JSON_UNSAFE`` written as ``\\u`` escapes, which read back the same: no
    line of it breaks early for a reader that splits at ``\\u2028`` or ``\\x85``, and none
    holds GitHub's legacy ``##[``."""
    return _JSON_UNSAFE.sub(_json_escape, text)


def _json_escape(match: re.Match[str]) -> str:
    """``\\u2028`` for a character; ``##\\u005b`` for the ``##[`` marker."""
    found = match.group()
    return "##\\u005b" if found == "##[" else f"\\u{ord(found):04x}"


def one_line(text: str) -> str:
    """Join the lines of ``text`` with single spaces: attribute values and messages are one line."""
    return _LINE_BREAKS.sub(" ", text).strip()


def judge_text(verdict: Any) -> str:
    """A judge verdict that carries a score as one line:
    ``judge: score 0.85 >= 0.70 (gpt-4o-mini): reasoning``; empty for none (a skipped or erred judge
    is said elsewhere: in the notes, in the message)."""
    if verdict is None or verdict.score is None:
        return ""
    return f"judge: {verdict.summary()}: {one_line(verdict.reasoning)}".rstrip(": ")


def seconds(value: float) -> str:
    """A duration with exactly 3 decimals, never an exponent or a minus
    (the junit-10.xsd pattern)."""
    if not math.isfinite(value) or value < 0:
        value = 0.0
    return f"{value:.3f}"
