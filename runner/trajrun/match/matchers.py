"""Inline matchers (``{$regex: ...}``) and ``compile_value``, which builds them from YAML values.

``compile_value`` turns expected values parsed from YAML into plain JSON with ``Matcher`` objects
where the suite wrote a ``$`` map; ``trajrun.match.values.compare_value`` compares such trees.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from typing import Any, Callable, Hashable

from ..errors import CheckError, SpecError, exception_line
from ..limits import compile_regex, regex_search
from .expressions import TemplateLimit, evaluate_expression, syntax_problem
from .values import JSON_TYPES, Matcher, Path, compare_value, is_number, json_type, render_value

__all__ = ["Matcher", "compile_value"]


class AllOf(Matcher):
    """Several operators in one map: all must hold."""

    __slots__ = ("parts",)

    def __init__(self, parts: tuple[Matcher, ...]) -> None:
        self.parts = parts

    def test(self, actual: Any) -> bool:
        """Every part holds."""
        return all(p.test(actual) for p in self.parts)

    def describe(self) -> str:
        """Parts joined with ``and``."""
        return " and ".join(p.describe() for p in self.parts)

    def on_missing(self) -> bool:
        """Every part accepts an absent key."""
        return all(p.on_missing() for p in self.parts)

    def key(self) -> Hashable:
        """The parts' keys."""
        return ("AllOf", tuple(p.key() for p in self.parts))


class Regex(Matcher):
    """``$regex``: ``re.search`` on a string, stopped after ``TRAJRUN_REGEX_TIMEOUT`` seconds per
    string."""

    __slots__ = ("pattern", "_rx")

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self._rx = compile_regex(pattern)

    def test(self, actual: Any) -> bool:
        """A string in which the pattern is found; a match past the time limit cannot be judged
        (``CheckError``)."""
        if not isinstance(actual, str):
            return False
        try:
            return regex_search(self._rx, actual)
        except TimeoutError as exc:
            raise CheckError(f"${exc}") from None

    def describe(self) -> str:
        """``regex 'pattern'``."""
        return f"regex {self.pattern!r}"

    def _operands(self) -> tuple[Any, ...]:
        """The values that make up the matcher's identity."""
        return (self.pattern,)


class ICase(Matcher):
    """``$icase``: case-folded string equality."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def test(self, actual: Any) -> bool:
        """A string equal to the text ignoring case."""
        return isinstance(actual, str) and actual.casefold() == self.text.casefold()

    def describe(self) -> str:
        """``icase 'text'``."""
        return f"icase {self.text!r}"


_COMPARISONS: dict[str, tuple[str, Callable[[float, float], bool]]] = {
    # in words: messages write a matcher in angle brackets (`{"n":<less than 100>}`), where
    # `<< 100>` misreads
    "$gt": ("greater than", lambda a, b: a > b),
    "$gte": ("at least", lambda a, b: a >= b),
    "$lt": ("less than", lambda a, b: a < b),
    "$lte": ("at most", lambda a, b: a <= b),
}


class Compare(Matcher):
    """``$gt $gte $lt $lte``: numbers only, never booleans."""

    __slots__ = ("op", "bound")

    def __init__(self, op: str, bound: float) -> None:
        self.op = op
        self.bound = bound

    def test(self, actual: Any) -> bool:
        """A number on the right side of the bound."""
        return is_number(actual) and _COMPARISONS[self.op][1](actual, self.bound)

    def describe(self) -> str:
        """``at least 1``, ``less than 100``."""
        return f"{_COMPARISONS[self.op][0]} {self.bound}"


class Approx(Matcher):
    """``$approx`` with ``$tol``: a number within an absolute tolerance."""

    __slots__ = ("value", "tol")

    def __init__(self, value: float, tol: float) -> None:
        self.value = value
        self.tol = tol

    def test(self, actual: Any) -> bool:
        """A number within ``tol`` of the value."""
        return is_number(actual) and abs(actual - self.value) <= self.tol

    def describe(self) -> str:
        """``approx 3.14 ± 0.01``."""
        return f"approx {self.value} ± {self.tol}"


class In(Matcher):
    """``$in``: equal to one of the options."""

    __slots__ = ("options",)

    def __init__(self, options: list[Any]) -> None:
        self.options = options

    def test(self, actual: Any) -> bool:
        """Matches some option exactly."""
        return any(compare_value(o, actual, "exact") for o in self.options)

    def describe(self) -> str:
        """``in ['en', 'fr']``."""
        return f"in {render_value(self.options)}"

    def _operands(self) -> tuple[Any, ...]:
        """The values that make up the matcher's identity."""
        return (self.options,)


