"""Project configuration: ``[tool.trajrun]`` in pyproject.toml or a trajrun.toml, found upward from
the working folder; its keys are ``trajrun run``'s long options, the command line wins, and a bad
key or value exits 2."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest
from junitparser import JUnitXml

from cli_helpers import invoke_in

from trajrun.cli_config import load_config, setting_keys
from trajrun.cli_run import run

ROOT = Path(__file__).resolve().parent.parent
RUN = {"tool_calls": [{"name": "get_forecast", "args": {"city": "Paris"}, "turn": 0}], "turns": 1}


def write(path: Path, text: str) -> Path:
    """Write dedented text, making the folders."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """Two suite folders: ``evals/`` passes when the city variable is Paris, ``suites/`` always
    passes."""
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "weather.json").write_text(json.dumps(RUN), encoding="utf-8")
    write(
        tmp_path / "evals" / "city.suite.yaml",
        """
        suite: city
        vars: {city: Lyon}
        cases:
          - name: forecast
            source: ../runs/weather.json
            steps: [{get_forecast: {city: "{{ city }}"}}]
    """,
    )
    write(
        tmp_path / "suites" / "plain.suite.yaml",
        """
        suite: plain
        cases:
          - name: any forecast
            source: ../runs/weather.json
            steps: [get_forecast]
    """,
    )
    return tmp_path


def test_settings_apply_and_the_command_line_wins(project: Path) -> None:
    """``paths``, ``vars`` and ``junit_xml`` from [tool.trajrun] are used; a path or --var given on
    the command line replaces them."""
    write(
        project / "pyproject.toml",
        """
        [project]
        name = "agent"

        [tool.trajrun]
        paths = ["evals"]
        junit_xml = "reports/junit.xml"

        [tool.trajrun.vars]
        city = "Paris"
    """,
    )
    result = invoke_in(project, "run", "-v")
    assert result.exit_code == 0, result.output
    assert "evals/city.suite.yaml::forecast PASSED" in result.stdout
    assert [
        case.name
        for suite in JUnitXml.fromfile(str(project / "reports" / "junit.xml"))
        for case in suite
    ] == ["forecast"]

    overridden = invoke_in(project, "run", "-v", "--var", "city=Tokyo", "--junit-xml", "other.xml")
    assert overridden.exit_code == 1
    assert "evals/city.suite.yaml::forecast FAILED" in overridden.stdout
    assert (project / "other.xml").is_file()

    elsewhere = invoke_in(project, "run", "-v", "suites")
    assert elsewhere.exit_code == 0
    assert "suites/plain.suite.yaml::any forecast PASSED" in elsewhere.stdout
    assert "evals" not in elsewhere.stdout


def test_found_upward_with_paths_relative_to_the_file(project: Path) -> None:
    """From a subfolder the configuration above is found, and its paths are relative to it, not to
    the working folder (a trajrun.toml holds the keys at its top level)."""
    write(
        project / "trajrun.toml",
        """
        paths = ["evals"]
        html = "reports/run.html"
        vars = {city = "Paris"}
    """,
    )
    (project / "evals" / "deeper").mkdir()
    result = invoke_in(project / "evals" / "deeper", "run", "-q")
    assert result.exit_code == 0, result.output
    assert result.stdout.strip().splitlines()[-1].startswith("1 passed")
    assert (project / "reports" / "run.html").is_file()


def test_trajrun_toml_wins_over_pyproject_in_the_same_folder(project: Path) -> None:
    """Both in one folder: trajrun.toml is read (as ruff reads ruff.toml first); a pyproject.toml
    without the table is passed over on the way up, as pytest does."""
    write(project / "pyproject.toml", '[tool.trajrun]\npaths = ["suites"]\n')
    write(project / "trajrun.toml", 'paths = ["evals"]\n')
    assert load_config(run, project).file.name == "trajrun.toml"  # type: ignore[union-attr]
    write(project / "sub" / "pyproject.toml", '[project]\nname = "trajrun-free"\n')
    found = load_config(run, project / "sub")
    assert found is not None and found.file == project / "trajrun.toml"


def test_validate_takes_paths_and_vars(project: Path) -> None:
    """``trajrun validate`` with no path checks the configured ``paths``."""
    write(project / "pyproject.toml", '[tool.trajrun]\npaths = ["evals"]\njobs = 2\n')
    result = invoke_in(project, "validate")
    assert result.exit_code == 0, result.output
    assert result.stdout == "1 suite file checked, 0 problems\n"


def test_bad_keys_and_types_are_named_with_their_lines(project: Path) -> None:
    """Every unknown key and wrong value is one line with file, line and key path, and a
    did-you-mean; exit 2, before anything runs."""
    write(
        project / "pyproject.toml",
        """
        [tool.trajrun]
        paths = "evals"
        jbos = 2
        engine = "dusk"
        jobs = "many"
        no_judge = "yes"
        junit-xml = "x.xml"
        judge_concurrency = 0
        when = 1979-05-27

        [tool.trajrun.vars]
        my-city = "Paris"
    """,
    )
    result = invoke_in(project, "run")
    assert result.exit_code == 2
    assert result.stdout == ""
    at = "trajrun: error: pyproject.toml:"
    assert result.stderr.splitlines() == [
        f"{at}2: tool.trajrun.paths: expected a list (paths = [...]), found the string 'evals'",
        f"{at}3: tool.trajrun.jbos: unknown key — did you mean 'jobs'?",
        (f"{at}4: tool.trajrun.engine: expected one of local, dask, found the string 'dusk' — did "
         "you mean 'dask'?"),
        f"{at}5: tool.trajrun.jobs: 'many' is neither a number of workers (1 or more) nor 'auto'",
        f"{at}6: tool.trajrun.no_judge: expected true or false, found the string 'yes'",
        f"{at}7: tool.trajrun.junit-xml: unknown key — did you mean 'junit_xml'?",
        f"{at}8: tool.trajrun.judge_concurrency: 0 is not in the range x>=1.",
        f"{at}9: tool.trajrun.when: unknown key; expected one of "
        + ", ".join(sorted(setting_keys(run))),
        (f"{at}12: tool.trajrun.vars.my-city: a variable name is letters, digits and _, not first "
         "a digit"),
    ]
    assert invoke_in(project, "validate").exit_code == 2
    assert (
        invoke_in(project, "schema").exit_code == 0
    )  # commands the configuration does not set ignore it


def test_invalid_toml_and_values_of_the_wrong_kind(project: Path) -> None:
    """A file that is not TOML names its line and column; ``tool.trajrun`` must be a table, and a
    variable's value a string, number or boolean."""
    write(project / "trajrun.toml", "paths = [evals\n")
    result = invoke_in(project, "run")
    assert result.exit_code == 2
    assert result.stderr.startswith("trajrun: error: trajrun.toml: not valid TOML: ")
    assert "(at line 1, column" in result.stderr
    (project / "trajrun.toml").unlink()
    write(project / "pyproject.toml", '[tool]\ntrajrun = "evals"\n')
    result = invoke_in(project, "config")
    assert result.exit_code == 2
    assert result.stderr == (
        "trajrun: error: pyproject.toml: tool.trajrun must be a table ([tool.trajrun]), "
        "found the string 'evals'\n"
    )
    (project / "pyproject.toml").unlink()
    write(project / "trajrun.toml", 'paths = ["evals"]\nvars = {city = "Paris", days = [1, 2]}\n')
    result = invoke_in(project, "run")
    assert result.exit_code == 2
    assert (
        result.stderr
        == "trajrun: error: trajrun.toml:2: vars.days: expected a string, number or boolean, "
        "found a list\n"
    )


