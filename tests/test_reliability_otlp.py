"""The OTLP receiver cannot be made to pass a run that is missing spans, crash, or run out of memory.

Each case is a live ``capture: otlp`` source run through ``trajrun run`` in a process of its own: the
agent exports its forecast with the OpenTelemetry SDK's exporter, and before or after that sends the
receiver something hostile over raw HTTP on 127.0.0.1 (a request cut off half-way, one still arriving
when the agent ends, a bad Content-Length, garbage, gzip bombs). Every case says ``never: [refund_all]``
and the hostile request carries a ``refund_all`` span, so a case that passed would be a run passing
without its evidence.
"""

from __future__ import annotations

import gzip
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from trajrun.errors import SourceError
from trajrun.sources import otlp

pytestmark = pytest.mark.skipif(os.name != "posix", reason="detached processes and SO_LINGER resets are POSIX")

PY = sys.executable
MIB = 1 << 20

AGENT = '''
import http.client, json, os, socket, struct, subprocess, sys, threading, time, urllib.parse, zlib

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

SPAN = {"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174", "name": "execute_tool refund_all",
        "startTimeUnixNano": "1", "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
            {"key": "gen_ai.tool.name", "value": {"stringValue": "refund_all"}}]}
REFUND = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [SPAN]}]}]}).encode()


def forecast():
    """The run itself: one get_forecast span, exported with the SDK's OTLP/HTTP exporter and flushed."""
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    with provider.get_tracer("agent").start_as_current_span("execute_tool get_forecast") as span:
        span.set_attributes({"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_forecast"})
    provider.shutdown()


def _address():
    url = urllib.parse.urlsplit(os.environ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"])
    return url.hostname, url.port


def _head(length):
    lines = ["POST /v1/traces HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/json",
             f"Content-Length: {length}"]
    return ("\\r\\n".join(lines) + "\\r\\n\\r\\n").encode()


def cut_off(how):
    """Send the first 100 bytes of the refund_all export, then close the connection (``close``) or reset it."""
    sock = socket.create_connection(_address())
    sock.sendall(_head(len(REFUND)) + REFUND[:100])
    time.sleep(0.5)  # the receiver has read the 100 bytes and waits for the rest
    if how == "reset":
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()
    forecast()


def in_flight(pidfile):
    """Export the forecast, then leave the refund_all export half-sent by a process that outlives the agent."""
    forecast()
    subprocess.Popen([sys.executable, __file__, pidfile], start_new_session=True, stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while not os.path.exists(pidfile) and time.monotonic() < deadline:
        time.sleep(0.02)


def _hold(pidfile):
    sock = socket.create_connection(_address())
    sock.sendall(_head(len(REFUND)) + REFUND[:100])
    time.sleep(0.5)  # the receiver has taken the first bytes
    with open(pidfile + ".tmp", "w") as out:
        out.write(str(os.getpid()))
    os.rename(pidfile + ".tmp", pidfile)
    time.sleep(30)


def content_length(value):
    """POST the refund_all export with this Content-Length header, as http.client sends it."""
    connection = http.client.HTTPConnection(*_address(), timeout=10)
    connection.putrequest("POST", "/v1/traces")
    connection.putheader("Content-Type", "application/json")
    connection.putheader("Content-Length", value)
    connection.endheaders(REFUND)
    try:
        connection.getresponse()
    except OSError:  # the receiver closed the connection without reading the body: a reset may come first
        pass
    forecast()


def garbage():
    """A request line that is not HTTP."""
    with socket.create_connection(_address()) as sock:
        sock.sendall(b"GARBAGE\\r\\n\\r\\n")
        sock.recv(1000)
    forecast()


def _bomb(size):
    """A gzip stream of ``size`` zero bytes, made a MiB at a time (the agent stays small)."""
    pack = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = bytes(1 << 20)
    return b"".join([*(pack.compress(block) for _ in range(size >> 20)), pack.flush()])


def bombs(count, size):
    """POST ``count`` gzip bombs at once, each inflating to ``size`` bytes, then export the forecast."""
    body = _bomb(size)
    gate = threading.Barrier(count)

    def post():
        connection = http.client.HTTPConnection(*_address(), timeout=60)
        gate.wait()
        connection.request("POST", "/v1/traces", body, {"Content-Type": "application/json",
                                                       "Content-Encoding": "gzip"})
        connection.getresponse().read()

    threads = [threading.Thread(target=post) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    forecast()


if __name__ == "__main__":
    _hold(sys.argv[1])
'''


