"""Byte streams for bulk sources: files a glob or fsspec URL names, gzip that survives a corrupt
member, lines.

Plain paths and globs need nothing beyond Python; a URL (``s3://…``, ``file://…``, ``memory://…``)
is opened through fsspec when it is installed (``pip install 'trajrun[dask]'``). A glob's ``**``
descends into no symlinked folder, so a link to ``.`` cannot make it endless, and a file with two
names is read once. Everything is read in chunks, so memory stays flat however large a file is: a
line is held whole only up to ``TRAJRUN_MAX_SOURCE_BYTES``, past which it is reported and skipped.

A gzip file is read member by member. Where a member is corrupt, its records are lost, but reading
resumes at the next member's header, so one bad block never hides the rest of a log.
"""

from __future__ import annotations

import fnmatch
import os
import re
import zlib
from collections.abc import Iterator
from typing import IO, Any, NamedTuple

from ..errors import SourceError
from ..limits import MAX_SOURCE_BYTES_VAR

CHUNK = 1 << 16
"""Bytes read (or inflated) at a time: a chunk, the lines split from it and their copies stay in a
core's cache (with a megabyte they did not, and two workers of a bulk case took far more CPU than
one)."""
GZIP_MAGIC = b"\x1f\x8b\x08"
_GLOB = frozenset("*?[")
FSSPEC_HINT = (
    "install fsspec (pip install 'trajrun[dask]', plus the filesystem's package, such as s3fs for "
    "s3://)"
)


class Lost(NamedTuple):
    """A stretch of a file that could not be read (a corrupt gzip member, a line past the limit):
    why."""

    reason: str


def is_url(location: str) -> bool:
    """Whether ``location`` names a filesystem by protocol (``s3://…``, ``memory://…``), for
    fsspec."""
    head, sep, _ = location.partition("://")
    return bool(sep) and head.replace("+", "").replace("-", "").isalnum() and len(head) > 1


def has_glob(location: str) -> bool:
    """Whether ``location`` holds glob characters (``*``, ``?``, ``[``)."""
    return not _GLOB.isdisjoint(location)


def _fsspec() -> Any:
    """The fsspec module, or a ``SourceError`` saying how to install it."""
    try:
        import fsspec  # type: ignore[import-untyped]  # deferred: optional, only URLs need it
    except ImportError:
        raise SourceError(
            f"reading a URL needs fsspec, which is not installed; {FSSPEC_HINT}"
        ) from None
    return fsspec


def expand(location: str) -> list[str]:
    """The files ``location`` names, sorted: a glob's matches (``**`` recursive), a URL's, or the
    path itself."""
    if is_url(location):
        fsspec = _fsspec()
        try:
            fs, path = fsspec.core.url_to_fs(location)
            names = fs.glob(path) if has_glob(path) else ([path] if fs.exists(path) else [])
            return sorted(fs.unstrip_protocol(name) for name in names if not fs.isdir(name))
        except (OSError, ValueError, ImportError) as exc:
            raise SourceError(
                f"cannot list {location}: {type(exc).__name__}: {exc}", location
            ) from None
    if has_glob(location):
        return _distinct(sorted(name for name in _glob(location) if os.path.isfile(name)))
    return [location] if os.path.isfile(location) else []


_SEPARATORS = re.compile(r"[\\/]" if os.sep == "\\" else "/")


def _glob(pattern: str) -> Iterator[str]:
    """The paths ``pattern`` matches, as ``glob.glob(recursive=True)`` finds them but for ``**``,
    which descends into no symlinked folder and into each real folder once (``glob`` followed a link
    to ``.`` for ever)."""
    drive, rest = os.path.splitdrive(pattern)
    root = drive + os.sep if rest[:1] and _SEPARATORS.match(rest) else drive
    segments = [part for part in _SEPARATORS.split(rest) if part]
    return _matches(root, segments)


