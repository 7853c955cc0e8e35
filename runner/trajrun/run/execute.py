"""Running one case: read its source, apply its golden file, evaluate, and decide the outcome."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..errors import SourceError, SuiteErrors, TrajrunError, exception_line, exception_trace, inline
from ..match.evaluate import evaluate
from ..match.expectation import ORDERED_MODES, UNSET, Expectation
from ..match.failed import failed_calls, left_out_note, mark_errors, without_failed
from ..match.verdict import CheckFailure, Evaluation, JudgeVerdict
from ..sources import apply_select, load_trajectory, read_trajectory
from ..sources.extras import unmet
from ..suites.golden import dump_steps, load_golden, write_golden
from ..suites.model import Case, Source, Suite
from ..trajectory import Trajectory
from .judge import SKIPPED, Judge, default_judge
from .results import CaseResult, RepeatRun, Repeats

if TYPE_CHECKING:
    from concurrent.futures import Future

TRACEBACK_VAR = "TRAJRUN_TRACEBACK"
"""Set to 1 to put an internal error's traceback in its case's details (``trajrun run`` keeps it out
by default)."""


class ReaderCrash(SourceError):
    """An unexpected exception while reading a source (a trajrun bug), as a case error; ``trace`` is
    its traceback."""

    def __init__(self, exc: Exception, origin: str) -> None:
        last = exception_line(exc)
        super().__init__(f"internal error reading {origin}: {last} (please report it)")
        self.trace = exception_trace(exc)


@contextlib.contextmanager
def _reading(origin: str) -> Iterator[None]:
    """Any exception but trajrun's own errors becomes a ``ReaderCrash``, so one case errs, not the
    whole run."""
    try:
        yield
    except TrajrunError:
        raise
    except Exception as exc:  # noqa: BLE001 - a reader bug must not end the run
        raise ReaderCrash(exc, origin) from None


UNCOUNTED_KEPT = 256
"""How many sources of cases ``SourceCache.expect`` did not count (a streamed suite file's,
pytest's) stay cached."""


class SourceCache:
    """Reads each file source once per run, however many cases name it (errors are cached too).
    Sources of the cases ``expect`` counted leave it once the last of those cases has read them
    (``done``); of the others, the ``UNCOUNTED_KEPT`` used last stay, so memory stays bounded when
    no one knows which cases come next."""

    def __init__(self) -> None:
        self._cache: dict[tuple[Any, ...], Trajectory | SourceError] = {}
        self._uses: dict[tuple[Any, ...], int] = {}
        self._recent: dict[tuple[Any, ...], None] = {}  # uncounted keys, least recently used first

    def trajectory(self, source: Source) -> Trajectory:
        """The trajectory of a file or inline source."""
        if source.file is None:
            with _reading("inline messages"):
                return _read(source.messages, source, "inline messages")
        key = file_key(source)
        if key not in self._cache:
            try:
                with _reading(str(source.file)):
                    self._cache[key] = load_trajectory(
                        source.file,
                        format=source.format,
                        select=source.select,
                        record=source.record,
                        thread=source.thread,
                        checkpoint=source.checkpoint,
                        traces=source.traces,
                    )
            except SourceError as exc:
                self._cache[key] = exc
        if key not in self._uses:
            self._used_uncounted(key)
        hit = self._cache[key]
        if isinstance(hit, SourceError):
            raise hit
        return hit

    def _used_uncounted(self, key: tuple[Any, ...]) -> None:
        """Mark an uncounted source as used last; past ``UNCOUNTED_KEPT`` of them, drop the one used
        longest ago."""
        recent = self._recent
        recent.pop(key, None)
        recent[key] = None
        if len(recent) > UNCOUNTED_KEPT:
            oldest = next(iter(recent))
            del recent[oldest]
            self._cache.pop(oldest, None)

    def expect(self, cases: Iterable[Case | Any]) -> None:
        """Count the cases (others are ignored) that will read each file source."""
        uses = self._uses
        for case in cases:
            if isinstance(case, Case) and (key := _cache_key(case.source)) is not None:
                uses[key] = uses.get(key, 0) + 1

    def done(self, case: Case | Any) -> None:
        """A case ``expect`` counted has read its source: the last one drops it."""
        key = _cache_key(case.source) if isinstance(case, Case) else None
        if key is None or key not in self._uses:
            return
        self._uses[key] -= 1
        if not self._uses[key]:
            del self._uses[key]
            self._cache.pop(key, None)
            self._recent.pop(key, None)


def _cache_key(source: Source | None) -> tuple[Any, ...] | None:
    """The key ``expect`` and ``done`` count a source under (``file_key``); ``None`` for a source
    the cache never reads (inline, live, bulk)."""
    if source is None or source.file is None or source.each is not None or source.live:
        return None
    return file_key(source)


def file_key(source: Source) -> tuple[Any, ...]:
    """What makes two file sources the same read: the file and how it is read."""
    return (
        source.file,
        source.format,
        source.select,
        source.record,
        source.thread,
        source.checkpoint,
        source.traces,
    )


def live_trajectory(
    source: Source, folder: Path, case: str = "", notes: list[str] | None = None
) -> Trajectory:
    """Run a live source once and read what it returned; with a cassette or ``capture: wire``,
    through the model proxy (``case`` names the cassette; a note on what became of it goes to
    ``notes``)."""
    origin = source.command if source.command is not None else str(source.python)
    with _reading(origin):
        if source.cassette is None and source.capture != "wire":
            return _read(_live_document(source, folder, {}), source, origin)
        from ..sources.wire import (
            read_wire,
        )  # deferred: the proxy loads only for cassettes and capture: wire
        from .cassettes import model_traffic  # deferred: as above

        doc, exchanges = model_traffic(
            source,
            folder,
            case,
            lambda env: _live_document(source, folder, env),
            origin,
            [] if notes is None else notes,
        )
        return (
            read_wire(exchanges, origin) if source.capture == "wire" else _read(doc, source, origin)
        )


def _live_document(source: Source, folder: Path, env: Mapping[str, str]) -> Any:
    """What the command printed, or what the function returned (``env`` added to its environment);
    with ``capture: otlp``, the spans it exported; with ``capture: wire``, None (the run is in its
    traffic)."""
    if source.capture == "otlp":
        from ..sources.otlp import (
            capture_spans,
        )  # deferred: the HTTP server loads only for capture: otlp

        origin = source.command if source.command is not None else str(source.python)
        return capture_spans(
            lambda variables: _run_agent(source, folder, {**env, **variables}, True), origin
        )
    return _run_agent(source, folder, env, source.capture is not None)


def _run_agent(source: Source, folder: Path, env: Mapping[str, str], captured: bool) -> Any:
    """Run the command or call the function with ``env`` added to its environment; when the run is
    ``captured`` elsewhere, its output is not read."""
    from ..sources.live import (
        call_python,
        run_command,
    )  # deferred: subprocess and pickle load only for live sources

    capture = env if captured else None
    extra = None if captured or not env else env
    if source.command is not None:
        return run_command(source.command, folder, source.timeout, capture, env=extra)
    assert source.python is not None
    return call_python(source.python, source.args, folder, source.timeout, capture, env=extra)


def _read(doc: Any, source: Source, origin: str) -> Trajectory:
    """A document already in hand (inline, or a live source's output), through ``select`` and the
    reader."""
    if source.select:
        doc = apply_select(doc, source.select, origin)
    return read_trajectory(doc, source.format, origin=origin, traces=source.traces)


@dataclass(frozen=True, slots=True)
class Attempt:
    """One evaluation of a case on one run of its source."""

    trajectory: Trajectory | None
    evaluation: Evaluation
    notes: tuple[str, ...] = ()
    details: str = ""


def run_case(
    case: Case,
    suite: Suite,
    case_id: str,
    cache: SourceCache,
    update_golden: bool = False,
    judge: Judge | None = None,
) -> CaseResult:
    """Run one case to a result, its judge checks included; nothing it does can raise past here."""
    return start_case(case, suite, case_id, cache, update_golden, judge).result()


class PendingCase:
    """A case whose source was read and rule checks evaluated, and whose judge checks may still be
    running."""

    def __init__(
        self,
        case: Case,
        base: CaseResult,
        attempts: Sequence[Attempt],
        verdicts: Sequence[Future[JudgeVerdict] | None],
        started: float,
        decided: CaseResult | None = None,
    ) -> None:
        self.case, self.base, self.attempts, self.verdicts, self.started = (
            case,
            base,
            attempts,
            verdicts,
            started,
        )
        self._ended = [time.perf_counter()]
        self._result = decided
        for verdict in verdicts:
            if verdict is not None:
                verdict.add_done_callback(lambda _: self._ended.append(time.perf_counter()))

    def done(self) -> bool:
        """Whether every judge check has its verdict (``result`` will not wait)."""
        return all(v is None or v.done() for v in self.verdicts)

    def result(self) -> CaseResult:
        """The case's result, waiting for its judge checks."""
        if self._result is None:
            verdicts = [v.result() if v is not None else None for v in self.verdicts]
            attempts = (
                [_judged(a, v) for a, v in zip(self.attempts, verdicts, strict=True)]
                if verdicts
                else list(self.attempts)
            )
            result = _result(self.case, self.base, attempts, max(self._ended) - self.started)
            self._result = _judge_skipped(self.case, result)
        return self._result


def start_case(
    case: Case,
    suite: Suite,
    case_id: str,
    cache: SourceCache,
    update_golden: bool = False,
    judge: Judge | None = None,
) -> PendingCase:
    """Read the case's source and evaluate its rule checks now; its judge checks go on in
    ``judge``'s threads."""
    started = time.perf_counter()
    base = CaseResult(case_id, suite.name, case.name, str(suite.path), case.loc.line, "skipped")
    if case.skip is not None:
        return PendingCase(
            case, base, [], [], started, dataclasses.replace(base, message=case.skip or "skipped")
        )
    missing = unmet(case.requires) if case.requires else None
    if missing is not None:
        return PendingCase(case, base, [], [], started, dataclasses.replace(base, message=missing))
    folder = suite.path.parent
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
    runs = case.repeat or 1
    attempts = [_attempt(case, folder, cache, update_golden) for _ in range(runs)]
    verdicts = [_submit(case, suite, a, judge) for a in attempts] if case.expect.judge else []
    return PendingCase(case, base, attempts, verdicts, started)


def _submit(
    case: Case, suite: Suite, attempt: Attempt, judge: Judge | None
) -> Future[JudgeVerdict] | None:
    """Start the judge on one attempt's run (none without a run); the reference is the steps as
    checked."""
    spec = case.expect.judge
    if spec is None or attempt.trajectory is None:
        return None
    steps = getattr(attempt.evaluation.steps, "expected_steps", None) or case.expect.steps
    return (judge or default_judge()).submit(
        spec, suite.judge_defaults, attempt.trajectory, steps, case.expect.mode
    )


def _judged(attempt: Attempt, verdict: JudgeVerdict | None) -> Attempt:
    """The attempt with the judge among its checks: an error errs, a score under the threshold
    fails."""
    if verdict is None:
        return attempt
    evaluation = attempt.evaluation
    failures, errors = evaluation.failures, evaluation.errors
    if verdict.error is not None:
        errors += (f"judge: {verdict.error}",)
    elif verdict.passed is False:
        who = f" ({verdict.model})" if verdict.model else ""
        # the judge's text, one line of the details
        detail = f"reasoning{who}: {inline(verdict.reasoning)}"
        failures += (
            CheckFailure("judge", f"score {verdict.score:.2f} < {verdict.threshold:.2f}", detail),
        )
    judged = dataclasses.replace(evaluation, failures=failures, errors=errors, judge=verdict)
    return dataclasses.replace(attempt, evaluation=judged)


def _judge_skipped(case: Case, result: CaseResult) -> CaseResult:
    """``--no-judge``: never a pass. A case whose only check is the judge is skipped; others say so
    in a note."""
    verdict = result.evaluation.judge if result.evaluation else None
    if verdict is None or verdict.skipped is None or case.expect.judge is None:
        return result
    if case.expect.judge.alone and result.outcome in ("passed", "xpassed"):
        return dataclasses.replace(
            result,
            outcome="skipped",
            check_type=None,
            message=f"judge check skipped ({SKIPPED}); it is this case's only check",
        )
    note = f"judge check skipped ({SKIPPED}): the outcome rests on the case's other checks"
    return dataclasses.replace(result, notes=(*result.notes, note))


def _attempt(case: Case, folder: Path, cache: SourceCache, update_golden: bool) -> Attempt:
    """Obtain the trajectory and evaluate every check, turning any problem into a case error."""
    try:
        assert case.source is not None
        notes: list[str] = []
        traj = (
            live_trajectory(case.source, folder, case.name, notes)
            if case.source.live
            else cache.trajectory(case.source)
        )
    except TrajrunError as exc:
        trace = _trace_details(exc.trace) if isinstance(exc, ReaderCrash) else ""
        return Attempt(None, Evaluation(errors=(f"source: {exc}",)), details=trace)
    try:
        if case.source.error_when is not UNSET:
            traj = mark_errors(traj, case.source.error_when)
        attempt = _evaluate(case, traj, update_golden)
        return dataclasses.replace(attempt, notes=(*notes, *attempt.notes)) if notes else attempt
    except TrajrunError as exc:
        return Attempt(traj, Evaluation(errors=(str(exc),)))
    except Exception as exc:  # noqa: BLE001 - one broken case never stops the others
        last = exception_line(exc)
        trace = exception_trace(exc)
        return Attempt(
            traj,
            Evaluation(errors=(f"internal error: {last} (please report it)",)),
            details=_trace_details(trace),
        )


def _trace_details(trace: str) -> str:
    """An internal error's details: its traceback when ``TRAJRUN_TRACEBACK`` is set, else how to see
    it."""
    if os.environ.get(TRACEBACK_VAR, "").strip() not in ("", "0"):
        return trace
    return f"set {TRACEBACK_VAR}=1 to see the traceback here"


def _evaluate(case: Case, traj: Trajectory, update_golden: bool) -> Attempt:
    """Evaluate, reading (and where asked, rewriting) the golden file."""
    if case.golden is None:
        evaluation, note = _noted(case.expect, traj)
        return Attempt(traj, evaluation, (note,) if note else ())
    notes: list[str] = []
    if not case.golden.exists():
        if not update_golden:
            return Attempt(traj, Evaluation(errors=(_missing_golden(case.golden),)))
        notes.append(_write_golden(case.golden, traj, "created", case.expect))
    evaluation, note = _noted(_with_golden(case.expect, case.golden), traj)
    if (
        update_golden
        and not evaluation.errors
        and any(f.check == "steps" for f in evaluation.failures)
    ):
        notes.append(_write_golden(case.golden, traj, "updated", case.expect))
        evaluation, note = _noted(_with_golden(case.expect, case.golden), traj)
    return Attempt(traj, evaluation, (*notes, *([note] if note else [])))


def _noted(expect: Expectation, traj: Trajectory) -> tuple[Evaluation, str | None]:
    """Evaluate; with ``failed_calls: ignore``, a note naming the failed calls it left out when that
    changed a check's verdict (the run is then evaluated a second time, counting them)."""
    evaluation = evaluate(expect, traj)
    if expect.failed_calls != "ignore" or not failed_calls(traj):
        return evaluation, None
    counting = evaluate(dataclasses.replace(expect, failed_calls="count"), traj)
    return evaluation, left_out_note(traj, evaluation, counting)


def _missing_golden(path: Path) -> str:
    """The case error for a golden file that does not exist yet."""
    return (
        f"golden file {path} does not exist; "
        "run `trajrun run --update-golden` to record it from this run"
    )


def _with_golden(expect: Expectation, path: Path) -> Expectation:
    """The expectation with its steps read from the golden file."""
    try:
        return dataclasses.replace(expect, steps=load_golden(path))
    except SuiteErrors as exc:
        raise TrajrunError(f"golden file is invalid:\n{exc}") from None


def _write_golden(path: Path, traj: Trajectory, verb: str, expect: Expectation) -> str:
    """Write the run's steps as the golden file (atomic; a failure keeps the old file); returns the
    note. Parallel groups only under a mode that reads them (the others make a group an error); no
    failed call where the case leaves them out."""
    kept = without_failed(traj) if expect.failed_calls == "ignore" else traj
    write_golden(path, dump_steps(kept, parallel=expect.mode in ORDERED_MODES))
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
        notes=tuple(n for a in attempts for n in a.notes),
        details="\n\n".join(part for part in (evaluation.details(), last.details) if part),
        check_type=evaluation.failures[0].check if evaluation.failures else None,
        repeats=_repeats(attempts) if case.repeat is not None else None,
    )
    return _outcome(case, result, evaluation)


