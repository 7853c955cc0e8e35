"""Checked parsing of expectation parts (steps, tools, calls, budget, latency) from YAML data
into models.

Every problem is reported through a ``Ctx`` at its key path, and parsing goes on, so a user
sees all the errors of a file at once. The suite loader and the golden-file reader share this.
"""

from __future__ import annotations

import re
from typing import Any, cast

from ..errors import Location, did_you_mean, kind
from ..match.expectation import (
    ANY_ARGS,
    ARGS_MODES,
    FIELD_KINDS,
    UNSET,
    ArgsMode,
    Budget,
    CountBound,
    FieldKind,
    FieldRule,
    Step,
    ToolRule,
)
from ..sources.documents import parse_jsonpath
from ..yaml_core import Path
from .document import Ctx
from .step_names import (
    key_problem,
    long_name_problem,
    name_problem,
    not_a_name,
    slip_problem,
    slipped,
)

STEP_KEYS = ("name", "args", "args_mode", "result", "error")
TOOL_KEYS = ("args_mode", "fields", "compare")
CALLS_KEYS = ("min", "max")
BUDGET_KEYS = ("calls", "turns", "tokens")
MODE_WORDS = {
    "strict": "these calls and no others, in order",
    "in_order": "these calls in this order, others allowed",
    "unordered": "these calls and no others, in any order",
    "superset": "at least these calls, in any order",
    "subset": "nothing but these calls, some may be missing",
}
ARGS_MODE_WORDS = {
    "exact": "every key present and equal, no others",
    "superset": "your keys equal, the call may have more",
    "subset": "no keys but yours, some may be absent",
    "ignore": "arguments not compared",
}


def _hint(words: dict[str, str], *names: str) -> str:
    """``did you mean 'a' (what a means) or 'b' (...)?``"""
    return f"did you mean {' or '.join(f'{n!r} ({words[n]})' for n in names)}?"


def _other_key(value: str, key: str, rule: str) -> str:
    """The hint for a value of the other key (``mode: exact``, ``args_mode: strict``)."""
    return f"'{value}' is {'an' if key == 'args_mode' else 'a'} `{key}` value, not {rule}"


MODE_MEANINGS = {
    # other tools' names, by meaning: agentevals/openevals (strict, unordered, subset, superset),
    # ADK (EXACT, IN_ORDER, ANY_ORDER); lower case, words joined by _ (see errors.did_you_mean)
    **dict.fromkeys(
        ("ordered", "order", "sequence", "sequential", "same_order", "exact_order", "strict_order"),
        _hint(MODE_WORDS, "strict", "in_order"),
    ),
    **dict.fromkeys(
        (
            "any_order",
            "anyorder",
            "any",
            "unsorted",
            "no_order",
            "orderless",
            "set",
            "bag",
            "multiset",
        ),
        _hint(MODE_WORDS, "unordered", "superset"),
    ),
    **dict.fromkeys(
        ("equal", "equals", "same", "identical", "full", "complete", "exact_match", "match"),
        _hint(MODE_WORDS, "strict", "unordered"),
    ),
    **dict.fromkeys(
        ("contains", "contain", "includes", "include", "at_least", "partial"),
        _hint(MODE_WORDS, "superset", "in_order"),
    ),
    **dict.fromkeys(("only", "at_most", "allowed", "within"), _hint(MODE_WORDS, "subset")),
    **dict.fromkeys(("subsequence", "in_sequence"), _hint(MODE_WORDS, "in_order")),
    "exact": f"{_other_key('exact', 'args_mode', 'a match mode')}: "
    f"{_hint(MODE_WORDS, 'strict', 'in_order')}",
    "ignore": f"{_other_key('ignore', 'args_mode', 'a match mode')} (`args_mode: ignore` does "
    f"not compare arguments); the match modes are {', '.join(MODE_WORDS)}",
}
ARGS_MODE_MEANINGS = {
    **dict.fromkeys(
        ("equal", "equals", "eq", "same", "identical", "full", "exact_match", "match"),
        _hint(ARGS_MODE_WORDS, "exact"),
    ),
    **dict.fromkeys(
        ("any", "anything", "any_args", "none", "skip", "off", "disregard", "wildcard"),
        _hint(ARGS_MODE_WORDS, "ignore"),
    ),
    **dict.fromkeys(
        ("partial", "loose", "lenient", "relaxed", "fuzzy", "flexible"),
        _hint(ARGS_MODE_WORDS, "superset", "subset"),
    ),
    **dict.fromkeys(
        ("contains", "contain", "includes", "include", "at_least", "extra", "allow_extra"),
        _hint(ARGS_MODE_WORDS, "superset"),
    ),
    **dict.fromkeys(("only", "at_most", "optional", "within"), _hint(ARGS_MODE_WORDS, "subset")),
    "strict": f"{_other_key('strict', 'mode', 'an argument rule')}: "
    f"{_hint(ARGS_MODE_WORDS, 'exact')}",
    **{
        name: f"{_other_key(name, 'mode', 'an argument rule')}; the argument rules are "
        f"{', '.join(ARGS_MODES)}"
        for name in ("unordered", "in_order")
    },
}


