"""Atomic report files: write a temporary file beside the target, then rename it into place."""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO


def _open_temp(target: Path) -> tuple[Path, BinaryIO]:
    """Create a fresh hidden temporary file in the target's folder (mode follows the umask)."""
    while True:
        temp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
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


def atomic_write(path: str | os.PathLike[str], dump: Callable[[BinaryIO], None]) -> None:
    """Write a file through ``dump`` so readers see the old file or the whole new one, never half.

    The bytes go to a temporary file in the same folder, are flushed and fsynced, then
    ``os.replace`` swaps it in. On any failure (an exception, Ctrl-C) the temporary file is
    removed and the previous report stays untouched. Missing parent folders are created.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    temp, handle = _open_temp(target)
    try:
        with handle:
            dump(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise
    _sync_folder(target.parent)
