"""Loading source documents: JSON, JSONL (streamed to one record), YAML, each optionally gzipped;
JSONPath ``select``.

JSONL records are physical lines, numbered from 1: ``record: N`` reads line N and stops, so a
huge file is never held in memory; a blank line there is an error. Without ``record`` a JSONL
file is the list of its non-blank lines.

A file read for a trajectory (``shared``) through a ``select`` is decoded once while it stays
unchanged, whatever the ``select``, within ``DECODED_KEPT_BYTES`` and ``DECODED_KEPT_FILES``. A file
read whole is not kept: the run's trajectory cache already reads it once, and decoded documents kept
alive for nothing make every later garbage collection walk them.

Sources are untrusted input, so reading them is bounded:

- ``TRAJRUN_MAX_SOURCE_BYTES`` (default 1 GiB, 1073741824) caps what one source holds in memory,
  counted after decompression: a whole ``.json``/``.yaml`` document, a ``.jsonl`` file read whole,
  or the one line ``record: N`` picks (the lines before it are streamed, so a longer log still
  works). Files are inflated and decoded a chunk at a time into the one text parsed, so a source
  holds its text once, and a gzip bomb stops at the cap holding no more than the cap.
- JSON nested deeper than Python's decoder can follow, and integers longer than Python's limit
  on int/str conversion (4,300 digits by default), are refused with their line and column, as
  ``yaml_core`` refuses them in YAML.
- Regular expressions (``$regex`` matchers, ``=~`` and ``sub()`` in JSONPath filters) run on
  the ``regex`` package, which can stop a match: ``TRAJRUN_REGEX_TIMEOUT`` (default 1 second) is
  the limit per match. A pattern whose counted repeats (``(a{1000}){1000}``) expand past
  100,000 items is refused when compiled.
- JSONPath filters: ``*`` on a string or list is capped like a source, sorting mixed types and
  dividing by zero are errors naming the ``select``, never a traceback.
"""

from __future__ import annotations

import codecs
import functools
import io
import json
import operator
import os
import re
import threading
import time
import zlib
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any, NamedTuple

from ..errors import SourceError
from ..limits import (
    MAX_SOURCE_BYTES_VAR,
    compile_regex,
    max_source_bytes,
    regex_search,
    regex_timeout,
    timeout_message,
)
from ..yaml_core import YamlProblem, int_digits_limit, load_data
from .builder import describe
from .checkpoints import SUFFIXES, load_database
from .spelling import SUITE, Spelling
from .streams import CHUNK

if TYPE_CHECKING:
    from jsonpath_ng.ext.arithmetic import Operation
    from jsonpath_ng.ext.filter import Expression
    from jsonpath_ng.ext.string import Sub

_JSON_HINT = "check the file is valid JSON (a trailing comma or a missing quote is the usual cause)"
_KINDS = {".json": "json", ".jsonl": "jsonl", ".ndjson": "jsonl", ".yaml": "yaml", ".yml": "yaml"}

JSON_DEPTH_SHOWN = 500
"""How deep nesting must be before a JSON depth error points at it (the decoder itself stops near
1,000)."""


class _TooLarge(Exception):
    """A source (or one JSONL line) past ``TRAJRUN_MAX_SOURCE_BYTES``."""

    def __init__(self, limit: int, line: int = 0) -> None:
        super().__init__(limit, line)
        self.limit = limit
        self.line = line


