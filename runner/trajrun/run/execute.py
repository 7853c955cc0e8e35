"""Running one case: read its source, apply its golden file, evaluate, and decide the outcome."""

from __future__ import annotations

import dataclasses
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from ..errors import SourceError, SuiteErrors, TrajrunError
from ..match.evaluate import evaluate
from ..match.expectation import Expectation
from ..match.verdict import CheckFailure, Evaluation
from ..sources import apply_select, load_trajectory, read_trajectory
from ..sources.live import call_python, run_command
from ..suites.golden import compact_steps, dump_steps, load_golden, write_golden
from ..suites.model import Case, Source, Suite
from ..trajectory import Trajectory
from .results import CaseResult


class SourceCache:
    """Reads each file source once per run, however many cases name it (errors are cached too)."""

    def __init__(self) -> None:
        self._cache: dict[tuple[Any, ...], Trajectory | SourceError] = {}

    def trajectory(self, source: Source) -> Trajectory:
        """The trajectory of a file or inline source."""
        if source.file is None:
            return _read(source.messages, source, "inline messages")
        key = (source.file, source.format, source.select, source.record)
        if key not in self._cache:
            try:
                self._cache[key] = load_trajectory(
                    source.file, format=source.format, select=source.select, record=source.record
                )
            except SourceError as exc:
                self._cache[key] = exc
        hit = self._cache[key]
        if isinstance(hit, SourceError):
            raise hit
        return hit


def live_trajectory(source: Source, folder: Path) -> Trajectory:
    """Run a live source once and read what it returned."""
    if source.command is not None:
        doc, origin = run_command(source.command, folder, source.timeout), source.command
    else:
        assert source.python is not None
        doc, origin = call_python(source.python, source.args, folder, source.timeout), source.python
    return _read(doc, source, origin)


def _read(doc: Any, source: Source, origin: str) -> Trajectory:
    """A document already in hand (inline, or a live source's output), through ``select`` and the reader."""
    if source.select:
        doc = apply_select(doc, source.select, origin)
    return read_trajectory(doc, source.format, origin=origin)


@dataclasses.dataclass(frozen=True, slots=True)
class Attempt:
    """One evaluation of a case on one run of its source."""

    trajectory: Trajectory | None
    evaluation: Evaluation
    notes: tuple[str, ...] = ()


def run_case(case: Case, suite: Suite, case_id: str, cache: SourceCache, update_golden: bool = False) -> CaseResult:
    """Run one case to a result; nothing it does can raise past here."""
    started = time.perf_counter()
    base = CaseResult(case_id, suite.name, case.name, str(suite.path), case.loc.line, "skipped")
    if case.skip is not None:
        return dataclasses.replace(base, message=case.skip or "skipped")
    folder = suite.path.parent
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
    runs = case.repeat or 1
    attempts = [_attempt(case, folder, cache, update_golden) for _ in range(runs)]
    return _result(case, base, attempts, time.perf_counter() - started)


def _attempt(case: Case, folder: Path, cache: SourceCache, update_golden: bool) -> Attempt:
    """Obtain the trajectory and evaluate every check, turning any problem into a case error."""
    try:
        assert case.source is not None
        traj = live_trajectory(case.source, folder) if case.source.live else cache.trajectory(case.source)
    except TrajrunError as exc:
        return Attempt(None, Evaluation(errors=(f"source: {exc}",)))
    try:
        return _evaluate(case, traj, update_golden)
    except TrajrunError as exc:
        return Attempt(traj, Evaluation(errors=(str(exc),)))
    except Exception as exc:  # noqa: BLE001 - one broken case never stops the others
        last = traceback.format_exception_only(type(exc), exc)[-1].strip()
        return Attempt(traj, Evaluation(errors=(f"internal error: {last}",)))


