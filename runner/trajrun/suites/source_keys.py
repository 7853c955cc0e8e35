"""The ``source`` key of a case: a file path, or a map naming a file, inline messages, a command
or a Python callable, with how to read it (format, select, record, thread, capture, cassette, the
bulk keys) and which of its calls failed (error_when)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import kind
from ..sources.checkpoints import SUFFIXES as DATABASE_SUFFIXES
from ..sources.formats import TRACE_RULES
from ..yaml_core import Path as KeyPath
from .bulk_keys import BULK_KEYS, bulk_fields
from .document import Ctx
from .expectation_keys import jsonpath_problem
from .model import CAPTURES, DEFAULT_TIMEOUT, FORMATS, Source

SOURCE_KEYS = (
    "file",
    "format",
    "select",
    "record",
    "messages",
    "command",
    "timeout",
    "python",
    "args",
    "thread",
    "checkpoint",
    "capture",
    "cassette",
    "error_when",
    "traces",
    *BULK_KEYS,
)
SOURCE_KINDS = ("file", "messages", "command", "python")
_ONLY_WITH = {
    "record": ("file",),
    "timeout": ("command", "python"),
    "args": ("python",),
    "thread": ("file",),
    "checkpoint": ("file",),
    "capture": ("command", "python"),
    "cassette": ("command", "python"),
}


def parse_source(value: Any, path: KeyPath, ctx: Ctx, folder: Path) -> Source | None:
    """A source: a file path, or a map with one of file, messages, command, python."""
    loc = ctx.loc(path)
    if isinstance(value, str) and value:
        return Source(file=folder / value, loc=loc)
    if not isinstance(value, dict):
        ctx.error(
            path,
            f"source must be a file path or a map with file, messages, command or python; "
            f"found {kind(value)}",
        )
        return None
    value = ctx.keys(value, SOURCE_KEYS, path, "in source")
    kinds = [k for k in SOURCE_KINDS if k in value]
    if len(kinds) != 1:
        found = f"found {' and '.join(kinds)}" if kinds else "found none"
        ctx.error(path, f"a source needs exactly one of file, messages, command, python; {found}")
        return None
    for key, needs in _ONLY_WITH.items():
        if key in value and not any(kind in value for kind in needs):
            ctx.error(
                (*path, key), f"{key} applies to a {' or '.join(needs)} source only", key=True
            )
    return Source(loc=loc, **_source_fields(value, path, ctx, folder))


def _source_fields(value: dict[str, Any], path: KeyPath, ctx: Ctx, folder: Path) -> dict[str, Any]:
    """The checked fields of a source map."""
    out: dict[str, Any] = {}
    texts = {
        "file": "file must be a path",
        "command": "command must be a shell command line",
        "python": "python must be 'module:function'",
        "select": "select must be a JSONPath",
        "cassette": "cassette must be a file path (cassettes/{case}.yaml)",
    }
    for key, what in texts.items():
        if key in value and ctx.check(value[key], str, (*path, key), what):
            out[key] = value[key]
    if "file" in out:
        out["file"] = folder / out["file"]
    if "python" in out and out["python"].count(":") != 1:
        ctx.error((*path, "python"), f"python must be 'module:function', found {out['python']!r}")
    if "select" in out and (problem := jsonpath_problem(out["select"])):
        ctx.error((*path, "select"), f"invalid JSONPath {out['select']!r}: {problem}")
    if "format" in value:
        out["format"] = ctx.choice(value["format"], FORMATS, (*path, "format"), "format") or "auto"
    if "traces" in value:
        out["traces"] = (
            ctx.choice(value["traces"], TRACE_RULES, (*path, "traces"), "traces") or "auto"
        )
        if "each" in value:
            ctx.error(
                (*path, "traces"),
                "traces says how one run is read from several traces, but each reads "
                "every record alone (each: trace, every trace); remove traces",
                key=True,
            )
    if "record" in value:
        out["record"] = ctx.count(
            value["record"], (*path, "record"), "record (a 1-based line)", least=1
        )
    if "timeout" in value and ctx.check(
        value["timeout"], (int, float), (*path, "timeout"), "timeout must be seconds"
    ):
        out["timeout"] = float(value["timeout"]) if value["timeout"] > 0 else DEFAULT_TIMEOUT
        if value["timeout"] <= 0:
            ctx.error(
                (*path, "timeout"), f"timeout must be above 0 seconds, found {value['timeout']}"
            )
    if "args" in value and ctx.check(
        value["args"], dict, (*path, "args"), "args must be a map of keyword arguments"
    ):
        out["args"] = value["args"]
    if "messages" in value and ctx.check(
        value["messages"],
        (list, dict),
        (*path, "messages"),
        "messages must be a list of messages or a document map",
    ):
        out["messages"] = value["messages"]
    _picking_fields(value, path, ctx, out)
    bulk_fields(value, path, ctx, out)
    if "error_when" in value:
        _error_rule(value["error_when"], (*path, "error_when"), ctx, out)
    return out


def _error_rule(value: Any, path: KeyPath, ctx: Ctx, out: dict[str, Any]) -> None:
    """``error_when``: what a failed call's result matches (a value or inline matcher), compiled."""
    if value is None:
        ctx.error(
            path,
            "error_when is empty; give what a failed call's result matches, such as "
            "`error_when: {$regex: '^Error'}`",
        )
        return
    out["error_when"] = ctx.compiled(value, path)


def _picking_fields(value: dict[str, Any], path: KeyPath, ctx: Ctx, out: dict[str, Any]) -> None:
    """``thread`` and ``checkpoint`` (of a LangGraph database file), ``capture`` (a live source's
    spans)."""
    for key in ("thread", "checkpoint"):
        if key in value and ctx.check(value[key], (str, int), (*path, key), f"{key} must be an id"):
            out[key] = str(value[key])
            file = out.get("file")
            if file is not None and file.suffix.lower() not in DATABASE_SUFFIXES:
                databases = ", ".join(DATABASE_SUFFIXES)
                ctx.error(
                    (*path, key),
                    f"{key} picks a checkpoint in a LangGraph database ({databases}); "
                    f"{file.name} is not one — remove {key}",
                    key=True,
                )
    if "capture" in value:
        out["capture"] = ctx.choice(value["capture"], CAPTURES, (*path, "capture"), "capture")
        if out["capture"] == "otlp" and out.get("format", "auto") not in ("auto", "otel"):
            ctx.error(
                (*path, "format"),
                "capture: otlp reads the OpenTelemetry spans the agent exports; format "
                f"must be auto or otel, found {out['format']}",
            )
        for key in ("format", "select"):
            if out["capture"] == "wire" and key in value:
                ctx.error(
                    (*path, key),
                    "capture: wire reads the run from the model traffic, whose API says its "
                    f"format; remove {key}",
                    key=True,
                )
