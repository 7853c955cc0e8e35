"""``trajrun run`` as a library: collect suite files, load, select, run cases (in this process or in
``-j`` workers), report as they finish and return the results.

An interrupt (SIGINT, or SIGTERM that the CLI turns into one) stops the run and its live sources and
still returns every result that finished, in ``RunInterrupted``.
"""

from __future__ import annotations

import dataclasses
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Protocol, Sequence

from ..suites.model import Suite
from .bulk import PENDING, BulkSession
from .cores import worker_limit
from .execute import SourceCache
from .judge import Judge
from .last_failed import failed_first
from .plans import (
    Planned,
    Progress,
    RunOptions,
    case_results,
    collect,
    load_one,
    nothing_found,
    pipeline,
    plan,
    stops,
    suite_result,
    unique_suite,
)
from .prerun import LoadInterrupted, prerun
from .results import CaseResult, Gates, RunResult, SuiteResult

__all__ = ["RunInterrupted", "RunOptions", "Reporter", "run_paths", "run_suite"]


class RunInterrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM stopped the run: ``result`` holds every case that finished (the reporter
    has it too)."""

    def __init__(self, result: RunResult) -> None:
        super().__init__("the run was interrupted")
        self.result = result


class Reporter(Protocol):
    """What the runner tells as it goes (the console reporter implements it)."""

    def start(self, total_cases: int) -> None:
        """Before the first case: how many will run."""

    def suite_load_error(self, result: SuiteResult) -> None:
        """A suite file that could not be loaded."""

    def case_done(self, result: CaseResult) -> None:
        """One case finished."""

    def finish(self, run: RunResult) -> None:
        """The run is over."""


def run_paths(
    paths: Sequence[str | Path], options: RunOptions | None = None, reporter: Reporter | None = None
) -> RunResult:
    """Collect, load, select and run, as ``trajrun run`` does; a broken suite or case never stops
    the others.

    An interrupt (SIGINT) stops the run: the reporter still finishes, and ``RunInterrupted`` carries
    the result.
    """
    options = options or RunOptions()
    started = time.perf_counter()
    root = options.root or Path.cwd()
    files = failed_first(collect(paths), options.first, root)
    progress, parallel, interrupted = Progress(), min(options.jobs, worker_limit()) > 1, False
    bulk = BulkSession(options.bulk, min(options.jobs, worker_limit()), reporter)
    try:
        if parallel:
            from .workers import (
                run_parallel,
            )  # deferred: multiprocessing costs start-up time in every run

            run_parallel(files, options, root, progress)
            _run_pending_bulk(progress.suites, options, bulk)
        else:
            _run_serial(files, options, root, reporter, progress, bulk)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        bulk.close()
    suites = _replay(progress.suites, options.exitfirst, reporter) if parallel else progress.suites
    not_run = progress.selected - sum(len(s.cases) for s in suites) if options.exitfirst else 0
    result = RunResult(
        tuple(_marked(suites, options.gates)),
        time.perf_counter() - started,
        progress.deselected,
        nothing_found=None if files else nothing_found(paths),
        sharded=options.shard is not None,
        not_run=not_run,
        gates=options.gates,
    )
    if reporter:
        reporter.finish(result)
    if interrupted:
        raise RunInterrupted(result)
    return result


def run_suite(suite: Suite, options: RunOptions | None = None) -> SuiteResult:
    """Run the cases of one loaded suite that ``options`` select (``-k``, ``-m``, ``--shard``), in
    order."""
    options = options or RunOptions()
    root = options.root or Path.cwd()
    planned, _ = plan(suite, options, root)
    stamp, began = datetime.now(), time.perf_counter()
    judge, bulk = (
        Judge(options.judge, root),
        BulkSession(options.bulk, min(options.jobs, worker_limit())),
    )
    try:
        cases = list(
            case_results(
                planned,
                SourceCache(),
                options.update_golden,
                options.exitfirst,
                judge=judge,
                bulk=bulk,
                keep=options.keep,
            )
        )
    finally:
        judge.close()
        bulk.close()
    return suite_result(suite, cases, began, stamp)


def _run_serial(
    files: list[Path],
    options: RunOptions,
    root: Path,
    reporter: Reporter | None,
    progress: Progress,
    bulk: BulkSession | None = None,
) -> None:
    """Load every suite (so the reporter knows the total), then run the cases in order; the cases of
    a large file that only read files run while it loads (``prerun``)."""
    plans: list[Planned | SuiteResult] = []
    cache = SourceCache()
    names: dict[str, Path] = {}
    for path in files:
        try:
            item, left_out = prerun(path, options, root, cache)
        except LoadInterrupted as exc:
            progress.suites.append(exc.finished)
            raise
        if isinstance(item, Planned):
            item = unique_suite(item, item.suite.name, path, names)
        if isinstance(item, Planned):
            progress.deselected += left_out
            progress.selected += len(item.cases)
        plans.append(item)
    if reporter:
        reporter.start(sum(len(p.cases) for p in plans if isinstance(p, Planned)))
    judge = Judge(options.judge, root)
    try:
        _run_plans(plans, options, reporter, progress, cache, judge, bulk)
    finally:
        judge.close()


def _run_plans(
    plans: list[Planned | SuiteResult],
    options: RunOptions,
    reporter: Reporter | None,
    progress: Progress,
    cache: SourceCache,
    judge: Judge,
    bulk: BulkSession | None = None,
) -> None:
    """Run the loaded suites' cases, reporting each in order as it is done; a suite file's result is
    kept once its last case is (on an interrupt too, with the cases that finished)."""
    opened: dict[int, tuple[list[CaseResult], float, datetime]] = {}
    closed = 0

    def close(upto: int) -> None:
        """Keep (and report the load errors of) every suite file before ``upto``."""
        nonlocal closed
        for index in range(closed, upto):
            item = plans[index]
            if isinstance(item, SuiteResult):
                progress.suites.append(item)
                if reporter:
                    reporter.suite_load_error(item)
                continue
            cases, began, stamp = opened.get(index) or ([], time.perf_counter(), datetime.now())
            # a streamed file's cases that ran while it loaded count in its time and start
            began, stamp = began - item.prerun, stamp - timedelta(seconds=item.prerun)
            progress.suites.append(suite_result(item.suite, cases, began, stamp))
        closed = max(closed, upto)

    def start(index: int) -> None:
        """Note when a suite file's first case starts."""
        opened.setdefault(index, ([], time.perf_counter(), datetime.now()))

    try:
        for index, result in pipeline(
            plans,
            cache,
            judge,
            options.update_golden,
            options.exitfirst,
            start,
            bulk=bulk,
            keep=options.keep,
        ):
            close(index)
            opened[index][0].append(result)
            if reporter:
                reporter.case_done(result)
    finally:  # on an interrupt, up to the suite file in progress
        close(len(plans) if not opened else max(closed, max(opened) + 1))
    close(len(plans))


