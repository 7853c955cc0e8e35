"""``trajrun run`` as a library: collect suite files, load, select, run cases, return results.

With ``-j N``, worker processes run shares of the suite files and stream each case's result back. A
worker that dies fails only the case it was running (a new worker runs the rest of its share), and an
interrupt (SIGINT, or SIGTERM that the CLI turns into one) stops the workers and their live sources
and still returns every result that finished, in ``RunInterrupted``.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import signal
import time
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Protocol, Sequence

from ..errors import SuiteErrors, TrajrunError
from ..suites.load import load_suite
from ..suites.model import SUITE_SUFFIXES, Case, Suite
from .bulk import PENDING, BulkOptions, BulkSession, is_bulk, pending_result
from .execute import PendingCase, SourceCache, start_case
from .judge import Judge, JudgeOptions
from .results import CaseResult, RunResult, SuiteResult
from .selection import in_shard, keyword_matcher, marker_matcher


JOBS_PER_CORE = 4
"""``-j`` starts at most this many workers per core: more only adds memory and start-up time."""
STOP_GRACE = 5.0
"""Seconds stopping workers may take (each kills its live source first) before they are killed."""
JUDGE_AHEAD = 64
"""How many cases may run ahead of the first one still waiting for its judge (results stay in order)."""


class UsageError(TrajrunError):
    """A wrong command line (a path that does not exist, a bad expression): exit status 2."""


class RunInterrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM stopped the run: ``result`` holds every case that finished (the reporter has it too)."""

    def __init__(self, result: RunResult) -> None:
        super().__init__("the run was interrupted")
        self.result = result


@dataclass(frozen=True, slots=True)
class RunOptions:
    """What ``trajrun run`` was asked to do, beside the paths."""

    keyword: str | None = None
    marker: str | None = None
    exitfirst: bool = False
    shard: tuple[int, int] | None = None
    jobs: int = 1
    variables: Mapping[str, Any] = field(default_factory=dict)
    update_golden: bool = False
    root: Path | None = None
    golden_root: Path | None = None
    judge: JudgeOptions = field(default_factory=JudgeOptions)
    bulk: BulkOptions = field(default_factory=BulkOptions)


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


@dataclass(frozen=True, slots=True)
class Planned:
    """A loaded suite and the cases selected from it, with their ids."""

    suite: Suite
    cases: tuple[tuple[str, Case], ...]


@dataclass
class _Progress:
    """What a run has produced so far, filled as it goes so that an interrupt keeps it."""

    suites: list[SuiteResult] = field(default_factory=list)
    deselected: int = 0
    selected: int = 0


def collect(paths: Sequence[str | Path]) -> list[Path]:
    """Suite files under each path (recursively, sorted); a file named explicitly is always taken."""
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob("*") if p.name.endswith(SUITE_SUFFIXES) and p.is_file()))
        elif path.is_file():
            files.append(path)
        else:
            raise UsageError(f"{raw}: no such file or directory")
    return list(dict.fromkeys(files))


def nothing_found(paths: Sequence[str | Path]) -> str:
    """What to say when ``paths`` hold no suite file (a mistyped folder must not pass quietly)."""
    where = ", ".join(str(p) for p in paths)
    others = [p for raw in paths if Path(raw).is_dir() for p in Path(raw).rglob("*.y*ml")]
    hint = (f"; {len(others)} YAML file{'s' if len(others) != 1 else ''} there "
            f"{'do' if len(others) != 1 else 'does'} not end in .suite.yaml — rename the suites") if others else ""
    return f"no suite files found under {where} (suite files end in .suite.yaml or .suite.yml){hint}"


def case_id(root: Path, suite_path: Path, name: str) -> str:
    """``<suite file path relative to the run's root>::<case name>``, with forward slashes."""
    return f"{suite_id(root, suite_path)}::{name}"


