"""Argument rules: which rule applies to a step, field comparators, ``compare`` callables.

``rule_for`` resolves the precedence (step > tool > case > exact); ``args_match`` compares one
step's expected arguments with one call's actual arguments under that rule.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable

from ..errors import CheckError, exception_line
from ..sources.documents import parse_jsonpath
from .expectation import ANY_ARGS, Expectation, FieldRule, Step
from .matchers import Approx
from .values import MISSING, Diff, Matcher, Path, compare_value, is_number, render_value

_SIMPLE_PATH = re.compile(r"^\$(?:\.[A-Za-z_][A-Za-z0-9_-]*|\[\d+\])+$")
_SEGMENT = re.compile(r"\.([A-Za-z_][A-Za-z0-9_-]*)|\[(\d+)\]")


@dataclass(frozen=True, slots=True)
class ArgRule:
    """The argument rule in force for one step: a mode, field comparators, or a callable."""

    mode: str = "exact"
    fields: tuple[tuple[str, FieldRule], ...] = ()
    only_fields: bool = False
    compare: str | None = None

    @property
    def plain_fields(self) -> bool:
        """Whether every field names a top-level key (no JSONPath)."""
        return all(not name.startswith("$") for name, _ in self.fields)


def rule_for(step: Step, expect: Expectation) -> ArgRule:
    """The rule for a step: its own ``args_mode``, else its tool's entry, else the case's."""
    tool = expect.tools.get(step.name)
    if step.args_mode is not None:
        fields = () if tool is None or tool.only_fields else tuple(tool.fields.items())
        return ArgRule(step.args_mode, fields if step.args_mode != "ignore" else ())
    if tool is None:
        return ArgRule(expect.args_mode)
    if tool.compare:
        return ArgRule("compare", compare=tool.compare)
    mode = tool.args_mode or expect.args_mode
    if mode == "ignore":
        return ArgRule("ignore")
    return ArgRule(mode, tuple(tool.fields.items()), tool.only_fields)


def args_match(expected: Any, actual: Any, rule: ArgRule, out: list[Diff] | None = None) -> bool:
    """Whether a call's arguments satisfy a step's under ``rule``; ``out`` collects differences."""
    if expected is ANY_ARGS or rule.mode == "ignore":
        return True
    if rule.compare:
        return call_compare(rule.compare, expected, actual)
    if isinstance(expected, str) or isinstance(actual, str):
        ok = isinstance(expected, str) and isinstance(actual, str) and expected == actual
        if not ok and out is not None:
            out.append(((), expected, actual))
        return ok
    skip: frozenset[Path] = frozenset()
    if rule.fields:
        ok, skip = _apply_fields(expected, actual, rule, out)
        if rule.only_fields or (not ok and out is None):
            return ok
    else:
        ok = True
    return compare_value(expected, actual, rule.mode, (), skip, out) and ok


def _apply_fields(
    expected: Any, actual: Any, rule: ArgRule, out: list[Diff] | None
) -> tuple[bool, frozenset[Path]]:
    """Compare the fields the rule names; returns the verdict and the paths now compared."""
    ok, skip = True, set()
    for name, field in rule.fields:
        found_exp, found_act = locate(name, expected), locate(name, actual)
        paths = list(found_exp) + [p for p in found_act if p not in found_exp]
        if field.kind == "ignore":
            skip.update(paths)
            continue
        for path in paths:
            exp, act = found_exp.get(path, MISSING), found_act.get(path, MISSING)
            if exp is not MISSING and act is not MISSING:
                skip.add(path)
                good = field_equal(exp, act, field)
            elif rule.only_fields:
                good = isinstance(exp, Matcher) and exp.on_missing()
            else:
                continue
            if not good:
                ok = False
                if out is None:
                    return False, frozenset(skip)
                out.append(
                    (
                        path,
                        Within(exp, field.tol)
                        if field.kind == "approx" and is_number(exp)
                        else exp,
                        act,
                    )
                )
    return ok, frozenset(skip)


class Within(Approx):
    """A number under a ``{approx: tol}`` field rule, so a diff shows the tolerance:
    ``3.14 ± 0.01``."""

    __slots__ = ()

    def describe(self) -> str:
        """``3.14 ± 0.01``."""
        return f"{render_value(self.value)} ± {self.tol:g}"


def field_equal(expected: Any, actual: Any, field: FieldRule) -> bool:
    """One field's comparator: exact, icase, approx (absolute tolerance) or ignore."""
    if field.kind == "ignore":
        return True
    if isinstance(expected, Matcher):
        return expected.test(actual)
    if field.kind == "icase" and isinstance(expected, str) and isinstance(actual, str):
        return expected.casefold() == actual.casefold()
    if field.kind == "approx" and is_number(expected):
        return Within(expected, field.tol).test(actual)
    return compare_value(expected, actual, "exact")


