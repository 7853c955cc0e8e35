"""Bulk cases: a case whose source has ``each`` is evaluated once per record, on this machine or on
a Dask cluster.

A ``BulkSession`` runs the bulk cases of a run: it lists the files, cuts them into partitions, hands
them to an engine (``local``: this process, or ``-j N`` forked workers; ``dask``: a cluster's
workers), and folds the per-record verdicts into the case's result. Every engine evaluates a
partition with ``evaluate_partition``, so results are the same whichever runs them, and come back in
partition order.

``evaluate_bulk`` is the library entry: a case (or an expectation) over any iterable of documents,
or over a ``dask.bag`` of them.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from ..errors import SuiteErrors, TrajrunError
from ..match.expectation import UNSET, Expectation
from ..match.verdict import CheckFailure, Evaluation
from ..suites.golden import load_golden
from ..suites.model import Case, Suite
from .execute import PendingCase
from .results import CaseResult

if TYPE_CHECKING:
    from .bulk_results import BulkSummary

PENDING = "bulk-pending"
"""The ``check_type`` of a bulk case's stand-in result from a ``-j`` worker; the parent then runs
the case."""


@dataclass(frozen=True, slots=True)
class BulkOptions:
    """How bulk cases run: the engine, a Dask scheduler's address, where ``--records`` lines go,
    (for tests) the size of a JSONL byte range, and what hears the engine's notes (the Dask
    dashboard's link, a lost worker)."""

    engine: str = "local"
    scheduler: str | None = None
    records: Path | None = None
    split: int | None = None
    notes: Callable[[str], None] | None = field(default=None, compare=False)


def is_bulk(case: Case) -> bool:
    """Whether a case is evaluated once per record (its source has ``each``)."""
    return case.source is not None and case.source.each is not None


class BulkSession:
    """Runs the bulk cases of one run: the ``--records`` file, the engine (a Dask client is made
    once), progress."""

    def __init__(
        self, options: BulkOptions | None = None, jobs: int = 1, reporter: Any = None
    ) -> None:
        self.options, self.jobs, self.reporter = options or BulkOptions(), jobs, reporter
        self.sink: IO[str] | None = None
        self.engine: Any = None

    def __enter__(self) -> BulkSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the records file and the Dask client (and the cluster it started)."""
        if self.sink is not None:
            self.sink.close()
            self.sink = None
        if self.engine is not None:
            self.engine.close()
            self.engine = None

    def start(self, case: Case, suite: Suite, case_id: str) -> PendingCase:
        """The case run to its result now, as the runner's pipeline takes it."""
        base = CaseResult(case_id, suite.name, case.name, str(suite.path), case.loc.line, "skipped")
        return PendingCase(case, base, [], [], time.perf_counter(), self.run(case, suite, case_id))

    def run(self, case: Case, suite: Suite, case_id: str) -> CaseResult:
        """Evaluate a bulk case over every record of its source; a problem is the case's error,
        never a crash."""
        from ..sources.records import (
            files_of,
            partitions,
        )  # deferred: start-up time of runs without bulk cases
        from .bulk_eval import BulkSpec  # deferred: as above
        from .bulk_results import Aggregate  # deferred: as above

        started = time.perf_counter()
        base = CaseResult(
            case_id,
            suite.name,
            case.name,
            str(suite.path),
            case.loc.line,
            "error",
            check_type="error",
        )
        source = case.source
        assert source is not None and source.each is not None
        try:
            spec = BulkSpec(
                _expectation(case),
                source.each,
                source.format,
                source.select,
                source.id,
                keep_all=self.options.records is not None,
                error_when=source.error_when,
            )
            files = files_of(source.url or str(source.file))
            parts = partitions(files, source.each, self._workers(), self.options.split)
            sink = self._sink()
            start = sink.tell() if sink is not None else 0
            aggregate = Aggregate(case_id, sink, self._progress(case_id))
            self._engine().run(spec, parts, aggregate)
        except TrajrunError as exc:
            return dataclasses.replace(
                base,
                message=str(exc),
                duration=time.perf_counter() - started,
                evaluation=Evaluation(errors=(str(exc),)),
            )
        tell = getattr(self.reporter, "records_progress", None)
        if tell is not None:
            tell(case_id, aggregate.seen, True)
        summary = aggregate.summary(source.each, len(files), case.pass_rate, self.options.engine)
        if sink is not None:
            summary = dataclasses.replace(
                summary, records_file=str(self.options.records), records_span=(start, sink.tell())
            )
        return bulk_result(case, base, summary, time.perf_counter() - started)

    def _workers(self) -> int:
        """How many processes share the partitions (a Dask cluster's own count when one is used)."""
        return self._engine().workers() if self.options.engine == "dask" else self.jobs

    def _engine(self) -> Any:
        """The engine, made on first use."""
        if self.engine is None:
            if self.options.engine == "dask":
                from .dask_engine import (
                    DaskEngine,
                )  # deferred: dask is an optional extra, slow to import

                self.engine = DaskEngine(
                    self.options.scheduler, self.jobs, notes=self.options.notes
                )
            else:
                from .bulk_local import (
                    LocalEngine,
                )  # deferred: multiprocessing and tempfile, for bulk cases only

                self.engine = LocalEngine(self.jobs)
        return self.engine

    def _sink(self) -> IO[str] | None:
        """The ``--records`` file, opened (and emptied) on first use."""
        if self.sink is None and self.options.records is not None:
            self.options.records.parent.mkdir(parents=True, exist_ok=True)
            self.sink = open(self.options.records, "w", encoding="utf-8")  # noqa: SIM115 - closed by close()
        return self.sink

    def _progress(self, case_id: str) -> Callable[[int], None] | None:
        """The reporter's records counter for this case, when it has one."""
        tell = getattr(self.reporter, "records_progress", None)
        return None if tell is None else lambda done: tell(case_id, done)