class Type(Matcher):
    """``$type``: JSON Schema types; ``integer`` accepts ``1.0``, no number type accepts a
    boolean."""

    __slots__ = ("names",)

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = names

    def test(self, actual: Any) -> bool:
        """The value has one of the types."""
        kind = json_type(actual)
        if kind == "integer":
            return "integer" in self.names or "number" in self.names
        if kind == "number":
            return "number" in self.names or (
                "integer" in self.names and float(actual).is_integer()
            )
        return kind in self.names

    def describe(self) -> str:
        """``type integer``."""
        return f"type {' | '.join(self.names)}"


class Absent(Matcher):
    """``$absent: true`` (the key must be missing) or ``false`` (it must be present)."""

    __slots__ = ("flag",)

    def __init__(self, flag: bool) -> None:
        self.flag = flag

    def test(self, actual: Any) -> bool:
        """A present value passes only ``$absent: false``."""
        return not self.flag

    def describe(self) -> str:
        """``absent`` or ``present``."""
        return "absent" if self.flag else "present"

    def on_missing(self) -> bool:
        """A missing key passes only ``$absent: true``."""
        return self.flag


class AnyValue(Matcher):
    """``$any: true``: any present value."""

    __slots__ = ()

    def test(self, actual: Any) -> bool:
        """Always."""
        return True

    def describe(self) -> str:
        """``any``."""
        return "any"


class Contains(Matcher):
    """``$contains``: a substring, a matching list element, or a partial object."""

    __slots__ = ("operand",)

    def __init__(self, operand: Any) -> None:
        self.operand = operand

    def test(self, actual: Any) -> bool:
        """Substring of a string; some element of a list; the operand object within an object."""
        op = self.operand
        if isinstance(actual, str):
            return isinstance(op, str) and op in actual
        if isinstance(actual, list):
            rule = "superset" if isinstance(op, dict) else "exact"
            return any(compare_value(op, item, rule) for item in actual)
        if isinstance(actual, dict):
            return isinstance(op, dict) and compare_value(op, actual, "superset")
        return False

    def describe(self) -> str:
        """``contains ...``."""
        return f"contains {render_value(self.operand)}"


class Not(Matcher):
    """``$not``: the operand (a value or a matcher) does not match."""

    __slots__ = ("operand",)

    def __init__(self, operand: Any) -> None:
        self.operand = operand

    def test(self, actual: Any) -> bool:
        """The operand fails."""
        return not compare_value(self.operand, actual, "exact")

    def describe(self) -> str:
        """``not ...``."""
        return f"not {render_value(self.operand)}"

    def on_missing(self) -> bool:
        """An absent key passes unless the operand itself accepts absence."""
        return not (isinstance(self.operand, Matcher) and self.operand.on_missing())


class Expr(Matcher):
    """``$expr``: a sandboxed Jinja2 expression over ``value`` that must give a boolean."""

    __slots__ = ("source",)

    def __init__(self, source: str) -> None:
        self.source = source

    def test(self, actual: Any) -> bool:
        """Evaluate; a non-boolean result or a failure cannot be judged (``CheckError``)."""
        try:
            result = evaluate_expression(self.source, {"value": actual})
        except TemplateLimit as exc:
            raise CheckError(
                f"$expr {quote_text(self.source)} stopped on {render_value(actual)}: {exc}"
            ) from None
        except Exception as exc:  # noqa: BLE001 - any failure of user code is reported
            last = exception_line(exc)
            raise CheckError(
                f"$expr {quote_text(self.source)} failed on {render_value(actual)}: {last}"
            ) from None
        if not isinstance(result, bool):
            raise CheckError(
                f"$expr {quote_text(self.source)} gave {render_value(result, 40)} "
                f"({type(result).__name__}), not a boolean; write a comparison such as "
                "'value | length < 200'"
            )
        return result

    def describe(self) -> str:
        """``expr 'source'``."""
        return f"expr {self.source!r}"


def quote_text(text: str) -> str:
    """A pattern, expression or template as messages quote it: whole, or its start and end when it
    is long."""
    return (
        repr(text)
        if len(text) <= 120
        else f"{text[:60]!r}…{text[-40:]!r} ({len(text):,} characters)"
    )


# -- compiling ---------------------------------------------------------------------------------


