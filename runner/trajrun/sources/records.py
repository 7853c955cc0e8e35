"""Bulk sources: the partitions of the files a case reads with ``each``, and the records of one
partition.

``each: record`` reads every JSONL line (or every item of a file whose top level is a list),
``each: file`` every file as one document, ``each: trace`` every trace of an OpenTelemetry file
(its spans grouped by trace id). Work is cut into **partitions**: a whole file, or a byte range of a
large uncompressed JSONL file, split on line boundaries (a partition owns the lines that *start*
in its range). A worker reads its partition itself and nothing else, streaming JSONL line by line.

A record that cannot be read (bad JSON, a corrupt gzip member, a line past the size limit) is a
``Record`` carrying the reason instead of a document, so it becomes an error of that record only.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, NamedTuple

from ..errors import SourceError
from ..limits import max_source_bytes
from ..yaml_core import int_digits_limit
from .builder import NotThisFormat
from .documents import apply_select, document_kind, parse_json, parse_yaml
from .readers.otel_spans import NotOneRun, trace_groups
from .streams import Lost, expand, gunzip_chunks, is_url, lines, open_binary, raw_chunks, size_of

SPLIT_BYTES = 32 << 20
"""An uncompressed JSONL file larger than this is split into byte ranges of about this size."""
_SIMPLE_PATH = re.compile(r"^\$(\.[A-Za-z_][A-Za-z0-9_]*)+$")


@dataclass(frozen=True, slots=True)
class Partition:
    """A share of a bulk source's work: a file, or the byte range ``[start, end)`` of an
    uncompressed JSONL file. ``path`` names it in results, as the client listed it; ``location`` is
    what a worker opens, wherever its working folder is: the absolute path, or the URL as written
    (``""``: ``path``)."""

    path: str
    start: int = 0
    end: int | None = None
    location: str = ""

    @property
    def opened(self) -> str:
        """What a worker opens."""
        return self.location or self.path


class Record(NamedTuple):
    """One record of a partition: ``key`` names it (a line number within the partition, counted from
    1, which the caller turns into the file's line; or a final name such as ``file[3]``); ``doc`` is
    the document, or ``None`` when ``error`` says why it could not be read."""

    key: int | str
    doc: Any
    error: str | None = None


def files_of(location: str) -> list[str]:
    """The files a bulk source names; none is a ``SourceError`` saying what was looked for."""
    found = expand(location)
    if not found:
        where = "" if is_url(location) else " (relative paths resolve against the suite's folder)"
        raise SourceError(
            f"no file matches {location!r}; check the path or pattern{where}", location
        )
    return found


def partitions(
    files: list[str], each: str, workers: int = 1, split: int | None = None
) -> list[Partition]:
    """The partitions of ``files``, in order; with ``each: record``, large uncompressed JSONL files
    are split so that ``workers`` processes share them (``split`` bytes at most per range; default
    about ``SPLIT_BYTES``)."""
    out: list[Partition] = []
    for path in files:
        size = size_of(path) if each == "record" and _splittable(path) else 0
        step = split or max(1 << 20, min(SPLIT_BYTES, size // max(1, 4 * workers) + 1))
        location = path if is_url(path) else os.path.abspath(path)
        if size <= step:
            out.append(Partition(path, location=location))
            continue
        out.extend(
            Partition(path, start, min(start + step, size), location)
            for start in range(0, size, step)
        )
    return out


def _splittable(path: str) -> bool:
    """Whether a file can be read from a byte offset: uncompressed JSONL."""
    try:
        return document_kind(PurePosixPath(path)) == ("jsonl", False)
    except SourceError:
        return False


class PartitionReader:
    """The records of one partition, in order, as an iterable; ``lines`` counts the JSONL lines read
    so far (blank ones too), which line numbers in the file's next partition start after."""

    def __init__(self, part: Partition, each: str) -> None:
        self.part, self.each, self.lines = part, each, 0

    def __iter__(self) -> Iterator[Record]:
        """Every record; what cannot be read is a ``Record`` with an error."""
        path, opened = self.part.path, self.part.opened
        try:
            kind, zipped = document_kind(PurePosixPath(path))
            if self.each == "record" and kind == "jsonl":
                yield from self._jsonl(zipped)
            elif self.each == "record":
                yield from _list_records(path, kind, zipped, opened)
            elif self.each == "trace":
                yield from _trace_records(path, kind, zipped, opened)
            else:
                yield Record(path, _whole(path, kind, zipped, opened))
        except SourceError as exc:
            yield Record(path, None, exc.message)
        except OSError as exc:
            yield Record(path, None, f"cannot read the file: {exc.strerror or exc}")

    def _jsonl(self, zipped: bool) -> Iterator[Record]:
        """The JSONL lines the partition owns, numbered from 1 within it; blank lines are no records
        but count."""
        part, limit = self.part, max_source_bytes()
        with open_binary(part.opened) as stream:
            if zipped:
                stream_lines = lines(gunzip_chunks(stream), limit)
            else:
                first = _first_line_start(stream, part.start) if part.start else 0
                stream_lines = lines(raw_chunks(stream, first), limit, first)
            end = part.end
            for number, (offset, data) in enumerate(stream_lines, 1):
                if end is not None and offset >= end:
                    return
                self.lines = number
                if isinstance(data, Lost):
                    yield Record(number, None, data.reason)
                elif data and not data.isspace():
                    yield decode_line(number, data)


def _first_line_start(stream: Any, start: int) -> int:
    """The offset of the first line starting at or after ``start`` (the line holding byte
    ``start - 1`` belongs to the partition before)."""
    stream.seek(start - 1)
    offset = start - 1
    while chunk := stream.read(1 << 16):
        found = chunk.find(b"\n")
        if found >= 0:
            return offset + found + 1
        offset += len(chunk)
    return offset


def decode_line(number: int, data: bytes) -> Record:
    """One JSONL line as a record: its document, or why it is not JSON."""
    try:
        return Record(number, json.loads(data))
    except UnicodeDecodeError as exc:
        return Record(number, None, f"the line is not UTF-8 text: {exc.reason} at byte {exc.start}")
    except (RecursionError, ValueError) as exc:
        return Record(number, None, _not_json(exc, data.decode("utf-8", "replace"), line=True))


def _not_json(exc: BaseException, text: str, line: bool = False) -> str:
    """Why ``text`` (a JSONL line when ``line``) is not JSON, quoting nothing of it: the file may be
    anyone's."""
    if isinstance(exc, json.JSONDecodeError):
        where = f"column {exc.colno}" if line else f"line {exc.lineno}, column {exc.colno}"
        extra = exc.msg == "Extra data" and not line
        hint = "; for one JSON document per line, name the file .jsonl" if extra else ""
        return f"invalid JSON at {where}: {exc.msg}{hint}"
    # documents words it, with where it gets deep and nothing quoted
    if isinstance(exc, RecursionError):
        try:
            parse_json(text, "", 1 if line else 0)
        except SourceError as problem:
            return str(problem).replace("at line 1, ", "at ") if line else str(problem)
    limit = int_digits_limit()
    found = re.search(rf"-?\d{{{limit + 1},}}", text) if limit else None
    if found is None:
        return "invalid JSON"
    row, column = (
        text.count("\n", 0, found.start()) + 1,
        found.start() - text.rfind("\n", 0, found.start()),
    )
    where = f"column {column}" if line else f"line {row}, column {column}"
    digits = len(found[0].lstrip("-"))
    return (
        f"invalid JSON at {where}: an integer of {digits:,} digits; trajrun reads integers of at "
        f"most {limit:,} digits (Python's limit) — quote it to keep it as a string"
    )


def _whole(path: str, kind: str, zipped: bool, opened: str) -> Any:
    """A whole file as one document (JSONL: the list of its lines), held up to
    ``TRAJRUN_MAX_SOURCE_BYTES``; ``path`` names it in messages, ``opened`` is what is read."""
    if kind == "sqlite":
        raise SourceError(
            "a LangGraph checkpoint database is not read in bulk; read it in a case without each "
            "(thread: picks the thread)",
            path,
        )
    limit = max_source_bytes()
    with open_binary(opened) as stream:
        chunks = gunzip_chunks(stream) if zipped else raw_chunks(stream)
        if kind == "jsonl":
            return [
                _line_document(data, n, path)
                for n, (_, data) in enumerate(lines(chunks, limit), 1)
                if isinstance(data, Lost) or (data and not data.isspace())
            ]
        data = bytearray()
        for chunk in chunks:
            if isinstance(chunk, Lost):
                raise SourceError(chunk.reason, path)
            data += chunk
            if len(data) > limit:
                raise SourceError(
                    f"the file decompresses to more than {limit:,} bytes, the limit on one source "
                    "document; set TRAJRUN_MAX_SOURCE_BYTES to read it",
                    path,
                )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SourceError(
            f"the file is not UTF-8 text: {exc.reason} at byte {exc.start}", path
        ) from None
    if kind == "yaml":
        return parse_yaml(text, path)
    try:
        return json.loads(text)
    except (RecursionError, ValueError) as exc:
        raise SourceError(_not_json(exc, text), path) from None


def _line_document(data: bytes | Lost, number: int, path: str) -> Any:
    """One line of a JSONL file read whole; a line that cannot be read stops the file."""
    if isinstance(data, Lost):
        raise SourceError(f"line {number}: {data.reason}", path)
    record = decode_line(number, data)
    if record.error:
        raise SourceError(f"line {number}: {record.error}", path)
    return record.doc


def _list_records(path: str, kind: str, zipped: bool, opened: str) -> Iterator[Record]:
    """The items of a file whose top level is a list, named ``file[i]``."""
    doc = _whole(path, kind, zipped, opened)
    if not isinstance(doc, list):
        raise SourceError(
            f"each: record reads JSONL lines or the items of a top-level list, found {_kind(doc)}; "
            "use each: file to read the file as one run",
            path,
        )
    for index, item in enumerate(doc):
        yield Record(f"{path}[{index}]", item)


def _kind(doc: Any) -> str:
    """What a document's top level is, in a word: what it holds is not quoted."""
    if doc is None:
        return "null"
    kinds = (
        (bool, "a boolean"),
        (dict, "a mapping"),
        (str, "a string"),
        ((int, float), "a number"),
    )
    return next((word for cls, word in kinds if isinstance(doc, cls)), "a list")


def _trace_records(path: str, kind: str, zipped: bool, opened: str) -> Iterator[Record]:
    """Each trace of an OpenTelemetry file (its spans grouped by trace id), named
    ``file:trace id``."""
    try:
        groups = trace_groups(_whole(path, kind, zipped, opened))
    except (NotThisFormat, NotOneRun) as exc:
        raise SourceError(
            f"each: trace reads the traces of an OpenTelemetry file, but this one is not: "
            f"{getattr(exc, 'reason', exc)}; use each: record or each: file",
            path,
        ) from None
    for trace_id, spans in groups:
        yield Record(f"{path}:{trace_id}", spans)


def compile_path(text: str | None) -> Callable[[Any], Any] | None:
    """A JSONPath as a function of a document (``select`` and ``id``); ``$.a.b`` is plain dict
    lookups, which a bulk run applies a million times, and anything else (or a miss) goes through
    ``apply_select``."""
    if text is None:
        return None
    keys = text[2:].split(".") if _SIMPLE_PATH.match(text) else None

    def find(doc: Any, origin: str = "") -> Any:
        """The node(s) the path names in ``doc``; a ``SourceError`` when none."""
        if keys is not None:
            node = doc
            for key in keys:
                if not isinstance(node, dict) or key not in node:
                    break
                node = node[key]
            else:
                return node
        return apply_select(doc, text, origin)

    return find
