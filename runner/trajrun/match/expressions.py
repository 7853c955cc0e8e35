"""The sandboxed Jinja2 environment: ``$expr`` matchers compile here, suite templates render with
it.

Templates and expressions come from suite files, so the sandbox also bounds what one evaluation
(``evaluate_expression``, or a render inside ``limited``) may build and how long it may run.
Going past a bound raises ``TemplateLimit``, whose message names the bound:

- ``MAX_SIZE``: a string, list or map made by an operation, and a rendered string, hold at most
  1,000,000 characters or items — or, when the variables handed in are larger, 1,000,000 more
  than 4× their size (``value | tojson`` on a large tool result is fine; doubling it again is
  not). Operations that multiply (``*``, ``%`` and ``format`` widths, ``center``, ``replace``,
  ``join``, ``indent``, ``batch``, ...) are refused *before* they run, from an estimate.
- ``MAX_INT_DIGITS``: ``*`` and ``**`` make integers of at most 4,300 digits.
- ``MAX_RANGE``: ``range`` gives at most 100,000 numbers; ``lipsum`` at most ``MAX_LIPSUM_WORDS``.
- ``MAX_STEPS`` loop iterations, calls and operations, and ``TIME_LIMIT`` seconds, per evaluation.
"""

from __future__ import annotations

import builtins
import itertools
import math
import re
import string
import time
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache, wraps
from typing import Any, Callable, Iterable, Iterator, Mapping

from ..errors import TrajrunError

MAX_SIZE = 1_000_000
MAX_INT_DIGITS = 4_300
MAX_RANGE = 100_000
MAX_LIPSUM_WORDS = 100_000
MAX_STEPS = 100_000
TIME_LIMIT = 2.0
_INPUT_FACTOR = 4
_SIZED = (str, bytes, list, tuple, dict, set, frozenset)


class TemplateLimit(TrajrunError):
    """A template or ``$expr`` that went past one of the sandbox's bounds; the message names it."""


@dataclass(slots=True)
class _Budget:
    """What is left to one evaluation, and the variables it was handed (weighed only when
    needed)."""

    steps: int
    deadline: float
    inputs: Any
    allowance: int | None = None


_BUDGET: ContextVar[_Budget | None] = ContextVar("trajrun_template_budget", default=None)


@contextmanager
def limited(inputs: Mapping[str, Any]) -> Iterator[None]:
    """Run one evaluation (a render, an expression) under a fresh step and time budget.

    ``inputs`` are the variables whose size raises the size limit (a large tool result, a large
    ``vars`` value).
    """
    token = _BUDGET.set(_Budget(MAX_STEPS, time.monotonic() + TIME_LIMIT, inputs))
    try:
        yield
    finally:
        _BUDGET.reset(token)


def evaluate_expression(
    source: str, variables: Mapping[str, Any], inputs: Mapping[str, Any] | None = None
) -> Any:
    """The value of a Jinja2 expression with ``variables``, under the bounds (the result is bounded
    too).

    ``inputs`` (default: all of ``variables``) are the ones weighed for the size limit, as in
    ``limited``.
    """
    with limited(variables if inputs is None else inputs):
        result = compile_expression(source)(**variables)
        _limit_text(result, "the result")
        return result


@lru_cache(maxsize=1024)
def compile_expression(source: str) -> Callable[..., Any]:
    """Compile a Jinja2 expression once (``value | length < 200``); call the result with variables.

    Raises ``jinja2.TemplateSyntaxError`` on a bad expression.
    """
    return environment().compile_expression(source, undefined_to_none=False)


def syntax_problem(source: str) -> str | None:
    """Why a Jinja2 expression does not parse (the parser's message), or ``None`` when it does."""
    from jinja2 import TemplateSyntaxError  # deferred: jinja2 costs start-up time

    try:
        compile_expression(source)
    except TemplateSyntaxError as exc:
        return str(exc.message)
    except (
        RecursionError,
        SyntaxError,
        MemoryError,
    ):  # Jinja's parser and Python's compiler have depth limits
        return "it nests too deeply to compile; split it up"
    return None


# -- the budget --------------------------------------------------------------------------------


def _tick() -> None:
    """Count one loop iteration, call or operation against the current evaluation's budget."""
    budget = _BUDGET.get()
    if budget is None:
        return
    budget.steps -= 1
    if budget.steps < 0:
        raise TemplateLimit(
            f"more than {MAX_STEPS:,} loop iterations, calls and operations in one template "
            "or expression; simplify it"
        )
    if time.monotonic() > budget.deadline:
        raise TemplateLimit(f"ran longer than {TIME_LIMIT:g} s; simplify it")


