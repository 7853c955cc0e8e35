"""Format detection and reading: a parsed document (or a file) into a
:class:`~trajrun.trajectory.Trajectory`.

The readers (``registry.READERS``) are tried in their order, first fit wins; a reader that reads
messages gets a mapping's ``messages`` list in place of the mapping. Each reader's ``read`` raises
``NotThisFormat`` with a short reason, so detection never parses twice, and a reader whose
``refuses`` is sure it would is not asked at all. A document in a reader's format that is not one
run (an OpenTelemetry export of several runs) stops detection with its own reason (``NotOneRun``).
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import SourceError
from ..trajectory import Trajectory
from .builder import NotOneRun, NotThisFormat, TooDeep, describe
from .documents import SUITE, Spelling, document_kind, load_document
from .formats import TRACE_RULES
from .registry import FORMATS, MESSAGES, READERS

Read = Callable[..., Trajectory]
_READERS: dict[str, Read] = {reader.FORMAT: reader.read for reader in READERS}
"""Each format's ``read``, in detection order; ``traces`` other than ``auto`` replaces otel's."""
_ORDER = tuple((reader.FORMAT, reader.READS == MESSAGES, reader.refuses) for reader in READERS)
"""Per format, in detection order: whether it reads a mapping's ``messages`` list, and its refusal
test."""
_MESSAGE_FORMATS = frozenset(reader.FORMAT for reader in READERS if reader.READS == MESSAGES)
_RECORDING = "trajectory"
"""The reader of trajrun's own shape, which keeps the format its document records when it is a known
one."""
_SAVED_HINT = (
    "save the document to a file and run `trajrun show FILE -v` to see why each format does not fit"
)


def _fix(spelling: Spelling, whole_jsonl: bool = False) -> str:
    """What to do when no format fits, in the user's spelling (suite keys or ``show`` flags)."""
    fix = (
        f"name the format with {spelling.name('format')}, or point {spelling.name('select')} "
        "at the message list"
    )
    if whole_jsonl:
        return (
            "a .jsonl file is read as the list of its lines; pick one run with "
            f"{spelling.given('record', 'N')}, {fix}"
        )
    return fix


_SUITE_FIX = _fix(SUITE)
"""``_fix`` in a suite's words, worded once: documents read in bulk would word it on every
record."""


def read_trajectory(
    doc: Any,
    format: str = "auto",
    *,
    origin: str = "<inline>",
    details: bool = True,
    traces: str = "auto",
) -> Trajectory:
    """Read a parsed document as ``format`` (or detect it with ``auto``).

    ``details=False`` is for a caller that never looks at calls' arguments, results or error flags
    (a bulk case whose steps name none): readers may then leave arguments as recorded (JSON text,
    undecoded) and results unpaired, which is most of reading a Chat Completions history. What
    could raise is still done, so no error changes either.

    Raises:
        SourceError: the format is unknown, the document does not fit it, or (``auto``) no format
            fits; the message names ``origin``, and when detecting ``reasons`` says why each format
            does not fit.

    ``traces`` (``auto``, ``merge``, ``one``) is how an OpenTelemetry document of several traces is
    read.
    """
    return _read(doc, format, origin, _SUITE_FIX, _SAVED_HINT, SUITE, details, traces)


def load_trajectory(
    path: str | Path,
    *,
    format: str = "auto",
    select: str | None = None,
    record: int | None = None,
    spelling: Spelling = SUITE,
    thread: str | None = None,
    checkpoint: str | None = None,
    traces: str = "auto",
) -> Trajectory:
    """Load a source file (see :func:`load_document`) and read it as ``format``; errors spell the
    options as a suite (``SUITE``) or ``trajrun show`` (``SHOW``) names them."""
    doc = load_document(
        path,
        select=select,
        record=record,
        spelling=spelling,
        thread=thread,
        checkpoint=checkpoint,
        shared=True,
    )
    whole_jsonl = record is None and select is None and document_kind(Path(path))[0] == "jsonl"
    hint = (
        "add -v to see why each format does not fit"
        if spelling.flags
        else _show_hint(path, select, record)
    )
    return _read(doc, format, str(path), _fix(spelling, whole_jsonl), hint, spelling, traces=traces)


def _show_hint(path: str | Path, select: str | None, record: int | None) -> str:
    """How to see why no format fits a file: the ``trajrun show`` command for it, with ``-v``."""
    command = ["trajrun", "show", str(path), *(["--select", select] if select is not None else []),
               *(["--record", str(record)] if record is not None else []), "-v"]  # fmt: skip
    return f"run `{shlex.join(command)}` to see why each format does not fit"


def _read(
    doc: Any,
    format: str,
    origin: str,
    fix: str,
    hint: str,
    spelling: Spelling,
    details: bool = True,
    traces: str = "auto",
) -> Trajectory:
    """Read as ``format``; ``fix`` and ``hint`` end the message when no format fits."""
    if traces not in TRACE_RULES:
        raise SourceError(
            f"unknown traces {traces!r}; use one of: {', '.join(TRACE_RULES)}", origin
        )
    readers = _READERS
    if traces != "auto":  # the option of the one format that reads traces
        readers = {**_READERS, "otel": functools.partial(_READERS["otel"], traces=traces)}
    try:
        return _known(_read_as(doc, format, origin, fix, hint, spelling, details, readers))
    except TooDeep as exc:
        raise SourceError(exc.message, origin) from None


