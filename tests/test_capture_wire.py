"""Live agents on the official SDKs through the model proxy: recorded against a fake upstream on 127.0.0.1,
replayed with the upstream gone, and read with `capture: wire` from their traffic.

The agent (tests/data/agents/sdk_agent.py) runs two tool rounds on Chat Completions, Responses or Anthropic
Messages, streaming or not; the upstream (tests/fake_models.py) is scripted. Nothing leaves the machine.
"""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_models import Upstream, upstream
from trajrun.reports import json_report
from trajrun.run.results import CaseResult, RunResult
from trajrun.run.runner import RunOptions, run_paths

pytest.importorskip("openai")
pytest.importorskip("anthropic")

AGENT = Path(__file__).parent / "data" / "agents" / "sdk_agent.py"
OPENAI_KEY, ANTHROPIC_KEY = "sk-test-openai-0123456789abcdef", "sk-ant-test-0123456789abcdef"
STEPS = [{"get_weather": {"city": "Paris"}}, {"get_forecast": {"city": "Paris", "days": 2}}]
ANSWER = "Paris: sunny, 24°C; rain tomorrow"
APIS = [(api, stream) for api in ("chat", "responses", "anthropic") for stream in (False, True)]


def wire_case(api: str, stream: bool, **keys: Any) -> dict[str, Any]:
    """A case on the agent, read from its traffic, with a cassette named after it."""
    source = {"python": "sdk_agent:run", "args": {"api": api, "stream": stream}, "capture": "wire",
              "cassette": "cassettes/{case}.yaml", "timeout": 60}
    return {"name": f"{api} {'stream' if stream else 'json'}", "source": source, "steps": STEPS,
            "answer": ANSWER, "budget": {"turns": 3, "tokens": 48}, **keys}


def run_suite(folder: Path, cases: list[dict[str, Any]], jobs: int = 1) -> RunResult:
    """Write the suite (as JSON, which is YAML) beside the agent and run it."""
    (folder / "agent.suite.yaml").write_text(json.dumps({"cases": cases}), encoding="utf-8")
    result = run_paths([folder], RunOptions(root=folder, jobs=jobs))
    assert all(not suite.load_errors for suite in result.suites), [s.load_errors for s in result.suites]
    return result


def by_name(result: RunResult) -> dict[str, CaseResult]:
    """The run's results by case name."""
    return {case.name: case for suite in result.suites for case in suite.cases}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project folder (it has a pyproject.toml) holding the agent."""
    folder = tmp_path_factory.mktemp("wire")
    (folder / "pyproject.toml").write_text("", encoding="utf-8")
    shutil.copy(AGENT, folder / "sdk_agent.py")
    return folder


@pytest.fixture(scope="module")
def keys() -> Iterator[pytest.MonkeyPatch]:
    """The keys the SDKs send, in trajrun's environment (so the agents inherit them)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENAI_API_KEY", OPENAI_KEY)
        patch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
        patch.delenv("TRAJRUN_CASSETTES", raising=False)
        yield patch


@pytest.fixture(scope="module")
def recorded(project: Path, keys: pytest.MonkeyPatch) -> tuple[RunResult, Upstream]:
    """Every API, streaming and not, recorded (default mode auto: no cassette yet) against the fake upstream, by
    two workers; plus a `command:` agent whose stdout is the run, recorded too."""
    command = f"{shlex.quote(sys.executable)} sdk_agent.py chat stream"
    cases = [wire_case(api, stream) for api, stream in APIS]
    cases.append({"name": "command prints", "source": {"command": command, "cassette": "cassettes/{case}.yaml",
                                                       "timeout": 60}, "steps": STEPS, "answer": ANSWER})
    with upstream() as fake:
        keys.setenv("OPENAI_BASE_URL", fake.url + "/v1")
        keys.setenv("ANTHROPIC_BASE_URL", fake.url)
        return run_suite(project, cases, jobs=2), fake


@pytest.fixture(scope="module")
def replayed(project: Path, recorded: tuple[RunResult, Upstream], keys: pytest.MonkeyPatch) -> RunResult:
    """The same suite again with the upstream gone (its port closed) and no key: every answer from the cassettes."""
    keys.delenv("OPENAI_API_KEY")
    keys.delenv("ANTHROPIC_API_KEY")
    keys.setenv("TRAJRUN_CASSETTES", "replay")
    return run_paths([project], RunOptions(root=project))


