"""Live capture over OTLP/HTTP (``capture: otlp``): a receiver on 127.0.0.1 takes the spans an agent
exports.

``capture_spans`` starts a receiver on a free port for one run of the agent, hands the agent the
standard variables that point an OTLP exporter at it (``OTEL_EXPORTER_OTLP_ENDPOINT``,
``…_TRACES_ENDPOINT``, ``…_PROTOCOL``), waits for the agent to end and for its last requests to
settle, and returns the exports as OTLP/JSON documents for the ``otel`` reader. ``POST /v1/traces``
takes ``application/x-protobuf`` (decoded with ``opentelemetry-proto``, the ``trajrun[otel]`` extra)
and ``application/json``, either gzipped. Metrics and logs are answered and dropped. A run missing
some of its spans must never pass: a request that cannot be read (answered 4xx), one whose
connection ends before it is whole, and one still arriving ``GRACE`` seconds after the agent ended
each make the capture an error. Bodies are read and inflated a chunk at a time, counted against one
limit shared by all requests of the capture.
"""

from __future__ import annotations

import base64
import binascii
import errno
import functools
import io
import json
import os
import socket
import socketserver
import sys
import threading
import time
import zlib
from collections.abc import Callable, Mapping
from email.message import Message
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast

from ..errors import SourceError
from ..limits import MAX_SOURCE_BYTES_VAR, max_source_bytes
from .extras import require_extra

TRACES = "/v1/traces"
DROPPED = frozenset({"/v1/metrics", "/v1/logs"})
PROTOCOL = "http/protobuf"
SETTLE = 0.2
"""Seconds with no request in flight after which an ended agent's export is taken as complete."""
GRACE = 3.0
"""The longest wait for an ended agent's last requests; one still arriving then makes the capture an
error."""
CHUNK = 1 << 20
"""Bytes read from a connection, or inflated from gzip, at a time."""
CLIP = 200
"""The most characters of a message from http.server (it quotes the request line) that a problem
keeps."""
MAX_LENGTH_DIGITS = 18
"""The most digits a Content-Length may have: 10**18 bytes is past any limit on a source."""
BIND_ATTEMPTS = 5
FLUSH = (
    "have the agent flush its exporter before it ends (TracerProvider.shutdown() or force_flush())"
)
_IDS = ("traceId", "spanId", "parentSpanId")
_ARRIVING, _WORKING = "arriving", "working"


class _Rejected(Exception):
    """A request the receiver answers with an error status; the message joins the capture's
    problems."""

    def __init__(self, status: int, problem: str) -> None:
        super().__init__(problem)
        self.status, self.problem = status, problem


