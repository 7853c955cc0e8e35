"""Live capture over OTLP/HTTP (``capture: otlp``): a receiver on 127.0.0.1 takes the spans an agent exports.

``capture_spans`` starts a receiver on a free port for one run of the agent, hands the agent the standard
variables that point an OTLP exporter at it (``OTEL_EXPORTER_OTLP_ENDPOINT``, ``…_TRACES_ENDPOINT``,
``…_PROTOCOL``), waits for the agent to end and for its last requests to settle, and returns the exports
as OTLP/JSON documents for the ``otel`` reader. ``POST /v1/traces`` takes ``application/x-protobuf``
(decoded with ``opentelemetry-proto``, the ``trajrun[otel]`` extra) and ``application/json``, either
gzipped. Metrics and logs are answered and dropped. A body that cannot be read is answered 400 and
makes the capture an error: a run missing some of its spans must never pass.
"""

from __future__ import annotations

import base64
import binascii
import errno
import functools
import json
import os
import socketserver
import threading
import time
import zlib
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ..errors import SourceError
from ..limits import MAX_SOURCE_BYTES_VAR, max_source_bytes
from .extras import require_extra

TRACES = "/v1/traces"
DROPPED = frozenset({"/v1/metrics", "/v1/logs"})
PROTOCOL = "http/protobuf"
SETTLE = 0.2
"""Seconds with no request in flight after which an ended agent's export is taken as complete."""
SETTLE_MAX = 3.0
"""The longest wait for an ended agent's last requests."""
BIND_ATTEMPTS = 5
_IDS = ("traceId", "spanId", "parentSpanId")


class _Rejected(Exception):
    """A request the receiver answers with an error status; the message joins the capture's problems."""

    def __init__(self, status: int, problem: str) -> None:
        super().__init__(problem)
        self.status, self.problem = status, problem


def capture_spans(run: Callable[[Mapping[str, str]], object], origin: str) -> list[dict[str, Any]]:
    """Run the agent (``run`` gets the variables to add to its environment) with a receiver of its own, and return
    the OTLP/JSON exports it sent; no spans at all, or a request that could not be read, is a ``SourceError``."""
    require_extra("otel", "capture: otlp", origin)
    _protobuf_reader()  # import protobuf here, not in the first request's thread
    receiver = Receiver(origin)
    try:
        run(receiver.variables)
        receiver.settle()
    finally:
        receiver.close()
    return receiver.exports()


