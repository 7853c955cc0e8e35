"""What a newcomer reads (issue 28): one JUnit naming rule and CLI-like paths under pytest, the
empty-folder message apart from the time, case errors under ERRORS, the steps table on a wide
terminal, and how to check a suite against the schema."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
TIME = re.compile(r" in \d+\.\d\ds$", re.MULTILINE)

RUN = {"tool_calls": [{"name": "search", "args": {"q": "paris"}}]}

WEATHER = """\
suite: weather
cases:
  - name: good
    source: runs/paris.json
    steps:
      - search: {q: paris}
  - name: in {{ city }}
    parametrize: {city: [paris, rome]}
    source: runs/paris.json
    steps:
      - search: {q: "{{ city }}"}
  - name: no_source
    source: runs/missing.json
    steps: [search]
"""

BROKEN = """\
suite: broken
cases:
  - name: one
    source: runs/paris.json
    stepz: [search]
"""

LOAD_ERROR = ("suites/broken.suite.yaml:5:5: cases[0].stepz: unknown key 'stepz' in case 'one' — "
              "did you mean 'steps'?")
SOURCE_ERROR = ("source: suites/runs/missing.json: file not found; expected a .json, .jsonl or "
                ".yaml file — check the path (relative paths resolve against the suite's folder)")


def trajrun(
    folder: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``trajrun ARGS`` in a process of its own, from ``folder``, colours off."""
    return subprocess.run([sys.executable, "-m", "trajrun", *args], cwd=folder, text=True,
                          env={**os.environ, "NO_COLOR": "1", **(env or {})}, capture_output=True,
                          timeout=120, check=False)


def junit_names(report: Path) -> list[tuple[str, str]]:
    """Each ``<testcase>``'s ``(classname, name)``, in order."""
    return [(t.get("classname", ""), t.get("name", "")) for t in ET.parse(report).iter("testcase")]


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A project with suites in ``suites/`` (one not loaded) and its run, collection on."""
    pytester.makeini("[pytest]\ntrajrun_collect = true\naddopts = -p no:cacheprovider\n")
    suites = pytester.mkdir("suites")
    (suites / "runs").mkdir()
    (suites / "runs" / "paris.json").write_text(json.dumps(RUN), encoding="utf-8")
    (suites / "weather.suite.yaml").write_text(WEATHER, encoding="utf-8")
    (suites / "broken.suite.yaml").write_text(BROKEN, encoding="utf-8")
    return pytester


# -- item 9: one classname rule, and paths as the CLI prints them ---------------------------------

NAMES = [("broken.suite.yaml", "(load)"), ("weather", "good"), ("weather", "in paris[city=paris]"),
         ("weather", "in rome[city=rome]"), ("weather", "no_source")]


def test_pytest_junitxml_names_testcases_as_trajrun_run_does(project: pytest.Pytester) -> None:
    """``pytest --junitxml`` and ``trajrun run --junit-xml`` give every case, and the suite that
    cannot be loaded, the same classname (the suite's name, not pytest's
    ``suites.weather.suite.yaml``) and name."""
    result = project.runpytest_subprocess("suites", "--junitxml=pytest.xml",
                                          "--continue-on-collection-errors")
    result.assert_outcomes(passed=2, failed=1, errors=2)
    cli = trajrun(project.path, "run", "suites", "--junit-xml", "trajrun.xml")
    assert cli.returncode == 2, cli.stderr
    assert junit_names(project.path / "trajrun.xml") == NAMES
    assert sorted(junit_names(project.path / "pytest.xml")) == sorted(NAMES)


def test_pytest_junitxml_names_hold_under_xdist_and_junitprefix(project: pytest.Pytester) -> None:
    """The names travel from xdist's workers with the reports; ``--junitprefix`` still leads."""
    result = project.runpytest_subprocess("suites/weather.suite.yaml", "-n", "2",
                                          "--junitxml=x.xml", "--junitprefix=ci")
    result.assert_outcomes(passed=2, failed=1, errors=1)
    expected = sorted((f"ci.{classname}", name) for classname, name in NAMES[1:])
    assert sorted(junit_names(project.path / "x.xml")) == expected


