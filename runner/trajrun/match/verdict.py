"""The verdict of a case's checks on one run: each failed check, and checks that could not be
evaluated."""

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
class JudgeVerdict:
    """What the LLM judge said about one run: a score from 0 to 1 and why, or why there is none.

    ``skipped`` holds the reason the judge was not asked (``--no-judge``); ``error`` why its answer
    could not be had or read (with the raw text). ``cached`` says the answer came from the judge
    cache.
    """

    threshold: float
    score: float | None = None
    reasoning: str = ""
    model: str | None = None
    cached: bool = False
    skipped: str | None = None
    error: str | None = None

    @property
    def passed(self) -> bool | None:
        """Whether the score reaches the threshold; ``None`` when there is no score."""
        return None if self.score is None else self.score >= self.threshold

    def summary(self) -> str:
        """One line: ``score 0.85 >= 0.70 (gpt-4o-mini, cached)``, ``skipped (--no-judge)`` or the
        error."""
        if self.skipped is not None:
            return f"skipped ({self.skipped})"
        if self.score is None:
            return f"error: {self.error}"
        sign = ">=" if self.passed else "<"
        extra = ", ".join(x for x in (self.model, "cached" if self.cached else "") if x)
        return f"score {self.score:.2f} {sign} {self.threshold:.2f}" + (
            f" ({extra})" if extra else ""
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON report's ``judge`` object."""
        return {
            "score": self.score,
            "threshold": self.threshold,
            "passed": self.passed,
            "reasoning": self.reasoning,
            "model": self.model,
            "cached": self.cached,
            "skipped": self.skipped,
            "error": self.error,
        }


@dataclass(frozen=True, slots=True)
class Evaluation:
    """The verdict of every check of one case on one trajectory.

    ``errors`` lists checks that could not be evaluated, each as a sentence saying why. ``steps`` is
    the matcher's detailed report on the steps check (``None`` without steps); it has a
    ``to_dict()`` for the JSON report. ``judge`` is the LLM judge's verdict, which the run layer
    adds (``evaluate`` never calls a model).
    """

    failures: tuple[CheckFailure, ...] = ()
    errors: tuple[str, ...] = ()
    score: float | None = None
    steps: Any = None
    judge: JudgeVerdict | None = None

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
            listed = ", ".join(
                f"{f.check} ({f.summary})" if f.summary else f.check for f in self.failures
            )
            parts.append(f"{n} check{'s' if n > 1 else ''} failed: {listed}")
        return "; ".join(parts) if parts else "passed"

    def details(self) -> str:
        """The multi-line body: every failure's detail, in check order."""
        blocks = [f"{f.check}: {f.summary}\n{f.detail}".rstrip() for f in self.failures]
        return "\n\n".join(blocks)
