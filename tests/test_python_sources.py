"""Where ``python:`` sources are imported from: the suite's folder, the project root, the working directory, in
that order, the same under ``trajrun run`` and under pytest; a module found nowhere says where it was looked for."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import OTHER_PLUGINS
from trajrun.run.runner import RunOptions, run_paths

BIN = Path(sys.executable).parent
AGENT = '''
def run(city="Paris"):
    return {"tool_calls": [{"name": "get_forecast", "args": {"city": city}}]}
'''
SUITE = """\
cases:
  - name: paris
    source: {python: "my_agent:run"}
    steps: [{get_forecast: {city: Paris}}]
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A newcomer's project: ``my_agent.py`` and ``pyproject.toml`` at its root, the suite in ``suites/``."""
    root = tmp_path / "toy"
    (root / "suites").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "toy"\nversion = "0"\n')
    (root / "my_agent.py").write_text(AGENT)
    (root / "suites" / "x.suite.yaml").write_text(SUITE)
    return root


def console(script: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run one of the venv's console scripts (``trajrun``, ``pytest``) as a user would: no folder of this test
    run on its import path, the plugin loaded from its entry point."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTEST_")}
    env.update(NO_COLOR="1", PYTEST_ADDOPTS=f"-p no:cacheprovider {OTHER_PLUGINS}")
    return subprocess.run([str(BIN / script), *args], cwd=cwd, env=env, text=True, capture_output=True, timeout=120)


def test_trajrun_run_and_pytest_import_a_module_at_the_project_root(project: Path) -> None:
    """``my_agent.py`` beside ``pyproject.toml`` is found for ``suites/x.suite.yaml`` by both, from the project or
    from outside it."""
    for done in (console("trajrun", "run", "suites/", cwd=project),
                 console("trajrun", "run", "toy/suites", cwd=project.parent),
                 console("pytest", "suites/", "-q", cwd=project)):  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        assert "1 passed in " in done.stdout.strip().splitlines()[-1]


def test_a_missing_module_says_where_it_was_looked_for(project: Path) -> None:
    """The error names each folder of the rule, in order, with what it is (one folder may be two of them)."""
    (project / "suites" / "x.suite.yaml").write_text(SUITE.replace("my_agent:run", "nowhere:run"))
    expected = (f"cannot import 'nowhere:run': No module named 'nowhere'; looked in {project / 'suites'} (the "
                f"suite's folder), {project} (the project root and the working directory), then sys.path: put the "
                "module in one of those folders, or install it")  # fmt: skip
    done = console("trajrun", "run", "suites/", cwd=project)
    assert done.returncode == 1 and expected in done.stdout, done.stdout
    done = console("pytest", "suites/", "-q", cwd=project)
    assert done.returncode == 1 and expected in done.stdout, done.stdout


def test_a_missing_module_inside_the_agent_is_not_blamed_on_the_folders(project: Path) -> None:
    """When the agent's module is found but a module it imports is not, the error is Python's own."""
    (project / "my_agent.py").write_text("import not_installed_anywhere\n" + AGENT)
    [case] = run_paths([project / "suites"], RunOptions(root=project)).cases
    assert case.outcome == "error"
    assert "cannot import 'my_agent:run': No module named 'not_installed_anywhere'" in case.message
    assert "looked in" not in case.message


def test_the_suites_folder_comes_first_then_the_project_root_then_the_working_directory(
        project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A module in more than one of the folders is taken from the first of them."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    where = [project / "suites" / "my_agent.py", project / "my_agent.py", elsewhere / "my_agent.py"]
    for path in where:
        path.write_text(AGENT.replace('city="Paris"', f"city={path.parent.name!r}"))
    for path in where:  # each run finds the first module left, then it goes
        (project / "suites" / "x.suite.yaml").write_text(SUITE.replace("Paris", path.parent.name))
        [case] = run_paths([project / "suites"], RunOptions(root=project)).cases
        assert case.outcome == "passed", case.message
        path.unlink()
