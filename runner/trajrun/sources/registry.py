"""The reader registry: every reader module of ``sources/readers`` (one that declares ``FORMAT``),
in the order detection tries them (by ``RANK``, first fit wins).

Detection, the ``format:`` key, the CLI's ``--format`` and the schema's enum all take the formats
from here, so adding a reader module is all it takes to add a format. Importing this module imports
every reader; the names of the other choices sources take are in ``formats``, which imports none.
"""

from __future__ import annotations

import pkgutil
import re
from importlib import import_module
from itertools import pairwise
from typing import TYPE_CHECKING, Any, Protocol, cast

from . import readers as _package

if TYPE_CHECKING:
    from ..trajectory import Trajectory

DOCUMENT = "document"
"""A reader's ``READS`` when it reads the document as loaded."""
MESSAGES = "messages"
"""A reader's ``READS`` when it reads a message list: a mapping with a ``messages`` list stands for
it."""

_NAME = re.compile(r"[a-z][a-z0-9-]*")


class Reader(Protocol):
    """What a reader module declares: its format's name, what it reads, where detection tries it
    (``RANK``, lowest first), ``read`` and ``refuses``.

    ``read`` raises ``NotThisFormat`` with a short reason when the document is not in its format
    (``auto=True``: detection asks, and a reader may want more evidence); ``details=False`` lets
    it leave arguments undecoded and results unpaired. ``refuses(doc)`` is True only when
    ``read(doc, auto=True)`` would surely raise ``NotThisFormat`` (False when it cannot tell
    cheaply): detection skips the reader then, so it must be cheap and never wrong.
    """

    FORMAT: str
    READS: str
    RANK: int

    def read(self, doc: Any, *, auto: bool = False, details: bool = True) -> Trajectory:
        """The run ``doc`` holds, or ``NotThisFormat``."""

    def refuses(self, doc: Any) -> bool:
        """Whether ``read(doc, auto=True)`` surely raises ``NotThisFormat``."""


def _discover() -> tuple[Reader, ...]:
    """Every module of ``readers`` that declares ``FORMAT``, by ``RANK``."""
    found = []
    for info in pkgutil.iter_modules(_package.__path__):
        module = import_module(f"{_package.__name__}.{info.name}")
        if hasattr(module, "FORMAT"):
            found.append(_checked(cast(Reader, module), info.name))
    found.sort(key=lambda reader: reader.RANK)
    for before, after in pairwise(found):
        if before.RANK == after.RANK or before.FORMAT == after.FORMAT:
            raise TypeError(f"readers {before.FORMAT} and {after.FORMAT} share a RANK or FORMAT: "
                            "give each reader module its own")  # fmt: skip
    return tuple(found)


def _checked(reader: Reader, name: str) -> Reader:
    """``reader`` when it declares the whole protocol; else what is wrong, for whoever wrote it."""
    lacks = [attr for attr in ("READS", "RANK", "read", "refuses") if not hasattr(reader, attr)]
    if lacks:
        raise TypeError(f"reader module {name} declares FORMAT but not {', '.join(lacks)}")
    if reader.READS not in (DOCUMENT, MESSAGES) or type(reader.RANK) is not int:
        raise TypeError(f"reader module {name}: READS must be {DOCUMENT!r} or {MESSAGES!r} "
                        "and RANK an int")  # fmt: skip
    if reader.FORMAT == "auto" or not _NAME.fullmatch(reader.FORMAT):
        raise TypeError(f"reader module {name}: FORMAT {reader.FORMAT!r} is not a format name "
                        "(lower-case letters, digits and hyphens; not auto)")  # fmt: skip
    return reader


READERS: tuple[Reader, ...] = _discover()
"""Every reader, in the order detection tries them."""
FORMATS: tuple[str, ...] = tuple(reader.FORMAT for reader in READERS)
"""Every reader's name; a ``format:`` key takes one of these or ``auto``."""
