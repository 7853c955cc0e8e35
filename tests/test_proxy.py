"""The model proxy: an upstream that hangs, answers garbage or a web page, traffic past the size limit, requests it
cannot take; each a clear case error (never a traceback), answered to the agent in a way its SDK will not retry.
Also the pieces: server-sent events read and written back, the first differing field, keys left out.

Only 127.0.0.1 is used: the agent is fake_models.STDLIB_AGENT, the upstream fake_models.upstream.
"""

from __future__ import annotations

import http.client
import json
import shlex
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_models import STDLIB_AGENT, upstream
from trajrun.errors import SourceError
from trajrun.run.results import CaseResult
from trajrun.run.runner import RunOptions, run_paths
from trajrun.sources import proxy

KEY = "sk-test-proxy-0123456789"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder with the agent and a suite of one case recording its traffic."""
    (tmp_path / "agent.py").write_text(STDLIB_AGENT, encoding="utf-8")
    case = {"name": "greets", "source": {"command": f"{shlex.quote(sys.executable)} agent.py 1", "timeout": 30,
                                         "cassette": "cassettes/{case}.yaml"}, "steps": []}  # fmt: skip
    (tmp_path / "agent.suite.yaml").write_text(json.dumps({"cases": [case]}), encoding="utf-8")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("TRAJRUN_CASSETTES", "record")
    return tmp_path


def run(project: Path) -> CaseResult:
    """The case's result."""
    return run_paths([project], RunOptions(root=project)).suites[0].cases[0]


ORIGIN = f"source: {sys.executable} agent.py 1: "


@pytest.mark.parametrize(("behaviour", "problem"), [
    ("garbage", "answered garbage, not HTTP (BadStatusLine); check OPENAI_BASE_URL"),
    ("html", "answered 200 with text/html, neither JSON nor an event stream: '<html><body>Welcome to nginx!</body>"
             "</html>'"),
    ("hang", "sent nothing for 1s (the model call hangs); set TRAJRUN_UPSTREAM_TIMEOUT to wait longer"),
])  # fmt: skip
def test_a_failing_upstream_is_the_case_error(project: Path, monkeypatch: pytest.MonkeyPatch, behaviour: str,
                                             problem: str) -> None:
    """The upstream's failure is the error (not the agent's crash that follows it); no cassette is written."""
    monkeypatch.setenv("TRAJRUN_UPSTREAM_TIMEOUT", "1")
    with upstream() as fake:
        fake.behaviour = behaviour
        monkeypatch.setenv("OPENAI_BASE_URL", fake.url + "/v1")
        result = run(project)
    assert (result.outcome, result.message) == (
        "error", f"{ORIGIN}the upstream {fake.url}/v1/chat/completions {problem}")
    assert not (project / "cassettes").exists()