def test_pytest_load_and_case_errors_name_paths_as_the_cli_does(project: pytest.Pytester) -> None:
    """Under pytest a load error and a missing source name their files from the working folder,
    as the CLI does, not by their absolute paths."""
    result = project.runpytest_subprocess("suites", "--continue-on-collection-errors")
    out = result.stdout.str()
    assert f"{project.path}/suites" not in out
    result.stdout.fnmatch_lines(["*ERROR collecting suites/broken.suite.yaml*", LOAD_ERROR],
                                consecutive=True)
    result.stdout.fnmatch_lines(["*ERROR at setup of case no_source*",
                                 "suites/weather.suite.yaml:12", SOURCE_ERROR], consecutive=True)
    cli = trajrun(project.path, "run", "suites").stdout
    assert LOAD_ERROR in cli.splitlines() and SOURCE_ERROR in cli.splitlines()


# -- item 12: the empty-folder message, ERRORS apart from FAILURES -------------------------------

def test_empty_folder_message_stands_apart_from_the_time(tmp_path: Path) -> None:
    """The message (and its hint) is a line of its own; the summary line after it is pytest's."""
    (tmp_path / "suites").mkdir()
    (tmp_path / "suites" / "weather.yaml").write_text("suite: w\n", encoding="utf-8")
    result = trajrun(tmp_path, "run", "suites")
    assert result.returncode == 5
    assert TIME.sub(" in 0.00s", result.stdout) == (
        "\n"
        "no suite files found under suites (suite files end in .suite.yaml or .suite.yml); "
        "1 YAML file there does not end in .suite.yaml — rename the suites\n"
        f"{'=' * 80}\n"
        "no cases ran in 0.00s\n"
    )
    quiet = trajrun(tmp_path, "run", "-q", "suites")
    assert TIME.sub(" in 0.00s", quiet.stdout).splitlines()[-1] == "no cases ran in 0.00s"


def test_case_errors_are_listed_under_errors(project: pytest.Pytester) -> None:
    """As pytest does: the suite not loaded and the case that could not run under ERRORS, the
    failure under FAILURES."""
    result = trajrun(project.path, "run", "suites")
    assert TIME.sub(" in 0.00s", result.stdout) == "\n".join([
        "suites/broken.suite.yaml E                                                [  0%]",
        "suites/weather.suite.yaml ..FE                                            [100%]",
        "",
        "==================================== ERRORS ====================================",
        "____________________ ERROR loading suites/broken.suite.yaml ____________________",
        LOAD_ERROR,
        "_____________________ suites/weather.suite.yaml::no_source _____________________",
        "suites/weather.suite.yaml:12",
        SOURCE_ERROR,
        "=================================== FAILURES ===================================",
        "________________ suites/weather.suite.yaml::in rome[city=rome] _________________",
        "suites/weather.suite.yaml:7",
        "1 check failed: steps (1 arg differs)",
        "steps: 1 arg differs",
        "#  expected             actual                    verdict",
        '0  search {"q":"rome"}  [0] search {"q":"paris"}  args differ',
        "",
        'step 0 search {"q":"rome"}: nearest [0] search {"q":"paris"}',
        "  $.q: expected 'rome', got 'paris'",
        "=========================== short test summary info ============================",
        "ERROR suites/broken.suite.yaml - suite could not be loaded (1 error)",
        ("FAILED suites/weather.suite.yaml::in rome[city=rome] - 1 check failed: steps "
         "(1 arg differs)"),
        f"ERROR suites/weather.suite.yaml::no_source - {SOURCE_ERROR}",
        "================================================================================",
        "2 passed, 1 failed, 2 errors in 0.00s",
        "",
    ])


# -- item 12: the steps table uses a wide terminal -----------------------------------------------

BODY = "Dear Ada, your trip to Lisbon is booked: flight TP433 leaves at 09:40 on {day}."
SENT = {"to": "ada@example.com", "body": BODY.format(day="Friday")}
WIDE_RUN = {"tool_calls": [{"name": "send_email", "args": SENT}]}
WIDE = f"""\
suite: wide
cases:
  - name: long body
    source: run.json
    steps:
      - send_email: {{to: ada@example.com, body: "{BODY.format(day='Monday')}"}}
"""