def _run_pending_bulk(suites: list[SuiteResult], options: RunOptions, bulk: BulkSession) -> None:
    """After ``-j`` workers ran the other cases: run the bulk cases they left as stand-ins, here,
    over every worker."""
    for n, suite in enumerate(suites):
        if not any(c.check_type == PENDING for c in suite.cases):
            continue
        loaded = load_one(Path(suite.file), options.variables, options.golden_root)
        if not isinstance(loaded, Suite):  # changed since the workers loaded it: stand-ins stay
            continue
        by_name = {case.name: case for case in loaded.cases}
        cases = tuple(
            bulk.run(by_name[c.name], loaded, c.case_id)
            if c.check_type == PENDING and c.name in by_name
            else c
            for c in suite.cases
        )
        suites[n] = dataclasses.replace(suite, cases=cases)


def _marked(suites: list[SuiteResult], gates: Gates) -> list[SuiteResult]:
    """With ``--baseline``, each failed, erred or xpassed case marked ``new`` or ``known``."""
    if gates.baseline is None:
        return suites
    return [dataclasses.replace(s, cases=tuple(map(gates.mark, s.cases))) for s in suites]


def _replay(
    suites: list[SuiteResult], exitfirst: bool, reporter: Reporter | None
) -> list[SuiteResult]:
    """Report results that workers produced, in path order; with ``exitfirst``, drop those after the
    first failure."""
    if exitfirst:
        suites = _cut_after_first_failure(suites)
    if reporter:
        reporter.start(sum(len(s.cases) for s in suites))
        for suite in suites:
            if suite.load_errors:
                reporter.suite_load_error(suite)
            for case in suite.cases:
                reporter.case_done(case)
    return suites


def _cut_after_first_failure(suites: list[SuiteResult]) -> list[SuiteResult]:
    """The results up to and including the first failing case (later suites dropped)."""
    kept: list[SuiteResult] = []
    for suite in suites:
        stop = next((i for i, c in enumerate(suite.cases) if stops(c)), None)
        if stop is None:
            kept.append(suite)
            continue
        kept.append(dataclasses.replace(suite, cases=suite.cases[: stop + 1]))
        break
    return kept