def compile_value(raw: Any, path: Path = (), problems: list[SpecError] | None = None) -> Any:
    """Compile expected values from YAML: ``$`` maps become ``Matcher`` objects, the rest stays.

    Raises:
        SpecError: an unknown operator, a map mixing ``$`` and plain keys, or a bad operand;
            ``path`` leads from the value's root to the offending map. With ``problems``, every
            such error is appended there instead (the offending map left as written), so a
            suite's author sees them all at once.
    """
    if type(raw) is dict:
        for value in raw.values():
            if type(value) not in _PLAIN:
                break
        else:
            if _plain_keys(raw):
                return raw
    if isinstance(raw, dict):
        ops = [k for k in raw if isinstance(k, str) and k.startswith("$")]
        if ops and len(ops) == len(raw):
            return _noted(_compile_matcher, raw, path, problems)
        if ops:
            plain = ", ".join(str(k) for k in raw if k not in ops)
            error = SpecError(
                f"this map mixes matcher keys ({', '.join(ops)}) with plain keys ({plain}); "
                "to compare an argument map whose keys start with '$', wrap it: {$literal: {...}}",
                path,
            )
            if problems is None:
                raise error
            problems.append(error)
            return raw
        return {k: compile_value(v, path + (k,), problems) for k, v in raw.items()}
    if isinstance(raw, list):
        if _PLAIN.issuperset(map(type, raw)):
            return raw
        return [compile_value(v, path + (i,), problems) for i, v in enumerate(raw)]
    return raw


def _noted(
    build: Callable[[Any, Path], Any], raw: Any, path: Path, problems: list[SpecError] | None
) -> Any:
    """``build(raw, path)``; with ``problems``, a ``SpecError`` is noted there and ``raw`` kept."""
    if problems is None:
        return build(raw, path)
    try:
        return build(raw, path)
    except SpecError as exc:
        problems.append(exc)
        return raw


_PLAIN = frozenset({str, int, float, bool, type(None)})


def _plain_keys(raw: dict[Any, Any]) -> bool:
    """Whether every key is a string without ``$``: a map of such keys and plain values compiles to
    itself."""
    try:
        return "$" not in "".join(raw)
    except TypeError:
        return False


def _compile_matcher(raw: dict[str, Any], path: Path) -> Any:
    """Build the matcher of one all-``$`` map (several operators: all must hold)."""
    if "$literal" in raw:
        if len(raw) > 1:
            raise SpecError(
                "$literal must be the only key of its map (it escapes the whole value)", path
            )
        return raw["$literal"]
    if "$tol" in raw and "$approx" not in raw:
        raise SpecError("$tol is the tolerance of $approx; add $approx: <number> beside it", path)
    parts = []
    for op, operand in raw.items():
        if op == "$tol":
            continue
        build = _BUILDERS.get(op)
        if build is None:
            near = difflib.get_close_matches(op, [*_BUILDERS, "$literal", "$tol"], n=1)
            hint = (
                f"did you mean '{near[0]}'?" if near else "known: " + ", ".join(sorted(_BUILDERS))
            )
            raise SpecError(f"unknown matcher '{op}' — {hint}", path)
        parts.append(build(op, operand, raw, path))
    return parts[0] if len(parts) == 1 else AllOf(tuple(parts))


def _need(ok: bool, message: str, path: Path) -> None:
    """Raise a SpecError with ``message`` unless ``ok``."""
    if not ok:
        raise SpecError(message, path)


def _regex(op: str, operand: Any, raw: dict[str, Any], path: Path) -> Matcher:
    """``$regex``: a pattern that compiles."""
    _need(
        isinstance(operand, str),
        f"$regex needs a string pattern, got {render_value(operand, 40)}",
        path,
    )
    try:
        return Regex(operand)
    except re.error as exc:
        raise SpecError(f"$regex {quote_text(operand)} does not compile: {exc}", path) from None


def _icase(op: str, operand: Any, raw: dict[str, Any], path: Path) -> Matcher:
    """``$icase``: a string."""
    _need(isinstance(operand, str), f"$icase needs a string, got {render_value(operand, 40)}", path)
    return ICase(operand)


def _compare(op: str, operand: Any, raw: dict[str, Any], path: Path) -> Matcher:
    """``$gt $gte $lt $lte``: a finite number, not a boolean."""
    _need(
        is_number(operand) and math.isfinite(operand),
        f"{op} needs a number, got {render_value(operand, 40)}",
        path,
    )
    return Compare(op, operand)


