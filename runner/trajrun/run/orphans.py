"""Worker processes that end with trajrun however it ends (``kill -9`` too): ``-j`` case workers,
``-j`` bulk workers and the workers of a Dask cluster trajrun starts itself all call
``end_with_parent`` (or, on Dask, its first half) before any work."""

from __future__ import annotations

import multiprocessing
import os
import threading
from multiprocessing.connection import wait
from typing import Any

from ..sources.live_child import die_with_parent


def end_with_parent() -> None:
    """End this process as soon as its parent has ended: on Linux the kernel kills it
    (``PR_SET_PDEATHSIG``), elsewhere a thread sees the parent's sentinel (a pipe only the parent
    writes) close."""
    die_with_parent()
    parent = multiprocessing.parent_process()
    if parent is not None:
        threading.Thread(
            target=_exit_on, args=(parent.sentinel,), daemon=True, name="trajrun-orphan"
        ).start()


def _exit_on(sentinel: int) -> None:
    """Wait for the parent's sentinel, then end the process at once (threads, pipes, files)."""
    wait([sentinel])
    os._exit(1)


def dask_setup(worker: Any) -> None:
    """A Dask preload (``preload=["trajrun.run.orphans"]``): a worker of trajrun's own
    ``LocalCluster`` dies with trajrun. Dask's own watch of the parent is a thread, which needs the
    interpreter lock; the kernel's signal does not."""
    die_with_parent()
