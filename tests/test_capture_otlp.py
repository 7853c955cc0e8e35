"""Live capture over OTLP (`capture: otlp`): a real agent traced with the OpenTelemetry SDK exports to trajrun.

The agent (tests/data/agents/otlp_agent.py) runs under the standard OTLP/HTTP exporter with GenAI spans:
an LLM span asking for two tool calls at once, two execute_tool spans, an LLM span with the answer. Only
127.0.0.1 is used. Suites are written as JSON (which is YAML).
"""

from __future__ import annotations

import errno
import gzip
import json
import shlex
import shutil
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from trajrun.errors import SourceError
from trajrun.run.results import CaseResult
from trajrun.run.runner import RunOptions, run_paths
from trajrun.sources import extras, otlp

AGENT = Path(__file__).parent / "data" / "agents" / "otlp_agent.py"
STEPS = [{"parallel": [
    {"name": "get_forecast", "args": {"city": "Tokyo"}, "result": {"summary": "light rain", "high": 19}},
    {"name": "get_forecast", "args": {"city": "Paris"}, "result": {"summary": "sunny", "high": 24}},
]}]  # fmt: skip


def case(name: str, source: dict[str, Any], **keys: Any) -> dict[str, Any]:
    """A case on the agent: by default the parallel forecasts with their results."""
    return {"name": name, "source": source, "steps": STEPS, **keys}


def run_cases(folder: Path, suites: dict[str, list[dict[str, Any]]], jobs: int = 1) -> dict[str, CaseResult]:
    """Write the agent and the suites (file name → cases) into ``folder``, run them, return results by case name."""
    shutil.copy(AGENT, folder / "otlp_agent.py")
    for name, cases in suites.items():
        (folder / f"{name}.suite.yaml").write_text(json.dumps({"cases": cases}), encoding="utf-8")
    result = run_paths([folder], RunOptions(root=folder, jobs=jobs))
    assert all(not suite.load_errors for suite in result.suites), [s.load_errors for s in result.suites]
    return {case.name: case for suite in result.suites for case in suite.cases}


@pytest.fixture(scope="module")
def passing(tmp_path_factory: pytest.TempPathFactory) -> dict[str, CaseResult]:
    """Both protocols and both kinds of live source, in two suite files run by two workers (-j 2)."""
    command = f"{shlex.quote(sys.executable)} otlp_agent.py http/protobuf"
    return run_cases(tmp_path_factory.mktemp("capture"), {
        "python": [
            case("python, http/protobuf", {"python": "otlp_agent:run", "capture": "otlp", "timeout": 60},
                 answer={"$regex": "^Paris: sunny"}, budget={"turns": 2, "tokens": 220},
                 latency={"get_forecast": {"max_ms": 5000}, "total": {"max_ms": 30000}}),
            case("python, http/json", {"python": "otlp_agent:run", "args": {"protocol": "http/json"},
                                       "capture": "otlp", "timeout": 60}, budget={"turns": 2, "tokens": 220}),
        ],
        "command": [case("command, http/protobuf", {"command": command, "capture": "otlp", "timeout": 60})],
    }, jobs=2)  # fmt: skip


@pytest.mark.parametrize("name", ["python, http/protobuf", "python, http/json", "command, http/protobuf"])
def test_spans_exported_over_otlp_are_the_run(passing: dict[str, CaseResult], name: str) -> None:
    """The receiver's spans read as the run: two parallel calls in one turn with their results, then the answer."""
    result = passing[name]
    assert (result.outcome, result.message) == ("passed", "")
    traj = result.trajectory
    assert traj is not None and traj.format == "otel"
    assert [(c.name, c.args, c.turn) for c in traj.calls] == [
        ("get_forecast", {"city": "Paris"}, 0), ("get_forecast", {"city": "Tokyo"}, 0)]
    assert (traj.turns, traj.usage.total_tokens if traj.usage else None) == (2, 220)
    assert traj.answer == "Paris: sunny, 24°C. Tokyo: light rain, 19°C."
    assert all(c.duration_ms is not None and c.duration_ms >= 10 for c in traj.calls)  # each tool span sleeps 10 ms
    assert traj.wall_ms is not None and traj.wall_ms >= 20