@pytest.mark.parametrize(("api", "stream"), APIS)
def test_recorded_runs_read_from_the_wire(recorded: tuple[RunResult, Upstream], api: str, stream: bool) -> None:
    """Calls from the responses, results from the next requests, usage summed, the last text the answer."""
    result = by_name(recorded[0])[f"{api} {'stream' if stream else 'json'}"]
    assert (result.outcome, result.message) == ("passed", "")
    assert result.notes == (f"cassette recorded: {result.file.rsplit('/', 1)[0]}/cassettes/{api}-"
                            f"{'stream' if stream else 'json'}.yaml (3 exchanges)",)
    traj = result.trajectory
    assert traj is not None and traj.format == {"chat": "openai", "responses": "openai-responses"}.get(api, api)
    assert [(c.name, c.args, c.result, c.turn) for c in traj.calls] == [
        ("get_weather", {"city": "Paris"}, "sunny, 24°C", 0), ("get_forecast", {"city": "Paris", "days": 2},
                                                               "rain tomorrow", 1)]  # fmt: skip
    assert (traj.turns, traj.answer, traj.usage and traj.usage.total_tokens) == (3, ANSWER, 48)


def test_the_key_reaches_the_upstream_and_nothing_written(project: Path, recorded: tuple[RunResult, Upstream]) -> None:
    """The SDKs' keys went on to the upstream; no cassette and no report holds them."""
    result, fake = recorded
    sent = {value for _, headers, _ in fake.requests for name, value in headers.items()
            if name.lower() in ("authorization", "x-api-key")}
    assert {OPENAI_KEY, ANTHROPIC_KEY} <= {value.removeprefix("Bearer ") for value in sent}
    assert len(fake.requests) == 21  # seven agents, three model calls each
    texts = [path.read_text(encoding="utf-8") for path in (project / "cassettes").iterdir()]
    assert len(texts) == 7
    for text in [*texts, json_report.encode(result).decode()]:
        assert OPENAI_KEY not in text and ANTHROPIC_KEY not in text
        assert "uthorization" not in text and "x-api-key" not in text
    assert all("stream_options" not in text for text in texts)  # a volatile field, left out


def test_a_streamed_response_is_kept_as_its_events(project: Path, recorded: tuple[RunResult, Upstream]) -> None:
    """The cassette holds the stream's events, its `[DONE]` included, ready to be replayed as a stream."""
    text = (project / "cassettes" / "chat-stream.yaml").read_text(encoding="utf-8")
    assert text.startswith("# The model traffic of case 'chat stream', recorded by trajrun. `trajrun run` replays "
                           "it;\n")
    assert "\n    events:\n    - data:\n        id: chatcmpl-0\n" in text
    assert "    - data: '[DONE]'\n" in text


@pytest.mark.parametrize("name", [f"{api} {'stream' if stream else 'json'}" for api, stream in APIS] +
                         ["command prints"])  # fmt: skip
def test_replay_needs_no_upstream(replayed: RunResult, name: str) -> None:
    """With the upstream gone every case passes as recorded, with no note (nothing was recorded)."""
    result = by_name(replayed)[name]
    assert (result.outcome, result.message, result.notes) == ("passed", "", ())
    assert result.trajectory is not None and result.trajectory.answer == ANSWER


def test_a_changed_agent_fails_in_replay_naming_the_field(project: Path, replayed: RunResult,
                                                           keys: pytest.MonkeyPatch) -> None:
    """A tool that now returns something else sends another request: the case errs at the field that changed."""
    cases = [wire_case("chat", True), wire_case("anthropic", False)]
    for case in cases:
        case["source"]["args"]["forecast"] = "snow tomorrow"
    folder = project / "changed"
    folder.mkdir()
    shutil.copytree(project / "cassettes", folder / "cassettes")
    results = by_name(run_suite(folder, cases))
    chat, anthropic = results["chat stream"], results["anthropic json"]
    cassette = folder / "cassettes"
    assert (chat.outcome, chat.message) == ("error", (
        "source: sdk_agent:run: request 3 (POST /openai/chat/completions) differs from exchange 3 of cassette "
        f"{cassette}/chat-stream.yaml at body.messages[4].content: the cassette has \"rain tomorrow\", the agent sent "
        "\"snow tomorrow\"; a prompt, a tool result or the agent's settings changed (if on purpose, re-record with "
        "`trajrun run --cassettes record`)"))  # fmt: skip
    assert anthropic.message == (
        "source: sdk_agent:run: request 3 (POST /anthropic/v1/messages) differs from exchange 3 of cassette "
        f"{cassette}/anthropic-json.yaml at body.messages[4].content[0].content: the cassette has \"rain tomorrow\", "
        "the agent sent \"snow tomorrow\"; a prompt, a tool result or the agent's settings changed (if on purpose, "
        "re-record with `trajrun run --cassettes record`)")  # fmt: skip
