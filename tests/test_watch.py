"""``trajrun run --watch``: what each suite reads, and reruns of exactly the suites a real file
change affects (watchfiles on real files in tmp_path); every wait is bounded and every watch
stoppable."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Sequence

import pytest

from cli_helpers import invoke_in

from trajrun.run.watch import read_inputs, suite_inputs, watch

pytest.importorskip("watchfiles")

WAIT = 30.0
"""Seconds any one wait may take before the test fails (a hang, not a speed check)."""


def write(path: Path, text: str) -> Path:
    """Write dedented text, making the folders."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def calls(*names: str) -> str:
    """A run in trajrun's own format calling these tools in order."""
    return json.dumps(
        {"tool_calls": [{"name": name, "args": {}, "turn": 0} for name in names], "turns": 1}
    )


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``suites/a`` reads runs/a.json and a golden file, ``suites/b`` reads runs/b.json; the working
    folder (a project: golden files must lie inside one)."""
    write(tmp_path / "pyproject.toml", '[project]\nname = "agent"\n')
    write(tmp_path / "runs" / "a.json", calls("search"))
    write(tmp_path / "runs" / "b.json", calls("book"))
    write(tmp_path / "golden" / "a.yaml", "- search\n")
    write(
        tmp_path / "suites" / "a.suite.yaml",
        """
        suite: a
        cases:
          - name: searches
            source: ../runs/a.json
            steps: [search]
          - name: as the golden file says
            source: ../runs/a.json
            golden: ../golden/a.yaml
    """,
    )
    write(
        tmp_path / "suites" / "b.suite.yaml",
        """
        suite: b
        cases:
          - name: books
            source: ../runs/b.json
            steps: [book]
    """,
    )
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_what_a_suite_reads(project: Path) -> None:
    """A suite reads itself, its file sources and golden files (resolved); a glob source is kept as
    a pattern; a suite that does not load reads only itself."""
    files, globs = suite_inputs(Path("suites/a.suite.yaml"))
    assert files == {
        (project / name).resolve()
        for name in ("suites/a.suite.yaml", "runs/a.json", "golden/a.yaml")
    }
    assert globs == ()
    write(
        project / "bulk" / "c.suite.yaml",
        """
        suite: c
        cases:
          - name: each run
            source: {file: ../runs/*.json, each: file}
            never: [delete]
    """,
    )
    assert suite_inputs(project / "bulk" / "c.suite.yaml")[1] == (
        str(project.resolve() / "runs" / "*.json"),
    )
    broken = write(project / "suites" / "broken.suite.yaml", "cases: [\n")
    assert suite_inputs(broken) == ({broken.resolve()}, ())


def test_a_change_is_mapped_to_the_suites_it_affects(project: Path) -> None:
    """A source or golden file reruns the suites that read it; a new suite file under a folder given
    runs; a file nobody reads runs nothing; the folders of every file read are watched."""
    inputs = read_inputs(["suites"])
    resolved = project.resolve()
    assert inputs.affected({resolved / "runs" / "b.json"}) == [Path("suites/b.suite.yaml")]
    assert inputs.affected({resolved / "golden" / "a.yaml"}) == [Path("suites/a.suite.yaml")]
    assert inputs.affected({resolved / "notes.txt"}) == []
    write(project / "suites" / "deeper" / "new.suite.yaml", "cases: []\n")
    assert inputs.affected({resolved / "suites" / "deeper" / "new.suite.yaml"}) == [
        Path("suites/deeper/new.suite.yaml")
    ]
    assert inputs.affected(
        {resolved / "suites" / "a.suite.yaml", resolved / "runs" / "b.json"}
    ) == [Path("suites/a.suite.yaml"), Path("suites/b.suite.yaml")]
    assert {resolved / "suites", resolved / "runs", resolved / "golden"} <= inputs.folders
    assert inputs.describe() == "2 suite files and the 3 files they read"


class Recorder:
    """The ``rerun`` and ``tell`` of a watch run in a thread: what each run was given, and events to
    wait on."""

    def __init__(self) -> None:
        self.runs: list[list[str]] = []
        self.lines: queue.Queue[str] = queue.Queue()
        self.ran: queue.Queue[list[str]] = queue.Queue()

    def rerun(self, chosen: Sequence[str | Path]) -> int:
        names = [Path(path).as_posix() for path in chosen]
        self.runs.append(names)
        self.ran.put(names)
        return len(self.runs)

    def ready(self) -> None:
        """Wait until the watch says it is watching (its watcher then runs)."""
        while not self.lines.get(timeout=WAIT).startswith("watching "):
            pass


def test_reruns_only_the_affected_suites_until_max_runs(project: Path) -> None:
    """A real write to a source reruns only the suite reading it, a golden file's the suite naming
    it; the watch ends after ``max_runs`` runs and returns the last run's value."""
    recorder, stop, returned = Recorder(), threading.Event(), []
    thread = threading.Thread(
        target=lambda: returned.append(
            watch(["suites"], recorder.rerun, stop=stop, max_runs=3, tell=recorder.lines.put)
        )
    )
    thread.start()
    try:
        assert recorder.ran.get(timeout=WAIT) == ["suites"]
        recorder.ready()
        (project / "runs" / "b.json").write_text(calls("book", "pay"), encoding="utf-8")
        assert recorder.ran.get(timeout=WAIT) == ["suites/b.suite.yaml"]
        assert recorder.lines.get(timeout=WAIT) == "changed: runs/b.json; running 1 suite file"
        recorder.ready()
        (project / "golden" / "a.yaml").write_text("- search\n- search\n", encoding="utf-8")
        assert recorder.ran.get(timeout=WAIT) == ["suites/a.suite.yaml"]
        thread.join(WAIT)
        assert not thread.is_alive()
    finally:
        stop.set()
        thread.join(WAIT)
    assert returned == [3]


def test_the_stop_event_ends_a_waiting_watch(project: Path) -> None:
    """With no change, setting ``stop`` ends the watch after the first run, which it returns."""
    recorder, stop, returned = Recorder(), threading.Event(), []
    thread = threading.Thread(
        target=lambda: returned.append(
            watch(["suites"], recorder.rerun, stop=stop, tell=recorder.lines.put)
        )
    )
    thread.start()
    try:
        recorder.ready()
        stop.set()
        thread.join(WAIT)
        assert not thread.is_alive()
    finally:
        stop.set()
        thread.join(WAIT)
    assert returned == [1]
    assert recorder.runs == [["suites"]]


def test_the_command_reruns_on_a_change_and_ctrl_c_ends_it(project: Path) -> None:
    """``trajrun run --watch`` as a real process: the first run, a line per change, the affected
    suite's report; Ctrl-C while waiting exits with the last run's status (0: the second change
    fixed the case)."""
    env = {**os.environ, "NO_COLOR": "1", "PYTHONUNBUFFERED": "1"}
    command = [sys.executable, "-m", "trajrun", "run", "--watch", "suites", "--html", "r.html"]
    with subprocess.Popen(
        command, cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    ) as process:
        lines: queue.Queue[str] = queue.Queue()

        def read() -> None:
            for line in process.stdout or ():
                lines.put(line.rstrip("\n"))

        reader = threading.Thread(target=read)
        reader.start()

        def until(prefix: str) -> list[str]:
            seen: list[str] = []
            while not (seen and seen[-1].startswith(prefix)):
                seen.append(lines.get(timeout=WAIT))
            return seen

        try:
            assert [line.split()[:2] for line in until("3 passed")[:2]] == [
                ["suites/a.suite.yaml", ".."],
                ["suites/b.suite.yaml", "."],
            ]
            assert until("trajrun: watching")[-1] == (
                "trajrun: watching 2 suite files and the 3 files they read; Ctrl-C to stop"
            )
            (project / "runs" / "b.json").write_text(calls("pay"), encoding="utf-8")
            rerun = until("1 failed")
            assert "trajrun: changed: runs/b.json; running 1 suite file" in rerun
            assert [
                line.split()[:2] for line in rerun if line.startswith("suites/") and " " in line
            ] == [["suites/b.suite.yaml", "F"]]
            until("trajrun: watching")
            (project / "runs" / "b.json").write_text(calls("book"), encoding="utf-8")
            until("1 passed")
            until("trajrun: watching")
            process.send_signal(signal.SIGINT)
            assert process.wait(WAIT) == 0
        finally:
            process.kill()
            process.wait(WAIT)
            reader.join(WAIT)
        errors = process.stderr.read() if process.stderr else ""
        assert errors == "trajrun: note: --watch writes no report files (--html left out)\n"
    assert not (project / "r.html").exists()


def test_without_the_extra_the_error_names_the_pip_command(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where watchfiles is not installed (hidden here), --watch exits 2 before running anything."""
    monkeypatch.setitem(sys.modules, "watchfiles", None)
    result = invoke_in(project, "run", "--watch")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert (
        result.stderr
        == "trajrun: error: --watch needs the watchfiles package: pip install 'trajrun[watch]'\n"
    )


def test_update_golden_is_refused(project: Path) -> None:
    """--update-golden would write a golden file, which would start the next run: refused."""
    result = invoke_in(project, "run", "--watch", "--update-golden")
    assert result.exit_code == 2
    assert result.stderr == (
        "trajrun: error: --watch and --update-golden do not go together: each golden file "
        "written would start another run\n"
    )