def case(name: str, function: str, **args: Any) -> dict[str, Any]:
    """A case on ``agent:function``: the forecast and never refund_all, from the spans captured over OTLP."""
    source = {"python": f"agent:{function}", "args": args, "capture": "otlp", "timeout": 60}
    return {"name": name, "source": source, "steps": ["get_forecast"], "never": ["refund_all"]}


def trajrun(folder: Path, cases: list[dict[str, Any]], env: dict[str, str] | None = None) -> dict[str, Any]:
    """Write the agent and the cases into ``folder`` and run ``trajrun run . --json`` there, measured from a
    process of its own: exit status, stderr, the cases by name, and the peak resident memory of trajrun
    and the agents in bytes."""
    (folder / "agent.py").write_text(AGENT)
    (folder / "otlp.suite.yaml").write_text(json.dumps({"cases": cases}))
    measure = textwrap.dedent("""
        import json, resource, subprocess, sys
        done = subprocess.run(sys.argv[1:], capture_output=True, text=True, timeout=240)
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
        print(json.dumps({"code": done.returncode, "stdout": done.stdout, "stderr": done.stderr, "peak": peak}))
    """)  # fmt: skip
    done = subprocess.run([PY, "-c", measure, PY, "-m", "trajrun", "run", ".", "--json", "report.json"],
                          cwd=folder, env={**os.environ, "NO_COLOR": "1", **(env or {})},
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    run: dict[str, Any] = json.loads(done.stdout)
    assert (folder / "report.json").exists(), run
    report = json.loads((folder / "report.json").read_text())
    run["cases"] = {case["name"]: case for suite in report["suites"] for case in suite["cases"]}
    return run


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One run over every hostile exchange, and a plain run as the control; the detached sender is killed."""
    folder = tmp_path_factory.mktemp("otlp")
    pidfile = folder / "holder.pid"
    try:
        yield trajrun(folder, [
            case("plain", "forecast"),
            case("closed mid-body", "cut_off", how="close"),
            case("reset mid-body", "cut_off", how="reset"),
            case("in flight when the agent ends", "in_flight", pidfile=str(pidfile)),
            case("superscript length", "content_length", value="\u00b2"),
            case("5,000-digit length", "content_length", value="9" * 5000),
            case("negative length", "content_length", value="-1"),
            case("garbage request", "garbage"),
        ])  # fmt: skip
    finally:
        if pidfile.exists():
            try:
                os.kill(int(pidfile.read_text()), signal.SIGKILL)
            except ProcessLookupError:
                pass


def message(run: dict[str, Any], name: str) -> str:
    """The message of a case that must have erred."""
    result = run["cases"][name]
    assert result["outcome"] == "error", result
    return str(result["message"])


def test_every_hostile_exchange_is_a_case_error_without_a_traceback(hostile: dict[str, Any]) -> None:
    """Exit 1, the control case passes, every other case errs, and nothing reaches stderr as a traceback."""
    assert hostile["code"] == 1, hostile["stderr"]
    assert "Traceback" not in hostile["stderr"] and "Traceback" not in hostile["stdout"]
    assert [(name, result["outcome"]) for name, result in hostile["cases"].items()] == [
        ("plain", "passed"), *((name, "error") for name in list(hostile["cases"])[1:])]


def test_a_connection_closed_mid_body_is_a_lost_request(hostile: dict[str, Any]) -> None:
    """A body shorter than its Content-Length used to be read as it was: a cut at a boundary parsed."""
    assert message(hostile, "closed mid-body") == (
        "source: agent:cut_off: the OTLP receiver lost a request, so spans are missing: the connection closed "
        "after 100 of 351 body bytes; have the agent flush its exporter before it ends "
        "(TracerProvider.shutdown() or force_flush())")  # fmt: skip


def test_a_connection_reset_mid_body_is_a_lost_request(hostile: dict[str, Any]) -> None:
    """A reset used to print http.server's ConnectionResetError traceback and drop the request."""
    assert message(hostile, "reset mid-body") == (
        "source: agent:cut_off: the OTLP receiver lost a request, so spans are missing: the connection was reset "
        "after 100 of 351 body bytes; have the agent flush its exporter before it ends "
        "(TracerProvider.shutdown() or force_flush())")  # fmt: skip


def test_a_request_still_arriving_when_the_agent_ends_is_an_error(hostile: dict[str, Any]) -> None:
    """The receiver used to close after its wait and the case passed without the refund_all span."""
    assert message(hostile, "in flight when the agent ends") == (
        "source: agent:in_flight: 1 request to the OTLP receiver was still arriving 3s after the agent ended, so "
        "spans are missing; have the agent flush its exporter before it ends (TracerProvider.shutdown() or "
        "force_flush()) and leave no process of it exporting afterwards")  # fmt: skip


def test_a_content_length_that_is_not_ascii_digits_is_rejected(hostile: dict[str, Any]) -> None:
    """'²' passes str.isdigit() but not int(): it used to raise inside the handler."""
    assert message(hostile, "superscript length") == (
        "source: agent:content_length: the OTLP receiver answered 400 to a request, so spans are missing: a "
        "Content-Length that is not a number of bytes ('²'); send the body's length in ASCII digits")
    assert message(hostile, "negative length") == (
        "source: agent:content_length: the OTLP receiver answered 400 to a request, so spans are missing: a "
        "Content-Length that is not a number of bytes ('-1'); send the body's length in ASCII digits")


def test_a_content_length_of_5000_digits_is_too_large(hostile: dict[str, Any]) -> None:
    """5,000 digits used to raise int()'s digit limit inside the handler."""
    assert message(hostile, "5,000-digit length") == (
        "source: agent:content_length: the OTLP receiver answered 413 to a request, so spans are missing: a "
        "request of more than 1,073,741,824 bytes, the limit on one source document; set TRAJRUN_MAX_SOURCE_BYTES "
        "to a larger number of bytes")  # fmt: skip


def test_a_request_that_is_not_http_is_rejected(hostile: dict[str, Any]) -> None:
    """http.server answered 400 and the case passed; now the malformed request is a problem of the case."""
    assert message(hostile, "garbage request") == (
        "source: agent:garbage: the OTLP receiver answered 400 to a request, so spans are missing: a malformed HTTP "
        "request (Bad request syntax ('GARBAGE'))")


def test_gzip_bombs_at_once_inflate_within_the_shared_limit(tmp_path: Path) -> None:
    """Six bombs of 512 MiB under a 64 MiB limit: each inflates in chunks counted against one total, so the
    receiver holds about the limit, not six times it (all six, and the forecast after them, answered 413: the
    total only grows)."""
    limit = 64 * MIB
    run = trajrun(tmp_path, [case("bombs", "bombs", count=6, size=512 * MIB)],
                  env={"TRAJRUN_MAX_SOURCE_BYTES": str(limit)})
    assert run["code"] == 1 and "Traceback" not in run["stderr"], run["stderr"]
    assert message(run, "bombs") == (
        "source: agent:bombs: the OTLP receiver answered 413 to a request, so spans are missing: the exports hold "
        "more than 67,108,864 bytes, the limit on one source document; set TRAJRUN_MAX_SOURCE_BYTES to a larger "
        "number of bytes (6 more requests failed)")  # fmt: skip
    assert run["peak"] < 250 * MIB, run["peak"]


def test_one_gzip_bomb_inflates_without_a_second_copy(tmp_path: Path) -> None:
    """One 1 GiB bomb under a 256 MiB limit: inflated a chunk at a time into one buffer, never copied whole."""
    limit = 256 * MIB
    run = trajrun(tmp_path, [case("bomb", "bombs", count=1, size=1024 * MIB)],
                  env={"TRAJRUN_MAX_SOURCE_BYTES": str(limit)})
    assert message(run, "bomb") == (
        "source: agent:bombs: the OTLP receiver answered 413 to a request, so spans are missing: the exports hold "
        "more than 268,435,456 bytes, the limit on one source document; set TRAJRUN_MAX_SOURCE_BYTES to a larger "
        "number of bytes (1 more request failed)")  # fmt: skip
    assert run["peak"] < limit + 150 * MIB, run["peak"]


# The receiver itself, over raw HTTP on 127.0.0.1

EXPORT = {"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "5b8efff798038103d269b633813fc60c",
                                                        "spanId": "eee19b7ec3c1b174", "name": "search"}]}]}]}


