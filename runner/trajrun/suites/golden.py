"""Golden files: a run's steps as YAML (what ``trajrun record`` prints) and reading them back as steps."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from ..errors import kind
from ..match.expectation import Step
from ..trajectory import Trajectory
from ..yaml_core import is_core_plain_str
from .document import raise_errors, read_document
from .expectation_keys import parse_steps


class _Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """A safe dumper (libyaml's emitter where present: every case's report dumps its steps) that also
    quotes strings YAML 1.2 core would read as something else (``1e3``, ``0o7``)."""


for _first, _pattern in (
    (list("-+0123456789."), r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?)$"),
    (list("0"), r"^0o[0-7]+$"),
):
    _Dumper.add_implicit_resolver("tag:yaml.org,2002:float", re.compile(_pattern), _first)


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    """Multi-line strings as literal blocks (``|``), which read best in a golden file."""
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)


_Dumper.add_representer(str, _text)


def dump_steps(traj: Trajectory) -> str:
    """The run's tool calls as a YAML list of steps, ready to save as a golden file or paste into a suite.

    Every call is ``- tool: {args}`` (``{}`` too); undecodable arguments become a long-form step with
    ``args`` the raw string; argument maps with ``$`` keys are wrapped in ``$literal``.
    """
    steps = [_step(call.name, call.args) for call in traj.calls]
    if not steps:
        return "[]\n"
    return yaml.dump(steps, Dumper=_Dumper, default_flow_style=False, sort_keys=False, allow_unicode=True,
                     width=100)


_PLAIN_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")


def compact_steps(traj: Trajectory) -> str:
    """The same steps one line per call (``- tool: {"json": "args"}``), for reports.

    JSON is YAML, so this pastes into a suite or golden file like ``dump_steps`` output, and it
    is fast enough to write for every case of a large run. Falls back to ``dump_steps`` for
    values JSON cannot hold (NaN, infinities).
    """
    try:
        lines = [_compact(call.name, call.args) for call in traj.calls]
    except ValueError:
        return dump_steps(traj)
    return "\n".join(lines) + "\n" if lines else "[]\n"


def _compact(name: str, args: dict[str, Any] | str) -> str:
    """One step as a single YAML line; names that YAML would misread are quoted."""
    key = name if _PLAIN_NAME.match(name) and is_core_plain_str(name) else json.dumps(name, ensure_ascii=False)
    if isinstance(args, str):
        return f"- {{name: {key}, args: {json.dumps(args, ensure_ascii=False)}}}"
    text = json.dumps(args, ensure_ascii=False, allow_nan=False)
    if '"$' in text:
        text = json.dumps(_escape(args), ensure_ascii=False)
    return f"- {key}: {text}"


def _step(name: str, args: dict[str, Any] | str) -> dict[str, Any]:
    """One step in the form that reads back as exactly this call."""
    if isinstance(args, str):
        return {"name": name, "args": args}
    return {name: _escape(args)}


def _escape(value: Any) -> Any:
    """Wrap every map that has a ``$`` key in ``$literal`` so it is compared as data, not as a matcher."""
    if isinstance(value, dict):
        if any(str(key).startswith("$") for key in value):
            return {"$literal": value}
        return {key: _escape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_escape(item) for item in value]
    return value


def load_golden(path: Path) -> tuple[Step, ...]:
    """The steps of a golden file (recorded or hand-written, matchers allowed). Raises ``SuiteErrors``."""

    loaded, ctx = read_document(Path(path), str(path))
    if not isinstance(loaded.data, list):
        ctx.error((), f"a golden file is a YAML list of steps (as `trajrun record` prints); found {kind(loaded.data)}")
    steps = parse_steps(loaded.data, (), ctx) if isinstance(loaded.data, list) else None
    raise_errors(ctx.errors)
    return steps or ()