def suite_id(root: Path, suite_path: Path) -> str:
    """The suite file's part of its cases' ids: its path relative to the run's root (as given when outside it)."""
    try:
        rel = Path(os.path.relpath(suite_path.resolve(), root.resolve()))
        shown = suite_path if rel.parts[:1] == ("..",) else rel
    except ValueError:
        shown = suite_path
    return shown.as_posix()


def load(files: Iterable[Path], variables: Mapping[str, Any], golden_root: Path | None = None) -> list[Suite | SuiteResult]:
    """Load every file; a file that fails (or repeats another suite's name) becomes a SuiteResult of errors."""
    loaded: list[Suite | SuiteResult] = []
    names: dict[str, Path] = {}
    for path in files:
        item = _load_one(path, variables, golden_root)
        if isinstance(item, Suite):
            item = _unique(item, item.name, path, names)
        loaded.append(item)
    return loaded


def _load_one(path: Path, variables: Mapping[str, Any], golden_root: Path | None = None) -> Suite | SuiteResult:
    """One suite, or a SuiteResult holding every error of the file."""
    try:
        return load_suite(path, variables, golden_root)
    except SuiteErrors as exc:
        return SuiteResult(path.name, str(path), load_errors=tuple(str(e) for e in exc.errors))


def _unique(item: Any, name: str, path: Path, names: dict[str, Path]) -> Any:
    """``item`` when its suite name is new; else the load error for a second suite of that name."""
    if name not in names:
        names[name] = path
        return item
    message = f"{path}: suite: suite name {name!r} is already used by {names[name]}; rename one"
    return SuiteResult(path.name, str(path), load_errors=(message,))


def plan(suite: Suite, options: RunOptions, root: Path) -> tuple[Planned, int]:
    """Select a suite's cases by ``-k``, ``-m`` and ``--shard``; returns the plan and the number left out."""
    keep_k = keyword_matcher(options.keyword) if options.keyword else None
    keep_m = marker_matcher(options.marker) if options.marker else None
    chosen = []
    prefix = suite_id(root, suite.path)  # resolving the paths once per file, not per case
    for case in suite.cases:
        cid = f"{prefix}::{case.name}"
        if keep_k and not keep_k(f"{suite.name}::{case.name}") and not keep_k(cid):
            continue
        if keep_m and not keep_m(case.tags):
            continue
        if options.shard and not in_shard(cid, options.shard):
            continue
        chosen.append((cid, case))
    return Planned(suite, tuple(chosen)), len(suite.cases) - len(chosen)


def run_paths(paths: Sequence[str | Path], options: RunOptions | None = None, reporter: Reporter | None = None) -> RunResult:
    """Collect, load, select and run, as ``trajrun run`` does; a broken suite or case never stops the others.

    An interrupt (SIGINT) stops the run: the reporter still finishes, and ``RunInterrupted`` carries the result.
    """
    options = options or RunOptions()
    started = time.perf_counter()
    root = options.root or Path.cwd()
    files = collect(paths)
    progress, parallel, interrupted = _Progress(), min(options.jobs, worker_limit()) > 1, False
    bulk = BulkSession(options.bulk, min(options.jobs, worker_limit()), reporter)
    try:
        if parallel:
            _run_parallel(files, options, root, progress)
            _run_pending_bulk(progress.suites, options, bulk)
        else:
            _run_serial(files, options, root, reporter, progress, bulk)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        bulk.close()
    suites = _replay(progress.suites, options.exitfirst, reporter) if parallel else progress.suites
    result = RunResult(tuple(suites), time.perf_counter() - started, progress.deselected,
                       nothing_found=None if files else nothing_found(paths), sharded=options.shard is not None,
                       not_run=progress.selected - sum(len(s.cases) for s in suites) if options.exitfirst else 0)
    if reporter:
        reporter.finish(result)
    if interrupted:
        raise RunInterrupted(result)
    return result