def test_config_prints_each_setting_and_where_it_comes_from(project: Path) -> None:
    """``trajrun config``: the file, then every setting of ``trajrun run`` with its value and
    source: the file and line, the option's environment variable (which click applies before the
    file), or the default."""
    write(
        project / "pyproject.toml",
        """
        [tool.trajrun]
        paths = ["evals", "suites"]
        jobs = 2
        golden_root = "goldens"
        no_judge = true

        [tool.trajrun.vars]
        city = "Paris"
        days = 3
    """,
    )
    result = invoke_in(project / "evals", "config", env={"TRAJRUN_GOLDEN_ROOT": "/srv/goldens"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "configuration: ../pyproject.toml ([tool.trajrun])"
    rows = {line.split()[0]: re.split(r"\s{2,}", line.strip()) for line in lines[1:]}
    assert rows["setting"] == ["setting", "value", "from"]
    assert rows["paths"] == ["paths", '[".", "../suites"]', "../pyproject.toml:2"]
    assert rows["jobs"] == ["jobs", "2", "../pyproject.toml:3"]
    assert rows["golden_root"] == [
        "golden_root",
        '"/srv/goldens"',
        "environment TRAJRUN_GOLDEN_ROOT",
    ]
    assert rows["no_judge"] == ["no_judge", "true", "../pyproject.toml:5"]
    assert rows["vars"] == ["vars", '{city = "Paris", days = 3}', "../pyproject.toml:7"]
    assert rows["junit_xml"] == ["junit_xml", "-", "default"]
    assert rows["engine"] == ["engine", '"local"', "default"]
    assert set(rows) - {"setting"} == {
        max((k for k, p in setting_keys(run).items() if p is param), key=len)
        for param in set(setting_keys(run).values())
    }


def test_config_without_a_file(tmp_path: Path) -> None:
    """No configuration: says so, and every value is the default (``paths``: ``suites``)."""
    result = invoke_in(tmp_path, "config")
    assert result.exit_code == 0
    assert result.stdout.splitlines()[0] == (
        "configuration: none (no trajrun.toml, and no pyproject.toml with "
        "[tool.trajrun], here or above)"
    )
    assert re.search(r'^paths +\["suites"\] +default$', result.stdout, re.MULTILINE)


def test_the_docs_examples_are_valid_configuration(tmp_path: Path) -> None:
    """Every ```toml block in README.md and specs/suite-format.md is a configuration trajrun
    accepts."""
    blocks = [
        block
        for doc in ("README.md", "specs/suite-format.md")
        for block in re.findall(
            r"^```toml\n(.*?)^```",
            (ROOT / doc).read_text(encoding="utf-8"),
            re.MULTILINE | re.DOTALL,
        )
    ]
    assert blocks
    for block in blocks:
        (tmp_path / "pyproject.toml").write_text(block, encoding="utf-8")
        assert load_config(run, tmp_path) is not None, block
