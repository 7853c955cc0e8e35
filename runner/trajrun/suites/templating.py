"""Templating for suites: variables, ``defaults`` merging, ``parametrize`` expansion and rendering
strings with Jinja2."""

from __future__ import annotations

import difflib
import itertools
import json
import math
import os
import re
from functools import lru_cache
from typing import Any, Callable, Mapping, Union

from ..errors import SpecError, kind
from ..match.expressions import (
    TemplateLimit,
    compile_expression,
    environment,
    evaluate_expression,
    limited,
)
from ..match.matchers import quote_text
from ..yaml_core import YamlProblem, load_text, resolve_plain

Path = tuple[Union[str, int], ...]


MERGED_KEYS = ("tools", "calls", "budget", "latency")
MAX_CASES = 100_000
"""The most cases one ``parametrize`` may make (counted before any is built)."""
_TEMPLATE_MARKERS = ("{{", "{%", "{#")
_NATIVE = re.compile(r"^\{\{(?P<expr>(?:(?!\{\{|\}\}).)*)\}\}\Z", re.DOTALL)
_UNDEFINED = re.compile(r"^'([^']+)' is undefined$")
_NO_ENV = re.compile(r"_Environ object' has no (?:attribute|element) '([^']+)'$")


class _Environ(dict[str, str]):
    """The process environment as the template variable ``env`` (``env.HOME``)."""


def parse_var(text: str) -> tuple[str, Any]:
    """Parse ``--var k=v``: ``v`` is read as a YAML 1.2 core scalar (``n=3`` is a number, ``x=on``
    a string).

    An empty value is the empty string. Raises ``ValueError`` with a usage hint on a malformed item.
    """
    name, sep, raw = text.partition("=")
    name = name.strip()
    if not sep or not name.isidentifier():
        raise ValueError(
            f"--var expects NAME=VALUE with NAME a variable name, found {text!r} "
            "(e.g. --var city=Paris)"
        )
    if raw[:1] in ("'", '"'):
        try:
            loaded = load_text(raw).data
        except YamlProblem:
            loaded = None
        if isinstance(loaded, str):
            return name, loaded
    return name, resolve_plain(raw) if raw.strip() else raw


def variables(
    suite_vars: Mapping[str, Any], cli_vars: Mapping[str, Any], params: Mapping[str, Any]
) -> dict[str, Any]:
    """The variables one case renders with: ``vars`` < ``--var`` < ``parametrize``, plus ``env``."""
    out: dict[str, Any] = {"env": _Environ(os.environ)}
    for layer in (suite_vars, cli_vars, params):
        out.update(layer)
    return out


def merge_defaults(
    defaults: Mapping[str, Any], case: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[Path, Path]]:
    """A case with its suite's ``defaults`` merged in, and where each merged value was written.

    ``tools``, ``calls`` and ``budget`` merge key by key (one level deep); ``tags`` add up
    (defaults' first); any other key is replaced by the case's own; ``steps`` and ``golden`` fill
    one slot. The second result maps a path in the merged case to ``("defaults", ...)`` or
    ``("case", ...)``, the path where its value was written.
    """
    merged: dict[str, Any] = {}
    origins: dict[Path, Path] = {}
    own_slot = "steps" in case or "golden" in case
    for key, value in defaults.items():
        if own_slot and key in ("steps", "golden"):
            continue
        merged[key] = value
        origins[(key,)] = ("defaults", key)
    for key, value in case.items():
        base = merged.get(key)
        if key in MERGED_KEYS and isinstance(base, dict) and isinstance(value, dict):
            origins.update(((key, k), ("defaults", key, k)) for k in base if k not in value)
            value = {**base, **value}
        elif key == "tags" and isinstance(base, list) and isinstance(value, list):
            origins.update(((key, j), ("defaults", key, j)) for j in range(len(base)))
            origins.update(((key, len(base) + j), ("case", key, j)) for j in range(len(value)))
            value = base + value
        merged[key] = value
        origins[(key,)] = ("case", key)
    return merged, origins