@pytest.fixture(scope="module")
def failing(tmp_path_factory: pytest.TempPathFactory) -> dict[str, CaseResult]:
    """Agents that export nothing, send a malformed body, or hang: each a case error."""
    def source(protocol: str, timeout: float = 60) -> dict[str, Any]:
        return {"python": "otlp_agent:run", "args": {"protocol": protocol}, "capture": "otlp", "timeout": timeout}

    return run_cases(tmp_path_factory.mktemp("failing"), {"failing": [
        case("exports nothing", source("silent")),
        case("malformed body", source("malformed")),
        case("hangs", source("hang", 1)),
    ]})


def test_an_agent_that_exports_nothing_is_an_error_naming_the_variables(failing: dict[str, CaseResult]) -> None:
    """No span arrived: the error names the variables trajrun set and how to make the SDK export."""
    result = failing["exports nothing"]
    assert result.outcome == "error"
    assert result.message.startswith("source: otlp_agent:run: no spans arrived: trajrun set OTEL_EXPORTER_OTLP_ENDPOINT="
                                     "http://127.0.0.1:")  # fmt: skip
    assert "/v1/traces and OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf for the agent, and no request reached it" in (
        result.message)
    assert "flush it before the agent ends" in result.message


def test_a_malformed_body_is_rejected_and_reported(failing: dict[str, CaseResult]) -> None:
    """The receiver answers 400 and the case errs: spans are missing, the run must not pass."""
    result = failing["malformed body"]
    assert result.outcome == "error"
    assert result.message.startswith("source: otlp_agent:run: the OTLP receiver answered 400 to a request, so spans "
                                     "are missing: a malformed OTLP/protobuf body (")


def test_an_agent_that_hangs_is_killed_at_the_timeout(failing: dict[str, CaseResult]) -> None:
    """The timeout kills the agent's process group, as for any live source."""
    result = failing["hangs"]
    assert (result.outcome, result.message) == ("error", "source: otlp_agent:run: timed out after 1s (stderr was empty)")


def test_without_the_extra_the_case_error_names_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without opentelemetry-proto a capture is a case error that names the install command; the agent never runs."""
    monkeypatch.setitem(extras.EXTRAS, "otel", ("trajrun_no_such_module",))
    results = run_cases(tmp_path, {"x": [case("no extra", {"python": "otlp_agent:run", "capture": "otlp"})]})
    assert (results["no extra"].outcome, results["no extra"].message) == (
        "error", "source: otlp_agent:run: capture: otlp needs the otel extra, which is not installed (no module "
                 "trajrun_no_such_module): pip install 'trajrun[otel]'")  # fmt: skip


def test_requires_skips_with_the_install_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`requires` turns a missing extra or module into a skip whose reason says what to install; met, the case runs."""
    monkeypatch.setitem(extras.EXTRAS, "otel", ("trajrun_no_such_module",))
    source = {"python": "otlp_agent:run", "capture": "otlp"}
    results = run_cases(tmp_path, {"x": [
        case("needs the extra", source, requires=["trajrun[otel]", "json"]),
        case("needs a module", source, requires=["trajrun_no_such_module.sub", "trajrun[langgraph]"]),
        case("needs what is here", {"messages": []}, steps=[], requires=["json", "trajrun[langgraph]"]),
    ]})  # fmt: skip
    assert [(r.outcome, r.message) for r in results.values()] == [
        ("skipped", "requires trajrun[otel] (pip install 'trajrun[otel]'), which is not installed here"),
        ("skipped", "requires the module trajrun_no_such_module.sub, which is not installed here"),
        ("passed", ""),
    ]