def _approx(op: str, operand: Any, raw: dict[str, Any], path: Path) -> Matcher:
    """``$approx``: a number, with an optional ``$tol`` >= 0 beside it."""
    _need(is_number(operand), f"$approx needs a number, got {render_value(operand, 40)}", path)
    tol = raw.get("$tol", 1e-9)
    _need(
        is_number(tol) and tol >= 0, f"$tol needs a number >= 0, got {render_value(tol, 40)}", path
    )
    return Approx(operand, tol)


def _in(op: str, operand: Any, raw: dict[str, Any], path: Path) -> Matcher:
    """``$in``: a list of values (or matchers)."""
    _need(
        isinstance(operand, list),
        f"$in needs a list of values, got {render_value(operand, 40)}",
        path,
    )
    return In([compile_value(v, path) for v in operand])


def _type(op: str, operand: Any, raw: dict[str, Any], path: Path) -> Matcher:
    """``$type``: a JSON Schema type name or a list of them."""
    names = operand if isinstance(operand, list) else [operand]
    for name in names:
        if name not in JSON_TYPES:
            near = difflib.get_close_matches(str(name), JSON_TYPES, n=1)
            hint = f"did you mean '{near[0]}'?" if near else "use one of " + ", ".join(JSON_TYPES)
            raise SpecError(
                f"$type {render_value(name, 40)} is not a JSON Schema type — {hint}", path
            )
    return Type(tuple(names))


def _absent(op: str, operand: Any, raw: dict[str, Any], path: Path) -> Matcher:
    """``$absent``: true or false."""
    _need(
        isinstance(operand, bool),
        f"$absent needs true or false, got {render_value(operand, 40)}",
        path,
    )
    return Absent(operand)


def _any(op: str, operand: Any, raw: dict[str, Any], path: Path) -> Matcher:
    """``$any``: true."""
    _need(
        operand is True, "$any takes true (use $absent: true for a key that must be missing)", path
    )
    return AnyValue()


def _contains(op: str, operand: Any, raw: dict[str, Any], path: Path) -> Matcher:
    """``$contains``: any value or matcher."""
    return Contains(compile_value(operand, path))


def _not(op: str, operand: Any, raw: dict[str, Any], path: Path) -> Matcher:
    """``$not``: any value or matcher."""
    return Not(compile_value(operand, path))


def _expr(op: str, operand: Any, raw: dict[str, Any], path: Path) -> Matcher:
    """``$expr``: a Jinja2 expression that parses."""
    _need(
        isinstance(operand, str),
        f"$expr needs an expression string, got {render_value(operand, 40)}",
        path,
    )
    problem = syntax_problem(operand)
    _need(problem is None, f"$expr {quote_text(operand)} does not parse: {problem}", path)
    return Expr(operand)


_BUILDERS: dict[str, Callable[[str, Any, dict[str, Any], Path], Matcher]] = {
    "$regex": _regex,
    "$icase": _icase,
    "$gt": _compare,
    "$gte": _compare,
    "$lt": _compare,
    "$lte": _compare,
    "$approx": _approx,
    "$in": _in,
    "$type": _type,
    "$absent": _absent,
    "$any": _any,
    "$contains": _contains,
    "$not": _not,
    "$expr": _expr,
}


def result_as_compared(expected: Any, result: Any) -> Any:
    """A tool result as an expectation sees it: JSON text of an object or array decoded, unless the
    expectation is text itself (a string, ``$regex``, ``$icase``, ``$contains`` of a string).

    OpenAI Chat and Responses carry every tool output as a string, so ``result: {lat: 51.5}`` must
    see the object the tool returned; a string or pattern still sees the raw text.
    """
    if (
        not isinstance(result, str)
        or result.lstrip()[:1] not in ("{", "[")
        or _wants_text(expected)
    ):
        return result
    try:
        value = json.loads(result)
    except (ValueError, RecursionError):
        return result
    return value if isinstance(value, (dict, list)) else result


def _wants_text(expected: Any) -> bool:
    """Whether an expectation compares with text: a string, or a matcher that tests strings."""
    if isinstance(expected, (str, Regex, ICase)):
        return True
    if isinstance(expected, Contains):
        return isinstance(expected.operand, str)
    if isinstance(expected, Not):
        return _wants_text(expected.operand)
    if isinstance(expected, AllOf):
        return any(map(_wants_text, expected.parts))
    return False