def _allowance() -> int:
    """The most characters or items one value may hold: ``MAX_SIZE``, or more when the inputs are
    large."""
    budget = _BUDGET.get()
    if budget is None:
        return MAX_SIZE
    if budget.allowance is None:
        budget.allowance = MAX_SIZE + _INPUT_FACTOR * _weight(budget.inputs, None)
    return budget.allowance


def _limit(size: int, what: str) -> None:
    """Refuse ``what`` when it would hold ``size`` characters or items, past the allowance."""
    if size <= MAX_SIZE or size <= (limit := _allowance()):
        return
    shown = (
        f"{MAX_SIZE:,}"
        if limit < 2 * MAX_SIZE
        else f"{limit:,} (4× the variables given, plus {MAX_SIZE:,})"
    )
    raise TemplateLimit(
        f"{what} would hold about {size:,} characters or items, past the limit of {shown}"
    )


def _limit_text(value: Any, what: str) -> None:
    """Refuse a value whose text would be too long (a list of a million references to one long
    string)."""
    if isinstance(value, (str, bytes)):
        _limit(len(value), what)
    elif isinstance(value, _SIZED):
        weight = _weight(value, MAX_SIZE)
        _limit(weight if weight <= MAX_SIZE else _weight(value, _allowance()), what)


def _weight(value: Any, stop: int | None) -> int:
    """About how many characters ``value`` takes as text (each repeated reference counted); stops
    past ``stop``."""
    total, stack = 0, [value]
    while stack and (stop is None or total <= stop):
        item = stack.pop()
        if isinstance(item, (str, bytes)):
            total += len(item) + 2
        elif isinstance(item, int):
            total += item.bit_length() * 3 // 10 + 1
        elif isinstance(item, dict):
            total += 2 + 2 * len(item)
            if stop is None or total <= stop:
                stack.extend(itertools.chain(item.keys(), item.values()))
        elif isinstance(item, (list, tuple, set, frozenset)):
            total += 2 + len(item)
            if stop is None or total <= stop:
                stack.extend(item)
        else:
            total += 8
    return total


def _size(value: Any) -> int:
    """Characters or items of a string or collection (not counting inside), else 0."""
    return len(value) if isinstance(value, _SIZED) else 0


def _count(value: Any) -> int:
    """An argument that counts something (a width, a repeat): an int, else 0."""
    return value if isinstance(value, int) else 0


def _check_digits(digits: float, what: str) -> None:
    """Refuse an integer result of about ``digits`` decimal digits past ``MAX_INT_DIGITS``."""
    if digits > MAX_INT_DIGITS:
        raise TemplateLimit(
            f"{what} would have about {int(digits):,} digits; templates compute integers of at "
            f"most {MAX_INT_DIGITS:,} digits"
        )


# -- operators ---------------------------------------------------------------------------------


def _check_multiply(left: Any, right: Any) -> None:
    """``*``: the digits of an integer product, the length of a repeated string or list."""
    if isinstance(left, int) and isinstance(right, int):
        _check_digits((left.bit_length() + right.bit_length()) * 0.30103, "this product")
        return
    sized, count = (left, right) if isinstance(left, _SIZED) else (right, left)
    if isinstance(sized, _SIZED) and isinstance(count, int) and count > 1:
        _limit(_size(sized) * count, f"repeating a value {count:,} times")


def _check_power(left: Any, right: Any) -> None:
    """``**``: the digits of an integer power (``10 ** 10 ** 9`` never starts)."""
    if isinstance(left, int) and isinstance(right, int) and right > 0 and abs(left) > 1:
        _check_digits(right * math.log10(abs(left)), "this power")


def _check_add(left: Any, right: Any) -> None:
    """``+``: two strings or lists joined."""
    _limit(_size(left) + _size(right), "this sum")


_PERCENT = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?")
_NUMBERS = re.compile(r"\d+")


def _check_percent(left: Any, right: Any) -> None:
    """``%`` on a string: its conversions, their widths and the values put in (the ``format`` filter
    too)."""
    if isinstance(left, str):
        _check_formatted(left, [".".join(found) for found in _PERCENT.findall(left)], right)


