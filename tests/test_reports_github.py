"""GitHub Actions output: annotations as workflow commands, escaped by GitHub's rules, and the job summary."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from trajrun.cli import main
from trajrun.reports import github
from trajrun.run.results import CaseResult, RunResult, SuiteResult

SUITE = """\
suite: weather
cases:
  - name: passes
    source: run.json
    steps: [search]
  - name: wrong, city
    source: run.json
    steps: [get_forecast]
"""


def _run(cases: tuple[CaseResult, ...], load_errors: tuple[str, ...] = ()) -> RunResult:
    """A run of one suite file in the workspace."""
    return RunResult((SuiteResult("weather", "suites/w.suite.yaml", cases=cases, load_errors=load_errors),))


def _case(name: str, outcome: str, message: str = "", line: int = 7) -> CaseResult:
    """A case result of suites/w.suite.yaml."""
    return CaseResult(f"suites/w.suite.yaml::{name}", "weather", name, "suites/w.suite.yaml", line, outcome,  # type: ignore[arg-type]
                      message=message)


def test_on_by_default_only_inside_github_actions() -> None:
    """``GITHUB_ACTIONS=true`` turns annotations on; the option wins either way."""
    assert github.enabled(None, {"GITHUB_ACTIONS": "true"}) and not github.enabled(None, {})
    assert github.enabled("github", {}) and not github.enabled("none", {"GITHUB_ACTIONS": "true"})


def test_one_annotation_per_problem_with_escaped_properties_and_message(tmp_path: Path) -> None:
    """Failed, erred and xpassed cases each get an ``::error`` on their line; ``%``, newlines, ``:`` and ``,`` are escaped."""
    run = _run((_case("ok", "passed"), _case("a, b: c", "failed", "100% off\nnext line", line=12),
                _case("broken", "error", "source: not found"), _case("lucky", "xpassed", "XPASS(strict): flaky")))
    lines = github.annotations(run, str(Path.cwd()))
    assert lines[0] == ("::error file=suites/w.suite.yaml,line=12,title=weather %3A%3A a%2C b%3A c failed::"
                        "100%25 off%0Anext line")
    assert [line.split("title=")[1].split("::")[0] for line in lines[1:]] == [
        "weather %3A%3A broken error", "weather %3A%3A lucky xpassed"]


def test_load_errors_are_annotated_on_their_line() -> None:
    """A suite that could not be loaded gets one annotation per error, at the error's line."""
    run = _run((), load_errors=("suites/w.suite.yaml:4:7: cases[0].mdoe: unknown key 'mdoe'",))
    assert github.annotations(run, str(Path.cwd())) == [
        "::error file=suites/w.suite.yaml,line=4,title=w.suite.yaml could not be loaded::cases[0].mdoe: unknown key 'mdoe'"]


def test_summary_has_counts_and_a_row_per_problem() -> None:
    """The job summary: the closing line, counts per outcome, and the failures with their messages (pipes escaped)."""
    text = github.summary(_run((_case("ok", "passed"), _case("bad", "failed", "1 check failed: steps (a | b)"))))
    assert "**1 passed, 1 failed in 0.00s**" in text
    assert "| 1 | 1 | 0 | 0 | 0 | 0 |" in text
    assert "| weather :: bad (<code>suites/w.suite.yaml:7</code>) | failed | 1 check failed: steps (a \\| b) |" in text


def test_cli_annotates_and_appends_the_summary_under_github_actions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``trajrun run`` under ``GITHUB_ACTIONS=true`` prints the annotations and appends to ``$GITHUB_STEP_SUMMARY``."""
    (tmp_path / "run.json").write_text('{"tool_calls": [{"name": "search", "args": {}}]}', encoding="utf-8")
    (tmp_path / "w.suite.yaml").write_text(SUITE, encoding="utf-8")
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary), "GITHUB_WORKSPACE": str(tmp_path)}
    out = CliRunner().invoke(main, ["run", "w.suite.yaml", "-q"], env=env)
    assert out.exit_code == 1
    assert "::error file=w.suite.yaml,line=6,title=weather %3A%3A wrong%2C city failed::1 check failed: steps" in out.stdout
    assert summary.read_text(encoding="utf-8").startswith("earlier step\n## trajrun\n")
    quiet = CliRunner().invoke(main, ["run", "w.suite.yaml", "-q", "--annotations", "none"], env=env)
    assert "::error" not in quiet.stdout
