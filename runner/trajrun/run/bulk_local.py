"""The local engine of bulk cases: partitions evaluated in this process, or by ``-j N`` forked
worker processes.

Workers read their partitions themselves and stream back batches of compact record results. The
client takes them in partition order: the batches of a partition that is not yet the next one are
spooled to a temporary file (only when records are kept for ``--records``), so memory stays flat
however far a fast worker runs ahead. A worker that dies makes its partition one erred record;
a worker ends with trajrun however trajrun ends (``kill -9`` too).
"""

from __future__ import annotations

import functools
import multiprocessing
import pickle
import signal
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import IO, Any

from ..sources.records import Partition
from .bulk_eval import BulkSpec, evaluate_partition
from .bulk_results import Aggregate, RecordResult, Tally
from .orphans import end_with_parent

STOP_GRACE = 5.0
"""Seconds workers may take to end after the last partition before they are killed."""


class LocalEngine:
    """Runs a bulk case's partitions on this machine: in this process with one job, else in forked
    workers."""

    def __init__(self, jobs: int = 1) -> None:
        self.jobs = max(1, jobs)

    def workers(self) -> int:
        """How many processes share the partitions."""
        return self.jobs

    def close(self) -> None:
        """Nothing outlives a case here."""

    def run(self, spec: BulkSpec, parts: list[Partition], aggregate: Aggregate) -> None:
        """Evaluate every partition, feeding ``aggregate`` in partition order."""
        if (
            self.jobs == 1
            or len(parts) == 1
            or "fork" not in multiprocessing.get_all_start_methods()
        ):
            for part in parts:
                emit = functools.partial(aggregate.records, part.path, part.start)
                _, tally = evaluate_partition(spec, part, emit)
                aggregate.finish(part.path, part.start, tally)
            return
        _Pool(min(self.jobs, len(parts)), spec, parts, aggregate).run()


@dataclass
class _Held:
    """What came early for a partition that is not yet the next in order: spooled batches, counts,
    its tally."""

    spool: IO[bytes] | None = None
    evaluated: int = 0
    tally: Tally | None = None


@dataclass
class _Worker:
    """A worker process, its end of the pipe, and the partition it is reading (None when idle)."""

    process: BaseProcess
    conn: Connection
    index: int | None = None