def load_document(
    path: str | Path,
    *,
    select: str | None = None,
    record: int | None = None,
    spelling: Spelling = SUITE,
    thread: str | None = None,
    checkpoint: str | None = None,
    shared: bool = False,
) -> Any:
    """Read a source file (``record`` picks one JSONL line first; ``thread`` and ``checkpoint`` one
    checkpoint of a LangGraph database), then apply ``select``; errors spell the options as the user
    wrote them (``spelling``).

    ``shared``: the caller never changes the document, so a file read through a ``select`` is
    decoded once and kept (see ``DECODED_KEPT_BYTES``) for the next read of it, whatever its
    ``select``."""
    path = Path(path)
    origin = str(path)
    kind, zipped = document_kind(path)
    if record is not None and kind != "jsonl":
        item = spelling.given("select", f"'$[{record - 1}]'")
        raise SourceError(
            f"{spelling.name('record')} needs a .jsonl file, found a .{kind} file; use {item} to "
            "pick an item of a list",
            origin,
        )
    if kind == "sqlite" or thread is not None or checkpoint is not None:
        doc = load_database(path, (kind, zipped), thread, checkpoint, spelling)
        return doc if select is None else apply_select(doc, select, origin, spelling)
    if path.is_dir():
        raise SourceError(
            "a folder, not a file; expected a .json, .jsonl or .yaml file — point the source at a "
            "file inside it",
            origin,
        )
    if not path.is_file():
        raise SourceError(
            "file not found; expected a .json, .jsonl or .yaml file — check the path "
            f"(relative paths resolve against {spelling.folder})",
            origin,
        )
    try:
        if shared and record is None and select is not None:
            doc = _shared(path, kind, zipped, origin)
        else:
            doc = _decode(path, kind, zipped, record, origin)[0]
    except _TooLarge as exc:
        raise SourceError(_too_large(exc, zipped), origin) from None
    except (OSError, EOFError, UnicodeDecodeError, zlib.error) as exc:
        raise SourceError(
            f"cannot read the file: {exc}; expected {'gzip-compressed ' if zipped else ''}"
            "UTF-8 text",
            origin,
        ) from None
    return doc if select is None else apply_select(doc, select, origin, spelling)


def _decode(
    path: Path, kind: str, zipped: bool, record: int | None, origin: str
) -> tuple[Any, tuple[int, ...], int]:
    """The file's document (or record), the stamp of the file read and the bytes of text decoded."""
    limit = max_source_bytes()
    with _binary(path, zipped) as stream:
        stat = os.fstat(stream.fileno())
        if record is None and not zipped and stat.st_size > limit:
            raise _TooLarge(limit)  # refused unread
        doc = _read(iter(functools.partial(stream.read, CHUNK), b""), kind, record, origin, limit)
        return doc, _stamp(stat), stream.tell()


DECODED_KEPT_BYTES = 64 << 20
"""Decoded files stay cached while their text totals at most this many bytes (the one decoded last
stays whatever its size, until another is decoded), and ``DECODED_KEPT_FILES`` of them at most."""
DECODED_KEPT_FILES = 256
SETTLED_NS = 2_000_000_000
"""A file modified less than this long before it was read is not kept: file systems record
modification times in steps (up to 2 s), so a change made in the same step would leave its stamp as
it was."""


class _Decoded(NamedTuple):
    """A decoded file: what it was when read (``_stamp``), its document, the bytes of its text."""

    stamp: tuple[int, ...]
    doc: Any
    size: int


_DECODED: OrderedDict[str, _Decoded] = OrderedDict()  # by absolute path, least recently used first
_DECODED_LOCK = threading.Lock()


def _stamp(stat: os.stat_result) -> tuple[int, ...]:
    """What tells a file from its earlier self: device, inode, modification time and size."""
    return stat.st_dev, stat.st_ino, stat.st_mtime_ns, stat.st_size


def _shared(path: Path, kind: str, zipped: bool, origin: str) -> Any:
    """The whole file's document, decoded once while the file stays as it was (same modification
    time, size and inode): 200 cases selecting 200 runs out of one file parse it once. A file
    changed within ``SETTLED_NS`` of being read is decoded on each read."""
    key = os.path.abspath(path)
    stamp = _stamp(os.stat(path))
    with _DECODED_LOCK:
        hit = _DECODED.get(key)
        if hit is not None and hit.stamp == stamp and hit.size <= max_source_bytes():
            _DECODED.move_to_end(key)
            return hit.doc
        _DECODED.pop(key, None)
        # room for this one, before it is decoded
        _forget_beyond(DECODED_KEPT_BYTES, DECODED_KEPT_FILES - 1)
    started = time.time_ns()
    doc, stamp, size = _decode(path, kind, zipped, None, origin)
    if stamp[2] > started - SETTLED_NS:
        return doc
    with _DECODED_LOCK:
        _DECODED[key] = _Decoded(stamp, doc, size)
        _forget_beyond(None, DECODED_KEPT_FILES)
    return doc


