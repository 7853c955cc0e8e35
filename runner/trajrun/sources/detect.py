"""Format detection and reading: a parsed document (or a file) into a :class:`~trajrun.trajectory.Trajectory`.

Formats are tried in the contract's order, first fit wins; between ``trajectory`` and
``anthropic`` a mapping with a ``messages`` list is read as that list. Each reader's ``read``
raises ``NotThisFormat`` with a short reason, so detection never parses twice. An OpenTelemetry
trace that is not one run (several traces, no LLM or tool span) stops detection with its own reason.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import SourceError
from ..trajectory import Trajectory
from . import anthropic, bedrock, gemini, graph, langchain, langgraph, native, openai, openai_responses, otel
from .builder import NotThisFormat, describe
from .documents import load_document
from .formats import FORMATS

Reader = Callable[..., Trajectory]
_READERS: dict[str, Reader] = dict(zip(FORMATS, (
    otel.read, graph.read, langgraph.read, native.read, anthropic.read, gemini.read, bedrock.read,
    openai_responses.read, langchain.read, openai.read,
)))  # fmt: skip
_MESSAGE_FORMATS = frozenset(FORMATS[FORMATS.index("anthropic") :])


def read_trajectory(doc: Any, format: str = "auto", *, origin: str = "<inline>") -> Trajectory:
    """Read a parsed document as ``format`` (or detect it with ``auto``).

    Raises:
        SourceError: the format is unknown, the document does not fit it, or (``auto``) no format fits;
            the message names ``origin`` and, when detecting, every format tried and why it did not fit.
    """
    if format == "auto":
        return _detect(doc, origin)
    reader = _READERS.get(format)
    if reader is None:
        near = difflib.get_close_matches(format, (*FORMATS, "auto"), n=1)
        hint = f"did you mean {near[0]!r}?" if near else f"use one of: auto, {', '.join(FORMATS)}"
        raise SourceError(f"unknown format {format!r}; {hint}", origin)
    try:
        return reader(_messages_of(doc) if format in _MESSAGE_FORMATS else doc)
    except otel.NotOneRun as exc:
        raise SourceError(exc.reason, origin) from None
    except NotThisFormat as exc:
        raise SourceError(f"expected a {format} document, found {describe(doc)}: {exc.reason}; check the "
                          "format, or use format: auto", origin) from None  # fmt: skip


def load_trajectory(
    path: str | Path, *, format: str = "auto", select: str | None = None, record: int | None = None
) -> Trajectory:
    """Load a source file (see :func:`load_document`) and read it as ``format``."""
    doc = load_document(path, select=select, record=record)
    return read_trajectory(doc, format, origin=str(path))


def _messages_of(doc: Any) -> Any:
    """A mapping with a ``messages`` list stands for that list (a request body, a saved chat)."""
    if isinstance(doc, dict) and isinstance(doc.get("messages"), list):
        return doc["messages"]
    return doc


def _detect(doc: Any, origin: str) -> Trajectory:
    """Try every format in order; the first that fits wins."""
    reasons = []
    current = doc
    for name, reader in _READERS.items():
        if name in _MESSAGE_FORMATS:
            current = _messages_of(doc)
        try:
            return reader(current, auto=True)
        except otel.NotOneRun as exc:
            raise SourceError(exc.reason, origin) from None
        except NotThisFormat as exc:
            reasons.append(f"  {name}: {exc.reason}")
    tried = "\n".join(reasons)
    raise SourceError(f"cannot tell the format of {describe(doc)}; tried:\n{tried}\nname the format with "
                      "'format:', or point 'select:' at the message list", origin)  # fmt: skip