def run_suite(suite: Suite, options: RunOptions | None = None) -> SuiteResult:
    """Run the cases of one loaded suite that ``options`` select (``-k``, ``-m``, ``--shard``), in order."""
    options = options or RunOptions()
    root = options.root or Path.cwd()
    planned, _ = plan(suite, options, root)
    stamp, began = datetime.now(), time.perf_counter()
    judge, bulk = Judge(options.judge, root), BulkSession(options.bulk, min(options.jobs, worker_limit()))
    try:
        cases = list(_case_results(planned, SourceCache(), options.update_golden, options.exitfirst, judge=judge,
                                   bulk=bulk))
    finally:
        judge.close()
        bulk.close()
    return _suite_result(suite, cases, began, stamp)


def _run_serial(files: list[Path], options: RunOptions, root: Path, reporter: Reporter | None,
                progress: _Progress, bulk: BulkSession | None = None) -> None:
    """Load every suite (so the reporter knows the total), then run the cases in order."""
    plans: list[Planned | SuiteResult] = []
    for item in load(files, options.variables, options.golden_root):
        if isinstance(item, Suite):
            planned, left_out = plan(item, options, root)
            progress.deselected += left_out
            progress.selected += len(planned.cases)
            plans.append(planned)
        else:
            plans.append(item)
    if reporter:
        reporter.start(sum(len(p.cases) for p in plans if isinstance(p, Planned)))
    judge = Judge(options.judge, root)
    try:
        _run_plans(plans, options, reporter, progress, SourceCache(), judge, bulk)
    finally:
        judge.close()


def _run_plans(plans: list[Planned | SuiteResult], options: RunOptions, reporter: Reporter | None,
               progress: _Progress, cache: SourceCache, judge: Judge, bulk: BulkSession | None = None) -> None:
    """Run the loaded suites' cases, reporting each in order as it is done; a suite file's result is kept
    once its last case is (on an interrupt too, with the cases that finished)."""
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
            progress.suites.append(_suite_result(item.suite, cases, began, stamp))
        closed = max(closed, upto)

    def start(index: int) -> None:
        """Note when a suite file's first case starts."""
        opened.setdefault(index, ([], time.perf_counter(), datetime.now()))

    try:
        for index, result in _pipeline(plans, cache, judge, options.update_golden, options.exitfirst, start, bulk=bulk):
            close(index)
            opened[index][0].append(result)
            if reporter:
                reporter.case_done(result)
    finally:  # on an interrupt, up to the suite file in progress
        close(len(plans) if not opened else max(closed, max(opened) + 1))
    close(len(plans))


def _stops(case: CaseResult) -> bool:
    """Whether ``-x`` stops the run after this case."""
    return case.outcome in ("failed", "error", "xpassed")


def _case_results(item: Planned, cache: SourceCache, update_golden: bool, exitfirst: bool,
                  skip: int = 0, judge: Judge | None = None, ahead: int = JUDGE_AHEAD,
                  bulk: BulkSession | None = None) -> Iterator[CaseResult]:
    """Run a suite's selected cases in order (from the ``skip``-th), yielding each result as it is done;
    with ``exitfirst``, stop after the first that fails. Without ``bulk`` (a ``-j`` worker), bulk cases give
    stand-ins that the parent runs."""
    share = [Planned(item.suite, item.cases[skip:])]
    for _, result in _pipeline(share, cache, judge, update_golden, exitfirst, ahead=ahead, bulk=bulk):
        yield result


def _pipeline(plans: Sequence[Planned | SuiteResult], cache: SourceCache, judge: Judge | None, update_golden: bool,
              exitfirst: bool, start: Callable[[int], None] | None = None,
              ahead: int = JUDGE_AHEAD, bulk: BulkSession | None = None) -> Iterator[tuple[int, CaseResult]]:
    """Run the plans' cases, yielding ``(plan index, result)`` in order; with ``exitfirst``, stop after the first
    that fails. ``start`` hears of each plan's index as its cases start.

    While a case waits for its judge, up to ``ahead`` later cases run, in later suite files too (none with
    ``exitfirst``, which must not start a case after a failure).
    """
    ahead = 0 if exitfirst else ahead
    pending: deque[tuple[int, PendingCase]] = deque()
    for index, item in enumerate(plans):
        if isinstance(item, SuiteResult):
            continue
        for cid, case in item.cases:
            if start:
                start(index)
            pending.append((index, _start(case, item.suite, cid, cache, update_golden, judge, bulk)))
            while pending and (pending[0][1].done() or len(pending) > ahead):
                done, case_result = pending[0][0], pending.popleft()[1].result()
                yield done, case_result
                if exitfirst and _stops(case_result):
                    return
    while pending:
        done, case_result = pending[0][0], pending.popleft()[1].result()
        yield done, case_result


