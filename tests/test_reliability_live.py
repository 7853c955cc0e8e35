"""Live sources and workers cannot take a run down: whatever an agent, a command or a worker does becomes an
error of its own case, the other cases run and the reports are written; an interrupt stops everything."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from trajrun.errors import SuiteErrors
from trajrun.run.runner import RunOptions, run_paths
from trajrun.suites.load import load_suite, schema_text

pytestmark = pytest.mark.skipif(os.name != "posix", reason="signals and process groups are POSIX")
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

PY = sys.executable
FORECAST = {"tool_calls": [{"name": "get_forecast", "args": {"city": "Paris"}}]}

AGENT = '''
import datetime, os, signal, sys, time

def forecast(city="Paris"):
    return {"tool_calls": [{"name": "get_forecast", "args": {"city": city}}]}

def exit_zero():
    sys.exit(0)

def exit_hard():
    os._exit(3)

def interrupt():
    raise KeyboardInterrupt

def crash():
    os.kill(os.getpid(), signal.SIGSEGV)

def wander():
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), "elsewhere"))
    return forecast()

def chatty():
    print("NOISE from the agent", flush=True)
    os.system("echo NOISE from its child")
    return forecast()

def slow():
    time.sleep(10)
    return forecast()

def imports():
    import importlib.util
    # shadowed: a name found as one of trajrun's reader modules (any folder may be named trajrun)
    readers = os.path.join("trajrun", "sources", "")
    found = [(name, importlib.util.find_spec(name)) for name in ("openai", "anthropic", "langchain")]
    shadowed = [name for name, spec in found if spec and str(spec.origin).endswith(readers + name + ".py")]
    return forecast("shadowed" if shadowed else "clean")

def unjsonable(kind):
    doc = forecast()
    args = doc["tool_calls"][0]["args"]
    if kind == "cycle":
        args["self"] = doc
    else:
        args["bad"] = {"set": {"a"}, "date": datetime.date(2025, 6, 12), "huge": 10 ** 5000}[kind]
    return doc
'''

# one run of every misbehaving agent, in one suite: the later cases show the earlier ones left nothing behind
PYTHON_CASES = """
- {name: sys exit, source: {python: "agent:exit_zero"}, steps: [get_forecast]}
- {name: wrong city, source: runs/paris.json, steps: [{get_forecast: {city: Tokyo}}]}
- {name: os exit, source: {python: "agent:exit_hard"}, steps: [get_forecast]}
- {name: interrupt, source: {python: "agent:interrupt"}, steps: [get_forecast]}
- {name: crash, source: {python: "agent:crash"}, steps: [get_forecast]}
- {name: chdir, source: {python: "agent:wander"}, steps: [get_forecast]}
- {name: relative source after chdir, source: runs/later.json, steps: [get_forecast]}
- {name: prints, source: {python: "agent:chatty"}, steps: [get_forecast]}
- {name: slow, source: {python: "agent:slow", timeout: 0.5}, steps: [get_forecast]}
- {name: imports, source: {python: "agent:imports"}, steps: [{get_forecast: {city: clean}}]}
- {name: set, source: {python: "agent:unjsonable", args: {kind: set}}, steps: [get_forecast]}
- {name: cycle, source: {python: "agent:unjsonable", args: {kind: cycle}}, steps: [get_forecast]}
- {name: date, source: {python: "agent:unjsonable", args: {kind: date}}, steps: [get_forecast]}
- {name: huge, source: {python: "agent:unjsonable", args: {kind: huge}}, steps: [get_forecast]}
"""


def trajrun(*args: str, cwd: Path, **popen: Any) -> subprocess.Popen[str]:
    """Start ``python -m trajrun ARGS`` in ``cwd``, colours off, output captured."""
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.Popen([PY, "-m", "trajrun", *args], cwd=cwd, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **popen)


def write_suite(path: Path, cases: str) -> None:
    """A suite file of ``cases`` (a YAML list)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("cases:\n" + textwrap.indent(textwrap.dedent(cases).strip(), "  ") + "\n")