def _outcome(case: Case, result: CaseResult, evaluation: Evaluation) -> CaseResult:
    """Map an evaluation to passed/failed/error/xfailed/xpassed (xfail covers failures only)."""
    if evaluation.errors:
        return dataclasses.replace(
            result, outcome="error", message=evaluation.message(), check_type="error"
        )
    if evaluation.failures:
        if case.xfail is not None:
            return dataclasses.replace(
                result, outcome="xfailed", message=case.xfail or "expected failure"
            )
        return dataclasses.replace(result, outcome="failed", message=evaluation.message())
    if case.xfail is not None:
        return dataclasses.replace(
            result, outcome="xpassed", message=f"XPASS(strict): {case.xfail}", check_type="xpass"
        )
    return result


def _repeat_evaluation(case: Case, attempts: list[Attempt]) -> Evaluation:
    """``repeat``: the case passes when ``pass_rate`` of the runs pass; an error only when all
    err."""
    passed = sum(a.evaluation.passed for a in attempts)
    scores = [a.evaluation.score for a in attempts if a.evaluation.score is not None]
    mean = sum(scores) / len(scores) if scores else None
    judge = attempts[-1].evaluation.judge
    if all(a.evaluation.errors for a in attempts):
        last = attempts[-1].evaluation.message()
        return Evaluation(
            errors=(f"all {len(attempts)} runs erred; last: {last}",), score=mean, judge=judge
        )
    if passed / len(attempts) >= case.pass_rate:
        return Evaluation(score=mean, steps=attempts[-1].evaluation.steps, judge=judge)
    failing = next(a.evaluation for a in reversed(attempts) if not a.evaluation.passed)
    summary = f"{passed}/{len(attempts)} runs passed, pass_rate {case.pass_rate:g}"
    return Evaluation(
        failures=(
            CheckFailure(
                "repeat", summary, f"last failing run: {failing.message()}\n{failing.details()}"
            ),
        ),
        score=mean,
        steps=failing.steps,
        judge=judge,
    )


def _repeats(attempts: list[Attempt]) -> Repeats:
    """Each run's own outcome, message and score, and the checks that flipped between runs."""
    evaluations = [a.evaluation for a in attempts]
    each = tuple(RepeatRun(_run_outcome(e), e.message(), e.score) for e in evaluations)
    return Repeats(each, _flipped(evaluations))


def _run_outcome(evaluation: Evaluation) -> Literal["passed", "failed", "error"]:
    """One run's outcome: an error when a check could not be evaluated, else failed or passed."""
    if evaluation.errors:
        return "error"
    return "failed" if evaluation.failures else "passed"


def _flipped(evaluations: list[Evaluation]) -> tuple[str, ...]:
    """The checks that failed in some runs and held in others, in the order first seen (a run that
    erred is left out: its checks may not have been evaluated); ``error`` when only some runs
    erred."""
    judged = [e.failures for e in evaluations if not e.errors]
    failing = [{f.check for f in failures} for failures in judged]
    seen = dict.fromkeys(f.check for failures in judged for f in failures)
    flipped = [check for check in seen if not all(check in failed for failed in failing)]
    erred = sum(1 for e in evaluations if e.errors)
    if 0 < erred < len(evaluations):
        flipped.append("error")
    return tuple(flipped)
