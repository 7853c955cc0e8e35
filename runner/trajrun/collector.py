"""The garbage collector paused while trajrun builds large acyclic structures (documents,
suites)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic collector, restoring its state after.

    Loading a suite makes millions of objects and no cycles: each collection would rescan them all
    for nothing (a large part of loading a big file). Reference counting still frees them.
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
