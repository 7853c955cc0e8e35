"""The GitHub Action (action.yml) and the pre-commit hook (.pre-commit-hooks.yaml) at the project's
root: their structure, and their commands run for real. The action's shell steps are taken out of
action.yml and run by bash as GitHub runs them (``bash --noprofile --norc -eo pipefail``), with the
``GITHUB_*`` files in tmp_path."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import trajrun
import yaml

ROOT = Path(__file__).resolve().parent.parent
ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
HOOKS = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
BIN = Path(sys.executable).parent
"""Where this environment's ``trajrun`` command is."""
_EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
RUN = {"tool_calls": [{"name": "get_forecast", "args": {"city": "Paris"}, "turn": 0}], "turns": 1}

pytestmark = pytest.mark.skipif(
    sys.platform == "win32", reason="the action's steps are bash scripts"
)


def step(name: str) -> dict[str, Any]:
    """The action's step of this name."""
    return next(s for s in ACTION["runs"]["steps"] if s.get("name") == name)


def evaluate(text: str, inputs: dict[str, str], outputs: dict[str, str]) -> str:
    """A value of action.yml with its ``${{ inputs.X }}`` and ``${{ steps.run.outputs.X }}`` filled
    in."""

    def value(match: re.Match[str]) -> str:
        scope, _, name = match[1].rpartition(".")
        if scope == "inputs":
            return inputs.get(name, ACTION["inputs"][name].get("default", ""))
        assert scope == "steps.run.outputs", match[0]
        return outputs.get(name, "")

    return _EXPRESSION.sub(value, text)


def outputs_of(path: Path) -> dict[str, str]:
    """The ``name=value`` lines a step appended to ``$GITHUB_OUTPUT``."""
    return (
        dict(line.split("=", 1) for line in path.read_text(encoding="utf-8").splitlines())
        if path.exists()
        else {}
    )


def run_step(
    name: str,
    workspace: Path,
    inputs: dict[str, str] | None = None,
    path: tuple[Path, ...] = (BIN,),
) -> subprocess.CompletedProcess[str]:
    """Run one shell step of the action with a simulated GitHub environment; ``path`` comes first on
    the PATH."""
    found = step(name)
    output = workspace / "github_output"
    env = {
        **os.environ,
        "GITHUB_ACTIONS": "true",
        "GITHUB_ACTION_PATH": str(ROOT),
        "GITHUB_WORKSPACE": str(workspace),
        "GITHUB_OUTPUT": str(output),
        "GITHUB_STEP_SUMMARY": str(workspace / "step_summary.md"),
        "NO_COLOR": "1",
        "PATH": os.pathsep.join([*map(str, path), os.environ.get("PATH", "")]),
    }
    env.update(
        {
            key: evaluate(value, inputs or {}, outputs_of(output))
            for key, value in found.get("env", {}).items()
        }
    )
    folder = workspace / evaluate(found.get("working-directory", "."), inputs or {}, {})
    script = workspace / "step.sh"
    script.write_text(found["run"], encoding="utf-8")
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=120, check=False,
    )


def fake(folder: Path, name: str, status: int = 0) -> Path:
    """A command ``name`` in ``folder`` that appends its arguments, one JSON list a line, to
    ``<name>.calls``."""
    folder.mkdir(exist_ok=True)
    command = folder / name
    command.write_text(
        f"#!{sys.executable}\nimport json, sys\n"
        f"with open({str(folder / (name + '.calls'))!r}, 'a') as f:\n"
        f"    f.write(json.dumps(sys.argv[1:]) + '\\n')\nsys.exit({status})\n",
        encoding="utf-8",
    )
    command.chmod(0o755)
    return folder


