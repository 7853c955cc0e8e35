"""JSON values as trajrun compares them: equality, canonical keys, rendering, comparison under a
rule.

Numbers compare by value (``1 == 1.0``), booleans never equal numbers, ``null`` is not absent.
``Matcher`` is the interface of inline matchers (``trajrun.match.matchers`` holds the operators).

The ``zip`` calls on the matching path go without ``strict=`` (``noqa: B905``): the keyword costs an
argument parse per call, more than zipping a few items, and they run per class, turn or path.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Hashable

from ..errors import inline

Path = tuple[Any, ...]


class _Missing:
    """The type of ``MISSING``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()
"""Stands for an absent key in comparisons and diffs."""

JSON_TYPES = ("string", "number", "integer", "boolean", "object", "array", "null")
_BOOL_TAG = "\x00b"
_DICT_TAG = "\x00d"
_LIST_TAG = "\x00l"


class Matcher:
    """An inline matcher: tests an actual value alone."""

    __slots__ = ()

    def test(self, actual: Any) -> bool:
        """Whether ``actual`` (a present value) satisfies the matcher."""
        raise NotImplementedError(type(self).__name__)

    def describe(self) -> str:
        """Short text for tables: ``regex 'weather.*Paris'``."""
        raise NotImplementedError(type(self).__name__)

    def on_missing(self) -> bool:
        """Whether an absent key satisfies the matcher (only ``$absent: true`` and negations)."""
        return False

    def key(self) -> Hashable:
        """A hashable identity, so equal matchers group together."""
        return (type(self).__name__, tuple(spec_key(v) for v in self._operands()))

    def _operands(self) -> tuple[Any, ...]:
        """The values that make up the matcher's identity."""
        slots: tuple[str, ...] = self.__slots__
        return tuple(getattr(self, s) for s in slots)

    def __repr__(self) -> str:
        return f"<{self.describe()}>"


# -- plain JSON helpers ------------------------------------------------------------------------


def is_number(value: Any) -> bool:
    """An int or float that is not a boolean."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def json_type(value: Any) -> str:
    """The JSON Schema type name of a value (``integer`` for ints, ``number`` for floats)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return (
        "array"
        if isinstance(value, list)
        else "object"
        if isinstance(value, dict)
        else type(value).__name__
    )


