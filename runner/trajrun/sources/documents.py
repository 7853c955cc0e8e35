"""Loading source documents: JSON, JSONL (streamed to one record), YAML, each optionally gzipped; JSONPath ``select``.

JSONL records are physical lines, numbered from 1: ``record: N`` reads line N and stops, so a
huge file is never held in memory; a blank line there is an error. Without ``record`` a JSONL
file is the list of its non-blank lines.

Sources are untrusted input, so reading them is bounded:

- ``TRAJRUN_MAX_SOURCE_BYTES`` (default 1 GiB, 1073741824) caps what one source holds in memory,
  counted after decompression: a whole ``.json``/``.yaml`` document, a ``.jsonl`` file read whole,
  or the one line ``record: N`` picks (the lines before it are streamed, so a longer log still
  works). A gzip bomb stops at the cap instead of inflating to gigabytes.
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

import functools
import io
import json
import operator
import os
import re
import stat
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from ..errors import SourceError
from ..frozen import frozen
from ..limits import MAX_SOURCE_BYTES_VAR, compile_regex, max_source_bytes, regex_search, regex_timeout, timeout_message
from ..yaml_core import YamlProblem, int_digits_limit, load_data
from .builder import describe
from .checkpoints import SUFFIXES, load_database

_JSON_HINT = "check the file is valid JSON (a trailing comma or a missing quote is the usual cause)"
_KINDS = {".json": "json", ".jsonl": "jsonl", ".ndjson": "jsonl", ".yaml": "yaml", ".yml": "yaml"}

JSON_DEPTH_SHOWN = 500
"""How deep nesting must be before a JSON depth error points at it (the decoder itself stops near 1,000)."""


class _TooLarge(Exception):
    """A source (or one JSONL line) past ``TRAJRUN_MAX_SOURCE_BYTES``."""

    def __init__(self, limit: int, line: int = 0) -> None:
        super().__init__(limit, line)
        self.limit = limit
        self.line = line


@frozen
class Spelling:
    """How a source's options are written where its errors are read: a suite's keys, or ``trajrun show``'s flags."""

    flags: bool

    def name(self, option: str) -> str:
        """``'select:'`` in a suite, ``--select`` on the command line."""
        return f"--{option}" if self.flags else f"'{option}:'"

    def given(self, option: str, value: str) -> str:
        """``select: '$[0]'`` in a suite, ``--select '$[0]'`` on the command line."""
        return f"--{option} {value}" if self.flags else f"{option}: {value}"

    @property
    def folder(self) -> str:
        """What a relative path is read against."""
        return "the current folder" if self.flags else "the suite's folder"


SUITE = Spelling(flags=False)
SHOW = Spelling(flags=True)


def load_document(path: str | Path, *, select: str | None = None, record: int | None = None,
                  spelling: Spelling = SUITE, thread: str | None = None, checkpoint: str | None = None) -> Any:
    """Read a source file (``record`` picks one JSONL line first; ``thread`` and ``checkpoint`` one checkpoint of a
    LangGraph database), then apply ``select``; errors spell the options as the user wrote them (``spelling``)."""
    path = Path(path)
    origin = str(path)
    kind, zipped = document_kind(path)
    if record is not None and kind != "jsonl":
        item = spelling.given("select", f"'$[{record - 1}]'")
        raise SourceError(f"{spelling.name('record')} needs a .jsonl file, found a .{kind} file; use {item} to pick an "
                          "item of a list", origin)  # fmt: skip
    if kind == "sqlite" or thread is not None or checkpoint is not None:
        doc = load_database(path, (kind, zipped), thread, checkpoint, spelling)
        return doc if select is None else apply_select(doc, select, origin, spelling)
    if path.is_dir():
        raise SourceError("a folder, not a file; expected a .json, .jsonl or .yaml file — point the source at a file "
                          "inside it", origin)  # fmt: skip
    if not path.is_file():
        raise SourceError("file not found; expected a .json, .jsonl or .yaml file — check the path "
                          f"(relative paths resolve against {spelling.folder})", origin)  # fmt: skip
    limit = max_source_bytes()
    try:
        text = _plain_json(path, limit) if kind == "json" and not zipped else None
        if text is None:
            with _open(path, zipped, None if record is not None else limit) as stream:
                doc = _read(stream, kind, record, origin, limit)
        else:
            doc = parse_json(text, origin)
    except _TooLarge as exc:
        raise SourceError(_too_large(exc, zipped), origin) from None
    except (OSError, EOFError, UnicodeDecodeError, zlib.error) as exc:
        raise SourceError(f"cannot read the file: {exc}; expected {'gzip-compressed ' if zipped else ''}"
                          "UTF-8 text", origin) from None  # fmt: skip
    return doc if select is None else apply_select(doc, select, origin, spelling)