def locate(name: str, value: Any) -> dict[Path, Any]:
    """The values a field names in ``value``, keyed by their concrete path (a key or a JSONPath)."""
    if not name.startswith("$"):
        return {(name,): value[name]} if isinstance(value, dict) and name in value else {}
    if _SIMPLE_PATH.match(name):
        return _walk(_simple_path(name), value)
    return {_datum_path(m): m.value for m in _find(name, value)}


@lru_cache(maxsize=256)
def _simple_path(name: str) -> Path:
    """``$.a.b[0]`` as ``('a', 'b', 0)``."""
    return tuple(key if key else int(index) for key, index in _SEGMENT.findall(name))


def _walk(path: Path, value: Any) -> dict[Path, Any]:
    """Follow a concrete path; empty when any step is missing."""
    for part in path:
        if isinstance(part, int) and isinstance(value, list) and part < len(value):
            value = value[part]
        elif isinstance(part, str) and isinstance(value, dict) and part in value:
            value = value[part]
        else:
            return {}
    return {path: value}


def _find(name: str, value: Any) -> list[Any]:
    """A field JSONPath's matches, its regexes bounded as in ``select``; one that cannot be applied
    is a ``CheckError``."""
    try:
        return parse_jsonpath(name).find(value)
    except TimeoutError as exc:
        raise CheckError(f"field {name!r} stopped: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - jsonpath-ng raises whatever the data provokes (mixed types, 1/0)
        raise CheckError(
            f"field {name!r} cannot be applied to the arguments: {type(exc).__name__}: {exc}"
        ) from None


def _datum_path(datum: Any) -> Path:
    """The concrete path of a jsonpath-ng match, from the root."""
    from jsonpath_ng.jsonpath import Fields, Index  # deferred, as above

    parts: list[Any] = []
    while datum is not None:
        if isinstance(datum.path, Fields):
            parts.append(datum.path.fields[0])
        elif isinstance(datum.path, Index):
            parts.append(datum.path.indices[0])
        datum = datum.context
    return tuple(reversed(parts))


def call_compare(spec: str, expected: Any, actual: Any) -> bool:
    """Run a ``compare: module:function`` callable; a failure cannot be judged (``CheckError``)."""
    func = load_compare(spec)
    try:
        return bool(func(expected, actual))
    except Exception as exc:  # noqa: BLE001 - any failure of user code is reported
        last = exception_line(exc)
        raise CheckError(f"compare {spec} raised {last}") from None


@lru_cache(maxsize=64)
def _load(spec: str) -> Callable[[Any, Any], Any]:
    """Import and cache the callable (failures are not cached)."""
    module, _, name = spec.partition(":")
    func = getattr(importlib.import_module(module), name)
    if not callable(func):
        raise TypeError(f"{name} is a {type(func).__name__}, not a function")
    return func


def load_compare(spec: str) -> Callable[[Any, Any], Any]:
    """Import ``module:function`` once (the caller has put the suite's folder on ``sys.path``)."""
    try:
        return _load(spec)
    except Exception as exc:  # noqa: BLE001 - import errors of user code are reported
        last = exception_line(exc)
        raise CheckError(
            f"compare {spec} cannot be loaded: {last}; give it as 'module:function' importable "
            "from the suite's folder"
        ) from None