def named_rule(
    value: Any, choices: tuple[str, ...], meanings: dict[str, str], path: Path, ctx: Ctx, what: str
) -> str | None:
    """``value`` when it is one of ``choices`` (a ``mode`` or ``args_mode``); an unknown name is
    reported with the choice it means where ``meanings`` knows the name (other tools' names), else
    the nearest."""
    if isinstance(value, str) and value not in choices:
        ctx.error(path, f"unknown {what} '{value}'{did_you_mean(value, choices, meanings)}")
        return None
    return ctx.choice(value, choices, path, what)


def _args_mode(value: Any, path: Path, ctx: Ctx) -> ArgsMode | None:
    """An ``args_mode`` name, or ``None`` (reported)."""
    mode = named_rule(value, ARGS_MODES, ARGS_MODE_MEANINGS, path, ctx, "argument rule")
    return cast("ArgsMode | None", mode)  # one of ARGS_MODES, ArgsMode's names


_CALLABLE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
_LOOKS_LIKE_MAP = re.compile(r"^\s*[A-Za-z_][\w.-]*\s*:(\s|$)")
"""A quoted ``"tool: {args}"``: YAML made it a string, so the user meant a map."""


def parse_steps(
    value: Any, path: Path, ctx: Ctx, check_names: bool = False
) -> tuple[Step, ...] | None:
    """A list of expected steps, each in one of its forms; a ``parallel: [...]`` item is a group of
    steps whose calls happen in one turn, flattened here with a group number. ``check_names``:
    refuse tool names no provider allows (a suite's, not a golden file's: those are as recorded)."""
    if not ctx.check(
        value, list, path, "steps must be a list of steps (tool names or {tool: args} maps)"
    ):
        return None
    steps: list[Step] = []
    groups = 0
    locs = ctx.item_locs(path, len(value))
    for i, item in enumerate(value):
        if _is_group(item):
            members = _group(item["parallel"], (*path, i, "parallel"), ctx, check_names)
            steps += [step._replace(group=groups) for step in members]
            groups += 1
            continue
        step = parse_step(item, (*path, i), ctx, locs[i], check_names)
        if step is not None:
            steps.append(step)
    return tuple(steps)


def _is_group(item: Any) -> bool:
    """``{parallel: [...]}``: a one-key map whose list value cannot be arguments (those are a map
    or a string)."""
    return isinstance(item, dict) and len(item) == 1 and isinstance(item.get("parallel"), list)


def _group(items: list[Any], path: Path, ctx: Ctx, check_names: bool) -> list[Step]:
    """The steps of one parallel group (at least two, none of them a group)."""
    if len(items) < 2:
        ctx.error(
            path,
            f"a parallel group lists at least two steps whose calls happen in one turn; found "
            f"{len(items)} — write a single step without `parallel`",
        )
    steps = []
    for i, item in enumerate(items):
        if _is_group(item):
            ctx.error(
                (*path, i),
                "parallel groups do not nest: list the steps of the inner group in the outer one",
            )
            continue
        step = parse_step(item, (*path, i), ctx, check_names=check_names)
        if step is not None:
            steps.append(step)
    return steps