def exchange(receiver: otlp.Receiver, raw: bytes) -> bytes:
    """Send ``raw`` on a connection of its own and return what the receiver answers before it closes."""
    port = int(receiver.variables["OTEL_EXPORTER_OTLP_ENDPOINT"].rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(raw)
        sock.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


def post(body: bytes, *headers: str) -> bytes:
    """A POST of ``body`` to /v1/traces with these header lines."""
    lines = ["POST /v1/traces HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/json", *headers]
    return "\r\n".join([*lines, "", ""]).encode() + body


def test_every_gzip_member_is_read_and_a_cut_stream_is_rejected() -> None:
    """A body of two gzip members is the two inflated together (the second used to be dropped unread); a
    stream cut short used to be taken as far as it went."""
    body = json.dumps(EXPORT).encode()
    members = gzip.compress(body[:30]) + gzip.compress(body[30:])
    receiver = otlp.Receiver("test")
    try:
        answer = exchange(receiver, post(members, f"Content-Length: {len(members)}", "Content-Encoding: gzip"))
        assert answer.startswith(b"HTTP/1.1 200 "), answer
        cut = gzip.compress(body)[:-12]
        answer = exchange(receiver, post(cut, f"Content-Length: {len(cut)}", "Content-Encoding: gzip"))
        assert answer.startswith(b"HTTP/1.1 400 "), answer
    finally:
        receiver.close()
    with pytest.raises(SourceError) as info:
        receiver.exports()
    assert str(info.value) == ("test: the OTLP receiver answered 400 to a request, so spans are missing: a gzip body "
                               "that ends before its gzip stream does")  # fmt: skip


def test_chunked_bodies_and_conflicting_lengths_are_rejected_other_methods_only_answered() -> None:
    """Transfer-Encoding (even with a Content-Length) is 411, two different lengths 400; a GET is answered 501
    and, like a connection opened and closed, loses nothing."""
    body = json.dumps(EXPORT).encode()
    receiver = otlp.Receiver("test")
    try:
        chunked = post(b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body), "Transfer-Encoding: chunked",
                       f"Content-Length: {len(body)}")  # fmt: skip
        assert exchange(receiver, chunked).startswith(b"HTTP/1.1 411 ")
        twice = post(body, f"Content-Length: {len(body)}", f"Content-Length: {len(body) + 1}")
        assert exchange(receiver, twice).startswith(b"HTTP/1.1 400 ")
        assert exchange(receiver, b"GET /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").startswith(b"HTTP/1.1 501 ")
        assert exchange(receiver, b"") == b""
    finally:
        receiver.close()
    with pytest.raises(SourceError) as info:
        receiver.exports()
    assert str(info.value) == ("test: the OTLP receiver answered 411 to a request, so spans are missing: a request "
                               "without Content-Length (a chunked body); send its length (1 more request "
                               "failed)")  # fmt: skip