class Receiver:
    """An OTLP/HTTP receiver on 127.0.0.1, on a port of its own, serving in a background thread."""

    def __init__(self, origin: str) -> None:
        """Bind a free port (another one if it turns out taken) and start serving."""
        self.origin = origin
        self._lock = threading.Lock()
        self._exports: list[dict[str, Any]] = []
        self._problems: list[str] = []
        self._paths: dict[str, int] = {}
        self._active, self._last, self._bytes = 0, time.monotonic(), 0
        self._server = _bind(self, origin)
        base = f"http://127.0.0.1:{self._server.server_address[1]}"
        self.variables = {
            "OTEL_EXPORTER_OTLP_ENDPOINT": base, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": base + TRACES,
            "OTEL_EXPORTER_OTLP_PROTOCOL": PROTOCOL, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": PROTOCOL,
            **{name: _no_proxy(os.environ.get(name)) for name in ("NO_PROXY", "no_proxy")},
        }  # fmt: skip
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()

    def handle(self, path: str, headers: Mapping[str, str], body: bytes) -> tuple[int, bytes, str]:
        """Answer one request: status, body and content type; an OTLP trace export is kept."""
        path = path.split("?", 1)[0]
        with self._lock:
            self._paths[path] = self._paths.get(path, 0) + 1
        json_type = headers.get("Content-Type", "").split(";")[0].strip().lower() == "application/json"
        reply_type = "application/json" if json_type else "application/x-protobuf"
        if path in DROPPED:
            return 200, b"{}" if json_type else b"", reply_type
        if path != TRACES:
            return 404, b"", "text/plain"
        try:
            export = _export(headers, self._count(_decoded(headers, body)))
        except _Rejected as exc:
            return self.reject(exc)
        with self._lock:
            self._exports.append(export)
        return 200, b"{}" if json_type else b"", reply_type

    def reject(self, rejected: _Rejected) -> tuple[int, bytes, str]:
        """Keep the problem for the capture's error; the answer to send."""
        with self._lock:
            self._problems.append(rejected.problem)
        return rejected.status, rejected.problem.encode(), "text/plain"

    def _count(self, body: bytes) -> bytes:
        """``body``, counted against ``TRAJRUN_MAX_SOURCE_BYTES`` (all requests of one capture together)."""
        with self._lock:
            self._bytes += len(body)
            over = self._bytes > max_source_bytes()
        if over:
            raise _too_large()
        return body

    def busy(self, delta: int) -> None:
        """A request starts (+1) or ends (-1)."""
        with self._lock:
            self._active += delta
            self._last = time.monotonic()

    def settle(self) -> None:
        """Wait until no request has been in flight for ``SETTLE`` seconds (at most ``SETTLE_MAX``)."""
        deadline = time.monotonic() + SETTLE_MAX
        while time.monotonic() < deadline:
            with self._lock:
                quiet = self._active == 0 and time.monotonic() - self._last >= SETTLE
            if quiet:
                return
            time.sleep(0.02)

    def close(self) -> None:
        """Stop serving and free the port."""
        self._server.shutdown()
        self._server.server_close()

    def exports(self) -> list[dict[str, Any]]:
        """The trace exports received; a rejected request, or no span at all, is an error saying why."""
        if self._problems:
            count = len(self._problems)
            requests = f"{count} request{'s' if count != 1 else ''}"
            raise SourceError(f"the OTLP receiver rejected {requests} (answered with an error status), so spans are "
                              f"missing: {self._problems[0]}", self.origin)  # fmt: skip
        if not any(_spans(export) for export in self._exports):
            raise SourceError(self._nothing(), self.origin)
        return self._exports

    def _nothing(self) -> str:
        """Why no span arrived, as far as the receiver can tell: the variables set, the requests seen, conflicts."""
        first, second, third = (f"{name}={self.variables[name]}" for name in list(self.variables)[:3])
        seen = ", ".join(f"{count} to {path}" for path, count in self._paths.items())
        got = f"the requests that reached the receiver held no span ({seen})" if seen else "no request reached it"
        return (f"no spans arrived: trajrun set {first}, {second} and {third} for the agent, and {got}; export spans "
                "with an OTLP/HTTP span exporter, which reads these variables (Python: "
                "opentelemetry-exporter-otlp-proto-http's OTLPSpanExporter), flush it before the agent ends "
                "(TracerProvider.shutdown() or force_flush()), and have a command that starts the agent elsewhere "
                f"(a container, a clean environment) pass the variables on{_conflicts()}")  # fmt: skip


def _conflicts() -> str:
    """Variables in trajrun's environment that keep an SDK from exporting, as a note for the no-spans error."""
    notes = []
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        notes.append("OTEL_SDK_DISABLED=true turns the SDK off")
    exporters = os.environ.get("OTEL_TRACES_EXPORTER")
    if exporters is not None and "otlp" not in exporters.replace(" ", "").split(","):
        notes.append(f"OTEL_TRACES_EXPORTER={exporters} leaves OTLP out")
    return f"; the environment has {' and '.join(notes)}" if notes else ""


def _too_large() -> _Rejected:
    """The answer to exports past ``TRAJRUN_MAX_SOURCE_BYTES``."""
    return _Rejected(413, f"the exports hold more than {max_source_bytes():,} bytes, the limit on one source "
                          f"document; set {MAX_SOURCE_BYTES_VAR} to a larger number of bytes")  # fmt: skip


def _no_proxy(current: str | None) -> str:
    """``NO_PROXY`` with 127.0.0.1 added, so an HTTP proxy set for the agent never carries its exports."""
    return f"{current},127.0.0.1" if current else "127.0.0.1"


def _decoded(headers: Mapping[str, str], body: bytes) -> bytes:
    """The body without its ``Content-Encoding`` (gzip or none), at most ``TRAJRUN_MAX_SOURCE_BYTES`` of it."""
    encoding = headers.get("Content-Encoding", "identity").strip().lower()
    if encoding in ("identity", ""):
        return body
    if encoding != "gzip":
        raise _Rejected(415, f"Content-Encoding {encoding!r} is not read; send gzip or no compression")
    inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        data = inflate.decompress(body, max_source_bytes() + 1)
    except zlib.error as exc:
        raise _Rejected(400, f"a gzip body that does not decompress ({exc})") from None
    return data