def _known(run: Trajectory) -> Trajectory:
    """``run``, its format the reader's own when it names no reader: trajrun's own shape records
    where a run came from, and keeps that only when it is a format trajrun reads."""
    return run if run.format in _READERS else dataclasses.replace(run, format=_RECORDING)


def _read_as(
    doc: Any,
    format: str,
    origin: str,
    fix: str,
    hint: str,
    spelling: Spelling,
    details: bool = True,
    readers: dict[str, Read] = _READERS,
) -> Trajectory:
    """Read as ``format`` with ``readers`` (by format); ``_read`` names the source in a
    ``TooDeep``."""
    if format == "auto":
        return _detect(doc, origin, fix, hint, details, readers)
    reader = readers.get(format)
    if reader is None:
        near = difflib.get_close_matches(format, (*FORMATS, "auto"), n=1)
        suggestion = (
            f"did you mean {near[0]!r}?" if near else f"use one of: auto, {', '.join(FORMATS)}"
        )
        raise SourceError(f"unknown format {format!r}; {suggestion}", origin)
    try:
        run = reader(_messages_of(doc) if format in _MESSAGE_FORMATS else doc, details=details)
    except NotOneRun as exc:
        raise SourceError(exc.reason, origin) from None
    except NotThisFormat as exc:
        raise SourceError(
            f"expected {_article(format)} {format} document, found {describe(doc)}: "
            f"{exc.reason}; check the format, or use {spelling.given('format', 'auto')}",
            origin,
        ) from None
    if not run.calls:
        _check_no_calls(doc, format, origin, spelling, readers)
    return run


def _check_no_calls(
    doc: Any, format: str, origin: str, spelling: Spelling, readers: dict[str, Read]
) -> None:
    """Raise when ``format`` read no call but detection reads some as another format: a forced
    format that fits loosely (``openai`` reads an Anthropic history's text, not its ``tool_use``
    blocks) is a mistake, not an empty run. Only a run without calls pays for detecting."""
    try:
        fits = _known(_detect(doc, origin, "", "", False, readers))
    except SourceError:  # a TooDeep is one too
        return
    if fits.format == format or not fits.calls:
        return
    count = len(fits.calls)
    messages = _messages_of(doc)
    if isinstance(messages, list) and len(messages) > 1:
        read, reads = f"these {len(messages)} messages", "they read"
    else:
        read = "this message" if isinstance(messages, list) else "this document"
        reads = "it reads"
    calls = f"{count} call{'s' if count > 1 else ''}"
    use = spelling.given("format", fits.format)
    raise SourceError(
        f"format {format} read no tool call from {read}, but {reads} as "
        f"{fits.format} ({calls}): use {use}, or auto",
        origin,
    )


def _article(word: str) -> str:
    """``an`` before a format name said with a vowel first (``an openai``, ``an otel``), else
    ``a``."""
    return "an" if word[:1] in "aeiou" else "a"


def _messages_of(doc: Any) -> Any:
    """A mapping with a ``messages`` list stands for that list (a request body, a saved chat)."""
    if isinstance(doc, dict) and isinstance(doc.get("messages"), list):
        return doc["messages"]
    return doc


def _detect(
    doc: Any,
    origin: str,
    fix: str,
    hint: str,
    details: bool = True,
    readers: dict[str, Read] = _READERS,
) -> Trajectory:
    """Try every format in order, skipping those whose refusal test is sure; the first that fits
    wins. When none fits, ``_try_each`` asks them all again for their reasons (one line, each
    reason on the error)."""
    messages = _messages_of(doc)
    for name, reads_messages, refuses in _ORDER:
        given = messages if reads_messages else doc
        if refuses(given):
            continue
        try:
            return readers[name](given, auto=True, details=details)
        except NotOneRun as exc:
            raise SourceError(exc.reason, origin) from None
        except NotThisFormat:
            pass
    return _try_each(doc, origin, fix, hint, details, readers)


def _try_each(
    doc: Any,
    origin: str,
    fix: str,
    hint: str,
    details: bool = True,
    readers: dict[str, Read] = _READERS,
) -> Trajectory:
    """Read ``doc`` with each of ``readers`` in order, collecting why each one refuses it."""
    reasons = []
    messages = _messages_of(doc)
    for name, reads_messages, _ in _ORDER:
        try:
            return readers[name](messages if reads_messages else doc, auto=True, details=details)
        except NotOneRun as exc:
            raise SourceError(exc.reason, origin) from None
        except NotThisFormat as exc:
            reasons.append(f"{name}: {exc.reason}")
    raise SourceError(
        f"cannot tell the format of {describe(doc)}: none of {', '.join(FORMATS)} fits; "
        f"{fix} ({hint})",
        origin,
        tuple(reasons),
    )
