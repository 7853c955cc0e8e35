"""Golden files: a run's steps as YAML (what ``trajrun record`` prints) and reading them back as
steps."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from itertools import groupby
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import yaml

from ..errors import Location, SuiteError, SuiteErrors, TrajrunError, kind
from ..files import (
    PROJECT_MARKERS,
    FileWriteError,
    atomic_write,
    folder_lock,
    project_root,
    special_kind,
)
from ..match.expectation import Step
from ..trajectory import ToolCall, Trajectory
from ..yaml_core import is_core_plain_str
from .document import raise_errors, read_document
from .expectation_keys import parse_steps
from .step_names import not_a_name

T = TypeVar("T")


if TYPE_CHECKING:  # libyaml's dumper has the same interface; the stubs type it apart
    _SafeDumper = yaml.SafeDumper
else:
    _SafeDumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _Dumper(_SafeDumper):
    """A safe dumper (libyaml's emitter where present: every case's report dumps its steps) that
    also quotes strings YAML 1.2 core would read as something else (``1e3``, ``0o7``)."""


class _EscapingDumper(yaml.SafeDumper):
    """The same dumper on PyYAML's own emitter, for text libyaml cannot encode: it writes a lone
    surrogate (``"\\ud800"`` in a JSON source) as a ``\\uD800`` escape that reads back unchanged."""


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    """Multi-line strings as literal blocks (``|``), which read best in a golden file."""
    return dumper.represent_scalar(
        "tag:yaml.org,2002:str", value, style="|" if "\n" in value else None
    )


for _dumper in (_Dumper, _EscapingDumper):
    for _first, _pattern in (
        (list("-+0123456789."), r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?)$"),
        (list("0"), r"^0o[0-7]+$"),
    ):
        _dumper.add_implicit_resolver("tag:yaml.org,2002:float", re.compile(_pattern), _first)
    _dumper.add_representer(str, _text)


def dump_steps(traj: Trajectory, parallel: bool = True) -> str:
    """The run's tool calls as a YAML list of steps, ready to save as a golden file or paste into
    a suite.

    Every call is ``- tool: {args}`` (``{}`` too); undecodable arguments become a long-form step
    with ``args`` the raw string; argument maps with ``$`` keys are wrapped in ``$literal``. A
    failed call, and a call of a tool that failed elsewhere in the run, is a long-form step with
    ``error: true``/``false``; with ``parallel``, the calls of one turn are a ``parallel:`` group
    (strict and in_order read groups).
    """
    steps = [_step(call.name, call.args, error) for call, error in _flags(traj)]
    if parallel:
        steps = [
            {"parallel": group} if len(group) > 1 else group[0] for group in _by_turn(traj, steps)
        ]
    if not steps:
        return "[]\n"
    try:
        return _yaml_steps(steps, _Dumper)
    except UnicodeEncodeError:
        return _yaml_steps(steps, _EscapingDumper)


def _flags(traj: Trajectory) -> Iterator[tuple[ToolCall, bool | None]]:
    """Each call with the ``error`` its step pins: its flag where some call of its tool failed,
    else None (a successful retry is ``error: false``, so a run where the retry failed too no
    longer passes)."""
    failed = {call.name for call in traj.calls if call.error}
    return ((call, call.error if call.name in failed else None) for call in traj.calls)


def _by_turn(traj: Trajectory, items: list[T]) -> list[list[T]]:
    """``items`` (one per call) cut where the turn changes: the calls of one turn together."""
    return [
        [item for _, item in run]
        for _, run in groupby(zip(traj.calls, items, strict=True), key=lambda pair: pair[0].turn)
    ]


def _yaml_steps(steps: Any, dumper: type[yaml.SafeDumper]) -> str:
    """The steps as block-style YAML through ``dumper``."""
    return yaml.dump(
        steps,
        Dumper=dumper,
        default_flow_style=False,
        sort_keys=False,
        allow_unicode=True,
        width=100,
    )


def dump_yaml(data: Any) -> str:
    """Block-style YAML in the dialect of golden files (strings YAML 1.2 core would misread are
    quoted, multi-line strings are ``|`` blocks), for writers of suite files such as the
    importers."""
    try:
        return _yaml_steps(data, _Dumper)
    except UnicodeEncodeError:
        return _yaml_steps(data, _EscapingDumper)


def recorded_step(name: str, args: dict[str, Any] | str) -> dict[str, Any]:
    """One call as the step that reads back as exactly this call, in the form ``dump_steps``
    writes."""
    return _step(name, args)


_PLAIN_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*\Z")


def compact_steps(traj: Trajectory) -> str:
    """The same steps one line per call, or per turn of parallel calls
    (``- tool: {"json": "args"}``, ``- parallel: [{a: {}}, {b: {}}]``), for reports.

    JSON is YAML, so this pastes into a suite or golden file like ``dump_steps`` output, and it
    is fast enough to write for every case of a large run. Falls back to ``dump_steps`` for
    values JSON cannot hold (NaN, infinities).
    """
    try:
        items = [_compact(call.name, call.args, error) for call, error in _flags(traj)]
    except ValueError:
        return dump_steps(traj)
    lines = [
        f"- {group[0]}" if len(group) == 1 else _compact_group(group)
        for group in _by_turn(traj, items)
    ]
    return "\n".join(lines) + "\n" if lines else "[]\n"


def _compact_group(items: list[str]) -> str:
    """A parallel group on one line; each step a flow map (``{tool: {...}}``)."""
    flows = (item if item.startswith("{") else f"{{{item}}}" for item in items)
    return f"- parallel: [{', '.join(flows)}]"


def _compact(name: str, args: dict[str, Any] | str, error: bool | None = None) -> str:
    """One step as single-line YAML (``tool: {...}`` or a flow map); names that YAML would misread
    are quoted."""
    key = (
        name
        if _PLAIN_NAME.match(name) and is_core_plain_str(name)
        else json.dumps(name, ensure_ascii=False)
    )
    if isinstance(args, str):
        text = json.dumps(args, ensure_ascii=False)
    else:
        text = json.dumps(args, ensure_ascii=False, allow_nan=False)
        if '"$' in text:
            text = json.dumps(_escape(args), ensure_ascii=False)
    if error is not None:
        return f"{{name: {key}, args: {text}, error: {'true' if error else 'false'}}}"
    long_form = isinstance(args, str) or not_a_name(name)
    return f"{{name: {key}, args: {text}}}" if long_form else f"{key}: {text}"


def _step(name: str, args: dict[str, Any] | str, error: bool | None = None) -> dict[str, Any]:
    """One step in the form that reads back as exactly this call (with its error flag, when
    given)."""
    if error is not None:
        return {
            "name": name,
            "args": args if isinstance(args, str) else _escape(args),
            "error": error,
        }
    if isinstance(args, str):
        return {"name": name, "args": args}
    if not_a_name(name):  # a name with a space (CrewAI, LangChain Tool) reads only in the long form
        return {"name": name, "args": _escape(args)}
    return {name: _escape(args)}


def _escape(value: Any) -> Any:
    """Wrap every map that has a ``$`` key in ``$literal`` so it is compared as data, not as a
    matcher."""
    if isinstance(value, dict):
        if any(str(key).startswith("$") for key in value):
            return {"$literal": value}
        return {key: _escape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_escape(item) for item in value]
    return value


def load_golden(path: Path) -> tuple[Step, ...]:
    """The steps of a golden file (recorded or hand-written, matchers allowed). Raises
    ``SuiteErrors``."""
    if special := special_kind(path):
        # reading a FIFO or a device would hang or never end
        raise SuiteErrors(
            [
                SuiteError(
                    f"cannot read the golden file: it is {special}, not a regular file",
                    Location(str(path)),
                )
            ]
        )
    loaded, ctx = read_document(Path(path), str(path))
    if not isinstance(loaded.data, list):
        ctx.error(
            (),
            "a golden file is a YAML list of steps (as `trajrun record` prints); "
            f"found {kind(loaded.data)}",
        )
    steps = parse_steps(loaded.data, (), ctx) if isinstance(loaded.data, list) else None
    raise_errors(ctx.errors)
    return steps or ()


def golden_outside(
    path: Path, suite_folder: Path, golden_root: str | os.PathLike[str] | None = None
) -> str | None:
    """Why golden file ``path`` may not be used, or None when it resolves inside the suite's
    project.

    The project is ``project_root(suite_folder)``; ``golden_root`` (``trajrun run
    --golden-root``) adds one more allowed folder. Symlinks are resolved, so a link cannot lead a
    write elsewhere.
    """
    resolved = path.resolve()
    project = project_root(suite_folder)
    extra = golden_root
    roots = [project, *([Path(extra).resolve()] if extra else [])]
    if any(resolved.is_relative_to(root) for root in roots):
        return None
    widened = f" and outside --golden-root {roots[1]}" if len(roots) > 1 else ""
    return (
        f"golden file {path} resolves to {resolved}, outside the suite's project {project} "
        f"(the nearest folder up holding {' or '.join(PROJECT_MARKERS)}, else the suite's "
        f"folder){widened}; move the golden file into the project, or allow its folder with "
        "`trajrun run --golden-root DIR` (pytest: --trajrun-golden-root DIR)"
    )


def write_golden(path: Path, text: str) -> None:
    """Replace golden file ``path`` with ``text`` atomically, one writer at a time per folder.

    An exclusive lock on the folder is held around the atomic write, so concurrent
    ``--update-golden`` runs never read or leave half a file; on any failure the old file is kept.
    Raises ``TrajrunError`` naming the file.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with folder_lock(path.parent):
            atomic_write(
                path, lambda handle: handle.writelines([text.encode("utf-8")]), "golden file"
            )
    except OSError as exc:
        raise TrajrunError(
            f"cannot write golden file {path}: {exc.strerror or exc}; the old file is unchanged; "
            "check that the folder is writable and run --update-golden again"
        ) from None
    except FileWriteError as exc:
        raise TrajrunError(f"{exc}; run --update-golden again") from None
