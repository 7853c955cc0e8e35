"""The example suites: `trajrun run suites/` is green, they validate, and specs/examples/ fails as documented."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import jsonschema
import pytest
import xmlschema
import yaml

ROOT = Path(__file__).resolve().parent.parent
SUITES = sorted((ROOT / "suites").rglob("*.suite.yaml"))
EXAMPLES = ROOT / "specs" / "examples"
SCHEMA = ROOT / "runner" / "trajrun" / "suites" / "suite.schema.json"
XSD = Path(__file__).parent / "data" / "junit-10.xsd"
TABLE_HEADER = re.compile(r"^#\s+expected\s+actual\s+verdict\s*$", re.MULTILINE)
SUMMARY = re.compile(r"^(?:FAILED|ERROR|XPASS) \S.*$", re.MULTILINE)


def trajrun(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run the trajrun command line as a real subprocess in ``cwd``, colours off, no stray run selection."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("TRAJRUN_")}
    env["NO_COLOR"] = "1"
    command = [sys.executable, "-c", "from trajrun.cli import main; main()", *args]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def last_line(text: str) -> str:
    """The last non-empty line of the output."""
    return text.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of suites/ and specs/examples/, so runs (and --update-golden) never write into the repository."""
    root = tmp_path_factory.mktemp("examples")
    shutil.copytree(ROOT / "suites", root / "suites", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(EXAMPLES, root / "specs" / "examples", ignore=shutil.ignore_patterns("__pycache__"))
    return root


@pytest.fixture(scope="module")
def green_run(workdir: Path) -> subprocess.CompletedProcess[str]:
    """`trajrun run suites/ -v --junit-xml junit.xml` in the copy."""
    return trajrun("run", "suites/", "-v", "--junit-xml", "junit.xml", cwd=workdir)


@pytest.fixture(scope="module")
def failing_run(workdir: Path) -> subprocess.CompletedProcess[str]:
    """`trajrun run specs/examples/` in the copy (fails on purpose)."""
    return trajrun("run", "specs/examples/", cwd=workdir)


def test_demo_suites_exist() -> None:
    """The README's demo has at least eight suites."""
    assert len(SUITES) >= 8


def test_suites_run_green(green_run: subprocess.CompletedProcess[str]) -> None:
    """`trajrun run suites/` exits 0 and its summary names no failure or error."""
    assert green_run.returncode == 0, green_run.stdout + green_run.stderr
    summary = last_line(green_run.stdout)
    assert re.match(r"^\d+ passed", summary), summary
    assert not re.search(r"\b(failed|error|errors|xpassed)\b", summary), summary


def test_demo_shows_skip_and_xfail(green_run: subprocess.CompletedProcess[str]) -> None:
    """The demo reports its skipped cases (one by `skip:`, two judged ones without a judge model) and its xfail case."""
    summary = last_line(green_run.stdout)
    assert "3 skipped" in summary and "1 xfailed" in summary, summary  # 1 skip: case, 2 judged cases (no judge model)


def test_every_case_passes_or_is_expected(green_run: subprocess.CompletedProcess[str]) -> None:
    """In -v output every case line ends PASSED, SKIPPED or XFAIL (the notes section after them names
    cases too, with what a case noted)."""
    cases = green_run.stdout.split("= notes =")[0]
    lines = [line for line in cases.splitlines() if "::" in line]
    assert lines
    bad = [line for line in lines if not re.search(r" (PASSED|SKIPPED|XFAIL)\b", line)]
    assert bad == []


@pytest.mark.parametrize("path", SUITES, ids=lambda p: p.name)
def test_suite_matches_schema(path: Path) -> None:
    """Each demo suite validates against the published JSON Schema of suite files."""
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    jsonschema.validate(yaml.safe_load(path.read_text(encoding="utf-8")), schema)


@pytest.mark.parametrize("path", SUITES, ids=lambda p: p.name)
def test_suite_says_what_it_shows(path: Path) -> None:
    """Each demo suite opens with a comment line saying what it shows, and stays readable (20-80 lines)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("# ") and len(lines[0]) > 20
    assert 20 <= len(lines) <= 80


def test_validate_command_accepts_suites(workdir: Path) -> None:
    """`trajrun validate suites/` finds no problem (sources, golden files and live callables included)."""
    done = trajrun("validate", "suites/", cwd=workdir)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 problems" in last_line(done.stdout)


def test_junit_report_is_valid(green_run: subprocess.CompletedProcess[str], workdir: Path) -> None:
    """The JUnit report of the demo validates against junit-10.xsd and records no failure or error."""
    report = workdir / "junit.xml"
    xmlschema.XMLSchema(str(XSD)).validate(str(report))
    root = ElementTree.parse(report).getroot()
    assert (root.get("failures"), root.get("errors")) == ("0", "0")
    assert len(root.findall("testsuite")) == len(SUITES)
    assert root.findall(".//system-out") == []  # passing cases carry no actual steps by default


def test_update_golden_changes_nothing(workdir: Path, tmp_path: Path) -> None:
    """The golden files match their runs: --update-golden on a passing demo rewrites none of them."""
    copy = tmp_path / "suites"
    shutil.copytree(workdir / "suites", copy, ignore=shutil.ignore_patterns("__pycache__", "junit.xml"))
    before = {p.name: p.read_bytes() for p in (copy / "golden").iterdir()}
    with_golden = [f"suites/{p.name}" for p in sorted(copy.glob("*.suite.yaml")) if "golden:" in p.read_text()]
    assert with_golden, "no example suite names a golden file"
    done = trajrun("run", *with_golden, "-q", "--update-golden", cwd=tmp_path)  # the others need not run again
    assert done.returncode == 0, done.stdout + done.stderr
    assert {p.name: p.read_bytes() for p in (copy / "golden").iterdir()} == before


def test_examples_fail(failing_run: subprocess.CompletedProcess[str]) -> None:
    """`trajrun run specs/examples/` exits 1: cases fail and err, but every suite loads."""
    assert failing_run.returncode == 1, failing_run.stdout + failing_run.stderr
    assert last_line(failing_run.stdout).startswith("1 passed, 3 failed, 3 errors in ")


def test_examples_show_diff_table(failing_run: subprocess.CompletedProcess[str]) -> None:
    """The failure report shows the expected-vs-actual table header."""
    assert TABLE_HEADER.search(failing_run.stdout), failing_run.stdout


@pytest.mark.parametrize(
    "expected",
    [
        "steps (1 arg differs)",
        "$.query: expected 'llama 3.1 context window', got 'mistral large 2 context window'",
        "2 checks failed: steps (1 missing, 2 unexpected, 1 arg differs), never (refund_all)",
        "no call of issue_refund",
        "budget (calls 4 > 3, turns 5 > 4, tokens 15372 > 8000)",
        "file not found",
        "--update-golden",
        "records no token usage",
    ],
)
def test_examples_name_failing_checks(failing_run: subprocess.CompletedProcess[str], expected: str) -> None:
    """Each failing check of the examples is named in the output."""
    assert expected in failing_run.stdout


def test_greedy_trap_passes(workdir: Path) -> None:
    """The greedy-matching trap passes: trajrun finds the maximum matching."""
    done = trajrun("run", "specs/examples/greedy_trap.suite.yaml", "-v", "-k", "steal", cwd=workdir)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "any-args step does not steal the specific call PASSED" in done.stdout


def test_readme_output_is_current(failing_run: subprocess.CompletedProcess[str]) -> None:
    """specs/examples/README.md quotes the summary lines the examples really print."""
    readme = (EXAMPLES / "README.md").read_text(encoding="utf-8")
    documented = SUMMARY.findall(readme)
    assert len(documented) == 6
    assert documented == SUMMARY.findall(failing_run.stdout)


def test_readme_library_snippet_runs() -> None:
    """The README's "As a library" block runs as written: a run matches itself, a reordered copy with an extra call fails."""
    block = re.search(r"## As a library.*?```python\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), re.S)
    assert block, "README has no Python block under 'As a library'"
    messages = json.loads((ROOT / "suites" / "runs" / "weather" / "paris_tokyo.json").read_text(encoding="utf-8"))
    exec(block.group(1), {"reference_messages": messages, "output_messages": messages})
    extra = [*messages, {"role": "assistant", "content": None, "tool_calls": [
        {"id": "x", "type": "function", "function": {"name": "get_forecast", "arguments": '{"city": "Oslo"}'}}]}]  # fmt: skip
    with pytest.raises(AssertionError, match="steps"):
        exec(block.group(1), {"reference_messages": messages, "output_messages": extra})


def test_readme_library_suite_snippet_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's second "As a library" block (suites through the public API) runs as written from the repository root."""
    section = (ROOT / "README.md").read_text(encoding="utf-8").split("## As a library", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) == 2, "README's 'As a library' has the reference block and the suites block"
    monkeypatch.chdir(ROOT)
    exec(blocks[1], {})