def expand_parametrize(spec: Any) -> list[list[tuple[str, Any]]]:
    """The variable sets of ``parametrize``: a map of lists (cartesian product) or a list of maps.

    Each set keeps the keys in the order written. Raises ``SpecError`` (path relative to ``spec``)
    on a malformed spec.
    """
    if isinstance(spec, dict):
        if not spec:
            raise SpecError(
                "parametrize is empty; give each variable a list of values ({city: [Paris, Tokyo]})"
            )
        for key, values in spec.items():
            if not isinstance(values, list) or not values:
                raise SpecError(
                    f"parametrize '{key}' must be a non-empty list of values, found {kind(values)}",
                    (key,),
                )
        _check_count(
            math.prod(map(len, spec.values())), " × ".join(f"{len(v):,}" for v in spec.values())
        )
        keys = list(spec)
        return [list(zip(keys, combo, strict=True)) for combo in itertools.product(*spec.values())]
    if isinstance(spec, list) and spec:
        _check_count(len(spec), f"{len(spec):,} entries")
        for index, item in enumerate(spec):
            if not isinstance(item, dict) or not item:
                raise SpecError(
                    "each parametrize entry must be a non-empty map of variables, "
                    f"found {kind(item)}",
                    (index,),
                )
        return [list(item.items()) for item in spec]
    raise SpecError(
        f"parametrize must be a map of lists or a non-empty list of maps, found {kind(spec)}"
    )


def _check_count(count: int, how: str) -> None:
    """Refuse a ``parametrize`` that would make more than ``MAX_CASES`` cases."""
    if count > MAX_CASES:
        raise SpecError(
            f"parametrize would make {count:,} cases ({how}), above the limit of {MAX_CASES:,}; "
            "split it into several cases or suite files"
        )


def case_name(name: str, params: list[tuple[str, Any]]) -> str:
    """``name[k1=v1,k2=v2]`` for a parametrized case (values as YAML/JSON writes them)."""
    if not params:
        return name
    shown = ",".join(
        f"{key}={value if isinstance(value, str) else json.dumps(value)}" for key, value in params
    )
    return f"{name}[{shown}]"


def has_templates(text: str) -> bool:
    """Whether any string of a document with this text could be a template (else rendering
    changes nothing)."""
    return any(marker in text for marker in _TEMPLATE_MARKERS)


