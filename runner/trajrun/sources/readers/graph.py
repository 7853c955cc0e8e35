"""agentevals GraphTrajectory (``{steps, results, inputs}``) and its extracted ``{inputs, outputs}``
wrapper.

A graph trajectory records node names per turn, not tool calls: the run has no calls, one turn per
entry of ``steps``, and its answer is the last assistant text among ``results``.
"""

from __future__ import annotations

from typing import Any

from ...trajectory import Trajectory
from ..builder import NotThisFormat, text_of

FORMAT = "graph"
READS = "document"
RANK = 20


def refuses(doc: Any) -> bool:
    """Whether ``read(doc)`` surely refuses: no ``steps`` list, in ``outputs`` or at the top.
    Detection skips it."""
    inner = (
        doc["outputs"] if isinstance(doc, dict) and isinstance(doc.get("outputs"), dict) else doc
    )
    return not isinstance(inner, dict) or not isinstance(inner.get("steps"), list)


def read(doc: Any, *, auto: bool = False, details: bool = True) -> Trajectory:
    """Read a GraphTrajectory into node lists per turn."""
    if isinstance(doc, dict) and isinstance(doc.get("outputs"), dict):
        doc = doc["outputs"]
    steps = doc.get("steps") if isinstance(doc, dict) else None
    if not isinstance(steps, list) or not all(isinstance(step, list) for step in steps):
        raise NotThisFormat("no 'steps' list of node-name lists")
    if not all(isinstance(node, str) for step in steps for node in step):
        raise NotThisFormat("'steps' holds a node name that is not a string")
    nodes = tuple(tuple(step) for step in steps)
    return Trajectory((), len(nodes), None, _answer(doc.get("results")), nodes, FORMAT)


def _answer(results: Any) -> str | None:
    """The text of the last assistant message in ``results`` (each ``{messages: [...]}`` or
    ``{}``)."""
    for result in reversed(results if isinstance(results, list) else []):
        messages = result.get("messages") if isinstance(result, dict) else None
        for message in reversed(messages if isinstance(messages, list) else []):
            if isinstance(message, dict) and message.get("role", message.get("type")) in (
                "assistant",
                "ai",
            ):
                text = text_of(message.get("content"))
                if text:
                    return text
    return None