def _too_large(exc: _TooLarge, zipped: bool) -> str:
    """The message for a source past the size limit."""
    what = f"line {exc.line} holds" if exc.line else ("the file decompresses to" if zipped else "the file holds")
    return (f"{what} more than {exc.limit:,} bytes, the limit on one source document; set {MAX_SOURCE_BYTES_VAR} "
            "to a larger number of bytes to read it")


def document_kind(path: Path) -> tuple[str, bool]:
    """The document kind from the file suffixes (``.json``, ``.jsonl``, ``.yaml``, ``.sqlite``), and whether it is
    gzipped."""
    suffixes = [s.lower() for s in path.suffixes]
    zipped = bool(suffixes) and suffixes[-1] == ".gz"
    suffix = suffixes[-2] if zipped and len(suffixes) > 1 else (suffixes[-1] if suffixes and not zipped else "")
    if suffix in SUFFIXES:
        return "sqlite", zipped
    if suffix not in _KINDS:
        raise SourceError(f"unsupported file type {suffix or '(none)'!r}; expected .json, .jsonl, .yaml or .yml "
                          "(optionally .gz) — rename the file", str(path))  # fmt: skip
    return _KINDS[suffix], zipped


def _plain_json(path: Path, limit: int) -> str | None:
    """A plain JSON file's text, read in one call at its size, as most sources are (through the capped text stream
    a 50 KB history took a quarter longer to read and decode); None when the file is not as its size says (it
    grew, or a special file that reports none): the capped stream reads it then."""
    with path.open("rb", buffering=0) as raw:
        size = os.fstat(raw.fileno()).st_size
        if size > limit:
            raise _TooLarge(limit)
        data = raw.read(size + 1)
    return data.decode("utf-8") if len(data) == size else None


def _open(path: Path, zipped: bool, limit: int | None) -> IO[str]:
    """The file as UTF-8 text, decompressing gzip on the fly; more than ``limit`` bytes raise ``_TooLarge``."""
    if zipped:
        import gzip  # deferred: start-up time, for the runs that read no .gz file

        raw: IO[bytes] = gzip.open(path, "rb")
    else:
        raw = path.open("rb")
    return io.TextIOWrapper(io.BufferedReader(_Capped(raw, limit)), encoding="utf-8")


class _Capped(io.RawIOBase):
    """A binary file that gives at most ``limit`` bytes (``None``: no limit), so a gzip bomb stops there."""

    def __init__(self, inner: IO[bytes], limit: int | None) -> None:
        super().__init__()
        self.inner, self.limit, self.count = inner, limit, 0

    def readable(self) -> bool:
        """Always: this is a reader."""
        return True

    def readinto(self, buffer: Any) -> int:
        """Fill ``buffer`` from the inner file, counting."""
        n = self.inner.readinto(buffer)  # type: ignore[attr-defined]
        return self._counted(n)

    def readall(self) -> bytes:
        """The rest of the file, asking for one byte past the limit to notice it.

        Never ``read(limit)`` at once: that allocates a buffer of the whole limit (1 GiB by default)
        for every source, however small. A plain file is read at its size, anything else in pieces.
        """
        if self.limit is None:
            data = self.inner.read()
        else:
            size = _plain_size(self.inner)
            want, parts, piece = self.limit - self.count + 1, [], size + 1 if size >= 0 else _PIECE
            while want > 0 and (chunk := self.inner.read(min(want, piece))):
                parts.append(chunk)
                want, piece = want - len(chunk), _PIECE
            data = b"".join(parts)
        self._counted(len(data))
        return data

    def close(self) -> None:
        """Close the inner file too."""
        self.inner.close()
        super().close()

    def _counted(self, n: int) -> int:
        """Add ``n`` bytes to the count; past the limit is ``_TooLarge``."""
        self.count += n
        if self.limit is not None and self.count > self.limit:
            raise _TooLarge(self.limit)
        return n


