"""Shared test set-up: pytester for the plugin tests, and the collector's thresholds restored after each test."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

pytest_plugins = ["pytester"]


@pytest.fixture(autouse=True)
def _gc_thresholds() -> Iterator[None]:
    """``trajrun run`` tunes the garbage collector for its own process; in-process CLI tests must not leak that."""
    thresholds = gc.get_threshold()
    yield
    gc.set_threshold(*thresholds)
