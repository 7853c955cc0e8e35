"""The Dask engine of bulk cases: partitions evaluated by a cluster's workers, results taken in partition order.

``--engine dask --scheduler ADDRESS`` uses a running cluster; without ``--scheduler`` a ``LocalCluster``
of worker processes starts on this machine (``-j N`` of them, else one per core) and stops with the run.
Each task reads its own partition (a file path or URL the workers can reach) and returns compact
record results and counts, so the data never passes through the client. A few tasks per worker are
in flight at a time, which keeps the client's memory flat however many partitions there are.
"""

from __future__ import annotations

import logging
import os
import uuid
from collections import deque
from collections.abc import Iterator
from typing import Any

from ..errors import TrajrunError
from ..sources.records import Partition
from .bulk_eval import BulkSpec, evaluate_documents, evaluate_partition
from .bulk_results import Aggregate, RecordResult, Tally

AHEAD = 2
"""Tasks in flight per worker beyond the one it runs."""
CONNECT_TIMEOUT = 10.0
"""Seconds to wait for a scheduler named with ``--scheduler``."""
INSTALL = "--engine dask needs dask.distributed and fsspec, which are not installed: pip install 'trajrun[dask]'"


def _distributed() -> Any:
    """The ``distributed`` module, or a ``TrajrunError`` saying how to install it."""
    try:
        import distributed  # deferred: an optional extra that takes a second to import
    except ImportError:
        raise TrajrunError(INSTALL) from None
    return distributed


class DaskEngine:
    """A Dask client (and the ``LocalCluster`` it started, if any) for the bulk cases of one run."""

    def __init__(self, scheduler: str | None = None, jobs: int = 1, workers: int | None = None) -> None:
        distributed = _distributed()
        self.cluster = None
        if scheduler:
            try:
                self.client = distributed.Client(scheduler, timeout=CONNECT_TIMEOUT)
            except Exception as exc:  # noqa: BLE001 - a bad address or a refused connection: either way, say so
                raise TrajrunError(f"cannot reach the Dask scheduler at {scheduler}: {exc}; check the address (for "
                                   "example tcp://10.0.0.5:8786), or leave out --scheduler to start a cluster on "
                                   "this machine") from None  # fmt: skip
            return
        count = workers or (jobs if jobs > 1 else _cores())
        # our own cluster: its workers skip the statistical profiler, which sampled away a tenth of their time
        with dask_config().set({"distributed.worker.profile.enabled": False}):
            self.cluster = distributed.LocalCluster(n_workers=count, threads_per_worker=1, processes=True,
                                                    host="127.0.0.1", dashboard_address=None,
                                                    silence_logs=logging.ERROR)  # fmt: skip
        self.client = distributed.Client(self.cluster)

    def workers(self) -> int:
        """How many workers the cluster has now (at least 1)."""
        return max(1, len(self.client.scheduler_info().get("workers", {})))

    def close(self) -> None:
        """Close the client, and the cluster when this engine started it."""
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()

    def run(self, spec: BulkSpec, parts: list[Partition], aggregate: Aggregate) -> None:
        """Evaluate every partition on the cluster, feeding ``aggregate`` in partition order."""
        shared = self.client.scatter(spec, broadcast=True, hash=False)
        tag, window = uuid.uuid4().hex[:8], self.workers() * (1 + AHEAD)
        pending: deque[tuple[Partition, Any]] = deque()
        todo = iter(enumerate(parts))
        try:
            while True:
                while len(pending) < window and (item := next(todo, None)) is not None:
                    index, part = item
                    pending.append((part, self.client.submit(evaluate_partition, shared, part, pure=False,
                                                             key=f"trajrun-{tag}-{index}")))  # fmt: skip
                if not pending:
                    return
                part, future = pending.popleft()
                kept, tally = _outcome(part, future)
                aggregate.records(part.path, part.start, kept, tally.total)
                aggregate.finish(part.path, part.start, tally)
        finally:
            self.client.cancel([future for _, future in pending])


def _outcome(part: Partition, future: Any) -> tuple[list[RecordResult], Tally]:
    """A task's records and tally; a task that failed (its worker died too often) is one erred record."""
    try:
        return future.result()  # type: ignore[no-any-return]
    except Exception as exc:  # noqa: BLE001 - a lost partition must not end the case
        error = RecordResult(f"{part.path}@{part.start}", None, "error", (),
                             f"source: the Dask task reading this partition failed: {type(exc).__name__}: {exc}")
        return [error], Tally(error=1)


def dask_config() -> Any:
    """``dask.config``, for settings of the cluster this engine starts."""
    import dask  # deferred: an optional extra

    return dask.config


def evaluate_bag(spec: BulkSpec, bag: Any) -> Iterator[tuple[list[RecordResult], Tally]]:
    """A ``dask.bag`` of documents evaluated partition by partition on whatever scheduler it uses, in order."""
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
