"""The reader registry: every format comes from its reader module, and a new module in
``sources/readers`` is a new format for detection, ``format:``, ``trajrun show`` and the schema."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from trajrun.sources import readers
from trajrun.sources.registry import DOCUMENT, FORMATS, MESSAGES, READERS
from trajrun.suites.schema import REGENERATE, schema_text, with_format_enum

ROOT = Path(__file__).parent.parent
SPEC = ROOT / "specs" / "suite-format.md"

LEDGER = '''
"""A throwaway format: {"ledger": [{"tool": NAME, "input": {...}}, ...]}, one turn an entry."""

from typing import Any

from trajrun.sources.builder import Builder, NotThisFormat
from trajrun.trajectory import Trajectory

FORMAT = "ledger"
READS = "document"
RANK = 45


def refuses(doc: Any) -> bool:
    return not isinstance(doc, dict) or not isinstance(doc.get("ledger"), list)


def read(doc: Any, *, auto: bool = False, details: bool = True) -> Trajectory:
    if refuses(doc):
        raise NotThisFormat("no 'ledger' list")
    builder = Builder(details)
    for entry in doc["ledger"]:
        builder.turn()
        builder.call(entry.get("tool"), entry.get("input"))
    return builder.finish(FORMAT)
'''
WITH_LEDGER = """
import sys

import trajrun.sources.readers as readers

readers.__path__.append(sys.argv[1])  # the folder holding ledger.py, as if it were in the package
if sys.argv[2] == "python":
    exec(sys.argv[3])
else:
    from trajrun.cli import main

    main(sys.argv[2:], prog_name="trajrun")
"""


def _with_ledger(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run trajrun (or ``python CODE``) in ``folder`` with ``ledger.py`` among the reader modules."""
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-c", WITH_LEDGER, str(folder / "modules"), *args], cwd=folder,
                          capture_output=True, text=True, env=env, timeout=120)  # fmt: skip


@pytest.fixture
def ledger(tmp_path: Path) -> Path:
    """A folder with the ``ledger`` reader module, a ledger run and suites reading it."""
    (tmp_path / "modules").mkdir()
    (tmp_path / "modules" / "ledger.py").write_text(LEDGER)
    run = {"ledger": [{"tool": "lookup", "input": {"id": 7}}, {"tool": "refund", "input": {}}]}
    (tmp_path / "run.json").write_text(json.dumps(run))
    for name, source in (("named", "{file: run.json, format: ledger}"), ("detected", "run.json")):
        (tmp_path / f"{name}.suite.yaml").write_text(textwrap.dedent(f"""\
            cases:
              - name: {name}
                source: {source}
                steps: [lookup, {{refund: {{}}}}]
            """))  # fmt: skip
    return tmp_path


def test_formats_are_the_reader_modules_in_rank_order() -> None:
    """FORMATS is every module of ``sources/readers`` that declares ``FORMAT``, by ``RANK``, and
    each declares the whole protocol."""
    folder = Path(readers.__file__).parent
    declared = [path.stem for path in folder.glob("*.py") if "\nFORMAT = " in path.read_text()]
    assert sorted(reader.__name__.rsplit(".", 1)[1] for reader in READERS) == sorted(declared)  # type: ignore[attr-defined]
    assert [reader.RANK for reader in READERS] == sorted({reader.RANK for reader in READERS})
    assert FORMATS == tuple(reader.FORMAT for reader in READERS)
    for reader in READERS:
        assert (
            reader.READS in (DOCUMENT, MESSAGES)
            and callable(reader.read)
            and callable(reader.refuses)
        )


def test_the_spec_table_lists_every_format_in_detection_order() -> None:
    """specs/suite-format.md's formats table has a row per reader, in detection order, saying what
    it reads: a new reader needs its row."""
    text = SPEC.read_text(encoding="utf-8")
    table = text[text.index("### Formats\n") :].split("\n\n")[1].splitlines()[2:]
    rows = [tuple(cell.strip().strip("`") for cell in row.split("|")[1:3]) for row in table]
    assert rows == [(reader.FORMAT, reader.READS) for reader in READERS], (
        "add a row for each new reader to the table under '### Formats' in specs/suite-format.md"
    )


def test_the_packaged_schema_lists_every_format() -> None:
    """The schema's ``format`` enum is the registry's; when a reader is added, this fails with the
    command that writes it."""
    text = schema_text()
    assert with_format_enum(text) == text, f"the schema's format enum is stale: run `{REGENERATE}`"
    enum = json.loads(text)["definitions"]["source"]["anyOf"][1]["properties"]["format"]["anyOf"][0]
    assert enum["enum"] == ["auto", *FORMATS]


def test_a_new_reader_module_is_a_new_format(ledger: Path) -> None:
    """A module in ``sources/readers`` and nothing else: ``format: ledger`` loads and reads, detection
    finds it, ``show`` names it, and the schema's enum, regenerated, takes it (the packaged one,
    not regenerated, is then stale, which the test above reports)."""
    named = _with_ledger(ledger, "run", "named.suite.yaml")
    assert named.returncode == 0, named.stdout + named.stderr
    detected = _with_ledger(ledger, "run", "detected.suite.yaml")
    assert detected.returncode == 0, detected.stdout + detected.stderr
    shown = _with_ledger(ledger, "show", "run.json")
    assert "format: ledger   calls: 2   turns: 2" in shown.stdout, shown.stdout + shown.stderr
    (ledger / "nothing.json").write_text('{"entries": []}')
    refused = _with_ledger(ledger, "show", "nothing.json", "-v")
    assert "ledger: no 'ledger' list" in refused.stdout + refused.stderr
    code = ("from trajrun.suites.schema import format_enum, schema_text, with_format_enum\n"
            "print(format_enum(), with_format_enum(schema_text()) == schema_text())")  # fmt: skip
    schema = _with_ledger(ledger, "python", code)
    assert schema.stdout.split("] ") == [
        f"{['auto', *FORMATS[:4], 'ledger', *FORMATS[4:]]}"[:-1],
        "False\n",
    ]


def test_without_the_module_there_is_no_ledger_format(ledger: Path) -> None:
    """The same suite without the module: ``format: ledger`` is a load error naming the formats."""
    proc = subprocess.run([sys.executable, "-m", "trajrun", "run", "named.suite.yaml"], cwd=ledger,
                          capture_output=True, text=True, env={**os.environ, "NO_COLOR": "1"},
                          timeout=120)  # fmt: skip
    assert proc.returncode == 2
    assert f"unknown format 'ledger'; expected one of auto, {', '.join(FORMATS)}" in proc.stdout