def _matches(base: str, segments: list[str]) -> Iterator[str]:
    """The paths under ``base`` (the part matched so far, ``""`` for the current folder) that
    ``segments`` match."""
    if not segments:
        yield base
        return
    head, rest = segments[0], segments[1:]
    if head == "**":
        for folder in _folders(base):
            yield from _matches(folder, rest or ["*"])
    elif has_glob(head):
        for name in fnmatch.filter(_names(base), head):
            if not name.startswith(".") or head.startswith("."):
                yield from _matches(os.path.join(base, name), rest)
    elif os.path.lexists(os.path.join(base, head)):
        yield from _matches(os.path.join(base, head), rest)


def _folders(base: str) -> Iterator[str]:
    """``base`` and every folder below it that is neither a symlink nor hidden, each (device, inode)
    once."""
    seen: set[tuple[int, int]] = set()
    pending = [base]
    while pending:
        folder = pending.pop()
        try:
            # a bind mount of a folder above it
            if not _first_time(os.stat(folder or os.curdir), seen):
                continue
            with os.scandir(folder or os.curdir) as entries:
                below = [
                    os.path.join(folder, entry.name)
                    for entry in entries
                    if not entry.name.startswith(".") and entry.is_dir(follow_symlinks=False)
                ]
        except OSError:  # unreadable or gone: glob skips it too
            continue
        yield folder
        pending.extend(sorted(below, reverse=True))


def _names(folder: str) -> list[str]:
    """The names in ``folder`` (``""``: the current folder); none when it cannot be listed."""
    try:
        return os.listdir(folder or os.curdir)
    except OSError:
        return []


def _distinct(paths: list[str]) -> list[str]:
    """``paths`` without a second name (a link, a hard link) for a file already listed."""
    seen: set[tuple[int, int]] = set()
    out = []
    for path in paths:
        try:
            info = os.stat(path)
        except OSError:  # gone since it was listed: reading it will say so
            out.append(path)
            continue
        if _first_time(info, seen):
            out.append(path)
    return out


def _first_time(info: os.stat_result, seen: set[tuple[int, int]]) -> bool:
    """Whether the file ``info`` describes is not in ``seen`` (by device and inode), adding it; a
    filesystem without inode numbers (0) never matches, so nothing is lost there."""
    key = (info.st_dev, info.st_ino)
    if info.st_ino and key in seen:
        return False
    seen.add(key)
    return True


def size_of(path: str) -> int:
    """The size of a file in bytes (0 when it cannot be told)."""
    try:
        if is_url(path):
            fs, inner = _fsspec().core.url_to_fs(path)
            return int(fs.size(inner) or 0)
        return os.path.getsize(path)
    except (OSError, ValueError, TypeError):
        return 0


def open_binary(path: str) -> IO[bytes]:
    """A file opened for reading bytes, through fsspec for a URL."""
    if is_url(path):
        return _fsspec().open(path, "rb").open()
    return open(path, "rb")


def raw_chunks(stream: IO[bytes], start: int = 0) -> Iterator[bytes]:
    """The bytes of ``stream`` from offset ``start``, a chunk at a time."""
    if start:
        stream.seek(start)
    while chunk := stream.read(CHUNK):
        yield chunk


