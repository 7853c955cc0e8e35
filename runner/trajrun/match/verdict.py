"""The verdict of a case's checks on one run: each failed check, and checks that could not be evaluated."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class CheckFailure:
    """One failed check: ``check`` is its name (``steps``, ``never``, ...), ``summary`` a few words
    for the one-line message (``1 missing``), ``detail`` the human text (aligned table, fields)."""

    check: str
    summary: str
    detail: str = ""



@dataclass(frozen=True, slots=True)
class Evaluation:
    """The verdict of every check of one case on one trajectory.

    ``errors`` lists checks that could not be evaluated, each as a sentence saying why.
    ``steps`` is the matcher's detailed report on the steps check (``None`` without steps); it
    has a ``to_dict()`` for the JSON report.
    """

    failures: tuple[CheckFailure, ...] = ()
    errors: tuple[str, ...] = ()
    score: float | None = None
    steps: Any = None

    @property
    def passed(self) -> bool:
        """True when every check was evaluated and held."""
        return not self.failures and not self.errors

    def message(self) -> str:
        """One line: ``2 checks failed: steps (1 missing), never (refund_all)``."""
        parts = []
        if self.errors:
            parts.append("; ".join(self.errors))
        if self.failures:
            n = len(self.failures)
            listed = ", ".join(f"{f.check} ({f.summary})" if f.summary else f.check for f in self.failures)
            parts.append(f"{n} check{'s' if n > 1 else ''} failed: {listed}")
        return "; ".join(parts) if parts else "passed"

    def details(self) -> str:
        """The multi-line body: every failure's detail, in check order."""
        blocks = [f"{f.check}: {f.summary}\n{f.detail}".rstrip() for f in self.failures]
        return "\n\n".join(blocks)
