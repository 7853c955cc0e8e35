"""Every key path of loaded YAML data, for the tests that compare positions path by path."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def paths_in(data: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """The key path of ``data`` and of every value inside it, depth first."""
    yield path
    children = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else ()
    for key, value in children:
        yield from paths_in(value, (*path, key))
