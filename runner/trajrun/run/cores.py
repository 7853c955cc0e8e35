"""How many worker processes ``-j`` may start: one per usable core for ``-j auto``, at most
``JOBS_PER_CORE`` per core.

Kept apart from the pool (``workers``, which brings multiprocessing) so a serial run never imports
the pool."""

from __future__ import annotations

import os

JOBS_PER_CORE = 4
"""``-j`` starts at most this many workers per core: more only adds memory and start-up time."""


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the platform has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # no affinity outside Linux
        return os.cpu_count() or 1


def worker_limit() -> int:
    """The most worker processes ``-j`` starts."""
    return JOBS_PER_CORE * usable_cores()