def capture_spans(run: Callable[[Mapping[str, str]], object], origin: str) -> list[dict[str, Any]]:
    """Run the agent (``run`` gets the variables to add to its environment) with a receiver of its
    own, and return the OTLP/JSON exports it sent; no spans at all, or a request rejected, lost or
    still arriving after ``GRACE``, is a ``SourceError``."""
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
    """An OTLP/HTTP receiver on 127.0.0.1, on a port of its own, serving in a background thread.

    A request is in flight from its first byte: *arriving* until it has been read as far as it will
    be, then *working* until its export or problem is kept.
    """

    def __init__(self, origin: str) -> None:
        """Bind a free port (another one if it turns out taken) and start serving."""
        self.origin = origin
        self.limit = max_source_bytes()
        self._lock = threading.Condition()
        self._exports: list[dict[str, Any]] = []
        self._problems: list[str] = []
        self._paths: dict[str, int] = {}
        self._connections: set[socket.socket] = set()
        self._arriving = self._working = self._unfinished = self._bytes = 0
        self._last, self._stopped = time.monotonic(), False
        self._server = _bind(self, origin)
        base = f"http://127.0.0.1:{self._server.server_address[1]}"
        self.variables = {
            "OTEL_EXPORTER_OTLP_ENDPOINT": base,
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": base + TRACES,
            "OTEL_EXPORTER_OTLP_PROTOCOL": PROTOCOL,
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": PROTOCOL,
            **{name: _no_proxy(os.environ.get(name)) for name in ("NO_PROXY", "no_proxy")},
        }
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), daemon=True
        )
        self._thread.start()

    def handle(
        self, path: str, headers: Message, body: bytes | bytearray
    ) -> tuple[int, bytes, str, Any]:
        """Answer one request read whole (its body already counted by ``reserve``): status, body,
        content type, and the OTLP trace export it carried (None for other paths); a body that
        cannot be read is ``_Rejected``."""
        path = path.split("?", 1)[0]
        with self._lock:
            self._paths[path] = self._paths.get(path, 0) + 1
        json_type = (
            headers.get("Content-Type", "").split(";")[0].strip().lower() == "application/json"
        )
        reply_type = "application/json" if json_type else "application/x-protobuf"
        if path != TRACES:
            self.release(len(body))  # answered and dropped, so no longer held
            if path in DROPPED:
                return 200, b"{}" if json_type else b"", reply_type, None
            return 404, b"", "text/plain", None
        export = _export(headers, self._decoded(headers, body))
        return 200, b"{}" if json_type else b"", reply_type, export

    def _decoded(self, headers: Message, body: bytes | bytearray) -> bytes | bytearray:
        """The body without its ``Content-Encoding`` (gzip or none); inflated bytes are counted as
        they come."""
        encoding = headers.get("Content-Encoding", "identity").strip().lower()
        if encoding in ("identity", ""):
            return body
        if encoding != "gzip":
            raise _Rejected(
                415, f"Content-Encoding {_quote(encoding)} is not read; send gzip or no compression"
            )
        data = self._inflate(body)
        self.release(len(body))
        return data

    def _inflate(self, body: bytes | bytearray) -> bytearray:
        """A gzip body (one member or several) inflated a chunk at a time, each counted before the
        next; the input is fed a chunk at a time too, so zlib's copies of what it has not read stay
        small."""
        out, view = bytearray(), memoryview(body)
        inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            for start in range(0, len(view), CHUNK):
                data: bytes | memoryview = view[start : start + CHUNK]
                while data:
                    if inflate.eof:  # another gzip member follows
                        inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
                    chunk = inflate.decompress(data, CHUNK)
                    data = inflate.unconsumed_tail or inflate.unused_data
                    self.reserve(len(chunk))
                    out += chunk
            while not inflate.eof:  # what zlib still holds once all input is in
                chunk = inflate.decompress(b"", CHUNK)
                if not chunk:
                    raise _Rejected(400, "a gzip body that ends before its gzip stream does")
                self.reserve(len(chunk))
                out += chunk
        except zlib.error as exc:
            raise _Rejected(400, f"a gzip body that does not decompress ({exc})") from None
        return out

    def reserve(self, size: int) -> None:
        """Count ``size`` more bytes held for the capture against ``TRAJRUN_MAX_SOURCE_BYTES`` (all
        requests of one capture together); past it, ``_Rejected`` (413)."""
        with self._lock:
            self._bytes += size
            over = self._bytes > self.limit
        if over:
            raise _too_large("the exports hold", self.limit)

    def release(self, size: int) -> None:
        """``size`` bytes counted by ``reserve`` are no longer held."""
        with self._lock:
            self._bytes -= size

    def arriving(self) -> None:
        """A request's first byte came."""
        with self._lock:
            self._arriving += 1
            self._last = time.monotonic()

    def arrived(self) -> bool:
        """A request has been read whole and is to be answered; False once the receiver stopped
        waiting for requests (``settle`` counted it as unfinished)."""
        with self._lock:
            self._arriving -= 1
            self._last = time.monotonic()
            if self._stopped:
                return False
            self._working += 1
            return True

    def keep(self, export: Any, problem: str | None, arrived: bool) -> None:
        """A request's outcome: its export, or the problem that makes the capture an error (the
        outcome of a request that had not ``arrived`` is dropped once the receiver stopped waiting:
        it was counted as unfinished)."""
        with self._lock:
            if arrived:
                self._working -= 1
            else:
                self._arriving -= 1
            self._last = time.monotonic()
            if export is not None and (arrived or not self._stopped):
                self._exports.append(export)
            if problem and (arrived or not self._stopped):
                self._problems.append(problem)
            self._lock.notify_all()

    def fail(self, problem: str) -> None:
        """A connection the receiver could not serve, outside any request."""
        with self._lock:
            if not self._stopped:
                self._problems.append(problem)

    def connected(self, connection: socket.socket, is_open: bool) -> None:
        """A connection opens or closes; ``close`` ends those still open."""
        with self._lock:
            if is_open:
                self._connections.add(connection)
            else:
                self._connections.discard(connection)

    def settle(self) -> None:
        """Wait until no request has been in flight for ``SETTLE`` seconds (at most ``GRACE``), then
        stop waiting: requests still arriving count as unfinished, those read whole are finished
        first."""
        deadline = time.monotonic() + GRACE
        with self._lock:
            while time.monotonic() < deadline:
                busy = self._arriving or self._working
                if not busy and time.monotonic() - self._last >= SETTLE:
                    break
                self._lock.wait(0.02)
            self._stopped, self._unfinished = True, self._arriving
            self._lock.wait_for(lambda: self._working == 0)

    def close(self) -> None:
        """Stop serving, free the port, and end the connections still open (their threads then
        end)."""
        with self._lock:
            self._stopped = True
            connections = list(self._connections)
        self._server.shutdown()
        self._server.server_close()
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:  # it closed meanwhile
                pass

    def exports(self) -> list[dict[str, Any]]:
        """The trace exports received; a request lost, rejected or unfinished, or no span at all, is
        an error saying why."""
        problems = list(self._problems)
        if self._unfinished:
            count = self._unfinished
            problems.insert(
                0,
                f"{count} request{'s' if count != 1 else ''} to the OTLP receiver "
                f"{'were' if count != 1 else 'was'} still arriving {GRACE:g}s after the agent "
                f"ended, so spans are missing; {FLUSH} and leave no process of it exporting "
                "afterwards",
            )
        if problems:
            more = len(problems) - 1
            also = f" ({more} more request{'s' if more != 1 else ''} failed)" if more else ""
            raise SourceError(problems[0] + also, self.origin)
        if not any(_spans(export) for export in self._exports):
            raise SourceError(self._nothing(), self.origin)
        return self._exports

    def _nothing(self) -> str:
        """Why no span arrived, as far as the receiver can tell: the variables set, the requests
        seen, conflicts."""
        first, second, third = (
            f"{name}={self.variables[name]}" for name in list(self.variables)[:3]
        )
        seen = ", ".join(f"{count} to {path}" for path, count in self._paths.items())
        got = (
            f"the requests that reached the receiver held no span ({seen})"
            if seen
            else "no request reached it"
        )
        return (
            f"no spans arrived: trajrun set {first}, {second} and {third} for the agent, and "
            f"{got}; export spans with an OTLP/HTTP span exporter, which reads these variables "
            "(Python: opentelemetry-exporter-otlp-proto-http's OTLPSpanExporter), flush it before "
            "the agent ends (TracerProvider.shutdown() or force_flush()), and have a command that "
            "starts the agent elsewhere (a container, a clean environment) pass the variables "
            f"on{_conflicts()}"
        )


