"""What every importer shares: imported cases, the placeholder source, the suite file text, the
report.

A suite's strings are Jinja2 templates, so every string the importer writes that holds ``{{``,
``{%`` or ``{#`` is escaped to render back as written. Keys and values go through the YAML dumper's
quoting; the header comment's lines have their line breaks and control characters escaped, so no
input can start a line of the suite. The suite text is then loaded once, so an importer can never
hand out a file that does not load.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import SuiteErrors, TrajrunError, inline
from ..files import atomic_write
from ..suites.golden import dump_yaml, recorded_step
from ..suites.load import load_suite
from ..trajectory import ToolCall

PLACEHOLDER = "my_agent.evals:run"
"""The ``python:`` callable written when the user names neither ``--python`` nor ``--source``."""
_TEMPLATE_MARKERS = ("{{", "{%", "{#")
SHOWN = 5
"""The cases (or unreadable lines) the report names of each kind; the rest are counted."""
_SUFFIXES = (".evalset.json", ".test.json", ".jsonl", ".ndjson", ".json")


class ImportProblem(TrajrunError):
    """An input file that cannot be imported at all: names the file, what was expected and found,
    and a fix."""


@dataclass(frozen=True, slots=True)
class SourceChoice:
    """Where the imported cases' runs come from: a ``python`` callable (``args`` come from each
    case's inputs) or one ``file`` path for all (``{case}`` in it replaced by each case's name),
    relative to ``folder``."""

    python: str = PLACEHOLDER
    file: str | None = None

    def render(self, case: str, args: Mapping[str, Any], folder: Path | None) -> Any:
        """The ``source:`` value of one case."""
        if self.file is None:
            return {"python": self.python, "args": dict(args)} if args else {"python": self.python}
        path = self.file.replace("{case}", file_safe(case))
        if folder is not None and not os.path.isabs(path):
            path = os.path.relpath(os.path.abspath(path), os.path.abspath(folder))
        return Path(path).as_posix()


def source_choice(python: str | None, file: str | None) -> SourceChoice:
    """``--python MODULE:FUNC`` or ``--source PATH`` (not both), else the placeholder callable."""
    if python and file:
        raise ImportProblem("give --python or --source, not both: a case reads one source")
    if python is not None and python.count(":") != 1:
        raise ImportProblem(f"--python must be 'module:function', found {python!r}")
    return SourceChoice(python or PLACEHOLDER, file)


@dataclass
class Imported:
    """One suite made from one input file: its cases (as YAML-ready maps) and what could not be
    carried over."""

    name: str
    origin: Path
    header: list[str]
    defaults: dict[str, Any]
    cases: list[dict[str, Any]] = field(default_factory=list)
    dropped: dict[str, list[str]] = field(default_factory=dict)
    unreadable: list[tuple[int, str]] = field(default_factory=list)

    def drop(self, what: str, case: str) -> None:
        """Note that ``what`` could not be carried over for ``case``."""
        self.dropped.setdefault(what, []).append(case)

    def report(self) -> list[str]:
        """The report for stderr: each line of the input that could not be read (the first few),
        then one line per kind of thing not carried over, with the cases it concerns (names and
        paths on one line each)."""
        lines = [
            f"{self.origin}:{line}: left out: {reason}" for line, reason in self.unreadable[:SHOWN]
        ]
        if len(self.unreadable) > SHOWN:
            more = len(self.unreadable) - SHOWN
            lines.append(f"{self.origin}: left out: {more} more lines that could not be read")
        for what, cases in self.dropped.items():
            shown = ", ".join(cases[:SHOWN]) + (
                f" and {len(cases) - SHOWN} more" if len(cases) > SHOWN else ""
            )
            lines.append(
                f"{self.origin}: not carried over: {what} "
                f"({len(cases)} case{'s' if len(cases) != 1 else ''}: {shown})"
            )
        return [inline(line) for line in lines]


def steps_of_calls(calls: Sequence[ToolCall]) -> list[dict[str, Any]]:
    """Recorded calls as steps that accept exactly those calls (arguments literal, ``$`` keys
    escaped)."""
    return [recorded_step(call.name, call.args) for call in calls]


def unique_name(wanted: str, taken: set[str]) -> str:
    """``wanted``, or ``wanted (2)``… when an earlier case already has that name."""
    name, n = wanted, 1
    while name in taken:
        n += 1
        name = f"{wanted} ({n})"
    taken.add(name)
    return name


def suite_stem(path: Path) -> str:
    """A suite file's stem from an input file's name: ``weather.evalset.json`` -> ``weather``."""
    name = path.name
    for suffix in _SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return path.stem or "imported"


def write_suites(
    suites: Sequence[Imported], output: Path | None, force: bool = False
) -> list[tuple[str, str]]:
    """Each suite's text and where it goes: ``(path, text)`` under ``output``, or ``("-", text)``
    for stdout (one suite only). Refuses to overwrite an existing file unless ``force``; writes
    nothing on a refusal."""
    texts = [suite_text(s) for s in suites]
    if output is None:
        if len(suites) != 1:
            raise ImportProblem(
                f"{len(suites)} files to import: give -o DIR to write one suite file each"
            )
        return [("-", texts[0])]
    targets = [output / f"{suite_stem(s.origin)}.suite.yaml" for s in suites]
    clash = next((t for i, t in enumerate(targets) if t in targets[:i]), None)
    if clash is not None:
        raise ImportProblem(
            f"two input files would both write {clash}; import them into different folders"
        )
    existing = [t for t in targets if os.path.lexists(t)]
    if existing and not force:
        link = " (a symlink)" if existing[0].is_symlink() else ""
        raise ImportProblem(
            f"{existing[0]} exists{link}; pass --force to replace it, or choose another -o folder"
        )
    for target, text in zip(targets, texts, strict=True):
        _write_suite(target, text)
    return [(str(t), text) for t, text in zip(targets, texts, strict=True)]


def _write_suite(target: Path, text: str) -> None:
    """Write one suite file at ``target``, in place of a symlink there."""
    data = text.encode("utf-8")
    _unlink_symlink(target)
    atomic_write(target, lambda handle: handle.writelines([data]), "suite file")


def _unlink_symlink(target: Path) -> None:
    """Remove ``target`` if it is a symlink, so the suite replaces the link: written through it, the
    suite would overwrite whatever file the link names, inside the output folder or not."""
    try:
        if target.is_symlink():
            target.unlink()
    except OSError as exc:
        raise ImportProblem(
            f"{target} is a symlink that cannot be replaced: {exc.strerror or exc}; remove it, or "
            "choose another -o folder"
        ) from None


def suite_text(imported: Imported) -> str:
    """The suite file's text: the header comment, then ``suite``, ``defaults`` and ``cases``;
    checked by loading it."""
    data = {"suite": imported.name, "defaults": imported.defaults, "cases": imported.cases}
    body = dump_yaml(_escape_templates(data))
    text = "".join(f"# {inline(line)}".rstrip() + "\n" for line in imported.header) + body
    _check_loads(text, imported.origin)
    return text


def _escape_templates(value: Any) -> Any:
    """Every string Jinja2 would read as a template, written to render as itself (keys are never
    rendered)."""
    if isinstance(value, dict):
        return {key: _escape_templates(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_escape_templates(item) for item in value]
    if isinstance(value, str) and any(marker in value for marker in _TEMPLATE_MARKERS):
        if "endraw" in value:
            return "{{ " + json.dumps(value, ensure_ascii=False) + " }}"
        return "{% raw %}" + value + "{% endraw %}"
    return value


def _check_loads(text: str, origin: Path) -> None:
    """Load the suite text as ``trajrun run`` would; a failure is a bug of the importer, said as
    such."""
    with tempfile.TemporaryDirectory(prefix="trajrun-import-") as folder:
        path = Path(folder) / "imported.suite.yaml"
        path.write_text(text, encoding="utf-8")
        try:
            load_suite(path)
        except SuiteErrors as exc:
            raise ImportProblem(
                f"{origin}: the suite written from this file does not load (a trajrun bug; please "
                f"report it):\n{exc}"
            ) from None


_SLUG = re.compile(r"[^A-Za-z0-9._-]+")


def file_safe(name: str) -> str:
    """A name usable in a file name (``{case}`` in ``--source``)."""
    return _SLUG.sub("_", name).strip("_") or "case"
