"""The Dask engine of bulk cases: a cluster's workers evaluate the partitions, taken in order.

``--engine dask --scheduler ADDRESS`` (or ``DASK_SCHEDULER_ADDRESS``) uses a running cluster,
checked first: it has a worker, and every worker imports the trajrun this client runs. Without
either, a ``LocalCluster`` of worker processes starts on this machine (``-j N`` of them, else one
per core) and stops with the run. Each task reads its own partition, by absolute path or URL, so
a worker finds what the client meant wherever it runs, and returns compact record results and
counts: the data never passes through the client. A few tasks per worker are in flight at a time,
which keeps the client's memory flat however many partitions there are. A worker lost mid-run
has its tasks run again by Dask, and the run says so.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import logging
import os
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from ..errors import TrajrunError, inline
from ..sources.records import Partition
from ..sources.streams import is_url, open_binary
from .bulk_eval import BulkSpec, evaluate_documents, evaluate_partition
from .bulk_results import Aggregate, RecordResult, Tally

AHEAD = 2
"""Tasks in flight per worker beyond the one it runs."""
CONNECT_TIMEOUT = 10.0
"""Seconds to wait for a scheduler named with ``--scheduler`` (or ``DASK_SCHEDULER_ADDRESS``)."""
WORKERS_TIMEOUT = 30.0
"""Seconds to wait for a first worker when the scheduler has none yet."""
ADDRESS_VAR = "DASK_SCHEDULER_ADDRESS"
INSTALL = (
    "--engine dask needs dask.distributed and fsspec, which are not installed: "
    "pip install 'trajrun[dask]'"
)
SHARED = (
    "every worker reads the files itself: put them on storage every worker mounts at the "
    "same path, or name them by an object-store URL (s3://…, gs://…)"
)
REACH = (
    "check that every worker reaches it (the filesystem's package, such as s3fs, and its "
    "credentials installed there)"
)


def _distributed() -> Any:
    """The ``distributed`` module, or a ``TrajrunError`` saying how to install it."""
    try:
        import distributed  # deferred: an optional extra that takes a second to import
    except ImportError:
        raise TrajrunError(INSTALL) from None
    return distributed


class DaskEngine:
    """A Dask client (and the ``LocalCluster`` it started, if any) for the bulk cases of one run;
    ``notes`` hears what the run should say (the dashboard's link, a worker lost)."""

    def __init__(
        self,
        scheduler: str | None = None,
        jobs: int = 1,
        workers: int | None = None,
        notes: Callable[[str], None] | None = None,
    ) -> None:
        distributed = _distributed()
        self.cluster, self.notes = None, notes or (lambda _: None)
        address = scheduler or os.environ.get(ADDRESS_VAR, "").strip()
        if address:
            named_by = "--scheduler" if scheduler else ADDRESS_VAR
            self.client = _connect(distributed, address, named_by)
            try:
                check_cluster(self.client, address)
            except BaseException:
                self.client.close()
                raise
            if link := _dashboard(self.client):
                self.notes(f"Dask dashboard: {link}")
            return
        count = workers or (jobs if jobs > 1 else _cores())
        # our own cluster: its workers skip the statistical profiler, which sampled away a share
        # of their time, and the preload makes each die with this process
        with dask_config().set({"distributed.worker.profile.enabled": False}):
            self.cluster = distributed.LocalCluster(
                n_workers=count,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                dashboard_address=None,
                silence_logs=logging.ERROR,
                preload=["trajrun.run.orphans"],
            )
        self.client = distributed.Client(self.cluster)

    def workers(self) -> int:
        """How many workers the cluster has now (at least 1)."""
        return max(1, len(self.client.nthreads()))

    def close(self) -> None:
        """Close the client, and the cluster when this engine started it."""
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()

    def run(self, spec: BulkSpec, parts: list[Partition], aggregate: Aggregate) -> None:
        """Evaluate every partition on the cluster, feeding ``aggregate`` in partition order; say
        which workers were lost on the way (Dask ran their tasks again on the others)."""
        shared = self.client.scatter(spec, broadcast=True, hash=False)
        began = set(self.client.nthreads())
        tag, window = uuid.uuid4().hex[:8], max(1, len(began)) * (1 + AHEAD)
        keys = [f"trajrun-{tag}-{index}" for index in range(len(parts))]
        pending: deque[tuple[Partition, Any]] = deque()
        todo = iter(zip(parts, keys, strict=True))
        try:
            while True:
                while len(pending) < window and (item := next(todo, None)) is not None:
                    part, key = item
                    future = self.client.submit(evaluate_task, shared, part, pure=False, key=key)
                    pending.append((part, future))
                if not pending:
                    break
                part, future = pending.popleft()
                kept, tally = _outcome(part, future)
                aggregate.records(part.path, part.start, kept, tally.total)
                aggregate.finish(part.path, part.start, tally)
        finally:
            self.client.cancel([future for _, future in pending])
        for worker, count in lost_workers(self.client, began, set(keys)):
            tasks = f"{count} task{'s' if count != 1 else ''}"
            self.notes(
                f"note: Dask worker {worker} was lost mid-run; Dask ran its {tasks} again "
                "on the other workers"
            )


def _connect(distributed: Any, address: str, named_by: str) -> Any:
    """A client of the scheduler at ``address`` (from ``named_by``), or a ``TrajrunError``."""
    try:
        return distributed.Client(address, timeout=CONNECT_TIMEOUT)
    except Exception as exc:  # noqa: BLE001 - a bad address or a refused connection: say so
        raise TrajrunError(
            f"cannot reach the Dask scheduler at {address} (from {named_by}): {exc}; check "
            f"the address (for example tcp://10.0.0.5:8786), or leave out --scheduler and "
            f"{ADDRESS_VAR} to start a cluster on this machine"
        ) from None


def check_cluster(client: Any, address: str) -> None:
    """Before any task: the cluster has a worker, and every worker imports the trajrun this client
    runs (Dask compares the rest: Python, dask, distributed). A mismatch is one ``TrajrunError``
    naming each worker at fault, not an error per record."""
    try:
        client.wait_for_workers(1, timeout=WORKERS_TIMEOUT)
    except (TimeoutError, asyncio.TimeoutError):  # two classes before Python 3.11, one since
        raise TrajrunError(
            f"the Dask scheduler at {address} has no worker after "
            f"{WORKERS_TIMEOUT:g}s; start some where the files are: "
            f"dask worker {address}"
        ) from None
    mine = installed()
    problems = []
    for worker, theirs in sorted(client.run(installed, on_error="return").items()):
        if isinstance(theirs, BaseException):
            problems.append(f"worker {worker} cannot import trajrun ({inline(str(theirs))})")
        elif mine is not None and theirs != mine:
            problems.append(f"worker {worker} has trajrun {inline(str(theirs))}")
    if problems:
        want, pin = (f"trajrun {mine}", f"=={mine}") if mine is not None else ("trajrun", "")
        raise TrajrunError(
            f"the Dask cluster at {address} cannot run trajrun's tasks: "
            f"{'; '.join(problems)}; install {want} on every worker "
            f"(pip install 'trajrun[dask]{pin}') and restart them"
        )


def installed() -> str | None:
    """The installed trajrun's version (``None`` without package metadata). Run on a worker, it
    also proves that trajrun imports there: the worker imports this function to run it."""
    try:
        return importlib.metadata.version("trajrun")
    except importlib.metadata.PackageNotFoundError:
        return None


def _dashboard(client: Any) -> str | None:
    """The scheduler's dashboard link, when it serves one."""
    try:
        return client.dashboard_link
    except (KeyError, AttributeError):
        return None


def lost_workers(client: Any, began: set[str], keys: set[str]) -> list[tuple[str, int]]:
    """The workers of ``began`` that the scheduler removed while they held some of ``keys``
    (running them, or done but not yet fetched), with how many; the scheduler logs each removal
    under the worker's address."""
    lost = []
    for worker in sorted(began - set(client.nthreads())):
        held: set[str] = set()
        for _, event in client.get_events(worker):
            if isinstance(event, dict) and event.get("action") == "remove-worker":
                for field in ("processing-tasks", "lost-computed-tasks"):
                    held |= keys.intersection(event.get(field) or ())
        if held:
            lost.append((worker, len(held)))
    return lost


def evaluate_task(spec: BulkSpec, part: Partition) -> tuple[list[RecordResult], Tally]:
    """On a worker: one partition evaluated; a file this worker cannot open is one erred record
    naming the worker, what it opened, and the fix."""
    try:
        open_binary(part.opened).close()
    except OSError as exc:
        import distributed  # deferred: on a worker, where it is loaded already

        where = distributed.get_worker().address
        message = (
            f"source: the Dask worker at {where} cannot open {part.opened}: "
            f"{exc.strerror or exc}; {REACH if is_url(part.opened) else SHARED}"
        )
        return [RecordResult(part.path, None, "error", (), message)], Tally(error=1)
    return evaluate_partition(spec, part)


def _outcome(part: Partition, future: Any) -> tuple[list[RecordResult], Tally]:
    """A task's records and tally; a task that failed (its worker died too often) is one erred
    record."""
    try:
        return future.result()
    except Exception as exc:  # noqa: BLE001 - a lost partition must not end the case
        error = RecordResult(
            f"{part.path}@{part.start}",
            None,
            "error",
            (),
            f"source: the Dask task reading this partition failed: {type(exc).__name__}: {exc}",
        )
        return [error], Tally(error=1)


def dask_config() -> Any:
    """``dask.config``, for settings of the cluster this engine starts."""
    import dask  # deferred: an optional extra

    return dask.config


def evaluate_bag(spec: BulkSpec, bag: Any) -> Iterator[tuple[list[RecordResult], Tally]]:
    """A ``dask.bag`` of documents evaluated partition by partition on whatever scheduler it uses,
    in order."""
    import dask  # deferred: an optional extra

    task = dask.delayed(evaluate_documents, pure=False)
    parts = [task(spec, part) for part in bag.to_delayed()]
    yield from dask.compute(*parts)


def _cores() -> int:
    """One worker per core this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # no affinity outside Linux
        return os.cpu_count() or 1