def _export(headers: Mapping[str, str], body: bytes) -> dict[str, Any]:
    """The request as an OTLP/JSON ``ExportTraceServiceRequest`` (ids in hex), from protobuf or JSON."""
    content_type = headers.get("Content-Type", "").split(";")[0].strip().lower()
    if content_type == "application/x-protobuf":
        return _protobuf_reader()(body)
    if content_type == "application/json":
        return _json_export(body)
    raise _Rejected(415, f"Content-Type {content_type or '(none)'!r} is not OTLP; send application/x-protobuf "
                         "(http/protobuf) or application/json (http/json)")  # fmt: skip


def _json_export(body: bytes) -> dict[str, Any]:
    """An OTLP/JSON body, checked for the shape of an export."""
    try:
        export = json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise _Rejected(400, f"a malformed OTLP/JSON body ({exc})") from None
    if not isinstance(export, dict) or not isinstance(export.get("resourceSpans", []), list):
        raise _Rejected(400, "a JSON body that is not an OTLP ExportTraceServiceRequest (expected an object with a "
                             "resourceSpans list)")  # fmt: skip
    return export


@functools.lru_cache(maxsize=1)
def _protobuf_reader() -> Callable[[bytes], dict[str, Any]]:
    """The reader of OTLP/protobuf bodies, built on ``opentelemetry-proto`` (imported once)."""
    from google.protobuf.json_format import MessageToDict  # deferred: the optional trajrun[otel] extra
    from google.protobuf.message import DecodeError  # deferred: as above
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (  # deferred: as above
        ExportTraceServiceRequest,
    )

    def read(body: bytes) -> dict[str, Any]:
        """``ExportTraceServiceRequest`` bytes as OTLP/JSON: camelCase, enums as numbers, ids in hex."""
        request = ExportTraceServiceRequest()
        try:
            request.ParseFromString(body)
        except DecodeError as exc:
            raise _Rejected(400, f"a malformed OTLP/protobuf body ({exc})") from None
        return _hex_ids(MessageToDict(request, use_integers_for_enums=True))

    return read


def _spans(export: dict[str, Any]) -> list[Any]:
    """Every span of one export."""
    return [span for resource in export.get("resourceSpans") or () if isinstance(resource, dict)
            for scope in resource.get("scopeSpans") or () if isinstance(scope, dict)
            for span in scope.get("spans") or ()]  # fmt: skip


def _hex_ids(export: dict[str, Any]) -> dict[str, Any]:
    """Trace and span ids as OTLP/JSON writes them (hex), not as protobuf's JSON mapping does (base64)."""
    for span in _spans(export):
        for key in _IDS:
            if isinstance(span.get(key), str):
                try:
                    span[key] = base64.b64decode(span[key], validate=True).hex()
                except (binascii.Error, ValueError):
                    pass
    return export


class _Server(ThreadingHTTPServer):
    """The HTTP server of one ``Receiver``; binding never looks the host name up (no DNS on loopback)."""

    daemon_threads = True

    def __init__(self, receiver: Receiver) -> None:
        self.receiver = receiver
        super().__init__(("127.0.0.1", 0), _Handler)

    def server_bind(self) -> None:
        """Bind without ``HTTPServer``'s ``getfqdn`` (a reverse DNS query)."""
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = "127.0.0.1", self.server_address[1]


def _bind(receiver: Receiver, origin: str) -> _Server:
    """A server on a free port of 127.0.0.1; a port found taken when binding is retried on another."""
    attempt = 1
    while True:
        try:
            return _Server(receiver)
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE or attempt == BIND_ATTEMPTS:
                raise SourceError(f"cannot start the OTLP receiver on 127.0.0.1: {exc.strerror or exc}",
                                  origin) from None
        attempt += 1


class _Handler(BaseHTTPRequestHandler):
    """One connection to the receiver: OTLP exporters keep it open (HTTP/1.1) for their next batch."""

    server: _Server
    protocol_version = "HTTP/1.1"
    timeout = 30

    def do_POST(self) -> None:  # noqa: N802 - the name http.server calls
        """Read the body (it must say its length), let the receiver answer it."""
        receiver = self.server.receiver
        receiver.busy(+1)
        try:
            length = self.headers.get("Content-Length", "")
            if not length.isdigit():
                self.close_connection = True
                status, body, content_type = receiver.reject(_Rejected(411, "a request without Content-Length (a "
                                                                             "chunked body); send its length"))
            elif int(length) > max_source_bytes():
                self.close_connection = True
                status, body, content_type = receiver.reject(_too_large())
            else:
                status, body, content_type = receiver.handle(self.path, self.headers, self.rfile.read(int(length)))
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        finally:
            receiver.busy(-1)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the signature http.server calls
        """Quiet: trajrun's output is its report."""