def parse_step(
    item: Any, path: Path, ctx: Ctx, loc: Location | None = None, check_names: bool = False
) -> Step | None:
    """A bare name, a one-key ``{tool: args}`` map, or the long form with ``name``; ``loc`` is
    where it was written, when known; ``check_names`` as in ``parse_steps``."""
    loc = ctx.loc(path) if loc is None else loc
    # the usual {tool: args}, unless it is the long form's {name: tool}
    if isinstance(item, dict) and len(item) == 1:
        name, args = next(iter(item.items()))
        if name != "name" or not isinstance(args, str):
            if check_names and not_a_name(name):
                ctx.error(path, key_problem(name, args))
                return None
            return Step(name, _args(args, (*path, name), ctx, name), loc=loc)
    if isinstance(item, str) and _LOOKS_LIKE_MAP.match(item):
        ctx.error(
            path,
            f"this step is the string {item!r} (the quotes make it one tool name); for a tool call "
            f"with arguments remove the quotes: `- {item.strip()}`",
        )
        return None
    if isinstance(item, str) and check_names and not_a_name(item):
        ctx.error(path, name_problem(item))
        return None
    if isinstance(item, str) and item:
        return Step(item, loc=loc)
    if isinstance(item, dict) and isinstance(item.get("name"), str):
        return _long_step(item, path, ctx, loc, check_names)
    if isinstance(item, dict) and item and set(item) <= set(STEP_KEYS):
        ctx.error(path, "a long-form step needs `name: <tool>` (a string)")
    elif slipped(item):
        ctx.error(path, slip_problem(item))
    elif isinstance(item, dict) and len(item) > 1:
        ctx.error(
            path,
            f"a step map has one key, the tool name ({{search: {{q: x}}}}); found keys "
            f"{', '.join(item)} — for the long form write `name: <tool>`",
        )
    else:
        ctx.error(
            path,
            "a step is a tool name, a {tool: args} map or a long form with `name`; "
            f"found {kind(item)}",
        )
    return None


def _long_step(
    item: dict[str, Any], path: Path, ctx: Ctx, loc: Location, check_names: bool
) -> Step | None:
    """The long form: ``name`` with optional ``args``, ``args_mode``, ``result`` and ``error``; its
    name may hold spaces (as some frameworks record names), not brackets."""
    if check_names and not_a_name(item["name"], spaces=False):
        ctx.error((*path, "name"), long_name_problem(item["name"], "args" in item))
        return None
    item = ctx.keys(item, STEP_KEYS, path, f"in step '{item['name']}'")
    mode = item.get("args_mode")
    if mode is not None:
        mode = _args_mode(mode, (*path, "args_mode"), ctx)
    error = item.get("error")
    if error is not None and not ctx.check(
        error, bool, (*path, "error"), "error must be true or false"
    ):
        error = None
    return Step(
        name=item["name"],
        args=_args(item.get("args"), (*path, "args"), ctx, item["name"]),
        args_mode=mode,
        result=ctx.compiled(item["result"], (*path, "result")) if "result" in item else UNSET,
        error=error,
        loc=loc,
    )


def _args(value: Any, path: Path, ctx: Ctx, name: str) -> Any:
    """Expected arguments: null means any, a string compares with undecodable ones, a map is
    compiled."""
    if type(value) is dict:  # the usual: a map of arguments
        return ctx.compiled(value, path)
    if value is None:
        return ANY_ARGS
    if isinstance(value, str):
        return value
    if not ctx.check(
        value, dict, path, f"arguments of '{name}' must be a map, a string or null (any arguments)"
    ):
        return ANY_ARGS
    return ctx.compiled(value, path)