def _conflicts() -> str:
    """Variables in trajrun's environment that keep an SDK from exporting, as a note for the
    no-spans error."""
    notes = []
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        notes.append("OTEL_SDK_DISABLED=true turns the SDK off")
    exporters = os.environ.get("OTEL_TRACES_EXPORTER")
    if exporters is not None and "otlp" not in exporters.replace(" ", "").split(","):
        notes.append(f"OTEL_TRACES_EXPORTER={exporters} leaves OTLP out")
    return f"; the environment has {' and '.join(notes)}" if notes else ""


def _too_large(what: str, limit: int) -> _Rejected:
    """The answer to a request, or exports together, past ``TRAJRUN_MAX_SOURCE_BYTES``."""
    return _Rejected(
        413,
        f"{what} more than {limit:,} bytes, the limit on one source document; set "
        f"{MAX_SOURCE_BYTES_VAR} to a larger number of bytes",
    )


def _answered(status: int, problem: str) -> str:
    """A rejected request as a problem of the capture."""
    return f"the OTLP receiver answered {status} to a request, so spans are missing: {problem}"


def _lost(what: str) -> str:
    """A request whose connection ended before it was whole, as a problem of the capture."""
    return f"the OTLP receiver lost a request, so spans are missing: the connection {what}; {FLUSH}"


def _failure(exc: OSError, timeout: float) -> str:
    """How a connection failed, for ``_lost``: ``was reset``, ``sent nothing for 30s``."""
    if isinstance(exc, ConnectionResetError):
        return "was reset"
    if isinstance(exc, TimeoutError):
        return f"sent nothing for {timeout:g}s"
    return f"failed ({exc.strerror or exc})"


def _quote(text: str) -> str:
    """A header value quoted and escaped for a message, at most 40 characters of it."""
    return repr(text[:40]) + ("…" if len(text) > 40 else "")


def _clip(text: str) -> str:
    """At most ``CLIP`` characters of a message that quotes what a client sent."""
    return text if len(text) <= CLIP else text[:CLIP] + "…"


