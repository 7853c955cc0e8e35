"""Cassettes: modes (auto, record, replay, off), and every way a cassette or an agent can go wrong, each a case error
that says what and how to fix it, with nothing written outside its place.

The agent here is fake_models.STDLIB_AGENT, a few lines of standard library that posts Chat Completions requests
to ``OPENAI_BASE_URL`` and prints the messages (the SDK agents are in test_capture_wire.py). Only 127.0.0.1 is used.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fake_models import STDLIB_AGENT, upstream
from trajrun.errors import SuiteErrors
from trajrun.run.results import CaseResult
from trajrun.run.runner import RunOptions, run_paths
from trajrun.suites.load import load_suite

KEY = "sk-test-cassette-0123456789"


def exchange(content: str, said: str = "hello", status: int = 200) -> str:
    """One recorded exchange in a hand-written cassette: the agent's request and the model's answer."""
    messages = [{"role": "user", "content": "hi"}]
    if content:
        messages += [{"role": "assistant", "content": "hello"}, {"role": "user", "content": content}]
    body = {"model": "fake", "messages": messages}
    answer = {"choices": [{"message": {"role": "assistant", "content": said}}]}
    return (f"- request: {{api: openai, method: POST, path: /chat/completions?v=2, body: {json.dumps(body)}}}\n"
            f"  response: {{status: {status}, body: {json.dumps(answer)}}}\n")


ONE = "version: 1\nexchanges:\n" + exchange("")
TWO = ONE + exchange("again")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project (pyproject.toml) with the agent in suites/; the key in the environment, no mode set."""
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    (tmp_path / "suites").mkdir()
    (tmp_path / "suites" / "agent.py").write_text(STDLIB_AGENT, encoding="utf-8")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.delenv("TRAJRUN_CASSETTES", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    return tmp_path


def run_case(project: Path, rounds: int = 1, cassette: str | None = "cassettes/{case}.yaml", extra: str = "",
             **source: Any) -> CaseResult:
    """Run one case of the agent (``rounds`` model calls) with a cassette; its result."""
    command = f"{shlex.quote(sys.executable)} agent.py {rounds} {extra}".strip()
    spec = {"command": command, "timeout": 30, **source, **({"cassette": cassette} if cassette else {})}
    case = {"name": "greets", "source": spec, "steps": [], "answer": {"$regex": "^hello"}}
    (project / "suites" / "agent.suite.yaml").write_text(json.dumps({"cases": [case]}), encoding="utf-8")
    result = run_paths([project / "suites"], RunOptions(root=project))
    assert not result.suites[0].load_errors, result.suites[0].load_errors
    return result.suites[0].cases[0]


def write(project: Path, text: str) -> Path:
    """The case's cassette, written by hand."""
    path = project / "suites" / "cassettes" / "greets.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_a_hand_written_cassette_replays(project: Path) -> None:
    """Auto mode with a cassette: replayed, the query's key left out of the comparison; no upstream needed."""
    write(project, TWO)
    result = run_case(project, rounds=2)
    assert (result.outcome, result.message, result.notes) == ("passed", "", ())


def test_auto_records_a_missing_cassette_without_the_key(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No cassette: the run goes to the upstream and is recorded; neither the header's nor the URL's key is kept,
    and the volatile stream_options is left out."""
    with upstream() as fake:
        monkeypatch.setenv("OPENAI_BASE_URL", fake.url + "/v1")
        result = run_case(project, rounds=2)
    path = project / "suites" / "cassettes" / "greets.yaml"
    assert result.notes == (f"cassette recorded: {path} (2 exchanges)",)
    assert result.message.startswith("answer: the run has no assistant message with text")  # the fake calls tools
    assert fake.requests[0][0] == "/v1/chat/completions?api-key=sk-in-url-secret&v=2"  # the upstream got it all
    text = path.read_text(encoding="utf-8")
    assert "path: /chat/completions?v=2\n" in text
    assert KEY not in text and "sk-in-url-secret" not in text and "stream_options" not in text


def test_off_leaves_the_cassette_alone(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--cassettes off: the agent talks to the model itself (no proxy) and nothing is written."""
    monkeypatch.setenv("TRAJRUN_CASSETTES", "off")
    with upstream() as fake:
        monkeypatch.setenv("OPENAI_BASE_URL", fake.url + "/v1")
        result = run_case(project)
    assert len(fake.requests) == 1
    assert result.message.startswith("answer: the run has no assistant message with text")  # the fake calls tools
    assert not (project / "suites" / "cassettes").exists()


def test_record_replaces_a_cassette(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--cassettes record calls the model even when a cassette exists, and rewrites it."""
    path = write(project, ONE)
    monkeypatch.setenv("TRAJRUN_CASSETTES", "record")
    with upstream() as fake:
        monkeypatch.setenv("OPENAI_BASE_URL", fake.url + "/v1")
        result = run_case(project)
    assert result.notes == (f"cassette recorded: {path} (1 exchange)",)
    assert "get_weather" in path.read_text(encoding="utf-8")


def test_replay_without_a_cassette_is_an_error(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--cassettes replay never calls the model: a missing cassette says how to record it."""
    monkeypatch.setenv("TRAJRUN_CASSETTES", "replay")
    result = run_case(project)
    path = project / "suites" / "cassettes" / "greets.yaml"
    assert (result.outcome, result.message) == ("error", (
        f"source: {sys.executable} agent.py 1: cassette {path} does not exist and --cassettes replay records nothing; "
        "record it with `trajrun run --cassettes record` (the agent then calls the model)"))  # fmt: skip


def test_a_corrupt_cassette_names_its_line(project: Path) -> None:
    """A cassette that is not YAML: where, and the fix."""
    path = write(project, "version: 1\nexchanges: [\n")
    result = run_case(project)
    assert result.outcome == "error"
    assert result.message.startswith(f"source: {sys.executable} agent.py 1: cassette {path}:3:1: invalid YAML: ")
    assert result.message.endswith("; fix it or re-record with `trajrun run --cassettes record`")


@pytest.mark.parametrize(("text", "where", "problem"), [
    (ONE.replace("status: 200", "status: ok"), "4:22: exchanges[0].response.status",
     "status must be an HTTP status from 100 to 599, found the string 'ok'"),
    (ONE.replace("api: openai", "api: gemini"), "3:18: exchanges[0].request.api",
     "api must be openai or anthropic, found the string 'gemini'"),
    (ONE.replace("response: {status: 200, body:", "response: {status: 200, text:"), "4:13: exchanges[0].response",
     "a response is a map with status and either body or events, found keys status, text"),
    ("version: 2\nexchanges: []\n", "1:1", "a cassette is a map with version: 1 and exchanges (a list), found a map"),
])  # fmt: skip
def test_a_hand_edited_cassette_names_the_key(project: Path, text: str, where: str, problem: str) -> None:
    """A cassette whose shape is wrong: file, line, column and key path, what is wrong, and the fix."""
    path = write(project, text)
    result = run_case(project)
    assert (result.outcome, result.message) == ("error", (
        f"source: {sys.executable} agent.py 1: cassette {path}:{where}: {problem}; fix it or re-record with "
        "`trajrun run --cassettes record`"))  # fmt: skip


def test_an_agent_that_stops_early_is_an_error(project: Path) -> None:
    """Fewer requests than recorded: the agent changed, so the run is not the recorded one."""
    path = write(project, TWO)
    result = run_case(project, rounds=1)
    assert result.message == (
        f"source: {sys.executable} agent.py 1: the agent ended after 1 of the 2 exchanges in cassette {path}: exchange "
        "2 (POST /openai/chat/completions?v=2) was never requested, so the agent stops earlier than when it was "
        "recorded; re-record with `trajrun run --cassettes record` if that is intended")  # fmt: skip


def test_an_agent_that_asks_more_is_an_error(project: Path) -> None:
    """More requests than recorded: the first one beyond the cassette is the error, whatever the agent did next."""
    path = write(project, ONE)
    result = run_case(project, rounds=2)
    assert result.message == (
        f"source: {sys.executable} agent.py 2: request 2 (POST /openai/chat/completions?v=2) is not in cassette "
        f"{path}, whose 1 exchange the agent already used: the agent asks the model more than when it was recorded; "
        "re-record with `trajrun run --cassettes record`")  # fmt: skip


def test_an_agent_that_ignores_the_base_url_is_an_error(project: Path) -> None:
    """An agent whose client has a base URL of its own never reaches the proxy: the error says so and why."""
    write(project, ONE)
    result = run_case(project, extra="ignore")
    assert result.outcome == "error"
    assert result.message.startswith(f"source: {sys.executable} agent.py 1 ignore: no request reached the model "
                                     "proxy: trajrun set OPENAI_BASE_URL=http://127.0.0.1:")  # fmt: skip
    assert result.message.endswith(
        "/anthropic for the agent; have its model client take its base URL from these variables (the openai and "
        "anthropic SDKs do when given no base_url), and have a command that starts the agent elsewhere (a "
        "container, a clean environment) pass them on")  # fmt: skip


def test_a_cassette_outside_the_project_is_an_error(project: Path) -> None:
    """A cassette path leading out of the project: an error before the agent runs, nothing written there."""
    result = run_case(project, cassette="../../outside/{case}.yaml")
    outside = project.parent / "outside"
    assert (result.outcome, result.message) == ("error", (
        f"source: {sys.executable} agent.py 1: cassette {project / 'suites' / '..' / '..' / 'outside' / 'greets.yaml'}"
        f" resolves to {outside / 'greets.yaml'}, outside the suite's project {project} (the nearest folder up "
        "holding pyproject.toml or .git, else the suite's folder); put the cassette inside the project"))
    assert not outside.exists()


def test_an_unknown_mode_is_an_error(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """TRAJRUN_CASSETTES set to something else: the modes are named."""
    monkeypatch.setenv("TRAJRUN_CASSETTES", "replay-all")
    result = run_case(project)
    assert result.message == ("source: TRAJRUN_CASSETTES must be one of auto, record, replay, off, found "
                              "'replay-all'; fix or unset it")


def test_the_cli_option_sets_the_mode(project: Path) -> None:
    """`trajrun run --cassettes replay` (a real process): a missing cassette errs instead of being recorded."""
    run_case(project, cassette=None)  # writes the suite; the case itself reaches no model
    suite = project / "suites" / "agent.suite.yaml"
    suite.write_text(suite.read_text(encoding="utf-8").replace('"timeout": 30', '"timeout": 30, "cassette": "c.yaml"'),
                     encoding="utf-8")
    env = {key: value for key, value in os.environ.items() if not key.startswith("TRAJRUN_")}
    done = subprocess.run([sys.executable, "-m", "trajrun", "run", "--cassettes", "replay", str(suite)], cwd=project,
                          env={**env, "NO_COLOR": "1"}, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"cassette {project / 'suites' / 'c.yaml'} does not exist and --cassettes replay records nothing" in (
        done.stdout)


@pytest.mark.parametrize(("source", "problem"), [
    ({"file": "run.json", "cassette": "c.yaml"}, "3:34: cases[0].source.cassette: cassette applies to a command or "
                                                 "python source only"),
    ({"command": "agent", "cassette": 3}, "3:46: cases[0].source.cassette: cassette must be a file path "
                                          "(cassettes/{case}.yaml), found the number 3"),
    ({"command": "agent", "capture": "wire", "format": "openai"}, "3:53: cases[0].source.format: capture: wire reads "
                                                                  "the run from the model traffic, whose API says its "
                                                                  "format; remove format"),
])  # fmt: skip
def test_source_keys_are_checked_when_loading(tmp_path: Path, source: dict[str, Any], problem: str) -> None:
    """`cassette` on a source that runs nothing, of the wrong type, or `capture: wire` with a format."""
    path = tmp_path / "s.suite.yaml"
    path.write_text("cases:\n  - name: c\n    source: " + json.dumps(source) + "\n    steps: []\n", encoding="utf-8")
    with pytest.raises(SuiteErrors) as caught:
        load_suite(path)
    assert str(caught.value) == f"{path}:{problem}"
