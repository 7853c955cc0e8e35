"""The names of the formats trajrun reads, in the order detection tries them (first fit wins)."""

from __future__ import annotations

FORMATS: tuple[str, ...] = (
    "otel", "graph", "langgraph", "trajectory", "anthropic", "gemini", "bedrock", "openai-responses", "langchain",
    "openai",
)
"""Every reader's name; a ``format:`` key takes one of these or ``auto``."""