def scalar_equal(expected: Any, actual: Any) -> bool:
    """JSON equality of scalars: numbers by value, booleans never equal numbers."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(expected) is type(actual) and expected == actual
    return bool(expected == actual)


FLAT_TYPES = frozenset({str, int, float, type(None)})


class _HasMatcher(Exception):
    """Raised by ``canon`` inside a value holding a matcher (no plain key exists)."""


def canon(value: Any) -> Hashable:
    """A hashable key equal for JSON-equal values (``1`` and ``1.0``), distinct for booleans.

    A compiled value holding a matcher has none: use ``plain_key`` or ``spec_key`` for those.
    """
    t = type(value)
    if t is dict:
        for v in value.values():
            if type(v) not in FLAT_TYPES:
                return (_DICT_TAG, frozenset([(k, canon(v)) for k, v in value.items()]))
        return (_DICT_TAG, frozenset(value.items()))
    if t is str or t is int or t is float or value is None:
        return value
    if t is bool:
        return (_BOOL_TAG, value)
    if t is list or t is tuple:
        return (_LIST_TAG, tuple([canon(v) for v in value]))
    if isinstance(value, Matcher):
        raise _HasMatcher
    return (type(value).__name__, repr(value))


def is_flat(value: Any) -> bool:
    """Whether ``value`` is a dict whose values are all strings, non-boolean numbers or null."""
    if type(value) is not dict:
        return False
    for v in value.values():
        if type(v) not in FLAT_TYPES:
            return False
    return True


def same_flat(expected: dict[str, Any], actual: Any) -> bool:
    """Whether both are flat maps (see ``is_flat``) and ``canon(expected) == canon(actual)``,
    without building keys."""
    if type(actual) is not dict or len(actual) != len(expected):
        return False
    for key, value in expected.items():
        found = actual.get(key, MISSING)
        if (
            type(value) not in FLAT_TYPES
            or type(found) not in FLAT_TYPES
            or not (found is value or found == value)
        ):
            return False
    return True


def flat_match(expected: dict[str, Any], actual: Any, rule: str) -> bool:
    """Whether ``expected`` is flat (see ``is_flat``) and ``compare_value(expected, actual, rule)``
    holds, in one loop."""
    if not isinstance(actual, dict):
        return False
    for key, value in expected.items():
        if type(value) not in FLAT_TYPES:
            return False
        if key in actual:
            found = actual[key]
            if isinstance(found, (dict, list, bool)) or not value == found:
                return False
        elif rule != "subset":
            return False
    if rule == "superset":
        return True
    for key in actual:
        if key not in expected:
            return False
    return True


def plain_key(value: Any) -> Hashable | None:
    """``canon(value)``, or ``None`` when the value holds a matcher."""
    try:
        return canon(value)
    except _HasMatcher:
        return None


def spec_key(value: Any) -> Hashable:
    """``canon`` for compiled expected values, matchers included."""
    key = plain_key(value)
    return key if key is not None or value is None else _spec_key(value)


def _spec_key(value: Any) -> Hashable:
    """The key of a value holding matchers, built with each matcher's own key."""
    if isinstance(value, Matcher):
        return ("\x00m", value.key())
    if isinstance(value, dict):
        return (_DICT_TAG, frozenset((k, _spec_key(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return (_LIST_TAG, tuple(_spec_key(v) for v in value))
    return canon(value)


def has_matcher(value: Any) -> bool:
    """Whether a compiled value holds any matcher."""
    return plain_key(value) is None and value is not None


def render_value(value: Any, width: int = 60) -> str:
    """Compact JSON-like text, matchers as ``<regex 'x'>``, cut with ``…`` past ``width``."""
    text = _render(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def _render(value: Any) -> str:
    """Render without the width limit."""
    if isinstance(value, Matcher):
        return f"<{value.describe()}>"
    if value is MISSING:
        return "absent"
    if isinstance(value, dict):
        return (
            "{"
            + ",".join(
                f"{json.dumps(str(k), ensure_ascii=False)}:{_render(v)}" for k, v in value.items()
            )
            + "}"
        )
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_render(v) for v in value) + "]"
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def json_text(text: str) -> str:
    """A string as ``render_value`` shows it, JSON-quoted with non-ASCII kept, on one line
    (``inline``)."""
    return inline(json.dumps(text, ensure_ascii=False))


Quote = Callable[[str], str]
Parting = tuple[str, str, str]


def parting(expected: Any, actual: Any, width: int, quote: Quote = json_text) -> Parting | None:
    """Two strings, one longer than ``width``, shown where they part: each side's window of text
    (the common start elided with ``…``) and where it is (``differs at character 212``, ``differs
    on line 3``; empty when the windows start at the texts' start). ``None`` for shorter strings
    and other values, which are shown whole as before.

    Both sides start at the same character, so the eye finds the difference; text with line breaks
    shows the first differing line, so one wrong word in a long letter reads as that line.
    """
    if not isinstance(expected, str) or not isinstance(actual, str):
        return None
    if max(len(expected), len(actual)) <= width:
        return None
    if "\n" not in expected and "\n" not in actual:
        exp, act, at = _windows(expected, actual, width, quote)
        return exp, act, f"differs at character {at}" if at else ""
    old, new = expected.split("\n"), actual.split("\n")
    line = next(
        (k for k, (a, b) in enumerate(zip(old, new, strict=False)) if a != b),
        min(len(old), len(new)),
    )
    where = f"differs on line {line + 1}"
    if line >= len(old) or line >= len(new):
        exp = _window(old[line], 0, width, quote) if line < len(old) else "end of text"
        act = _window(new[line], 0, width, quote) if line < len(new) else "end of text"
        return exp, act, where
    exp, act, at = _windows(old[line], new[line], width, quote)
    return exp, act, f"{where} at character {at}" if at else where


def _windows(expected: str, actual: str, width: int, quote: Quote) -> tuple[str, str, int]:
    """Both one-line texts from a little before the first differing character, and that character's
    number (counting from 1), or 0 when the windows start at the texts' start."""
    pairs = enumerate(zip(expected, actual, strict=False))
    same = next((k for k, (a, b) in pairs if a != b), min(len(expected), len(actual)))
    start = max(0, same - width // 3)
    if start:  # from the start of a word when one is near, as a reader looks for it
        start = expected.rfind(" ", max(0, start - width // 6), start) + 1 or start
    shown = _window(expected, start, width, quote), _window(actual, start, width, quote)
    return shown[0], shown[1], same + 1 if start else 0


def _window(text: str, start: int, width: int, quote: Quote) -> str:
    """``text`` quoted from ``start`` for ``width - 1`` characters, each cut end marked ``…``."""
    piece = text[start : start + width - 1]
    return ("…" if start else "") + quote(piece) + ("…" if start + len(piece) < len(text) else "")


def contains_hint(expected: Any, actual: Any) -> str:
    """How to accept a plain expected text or map that the differing actual one contains, or empty:
    ``the actual text contains the expected one: use {$contains: "Lisbon"} to accept it``."""
    if isinstance(expected, str) and isinstance(actual, str):
        if not expected or expected == actual or expected not in actual:
            return ""
        what = "text"
    elif isinstance(expected, dict) and isinstance(actual, dict) and expected:
        if has_matcher(expected) or not compare_value(expected, actual, "superset"):
            return ""
        if compare_value(expected, actual, "exact"):
            return ""
        what = "value"
    else:
        return ""
    operand = inline(_render(expected))
    use = f"use {{$contains: {operand}}}" if len(operand) <= 60 else "write it as {$contains: …}"
    return f"the actual {what} contains the expected one: {use} to accept it"


# -- comparison --------------------------------------------------------------------------------

Diff = tuple[Path, Any, Any]
"""One differing field: its path from the arguments' root, the expected and the actual value."""


def compare_value(
    expected: Any,
    actual: Any,
    rule: str,
    path: Path = (),
    skip: frozenset[Path] = frozenset(),
    out: list[Diff] | None = None,
) -> bool:
    """Compare an expected (compiled) value with an actual one under ``exact``, ``superset`` or
    ``subset``.

    Paths in ``skip`` were compared elsewhere (field comparators). With ``out`` every difference
    is collected there instead of stopping at the first.
    """
    if skip and path in skip:
        return True
    if isinstance(expected, Matcher):
        ok = expected.test(actual)
    elif isinstance(expected, dict):
        if isinstance(actual, dict):
            return _compare_dict(expected, actual, rule, path, skip, out)
        ok = False
    elif isinstance(expected, list):
        if isinstance(actual, list) and len(actual) == len(expected):
            return _compare_list(expected, actual, rule, path, skip, out)
        ok = False
    elif isinstance(actual, (dict, list)):
        ok = False
    else:
        ok = scalar_equal(expected, actual)
    if not ok and out is not None:
        out.append((path, expected, actual))
    return ok


def _compare_dict(
    expected: dict[str, Any],
    actual: dict[str, Any],
    rule: str,
    path: Path,
    skip: frozenset[Path],
    out: list[Diff] | None,
) -> bool:
    """Objects: expected keys per the rule, then extra actual keys (failing under exact and
    subset)."""
    ok = True
    for key, exp in expected.items():
        if key in actual:
            ok = compare_value(exp, actual[key], rule, path + (key,), skip, out) and ok
        elif (
            rule != "subset"
            and not (isinstance(exp, Matcher) and exp.on_missing())
            and not (skip and path + (key,) in skip)
        ):
            ok = False
            if out is not None:
                out.append((path + (key,), exp, MISSING))
        if not ok and out is None:
            return False
    if rule == "superset":
        return ok
    for key, act in actual.items():
        if key not in expected and not (skip and path + (key,) in skip):
            ok = False
            if out is None:
                return False
            out.append((path + (key,), MISSING, act))
    return ok


def _compare_list(
    expected: list[Any],
    actual: list[Any],
    rule: str,
    path: Path,
    skip: frozenset[Path],
    out: list[Diff] | None,
) -> bool:
    """Lists of one length, element by element under the same rule."""
    ok = True
    for i, (exp, act) in enumerate(zip(expected, actual)):  # noqa: B905
        ok = compare_value(exp, act, rule, path + (i,), skip, out) and ok
        if not ok and out is None:
            return False
    return ok