def gunzip_chunks(stream: IO[bytes]) -> Iterator[bytes | Lost]:
    """Decompressed chunks of a (multi-member) gzip stream; a corrupt member gives a ``Lost`` and
    reading resumes at the next member header found after it."""
    member_start, position = 0, 0
    inflate = zlib.decompressobj(wbits=31)
    for chunk in raw_chunks(stream):
        data, base = chunk, position
        position += len(chunk)
        while data:
            try:
                yield from _inflated(inflate, data)
            except zlib.error as exc:
                lost = (
                    f"bytes from {member_start:,} of the compressed file are not valid gzip ({exc})"
                )
                resume = _next_member(stream, member_start + 1)
                yield Lost(
                    lost
                    + (f"; reading resumed at the member at byte {resume:,}" if resume >= 0 else "")
                )
                if resume < 0:
                    return
                stream.seek(resume)
                member_start, position, inflate = resume, resume, zlib.decompressobj(wbits=31)
                break
            if not inflate.eof:
                break
            data = inflate.unused_data
            member_start = base + len(chunk) - len(data)
            inflate = zlib.decompressobj(wbits=31)
            if data and not data.startswith(GZIP_MAGIC[: len(data)]):
                yield Lost(
                    f"bytes from {member_start:,} of the compressed file are not gzip (trailing "
                    "garbage)"
                )
                return
    if not inflate.eof and position > member_start:
        yield Lost(
            "the compressed file ends in the middle of a gzip member (from byte "
            f"{member_start:,}): it was cut short"
        )


def _inflated(inflate: Any, data: bytes) -> Iterator[bytes]:
    """``inflate.decompress(data)``, at most ``CHUNK`` bytes at a time: logs compress a hundredfold,
    and a chunk inflated at once (then split into lines) held hundreds of megabytes."""
    while True:
        out = inflate.decompress(data, CHUNK)
        if out:
            yield out
        # what follows the member is in unused_data (and, still, in unconsumed_tail)
        if inflate.eof:
            return
        data = inflate.unconsumed_tail
        if not data and len(out) < CHUNK:  # a full CHUNK may leave output inside zlib: ask again
            return


def _next_member(stream: IO[bytes], after: int) -> int:
    """The offset of the next gzip member header at or after ``after``, or -1."""
    stream.seek(after)
    tail, offset = b"", after
    while chunk := stream.read(CHUNK):
        data = tail + chunk
        found = data.find(GZIP_MAGIC)
        if found >= 0:
            return offset - len(tail) + found
        tail = data[-(len(GZIP_MAGIC) - 1) :]
        offset += len(chunk)
    return -1


class Line(NamedTuple):
    """One line of a stream: its offset (in the decompressed bytes) and its bytes without the
    newline, or ``Lost``."""

    offset: int
    data: bytes | Lost


def lines(chunks: Iterator[bytes | Lost], limit: int, offset: int = 0) -> Iterator[Line]:
    """The lines of a chunked stream starting at ``offset``; a line past ``limit`` bytes is a
    ``Lost`` (and skipped).

    A ``Lost`` chunk ends the line in progress, which is lost with it. A line running over several
    chunks is joined once, when it ends: joining it chunk by chunk copied it again for every chunk.
    """
    pieces: list[bytes] = []  # the line in progress, ``pending`` bytes of it
    # skipped: where a line past the limit began, while its end is being looked for
    pending, skipped = 0, -1
    for chunk in chunks:
        if isinstance(chunk, Lost):
            yield Line(offset if skipped < 0 else skipped, chunk)
            offset += pending
            pieces, pending, skipped = [], 0, -1
            continue
        parts = chunk.split(b"\n")
        tail = parts.pop()
        if parts and pieces:
            parts[0] = b"".join((*pieces, parts[0]))
            pieces, pending = [], 0
        for part in parts:
            if skipped >= 0 or len(part) > limit:
                yield Line(offset if skipped < 0 else skipped, Lost(_too_long(limit)))
                skipped = -1
            else:
                yield Line(offset, part)
            offset += len(part) + 1
        if tail:
            pieces.append(tail)
            pending += len(tail)
        if pending > limit:
            skipped = offset if skipped < 0 else skipped
            offset, pieces, pending = offset + pending, [], 0
    if skipped >= 0:
        yield Line(skipped, Lost(_too_long(limit)))
    elif pending:
        yield Line(offset, b"".join(pieces))


def _too_long(limit: int) -> str:
    """Why a line was skipped."""
    return (
        f"the line holds more than {limit:,} bytes, the limit on one record; set "
        f"{MAX_SOURCE_BYTES_VAR} to a larger number of bytes to read it"
    )
