"""``-j N``: worker processes run shares of the suite files (a file split in contiguous parts when
files are fewer than workers) and stream each case's result back. A worker that dies fails only the
case it was running, and a new worker runs the rest of its share; on an interrupt the workers are
stopped and what finished is kept. A worker ends with the parent however the parent ends
(``kill -9`` too), and its live source with it."""

from __future__ import annotations

import dataclasses
import multiprocessing
import signal
import time
from collections import deque
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any, Callable

from .cores import worker_limit
from .execute import SourceCache
from .judge import Judge
from .orphans import end_with_parent
from .plans import Planned, Progress, RunOptions, case_results, choose, load_one, unique_suite
from .results import CaseResult, SuiteResult

STOP_GRACE = 5.0
"""Seconds stopping workers may take (each kills its live source first) before they are killed."""


Unit = tuple[Path, int, int]
"""A share of the work: a suite file, and which of how many contiguous parts of its cases."""


@dataclass
class _Share:
    """The parent's record of one unit: the plan a worker sent for it, and each case's result as it
    came."""

    unit: Unit
    head: SuiteResult | None = None
    """The suite's name, file and time stamp (or its load errors), once a worker has loaded it."""
    planned: tuple[tuple[str, str, int], ...] = ()
    """Id, name and line of each case of the unit."""
    left_out: int = 0
    cases: list[CaseResult] = field(default_factory=list)
    duration: float = 0.0


def run_parallel(files: list[Path], options: RunOptions, root: Path, progress: Progress) -> None:
    """Workers load, select and run whole suite files (split in parts when files are fewer than
    workers)."""
    jobs = min(options.jobs, worker_limit())
    parts = max(1, jobs // max(1, len(files)))
    shares = [_Share((path, i, parts)) for path in files for i in range(parts)]
    try:
        _Pool(jobs, options, root).run(shares)
    finally:  # on an interrupt too: what finished is kept
        _assemble(shares, progress)


def _assemble(shares: list[_Share], progress: Progress) -> None:
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
            result = unique_suite(result, result.name, path, names)
        progress.deselected += share.left_out if not result.load_errors else 0
        index[path] = len(progress.suites)
        progress.suites.append(result)


@dataclass
class _Worker:
    """A worker process, its end of the pipe, and the share it is running (None when idle)."""

    process: BaseProcess
    conn: Connection
    share: _Share | None = None


class _Pool:
    """Worker processes fed one share at a time; a worker that dies is replaced and fails only the
    case it ran."""

    def __init__(self, jobs: int, options: RunOptions, root: Path) -> None:
        methods = multiprocessing.get_all_start_methods()
        self.context = multiprocessing.get_context("fork" if "fork" in methods else None)
        self.jobs, self.options, self.root = jobs, options, root
        self.idle: list[_Worker] = []
        self.busy: list[_Worker] = []

    def run(self, shares: list[_Share]) -> None:
        """Run every share; on an interrupt, stop the workers (they kill their live sources) and
        re-raise."""
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
        """Send a share to an idle worker, or a new one; a send that fails shows up as the worker's
        death."""
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
        process = self.context.Process(
            target=_worker, args=(theirs, self.options, self.root), daemon=True
        )
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
            share.head = SuiteResult(
                path.name, str(path), load_errors=(message,) if part == 0 else ()
            )
            return []
        done = len(share.cases)
        if done == len(share.planned):
            return []
        cid, name, line = share.planned[done]
        message = (
            f"the worker process died while running this case ({reason}); code that a case runs "
            "inside trajrun, such as a compare function, must return or raise, never exit or crash"
        )
        share.cases.append(
            CaseResult(
                cid,
                share.head.name,
                name,
                share.head.file,
                line,
                "error",
                message=message,
                check_type="error",
            )
        )
        return (
            [(share, done + 1)]
            if done + 1 < len(share.planned) and not self.options.exitfirst
            else []
        )

    def _stop(self, gently: bool) -> None:
        """End every worker: idle ones are told to, the rest are terminated (and killed after a
        grace period)."""
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
    """A worker process: run each share the parent sends, streaming the results back, until told to
    stop."""
    # SIGTERM from the parent raises KeyboardInterrupt, as SIGINT from a terminal does: on its way
    # out it kills the live source in progress
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    # its live source's lifeline, held only here, closes with it: that source's group is killed
    end_with_parent()
    cache, judge = SourceCache(), Judge(options.judge, root)
    try:
        while (job := conn.recv()) is not None:
            unit, skip = job
            _run_unit(unit, skip, options, root, cache, conn.send, judge)
    except (KeyboardInterrupt, EOFError, OSError):  # stopped, or the parent is gone
        pass
    finally:
        judge.close()


def _run_unit(
    unit: Unit,
    skip: int,
    options: RunOptions,
    root: Path,
    cache: SourceCache,
    send: Callable[[tuple[Any, ...]], None],
    judge: Judge | None = None,
) -> None:
    """In a worker: load and select one part of one suite file, then run its cases from the
    ``skip``-th; sends the plan, each case's result, and the end."""
    path, part, parts = unit
    item = load_one(path, options.variables, options.golden_root)
    if isinstance(item, SuiteResult):
        send(("plan", item if part == 0 else SuiteResult(item.name, item.file), (), 0))
        send(("end", 0.0))
        return
    chosen, left_out = choose(item, options, root)
    size = len(chosen)
    mine = chosen[part * size // parts : (part + 1) * size // parts]
    share = Planned(item, mine)
    cases = tuple((cid, case.name, case.loc.line) for cid, case in mine)
    send(("plan", SuiteResult(item.name, str(item.path)), cases, left_out if part == 0 else 0))
    began = time.perf_counter()
    # no case runs ahead in a worker: if it dies, the parent blames the first case it has no
    # result for
    for result in case_results(
        share,
        cache,
        options.update_golden,
        options.exitfirst,
        skip,
        judge,
        ahead=0,
        keep=options.keep,
    ):
        send(("case", result))
    send(("end", time.perf_counter() - began))


def _join(first: SuiteResult, more: SuiteResult) -> SuiteResult:
    """Two parts of one suite file's results, in order."""
    return dataclasses.replace(
        first, cases=first.cases + more.cases, duration=first.duration + more.duration
    )