@dataclass
class _Pool:
    """Forked workers fed one partition at a time; results go to the aggregate in partition
    order."""

    size: int
    spec: BulkSpec
    parts: list[Partition]
    aggregate: Aggregate
    workers: list[_Worker] = field(default_factory=list)
    held: dict[int, _Held] = field(default_factory=dict)
    head: int = 0
    queued: int = 0

    def run(self) -> None:
        """Hand out every partition and take the results; on any exception (an interrupt), stop the
        workers."""
        context = multiprocessing.get_context("fork")
        try:
            for _ in range(self.size):
                self.workers.append(self._start(context))
            while self.head < len(self.parts):
                for worker in self._ready():
                    self._take(worker, context)
        finally:
            self._stop()

    def _start(self, context: Any) -> _Worker:
        """A new worker, given the next partition."""
        ours, theirs = context.Pipe()
        process = context.Process(target=_work, args=(theirs, self.spec, self.parts), daemon=True)
        process.start()
        theirs.close()
        worker = _Worker(process, ours)
        self._assign(worker)
        return worker

    def _assign(self, worker: _Worker) -> None:
        """Send the next partition to a worker (or nothing when all are handed out)."""
        worker.index = None
        if self.queued < len(self.parts):
            worker.index, self.queued = self.queued, self.queued + 1
            worker.conn.send(worker.index)

    def _ready(self) -> list[_Worker]:
        """The busy workers that sent something or ended."""
        owners: dict[Any, _Worker] = {}
        for worker in self.workers:
            if worker.index is not None:
                owners[worker.conn] = owners[worker.process.sentinel] = worker
        if (
            not owners
        ):  # every partition handed out and answered, yet one is missing: never wait forever
            raise RuntimeError(f"bulk partition {self.head} was never reported")
        return list({id(owners[r]): owners[r] for r in wait(list(owners))}.values())

    def _take(self, worker: _Worker, context: Any) -> None:
        """Take every message a worker sent; a dead worker's partition becomes one erred record."""
        try:
            while worker.index is not None and worker.conn.poll():
                self._message(worker, worker.conn.recv())
        except (EOFError, OSError):
            pass
        if worker.index is not None and not worker.process.is_alive():
            self._died(worker, context)

    def _message(self, worker: _Worker, message: tuple[Any, ...]) -> None:
        """A batch of records, or the end of a partition (its tally), from one worker."""
        kind, index = message[0], message[1]
        if kind == "batch":
            self._batch(index, message[2], message[3])
            return
        self.held.setdefault(index, _Held()).tally = message[2]
        self._assign(worker)
        self._advance()

    def _batch(self, index: int, kept: list[RecordResult], evaluated: int) -> None:
        """Records of one partition: to the aggregate when it is the next in order, else held
        back."""
        if index == self.head:
            part = self.parts[index]
            self.aggregate.records(part.path, part.start, kept, evaluated)
            return
        held = self.held.setdefault(index, _Held())
        held.evaluated += evaluated
        if kept:
            held.spool = held.spool or tempfile.TemporaryFile()  # noqa: SIM115 - closed when replayed
            pickle.dump(kept, held.spool, protocol=pickle.HIGHEST_PROTOCOL)

    def _advance(self) -> None:
        """Replay what was held for the next partitions in order, finishing those that are done."""
        while (held := self.held.get(self.head)) is not None:
            part = self.parts[self.head]
            for kept in _replayed(held.spool):
                self.aggregate.records(part.path, part.start, kept)
            self.aggregate.records(part.path, part.start, [], held.evaluated)
            held.spool, held.evaluated = None, 0
            if held.tally is None:
                return
            self.aggregate.finish(part.path, part.start, held.tally)
            del self.held[self.head]
            self.head += 1

    def _died(self, worker: _Worker, context: Any) -> None:
        """A worker ended without finishing its partition: the partition is one erred record; a new
        worker goes on."""
        index = worker.index
        assert index is not None
        part, code = self.parts[index], worker.process.exitcode or 0
        how = (
            f"killed by {signal.Signals(-code).name}"
            if code < 0 and -code in signal.valid_signals()
            else f"exited with status {code}"
        )
        message = f"source: the worker process died while reading this partition ({how})"
        error = RecordResult(f"{part.path}@{part.start}", None, "error", (), message)
        self._batch(index, [error], 1)
        tally = Tally(error=1)
        self.held.setdefault(index, _Held()).tally = tally
        worker.conn.close()
        self.workers.remove(worker)
        if self.queued < len(self.parts):
            self.workers.append(self._start(context))
        self._advance()

    def _stop(self) -> None:
        """End every worker: idle ones are told to, busy ones terminated, and any left after a grace
        period killed."""
        for worker in self.workers:
            try:
                worker.conn.send(None) if worker.index is None else worker.process.terminate()
            except OSError:
                pass
        for worker in self.workers:
            worker.process.join(STOP_GRACE)
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join()
            worker.conn.close()
        for held in self.held.values():
            if held.spool is not None:
                held.spool.close()


def _replayed(spool: IO[bytes] | None) -> Iterator[list[RecordResult]]:
    """The batches spooled for a partition, in order, one at a time (the spool is closed after)."""
    if spool is None:
        return
    spool.seek(0)
    with spool:
        while True:
            try:
                yield pickle.load(spool)
            except EOFError:
                return


def _work(conn: Connection, spec: BulkSpec, parts: list[Partition]) -> None:
    """A worker process: evaluate each partition the parent names, streaming batches back, until
    told to stop."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops its workers itself
    end_with_parent()  # mid-partition too, where the pipe is not read
    try:
        while (index := conn.recv()) is not None:
            _, tally = evaluate_partition(
                spec, parts[index], lambda kept, n: conn.send(("batch", index, kept, n))
            )
            conn.send(("done", index, tally))
    except (EOFError, OSError):  # the parent is gone
        pass