def _evaluate(case: Case, traj: Trajectory, update_golden: bool) -> Attempt:
    """Evaluate, reading (and where asked, rewriting) the golden file."""
    if case.golden is None:
        return Attempt(traj, evaluate(case.expect, traj))
    notes: list[str] = []
    if not case.golden.exists():
        if not update_golden:
            return Attempt(traj, Evaluation(errors=(_missing_golden(case.golden),)))
        notes.append(_write_golden(case.golden, traj, "created"))
    evaluation = evaluate(_with_golden(case.expect, case.golden), traj)
    if update_golden and not evaluation.errors and any(f.check == "steps" for f in evaluation.failures):
        notes.append(_write_golden(case.golden, traj, "updated"))
        evaluation = evaluate(_with_golden(case.expect, case.golden), traj)
    return Attempt(traj, evaluation, tuple(notes))


def _missing_golden(path: Path) -> str:
    """The case error for a golden file that does not exist yet."""
    return f"golden file {path} does not exist; run `trajrun run --update-golden` to record it from this run"


def _with_golden(expect: Expectation, path: Path) -> Expectation:
    """The expectation with its steps read from the golden file."""
    try:
        return dataclasses.replace(expect, steps=load_golden(path))
    except SuiteErrors as exc:
        raise TrajrunError(f"golden file is invalid:\n{exc}") from None


def _write_golden(path: Path, traj: Trajectory, verb: str) -> str:
    """Write the run's steps as the golden file (atomic; a failure keeps the old file); returns the note."""
    write_golden(path, dump_steps(traj))
    return f"golden file {verb}: {path}"


def _result(case: Case, base: CaseResult, attempts: list[Attempt], duration: float) -> CaseResult:
    """Fold one or more attempts (``repeat``) into the case's outcome, message and body."""
    last = attempts[-1]
    if len(attempts) == 1:
        evaluation = last.evaluation
    else:
        evaluation = _repeat_evaluation(case, attempts)
    result = dataclasses.replace(
        base,
        outcome="passed",
        duration=duration,
        score=evaluation.score,
        evaluation=evaluation,
        trajectory=last.trajectory,
        actual_yaml=_actual_yaml(last.trajectory),
        notes=tuple(n for a in attempts for n in a.notes),
        details=evaluation.details(),
        check_type=evaluation.failures[0].check if evaluation.failures else None,
    )
    return _outcome(case, result, evaluation)


def _outcome(case: Case, result: CaseResult, evaluation: Evaluation) -> CaseResult:
    """Map an evaluation to passed/failed/error/xfailed/xpassed (xfail covers failures only)."""
    if evaluation.errors:
        return dataclasses.replace(result, outcome="error", message=evaluation.message(), check_type="error")
    if evaluation.failures:
        if case.xfail is not None:
            return dataclasses.replace(result, outcome="xfailed", message=case.xfail or "expected failure")
        return dataclasses.replace(result, outcome="failed", message=evaluation.message())
    if case.xfail is not None:
        return dataclasses.replace(result, outcome="xpassed", message=f"XPASS(strict): {case.xfail}", check_type="xpass")
    return result


def _repeat_evaluation(case: Case, attempts: list[Attempt]) -> Evaluation:
    """``repeat``: the case passes when ``pass_rate`` of the runs pass; an error only when all err."""
    passed = sum(a.evaluation.passed for a in attempts)
    scores = [a.evaluation.score for a in attempts if a.evaluation.score is not None]
    mean = sum(scores) / len(scores) if scores else None
    if all(a.evaluation.errors for a in attempts):
        return Evaluation(errors=(f"all {len(attempts)} runs erred; last: {attempts[-1].evaluation.message()}",), score=mean)
    if passed / len(attempts) >= case.pass_rate:
        return Evaluation(score=mean, steps=attempts[-1].evaluation.steps)
    failing = next(a.evaluation for a in reversed(attempts) if not a.evaluation.passed)
    summary = f"{passed}/{len(attempts)} runs passed, pass_rate {case.pass_rate:g}"
    return Evaluation(
        failures=(CheckFailure("repeat", summary, f"last failing run: {failing.message()}\n{failing.details()}"),),
        score=mean,
        steps=failing.steps,
    )


def _actual_yaml(traj: Trajectory | None) -> str | None:
    """The actual steps as YAML, one line per call, for JUnit system-out."""
    if traj is None:
        return None
    return compact_steps(traj)