def calls(folder: Path, name: str) -> list[list[str]]:
    """What a ``fake`` command was called with."""
    return [
        json.loads(line)
        for line in (folder / f"{name}.calls").read_text(encoding="utf-8").splitlines()
    ]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project whose ``suites/`` has a passing and a failing case."""
    (tmp_path / "suites").mkdir()
    (tmp_path / "suites" / "weather.json").write_text(json.dumps(RUN), encoding="utf-8")
    (tmp_path / "suites" / "weather.suite.yaml").write_text(
        textwrap.dedent("""
        suite: weather
        cases:
          - name: paris
            source: weather.json
            steps: [{get_forecast: {city: Paris}}]
          - name: lyon
            source: weather.json
            steps: [{get_forecast: {city: Lyon}}]
    """),
        encoding="utf-8",
    )
    return tmp_path


def test_action_yml_is_a_composite_action_that_injects_no_input() -> None:
    """The metadata GitHub requires; every input described; every expression names a declared input
    or an output the run step writes; no expression inside a script (inputs reach the shell through
    env only); actions pinned to a major version; the upload runs even when the suites failed."""
    assert ACTION["name"] == "trajrun" and ACTION["description"]
    assert ACTION["runs"]["using"] == "composite"
    assert all(spec.get("description") for spec in ACTION["inputs"].values())
    written = set(re.findall(r'echo "([\w-]+)=', step("Run the suites")["run"]))
    assert written == {"exit-code", "report-dir", "json", "junit", "html"}
    assert {spec["value"] for spec in ACTION["outputs"].values()} == {
        f"${{{{ steps.run.outputs.{name} }}}}" for name in written
    }
    text = (ROOT / "action.yml").read_text(encoding="utf-8")
    for expression in _EXPRESSION.findall(text) + re.findall(r"if: (.*)", text):
        for name in re.findall(r"inputs\.([\w-]+)", expression):
            assert name in ACTION["inputs"], expression
        for name in re.findall(r"steps\.run\.outputs\.([\w-]+)", expression):
            assert name in written, expression
    for found in ACTION["runs"]["steps"]:
        assert found.get("name")
        if "run" in found:
            assert found["shell"] == "bash"
            assert "${{" not in found["run"], found["name"]
        else:
            assert re.fullmatch(r"actions/(setup-python|upload-artifact)@v\d+", found["uses"])
    upload = step("Upload the reports")
    assert upload["uses"] == "actions/upload-artifact@v4"
    assert upload["if"].startswith("always() && ")
    assert upload["with"]["path"] == "${{ steps.run.outputs.report-dir }}"


def test_install_step_installs_this_trajrun_or_the_package_given(tmp_path: Path) -> None:
    """By default pip installs the action's own folder (trajrun from source); ``package`` replaces
    it."""
    bin_folder = fake(tmp_path / "bin", "python")
    done = run_step("Install trajrun", tmp_path, path=(bin_folder, BIN))
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"trajrun, version {trajrun.__version__}\n"
    done = run_step(
        "Install trajrun", tmp_path, {"package": "trajrun==0.1.0"}, path=(bin_folder, BIN)
    )
    assert done.returncode == 0, done.stderr
    assert calls(bin_folder, "python") == [
        ["-m", "pip", "install", "--disable-pip-version-check", "--quiet", str(ROOT)],
        ["-m", "pip", "install", "--disable-pip-version-check", "--quiet", "trajrun==0.1.0"],
    ]


def test_run_step_annotates_summarises_writes_the_reports_and_the_last_step_fails(
    project: Path,
) -> None:
    """A real run over a failing case: the step itself succeeds (so the upload runs) with
    ``exit-code=1``; the failure is an ``::error`` annotation, the job summary is written, the three
    reports exist; the last step then exits 1."""
    done = run_step("Run the suites", project)
    assert done.returncode == 0, done.stderr
    outputs = outputs_of(project / "github_output")
    report_dir = project / "trajrun-report"
    assert outputs == {
        "exit-code": "1",
        "report-dir": str(report_dir),
        "json": str(report_dir / "results.json"),
        "junit": str(report_dir / "junit.xml"),
        "html": str(report_dir / "report.html"),
    }
    assert sorted(p.name for p in report_dir.iterdir()) == [
        "junit.xml",
        "report.html",
        "results.json",
    ]
    assert [line for line in done.stdout.splitlines() if line.startswith("::")] == [
        line
        for line in done.stdout.splitlines()
        if line.startswith("::error file=suites/weather.suite.yaml,")
    ]
    assert len([line for line in done.stdout.splitlines() if line.startswith("::error")]) == 1
    summary = (project / "step_summary.md").read_text(encoding="utf-8")
    assert summary.startswith("## trajrun\n\n**1 passed, 1 failed in ")
    failed = run_step("Fail as trajrun run did", project)
    assert failed.returncode == 1


def test_run_step_builds_the_command_line_from_the_inputs(project: Path) -> None:
    """``args`` and ``paths`` are split on spaces (never glob-expanded); an existing ``baseline``
    adds ``--baseline`` and ``fail-on``; a baseline not there yet is a notice and neither option."""
    bin_folder = fake(project / "bin", "trajrun", status=5)
    (project / "last.json").write_text("{}", encoding="utf-8")
    inputs = {
        "paths": "suites extra/*.suite.yaml",
        "args": "-j 2 -m smoke",
        "baseline": "last.json",
        "fail-on": "new",
        "report-dir": "out",
    }
    done = run_step("Run the suites", project, inputs, path=(bin_folder,))
    assert done.returncode == 0, done.stderr
    missing = run_step(
        "Run the suites", project, {**inputs, "baseline": "gone.json"}, path=(bin_folder,)
    )
    assert missing.stdout == (
        "::notice title=trajrun::no baseline report yet (the default branch's next green run "
        "makes one); every failure counts as new\n"
    )
    out = str(project / "out")
    reports = [
        "run",
        "--annotations",
        "github",
        "--junit-xml",
        f"{out}/junit.xml",
        "--html",
        f"{out}/report.html",
        "--json",
        f"{out}/results.json",
    ]
    rest = ["-j", "2", "-m", "smoke", "suites", "extra/*.suite.yaml"]
    assert calls(bin_folder, "trajrun") == [
        [*reports, "--baseline", "last.json", "--fail-on", "new", *rest],
        [*reports, *rest],
    ]
    assert outputs_of(project / "github_output")["exit-code"] == "5"


def test_run_step_with_a_real_baseline_passes_over_a_known_failure(project: Path) -> None:
    """The last green run's JSON as ``baseline`` with ``fail-on: new``: the case that failed there
    too is known, so trajrun exits 0 (and the last step passes)."""
    first = run_step("Run the suites", project, {"report-dir": "first"})
    assert first.returncode == 0, first.stderr
    done = run_step("Run the suites", project, {"baseline": "first/results.json", "fail-on": "new"})
    assert done.returncode == 0, done.stderr
    assert outputs_of(project / "github_output")["exit-code"] == "0"
    assert run_step("Fail as trajrun run did", project).returncode == 0


def test_pre_commit_hook_validates_suite_files(project: Path) -> None:
    """``trajrun-validate``: a python hook on ``*.suite.yaml`` / ``*.suite.yml``; its entry, given
    the files as pre-commit gives them, exits 0 on a good suite and 2 on a bad one, naming the
    problem."""
    assert [hook["id"] for hook in HOOKS] == ["trajrun-validate"]
    hook = HOOKS[0]
    assert hook["language"] == "python"
    assert hook["entry"] == "trajrun validate"
    matches = re.compile(hook["files"]).search
    assert [
        bool(matches(name))
        for name in ("a.suite.yaml", "x/b.suite.yml", "c.yaml", "d.suite.yaml.bak")
    ] == [True, True, False, False]
    command = shlex.split(hook["entry"])
    assert command[0] in _scripts()
    good = subprocess.run(
        [str(BIN / command[0]), *command[1:], "suites/weather.suite.yaml"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120, check=False,
    )
    assert (good.returncode, good.stdout) == (0, "1 suite file checked, 0 problems\n")
    (project / "suites" / "broken.suite.yml").write_text(
        "cases:\n  - name: x\n    source: nowhere.json\n    steps: [a]\n", encoding="utf-8"
    )
    bad = subprocess.run(
        [
            str(BIN / command[0]),
            *command[1:],
            "suites/weather.suite.yaml",
            "suites/broken.suite.yml",
        ],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120, check=False,
    )
    assert bad.returncode == 2
    assert bad.stdout.splitlines()[-1] == "2 suite files checked, 1 problem"
    assert "suites/broken.suite.yml:3:13: cases[0].source: " in bad.stdout


def _scripts() -> dict[str, str]:
    """The console scripts pyproject.toml declares (the hook's entry must be one: pre-commit
    installs the package)."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "scripts"
    ]
