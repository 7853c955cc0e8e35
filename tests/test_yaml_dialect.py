"""One YAML dialect: suites, YAML sources, live command output and golden files read ``on``, ``yes``,
``010`` and unquoted dates the same way (YAML 1.2 core: strings, the integer 10, a string date)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from trajrun import RunOptions, load_trajectory, run_paths, yaml_core
from trajrun.cli import main

CALL = "{name: set_state, arguments: {state: on, flag: yes, n: 010, day: 2025-06-12, ok: true}}"
EXPECTED = {"state": "on", "flag": "yes", "n": 10, "day": "2025-06-12", "ok": True}
RUN_YAML = f"""\
- role: user
  content: turn it on
- role: assistant
  tool_calls:
    - id: c1
      type: function
      function: {CALL}
"""
SUITE = """\
suite: dialect
cases:
  - name: {name}
    source: {source}
    steps:
      - set_state: {{state: on, flag: yes, n: 10, day: 2025-06-12, ok: true}}
"""


def _suite(folder: Path, name: str, source: str) -> Path:
    """A suite whose one case expects the call written the same way as the source writes it."""
    path = folder / f"{name}.suite.yaml"
    path.write_text(SUITE.format(name=name, source=source), encoding="utf-8")
    return path


def test_yaml_source_reads_like_the_suite(tmp_path: Path) -> None:
    """A YAML run file reads on/yes/010/dates exactly as the suite does."""
    (tmp_path / "run.yaml").write_text(RUN_YAML, encoding="utf-8")
    assert load_trajectory(tmp_path / "run.yaml").calls[0].args == EXPECTED
    result = run_paths([_suite(tmp_path, "file", "run.yaml")], RunOptions(root=tmp_path))
    assert [c.outcome for c in result.cases] == ["passed"], result.cases[0].message


def test_command_output_reads_like_the_suite(tmp_path: Path) -> None:
    """A live command printing YAML is read in the same dialect."""
    (tmp_path / "run.yaml").write_text(RUN_YAML, encoding="utf-8")
    source = json.dumps({"command": f"{sys.executable} -c \"import sys; sys.stdout.write(open('run.yaml').read())\""})
    result = run_paths([_suite(tmp_path, "live", source)], RunOptions(root=tmp_path))
    assert [c.outcome for c in result.cases] == ["passed"], result.cases[0].message


def test_show_prints_the_same_values(tmp_path: Path) -> None:
    """``trajrun show -o json`` on a YAML source prints the values a suite would write: no date object, no traceback."""
    (tmp_path / "run.yaml").write_text(RUN_YAML, encoding="utf-8")
    out = CliRunner().invoke(main, ["show", str(tmp_path / "run.yaml"), "-o", "json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["tool_calls"][0]["args"] == EXPECTED


def test_golden_file_reads_like_the_suite(tmp_path: Path) -> None:
    """A golden file written by hand in the same style compares the same way."""
    (tmp_path / "run.yaml").write_text(RUN_YAML, encoding="utf-8")
    (tmp_path / "golden.yaml").write_text("- set_state: {state: on, flag: yes, n: 010, day: 2025-06-12, ok: true}\n",
                                          encoding="utf-8")
    suite = tmp_path / "golden.suite.yaml"
    suite.write_text("cases:\n  - name: golden\n    source: run.yaml\n    golden: golden.yaml\n", encoding="utf-8")
    result = run_paths([suite], RunOptions(root=tmp_path))
    assert [c.outcome for c in result.cases] == ["passed"], result.cases[0].message


@pytest.mark.parametrize("text", ["a: &x [1, *x]\n", "!!python/object/apply:os.system ['true']\n", "a: 1\na: 2\n"])
def test_yaml_source_refuses_what_suites_refuse(tmp_path: Path, text: str) -> None:
    """Recursive aliases, tags and duplicate keys in a YAML source are clean errors, as in a suite."""
    (tmp_path / "run.yaml").write_text(text, encoding="utf-8")
    out = CliRunner().invoke(main, ["show", str(tmp_path / "run.yaml")])
    assert out.exit_code == 2 and "Traceback" not in out.output
    assert out.output.startswith(f"trajrun: error: {tmp_path / 'run.yaml'}: YAML at line ")


@given(st.text(max_size=12))
def test_a_plain_scalar_starting_outside_the_core_starts_is_a_string(text: str) -> None:
    """``resolve_plain`` returns a scalar whose first character starts no null, bool, int or float at once:
    none of the four core-schema patterns can match it."""
    if text and text[0] not in yaml_core._NOT_ONLY_STR:
        assert not any(p.match(text) for p in (yaml_core._NULL, yaml_core._BOOL, yaml_core._INT, yaml_core._FLOAT))
        assert yaml_core.resolve_plain(text) is text


@given(st.text("0123456789٣²", min_size=1, max_size=24))
def test_plain_digits_read_as_the_core_schema_integer_pattern_reads_them(text: str) -> None:
    """The shortcut for plain decimal digits gives what the four patterns give: ASCII digits an int, others a string."""
    expected: object = int(text) if yaml_core._INT.match(text) else text
    assert yaml_core.resolve_plain(text) == expected and type(yaml_core.resolve_plain(text)) is type(expected)
