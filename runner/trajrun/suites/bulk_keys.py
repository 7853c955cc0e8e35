"""The keys of bulk sources (``each``, ``id``) and what a bulk case may not hold, checked where
they are written.

``source: {file: "logs/2026-11-*.jsonl.gz", each: record, id: $.run_id, select: $.messages}``
makes the case run once per record. ``file`` may then be a glob or an fsspec URL; without
``each`` either is a load error, since a case reads one run.
"""

from __future__ import annotations

from typing import Any

from ..errors import SuiteError
from ..sources.formats import EACH
from ..sources.streams import expand, has_glob, is_url
from ..yaml_core import Path as KeyPath
from .document import Ctx
from .expectation_keys import jsonpath_problem
from .model import Source

BULK_KEYS = ("each", "id")


def bulk_fields(value: dict[str, Any], path: KeyPath, ctx: Ctx, out: dict[str, Any]) -> None:
    """``each`` and ``id`` of a source map into ``out``; a URL ``file`` moves to ``url``; misuse
    is reported."""
    raw = out.get("file")
    written = value.get("file") if isinstance(value.get("file"), str) else None
    if "each" in value:
        out["each"] = ctx.choice(value["each"], EACH, (*path, "each"), "each (what one record is)")
        if "file" not in value:
            ctx.error(
                (*path, "each"),
                "each reads every record of files; it applies to a file source only",
                key=True,
            )
        if "record" in value:
            ctx.error(
                (*path, "record"),
                "record picks one line, but each reads every record; remove record, or "
                "each to check one run",
                key=True,
            )
        if written is not None and is_url(written):
            out["url"], out["file"] = written, None
    elif written is not None and raw is not None and (is_url(written) or has_glob(written)):
        what = "a URL" if is_url(written) else "a glob"
        ctx.error(
            (*path, "file"),
            f"file is {what} ({written!r}), which names many records, but a case without "
            "`each` reads one run; add each: record (every JSONL line), each: file (every "
            "file) or each: trace (every OpenTelemetry trace)",
        )
    if "id" in value and ctx.check(
        value["id"], str, (*path, "id"), "id must be a JSONPath naming each record"
    ):
        if problem := jsonpath_problem(value["id"]):
            ctx.error((*path, "id"), f"invalid JSONPath {value['id']!r}: {problem}")
        elif "each" not in value:
            ctx.error(
                (*path, "id"),
                "id names each record of a bulk source; add each: record (or file, trace), "
                "or remove id",
                key=True,
            )
        else:
            out["id"] = value["id"]


def check_bulk_case(case: dict[str, Any], source: Source | None, ctx: Ctx) -> None:
    """A bulk case checks every record with the rule checks: a judge (one model call per record)
    is refused."""
    if source is None or source.each is None:
        return
    if "judge" in case:
        ctx.error(
            ("judge",),
            "a bulk case (source with each) runs every record through the rule checks; a judge "
            "would ask the model once per record — judge a sample in a case of its own "
            "(source: {file: ..., record: N})",
            key=True,
        )


def bulk_problems(source: Source) -> list[SuiteError]:
    """What ``trajrun validate`` says of a bulk source: a local glob or path matching no file."""
    if source.each is None or source.file is None:
        return []
    if expand(str(source.file)):
        return []
    return [SuiteError(f"source file pattern {source.file} matches no file", source.loc)]