def _check_formatted(template: str, specs: list[str], values: Any) -> None:
    """A formatted string: the template plus each field (``specs``) at its widest width or value."""
    if isinstance(values, dict):
        values = list(values.values())
    values = list(values) if isinstance(values, (tuple, list)) else [values]
    numbers = [int(n) for spec in specs for n in _NUMBERS.findall(spec)]
    if any("*" in spec or "{" in spec for spec in specs):  # widths given as arguments
        numbers += [v for v in values if isinstance(v, int)]
    for value in values:
        _limit_text(value, "a formatted value")
    widest = max([*numbers, *(_weight(v, _allowance()) for v in values), 0])
    _limit(len(template) + len(specs) * widest, "this formatted string")


_BINOP_CHECKS: dict[str, Callable[[Any, Any], None]] = {
    "*": _check_multiply,
    "**": _check_power,
    "+": _check_add,
    "%": _check_percent,
}


# -- methods and filters that multiply ---------------------------------------------------------


def _padded(text: Any, width: Any = 0, *_: Any, **__: Any) -> int:
    """``center``, ``ljust``, ``rjust``, ``zfill``: the width."""
    return max(_size(text), _count(width))


def _tabs(text: Any, tabsize: Any = 8, *_: Any, **__: Any) -> int:
    """``expandtabs``: each tab up to ``tabsize`` spaces."""
    return _size(text) + text.count("\t" if isinstance(text, str) else b"\t") * max(
        _count(tabsize), 0
    )


def _replaced(text: Any, old: Any = "", new: Any = "", count: Any = -1, *_: Any, **__: Any) -> int:
    """``replace``: each occurrence (every gap, for an empty ``old``) grows by ``new``."""
    text, old, new = str(text), str(old), str(new)
    hits = text.count(old) if old else len(text) + 1
    if isinstance(count, int) and count >= 0:
        hits = min(hits, count)
    return len(text) + hits * max(len(new) - len(old), 0)


def _joined(separator: Any, items: Any = (), *_: Any, **__: Any) -> int:
    """``str.join``: the items and a separator between each two."""
    items = items if isinstance(items, (list, tuple)) else []
    return sum(map(_size, items)) + _size(separator) * max(len(items) - 1, 0)


def _translated(text: Any, table: Any = None, *_: Any, **__: Any) -> int:
    """``translate``: each character up to the longest replacement."""
    longest = max((_size(v) for v in table.values()), default=1) if isinstance(table, dict) else 1
    return _size(text) * max(longest, 1)


_METHODS: dict[str, Callable[..., int]] = {
    "center": _padded,
    "ljust": _padded,
    "rjust": _padded,
    "zfill": _padded,
    "expandtabs": _tabs,
    "replace": _replaced,
    "join": _joined,
    "translate": _translated,
}


def _join_filter(value: Any, d: Any = "", *_: Any, **__: Any) -> int:
    """``join``: the items and the separator between them."""
    return _joined(d, value)


def _indented(text: Any, width: Any = 4, *_: Any, **__: Any) -> int:
    """``indent``: each line gets the indentation."""
    text = str(text)
    return len(text) + (text.count("\n") + 1) * (
        len(width) if isinstance(width, str) else _count(width)
    )


def _wrapped(
    text: Any, width: Any = 79, _long: Any = True, wrapstring: Any = None, *_: Any, **__: Any
) -> int:
    """``wordwrap``: a wrap string at least every ``width`` characters."""
    text = str(text)
    breaks = len(text) // max(_count(width), 1) + text.count("\n") + 1
    return len(text) + breaks * (len(wrapstring) if isinstance(wrapstring, str) else 1)