def _start(case: Case, suite: Suite, cid: str, cache: SourceCache, update_golden: bool, judge: Judge | None,
           bulk: BulkSession | None) -> PendingCase:
    """Start one case: a bulk case in the bulk session (a stand-in in a ``-j`` worker, which the parent runs
    later), any other here."""
    if is_bulk(case) and case.skip is None:
        return bulk.start(case, suite, cid) if bulk else pending_result(case, suite, cid)
    return start_case(case, suite, cid, cache, update_golden, judge)


def _suite_result(suite: Suite, cases: list[CaseResult], began: float, stamp: datetime) -> SuiteResult:
    """A suite's results, timed from ``began``."""
    return SuiteResult(suite.name, str(suite.path), tuple(cases), duration=time.perf_counter() - began,
                       timestamp=stamp)


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the platform has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # no affinity outside Linux
        return os.cpu_count() or 1


def worker_limit() -> int:
    """The most worker processes ``-j`` starts."""
    return JOBS_PER_CORE * usable_cores()


Unit = tuple[Path, int, int]
"""A share of the work: a suite file, and which of how many contiguous parts of its cases."""


@dataclass
class _Share:
    """The parent's record of one unit: the plan a worker sent for it, and each case's result as it came."""

    unit: Unit
    head: SuiteResult | None = None
    """The suite's name, file and time stamp (or its load errors), once a worker has loaded it."""
    planned: tuple[tuple[str, str, int], ...] = ()
    """Id, name and line of each case of the unit."""
    left_out: int = 0
    cases: list[CaseResult] = field(default_factory=list)
    duration: float = 0.0


