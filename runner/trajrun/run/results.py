"""Results of checking cases and running suites: what reports render and what sets the exit code."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from ..match.verdict import Evaluation
from ..suites.golden import compact_steps
from ..trajectory import Trajectory, Usage

Outcome = Literal["passed", "failed", "error", "skipped", "xfailed", "xpassed"]
OUTCOME_ORDER: tuple[str, ...] = ("passed", "failed", "error", "skipped", "xfailed", "xpassed")
PROBLEMS: tuple[str, ...] = ("failed", "error", "xpassed")
"""The outcomes that fail a run."""
RunOutcome = Literal["passed", "failed", "error"]


@dataclass(frozen=True, slots=True)
class RepeatRun:
    """One run of a case under ``repeat``: its own outcome (before ``pass_rate`` and ``xfail``),
    its one-line message and its score."""

    outcome: RunOutcome
    message: str
    score: float | None = None


@dataclass(frozen=True, slots=True)
class Repeats:
    """What ``repeat: k`` made of a case's runs: each run, and the checks that failed in some runs
    and held in others (``flipped``; ``error`` when some runs erred and others did not)."""

    each: tuple[RepeatRun, ...]
    flipped: tuple[str, ...] = ()

    @property
    def runs(self) -> int:
        """How many times the agent ran (k)."""
        return len(self.each)

    @property
    def passed(self) -> int:
        """How many of the runs passed."""
        return sum(1 for run in self.each if run.outcome == "passed")

    @property
    def pass_at_k(self) -> bool:
        """pass@k: at least one run passed."""
        return self.passed > 0

    @property
    def pass_all_k(self) -> bool:
        """pass^k: every run passed."""
        return self.passed == self.runs

    @property
    def flaky(self) -> bool:
        """Whether the runs disagree: some passed and some did not."""
        return self.pass_at_k and not self.pass_all_k

    @property
    def letters(self) -> str:
        """A letter per run, as pytest's progress line has one per test: ``.`` passed, ``F``
        failed, ``E`` erred."""
        return "".join(".FE"[("passed", "failed", "error").index(r.outcome)] for r in self.each)

    def line(self) -> str:
        """``repeat .F.F: 2/4 runs passed, …``: the ``letters``, then the ``summary``."""
        return f"repeat {self.letters}: {self.summary()}"

    def summary(self) -> str:
        """``2/4 runs passed, pass@4 yes, pass^4 no, flaky; flipped: steps``."""
        k, words = self.runs, ("no", "yes")
        line = (
            f"{self.passed}/{k} runs passed, pass@{k} {words[self.pass_at_k]}, "
            f"pass^{k} {words[self.pass_all_k]}"
        )
        line += ", flaky" if self.flaky else ""
        return line + (f"; flipped: {', '.join(self.flipped)}" if self.flipped else "")

    def to_dict(self) -> dict[str, Any]:
        """The JSON report's ``repeats`` object."""
        return {
            "runs": self.runs,
            "passed": self.passed,
            "passed_share": round(self.passed / self.runs, 6),
            "pass_at_k": self.pass_at_k,
            "pass_all_k": self.pass_all_k,
            "flaky": self.flaky,
            "flipped": list(self.flipped),
            "outcomes": [
                {"outcome": run.outcome, "message": run.message, "score": run.score}
                for run in self.each
            ],
        }


@dataclass(frozen=True, slots=True)
class CaseResult:
    """The outcome of one case: ``message`` is one line, ``details`` the body (table and fields)."""

    case_id: str
    suite: str
    name: str
    file: str
    line: int
    outcome: Outcome
    duration: float = 0.0
    message: str = ""
    details: str = ""
    check_type: str | None = None
    score: float | None = None
    evaluation: Evaluation | None = None
    trajectory: Trajectory | None = None
    notes: tuple[str, ...] = ()
    bulk: Any = None
    """A bulk case's ``BulkSummary`` (counts, failures by check, worst records); ``None`` for other
    cases."""
    tool_calls: int | None = None
    """How many tool calls the run made (``None``: no trajectory was read), and its token ``usage``:
    what the reports' totals need, kept when a lean result drops the trajectory."""
    usage: Usage | None = None
    baseline: Literal["new", "known"] | None = None
    """With ``--baseline``, for a failed, erred or xpassed case: ``known`` when it failed in the
    baseline too, else ``new``; ``None`` for other cases and runs without a baseline."""
    repeats: Repeats | None = None
    """With ``repeat``, every run's outcome, pass@k, pass^k and the checks that flipped."""

    def __post_init__(self) -> None:
        """Take ``tool_calls`` and ``usage`` from the trajectory when one is given without them."""
        if self.trajectory is not None and self.tool_calls is None:
            object.__setattr__(self, "tool_calls", len(self.trajectory.calls))
            object.__setattr__(self, "usage", self.trajectory.usage)

    @property
    def actual_yaml(self) -> str | None:
        """The actual steps one line per call, for JUnit's ``<system-out>``: built only when a
        report shows it (by default for failing cases only: building it for every case was a large
        part of a run)."""
        return None if self.trajectory is None else compact_steps(self.trajectory)


def lean(result: CaseResult, keep: frozenset[str] | None) -> CaseResult:
    """The result without its trajectory and the steps and calls its steps check holds, unless a
    report shows them for its outcome (``keep``; ``None``: every outcome, for the JSON and HTML
    reports). Held for every case of a run they were most of its memory, and filling new memory is
    slower than reusing what the case before freed."""
    if keep is None or result.outcome in keep:
        return result
    evaluation = result.evaluation
    steps = None if evaluation is None else evaluation.steps
    bulky = getattr(steps, "expected_steps", None) or getattr(steps, "actual_calls", None)
    if result.trajectory is None and not bulky:
        return result
    if evaluation is not None and bulky:
        slim = dataclasses.replace(evaluation.steps, expected_steps=(), actual_calls=())
        evaluation = dataclasses.replace(evaluation, steps=slim)
    return dataclasses.replace(result, evaluation=evaluation, trajectory=None)