def _expectation(case: Case) -> Expectation:
    """The case's expectation, its steps read from its golden file when it has one (bulk cases never
    write it)."""
    if case.golden is None:
        return case.expect
    if not case.golden.exists():
        raise TrajrunError(
            f"golden file {case.golden} does not exist; bulk cases read golden files but never "
            "write them: record one from a single run with `trajrun record`"
        )
    try:
        return dataclasses.replace(case.expect, steps=load_golden(case.golden))
    except SuiteErrors as exc:
        raise TrajrunError(f"golden file is invalid:\n{exc}") from None


def bulk_result(case: Case, base: CaseResult, summary: BulkSummary, duration: float) -> CaseResult:
    """A bulk case's outcome from its summary: an error with no record or when every record erred; a
    failure when fewer than ``pass_rate`` of the records passed; ``xfail`` as for any case."""
    result = dataclasses.replace(
        base, duration=duration, score=summary.score, bulk=summary, check_type=None
    )
    if summary.total == 0 or summary.error == summary.total:
        files = f"{summary.files:,} file{'s' if summary.files != 1 else ''}"
        why = (
            f"no records: the {files} matched hold none"
            if not summary.total
            else f"every record erred ({summary.total:,}); first: {summary.worst[0].message}"
        )
        return dataclasses.replace(
            result,
            outcome="error",
            message=why,
            check_type="error",
            details=summary.details(),
            evaluation=Evaluation(errors=(why,)),
        )
    if not summary.ok:
        failure = CheckFailure("records", summary.message(), summary.details())
        result = dataclasses.replace(
            result,
            outcome="failed",
            message=summary.message(),
            details=summary.details(),
            check_type="records",
            evaluation=Evaluation((failure,), score=summary.score),
        )
        if case.xfail is not None:
            return dataclasses.replace(
                result, outcome="xfailed", message=case.xfail or "expected failure"
            )
        return result
    notes = (
        (f"{summary.message()}; {summary.share:.2%} passed >= pass_rate {summary.pass_rate:g}",)
        if summary.failed + summary.error
        else ()
    )
    result = dataclasses.replace(
        result,
        outcome="passed",
        message="",
        notes=notes,
        evaluation=Evaluation(score=summary.score),
    )
    if case.xfail is not None:
        return dataclasses.replace(
            result, outcome="xpassed", message=f"XPASS(strict): {case.xfail}", check_type="xpass"
        )
    return result


def pending_result(case: Case, suite: Suite, case_id: str) -> PendingCase:
    """In a ``-j`` worker: a stand-in result; the parent runs bulk cases itself, each over every
    worker."""
    base = CaseResult(
        case_id,
        suite.name,
        case.name,
        str(suite.path),
        case.loc.line,
        "error",
        check_type=PENDING,
        message="bulk case not run: the run stopped before the parent process reached it",
    )
    return PendingCase(case, base, [], [], time.perf_counter(), base)


def evaluate_bulk(
    case: Case | Expectation,
    documents: Any,
    *,
    format: str | None = None,
    select: str | None = None,
    id: str | None = None,
    pass_rate: float | None = None,
) -> BulkSummary:
    """Evaluate a case (or an expectation) on every document of an iterable or a ``dask.bag``; the
    summary counts them and lists the first failing ones (named by ``id``, else by their 0-based
    position).

    A case lends its source's ``format``, ``select`` and ``id`` and its ``pass_rate``; the keywords
    win.
    """
    from .bulk_eval import (
        BulkSpec,
        evaluate_documents,
    )  # deferred: start-up time of runs without bulk cases
    from .bulk_results import Aggregate  # deferred: as above

    source = case.source if isinstance(case, Case) else None
    expect = _expectation(case) if isinstance(case, Case) else case
    spec = BulkSpec(
        expect,
        "record",
        format or (source.format if source else "auto"),
        select if select is not None else (source.select if source else None),
        id if id is not None else (source.id if source else None),
        error_when=source.error_when if source else UNSET,
    )
    rate = (
        pass_rate if pass_rate is not None else (case.pass_rate if isinstance(case, Case) else 1.0)
    )
    aggregate = Aggregate("")
    if hasattr(documents, "map_partitions") and hasattr(documents, "to_delayed"):
        from .dask_engine import evaluate_bag  # deferred: dask is an optional extra, slow to import

        results, engine = evaluate_bag(spec, documents), "dask"
    else:
        results, engine = iter([evaluate_documents(spec, documents)]), "local"
    for kept, tally in results:
        aggregate.records("", 1, kept)
        aggregate.finish("", 1, tally)
    return aggregate.summary("record", 0, rate, engine)