def _forget_beyond(size: int | None, files: int) -> None:
    """Drop the files used longest ago until at most ``files`` and ``size`` bytes of text (None:
    any) are kept."""
    total = 0 if size is None else sum(entry.size for entry in _DECODED.values())
    while _DECODED and (len(_DECODED) > files or (size is not None and total > size)):
        total -= _DECODED.popitem(last=False)[1].size


def _too_large(exc: _TooLarge, zipped: bool) -> str:
    """The message for a source past the size limit."""
    what = (
        f"line {exc.line} holds"
        if exc.line
        else ("the file decompresses to" if zipped else "the file holds")
    )
    return (
        f"{what} more than {exc.limit:,} bytes, the limit on one source document; set "
        f"{MAX_SOURCE_BYTES_VAR} to a larger number of bytes to read it"
    )


def document_kind(path: PurePath) -> tuple[str, bool]:
    """The document kind from the file suffixes (``.json``, ``.jsonl``, ``.yaml``, ``.sqlite``), and
    whether it is gzipped."""
    suffixes = [s.lower() for s in path.suffixes]
    zipped = bool(suffixes) and suffixes[-1] == ".gz"
    suffix = (
        suffixes[-2]
        if zipped and len(suffixes) > 1
        else (suffixes[-1] if suffixes and not zipped else "")
    )
    if suffix in SUFFIXES:
        return "sqlite", zipped
    if suffix not in _KINDS:
        raise SourceError(
            f"unsupported file type {suffix or '(none)'!r}; expected .json, .jsonl, .yaml or .yml "
            "(optionally .gz) — rename the file",
            str(path),
        )
    return _KINDS[suffix], zipped


def _binary(path: Path, zipped: bool) -> io.BufferedIOBase:
    """The file opened for reading bytes, inflating gzip on the fly."""
    if zipped:
        import gzip  # deferred: start-up time, for the runs that read no .gz file

        return gzip.open(path, "rb")
    return path.open("rb")


def _read(chunks: Iterator[bytes], kind: str, record: int | None, origin: str, limit: int) -> Any:
    """Parse a file of the given kind from its (inflated) chunks."""
    if record is not None:
        return _record(chunks, record, origin, limit)
    text = _text(chunks, limit)
    if kind == "yaml":
        return parse_yaml(text, origin)
    return parse_json(text, origin) if kind == "json" else _jsonl(text, origin)


def _text(chunks: Iterator[bytes], limit: int) -> str:
    """All ``chunks`` as UTF-8 text, up to ``limit`` bytes: each chunk is decoded as it comes, so
    the bytes, the text and a joined copy are never held at once and a gzip bomb holds at most the
    limit when it is refused."""
    decoder, text, size = _utf8(), "", 0
    for chunk in chunks:
        size += len(chunk)
        if size > limit:
            raise _TooLarge(limit)
        text += decoder.decode(chunk)  # CPython grows a string only this name holds in place
    text += decoder.decode(b"", True)
    return text


def _utf8() -> Any:
    """A strict incremental UTF-8 decoder."""
    return codecs.getincrementaldecoder("utf-8")()


_BLANK = re.compile(r"\s*")
# what json.loads skips around a document, but the newline ending a line
_SPACES = re.compile(r"[ \t\r]*")
_DECODER = json.JSONDecoder()
_NOTHING = object()


def _jsonl(text: str, origin: str) -> list[Any]:
    """The documents of a JSONL text's non-blank lines (numbered from 1, blank ones counted), each
    decoded where it lies: a copy of each line would hold a one-line file twice."""
    docs, start, number = [], 0, 1
    while start < len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        try:
            doc, stop = _DECODER.raw_decode(text, start)
        except (ValueError, RecursionError):
            doc, stop = _NOTHING, -1
        if stop != end and not (0 <= stop <= end and _SPACES.fullmatch(text, stop, end)):
            doc = _spaced_line(text, start, end, origin, number)
        if doc is not _NOTHING:
            docs.append(doc)
        start, number = end + 1, number + 1
    return docs