def on_terminal(folder: Path, columns: int, *args: str) -> str:
    """``trajrun ARGS`` writing to a pseudo-terminal, ``COLUMNS`` set: what it printed (``\\n`` line
    ends)."""
    leader, follower = pty.openpty()
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": str(columns)}
    process = subprocess.Popen([sys.executable, "-m", "trajrun", *args], cwd=folder, env=env,
                               stdin=subprocess.DEVNULL, stdout=follower, stderr=follower)
    os.close(follower)
    chunks, deadline = [], time.monotonic() + 120
    try:
        while select.select([leader], [], [], max(deadline - time.monotonic(), 0))[0]:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # Linux: the terminal closed when the process exited
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(leader)
        process.kill()
        process.wait(timeout=30)
    return b"".join(chunks).decode("utf-8").replace("\r\n", "\n")


def table_rows(output: str) -> list[str]:
    """The table's row and the nearest-call line of the one failing case."""
    return [line for line in output.splitlines() if line.startswith(("0  ", "step 0 "))]


@pytest.fixture
def wide(tmp_path: Path) -> Path:
    """A suite whose one step differs from its call at the end of a long argument."""
    (tmp_path / "run.json").write_text(json.dumps(WIDE_RUN), encoding="utf-8")
    (tmp_path / "wide.suite.yaml").write_text(WIDE, encoding="utf-8")
    return tmp_path


CUT = 'send_email {"to":"ada@example.com","body":"Dear Ada, your trip to Lisb…'
WHOLE = 'send_email {{"to":"ada@example.com","body":"{}"}}'


def test_wide_terminal_shows_long_arguments_whole(wide: Path) -> None:
    """200 columns: argument maps are cut past 180 characters, so these show whole."""
    expected = WHOLE.format(BODY.format(day="Monday"))
    actual = WHOLE.format(BODY.format(day="Friday"))
    assert table_rows(on_terminal(wide, 200, "run", "wide.suite.yaml")) == [
        f"0  {expected}  [0] {actual}  args differ",
        f"step 0 {expected}: nearest [0] {actual}",
    ]


def test_80_columns_and_no_terminal_keep_the_60_character_cut(wide: Path) -> None:
    """At 80 columns, and off a terminal whatever ``COLUMNS`` says, the table is today's (cut at
    60)."""
    rows = [f"0  {CUT}  [0] {CUT}  args differ", f"step 0 {CUT}: nearest [0] {CUT}"]
    assert table_rows(on_terminal(wide, 80, "run", "wide.suite.yaml")) == rows
    piped = trajrun(wide, "run", "wide.suite.yaml", env={"COLUMNS": "200"})
    assert table_rows(piped.stdout) == rows


# -- item 12: checking a suite against the schema ------------------------------------------------

ON_OFF = """\
suite: switches
tags: [on, off]
cases:
  - name: light on
    tags: [yes]
    source: run.json
    steps:
      - set_light: {state: on}
"""


def test_specs_say_to_load_suites_as_yaml_1_2_for_the_schema() -> None:
    """The specs tell how to check a suite against the schema; what they say of PyYAML holds."""
    import jsonschema
    from trajrun.suites.schema import schema_text
    from trajrun.yaml_core import load_data

    specs = " ".join((ROOT / "specs" / "suite-format.md").read_text(encoding="utf-8").split())
    assert ("To check a suite against the JSON Schema (`trajrun schema`) with another tool, load "
            "it as YAML 1.2, as trajrun does:") in specs
    assert ("PyYAML reads YAML 1.1, where `on`, `off`, `yes` and `no` are booleans, and so reports "
            "false errors") in specs
    assert "Or run `trajrun validate`, which checks everything the schema does, and more." in specs
    validator = jsonschema.Draft7Validator(json.loads(schema_text()))
    assert list(validator.iter_errors(load_data(ON_OFF))) == []
    errors = [e.message for e in validator.iter_errors(yaml.safe_load(ON_OFF))]
    assert errors == ["[True, False] is not valid under any of the given schemas",
                      "[True] is not valid under any of the given schemas"]