def by_name(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The JSON report's cases by name."""
    return {case["name"]: case for suite in report["suites"] for case in suite["cases"]}


def gone(pid: int) -> bool:
    """Whether a process has ended (a zombie waiting for its reaper counts as ended)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(")")[2].split()[0] == "Z"
    except FileNotFoundError:
        return True


def wait_until(condition: Any, seconds: float = 10.0) -> bool:
    """Poll ``condition`` until it holds or ``seconds`` pass."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.fixture(scope="module")
def python_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """``trajrun run . --junit-xml --json`` over the misbehaving agents, run once for the tests below."""
    folder = tmp_path_factory.mktemp("python_sources")
    (folder / "agent.py").write_text(AGENT)
    (folder / "runs").mkdir()
    (folder / "runs" / "paris.json").write_text(json.dumps(FORECAST))
    (folder / "runs" / "later.json").write_text(json.dumps(FORECAST))  # first read after the chdir
    (folder / "elsewhere").mkdir()
    write_suite(folder / "live.suite.yaml", PYTHON_CASES)
    proc = trajrun("run", ".", "--junit-xml", "report.xml", "--json", "report.json", cwd=folder)
    stdout, stderr = proc.communicate(timeout=120)
    report = json.loads((folder / "report.json").read_text()) if (folder / "report.json").exists() else {"suites": []}
    return {"folder": folder, "code": proc.returncode, "stdout": stdout, "stderr": stderr, "cases": by_name(report)}


def error_of(run: dict[str, Any], name: str) -> str:
    """The message of a case that must have erred."""
    case = run["cases"][name]
    assert case["outcome"] == "error", case
    return str(case["message"])


def test_misbehaving_python_sources_fail_only_their_cases(python_run: dict[str, Any]) -> None:
    """Exit 1 (a case failed, others erred), both reports written where asked, every case reported."""
    assert python_run["code"] == 1, python_run["stderr"]
    assert len(python_run["cases"]) == 14
    assert python_run["cases"]["wrong city"]["outcome"] == "failed"
    junit = (python_run["folder"] / "report.xml").read_text()
    assert 'name="sys exit"' in junit and "called sys.exit(0)" in junit
    assert python_run["stdout"].strip().splitlines()[-1].startswith("4 passed, 1 failed, 9 errors in ")


def test_sys_exit_is_a_case_error(python_run: dict[str, Any]) -> None:
    """sys.exit(0) in the agent used to end the whole run with status 0 and no report."""
    assert "agent:exit_zero: called sys.exit(0) instead of returning the messages" in error_of(python_run, "sys exit")


def test_os_exit_is_a_case_error(python_run: dict[str, Any]) -> None:
    """os._exit(3) used to end the run silently."""
    assert "exited with status 3 before returning" in error_of(python_run, "os exit")


def test_keyboard_interrupt_raised_by_the_agent_is_a_case_error(python_run: dict[str, Any]) -> None:
    """A KeyboardInterrupt the agent raises is not an interrupt of trajrun; its traceback starts in the agent."""
    message = error_of(python_run, "interrupt")
    assert "raised KeyboardInterrupt" in message and "agent.py" in message and "live_child" not in message


def test_a_crash_is_a_case_error_naming_the_signal(python_run: dict[str, Any]) -> None:
    """A segfault names the signal and shows the Python stack of the crash."""
    message = error_of(python_run, "crash")
    assert "was killed by SIGSEGV before returning" in message and "in crash" in message


def test_chdir_stays_in_the_agent(python_run: dict[str, Any]) -> None:
    """After an agent changes directory, relative sources and report paths still resolve where they did."""
    assert python_run["cases"]["chdir"]["outcome"] == "passed"
    assert python_run["cases"]["relative source after chdir"]["outcome"] == "passed"
    assert (python_run["folder"] / "report.xml").exists()
    assert not (python_run["folder"] / "elsewhere" / "report.xml").exists()


def test_prints_stay_out_of_the_console_report(python_run: dict[str, Any]) -> None:
    """What the agent (or its child) prints does not reach trajrun's stdout."""
    assert python_run["cases"]["prints"]["outcome"] == "passed"
    assert "NOISE" not in python_run["stdout"]


def test_a_python_source_past_its_timeout_is_a_case_error(python_run: dict[str, Any]) -> None:
    """``timeout`` applies to python sources: the child is killed and the case says so."""
    assert "agent:slow: timed out after 0.5s" in error_of(python_run, "slow")
    assert python_run["cases"]["slow"]["duration"] < 8


def test_trajrun_modules_do_not_shadow_the_agents_packages(python_run: dict[str, Any]) -> None:
    """trajrun's reader modules (sources/openai.py, …) are not on the child's import path."""
    assert python_run["cases"]["imports"]["outcome"] == "passed", python_run["cases"]["imports"]["message"]


@pytest.mark.parametrize(("name", "found"), [
    ("set", "$.tool_calls[0].args.bad is of type set"),
    ("cycle", "$.tool_calls[0].args.self refers back to a container that holds it"),
    ("date", "$.tool_calls[0].args.bad is of type datetime.date"),
    pytest.param("huge", "$.tool_calls[0].args.bad is an int too long to write in decimal",
                 marks=pytest.mark.skipif(not hasattr(sys, "get_int_max_str_digits"), reason="no int digit limit")),
])
def test_a_value_json_cannot_hold_is_a_case_error(python_run: dict[str, Any], name: str, found: str) -> None:
    """A return value that is not JSON says what and where it is, and how to fix it."""
    message = error_of(python_run, name)
    assert "returned something JSON cannot hold: " + found in message
    assert "return only dicts, lists, strings, numbers, booleans and None" in message


def test_timeout_is_accepted_for_python_sources_only_with_live_ones(tmp_path: Path) -> None:
    """The loader and the JSON Schema take ``timeout`` with a python source and still refuse it with a file source."""
    validator = jsonschema.Draft7Validator(json.loads(schema_text()))
    python = {"cases": [{"name": "a", "source": {"python": "agent:run", "timeout": 2.5}, "steps": ["x"]}]}
    file = {"cases": [{"name": "a", "source": {"file": "r.json", "timeout": 2}, "steps": ["x"]}]}
    assert validator.is_valid(python) and not validator.is_valid(file)
    (tmp_path / "ok.suite.yaml").write_text(json.dumps(python))
    assert load_suite(tmp_path / "ok.suite.yaml").cases[0].source.timeout == 2.5  # type: ignore[union-attr]
    (tmp_path / "bad.suite.yaml").write_text(json.dumps(file))
    with pytest.raises(SuiteErrors, match="timeout applies to a command or python source only"):
        load_suite(tmp_path / "bad.suite.yaml")


def test_a_command_reads_no_stdin(tmp_path: Path) -> None:
    """A command that reads stdin gets end of file, not trajrun's own stdin (which used to block it)."""
    (tmp_path / "reader.py").write_text(f"import json, sys\nsys.stdin.read()\nprint(json.dumps({FORECAST!r}))\n")
    write_suite(tmp_path / "stdin.suite.yaml", f"""
        - name: reads stdin
          source: {{command: "{PY} reader.py", timeout: 2}}
          steps: [get_forecast]
    """)
    read_end, write_end = os.pipe()  # trajrun's stdin stays open and silent, as a CI runner's may
    try:
        proc = trajrun("run", ".", cwd=tmp_path, stdin=read_end)
        stdout, _ = proc.communicate(timeout=60)
    finally:
        os.close(read_end)
        os.close(write_end)
    assert proc.returncode == 0, stdout
    assert stdout.strip().splitlines()[-1].startswith("1 passed in ")


@linux_only
def test_a_command_timeout_kills_what_the_shell_started(tmp_path: Path) -> None:
    """At the timeout the command's whole process group dies: a child that held stdout no longer outlives it."""
    write_suite(tmp_path / "orphan.suite.yaml", """
        - name: orphan
          source: {command: "sleep 60 & echo $! > child.pid; wait", timeout: 1}
          steps: [get_forecast]
    """)
    started = time.monotonic()
    [case] = run_paths([tmp_path], RunOptions(root=tmp_path)).cases
    assert case.outcome == "error" and "timed out after 1s" in case.message
    assert time.monotonic() - started < 8
    assert wait_until(lambda: gone(int((tmp_path / "child.pid").read_text())), 5)


def test_binary_stdout_is_a_case_error(tmp_path: Path) -> None:
    """Bytes that are not UTF-8 on stdout are a case error saying so, not a traceback."""
    (tmp_path / "png.py").write_text("import sys\nsys.stdout.buffer.write(b'\\x89PNG\\r\\n\\x1a\\n\\x00\\xff')\n")
    write_suite(tmp_path / "binary.suite.yaml", f"""
        - name: binary
          source: {{command: "{PY} png.py"}}
          steps: [get_forecast]
    """)
    [case] = run_paths([tmp_path], RunOptions(root=tmp_path)).cases
    assert case.outcome == "error"
    assert "stdout is not UTF-8 text (byte 0x89 at offset 0); print the messages as JSON" in case.message


JUDGE = '''
import faulthandler, os, signal

def exit_hard(expected, actual):
    os._exit(7)

def crash(expected, actual):
    faulthandler.disable()  # pytest's handler would print this worker's stack past the output capture
    os.kill(os.getpid(), signal.SIGSEGV)
'''


def test_a_dying_worker_fails_only_its_case(tmp_path: Path) -> None:
    """Under -j 2, a compare function that ends its worker errs its own case; every other result is kept."""
    module = "judge_" + "".join(ch if ch.isalnum() else "_" for ch in tmp_path.name)  # never imported before
    (tmp_path / f"{module}.py").write_text(JUDGE)
    (tmp_path / "paris.json").write_text(json.dumps(FORECAST))
    for suite, killer in (("a", "exit_hard"), ("b", "crash")):
        write_suite(tmp_path / f"{suite}.suite.yaml", f"""
            - {{name: {suite} before, source: paris.json, steps: [get_forecast]}}
            - name: {suite} killer
              source: paris.json
              tools: {{get_forecast: {{compare: "{module}:{killer}"}}}}
              steps: [{{get_forecast: {{city: Paris}}}}]
            - {{name: {suite} after, source: paris.json, steps: [get_forecast]}}
            - {{name: {suite} wrong, source: paris.json, steps: [{{get_forecast: {{city: Oslo}}}}]}}
        """)
    result = run_paths([tmp_path], RunOptions(jobs=2, root=tmp_path))
    got = [(c.name, c.outcome) for c in result.cases]
    assert got == [(f"{s} {n}", o) for s in "ab" for n, o in
                   (("before", "passed"), ("killer", "error"), ("after", "passed"), ("wrong", "failed"))]
    messages = {c.name: c.message for c in result.cases}
    assert "worker process died while running this case (exited with status 7)" in messages["a killer"]
    assert "worker process died while running this case (killed by SIGSEGV)" in messages["b killer"]
    assert result.exit_code() == 1


SLOW_AGENT = '''
import json, os, sys, time

pids, pid = [], os.getpid()
while pid > 1:  # this process and its ancestors, for the test to check that they are gone
    pids.append(pid)
    with open(f"/proc/{pid}/stat") as stat:
        pid = int(stat.read().rpartition(")")[2].split()[1])
with open(sys.argv[1] + ".tmp", "w") as out:
    json.dump(pids, out)
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(60)
'''


@linux_only
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_sigterm_stops_the_run_and_still_writes_the_reports(tmp_path: Path, jobs: str) -> None:
    """SIGTERM mid-run: exit 2, the console summary and JUnit report of what finished, no process left behind."""
    (tmp_path / "slow.py").write_text(SLOW_AGENT)
    (tmp_path / "paris.json").write_text(json.dumps(FORECAST))
    write_suite(tmp_path / "a.suite.yaml", f"""
        - {{name: a wrong, source: paris.json, steps: [{{get_forecast: {{city: Oslo}}}}]}}
        - {{name: a right, source: paris.json, steps: [get_forecast]}}
        - {{name: a slow, source: {{command: "{PY} slow.py a.pids", timeout: 120}}, steps: [get_forecast]}}
    """)
    write_suite(tmp_path / "b.suite.yaml", f"""
        - {{name: b right, source: paris.json, steps: [get_forecast]}}
        - {{name: b slow, source: {{command: "{PY} slow.py b.pids", timeout: 120}}, steps: [get_forecast]}}
    """)
    proc = trajrun("run", ".", "-j", jobs, "--junit-xml", "report.xml", cwd=tmp_path, start_new_session=True)
    slow = ["a.pids"] if jobs == "1" else ["a.pids", "b.pids"]  # -j 1 runs a's cases first, b's never
    try:
        assert wait_until(lambda: all((tmp_path / name).exists() for name in slow), 60)
        proc.send_signal(signal.SIGTERM)  # to trajrun alone: it must stop its workers and their sources itself
        stdout, stderr = proc.communicate(timeout=60)
    finally:  # a failing run leaves nothing behind either
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == 2, stderr
    finished = ["a wrong", "a right"] + (["b right"] if jobs == "2" else [])
    junit = (tmp_path / "report.xml").read_text()
    names = ("a wrong", "a right", "a slow", "b right", "b slow")
    assert [name for name in names if f'name="{name}"' in junit] == finished
    assert stdout.strip().splitlines()[-1].startswith(f"{len(finished) - 1} passed, 1 failed in ")
    assert "interrupted" in stderr
    for name in slow:
        chain = json.loads((tmp_path / name).read_text())
        below = chain[: chain.index(proc.pid)]  # the agent, its shell, the worker: all started by this run
        assert below and wait_until(lambda pids=below: all(gone(pid) for pid in pids), 10), below


def test_jobs_are_capped_and_auto_uses_every_core(tmp_path: Path) -> None:
    """-j far above the cores runs a few per core with a note; -j auto is accepted."""
    (tmp_path / "paris.json").write_text(json.dumps(FORECAST))
    write_suite(tmp_path / "a.suite.yaml", "- {name: a, source: paris.json, steps: [get_forecast]}")
    capped = trajrun("run", ".", "-j", "100000", cwd=tmp_path)
    _, stderr = capped.communicate(timeout=60)
    assert capped.returncode == 0 and "-j 100000 is more than 4 workers per core" in stderr
    auto = trajrun("run", ".", "-j", "auto", cwd=tmp_path)
    auto.communicate(timeout=60)
    assert auto.returncode == 0