# The receiver itself, without an agent


def post(receiver: otlp.Receiver, body: bytes, content_type: str, path: str = "/v1/traces",
         headers: dict[str, str] | None = None) -> int:
    """POST to the receiver; the status it answers."""
    url = receiver.variables["OTEL_EXPORTER_OTLP_ENDPOINT"] + path
    request = urllib.request.Request(url, body, {"Content-Type": content_type, **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


SPAN = {"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174", "name": "execute_tool search",
        "startTimeUnixNano": "1", "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
            {"key": "gen_ai.tool.name", "value": {"stringValue": "search"}}]}  # fmt: skip
EXPORT = {"resourceSpans": [{"scopeSpans": [{"spans": [SPAN]}]}]}


def test_the_receiver_answers_each_kind_of_request() -> None:
    """JSON and gzipped JSON are kept; metrics and logs answered and dropped; other paths 404; bad bodies 400/415."""
    receiver = otlp.Receiver("test")
    try:
        body = json.dumps(EXPORT).encode()
        assert post(receiver, body, "application/json") == 200
        assert post(receiver, gzip.compress(body), "application/json", headers={"Content-Encoding": "gzip"}) == 200
        assert post(receiver, b"{}", "application/json", "/v1/metrics") == 200
        assert post(receiver, b"{}", "application/json", "/elsewhere") == 404
        assert post(receiver, b"{not json", "application/json") == 400
        assert post(receiver, b"[1, 2]", "application/json") == 400
        assert post(receiver, body, "text/plain") == 415
        assert post(receiver, body, "application/json", headers={"Content-Encoding": "br"}) == 415
    finally:
        receiver.close()
    with pytest.raises(SourceError) as info:
        receiver.exports()
    assert str(info.value) == ("test: the OTLP receiver answered 400 to a request, so spans are missing: a malformed "
                               "OTLP/JSON body (Expecting property name enclosed in double quotes: line 1 column 2 "
                               "(char 1)) (3 more requests failed)")  # fmt: skip


def test_protobuf_ids_come_out_in_hex() -> None:
    """A protobuf export reads as OTLP/JSON: camelCase keys, enum numbers, ids in hex as OTLP/JSON writes them."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id, span.span_id, span.name, span.kind = bytes.fromhex(SPAN["traceId"]), b"\x01" * 8, "chat", 3
    export = otlp._protobuf_reader()(request.SerializeToString())
    read = export["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert read == {"traceId": SPAN["traceId"], "spanId": "0101010101010101", "name": "chat", "kind": 3}


def test_a_taken_port_is_retried_on_another(monkeypatch: pytest.MonkeyPatch) -> None:
    """Binding that finds the address in use tries again; the receiver still serves."""
    tries: list[int] = []
    bind = otlp._Server.server_bind

    def flaky(server: otlp._Server) -> None:
        tries.append(1)
        if len(tries) == 1:
            raise OSError(errno.EADDRINUSE, "Address already in use")
        bind(server)

    monkeypatch.setattr(otlp._Server, "server_bind", flaky)
    receiver = otlp.Receiver("test")
    try:
        assert post(receiver, json.dumps(EXPORT).encode(), "application/json") == 200
    finally:
        receiver.close()
    assert len(tries) == 2 and receiver.exports() == [EXPORT]


def test_the_no_spans_error_names_settings_that_stop_export(monkeypatch: pytest.MonkeyPatch) -> None:
    """OTEL_SDK_DISABLED or an OTEL_TRACES_EXPORTER without otlp in trajrun's environment is pointed out."""
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    receiver = otlp.Receiver("test")
    receiver.close()
    with pytest.raises(SourceError) as info:
        receiver.exports()
    assert str(info.value).endswith("; the environment has OTEL_SDK_DISABLED=true turns the SDK off and "
                                    "OTEL_TRACES_EXPORTER=console leaves OTLP out")  # fmt: skip
