"""The examples in README.md and specs/suite-format.md load and say what trajrun does, so the docs cannot drift.

Every fenced ```yaml block is checked. What a block is comes from a marker: an HTML comment (invisible
on GitHub) on the line right before the fence, or before a table.

* No marker: a **whole suite**. It is written to ``<tmp>/example.suite.yaml`` and loaded with
  ``trajrun.load_suite``. Source files need not exist (loading does not read them).
* ``<!-- fragment: KIND -->``: a **piece of a suite**, wrapped into a minimal suite and loaded. KIND is

  ``case``    one case (a map); ``source: run.json`` is the default when it names none
  ``cases``   a list of cases; the same default source
  ``steps``   a list of steps: the ``steps`` of one case
  ``tools``   a ``tools`` map: the ``tools`` of one case (with ``steps: []``)
  ``keys``    case keys (a map): merged into one case, which gets ``source`` and ``never: []`` as defaults
  ``golden``  a golden file (a list of steps): loaded as ``golden:`` files are
  ``not-trajrun``  YAML for another tool (a CI workflow): it only has to parse

* ``<!-- load-error -->``: a whole suite that must **fail to load**. The ```text block right after
  it holds the exact error lines; their first line names the file (``weather.suite.yaml:5:5: ...``),
  so the suite is written under that name and loaded from its folder.
* ``<!-- example-run: NAME -->`` before a ```json block: a run in trajrun's own format (what
  ``trajrun show -o json`` prints), which tables below refer to by NAME.
* ``<!-- check-table: mode=MODE run=NAME -->`` before a markdown table: each row's first cell is a
  YAML flow list of steps in backticks and its second cell says **passes** or **fails**; the steps
  are loaded in a case with that mode and evaluated against run NAME, and the verdict must agree.

Every ```console block in specs/ holds real output: each ``$ trajrun ...`` line is run from the
repository root (in process, colour off) and must print exactly the lines below it, except the
run time in a summary line (``in 0.00s``).

A block that reads ``env.NAME`` gets NAME set to a dummy value when it is unset. Examples of
``parallel:`` groups are skipped while loading them fails the way it does without parallel-group
support (the step read as a tool named ``parallel`` whose arguments are a list).
"""

from __future__ import annotations

import gc
import json
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import trajrun
import yaml
from click.testing import CliRunner
from trajrun.cli import main as trajrun_cli
from trajrun.suites.golden import load_golden

ROOT = Path(__file__).resolve().parent.parent
DOCS = (ROOT / "README.md", ROOT / "specs" / "suite-format.md")
STUB_SOURCE = "run.json"
KINDS = ("case", "cases", "steps", "tools", "keys", "golden", "not-trajrun")
NO_PARALLEL = "arguments of 'parallel' must be"
"""How loading a `parallel:` step fails where parallel groups are not supported (a tool named `parallel`)."""
SKIP_PARALLEL = "parallel groups (`parallel:` steps) are not supported by this trajrun yet"
_MARKER = re.compile(r"^<!--\s*(?P<what>[\w-]+)(?::\s*(?P<arg>.*?))?\s*-->$")
_FENCE = re.compile(r"^```(?P<lang>[\w-]*)\s*$")
_ENV = re.compile(r"\benv\.([A-Za-z_]\w*)\b(?!\s*\()")
_TIME = re.compile(r" in \d+\.\d+s$")


@dataclass(frozen=True)
class Block:
    """One fenced block of a document: its language, text, marker and where it starts."""

    doc: str
    line: int
    lang: str
    text: str
    marker: str | None
    arg: str | None
    after: Block | None = None

    @property
    def label(self) -> str:
        """``suite-format.md:120`` for test ids and messages."""
        return f"{self.doc}:{self.line}"


@dataclass(frozen=True)
class Table:
    """A table marked ``check-table``: its mode, run name and rows (steps text, passes?)."""

    doc: str
    line: int
    mode: str
    run: str
    rows: tuple[tuple[int, str, bool], ...]

    @property
    def label(self) -> str:
        """``suite-format.md:120``."""
        return f"{self.doc}:{self.line}"


def _marker(lines: list[str], index: int) -> tuple[str | None, str | None]:
    """The marker on the line before ``index`` (the fence or table start), if any."""
    if index == 0:
        return None, None
    found = _MARKER.match(lines[index - 1].strip())
    return (found["what"], found["arg"]) if found else (None, None)