def _run_parallel(files: list[Path], options: RunOptions, root: Path, progress: _Progress) -> None:
    """Workers load, select and run whole suite files (split in parts when files are fewer than workers)."""
    jobs = min(options.jobs, worker_limit())
    parts = max(1, jobs // max(1, len(files)))
    shares = [_Share((path, i, parts)) for path in files for i in range(parts)]
    try:
        _Pool(jobs, options, root).run(shares)
    finally:  # on an interrupt too: what finished is kept
        _assemble(shares, progress)


def _assemble(shares: list[_Share], progress: _Progress) -> None:
    """The shares' results as suite results in path order, the parts of a file joined."""
    names: dict[str, Path] = {}
    index: dict[Path, int] = {}
    for share in shares:
        if share.head is None:  # never started: the run was interrupted
            continue
        path, part, _ = share.unit
        result = dataclasses.replace(share.head, cases=tuple(share.cases), duration=share.duration)
        progress.selected += len(share.planned)
        if part and path in index:
            first = progress.suites[index[path]]
            if not first.load_errors:  # a suite refused for its name keeps no cases
                progress.suites[index[path]] = _join(first, result)
            continue
        if not result.load_errors:
            result = _unique(result, result.name, path, names)
        progress.deselected += share.left_out if not result.load_errors else 0
        index[path] = len(progress.suites)
        progress.suites.append(result)


def _run_pending_bulk(suites: list[SuiteResult], options: RunOptions, bulk: BulkSession) -> None:
    """After ``-j`` workers ran the other cases: run the bulk cases they left as stand-ins, here, over every worker."""
    for n, suite in enumerate(suites):
        if not any(c.check_type == PENDING for c in suite.cases):
            continue
        loaded = _load_one(Path(suite.file), options.variables, options.golden_root)
        by_name = {case.name: case for case in loaded.cases} if isinstance(loaded, Suite) else {}
        cases = tuple(bulk.run(by_name[c.name], loaded, c.case_id)  # type: ignore[arg-type]
                      if c.check_type == PENDING and c.name in by_name else c for c in suite.cases)
        suites[n] = dataclasses.replace(suite, cases=cases)


@dataclass
class _Worker:
    """A worker process, its end of the pipe, and the share it is running (None when idle)."""

    process: BaseProcess
    conn: Connection
    share: _Share | None = None


class _Pool:
    """Worker processes fed one share at a time; a worker that dies is replaced and fails only the case it ran."""

    def __init__(self, jobs: int, options: RunOptions, root: Path) -> None:
        methods = multiprocessing.get_all_start_methods()
        self.context = multiprocessing.get_context("fork" if "fork" in methods else None)
        self.jobs, self.options, self.root = jobs, options, root
        self.idle: list[_Worker] = []
        self.busy: list[_Worker] = []

    def run(self, shares: list[_Share]) -> None:
        """Run every share; on an interrupt, stop the workers (they kill their live sources) and re-raise."""
        queue = deque((share, 0) for share in shares)
        try:
            while queue or self.busy:
                while queue and (self.idle or len(self.busy) < self.jobs):
                    self._assign(*queue.popleft())
                for worker in self._ready():
                    queue.extend(self._collect(worker))
        except BaseException:
            self._stop(gently=False)
            raise
        self._stop(gently=True)

    def _assign(self, share: _Share, skip: int) -> None:
        """Send a share to an idle worker, or a new one; a send that fails shows up as the worker's death."""
        worker = self.idle.pop() if self.idle else self._start()
        worker.share = share
        self.busy.append(worker)
        try:
            worker.conn.send((share.unit, skip))
        except OSError:
            pass

    def _start(self) -> _Worker:
        """A new worker process."""
        ours, theirs = self.context.Pipe()
        process = self.context.Process(target=_worker, args=(theirs, self.options, self.root), daemon=True)
        process.start()
        theirs.close()  # so that the worker's death reads as end of file here
        return _Worker(process, ours)

    def _ready(self) -> list[_Worker]:
        """The busy workers that sent something or ended."""
        owners: dict[Any, _Worker] = {}
        for worker in self.busy:
            owners[worker.conn] = owners[worker.process.sentinel] = worker
        ready = wait(list(owners))
        return list({id(owners[r]): owners[r] for r in ready}.values())

    def _collect(self, worker: _Worker) -> list[tuple[_Share, int]]:
        """Take what a worker sent; the rest of its share to run again when it died."""
        assert worker.share is not None
        try:
            while worker.conn.poll():
                if _take(worker.share, worker.conn.recv()):
                    worker.share = None
                    self.busy.remove(worker)
                    self.idle.append(worker)
                    return []
        except (EOFError, OSError):  # the worker is gone, maybe in the middle of a message
            return self._died(worker)
        return [] if worker.process.is_alive() else self._died(worker)

    def _died(self, worker: _Worker) -> list[tuple[_Share, int]]:
        """Fail the case a dead worker was running; the rest of its share to run again."""
        self.busy.remove(worker)
        worker.conn.close()
        share, reason = worker.share, _death(worker.process)
        assert share is not None
        path, part, _ = share.unit
        if share.head is None:
            message = f"{path}: the worker process died while loading this suite ({reason})"
            share.head = SuiteResult(path.name, str(path), load_errors=(message,) if part == 0 else ())
            return []
        done = len(share.cases)
        if done == len(share.planned):
            return []
        cid, name, line = share.planned[done]
        message = (f"the worker process died while running this case ({reason}); code that a case runs inside "
                   "trajrun, such as a compare function, must return or raise, never exit or crash")
        share.cases.append(CaseResult(cid, share.head.name, name, share.head.file, line, "error", message=message,
                                      check_type="error"))
        return [(share, done + 1)] if done + 1 < len(share.planned) and not self.options.exitfirst else []

    def _stop(self, gently: bool) -> None:
        """End every worker: idle ones are told to, the rest are terminated (and killed after a grace period)."""
        workers, deadline = self.idle + self.busy, time.monotonic() + STOP_GRACE
        for worker in workers:
            try:
                if gently and worker.share is None:
                    worker.conn.send(None)
                else:
                    worker.process.terminate()
            except OSError:  # already gone
                pass
        for worker in workers:
            worker.process.join(max(0.0, deadline - time.monotonic()))
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join()
            worker.conn.close()
        self.idle, self.busy = [], []


def _take(share: _Share, message: tuple[Any, ...]) -> bool:
    """Record one message of a worker about its share; whether it was the last."""
    kind = message[0]
    if kind == "plan":
        if share.head is None:  # a share run again after a death keeps its first plan
            share.head, share.planned, share.left_out = message[1:]
    elif kind == "case":
        share.cases.append(message[1])
    else:
        share.duration += message[1]
        return True
    return False


def _death(process: BaseProcess) -> str:
    """How a worker process ended: ``exited with status 3``, ``killed by SIGSEGV``."""
    process.join(STOP_GRACE)
    if process.exitcode is None:  # it closed its pipe but lives on: make sure it is gone
        process.kill()
        process.join()
    code = process.exitcode or 0
    if code >= 0:
        return f"exited with status {code}"
    try:
        return f"killed by {signal.Signals(-code).name}"
    except ValueError:
        return f"killed by signal {-code}"


def _worker(conn: Connection, options: RunOptions, root: Path) -> None:
    """A worker process: run each share the parent sends, streaming the results back, until told to stop."""
    # SIGTERM from the parent raises KeyboardInterrupt, as SIGINT from a terminal does: on its way out it
    # kills the live source in progress
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    cache, judge = SourceCache(), Judge(options.judge, root)
    try:
        while (job := conn.recv()) is not None:
            _run_unit(*job, options, root, cache, conn.send, judge)
    except (KeyboardInterrupt, EOFError, OSError):  # stopped, or the parent is gone
        pass
    finally:
        judge.close()


def _run_unit(unit: Unit, skip: int, options: RunOptions, root: Path, cache: SourceCache,
              send: Callable[[tuple[Any, ...]], None], judge: Judge | None = None) -> None:
    """In a worker: load and select one part of one suite file, then run its cases from the ``skip``-th;
    sends the plan, each case's result, and the end."""
    path, part, parts = unit
    item = _load_one(path, options.variables, options.golden_root)
    if isinstance(item, SuiteResult):
        send(("plan", item if part == 0 else SuiteResult(item.name, item.file), (), 0))
        send(("end", 0.0))
        return
    planned, left_out = plan(item, options, root)
    size = len(planned.cases)
    share = Planned(item, planned.cases[part * size // parts:(part + 1) * size // parts])
    cases = tuple((cid, case.name, case.loc.line) for cid, case in share.cases)
    send(("plan", SuiteResult(item.name, str(item.path)), cases, left_out if part == 0 else 0))
    began = time.perf_counter()
    # no case runs ahead in a worker: if it dies, the parent blames the first case it has no result for
    for result in _case_results(share, cache, options.update_golden, options.exitfirst, skip, judge, ahead=0):
        send(("case", result))
    send(("end", time.perf_counter() - began))


def _join(first: SuiteResult, more: SuiteResult) -> SuiteResult:
    """Two parts of one suite file's results, in order."""
    return dataclasses.replace(first, cases=first.cases + more.cases, duration=first.duration + more.duration)


def _replay(suites: list[SuiteResult], exitfirst: bool, reporter: Reporter | None) -> list[SuiteResult]:
    """Report results that workers produced, in path order; with ``exitfirst``, drop those after the first failure."""
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
        stop = next((i for i, c in enumerate(suite.cases) if _stops(c)), None)
        if stop is None:
            kept.append(suite)
            continue
        kept.append(dataclasses.replace(suite, cases=suite.cases[: stop + 1]))
        break
    return kept