_PIECE = 1 << 20


def _plain_size(inner: IO[bytes]) -> int:
    """The bytes left in a plain file opened for binary reading, -1 for anything else (gzip, pipes)."""
    if not isinstance(inner, io.BufferedReader):
        return -1
    try:
        status = os.fstat(inner.fileno())
        return status.st_size - inner.tell() if stat.S_ISREG(status.st_mode) else -1
    except (OSError, ValueError):
        return -1


def _read(stream: IO[str], kind: str, record: int | None, origin: str, limit: int) -> Any:
    """Parse an open file of the given kind."""
    if kind == "yaml":
        return parse_yaml(stream.read(), origin)
    if kind == "json":
        return parse_json(stream.read(), origin)
    if record is not None:
        return _record(stream, record, origin, limit)
    return [parse_json(line, origin, n) for n, line in _numbered(stream, limit) if line.strip()]


def _numbered(stream: IO[str], limit: int) -> Iterator[tuple[int, str]]:
    """Lines with their 1-based numbers, read one at a time; a line longer than ``limit`` is ``_TooLarge``."""
    for number, line in _lines(stream, limit):
        if len(line) > limit:
            raise _TooLarge(limit, number)
        yield number, line


def _lines(stream: IO[str], limit: int) -> Iterator[tuple[int, str]]:
    """Numbered lines of at most ``limit + 1`` characters each (a longer line comes cut), read in C."""
    return enumerate(iter(functools.partial(stream.readline, limit + 1), ""), start=1)


def _record(stream: IO[str], record: int, origin: str, limit: int) -> Any:
    """JSONL line ``record`` (1-based), reading no further than it; each line read must fit ``limit``."""
    if record < 1:
        raise SourceError(f"record {record} is out of range; records are numbered from 1", origin)
    count = 0
    for count, line in _lines(stream, limit):  # inline, not _numbered: this loop may skip millions of lines
        if len(line) > limit:
            raise _TooLarge(limit, count)
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
    except RecursionError:
        raise SourceError(_too_deep(text, line), origin) from None
    except ValueError as exc:  # Python's limit on integer digits (JSONDecodeError, a ValueError, is handled above)
        raise SourceError(_too_long_integer(text, line, exc), origin) from None


def _where(text: str, offset: int, line: int) -> str:
    """``line L, column C`` of ``offset`` in ``text`` (``line`` is the JSONL record's line, if any)."""
    row = line or text.count("\n", 0, offset) + 1
    column = offset - text.rfind("\n", 0, offset)
    return f"line {row}, column {column}"


_JSON_NESTING = re.compile(r'"(?:[^"\\]|\\.)*"|([\[{])|[\]}]')


def _too_deep(text: str, line: int) -> str:
    """The message for JSON nested deeper than the decoder can follow, pointing where it gets deep."""
    depth = 0
    for token in _JSON_NESTING.finditer(text):
        if token[0][0] != '"':
            depth += 1 if token[1] else -1
        if depth > JSON_DEPTH_SHOWN:
            return (f"invalid JSON at {_where(text, token.start(), line)}: lists and maps nest more than "
                    f"{JSON_DEPTH_SHOWN} levels deep there, too deep to decode; flatten the document")  # fmt: skip
    return "invalid JSON: lists and maps nest too deeply to decode; flatten the document"


def _too_long_integer(text: str, line: int, exc: ValueError) -> str:
    """The message for an integer past Python's limit on int/str conversion (4,300 digits by default)."""
    limit = int_digits_limit()
    found = re.search(rf"-?\d{{{limit + 1},}}", text) if limit else None
    if found is None:
        return f"invalid JSON: {exc}"
    digits = found[0].lstrip("-")
    return (f"invalid JSON at {_where(text, found.start(), line)}: an integer of {len(digits):,} digits "
            f"({digits[:8]}…{digits[-8:]}); trajrun reads integers of at most {limit:,} digits (Python's limit) — "
            "quote it to keep it as a string")  # fmt: skip


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


