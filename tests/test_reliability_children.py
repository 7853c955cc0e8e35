"""Every process trajrun starts ends with it, however it ends: ``kill -9`` of trajrun while a ``python:`` or
``command:`` source runs (serially or under ``-j``) leaves no source, nothing the source started, and no worker."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from trajrun.run.runner import RunOptions, run_paths

pytestmark = pytest.mark.skipif(os.name != "posix", reason="signals and process groups are POSIX")

PY = sys.executable
FORECAST = {"tool_calls": [{"name": "get_forecast", "args": {"city": "Paris"}}]}

# each records its pid, its parent's and a child's it started, then waits for ever; a function's parent is trajrun
# or the worker that runs it, a command's is the shell that watches the lifeline for it
AGENT = '''
import json, os, subprocess, time

def slow(record):
    child = subprocess.Popen(["sleep", "300"])
    with open(record + ".tmp", "w") as out:
        json.dump([os.getpid(), os.getppid(), child.pid], out)
    os.replace(record + ".tmp", record)
    time.sleep(300)
'''
COMMAND = 'sleep 300 & echo "[$$, $PPID, $!]" > command.tmp && mv command.tmp command.pids; wait'
SUITES = {
    "python": '- {name: py, source: {python: "agent:slow", args: {record: python.pids}}, steps: [x]}',
    "command": f"- {{name: sh, source: {{command: {json.dumps(COMMAND)}}}, steps: [x]}}",
}


def gone(pid: int) -> bool:
    """Whether a process has ended (on Linux a zombie waiting for a reaper counts as ended)."""
    if not os.path.isdir("/proc"):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(")")[2].split()[0] == "Z"
    except FileNotFoundError:
        return True


def wait_until(condition: object, seconds: float) -> bool:
    """Poll ``condition`` (a callable) until it holds or ``seconds`` pass."""
    deadline = time.monotonic() + seconds
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def write_suites(folder: Path, kinds: list[str]) -> None:
    """One suite file per kind of live source, and the agent."""
    (folder / "agent.py").write_text(AGENT)
    for kind in kinds:
        (folder / f"{kind}.suite.yaml").write_text("cases:\n" + textwrap.indent(SUITES[kind], "  ") + "\n")


@pytest.mark.parametrize(("kinds", "jobs"), [(["python"], "1"), (["command"], "1"), (["command", "python"], "2")],
                         ids=["python", "command", "both-j2"])
def test_sigkill_of_trajrun_ends_its_sources_what_they_started_and_its_workers(
        tmp_path: Path, kinds: list[str], jobs: str) -> None:
    """``kill -9`` of trajrun mid-source: within seconds the source, the ``sleep`` it started, a command's shell
    and (under ``-j``) the worker that ran the function are all gone."""
    write_suites(tmp_path, kinds)
    proc = subprocess.Popen([PY, "-m", "trajrun", "run", ".", "-j", jobs], cwd=tmp_path, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    records = [tmp_path / f"{kind}.pids" for kind in kinds]
    pids: list[int] = []
    try:
        assert wait_until(lambda: all(record.exists() for record in records), 60)
        for record in records:
            source, parent, child = json.loads(record.read_text())
            pids += [source, parent, child]
        proc.kill()
        proc.wait(30)
        assert wait_until(lambda: all(gone(pid) for pid in pids), 10), [pid for pid in pids if not gone(pid)]
    finally:
        kill_left([proc.pid, *pids])


def kill_left(pids: list[int]) -> None:
    """Kill what a failing test left running."""
    for pid in pids:
        if not gone(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("source", [
    '{command: "sleep 300 >/dev/null 2>&1 & echo $! > left.pid; cat run.json", timeout: 30}',
    '{python: "leaver:run", args: {record: left.pid}, timeout: 30}',
], ids=["command", "python"])
def test_what_a_source_leaves_running_ends_with_it(tmp_path: Path, source: str) -> None:
    """A source that ends leaving a process it started running (with its output closed, so nothing waits for
    it): the case passes as before, and the process is killed with the source's group, not left behind."""
    (tmp_path / "run.json").write_text(json.dumps(FORECAST))
    source = source.replace("left.pid", str(tmp_path / "left.pid"))  # a function runs in trajrun's folder
    (tmp_path / "leaver.py").write_text(textwrap.dedent(f"""\
        import subprocess

        def run(record):
            child = subprocess.Popen(["sleep", "300"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            with open(record, "w") as out:
                out.write(str(child.pid))
            return {FORECAST!r}
    """))
    suite = f"cases:\n  - {{name: leaves, source: {source}, steps: [get_forecast]}}\n"
    (tmp_path / "left.suite.yaml").write_text(suite)
    [case] = run_paths([tmp_path], RunOptions(root=tmp_path)).cases
    assert case.outcome == "passed", case.message
    pid = int((tmp_path / "left.pid").read_text())
    try:
        assert wait_until(lambda: gone(pid), 10)
    finally:
        kill_left([pid])
