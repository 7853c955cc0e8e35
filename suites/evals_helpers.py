"""Comparators for suites in this folder (the suite's folder is on sys.path, so `compare: evals_helpers:same_edit` finds them)."""

from __future__ import annotations

from typing import Any


def _squash(text: Any) -> Any:
    """Text with all whitespace removed, so formatting differences do not count; non-text as is."""
    return "".join(text.split()) if isinstance(text, str) else text


def same_edit(expected: dict[str, Any], actual: dict[str, Any]) -> bool:
    """Two edit_file calls agree when they touch the same path with the same old/new code, ignoring whitespace."""
    if not isinstance(actual, dict) or expected.get("path") != actual.get("path"):
        return False
    return all(_squash(expected.get(key)) == _squash(actual.get(key)) for key in ("old", "new"))