def apply_select(doc: Any, select: str, origin: str, spelling: Spelling = SUITE) -> Any:
    """Apply a JSONPath: one match is that node, several the list of them, none an error."""
    fix = ("run without --select to see the whole document" if spelling.flags
           else "for example with `trajrun show SOURCE --select PATH`")
    path = _compile(select, origin)
    try:
        matches = [match.value for match in path.find(doc)]
    except TimeoutError as exc:
        raise SourceError(f"select {select!r} stopped: {exc}", origin) from None
    except Exception as exc:  # noqa: BLE001 - jsonpath-ng raises whatever the data provokes (mixed types, 1/0, depth)
        raise SourceError(f"select {select!r} cannot be applied to {describe(doc)}: {type(exc).__name__}: {exc}; "
                          f"check the path, {fix}", origin) from None
    if not matches:
        raise SourceError(f"select {select!r} matched nothing in {describe(doc)}; check the path, {fix}", origin)
    return matches[0] if len(matches) == 1 else matches


def _compile(select: str, origin: str) -> Any:
    """The compiled JSONPath; a parse error names the expression and the parser's message."""
    try:
        return parse_jsonpath(select)
    except Exception as exc:  # jsonpath-ng raises bare Exception subclasses from its lexer and parser
        raise SourceError(f"invalid JSONPath {select!r} in select: {exc}; expected a JSONPath such as "
                          "'$.messages' or '$.runs[0].messages'", origin) from None  # fmt: skip


@functools.lru_cache(maxsize=256)
def parse_jsonpath(text: str) -> Any:
    """Parse a JSONPath once with jsonpath-ng's extended parser (filters, arithmetic), its regexes and ``*`` bounded.

    Used for ``select`` and for the JSONPath fields of tool rules. Raises what jsonpath-ng raises for a
    bad path, and ``re.error`` for a bad or oversized regex in it.
    """
    from jsonpath_ng.ext import parse  # deferred: jsonpath-ng costs start-up time

    return _bounded(parse(text))


# -- regular expressions under a time limit ------------------------------------------------------


# -- JSONPath nodes with bounds ------------------------------------------------------------------


def _bounded(path: Any) -> Any:
    """``path`` with jsonpath-ng's unbounded operations swapped for bounded ones, in place, at every depth."""
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
    if isinstance(sized, (str, list)) and isinstance(count, int) and len(sized) * count > max_source_bytes():
        raise ValueError(f"repeating a value of {len(sized):,} characters or items {count:,} times is above the "
                         f"limit of {max_source_bytes():,} ({MAX_SOURCE_BYTES_VAR})")  # fmt: skip
    limit = int_digits_limit()
    if isinstance(left, int) and isinstance(right, int) and limit and _digits(left) + _digits(right) > limit:
        raise ValueError(f"the product has more than {limit:,} digits (Python's limit on integers as text)")
    return left * right


@functools.lru_cache(maxsize=1)
def _bounded_classes() -> tuple[type, type, type, type, type]:
    """jsonpath-ng's filter expression and ``sub()``, each with a subclass bounded in time; its ``Operation``."""
    from jsonpath_ng import DatumInContext  # deferred: jsonpath-ng costs start-up time
    from jsonpath_ng.ext.arithmetic import Operation  # deferred, as above
    from jsonpath_ng.ext.filter import Expression  # deferred, as above
    from jsonpath_ng.ext.string import Sub  # deferred, as above

    class RegexFilter(Expression):  # type: ignore[misc]
        """``[?(@.x =~ 'pattern')]``: jsonpath-ng's ``re.search`` replaced by a bounded search."""

        def find(self, datum: Any) -> list[Any]:
            """The target's string values in which the pattern is found."""
            found = self.target.find(DatumInContext.wrap(datum))
            compiled = compile_regex(self.value)
            return [match for match in found if isinstance(match.value, str) and regex_search(compiled, match.value)]

    class BoundedSub(Sub):  # type: ignore[misc]
        """```sub(/pattern/, repl)```: the substitution under the time limit; non-strings give nothing."""

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