@dataclass(frozen=True, slots=True)
class SuiteResult:
    """All case results of one suite file, or its load errors when it could not be loaded."""

    name: str
    file: str
    cases: tuple[CaseResult, ...] = ()
    load_errors: tuple[str, ...] = ()
    duration: float = 0.0
    timestamp: datetime = field(default_factory=datetime.now)

    @property
    def usage(self) -> Usage | None:
        """Token usage summed over the cases' runs that recorded usage."""
        usages = [c.usage for c in self.cases if c.usage]
        total = None
        for u in usages:
            total = u if total is None else total + u
        return total


@dataclass(frozen=True, slots=True)
class Gates:
    """What decides the exit status beside the outcomes: ``--baseline`` (its file and the
    ``(suite, case)`` names that failed there), ``--fail-on new|any`` and ``--min-pass-rate``."""

    baseline: str | None = None
    known: frozenset[tuple[str, str]] = frozenset()
    fail_on: Literal["new", "any"] = "any"
    min_pass_rate: float | None = None

    def mark(self, case: CaseResult) -> CaseResult:
        """The case marked ``new`` or ``known`` when it is a problem and a baseline was given; else
        as it is."""
        if self.baseline is None or case.outcome not in PROBLEMS:
            return case
        known = (case.suite, case.name) in self.known
        return dataclasses.replace(case, baseline="known" if known else "new")


@dataclass(frozen=True, slots=True)
class RunResult:
    """A whole ``trajrun run``: suites in path order, and how many cases selection left out."""

    suites: tuple[SuiteResult, ...] = ()
    duration: float = 0.0
    deselected: int = 0
    usage_error: str | None = None
    nothing_found: str | None = None
    sharded: bool = False
    not_run: int = 0
    gates: Gates = field(default_factory=Gates)

    @property
    def cases(self) -> list[CaseResult]:
        """Every case result in order."""
        return [c for s in self.suites for c in s.cases]

    def counts(self) -> dict[str, int]:
        """Cases per outcome, in the contract's order, zeros included."""
        counts = dict.fromkeys(OUTCOME_ORDER, 0)
        for case in self.cases:
            counts[case.outcome] += 1
        return counts

    @property
    def judge_skipped(self) -> int:
        """How many cases had their ``judge:`` check skipped by ``--no-judge`` (never counted as
        passes)."""
        return sum(
            1
            for c in self.cases
            if c.evaluation and c.evaluation.judge and c.evaluation.judge.skipped
        )

    @property
    def flaky(self) -> int:
        """How many cases under ``repeat`` had runs that disagree (some passed, some did not)."""
        return sum(1 for c in self.cases if c.repeats is not None and c.repeats.flaky)

    @property
    def pass_rate(self) -> float | None:
        """The share of the cases that ran (skipped ones left out) that did not fail, err or xpass;
        ``None`` when none ran."""
        ran = [c for c in self.cases if c.outcome != "skipped"]
        if not ran:
            return None
        return sum(1 for c in ran if c.outcome not in PROBLEMS) / len(ran)

    def failing(self) -> list[CaseResult]:
        """The failed, erred and xpassed cases that fail the run: all of them, or with ``--fail-on
        new`` the new ones."""
        every = self.gates.fail_on == "any"
        return [c for c in self.cases if c.outcome in PROBLEMS and (every or c.baseline != "known")]

    def rate_holds(self) -> bool:
        """Whether ``--min-pass-rate`` was given and the pass rate reaches it (the failures then
        pass the run)."""
        least, rate = self.gates.min_pass_rate, self.pass_rate
        return least is not None and rate is not None and rate >= least - 1e-9  # 19/20 reaches 0.95

    def exit_code(self) -> int:
        """2 load or usage error, 1 a case failed/erred/xpassed, 5 nothing collected, 0 otherwise;
        ``--fail-on new`` leaves known failures out, and ``--min-pass-rate`` lets failures pass when
        enough cases did.

        An empty ``--shard`` exits 0: a CI matrix may have more shards than the suites have cases.
        """
        if self.usage_error or any(s.load_errors for s in self.suites):
            return 2
        if self.failing():
            return 0 if self.rate_holds() else 1
        if not self.cases:
            return 0 if self.sharded and self.deselected else 5
        return 0

    def summary_line(self) -> str:
        """The closing line, pytest-style: ``3 passed, 1 failed, 1 error in 0.12s``.

        A suite that could not be loaded counts as one error, as a collection error does in pytest.
        """
        counts = self.counts()
        counts["error"] += sum(1 for s in self.suites if s.load_errors)
        words = {"error": ("error", "errors")}
        parts = []
        for outcome, n in counts.items():
            if n:
                singular, plural = words.get(outcome, (outcome, outcome))
                parts.append(f"{n} {singular if n == 1 else plural}")
        if self.deselected:
            parts.append(f"{self.deselected} deselected")
        if self.flaky:
            parts.append(f"{self.flaky} flaky")
        if self.judge_skipped:
            n = self.judge_skipped
            parts.append(f"{n} judge check{'s' if n != 1 else ''} skipped (--no-judge)")
        if self.not_run:
            parts.append(f"{self.not_run} not run (stopped at the first failure)")
        if self.sharded and not self.cases and self.deselected:
            parts.insert(0, "no cases in this shard")
        return f"{', '.join(parts) or 'no cases ran'} in {self.duration:.2f}s"
