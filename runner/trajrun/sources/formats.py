"""The names sources take: the formats trajrun reads, in the order detection tries them (first fit wins), and what
one record of a bulk source is. Apart from the readers, so naming them (the CLI's choices, suite keys) loads none."""

from __future__ import annotations

FORMATS: tuple[str, ...] = (
    "otel",
    "graph",
    "langgraph",
    "trajectory",
    "anthropic",
    "gemini",
    "bedrock",
    "openai-responses",
    "langchain",
    "openai",
)
"""Every reader's name; a ``format:`` key takes one of these or ``auto``."""
EACH: tuple[str, ...] = ("record", "file", "trace")
"""What one record of a bulk source (``each``) is: a JSONL line or list item, a whole file, an OpenTelemetry trace."""
TRACE_RULES: tuple[str, ...] = ("auto", "merge", "one")
"""How a document of several OpenTelemetry traces is read (a source's ``traces``): ``auto`` reads fragments of one
run as one run and refuses whole runs, ``merge`` reads every trace as one run, ``one`` refuses several traces."""
