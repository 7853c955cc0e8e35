"""Live sources: run a command or call a Python function, and take what it returns as the document."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import subprocess
import sys
import traceback
from pathlib import Path
from typing import Any, Mapping

from ..errors import SourceError
from ..yaml_core import YamlProblem, load_data

STDERR_TAIL = 20


def run_command(command: str, folder: Path, timeout: float) -> Any:
    """Run ``command`` through the shell in ``folder``; its stdout (JSON or YAML) is the document."""
    try:
        proc = subprocess.run(
            command, shell=True, cwd=folder, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise SourceError(f"timed out after {timeout:g}s{_tail(exc.stderr)}", command) from None
    if proc.returncode != 0:
        raise SourceError(f"exited with status {proc.returncode}{_tail(proc.stderr)}", command)
    return _parse_stdout(proc.stdout, command)


def _tail(stderr: str | bytes | None) -> str:
    """The last lines of stderr, indented, for a case error message."""
    if isinstance(stderr, bytes):
        stderr = stderr.decode("utf-8", "replace")
    lines = (stderr or "").rstrip().splitlines()[-STDERR_TAIL:]
    return "; stderr:\n  " + "\n  ".join(lines) if lines else " (stderr was empty)"


def _parse_stdout(text: str, command: str) -> Any:
    """Decode a command's stdout as JSON, falling back to YAML (trajrun's one dialect, as suites are read)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as json_error:
        try:
            return load_data(text)
        except YamlProblem:
            raise SourceError(
                f"stdout is neither JSON nor YAML ({json_error}); print the messages as JSON", command
            ) from None


def call_python(target: str, args: Mapping[str, Any], folder: Path) -> Any:
    """Import ``module:function`` with ``folder`` on ``sys.path`` and call it with ``args`` (awaited if async)."""
    module_name, _, attr = target.partition(":")
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
    try:
        func = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise SourceError(f"cannot import {target!r}: {exc}; check the module is on the suite's folder path", target) from None
    try:
        value = func(**args)
        return asyncio.run(value) if inspect.iscoroutine(value) else value
    except Exception as exc:  # noqa: BLE001 - a user's agent may raise anything
        last = traceback.format_exception_only(type(exc), exc)[-1].strip()
        raise SourceError(f"raised {last}", target) from None