def render_tree(
    value: Any,
    variables: Mapping[str, Any],
    skip: Callable[[Path], bool],
    errors: list[Any],
    path: Path = (),
) -> Any:
    """Render every string value below ``value`` (never paths ``skip`` accepts), and of keys only a
    short-form step's (``"{{ tool }}": {q: x}``: the key is the tool name).

    Problems are appended to ``errors`` as ``SpecError`` with the string's path; the string is kept.
    """

    if skip(path):
        return value
    if isinstance(value, dict):
        rename = len(value) == 1 and _is_step(path)
        return {
            (_render_name(k, variables, errors, path) if rename else k): render_tree(
                v, variables, skip, errors, (*path, k)
            )
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [render_tree(v, variables, skip, errors, (*path, i)) for i, v in enumerate(value)]
    if isinstance(value, str):
        try:
            return render_string(value, variables)
        except SpecError as exc:
            errors.append(SpecError(exc.message, path))
    return value


def _is_step(path: Path) -> bool:
    """Whether ``path`` in a case is a step: ``steps[i]``, or ``steps[i].parallel[j]``."""
    return (
        len(path) in (2, 4)
        and path[0] == "steps"
        and isinstance(path[1], int)
        and (len(path) == 2 or (path[2] == "parallel" and isinstance(path[3], int)))
    )


def _render_name(key: Any, variables: Mapping[str, Any], errors: list[Any], path: Path) -> Any:
    """A short-form step's key rendered: a tool name, so a template giving no string is an error."""
    if not isinstance(key, str):
        return key
    try:
        name = render_string(key, variables)
    except SpecError as exc:
        errors.append(SpecError(exc.message, path))
        return key
    if not isinstance(name, str):
        problem = f"the tool name {quote_text(key)} gave {kind(name)}; a tool name is a string"
        errors.append(SpecError(problem, path))
        return key
    return name


def render_string(text: str, variables: Mapping[str, Any]) -> Any:
    """Render one string; a string that is exactly ``{{ expr }}`` keeps the native type of the
    result.

    Raises ``SpecError`` for an undefined variable, a syntax error, a failing expression, or one
    that goes past the sandbox's bounds (sizes, steps, time: ``trajrun.match.expressions``).
    """
    if not has_templates(text):
        return text
    from jinja2 import TemplateSyntaxError, UndefinedError  # deferred: jinja2 costs start-up time

    try:
        native = _native(text, variables)
        if native is not _NOT_NATIVE:
            return native
        with limited(_data(variables)):
            return _text_environment().from_string(text).render(variables)
    except UndefinedError as exc:
        raise _undefined(exc, text, variables) from None
    except TemplateSyntaxError as exc:
        raise _spec_error(f"template syntax error in {quote_text(text)}: {exc.message}") from None
    except TemplateLimit as exc:
        raise _spec_error(f"template {quote_text(text)} stopped: {exc}") from None
    except RecursionError:
        raise _spec_error(
            f"template {quote_text(text)} nests or recurses too deeply (past Python's recursion "
            "limit); simplify it"
        ) from None
    except Exception as exc:  # noqa: BLE001 - any failure of a user's expression is reported, not raised
        raise _spec_error(
            f"template {quote_text(text)} failed: {type(exc).__name__}: {exc}"
        ) from None


_NOT_NATIVE = object()


def _native(text: str, variables: Mapping[str, Any]) -> Any:
    """The value of a lone ``{{ expr }}`` as a plain YAML-like value, or ``_NOT_NATIVE``."""
    from jinja2 import TemplateSyntaxError  # deferred: jinja2 costs start-up time

    match = _NATIVE.match(text)
    if not match:
        return _NOT_NATIVE
    try:
        compile_expression(match["expr"])
    except TemplateSyntaxError:
        return _NOT_NATIVE
    return _plain(evaluate_expression(match["expr"], variables, _data(variables)))


def _data(variables: Mapping[str, Any]) -> dict[str, Any]:
    """The variables that may make a template's values larger than the usual limit: all but
    ``env``."""
    return {name: value for name, value in variables.items() if not isinstance(value, _Environ)}


def _plain(value: Any) -> Any:
    """A template result as YAML-like data; an undefined value raises ``UndefinedError``."""
    if value is None or type(value) in (bool, int, float, str):
        return value
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return str(value)


@lru_cache(maxsize=1)
def _text_environment() -> Any:
    """The shared sandbox, keeping a string's trailing newline."""
    return environment().overlay(keep_trailing_newline=True)


def _undefined(exc: Exception, text: str, variables: Mapping[str, Any]) -> Exception:
    """An undefined-variable error that names the variable and how to define it."""
    message = str(exc)
    env = _NO_ENV.search(message)
    if env:
        return _spec_error(
            f"environment variable {env[1]} is not set (used in {quote_text(text)}); set it or "
            f"give a default: {{{{ env.get('{env[1]}', 'x') }}}}"
        )
    name = _UNDEFINED.match(message)
    if not name:
        return _spec_error(f"undefined value in {quote_text(text)}: {message}")
    known = [k for k in variables if k != "env"]
    hint = difflib.get_close_matches(name[1], known, n=1)
    suggestion = f" — did you mean '{hint[0]}'?" if hint else ""
    return _spec_error(
        f"undefined variable '{name[1]}' in {quote_text(text)}{suggestion} "
        f"(define it in `vars`, pass --var {name[1]}=..., or list it in `parametrize`)"
    )


def _spec_error(message: str) -> Exception:
    """A ``SpecError`` (imported late, like everything here but the environment)."""

    return SpecError(message)
