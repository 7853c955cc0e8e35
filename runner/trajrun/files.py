"""Writing files safely (reports, golden files): atomically, and only ever replacing a regular file.

A temporary file is written beside the target, then renamed into place. A device (``/dev/null``,
``/dev/full``), a folder, a FIFO or a socket at the path, directly or behind a symlink, is refused
with a ``FileWriteError``, because renaming over it would swap a system file for trajrun's output.
Also where a suite's project starts, which bounds where golden files are written and where
``python:`` sources are imported from.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import stat
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from .errors import TrajrunError

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
)


if sys.platform != "win32":
    import fcntl


class FileWriteError(TrajrunError):
    """A file that cannot be written: names the path, what went wrong and a fix."""


def special_kind(path: str | os.PathLike[str]) -> str | None:
    """``a FIFO (named pipe)``, ``a folder``…: what ``path`` is when it exists and is no regular
    file (links followed); None for a regular file or nothing. Reading or renaming over such a path
    would hang or harm."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def check_target(path: str | os.PathLike[str], what: str = "report") -> Path:
    """The file that writing ``what`` at ``path`` replaces (a symlink is followed); raises unless it
    is a regular file or does not exist yet."""
    target = Path(os.path.realpath(path))
    try:
        target.stat()
    except FileNotFoundError:
        return target
    except OSError as exc:
        raise FileWriteError(_os_problem(path, exc, what)) from None
    kind = special_kind(target)
    if kind is None:
        return target
    shown = str(path) if str(target) == os.path.abspath(path) else f"{path} (-> {target})"
    raise FileWriteError(
        f"cannot write {shown}: it is {kind}, and a {what} only replaces a regular file; "
        "give the path of a file, such as reports/trajrun.xml"
    )


@contextlib.contextmanager
def folder_lock(folder: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``folder`` while writing into it, so concurrent writers of one
    file take turns (POSIX; elsewhere the atomic rename alone)."""
    if sys.platform == "win32":
        yield
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def _os_problem(path: str | os.PathLike[str], exc: OSError, what: str = "report") -> str:
    """``cannot write PATH: reason; fix`` for an operating-system error."""
    reason = exc.strerror or str(exc)
    if exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
        fix = "free some space or write to another disk"
    elif exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        fix = "write to a folder you can write to"
    else:
        fix = "check the path, or write elsewhere"
    return f"cannot write {what} {path}: {reason}; {fix} (any previous file there is unchanged)"


def _open_temp(target: Path) -> tuple[Path, BinaryIO]:
    """Create a fresh hidden temporary file in the target's folder (mode follows the umask)."""
    while True:
        temp = target.with_name(
            f".{target.name}.{os.urandom(4).hex()}.tmp"
        )  # not secrets: it imports hmac and random
        try:
            fd = os.open(
                temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666
            )
        except FileExistsError:
            continue
        return temp, os.fdopen(fd, "wb")


def _sync_folder(folder: Path) -> None:
    """Make the rename itself durable where the platform allows opening a folder."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def atomic_write(
    path: str | os.PathLike[str], dump: Callable[[BinaryIO], None], what: str = "report"
) -> None:
    """Write a file through ``dump`` so readers see the old file or the whole new one, never half.

    The bytes go to a temporary file in the same folder, are flushed and fsynced, then
    ``os.replace`` swaps it in. On any failure (an exception, a full disk, Ctrl-C) the temporary
    file is removed and the previous file stays untouched. Missing parent folders are created.
    A symlink to a regular file is followed: the file it names is replaced, the link kept.
    Raises ``FileWriteError`` for a target that is not a regular file and for any OS error.
    """
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        target = check_target(path, what)
        temp, handle = _open_temp(target)
    except OSError as exc:
        raise FileWriteError(_os_problem(path, exc, what)) from None
    try:
        with handle:
            dump(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            temp.unlink()
        if isinstance(exc, OSError):
            raise FileWriteError(_os_problem(path, exc, what)) from None
        raise
    _sync_folder(target.parent)


PROJECT_MARKERS = ("pyproject.toml", ".git")


def project_root(folder: Path) -> Path:
    """The nearest folder from ``folder`` up that holds ``pyproject.toml`` or ``.git``; else
    ``folder`` itself."""
    return _project_root(folder.resolve())


@functools.lru_cache(maxsize=64)
def _project_root(folder: Path) -> Path:
    """``project_root`` of an absolute, resolved folder: cached, as every golden case of a suite
    asks it."""
    for candidate in (folder, *folder.parents):
        if any((candidate / marker).exists() for marker in PROJECT_MARKERS):
            return candidate
    return folder
