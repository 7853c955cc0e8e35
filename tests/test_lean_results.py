"""A run holds its results, not its cases' runs: each file source is read once and let go after the last case naming
it, and a result keeps its trajectory only when a report shows it for its outcome."""

from __future__ import annotations

import gc
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from cli_helpers import invoke_in
from trajrun.run import execute
from trajrun.run.results import CaseResult, RunResult, SuiteResult
from trajrun.run.runner import RunOptions, run_paths
from trajrun.suites.model import Source
from trajrun.trajectory import Trajectory

MESSAGES = [{"role": "assistant", "content": "", "tool_calls": [
    {"id": "c1", "type": "function", "function": {"name": "search", "arguments": '{"q": "x"}'}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "found"}]
SUITE = """\
cases:
  - {name: a, source: run.json, steps: [search]}
  - {name: b, source: other.json, steps: [search]}
  - {name: c, source: run.json, steps: [fetch]}
"""


class Reads(NamedTuple):
    """What the run read: each file read, and the ids of the trajectories made."""

    files: list[str]
    made: set[int]


class Watch:
    """A reporter that counts the trajectories read by this run (ids in ``made``) alive as each case is reported."""

    def __init__(self, made: set[int]) -> None:
        self.alive: dict[str, int] = {}
        self.made = made

    def start(self, total_cases: int) -> None:
        """Nothing to do before the first case."""

    def suite_load_error(self, result: SuiteResult) -> None:
        """No suite fails to load here."""

    def case_done(self, result: CaseResult) -> None:
        """Count the Trajectory objects alive now."""
        gc.collect()
        self.alive[result.name] = sum(isinstance(o, Trajectory) and id(o) in self.made for o in gc.get_objects())

    def finish(self, run: RunResult) -> None:
        """Nothing to do after the last case."""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Reads:
    """Two message files and a suite naming one of them twice; the files read and the ids of the trajectories made,
    filled as the run goes (ids, not the objects, which would keep them alive)."""
    for name in ("run.json", "other.json"):
        (tmp_path / name).write_text(json.dumps(MESSAGES), encoding="utf-8")
    (tmp_path / "t.suite.yaml").write_text(SUITE, encoding="utf-8")
    reads = Reads([], set())
    real = execute.load_trajectory

    def counting(path: Any, **kwargs: Any) -> Trajectory:
        reads.files.append(Path(path).name)
        made = real(path, **kwargs)
        reads.made.add(id(made))
        return made

    monkeypatch.setattr(execute, "load_trajectory", counting)
    return reads


def test_a_source_is_read_once_and_let_go_after_its_last_case(tmp_path: Path, project: Reads) -> None:
    """run.json stays cached from case a to case c, other.json only while b runs; lean results hold none."""
    watch = Watch(project.made)
    run = run_paths([tmp_path / "t.suite.yaml"], RunOptions(root=tmp_path, keep=frozenset()), watch)
    assert sorted(project.files) == ["other.json", "run.json"]
    assert watch.alive == {"a": 1, "b": 1, "c": 0}
    assert [(c.outcome, c.trajectory, c.tool_calls) for c in run.cases] == [("passed", None, 1), ("passed", None, 1),
                                                                            ("failed", None, 1)]


def test_results_keep_their_trajectory_for_the_outcomes_kept(tmp_path: Path, project: Reads) -> None:
    """Keeping failed cases' runs (JUnit's default ``<system-out>``): only c's; keeping every one: both files'."""
    watch = Watch(project.made)
    run = run_paths([tmp_path / "t.suite.yaml"], RunOptions(root=tmp_path, keep=frozenset({"failed"})), watch)
    assert [c.trajectory is not None for c in run.cases] == [False, False, True]
    assert watch.alive["c"] == 1
    del run  # its case c holds a trajectory
    watch = Watch(project.made)
    run = run_paths([tmp_path / "t.suite.yaml"], RunOptions(root=tmp_path), watch)
    assert all(c.trajectory and c.evaluation.steps.actual_calls for c in run.cases)  # type: ignore[union-attr]
    assert watch.alive == {"a": 1, "b": 2, "c": 2}  # a and c share run.json's trajectory
    assert sorted(project.files) == ["other.json", "other.json", "run.json", "run.json"]


@pytest.mark.parametrize("system_out", ["failed", "none", "all"])
def test_junit_is_the_same_whatever_the_results_keep(tmp_path: Path, project: Reads, system_out: str) -> None:
    """The JUnit file written alone (lean results) equals the one written beside the JSON report (full results),
    the suite's tool call and token totals and the failing case's actual steps included."""
    reports = []
    for extra in ([], ["--json", "report.json"]):
        invoke_in(tmp_path, "run", "t.suite.yaml", "-q", "--junit-xml", "junit.xml", "--junit-system-out", system_out,
                  *extra)
        root = ET.parse(tmp_path / "junit.xml").getroot()
        for element in root.iter():
            for key in ("time", "timestamp", "hostname"):
                element.attrib.pop(key, None)
        reports.append(ET.tostring(root, encoding="unicode"))
    assert reports[0] == reports[1]
    assert '<property name="tool_calls" value="3" />' in reports[0]
    assert reports[0].count("<system-out>") == {"failed": 1, "none": 0, "all": 3}[system_out]


def test_uncounted_sources_keep_the_ones_used_last(tmp_path: Path, project: Reads,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Sources no one counted (a streamed file's cases, pytest's): the ``UNCOUNTED_KEPT`` used last stay cached,
    an older one is read again when named again."""
    monkeypatch.setattr(execute, "UNCOUNTED_KEPT", 2)
    (tmp_path / "third.json").write_text(json.dumps(MESSAGES), encoding="utf-8")
    cache = execute.SourceCache()
    for name in ("run.json", "other.json", "run.json", "third.json", "run.json", "other.json"):
        assert cache.trajectory(Source(file=tmp_path / name)).calls[0].name == "search"
    # other.json was used longest ago when third.json came: read again; run.json, used since, was not
    assert project.files == ["run.json", "other.json", "third.json", "other.json"]