def parse(path: Path) -> tuple[list[Block], list[Table]]:
    """Every fenced block and every checked table of one markdown file."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    tables: list[Table] = []
    i = 0
    while i < len(lines):
        fence = _FENCE.match(lines[i])
        if fence:
            end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
            what, arg = _marker(lines, i)
            blocks.append(Block(path.name, i + 1, fence["lang"], "\n".join(lines[i + 1 : end]) + "\n", what, arg))
            i = end + 1
            continue
        what, arg = _marker(lines, i)
        if lines[i].startswith("|") and what == "check-table":
            options = dict(part.split("=", 1) for part in (arg or "").split())
            rows = []
            j = i + 2  # after the header and the separator
            while j < len(lines) and lines[j].startswith("|"):
                cells = [c.strip() for c in lines[j].strip().strip("|").split(" | ")]
                steps, verdict = cells[0].strip("`"), cells[1]
                assert verdict in ("**passes**", "**fails**"), f"{path.name}:{j + 1}: verdict {verdict!r}"
                rows.append((j + 1, steps, verdict == "**passes**"))
                j += 1
            tables.append(Table(path.name, i + 1, options["mode"], options["run"], tuple(rows)))
            i = j
            continue
        i += 1
    # a load-error block carries the text block that follows it
    paired = []
    for k, block in enumerate(blocks):
        if block.marker == "load-error":
            block = Block(block.doc, block.line, block.lang, block.text, block.marker, block.arg,
                          blocks[k + 1] if k + 1 < len(blocks) else None)
        paired.append(block)
    return paired, tables


PARSED = {path.name: parse(path) for path in DOCS}
BLOCKS = [b for blocks, _ in PARSED.values() for b in blocks]
YAML_BLOCKS = [b for b in BLOCKS if b.lang == "yaml"]
TABLES = [t for _, tables in PARSED.values() for t in tables]
RUNS = {b.arg: b.text for b in BLOCKS if b.marker == "example-run"}
CONSOLE_BLOCKS = [b for b in PARSED["suite-format.md"][0] if b.lang == "console"]


# -- wrapping ------------------------------------------------------------------------------------


def _indent(text: str, spaces: int) -> str:
    """Every non-blank line of ``text`` indented by ``spaces``."""
    pad = " " * spaces
    return "".join(pad + line if line.strip() else line for line in text.splitlines(keepends=True))


ONE_CASE = f"cases:\n  - name: doc example\n    source: {STUB_SOURCE}\n"
WITH_DEFAULTS = f"defaults: {{source: {STUB_SOURCE}}}\ncases:\n"


def wrap(kind: str, text: str) -> str:
    """A whole suite around a fragment of ``kind`` (the fragment's text kept exactly, only indented)."""
    if kind == "case":
        return f"{WITH_DEFAULTS}  -\n{_indent(text, 4)}"
    if kind == "cases":
        return WITH_DEFAULTS + _indent(text, 2)
    if kind == "steps":
        return f"{ONE_CASE}    steps:\n{_indent(text, 6)}"
    if kind == "tools":
        return f"{ONE_CASE}    steps: []\n    tools:\n{_indent(text, 6)}"
    if kind == "keys":
        return f"defaults: {{source: {STUB_SOURCE}, never: []}}\ncases:\n  - name: doc example\n{_indent(text, 4)}"
    raise AssertionError(f"unknown fragment kind {kind!r}; use one of {', '.join(KINDS)}")


def _set_env(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Give every ``env.NAME`` the block reads a value, so rendering does not fail on an unset variable."""
    for name in _ENV.findall(text):
        if name != "get":
            monkeypatch.setenv(name, f"doc-{name.lower()}")


def load(text: str, folder: Path, name: str = "example.suite.yaml") -> trajrun.Suite:
    """Write a suite into ``folder`` (the current folder) and load it by its name, as error messages show it."""
    (folder / name).write_text(text, encoding="utf-8")
    return trajrun.load_suite(name)


def _skip_if_no_parallel(text: str, error: Exception) -> None:
    """Skip an example of parallel groups when this trajrun does not support them yet."""
    if "parallel:" in text and NO_PARALLEL in str(error):
        pytest.skip(SKIP_PARALLEL)


# -- the tests -----------------------------------------------------------------------------------


def test_docs_have_examples() -> None:
    """Both documents are parsed: yaml blocks, runs and checked tables are found."""
    assert sum(b.doc == "README.md" for b in YAML_BLOCKS) >= 2
    assert sum(b.doc == "suite-format.md" for b in YAML_BLOCKS) >= 30
    assert {"three-turns", "one-turn", "two-turns"} <= RUNS.keys()
    assert {t.mode for t in TABLES} == {"strict", "unordered", "subset", "superset", "in_order"}


@pytest.mark.parametrize("block", YAML_BLOCKS, ids=[b.label for b in YAML_BLOCKS])
def test_yaml_block_loads(block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A whole suite or a marked fragment loads; a load-error block fails with exactly the errors shown."""
    _set_env(block.text, monkeypatch)
    monkeypatch.chdir(tmp_path)
    if block.marker == "load-error":
        _check_load_error(block, tmp_path)
        return
    if block.marker not in (None, "fragment"):
        pytest.fail(f"{block.label}: unknown marker {block.marker!r} before a yaml block")
    kind = block.arg if block.marker == "fragment" else "suite"
    if kind == "not-trajrun":
        yaml.safe_load(block.text)
        return
    if kind == "golden":
        (tmp_path / "golden.yaml").write_text(block.text, encoding="utf-8")
        assert load_golden(tmp_path / "golden.yaml")
        return
    text = block.text if kind == "suite" else wrap(kind, block.text)
    try:
        suite = load(text, tmp_path)
    except trajrun.SuiteErrors as exc:
        _skip_if_no_parallel(block.text, exc)
        hint = f"\n(a fragment? mark it <!-- fragment: KIND -->, KIND one of {', '.join(KINDS)})"
        hint = hint if kind == "suite" else ""
        pytest.fail(f"{block.label}: the {kind} example does not load:\n{exc}{hint}")
    assert suite.cases


def _check_load_error(block: Block, folder: Path) -> None:
    """The suite fails to load, and its errors are the text block's lines exactly."""
    shown = block.after
    assert shown is not None and shown.lang == "text", f"{block.label}: a load-error block needs a text block after it"
    expected = shown.text.strip()
    name = expected.split(":", 1)[0]
    with pytest.raises(trajrun.SuiteErrors) as caught:
        load(block.text, folder, name)
    _skip_if_no_parallel(block.text, caught.value)
    assert str(caught.value) == expected


@pytest.mark.parametrize("table", TABLES, ids=[t.label for t in TABLES])
def test_mode_table(table: Table, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each row of a checked table passes or fails as the table says."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / STUB_SOURCE).write_text(RUNS[table.run], encoding="utf-8")
    run = trajrun.load_trajectory(tmp_path / STUB_SOURCE)
    wrong = []
    for line, steps, passes in table.rows:
        text = f"cases:\n  - name: row\n    source: {STUB_SOURCE}\n    mode: {table.mode}\n    steps: {steps}\n"
        try:
            suite = load(text, tmp_path)
        except trajrun.SuiteErrors as exc:
            _skip_if_no_parallel(text, exc)
            raise
        evaluation = trajrun.evaluate(suite.cases[0].expect, run)
        assert not evaluation.errors, f"{table.doc}:{line}: {evaluation.message()}"
        if evaluation.passed != passes:
            wrong.append(f"{table.doc}:{line}: {steps} under {table.mode} on run {table.run!r}: "
                         f"the table says {'passes' if passes else 'fails'}, trajrun says {evaluation.message()}")
    assert not wrong, "\n".join(wrong)


def _commands(block: Block) -> list[tuple[str, list[str]]]:
    """The ``$ trajrun ...`` commands of a console block, each with the output lines shown below it."""
    found: list[tuple[str, list[str]]] = []
    for line in block.text.splitlines():
        if line.startswith("$ "):
            found.append((line[2:], []))
        else:
            assert found, f"{block.label}: a console block starts with a `$ trajrun ...` line"
            found[-1][1].append(line)
    return found


@pytest.mark.parametrize("block", CONSOLE_BLOCKS, ids=[b.label for b in CONSOLE_BLOCKS])
def test_console_block_is_real_output(block: Block, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each command of a console block prints exactly what the block shows (the run time aside)."""
    monkeypatch.chdir(ROOT)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setattr(sys, "path", list(sys.path))  # a run puts each suite's folder on the import path
    thresholds = gc.get_threshold()  # and `trajrun run` tunes the collector for its process
    try:
        _run_commands(block)
    finally:
        gc.set_threshold(*thresholds)


def _run_commands(block: Block) -> None:
    """Run each command of a console block in process and compare its output with the block's."""
    commands = _commands(block)
    assert commands, f"{block.label}: an empty console block"
    for command, shown in commands:
        words = shlex.split(command)
        assert words[0] == "trajrun", f"{block.label}: only trajrun commands are run, found {command!r}"
        result = CliRunner().invoke(trajrun_cli, words[1:], catch_exceptions=False)
        actual = [_TIME.sub(" in 0.00s", line.rstrip()) for line in result.output.rstrip("\n").splitlines()]
        expected = [_TIME.sub(" in 0.00s", line.rstrip()) for line in shown]
        assert actual == expected, f"{block.label}: `{command}` printed:\n" + "\n".join(actual)


def test_markers_sit_right_before_their_block() -> None:
    """A marker with a blank line (or anything) between it and its block would be ignored: refuse that."""
    for path in DOCS:
        lines = path.read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines[:-1], start=1):
            found = _MARKER.match(line.strip())
            if not found or found["what"] not in ("fragment", "load-error", "example-run", "check-table"):
                continue
            after = lines[number]
            wanted = "|" if found["what"] == "check-table" else "```"
            assert after.startswith(wanted), f"{path.name}:{number}: {line.strip()} must be right before its block"


def test_example_runs_are_trajectories() -> None:
    """Each example run reads as format `trajectory` (so a reader can save it and use it as a source)."""
    for name, text in RUNS.items():
        assert trajrun.read_trajectory(json.loads(text)).format == "trajectory", name
