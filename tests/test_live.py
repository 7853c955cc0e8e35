"""Live sources: a command's stdout or a Python callable's return value is the run; repeat and pass_rate."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest
from trajrun.run.runner import RunOptions, run_paths

AGENT = '''
import asyncio, json, os, sys

def trajectory(city):
    return {"tool_calls": [{"name": "get_forecast", "args": {"city": city}}]}

def run(city="Paris"):
    return trajectory(city)

async def run_async(city="Paris"):
    await asyncio.sleep(0)
    return trajectory(city)

def broken():
    raise RuntimeError("model quota exceeded")

def flaky(counter):
    path = os.path.join(os.path.dirname(__file__), counter)
    n = 0
    if os.path.exists(path):
        with open(path) as f:
            n = int(f.read())
    with open(path, "w") as f:
        f.write(str(n + 1))
    return trajectory("Paris" if n % 2 == 0 else "Lyon")

if __name__ == "__main__":
    if sys.argv[1] == "fail":
        print("connecting...", file=sys.stderr)
        print("error: no API key", file=sys.stderr)
        sys.exit(3)
    if sys.argv[1] == "sleep":
        import time; time.sleep(5)
    print(json.dumps(trajectory(sys.argv[1])))
'''


def outcomes(tmp_path: Path, cases: str) -> list[tuple[str, str, str]]:
    """Write an agent module and a suite of ``cases`` beside it, run it, return (name, outcome, message).

    The module is named after the test's folder so no test reuses another's imported module.
    """
    module = "agent_" + "".join(ch if ch.isalnum() else "_" for ch in tmp_path.name)
    (tmp_path / "agent_live.py").write_text(AGENT)
    (tmp_path / f"{module}.py").write_text(AGENT)
    cases = textwrap.dedent(cases).replace("agent_live:", f"{module}:")
    (tmp_path / "live.suite.yaml").write_text("cases:\n" + textwrap.indent(cases, "  "))
    result = run_paths([tmp_path], RunOptions(root=tmp_path))
    assert not any(s.load_errors for s in result.suites), result.suites
    return [(c.name, c.outcome, c.message) for c in result.cases]


PY = sys.executable


def test_command_stdout_is_the_document(tmp_path: Path) -> None:
    """A command runs in the suite's folder and its JSON stdout is read as the run."""
    got = outcomes(tmp_path, f"""
        - name: cmd
          source: {{command: "{PY} agent_live.py Tokyo"}}
          steps: [{{get_forecast: {{city: Tokyo}}}}]
    """)
    assert got == [("cmd", "passed", "")]


def test_command_failure_is_a_case_error_with_stderr_tail(tmp_path: Path) -> None:
    """A non-zero exit is a case error showing the exit status and the end of stderr."""
    [(_, outcome, message)] = outcomes(tmp_path, f"""
        - name: cmd
          source: {{command: "{PY} agent_live.py fail"}}
          steps: [get_forecast]
    """)
    assert outcome == "error"
    assert "exited with status 3" in message and "error: no API key" in message


def test_command_timeout_is_a_case_error(tmp_path: Path) -> None:
    """A command past its timeout is a case error that says so."""
    [(_, outcome, message)] = outcomes(tmp_path, f"""
        - name: slow
          source: {{command: "{PY} agent_live.py sleep", timeout: 0.5}}
          steps: [get_forecast]
    """)
    assert outcome == "error" and "timed out after 0.5s" in message


@pytest.mark.parametrize("func", ["run", "run_async"])
def test_python_callable_is_called_with_args(tmp_path: Path, func: str) -> None:
    """python: module:function is imported from the suite folder, called with args, awaited if async."""
    got = outcomes(tmp_path, f"""
        - name: py
          source: {{python: "agent_live:{func}", args: {{city: Oslo}}}}
          steps: [{{get_forecast: {{city: Oslo}}}}]
    """)
    assert got == [("py", "passed", "")]


def test_python_callable_that_raises_is_a_case_error(tmp_path: Path) -> None:
    """An exception in the agent is a case error with its last traceback line."""
    [(_, outcome, message)] = outcomes(tmp_path, """
        - name: py
          source: {python: "agent_live:broken"}
          steps: [get_forecast]
    """)
    assert outcome == "error" and "RuntimeError: model quota exceeded" in message


def test_repeat_passes_when_pass_rate_is_met(tmp_path: Path) -> None:
    """repeat: 4 with pass_rate 0.5 passes when half the runs pass; each run calls the agent anew."""
    got = outcomes(tmp_path, """
        - name: flaky
          source: {python: "agent_live:flaky", args: {counter: a.txt}}
          repeat: 4
          pass_rate: 0.5
          steps: [{get_forecast: {city: Paris}}]
    """)
    assert got == [("flaky", "passed", "")]
    assert (tmp_path / "a.txt").read_text() == "4"


def test_repeat_fails_below_pass_rate(tmp_path: Path) -> None:
    """repeat: 4 with the default pass_rate 1.0 fails when some runs fail, saying how many passed."""
    [(_, outcome, message)] = outcomes(tmp_path, """
        - name: flaky
          source: {python: "agent_live:flaky", args: {counter: b.txt}}
          repeat: 4
          steps: [{get_forecast: {city: Paris}}]
    """)
    assert outcome == "failed" and "2/4 runs passed" in message


def test_repeat_is_an_error_only_when_every_run_errs(tmp_path: Path) -> None:
    """When every repetition errs the case is an error."""
    [(_, outcome, message)] = outcomes(tmp_path, """
        - name: broken
          source: {python: "agent_live:broken"}
          repeat: 2
          steps: [get_forecast]
    """)
    assert outcome == "error" and "all 2 runs erred" in message


def test_inline_messages_source(tmp_path: Path) -> None:
    """Inline messages are read like a file's document."""
    doc = json.dumps([{"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "search", "arguments": '{"q": "x"}'}}]}])
    got = outcomes(tmp_path, f"""
        - name: inline
          source: {{messages: {doc}}}
          steps: [{{search: {{q: x}}}}]
    """)
    assert got == [("inline", "passed", "")]


PRINTER = """
import sys
if sys.argv[1] == "deep":
    print("[" * 5000 + "]" * 5000)
else:
    print('{"tool_calls": [{"name": "a", "args": {"n": ' + "7" * 5000 + '}}]}')
"""


def test_command_stdout_past_the_json_limits_is_a_case_error(tmp_path: Path) -> None:
    """Nesting too deep or an integer too long on a command's stdout is a case error naming where, as in a file."""
    (tmp_path / "printer.py").write_text(PRINTER)
    got = outcomes(tmp_path, f"""
        - name: deep
          source: {{command: "{PY} printer.py deep"}}
          steps: [a]
        - name: huge
          source: {{command: "{PY} printer.py huge"}}
          steps: [a]
    """)
    assert got == [
        ("deep", "error", f"source: {PY} printer.py deep: invalid JSON at line 1, column 501: lists and maps nest more "
                          "than 500 levels deep there, too deep to decode; flatten the document"),
        ("huge", "error", f"source: {PY} printer.py huge: invalid JSON at line 1, column 45: an integer of 5,000 digits "
                          "(77777777…77777777); trajrun reads integers of at most 4,300 digits (Python's limit) — quote "
                          "it to keep it as a string"),
    ]