def test_an_unreachable_upstream_is_the_case_error(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing listens at the upstream: the error names it and what to check."""
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{port}/v1")
    result = run(project)
    assert result.message == (f"{ORIGIN}cannot reach the upstream http://127.0.0.1:{port}/v1/chat/completions "
                              "(Connection refused); check the network and OPENAI_BASE_URL")


def test_traffic_past_the_limit_is_the_case_error(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """TRAJRUN_MAX_SOURCE_BYTES bounds the traffic of a run, as it bounds a source file."""
    monkeypatch.setenv("TRAJRUN_MAX_SOURCE_BYTES", "50")
    with upstream() as fake:
        monkeypatch.setenv("OPENAI_BASE_URL", fake.url + "/v1")
        result = run(project)
    assert result.message == (f"{ORIGIN}the model traffic is more than 50 bytes, the limit on one source document; "
                              "set TRAJRUN_MAX_SOURCE_BYTES to a larger number of bytes")
    assert not fake.requests


def test_an_upstream_that_is_no_url_is_the_case_error(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """OPENAI_BASE_URL in trajrun's environment must be an http(s) URL to forward to."""
    monkeypatch.setenv("OPENAI_BASE_URL", "ftp://example.invalid/\nv1")
    result = run(project)
    assert result.message == (f"{ORIGIN}OPENAI_BASE_URL is 'ftp://example.invalid/\\nv1', not an http:// or "
                              "https:// URL, so the model proxy cannot forward to it; fix or unset it")


@pytest.fixture
def served() -> Iterator[proxy.ModelProxy]:
    """A proxy replaying one recorded exchange."""
    recorded = {"request": {"api": "openai", "method": "POST", "path": "/chat/completions", "body": {"n": 1}},
                "response": {"status": 200, "events": [{"data": {"a": 1}}, {"event": "done", "data": "[DONE]"}]}}
    served = proxy.ModelProxy("agent", replay=("c.yaml", [recorded]))
    yield served
    served.close()


def send(served: proxy.ModelProxy, path: str, body: bytes) -> http.client.HTTPResponse:
    """POST ``body`` to the proxy; its answer, read whole."""
    port = int(served.variables["OPENAI_BASE_URL"].split(":")[2].split("/")[0])
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("POST", path, body, {"Content-Type": "application/json"})
        answer = connection.getresponse()
        answer.read()
    finally:
        connection.close()
    return answer


def test_the_proxy_listens_on_loopback_and_replays_a_stream(served: proxy.ModelProxy) -> None:
    """127.0.0.1 only; a recorded stream goes back as server-sent events; replay gives the SDKs a key to send."""
    assert served.variables["OPENAI_BASE_URL"].startswith("http://127.0.0.1:")
    assert served.variables["ANTHROPIC_BASE_URL"].endswith("/anthropic")
    port = int(served.variables["OPENAI_BASE_URL"].split(":")[2].split("/")[0])
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("POST", "/openai/chat/completions", b'{"n": 1, "stream_options": {"x": 1}}')
        answer = connection.getresponse()
        assert (answer.status, answer.getheader("Content-Type")) == (200, "text/event-stream; charset=utf-8")
        assert answer.read() == b'data: {"a": 1}\n\nevent: done\ndata: [DONE]\n\n'
    finally:
        connection.close()
    served.settle()
    served.check()


@pytest.mark.parametrize(("path", "body", "status", "problem"), [
    ("/v1/chat/completions", b"{}", 404, "the agent sent POST /v1/chat/completions, which is under neither /openai "
                                         "nor /anthropic; have its model client take its base URL from "
                                         "OPENAI_BASE_URL or ANTHROPIC_BASE_URL"),
    ("/openai/chat/completions", b"\x00not json", 400, "the agent sent POST /openai/chat/completions with a body that "
                                                       "is not JSON, which no model API takes"),
])  # fmt: skip
def test_a_request_the_proxy_cannot_take(served: proxy.ModelProxy, path: str, body: bytes, status: int,
                                         problem: str) -> None:
    """Answered with an error the SDKs read and do not retry; the run is an error saying why."""
    answer = send(served, path, body)
    assert (answer.status, answer.getheader("x-should-retry")) == (status, "false")
    served.settle()
    with pytest.raises(SourceError) as caught:
        served.check()
    assert str(caught.value) == f"agent: {problem}"


def test_garbage_bytes_to_the_proxy_print_no_traceback(served: proxy.ModelProxy,
                                                       capfd: pytest.CaptureFixture[str]) -> None:
    """Bytes that are not HTTP get http.server's error page; nothing reaches stderr, and no request was made."""
    port = int(served.variables["OPENAI_BASE_URL"].split(":")[2].split("/")[0])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        raw.sendall(b"\x16\x03\x01 garbage\r\n\r\n")
        assert b"Error code: 400" in raw.recv(1000)
    served.settle()
    with pytest.raises(SourceError, match="^agent: no request reached the model proxy: "):
        served.check()
    assert capfd.readouterr().err == ""


def test_events_are_read_as_they_come_and_written_back() -> None:
    """Events split anywhere (CRLF too); JSON objects decoded, other data kept as text; written back the same."""
    reader = proxy.EventReader()
    for piece in (b"event: a\r\ndata: {\"x\"", b": [1]}\r\n\r\n: comment\ndata: [DONE]\n", b"\ndata: 3"):
        reader.feed(piece)
    events = reader.close()
    assert events == [{"event": "a", "data": {"x": [1]}}, {"data": "[DONE]"}, {"data": "3"}]
    assert proxy.sse(events) == b'event: a\ndata: {"x": [1]}\n\ndata: [DONE]\n\ndata: 3\n\n'


def test_the_first_difference_is_named() -> None:
    """A changed value, a missing key, a list of another length: each with both sides shown."""
    old = {"api": "openai", "body": {"messages": [{"content": "a"}], "model": "m"}}
    assert proxy.first_difference(old, {"api": "openai", "body": {"messages": [{"content": "b"}], "model": "m"}}) == (
        "body.messages[0].content", '"a"', '"b"')
    assert proxy.first_difference(old, {"api": "openai", "body": {"messages": [{"content": "a"}]}}) == (
        "body.model", '"m"', "nothing")
    assert proxy.first_difference(old, {"api": "openai", "body": {"messages": [], "model": "m"}}) == (
        "body.messages", "1 items", "0 items")


def test_keys_are_left_out_of_requests() -> None:
    """Key-like query parameters and volatile fields never reach an exchange; a key in a body is redacted."""
    request = proxy.normalized("openai", "POST", "/chat?api_key=k1&token=k2&v=1", {"user": "u", "model": "m"})
    assert request == {"api": "openai", "method": "POST", "path": "/chat?v=1", "body": {"model": "m"}}
    assert proxy.redact({"echo": ["say sk-123456789 twice"]}, {"sk-123456789"}) == {"echo": ["say <redacted> twice"]}
