"""One run's calls looked up: by tool name, by canonical arguments, by the value of one key.

Every lookup is built on first use and kept for the run's evaluation: a run whose steps pair with
its calls directly (the usual passing run) builds none of them.

The ``zip`` calls on the matching path go without ``strict=`` (``noqa: B905``): the keyword costs an
argument parse per call, more than zipping a few items, and they run per class, turn or path.
"""

from __future__ import annotations

from collections.abc import Hashable
from itertools import compress, repeat
from operator import attrgetter, eq
from typing import Any

from ..trajectory import ToolCall
from .values import canon

RAW = "\x00raw"
"""Tags a raw (undecoded) argument string apart from a decoded object in a canonical key."""
_NAME = attrgetter("name")
_ARGS = attrgetter("args")
_DICT_ONLY = frozenset({dict})
_ABSENT = object()
_NOT_MAP = object()


def args_key(args: Any) -> Hashable:
    """The canonical key of arguments: raw strings tagged apart from decoded objects."""
    return (RAW, args) if isinstance(args, str) else canon(args)


class CallIndex:
    """The calls of one run, with the lookups the matching asks for."""

    __slots__ = (
        "calls",
        "_names",
        "_by_name",
        "_grouped",
        "_exact",
        "_key_index",
        "_key_values",
        "_unique",
    )

    def __init__(self, calls: tuple[ToolCall, ...]) -> None:
        """Keep the calls; every lookup is built when first asked for."""
        self.calls = calls
        self._names: list[str] | None = None
        self._by_name: dict[str, list[int]] = {}
        self._grouped = False
        self._exact: dict[str, dict[Hashable, list[int]]] = {}
        self._key_index: dict[tuple[str, str], tuple[dict[Hashable, list[int]], list[int]]] = {}
        self._key_values: dict[tuple[str, str], list[Any]] = {}
        self._unique: dict[str, dict[Any, int] | None] = {}

    @property
    def names(self) -> list[str]:
        """The calls' tool names, in call order."""
        if self._names is None:
            self._names = list(map(_NAME, self.calls))
        return self._names

    def positions(self, name: str) -> list[int]:
        """The positions of one tool's calls, ascending, found once per tool.

        The first tool asked for is found by a scan at C speed: a policy over logs often names one
        tool, and grouping every call by name in Python was a large part of its check. The second
        groups every call at once, which costs less than a scan per tool from the third on.
        """
        found = self._by_name.get(name)
        if found is None:
            if not self._by_name:
                found = list(compress(range(len(self.calls)), map(name.__eq__, self.names)))
            elif not self._grouped:
                groups: dict[str, list[int]] = {}
                for pos, called in enumerate(self.names):
                    groups.setdefault(called, []).append(pos)
                self._by_name.update(groups)
                self._grouped = True
                found = groups.get(name, [])
            else:
                found = []
            self._by_name[name] = found
        return found

    def exact_bucket(self, name: str) -> dict[Hashable, list[int]]:
        """Calls of one tool by canonical argument key (``args_key``)."""
        bucket = self._exact.get(name)
        if bucket is None:
            bucket = self._exact[name] = {}
            calls = self.calls
            for pos in self.positions(name):
                bucket.setdefault(args_key(calls[pos].args), []).append(pos)
        return bucket

    def with_value(self, name: str, key: str, value: Any, or_absent: bool) -> list[int]:
        """The calls of one tool whose ``key`` can hold ``value`` (with ``or_absent``, and those
        without ``key``), ascending.

        A string is looked up in ``unique`` when every call's value of ``key`` is unique (the usual
        ids and queries: each step then touches one call, not every call of its tool), else found
        by a scan at C speed over the tool's values of ``key`` (indexing every call's value by its
        canonical key cost more than the scans). Other values use that canonical index.
        """
        if type(value) is not str:
            values, absent = self._by_canon(name, key)
            bucket = values.get(canon(value), [])
            return sorted(bucket + absent) if or_absent and absent else bucket
        if not or_absent:
            unique = self._unique[key] if key in self._unique else self.unique(key)
            if unique is not None:
                pos = unique.get(value)
                return [pos] if pos is not None and self.calls[pos].name == name else []
        pool, held = self.positions(name), self._values(name, key)
        if or_absent:
            pairs = zip(pool, held)  # noqa: B905
            return [pos for pos, got in pairs if got is _ABSENT or got == value]
        return list(compress(pool, map(eq, held, repeat(value))))

    def unique(self, key: str) -> dict[Any, int] | None:
        """Each call's value of ``key`` to its position, when every call's arguments are a map and
        no value is held by two calls (calls without ``key`` aside); None otherwise (or for a value
        that cannot be a key)."""
        if key not in self._unique:
            self._unique[key] = self._unique_of(key)
        return self._unique[key]

    def _unique_of(self, key: str) -> dict[Any, int] | None:
        """Compute ``unique`` at C speed."""
        args = list(map(_ARGS, self.calls))
        if not set(map(type, args)) <= _DICT_ONLY:
            return None
        held = list(map(dict.get, args, repeat(key), repeat(_ABSENT)))
        try:
            index = dict(zip(held, range(len(held))))  # noqa: B905
        except TypeError:  # a list or a map
            return None
        without = held.count(_ABSENT)
        return index if len(index) + max(without - 1, 0) == len(held) else None

    def _values(self, name: str, key: str) -> list[Any]:
        """Each call of one tool's value of ``key`` (``_ABSENT`` without it, ``_NOT_MAP`` for
        arguments not a map)."""
        found = self._key_values.get((name, key))
        if found is None:
            args = list(map(_ARGS, map(self.calls.__getitem__, self.positions(name))))
            if set(map(type, args)) <= _DICT_ONLY:  # the usual case, at C speed
                found = list(map(dict.get, args, repeat(key), repeat(_ABSENT)))
            else:
                found = [a.get(key, _ABSENT) if isinstance(a, dict) else _NOT_MAP for a in args]
            self._key_values[(name, key)] = found
        return found

    def _by_canon(self, name: str, key: str) -> tuple[dict[Hashable, list[int]], list[int]]:
        """Calls of one tool by the canonical value of one argument key, and those without it."""
        found = self._key_index.get((name, key))
        if found is None:
            values: dict[Hashable, list[int]] = {}
            absent: list[int] = []
            for pos in self.positions(name):
                args = self.calls[pos].args
                if isinstance(args, dict):
                    if key in args:
                        values.setdefault(canon(args[key]), []).append(pos)
                    else:
                        absent.append(pos)
            found = self._key_index[(name, key)] = (values, absent)
        return found