def parse_tools(value: Any, path: Path, ctx: Ctx) -> dict[str, ToolRule]:
    """Per-tool argument rules: a rule name, a field list, or a map of args_mode/fields/compare."""
    if not ctx.check(value, dict, path, "tools must be a map from tool name to rule"):
        return {}
    rules = {tool: _tool_rule(rule, (*path, tool), ctx, tool) for tool, rule in value.items()}
    return {tool: rule for tool, rule in rules.items() if rule is not None}


def _tool_rule(rule: Any, path: Path, ctx: Ctx, tool: str) -> ToolRule | None:
    """One ``tools`` entry."""
    loc = ctx.loc(path)
    if isinstance(rule, str):
        mode = _args_mode(rule, path, ctx)
        return ToolRule(args_mode=mode, loc=loc) if mode else None
    if isinstance(rule, list):
        if not rule:
            ctx.error(
                path,
                f"the field list of '{tool}' is empty; list fields to compare, or write "
                f"`{tool}: ignore`",
            )
            return None
        names = ctx.names(rule, path, f"the field list of '{tool}'")
        _check_jsonpaths([((*path, i), name) for i, name in enumerate(rule)], ctx, key=False)
        return ToolRule(fields={n: FieldRule() for n in names}, only_fields=True, loc=loc)
    if not isinstance(rule, dict) or not rule:
        ctx.error(
            path,
            f"the rule for '{tool}' must be a rule name ({', '.join(ARGS_MODES)}), a list of "
            f"fields, or a map with args_mode, fields or compare; found {kind(rule)}",
        )
        return None
    return _tool_map(
        ctx.keys(rule, TOOL_KEYS, path, f"in tools entry '{tool}'"), path, ctx, tool, loc
    )


def _tool_map(
    rule: dict[str, Any], path: Path, ctx: Ctx, tool: str, loc: Location
) -> ToolRule | None:
    """The map form of a ``tools`` entry."""
    compare = rule.get("compare")
    if compare is not None:
        beside = [k for k in ("args_mode", "fields") if k in rule]
        if beside:
            ctx.error(
                (*path, "compare"),
                f"compare replaces every other rule for '{tool}'; remove "
                f"{' and '.join(beside)} or compare",
                key=True,
            )
        if not (isinstance(compare, str) and _CALLABLE.match(compare)):
            ctx.error(
                (*path, "compare"), f"compare must be 'module:function', found {kind(compare)}"
            )
    mode = rule.get("args_mode")
    if mode is not None:
        mode = _args_mode(mode, (*path, "args_mode"), ctx)
    fields = _fields(rule["fields"], (*path, "fields"), ctx) if "fields" in rule else {}
    return ToolRule(args_mode=mode, fields=fields, compare=compare, loc=loc)


def _fields(value: Any, path: Path, ctx: Ctx) -> dict[str, FieldRule]:
    """A ``fields`` map: field (or JSONPath) to comparator."""
    if not ctx.check(value, dict, path, "fields must be a map from field to comparator"):
        return {}
    if not value:
        ctx.error(path, "fields is empty; name at least one field, or remove `fields`")
    _check_jsonpaths([((*path, name), name) for name in value], ctx, key=True)
    out = {}
    for name, spec in value.items():
        rule = _field_rule(spec, (*path, name), ctx)
        if rule is not None:
            out[name] = rule
    return out


def _field_rule(spec: Any, path: Path, ctx: Ctx) -> FieldRule | None:
    """``exact``, ``ignore``, ``icase`` or ``{approx: tolerance}``."""
    plain = tuple(k for k in FIELD_KINDS if k != "approx")
    if isinstance(spec, dict) and len(spec) == 1 and "approx" in spec:
        tol = spec["approx"]
        if ctx.check(
            tol, (int, float), (*path, "approx"), "approx takes an absolute tolerance (a number)"
        ):
            if tol >= 0:
                return FieldRule("approx", float(tol))
            ctx.error((*path, "approx"), f"the tolerance must not be negative, found {tol}")
        return None
    if spec == "approx":
        ctx.error(path, "approx needs a tolerance: write {approx: 0.01}")
        return None
    if isinstance(spec, dict):
        ctx.error(
            path,
            "a field comparator map is {approx: tolerance}; "
            f"found keys {', '.join(spec) or 'none'}",
        )
        return None
    kind_ = ctx.choice(spec, plain + ("{approx: tol}",), path, "field comparator")
    return FieldRule(cast(FieldKind, kind_)) if kind_ in plain else None