def _content_length(headers: Message, limit: int) -> int:
    """The body's length from the request's one ``Content-Length`` of ASCII digits, at most
    ``limit``."""
    values = headers.get_all("Content-Length") or []
    if not values or headers.get("Transfer-Encoding") is not None:
        raise _Rejected(411, "a request without Content-Length (a chunked body); send its length")
    if len(set(values)) > 1:
        raise _Rejected(
            400, f"a request with {len(values)} different Content-Length headers; send one"
        )
    text = values[0].strip(" \t")
    if not (text.isascii() and text.isdigit()):
        raise _Rejected(
            400,
            f"a Content-Length that is not a number of bytes ({_quote(text)}); send the body's "
            "length in ASCII digits",
        )
    if len(text) > MAX_LENGTH_DIGITS or int(text) > limit:
        raise _too_large("a request of", limit)
    return int(text)


def _no_proxy(current: str | None) -> str:
    """``NO_PROXY`` with 127.0.0.1 added, so an HTTP proxy set for the agent never carries its
    exports."""
    return f"{current},127.0.0.1" if current else "127.0.0.1"


def _export(headers: Message, body: bytes | bytearray) -> dict[str, Any]:
    """The request as an OTLP/JSON ``ExportTraceServiceRequest`` (ids in hex), from protobuf or
    JSON."""
    content_type = headers.get("Content-Type", "").split(";")[0].strip().lower()
    if content_type == "application/x-protobuf":
        return _protobuf_reader()(body)
    if content_type == "application/json":
        return _json_export(body)
    raise _Rejected(
        415,
        f"Content-Type {_quote(content_type) if content_type else '(none)'} is not OTLP; send "
        "application/x-protobuf (http/protobuf) or application/json (http/json)",
    )


def _json_export(body: bytes | bytearray) -> dict[str, Any]:
    """An OTLP/JSON body, checked for the shape of an export."""
    try:
        export = json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise _Rejected(400, f"a malformed OTLP/JSON body ({exc})") from None
    if not isinstance(export, dict) or not isinstance(export.get("resourceSpans", []), list):
        raise _Rejected(
            400,
            "a JSON body that is not an OTLP ExportTraceServiceRequest (expected an object with a "
            "resourceSpans list)",
        )
    return export


@functools.lru_cache(maxsize=1)
def _protobuf_reader() -> Callable[[bytes | bytearray], dict[str, Any]]:
    """The reader of OTLP/protobuf bodies, built on ``opentelemetry-proto`` (imported once)."""
    from google.protobuf.json_format import (  # deferred: the optional trajrun[otel] extra
        MessageToDict,
    )
    from google.protobuf.message import DecodeError  # deferred: as above
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (  # deferred: as above
        ExportTraceServiceRequest,
    )

    def read(body: bytes | bytearray) -> dict[str, Any]:
        """``ExportTraceServiceRequest`` bytes as OTLP/JSON: camelCase, enums as numbers, ids in
        hex."""
        request = ExportTraceServiceRequest()
        try:
            # protobuf parses any buffer, a bytearray too; its stubs ask for bytes
            request.ParseFromString(cast(bytes, body))
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
    """Trace and span ids as OTLP/JSON writes them (hex), not as protobuf's JSON mapping does
    (base64)."""
    for span in _spans(export):
        for key in _IDS:
            if isinstance(span.get(key), str):
                try:
                    span[key] = base64.b64decode(span[key], validate=True).hex()
                except (binascii.Error, ValueError):
                    pass
    return export