def _spaced_line(text: str, start: int, end: int, origin: str, number: int) -> Any:
    """The JSON document on ``text[start:end]`` after leading spaces, ``_NOTHING`` for a blank line;
    an invalid one is copied out for ``parse_json``'s error."""
    if _BLANK.fullmatch(text, start, end):
        return _NOTHING
    try:
        doc, stop = _DECODER.raw_decode(text, _after_spaces(text, start, end))
    except (ValueError, RecursionError):
        stop = end + 1
    if stop <= end and _after_spaces(text, stop, end) == end:
        return doc
    return parse_json(text[start:end], origin, number)


def _after_spaces(text: str, start: int, end: int) -> int:
    """Where the spaces, tabs and carriage returns from ``start`` end (``end`` at most)."""
    found = _SPACES.match(text, start, end)
    return found.end() if found else start


def _record(chunks: Iterator[bytes], record: int, origin: str, limit: int) -> Any:
    """JSONL line ``record`` (1-based), reading no further than it; each line read must fit
    ``limit``."""
    if record < 1:
        raise SourceError(f"record {record} is out of range; records are numbered from 1", origin)
    number, length = 1, 0  # the line being read, and its bytes so far
    decoder, text = _utf8(), ""
    for chunk in chunks:
        ends = chunk.count(b"\n")
        # skipped whole: only its first line can be too long
        if number + ends < record and len(chunk) <= limit:
            first = chunk.find(b"\n")
            length += len(chunk) if first < 0 else first
            if length > limit:
                raise _TooLarge(limit, number)
            if first >= 0:
                number, length = number + ends, len(chunk) - chunk.rfind(b"\n") - 1
            continue
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            stop = len(chunk) if end < 0 else end
            length += stop - start
            if length > limit:
                raise _TooLarge(limit, number)
            if number == record:
                text += decoder.decode(chunk[start:stop])
            if end < 0:
                break
            if number == record:
                text += decoder.decode(b"", True)
                return _record_doc(text, record, origin)
            number, length, start = number + 1, 0, end + 1
    if number == record and length:
        text += decoder.decode(b"", True)
        return _record_doc(text, record, origin)
    count = number if length else number - 1
    raise SourceError(
        f"record {record} is past the end: the file has {count} record{'s' if count != 1 else ''} "
        "(one per line)",
        origin,
    )


def _record_doc(line: str, record: int, origin: str) -> Any:
    """The JSON document on line ``record``, which must not be blank."""
    if not line or line.isspace():
        raise SourceError(
            f"record {record} is a blank line; expected a JSON record on that line", origin
        )
    return parse_json(line, origin, record)


