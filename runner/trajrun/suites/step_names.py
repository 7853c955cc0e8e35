"""Steps a user wrote as something else: a call as text (``- f(a=1)``), arguments at the indent of
their tool name. Each message shows the step the user probably meant, in one line of YAML."""

from __future__ import annotations

import json
import re
from typing import Any

from ..yaml_core import is_core_plain_str

_NOT_IN_NAMES = re.compile(r"[\s()\[\]{}]")
"""What no provider allows in a tool name, and what a call written as text holds."""
_BRACKETS = re.compile(r"[()\[\]{}]")
_CALL_TEXT = re.compile(r"^\s*(?P<name>[^\s()\[\]{}]+)(?P<rest>.*?)\s*\Z", re.DOTALL)
_KEYWORD = re.compile(r"(^|[,\s])\s*([A-Za-z_]\w*)\s*(?:=(?!=)|:)\s*")
"""An argument's name and its ``=`` (or ``:``): ``a=1``, ``, b = 2``, `` c: 3``."""
_FLOW_PLAIN = re.compile(r"^\w[\w.-]*\Z")
_SHOWN_ARGS = 120
"""The longest arguments a message writes out in a fixed form; longer ones show their keys only."""
_NO_PROVIDER = "(no provider allows them)"


def not_a_name(name: Any, spaces: bool = True) -> bool:
    """Whether a step's tool name holds a bracket, brace or parenthesis, or (``spaces``) a space;
    a template left unrendered is reported as such already."""
    found = (_NOT_IN_NAMES if spaces else _BRACKETS).search(name) if isinstance(name, str) else None
    return found is not None and "{{" not in name and "{%" not in name


def name_problem(text: str, meant: tuple[str, str | None] | None = None) -> str:
    """Why the step ``text`` is not a tool name, with the step it probably meant: ``meant`` (a tool
    and its arguments), else what ``text`` reads as (``f(a=1)`` is ``- f: {a: 1}``). A name with
    spaces alone may be one a framework records: the long form takes it."""
    tool, args = meant or _meant(text)
    fixed = f"- {tool}" if args is None else f"- {tool}: {args}"
    message = (
        f"{text!r} is not a tool name: tool names hold no spaces, brackets, braces or "
        f"parentheses {_NO_PROVIDER}; did you mean `{fixed}`?"
    )
    if _BRACKETS.search(text) or _meant(text)[1] is not None:  # a call written as text
        return message
    name = _flow_text(text)
    long = f"name: {name}" if args is None else f"{{name: {name}, args: {args}}}"
    return (
        f"{message} (for a tool a framework records with spaces in its name, write the long "
        f"form `- {long}`)"
    )


def key_problem(name: str, args: Any) -> str:
    """``name_problem`` for a short-form step's key, ``args`` its value. YAML splits ``- f {a: 1}``
    at its first ``: ``, into the key ``f {a`` and the value ``1}``: a key that opens more brackets
    than it closes is read joined to its value again."""
    if isinstance(args, str) and any(name.count(a) > name.count(b) for a, b in ("()", "{}", "[]")):
        return name_problem(f"{name}: {args}")
    tool, written = _meant(name)
    return name_problem(name, (tool, written if args is None else flow(args)))


def long_name_problem(name: str, has_args: bool) -> str:
    """Why a long-form step's ``name`` is not a tool name (spaces are allowed there)."""
    tool, written = _meant(name)
    args = f" with `args: {written}`" if written is not None and not has_args else ""
    return (
        f"{name!r} is not a tool name: tool names hold no brackets, braces or parentheses "
        f"{_NO_PROVIDER}; did you mean `name: {tool}`{args}?"
    )


def slipped(item: Any) -> bool:
    """``{book_flight: null, flight_id: TP433}``: a tool name with nothing under it, then keys with
    values at its indent (``flight_id: TP433`` on the next line, not indented under the name)."""
    if not isinstance(item, dict) or len(item) < 2:
        return False
    first, *rest = item.values()
    return first is None and any(value is not None for value in rest)


def slip_problem(item: dict[Any, Any]) -> str:
    """The message for a ``slipped`` step, with its fixed form."""
    tool, *rest = item
    keys = ", ".join(map(str, item))
    return (
        f"this step is one map of {len(item)} keys ({keys}): it looks like an indentation "
        f"slip, the arguments of '{tool}' written at its indent; indent them under the tool "
        f"name, or write `- {flow(tool)}: {flow({k: item[k] for k in rest})}`"
    )


def _meant(text: str) -> tuple[str, str | None]:
    """The tool name and arguments (a flow map, or None) of a call written as text: ``f(a=1)``,
    ``f {a: 1}``, ``f a=1``; other text is a name, its spaces and brackets made underscores."""
    match = _CALL_TEXT.match(text)
    rest = match["rest"].strip() if match else ""
    if match and rest[:1] == "(" and rest[-1:] == ")":
        inner = rest[1:-1].strip()
        if not inner:
            return match["name"], "{}"
        if _KEYWORD.match(inner):
            return match["name"], f"{{{_KEYWORD.sub(_colon, inner).strip()}}}"
        return match["name"], "{<argument>: <value>}"
    if match and rest[:1] == "{" and rest[-1:] == "}":
        return match["name"], rest
    if match and _KEYWORD.match(rest):
        return match["name"], f"{{{_KEYWORD.sub(_colon, rest).strip()}}}"
    return re.sub(r"[\s()\[\]{}]+", "_", text.strip()).strip("_") or "<tool>", None


def _colon(match: re.Match[str]) -> str:
    """``a=`` as ``a: `` (after a comma or a space, ``, a: ``)."""
    return f", {match[2]}: " if match[1] else f"{match[2]}: "


def flow(value: Any) -> str:
    """``value`` as one line of YAML (``{flight_id: TP433}``) for a fixed form in a message; a long
    map shows its keys only."""
    text = _flow_text(value)
    if len(text) > _SHOWN_ARGS and isinstance(value, dict):
        return "{" + ", ".join(f"{_flow_text(key)}: …" for key in value) + "}"
    return text


def _flow_text(value: Any) -> str:
    """``value`` as YAML flow: plain names plain, every other scalar as JSON (which YAML reads)."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_flow_text(k)}: {_flow_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(map(_flow_text, value)) + "]"
    if isinstance(value, str) and _FLOW_PLAIN.match(value) and is_core_plain_str(value):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)