class _Server(ThreadingHTTPServer):
    """The HTTP server of one ``Receiver``; binding never looks the host name up (no DNS on
    loopback)."""

    daemon_threads = True

    def __init__(self, receiver: Receiver) -> None:
        self.receiver = receiver
        super().__init__(("127.0.0.1", 0), _Handler)

    def server_bind(self) -> None:
        """Bind without ``HTTPServer``'s ``getfqdn`` (a reverse DNS query)."""
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = "127.0.0.1", self.server_address[1]

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A connection that could not be served (no thread for it, say): a problem of the capture,
        not a traceback on stderr."""
        self.receiver.fail(
            f"the OTLP receiver could not serve a connection, so spans may be missing: "
            f"{_exception()}"
        )


def _exception() -> str:
    """The exception being handled, as ``Name: message`` (at most ``CLIP`` characters of the
    message)."""
    exc = sys.exc_info()[1]
    return f"{type(exc).__name__}: {_clip(str(exc))}"


def _bind(receiver: Receiver, origin: str) -> _Server:
    """A server on a free port of 127.0.0.1; a port found taken when binding is retried on
    another."""
    attempt = 1
    while True:
        try:
            return _Server(receiver)
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE or attempt == BIND_ATTEMPTS:
                raise SourceError(
                    f"cannot start the OTLP receiver on 127.0.0.1: {exc.strerror or exc}", origin
                ) from None
        attempt += 1


class _Handler(BaseHTTPRequestHandler):
    """One connection to the receiver: OTLP exporters keep it open (HTTP/1.1) for their next
    batch."""

    server: _Server
    protocol_version = "HTTP/1.1"
    timeout = 30
    _stage: str | None = None

    def setup(self) -> None:
        """Register the connection, so closing the receiver ends it."""
        super().setup()
        self.server.receiver.connected(self.connection, True)

    def finish(self) -> None:
        """Unregister the connection."""
        self.server.receiver.connected(self.connection, False)
        super().finish()

    def handle_one_request(self) -> None:
        """One request, in flight from its first byte until its outcome is kept; a connection that
        fails on the way loses the request (a problem of the capture), never prints a traceback."""
        try:
            if not cast(io.BufferedReader, self.rfile).peek(1):  # closed between requests
                self.close_connection = True
                return
        except OSError:  # reset, or idle past the timeout, between requests: nothing is lost
            self.close_connection = True
            return
        self._stage = _ARRIVING
        self.server.receiver.arriving()
        try:
            super().handle_one_request()
        except OSError as exc:
            self.close_connection = True
            self._keep(problem=_lost(f"{_failure(exc, self.timeout)} before the request was whole"))
        except Exception:  # a fault of the receiver's own: the request is lost all the same
            self.close_connection = True
            self._keep(problem=f"the OTLP receiver failed on a request, so spans are missing: "
                               f"{_exception()} (an internal error; please report it)")  # fmt: skip
        finally:  # http.server gave up on the request (a timeout in its headers) without an answer
            if self._stage == _ARRIVING:
                self._keep(problem=_lost("ended before the request was whole"))
            self._keep()

    def do_POST(self) -> None:  # noqa: N802 - the name http.server calls
        """Read the body (it must say its length), a chunk at a time, and let the receiver answer
        it."""
        receiver = self.server.receiver
        try:
            length = _content_length(self.headers, receiver.limit)
            receiver.reserve(length)
        except _Rejected as exc:
            self.close_connection = True
            self._reject(exc)
            return
        body = self._body(length)
        if body is None:
            return
        if not receiver.arrived():  # too late: counted as unfinished
            self.close_connection, self._stage = True, None
            return
        self._stage = _WORKING
        try:
            status, reply, content_type, export = receiver.handle(self.path, self.headers, body)
        except _Rejected as exc:
            self._reject(exc)
            return
        self._keep(export)
        self._answer(status, reply, content_type)

    def _body(self, length: int) -> bytearray | None:
        """The body, a chunk at a time; None when the connection ends first (the request is
        lost)."""
        body = bytearray()
        try:
            while len(body) < length and (
                chunk := self.rfile.read1(min(CHUNK, length - len(body)))
            ):
                body += chunk
        except OSError as exc:
            how = _failure(exc, self.timeout)
        else:
            if len(body) == length:
                return body
            how = "closed"
        self.close_connection = True
        self._keep(problem=_lost(f"{how} after {len(body):,} of {length:,} body bytes"))
        return None

    def _reject(self, rejected: _Rejected) -> None:
        """Keep the problem for the capture's error and answer with its status."""
        self._keep(problem=_answered(rejected.status, rejected.problem))
        self._answer(rejected.status, rejected.problem.encode(), "text/plain; charset=utf-8")

    def _keep(self, export: Any = None, problem: str | None = None) -> None:
        """The request's outcome to the receiver, once."""
        stage, self._stage = self._stage, None
        if stage is not None:
            self.server.receiver.keep(export, problem, arrived=stage == _WORKING)

    def _answer(self, status: int, body: bytes, content_type: str) -> None:
        """Send the response."""
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """http.server's answer to a request it could not parse (kept as a problem of the capture)
        or to a method other than POST (answered, nothing more)."""
        self.close_connection = True
        if code != HTTPStatus.NOT_IMPLEMENTED:
            self._keep(
                problem=_answered(code, f"a malformed HTTP request ({_clip(message or str(code))})")
            )
        self._keep()
        super().send_error(code, message, explain)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the signature http.server calls
        """Quiet: trajrun's output is its report."""