def parse_json(text: str, origin: str, line: int = 0) -> Any:
    """Decode JSON text; errors name the line and column (``line`` offsets a JSONL record)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        found = text[exc.pos : exc.pos + 20].split("\n", 1)[0]
        found_text = f"found {found!r}" if found else "found the end of the text"
        where = (
            f"line {line}, column {exc.colno}" if line else f"line {exc.lineno}, column {exc.colno}"
        )
        hint = (
            "for one JSON document per line, name the file .jsonl"
            if exc.msg == "Extra data"
            else _JSON_HINT
        )
        raise SourceError(
            f"invalid JSON at {where}: {exc.msg}, {found_text}; {hint}", origin
        ) from None
    except RecursionError:
        raise SourceError(_too_deep(text, line), origin) from None
    except (
        ValueError
    ) as exc:  # Python's limit on integer digits (JSONDecodeError, a ValueError, is handled above)
        raise SourceError(_too_long_integer(text, line, exc), origin) from None


def _where(text: str, offset: int, line: int) -> str:
    """``line L, column C`` of ``offset`` in ``text`` (``line`` is the JSONL record's line, if
    any)."""
    row = line or text.count("\n", 0, offset) + 1
    column = offset - text.rfind("\n", 0, offset)
    return f"line {row}, column {column}"


_JSON_NESTING = re.compile(r'"(?:[^"\\]|\\.)*"|([\[{])|[\]}]')


def _too_deep(text: str, line: int) -> str:
    """The message for JSON nested deeper than the decoder can follow, pointing where it gets
    deep."""
    depth = 0
    for token in _JSON_NESTING.finditer(text):
        if token[0][0] != '"':
            depth += 1 if token[1] else -1
        if depth > JSON_DEPTH_SHOWN:
            return (
                f"invalid JSON at {_where(text, token.start(), line)}: lists and maps nest more "
                f"than {JSON_DEPTH_SHOWN} levels deep there, too deep to decode; flatten the "
                "document"
            )
    return "invalid JSON: lists and maps nest too deeply to decode; flatten the document"


def _too_long_integer(text: str, line: int, exc: ValueError) -> str:
    """The message for an integer past Python's limit on int/str conversion (4,300 digits by
    default)."""
    limit = int_digits_limit()
    found = re.search(rf"-?\d{{{limit + 1},}}", text) if limit else None
    if found is None:
        return f"invalid JSON: {exc}"
    digits = found[0].lstrip("-")
    return (
        f"invalid JSON at {_where(text, found.start(), line)}: an integer of {len(digits):,} "
        f"digits ({digits[:8]}…{digits[-8:]}); trajrun reads integers of at most {limit:,} digits "
        "(Python's limit) — quote it to keep it as a string"
    )


def parse_yaml(text: str, origin: str) -> Any:
    """Decode YAML in trajrun's one dialect (YAML 1.2 core, as suites are read); errors name the
    line and column."""
    try:
        return load_data(text)
    except YamlProblem as exc:
        where = f"line {exc.pos.line}, column {exc.pos.column}"
        if exc.message.startswith("invalid YAML: "):
            raise SourceError(
                f"invalid YAML at {where}: {exc.message.removeprefix('invalid YAML: ')}; check the "
                "indentation and quoting there",
                origin,
            ) from None
        raise SourceError(f"YAML at {where}: {exc.message}", origin) from None


def apply_select(doc: Any, select: str, origin: str, spelling: Spelling = SUITE) -> Any:
    """Apply a JSONPath: one match is that node, several the list of them, none an error."""
    fix = (
        "run without --select to see the whole document"
        if spelling.flags
        else "for example with `trajrun show SOURCE --select PATH`"
    )
    path = _compile(select, origin)
    try:
        matches = [match.value for match in path.find(doc)]
    except TimeoutError as exc:
        raise SourceError(f"select {select!r} stopped: {exc}", origin) from None
    except Exception as exc:  # noqa: BLE001 - jsonpath-ng raises whatever the data provokes (mixed types, 1/0, depth)
        raise SourceError(
            f"select {select!r} cannot be applied to {describe(doc)}: {type(exc).__name__}: {exc}; "
            f"check the path, {fix}",
            origin,
        ) from None
    if not matches:
        raise SourceError(
            f"select {select!r} matched nothing in {describe(doc)}; check the path, {fix}", origin
        )
    return matches[0] if len(matches) == 1 else matches


def _compile(select: str, origin: str) -> Any:
    """The compiled JSONPath; a parse error names the expression and the parser's message."""
    try:
        return parse_jsonpath(select)
    except (
        Exception
    ) as exc:  # jsonpath-ng raises bare Exception subclasses from its lexer and parser
        raise SourceError(
            f"invalid JSONPath {select!r} in select: {exc}; expected a JSONPath such as "
            "'$.messages' or '$.runs[0].messages'",
            origin,
        ) from None


@functools.lru_cache(maxsize=256)
def parse_jsonpath(text: str) -> Any:
    """Parse a JSONPath once with jsonpath-ng's extended parser (filters, arithmetic), its regexes
    and ``*`` bounded.

    Used for ``select`` and for the JSONPath fields of tool rules. Raises what jsonpath-ng raises
    for a bad path, and ``re.error`` for a bad or oversized regex in it.
    """
    from jsonpath_ng.ext import parse  # deferred: jsonpath-ng costs start-up time

    return _bounded(parse(text))


# -- JSONPath nodes with bounds ------------------------------------------------------------------