def _check_jsonpaths(items: list[tuple[Path, Any]], ctx: Ctx, key: bool) -> None:
    """Report field names starting with ``$`` that are not valid JSONPaths."""
    for where, name in items:
        if isinstance(name, str) and name.startswith("$"):
            problem = jsonpath_problem(name)
            if problem:
                ctx.error(where, f"invalid JSONPath {name!r}: {problem}", key=key)


def jsonpath_problem(text: str) -> str | None:
    """Why ``text`` is not a JSONPath trajrun can apply (a syntax error, a bad ``=~`` regex), or
    ``None``."""
    try:
        parse_jsonpath(text)
    except Exception as exc:  # noqa: BLE001 - jsonpath-ng raises plain Exception subclasses; a bad regex re.error
        return str(exc) or type(exc).__name__
    return None


def parse_calls(value: Any, path: Path, ctx: Ctx) -> dict[str, CountBound]:
    """Per-tool call counts: ``{search: 2}`` (exactly) or ``{search: {min: 1, max: 2}}``."""
    if not ctx.check(
        value, dict, path, "calls must be a map from tool name to a count or {min, max}"
    ):
        return {}
    out = {}
    for tool, spec in value.items():
        where = (*path, tool)
        if isinstance(spec, dict):
            spec = ctx.keys(spec, CALLS_KEYS, where, f"in calls entry '{tool}'")
            low, high = (
                ctx.count(spec[k], (*where, k), k) if k in spec else None for k in CALLS_KEYS
            )
            if not spec:
                ctx.error(where, f"calls entry '{tool}' needs min, max or both")
            elif low is not None and high is not None and low > high:
                ctx.error(where, f"min ({low}) is above max ({high}) for '{tool}'")
            out[tool] = CountBound(low, high)
        else:
            exact = ctx.count(spec, where, f"the call count of '{tool}' (a number or {{min, max}})")
            out[tool] = CountBound(exact, exact)
    return out


def parse_latency(value: Any, path: Path, ctx: Ctx) -> dict[str, float]:
    """Upper bounds in milliseconds: ``{tool: {max_ms: N}}``, and ``total`` for the whole run."""
    if not ctx.check(
        value, dict, path, "latency must be a map of tool names (or total) to {max_ms: N}"
    ):
        return {}
    out = {}
    for name, bound in value.items():
        where = (*path, name)
        if not ctx.check(bound, dict, where, f"latency of '{name}' must be a map {{max_ms: N}}"):
            continue
        known = ctx.keys(bound, ("max_ms",), where, f"in latency of '{name}'")
        limit = known.get("max_ms")
        if "max_ms" not in known:
            if len(known) == len(bound):  # a misspelt max_ms is reported as such already
                ctx.error(
                    where, f"latency of '{name}' needs max_ms, the most milliseconds it may take"
                )
        elif ctx.check(
            limit, (int, float), (*where, "max_ms"), "max_ms must be a number of milliseconds"
        ):
            if limit > 0:
                out[str(name)] = float(limit)
            else:
                ctx.error((*where, "max_ms"), f"max_ms must be above 0, found {limit}")
    return out


def parse_budget(value: Any, path: Path, ctx: Ctx) -> Budget | None:
    """Inclusive upper bounds on calls, turns and tokens."""
    if not ctx.check(value, dict, path, "budget must be a map with calls, turns or tokens"):
        return None
    known = ctx.keys(value, BUDGET_KEYS, path, "in budget")
    if not value:  # a misspelt key (`call`) is reported as such already
        ctx.error(path, "budget needs at least one of calls, turns, tokens")
    bounds = {key: ctx.count(known[key], (*path, key), f"budget {key}") for key in known}
    return Budget(**bounds)
