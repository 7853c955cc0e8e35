"""Limits on hostile input that users may raise: one source's size, and regular expressions under a
time limit.

``$regex`` matchers (the match layer) and ``=~``/``sub()`` in JSONPath ``select`` filters (the
sources layer) share the bounded regex here. Each limit is read from its environment variable when
used, so a test or a CI job can change it without restarting anything.
"""

from __future__ import annotations

import functools
import math
import os
import re
from typing import Any

from .errors import SourceError

MAX_SOURCE_BYTES_VAR = "TRAJRUN_MAX_SOURCE_BYTES"


DEFAULT_MAX_SOURCE_BYTES = 1 << 30


REGEX_TIMEOUT_VAR = "TRAJRUN_REGEX_TIMEOUT"


DEFAULT_REGEX_TIMEOUT = 1.0


MAX_REGEX_ITEMS = 100_000


def max_source_bytes() -> int:
    """``TRAJRUN_MAX_SOURCE_BYTES``, or 1 GiB when it is unset."""
    return int(
        env_number(
            MAX_SOURCE_BYTES_VAR, DEFAULT_MAX_SOURCE_BYTES, "a whole number of bytes", whole=True
        )
    )


def env_number(name: str, default: float, unit: str, whole: bool = False) -> float:
    """A positive number from the environment variable ``name``, or ``default`` when it is unset or
    empty."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw) if whole else float(raw)
    except ValueError:
        value = 0
    if not (value > 0 and math.isfinite(value)):
        raise SourceError(f"{name} must be {unit} above 0, found {raw!r}; fix or unset it")
    return value


def regex_timeout() -> float:
    """``TRAJRUN_REGEX_TIMEOUT`` in seconds, or 1 when it is unset."""
    return env_number(REGEX_TIMEOUT_VAR, DEFAULT_REGEX_TIMEOUT, "a number of seconds")


@functools.lru_cache(maxsize=1024)
def compile_regex(pattern: str) -> Any:
    """``pattern`` compiled by the ``regex`` package, whose matches can be stopped after a time
    limit.

    The pattern must be one Python's ``re`` accepts (its syntax is what users write). Raises
    ``re.error`` for a pattern ``re`` refuses, or whose counted repeats expand past
    ``MAX_REGEX_ITEMS`` (the ``regex`` package unrolls them when compiling).
    """
    re.compile(pattern)
    size = _unrolled_size(pattern)
    if size > MAX_REGEX_ITEMS:
        raise re.error(
            f"its counted repeats unroll to about {size:,} items, above the limit of "
            f"{MAX_REGEX_ITEMS:,}; use * or + instead of large {{n}} counts"
        )
    import regex  # deferred: the regex package costs start-up time

    try:
        return regex.compile(pattern)
    except regex.error as exc:
        raise re.error(str(exc)) from None


def regex_search(compiled: Any, text: str) -> bool:
    """Whether ``compiled`` (from ``compile_regex``) is found in ``text``; ``TimeoutError`` past the
    time limit."""
    limit = regex_timeout()
    try:
        return compiled.search(text, timeout=limit) is not None
    except TimeoutError:
        raise TimeoutError(timeout_message(compiled.pattern, len(text), limit)) from None


def timeout_message(pattern: str, length: int, limit: float) -> str:
    """What a regex that ran out of time did, and the two ways out."""
    return (
        f"regex {pattern!r} ran longer than the {limit:g} s limit on a string of {length:,} "
        "characters; nested repeats like (a+)+ backtrack exponentially — simplify the pattern, "
        f"or raise {REGEX_TIMEOUT_VAR}"
    )


_REGEX_TOKEN = re.compile(
    r"\\.|\[\^?\]?(?:\\.|[^\]\\])*\]|\{(\d+)(?:,(\d*))?\}|\{,(\d+)\}|.", re.DOTALL
)


def _unrolled_size(pattern: str) -> int:
    """About how many items the counted repeats of ``pattern`` unroll to (``(a{10}){10}`` is
    100)."""
    stack = [[0, 0]]  # per open group: [items so far, items of the last atom]
    for token in _REGEX_TOKEN.finditer(pattern):
        counts = [int(n) for n in token.groups() if n]
        frame = stack[-1]
        if counts:
            frame[0] += frame[1] * (max(counts) - 1)
            frame[1] *= max(counts)
        elif token[0] == "(":
            stack.append([0, 0])
        elif token[0] == ")" and len(stack) > 1:
            inner = stack.pop()[0]
            stack[-1][0] += inner
            stack[-1][1] = inner
        elif token[0] != "|":
            frame[0] += 1
            frame[1] = 1
    return sum(frame[0] for frame in stack)