def _bounded(path: Any) -> Any:
    """``path`` with jsonpath-ng's unbounded operations swapped for bounded ones, in place, at every
    depth."""
    from jsonpath_ng import JSONPath  # deferred: jsonpath-ng costs start-up time

    expression, regex_filter, sub, bounded_sub, operation = _bounded_classes()
    stack = [path]
    while stack:
        node = stack.pop()
        if type(node) is expression and node.op == "=~":
            _check_pattern(node.value)
            node.__class__ = regex_filter
        elif type(node) is sub:
            _check_pattern(node.expr)
            node.__class__ = bounded_sub
        elif type(node) is operation and node.op is operator.mul:
            node.op = _multiply
        stack.extend(_child_nodes(vars(node).values(), JSONPath))
    return path


def _child_nodes(values: Any, node_type: type) -> Iterator[Any]:
    """The JSONPath nodes among attribute values (directly, or inside lists and tuples)."""
    for value in values:
        if isinstance(value, (list, tuple)):
            yield from _child_nodes(value, node_type)
        elif isinstance(value, node_type):
            yield value


def _check_pattern(pattern: Any) -> None:
    """A filter's regex must be a string that compiles (``re.error`` otherwise)."""
    if not isinstance(pattern, str):
        raise re.error(f"the regex of =~ must be a quoted string, found {pattern!r}")
    try:
        compile_regex(pattern)
    except re.error as exc:
        raise re.error(f"regex {pattern!r} does not compile: {exc}") from None


def _digits(number: int) -> float:
    """About how many decimal digits ``number`` has."""
    return number.bit_length() * 0.30103


def _multiply(left: Any, right: Any) -> Any:
    """``*`` in a JSONPath filter, refusing a string, list or integer past the source limit."""
    sized, count = (left, right) if isinstance(left, (str, list)) else (right, left)
    if (
        isinstance(sized, (str, list))
        and isinstance(count, int)
        and len(sized) * count > max_source_bytes()
    ):
        raise ValueError(
            f"repeating a value of {len(sized):,} characters or items {count:,} times is above the "
            f"limit of {max_source_bytes():,} ({MAX_SOURCE_BYTES_VAR})"
        )
    limit = int_digits_limit()
    if (
        isinstance(left, int)
        and isinstance(right, int)
        and limit
        and _digits(left) + _digits(right) > limit
    ):
        raise ValueError(
            f"the product has more than {limit:,} digits (Python's limit on integers as text)"
        )
    return left * right


@functools.lru_cache(maxsize=1)
def _bounded_classes() -> tuple[
    type[Expression], type[Expression], type[Sub], type[Sub], type[Operation]
]:
    """jsonpath-ng's filter expression and ``sub()``, each with a subclass bounded in time; its
    ``Operation``."""
    from jsonpath_ng import DatumInContext  # deferred: jsonpath-ng costs start-up time
    from jsonpath_ng.ext.arithmetic import Operation  # deferred, as above
    from jsonpath_ng.ext.filter import Expression  # deferred, as above
    from jsonpath_ng.ext.string import Sub  # deferred, as above

    class RegexFilter(Expression):
        """``[?(@.x =~ 'pattern')]``: jsonpath-ng's ``re.search`` replaced by a bounded search."""

        def find(self, datum: Any) -> list[Any]:
            """The target's string values in which the pattern is found."""
            found = self.target.find(DatumInContext.wrap(datum))
            compiled = compile_regex(self.value)
            return [
                match
                for match in found
                if isinstance(match.value, str) and regex_search(compiled, match.value)
            ]

    class BoundedSub(Sub):
        """```sub(/pattern/, repl)```: the substitution under the time limit; non-strings give
        nothing."""

        def find(self, datum: Any) -> list[Any]:
            """The substituted string, when it changed."""
            datum = DatumInContext.wrap(datum)
            if not isinstance(datum.value, str):
                return []
            compiled, limit = compile_regex(self.expr), regex_timeout()
            try:
                value = compiled.sub(self.repl, datum.value, timeout=limit)
            except TimeoutError:
                raise TimeoutError(timeout_message(self.expr, len(datum.value), limit)) from None
            return [] if value == datum.value else [DatumInContext.wrap(value)]

    return Expression, RegexFilter, Sub, BoundedSub, Operation