def _urlized(
    text: Any,
    _trim: Any = None,
    _nofollow: Any = False,
    target: Any = None,
    rel: Any = None,
    *_: Any,
    **__: Any,
) -> int:
    """``urlize``: each possible link (five characters or more) gets its markup, target and rel."""
    text = str(text)
    return 2 * len(text) + (len(text) // 5 + 1) * (40 + _size(target) + _size(rel))


def _formatted(value: Any, *args: Any, **kwargs: Any) -> int:
    """``format`` (``%`` on the value); checked in place, so the estimate is 0."""
    _check_percent(str(value), kwargs or args)
    return 0


def _as_json(value: Any, indent: Any = None, *_: Any, **__: Any) -> int:
    """``tojson``: the value's text, each line indented."""
    return _weight(value, _allowance()) * (1 + max(_count(indent), 0))


def _summed(value: Any, _attribute: Any = None, start: Any = 0, *_: Any, **__: Any) -> int:
    """``sum`` of lists: every partial sum is a new list."""
    if not isinstance(start, (list, tuple)) or not isinstance(value, (list, tuple)):
        return 0
    return (_size(start) + sum(map(_size, value))) * max(len(value), 1)


_FILTERS: dict[str, Callable[..., int]] = {
    "center": _padded,
    "indent": _indented,
    "replace": _replaced,
    "join": _join_filter,
    "wordwrap": _wrapped,
    "urlize": _urlized,
    "format": _formatted,
    "tojson": _as_json,
    "sum": _summed,
    "batch": lambda value, linecount=1, *_, **__: _count(linecount),
    "slice": lambda value, slices=1, *_, **__: _count(slices),
}
_MATERIALIZED = ("join", "sum")  # filters whose estimate needs a generator's items
_NOT_TEXT = frozenset(
    {  # filters that never turn their input into text: no need to weigh it
        "abs",
        "attr",
        "batch",
        "count",
        "d",
        "default",
        "dictsort",
        "first",
        "float",
        "groupby",
        "int",
        "items",
        "last",
        "length",
        "list",
        "map",
        "max",
        "min",
        "random",
        "reject",
        "rejectattr",
        "reverse",
        "round",
        "select",
        "selectattr",
        "slice",
        "sort",
        "sum",
        "unique",
    }
)


def _bounded_filter(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    """``func`` (a filter) counted, its input weighed, refused when its estimate is too large."""
    skip = 1 if getattr(func, "jinja_pass_arg", None) is not None else 0
    estimate = _FILTERS.get(name)
    weighed = name not in _NOT_TEXT

    @wraps(func)
    def bounded(*args: Any, **kwargs: Any) -> Any:
        _tick()
        args = _materialized(args, skip) if name in _MATERIALIZED else args
        for value in (*args[skip:], *kwargs.values()) if weighed else ():
            _limit_text(value, f"the input of '{name}'")
        if estimate is not None and len(args) > skip:
            _limit(estimate(*args[skip:], **kwargs), f"'{name}'")
        result = func(*args, **kwargs)
        _limit(_size(result), f"'{name}'")
        return result

    return bounded


def _materialized(args: tuple[Any, ...], index: int) -> tuple[Any, ...]:
    """``args`` with the one at ``index`` read into a list (at most the allowance of items) when it
    is an iterator."""
    if (
        len(args) <= index
        or isinstance(args[index], _SIZED)
        or not isinstance(args[index], Iterator)
    ):
        return args
    items = list(itertools.islice(args[index], _allowance() + 1))
    _limit(len(items), "this sequence")
    return (*args[:index], items, *args[index + 1 :])


def _check_call(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """Check a call before it runs: a string method that multiplies is estimated; returns the
    arguments to use."""
    owner = getattr(func, "__self__", None)
    estimate = (
        _METHODS.get(getattr(func, "__name__", "")) if isinstance(owner, (str, bytes)) else None
    )
    if estimate is None:
        return args
    args = _materialized(args, 0) if func.__name__ == "join" else args
    for value in (*args, *kwargs.values()):
        _limit_text(value, f"an argument of '{func.__name__}'")
    _limit(estimate(owner, *args, **kwargs), f"'{func.__name__}'")
    return args


# -- globals -----------------------------------------------------------------------------------


def _range(*args: int) -> range:
    """``range``, at most ``MAX_RANGE`` numbers."""
    numbers = range(*args)
    try:
        size = len(numbers)
    except OverflowError:
        size = MAX_RANGE + 1
    if size > MAX_RANGE:
        shown = ", ".join(map(str, args))
        raise TemplateLimit(
            f"range({shown}) would give more than {MAX_RANGE:,} numbers, the most a template "
            "may use"
        )
    return numbers


def _lipsum(n: int = 5, html: bool = True, min: int = 20, max: int = 100) -> str:  # noqa: A002 - Jinja's names
    """``lipsum``, at most ``MAX_LIPSUM_WORDS`` words."""
    from jinja2.utils import generate_lorem_ipsum  # deferred: jinja2 costs start-up time

    words = _count(n) * builtins.max(_count(min), _count(max))
    if words > MAX_LIPSUM_WORDS:
        raise TemplateLimit(
            f"lipsum({n}, max={max}) would write up to {words:,} words; templates may use at "
            f"most {MAX_LIPSUM_WORDS:,}"
        )
    return generate_lorem_ipsum(n, html, min, max)


def _finalize(value: Any) -> Any:
    """Each ``{{ value }}`` written out: its text must stay within the allowance."""
    _limit_text(value, "this value written out")
    return value


# -- the environment ---------------------------------------------------------------------------


@lru_cache(maxsize=1)
def environment() -> Any:
    """The shared sandboxed environment."""
    from jinja2 import StrictUndefined  # deferred: jinja2 costs start-up time

    return _sandbox_class()(undefined=StrictUndefined, autoescape=False, finalize=_finalize)


@lru_cache(maxsize=1)
def _sandbox_class() -> type:
    """Jinja2's immutable sandbox with every bound above (built on first use: jinja2 loads late)."""
    from jinja2 import nodes  # deferred: jinja2 costs start-up time
    from jinja2.compiler import CodeGenerator  # deferred, as above
    from jinja2.sandbox import ImmutableSandboxedEnvironment  # deferred, as above

    class BoundedCode(CodeGenerator):
        """Code generation that counts loop iterations and checks ``~`` before it joins."""

        def visit_For(self, node: Any, frame: Any) -> None:
            """Loop over ``environment.bounded_iter(iterable)``."""
            node.iter = nodes.Call(
                nodes.EnvironmentAttribute("bounded_iter"), [node.iter], [], None, None
            )
            super().visit_For(node, frame)

        def visit_Concat(self, node: Any, frame: Any) -> None:
            """``a ~ b``: Jinja's own join, handed to ``environment.bounded_concat`` with the
            parts."""
            # Jinja2's visit_Concat with the call wrapped: the parts exist, the joined string does
            # not yet.
            if frame.eval_ctx.volatile:
                join = "(markup_join if context.eval_ctx.volatile else str_join)"
            else:
                join = "markup_join" if frame.eval_ctx.autoescape else "str_join"
            self.write(f"environment.bounded_concat({join}, (")
            for part in node.nodes:
                self.visit(part, frame)
                self.write(", ")
            self.write("))")

    class BoundedSandbox(ImmutableSandboxedEnvironment):
        """The sandbox with sizes, integer digits, ranges, steps and time bounded."""

        code_generator_class = BoundedCode
        intercepted_binops = frozenset(_BINOP_CHECKS)

        def __init__(self, **options: Any) -> None:
            super().__init__(**options)
            self.globals.update(range=_range, lipsum=_lipsum)
            self.filters = {
                name: _bounded_filter(name, func) for name, func in self.filters.items()
            }

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            """An intercepted operator, checked before it runs."""
            _tick()
            _BINOP_CHECKS[operator](left, right)
            return super().call_binop(context, operator, left, right)

        def call(self, context: Any, func: Any, /, *args: Any, **kwargs: Any) -> Any:
            """Any call from a template: counted, checked, its result's size bounded."""
            _tick()
            args = _check_call(func, args, kwargs)
            result = super().call(context, func, *args, **kwargs)
            _limit(_size(result), "this call's result")
            return result

        def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
            """``str.format`` and ``format_map``, with their widths and fields checked first."""
            sandboxed = super().wrap_str_format(value)
            if sandboxed is None:
                return None
            template = value.__self__

            @wraps(sandboxed)
            def checked(*args: Any, **kwargs: Any) -> str:
                specs = [
                    spec or ""
                    for _, name, spec, _ in string.Formatter().parse(template)
                    if name is not None
                ]
                mapping = (
                    args[0]
                    if value.__name__ == "format_map" and args and isinstance(args[0], dict)
                    else {}
                )
                _check_formatted(template, specs, [*args, *kwargs.values(), *mapping.values()])
                return sandboxed(*args, **kwargs)

            return checked

        def concat(self, parts: Iterable[str]) -> str:
            """A rendered block or template: its length stays within the allowance as it grows."""
            pieces, size = [], 0
            for piece in parts:
                size += len(piece)
                _limit(size, "the rendered text")
                pieces.append(piece)
            return "".join(pieces)

        def bounded_iter(self, iterable: Iterable[Any]) -> Iterator[Any]:
            """A loop's items, each counted against the budget."""
            for item in iterable:
                _tick()
                yield item

        def bounded_concat(self, join: Callable[[Any], str], parts: tuple[Any, ...]) -> str:
            """``a ~ b``: every part's text and their sum checked before ``join`` builds the
            string."""
            for part in parts:
                _limit_text(part, "a part joined with ~")
            _limit(
                sum(len(p) if isinstance(p, str) else _weight(p, _allowance()) for p in parts),
                "this ~ join",
            )
            return join(parts)

    return BoundedSandbox
