"""Loading source documents: JSON, JSONL (streamed to one record), YAML, each optionally gzipped; JSONPath ``select``.

JSONL records are physical lines, numbered from 1: ``record: N`` reads line N and stops, so a
huge file is never held in memory; a blank line there is an error. Without ``record`` a JSONL
file is the list of its non-blank lines.
"""

from __future__ import annotations

import functools
import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from ..errors import SourceError
from ..yaml_core import YamlProblem, load_data
from .builder import describe

_JSON_HINT = "check the file is valid JSON (a trailing comma or a missing quote is the usual cause)"
_KINDS = {".json": "json", ".jsonl": "jsonl", ".ndjson": "jsonl", ".yaml": "yaml", ".yml": "yaml"}


def load_document(path: str | Path, *, select: str | None = None, record: int | None = None) -> Any:
    """Read a source file (``record`` picks one JSONL line first), then apply ``select``."""
    path = Path(path)
    origin = str(path)
    kind, zipped = _kind(path)
    if record is not None and kind != "jsonl":
        raise SourceError(f"'record' needs a .jsonl file, found a .{kind} file; use select: '$[{record - 1}]' "
                          "to pick an item of a list", origin)  # fmt: skip
    if not path.is_file():
        raise SourceError("file not found; expected a .json, .jsonl or .yaml file — check the path "
                          "(relative paths resolve against the suite's folder)", origin)  # fmt: skip
    try:
        with _open(path, zipped) as stream:
            doc = _read(stream, kind, record, origin)
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise SourceError(f"cannot read the file: {exc}; expected {'gzip-compressed ' if zipped else ''}"
                          "UTF-8 text", origin) from None  # fmt: skip
    return doc if select is None else apply_select(doc, select, origin)


def _kind(path: Path) -> tuple[str, bool]:
    """The document kind from the file suffixes (``.json``, ``.jsonl``, ``.yaml``), and whether it is gzipped."""
    suffixes = [s.lower() for s in path.suffixes]
    zipped = bool(suffixes) and suffixes[-1] == ".gz"
    suffix = suffixes[-2] if zipped and len(suffixes) > 1 else (suffixes[-1] if suffixes and not zipped else "")
    if suffix not in _KINDS:
        raise SourceError(f"unsupported file type {suffix or '(none)'!r}; expected .json, .jsonl, .yaml or .yml "
                          "(optionally .gz) — rename the file", str(path))  # fmt: skip
    return _KINDS[suffix], zipped


def _open(path: Path, zipped: bool) -> IO[str]:
    """The file as UTF-8 text, decompressing gzip on the fly."""
    if zipped:
        return gzip.open(path, "rt", encoding="utf-8")
    return path.open(encoding="utf-8")


def _read(stream: IO[str], kind: str, record: int | None, origin: str) -> Any:
    """Parse an open file of the given kind."""
    if kind == "yaml":
        return parse_yaml(stream.read(), origin)
    if kind == "json":
        return parse_json(stream.read(), origin)
    if record is not None:
        return _record(stream, record, origin)
    return [parse_json(line, origin, n) for n, line in _numbered(stream) if line.strip()]


def _numbered(stream: IO[str]) -> Iterator[tuple[int, str]]:
    """Lines with their 1-based numbers, read one at a time."""
    return enumerate(stream, start=1)


def _record(stream: IO[str], record: int, origin: str) -> Any:
    """JSONL line ``record`` (1-based), reading no further than it."""
    if record < 1:
        raise SourceError(f"record {record} is out of range; records are numbered from 1", origin)
    count = 0
    for count, line in _numbered(stream):
        if count == record:
            if not line.strip():
                raise SourceError(f"record {record} is a blank line; expected a JSON record on that line", origin)
            return parse_json(line, origin, record)
    raise SourceError(f"record {record} is past the end: the file has {count} record{'s' if count != 1 else ''} "
                      "(one per line)", origin)  # fmt: skip


def parse_json(text: str, origin: str, line: int = 0) -> Any:
    """Decode JSON text; errors name the line and column (``line`` offsets a JSONL record)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        found = text[exc.pos : exc.pos + 20].split("\n", 1)[0]
        found_text = f"found {found!r}" if found else "found the end of the text"
        where = f"line {line}, column {exc.colno}" if line else f"line {exc.lineno}, column {exc.colno}"
        hint = "for one JSON document per line, name the file .jsonl" if exc.msg == "Extra data" else _JSON_HINT
        raise SourceError(f"invalid JSON at {where}: {exc.msg}, {found_text}; {hint}", origin) from None


def parse_yaml(text: str, origin: str) -> Any:
    """Decode YAML in trajrun's one dialect (YAML 1.2 core, as suites are read); errors name the line and column."""
    try:
        return load_data(text)
    except YamlProblem as exc:
        where = f"line {exc.pos.line}, column {exc.pos.column}"
        if exc.message.startswith("invalid YAML: "):
            raise SourceError(f"invalid YAML at {where}: {exc.message.removeprefix('invalid YAML: ')}; check the "
                              "indentation and quoting there", origin) from None  # fmt: skip
        raise SourceError(f"YAML at {where}: {exc.message}", origin) from None


def apply_select(doc: Any, select: str, origin: str) -> Any:
    """Apply a JSONPath: one match is that node, several the list of them, none an error."""
    matches = [match.value for match in _compile(select, origin).find(doc)]
    if not matches:
        raise SourceError(f"select {select!r} matched nothing in {describe(doc)}; check the path, for example "
                          "with `trajrun show SOURCE --select PATH`", origin)  # fmt: skip
    return matches[0] if len(matches) == 1 else matches


def _compile(select: str, origin: str) -> Any:
    """The compiled JSONPath; a parse error names the expression and the parser's message."""
    try:
        return _parsed(select)
    except Exception as exc:  # jsonpath-ng raises bare Exception subclasses from its lexer and parser
        raise SourceError(f"invalid JSONPath {select!r} in select: {exc}; expected a JSONPath such as "
                          "'$.messages' or '$.runs[0].messages'", origin) from None  # fmt: skip


@functools.lru_cache(maxsize=256)
def _parsed(select: str) -> Any:
    """Parse a JSONPath once with jsonpath-ng's extended parser (filters, arithmetic)."""
    from jsonpath_ng.ext import parse  # deferred: jsonpath-ng costs start-up time

    return parse(select)
