"""The model proxy of a live source (``cassette:``, ``capture: wire``): an HTTP server on 127.0.0.1
that the agent's model client talks to instead of the provider, so that its traffic can be recorded,
replayed and read.

The agent gets ``OPENAI_BASE_URL`` (``…/openai``) and ``ANTHROPIC_BASE_URL`` (``…/anthropic``)
pointing here. Recording, each request goes on to the upstream those variables held in trajrun's
environment (else the providers' APIs) and its answer, JSON or server-sent events, is passed back as
it comes (a stream stays a stream) and kept as an *exchange*. Replaying, each request is answered
from the recorded exchange it equals and no socket leaves the machine. Headers are never kept: the
key the agent sends (``Authorization``, ``x-api-key``) reaches the upstream only, query parameters
named like keys are left out, and a key that turns up in a body is replaced by ``<redacted>``.
Bodies count against ``TRAJRUN_MAX_SOURCE_BYTES``, all requests of a run together; the upstream has
``TRAJRUN_UPSTREAM_TIMEOUT`` seconds to send each part.
"""

from __future__ import annotations

import errno
import http.client
import io
import json
import os
import socketserver
import ssl
import sys
import threading
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ..errors import SourceError, format_path, inline
from ..limits import MAX_SOURCE_BYTES_VAR, env_number, max_source_bytes

Exchange = dict[str, Any]
"""One request and its response as plain data, as a cassette holds them:
``{"request": {"api", "method", "path", "body"}, "response": {"status", "body" or "events"}}``."""

APIS = {"openai": ("OPENAI_BASE_URL", "https://api.openai.com/v1"),
        "anthropic": ("ANTHROPIC_BASE_URL", "https://api.anthropic.com")}  # fmt: skip
"""Each provider the proxy serves: the variable naming its base URL, and its default upstream."""
KEY_VARIABLES = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
REPLAY_KEY = "trajrun-replay-no-key"
"""The key a replayed agent gets when it has none: SDKs refuse to start without one, and replay
sends it nowhere."""
VOLATILE = ("stream_options", "user", "metadata", "prompt_cache_key", "safety_identifier")
"""Top-level request fields left out of an exchange: they change between runs, or say nothing about
the run."""
SECRET_HEADERS = ("authorization", "x-api-key", "api-key", "x-goog-api-key")
SECRET_PARAMS = ("key", "token", "secret", "sig", "auth", "password", "credential")
"""A query parameter whose name holds one of these is left out of an exchange."""
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authorization", "proxy-connection",
                        "te", "trailer", "transfer-encoding", "upgrade", "host", "content-length",
                        "accept-encoding"})  # fmt: skip
"""Request headers not passed on as they came (the upstream gets its own ``Host`` and an
uncompressed answer)."""
PASSED_BACK = ("content-type", "x-request-id", "request-id", "retry-after", "openai-processing-ms")
UPSTREAM_TIMEOUT_VAR = "TRAJRUN_UPSTREAM_TIMEOUT"
DEFAULT_UPSTREAM_TIMEOUT = 120.0
SETTLE = 3.0
"""The longest wait for requests still in flight once the agent ended."""
CHUNK = 1 << 16
CLIP = 80
"""The most characters of a value a message quotes."""
MAX_LENGTH_DIGITS = 18
BIND_ATTEMPTS = 5
REDACTED = "<redacted>"
RECORD = "re-record with `trajrun run --cassettes record`"


class Refused(Exception):
    """A request the proxy answers with an error of its own; ``problem`` makes the case an error."""

    def __init__(self, status: int, problem: str) -> None:
        super().__init__(problem)
        self.status, self.problem = status, problem


def upstream_timeout() -> float:
    """``TRAJRUN_UPSTREAM_TIMEOUT`` in seconds, or 120 when it is unset."""
    return env_number(UPSTREAM_TIMEOUT_VAR, DEFAULT_UPSTREAM_TIMEOUT, "a number of seconds")


def upstreams(origin: str) -> dict[str, urllib.parse.SplitResult]:
    """Where each provider's requests go: trajrun's own ``OPENAI_BASE_URL``/``ANTHROPIC_BASE_URL``,
    else the default."""
    out = {}
    for api, (variable, default) in APIS.items():
        url = os.environ.get(variable, "").strip() or default
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise SourceError(
                f"{variable} is '{inline(url)}', not an http:// or https:// URL, so the model "
                "proxy cannot forward to it; fix or unset it",
                origin,
            )
        out[api] = parts
    return out


class ModelProxy:
    """An HTTP proxy on 127.0.0.1 for one run of an agent, serving in background threads.

    With ``replay`` (a cassette's name and exchanges) it answers from those alone; else it forwards
    to ``upstreams``. ``exchanges`` are the run's, in the order requests arrived; ``problems`` what
    makes the run an error (the first one is reported).
    """

    def __init__(
        self,
        origin: str,
        replay: tuple[str, list[Exchange]] | None = None,
        upstream: Mapping[str, urllib.parse.SplitResult] | None = None,
    ) -> None:
        self.origin, self.replay, self.upstream = origin, replay, dict(upstream or {})
        self.limit, self.timeout = max_source_bytes(), upstream_timeout()
        self._lock = threading.Condition()
        self._slots: list[Exchange | None] = []
        self._used: set[int] = set()
        self._problems: list[str] = []
        self._secrets: set[str] = set()
        self._bytes = self._in_flight = 0
        self._server = _bind(self, origin)
        base = f"http://127.0.0.1:{self._server.server_address[1]}"
        self.variables = {variable: f"{base}/{api}" for api, (variable, _) in APIS.items()}
        self.variables.update(
            {name: _no_proxy(os.environ.get(name)) for name in ("NO_PROXY", "no_proxy")}
        )
        if replay is not None:
            self.variables.update(
                {var: REPLAY_KEY for var in KEY_VARIABLES.values() if not os.environ.get(var)}
            )
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), daemon=True
        )
        self._thread.start()

    @property
    def exchanges(self) -> list[Exchange]:
        """The exchanges of the run so far, in the order their requests arrived (those that failed
        left out)."""
        with self._lock:
            return [slot for slot in self._slots if slot is not None]

    def begin(self) -> int:
        """A request arrived: its slot among the exchanges."""
        with self._lock:
            self._in_flight += 1
            self._slots.append(None)
            return len(self._slots) - 1

    def end(self) -> None:
        """A request was answered (or given up)."""
        with self._lock:
            self._in_flight -= 1
            self._lock.notify_all()

    def failed(self) -> str | None:
        """The first problem so far, for a request that comes after it (answered at once, forwarded
        nowhere)."""
        with self._lock:
            return self._problems[0] if self._problems else None

    def fail(self, problem: str) -> None:
        """A problem that makes the run an error."""
        with self._lock:
            self._problems.append(problem)

    def keep(self, slot: int, exchange: Exchange) -> None:
        """A whole exchange, with any key the agent sent replaced wherever it turns up."""
        with self._lock:
            self._slots[slot] = redact(exchange, self._secrets)

    def secret(self, value: str) -> None:
        """A key the agent sent in a header: never written, wherever it turns up."""
        token = value.split(None, 1)[-1].strip() if value.strip() else ""
        if len(token) >= 8:
            with self._lock:
                self._secrets.add(token)

    def redacted(self, value: Any) -> Any:
        """``value`` with the keys seen so far replaced."""
        with self._lock:
            secrets = set(self._secrets)
        return redact(value, secrets)

    def reserve(self, size: int) -> None:
        """Count ``size`` more bytes of the run's traffic; past ``TRAJRUN_MAX_SOURCE_BYTES``,
        ``Refused`` (413)."""
        with self._lock:
            self._bytes += size
            over = self._bytes > self.limit
        if over:
            raise Refused(
                413,
                f"the model traffic is more than {self.limit:,} bytes, the limit on one source "
                f"document; set {MAX_SOURCE_BYTES_VAR} to a larger number of bytes",
            )

    def match(self, request: dict[str, Any]) -> tuple[int, Exchange]:
        """The first unused recorded exchange whose request equals ``request``; none is ``Refused``
        naming the next unused exchange and the first field where the request differs from it."""
        assert self.replay is not None
        name, recorded = self.replay
        with self._lock:
            unused = [i for i in range(len(recorded)) if i not in self._used]
            found = next((i for i in unused if recorded[i]["request"] == request), None)
            if found is not None:
                self._used.add(found)
                return found, recorded[found]
            count = len(self._used) + 1
        shown = f"{request['method']} /{request['api']}{request['path']}"
        if not unused:
            raise Refused(
                400,
                f"request {count} ({shown}) is not in cassette {name}, whose {len(recorded)} "
                f"exchange{'s' if len(recorded) != 1 else ''} the agent already used: the agent "
                f"asks the model more than when it was recorded; {RECORD}",
            )
        where, then, now = first_difference(recorded[unused[0]]["request"], request)
        raise Refused(
            400,
            f"request {count} ({shown}) differs from exchange {unused[0] + 1} of cassette {name} "
            f"at {where}: the cassette has {then}, the agent sent {now}; a prompt, a tool result "
            f"or the agent's settings changed (if on purpose, {RECORD})",
        )

    def settle(self) -> None:
        """Wait, at most ``SETTLE`` seconds, for requests still in flight once the agent ended."""
        with self._lock:
            if not self._lock.wait_for(lambda: self._in_flight == 0, SETTLE):
                self._problems.append(
                    f"{self._in_flight} request(s) to the model proxy were still in flight "
                    f"{SETTLE:g}s after the agent ended; have the agent wait for its model calls"
                )

    def close(self) -> None:
        """Stop serving and free the port."""
        self._server.shutdown()
        self._server.server_close()

    def check(self) -> None:
        """Raise the run's first problem; none at all reached the proxy, or recorded exchanges left
        unused, too."""
        with self._lock:
            problems, slots, used = list(self._problems), len(self._slots), len(self._used)
        if problems:
            more = len(problems) - 1
            raise SourceError(
                problems[0] + (f" ({more} more problem{'s' if more != 1 else ''})" if more else ""),
                self.origin,
            )
        if not slots:
            shown = " and ".join(f"{name}={self.variables[name]}" for name, _ in APIS.values())
            raise SourceError(
                f"no request reached the model proxy: trajrun set {shown} for the agent; have its "
                "model client take its base URL from these variables (the openai and anthropic "
                "SDKs do when given no base_url), and have a command that starts the agent "
                "elsewhere (a container, a clean environment) pass them on",
                self.origin,
            )
        if self.replay is not None and used < len(self.replay[1]):
            name, recorded = self.replay
            left = min(set(range(len(recorded))) - self._used)
            request = recorded[left]["request"]
            raise SourceError(
                f"the agent ended after {used} of the {len(recorded)} exchanges in cassette "
                f"{name}: exchange {left + 1} ({request['method']} "
                f"/{request['api']}{request['path']}) was never requested, so the agent stops "
                f"earlier than when it was recorded; {RECORD} if that is intended",
                self.origin,
            )


def run_through(run: Callable[[Mapping[str, str]], Any], proxy: ModelProxy) -> Any:
    """Run the agent (``run`` gets the variables to add to its environment) through ``proxy`` and
    return what it returned. A problem of the proxy (a request that differs from the cassette, an
    upstream that failed) is the error even when the agent then failed too: it is why the agent
    failed."""
    failure: SourceError | None = None
    try:
        try:
            value = run(proxy.variables)
        except SourceError as exc:
            failure, value = exc, None
        proxy.settle()
    finally:
        proxy.close()
    proxy.check()
    if failure is not None:
        raise failure
    return value


def redact(value: Any, secrets: set[str]) -> Any:
    """``value`` with every string holding one of ``secrets`` rewritten to hold ``<redacted>``
    instead."""
    if not secrets:
        return value
    if isinstance(value, str):
        for secret in secrets:
            value = value.replace(secret, REDACTED)
        return value
    if isinstance(value, dict):
        return {redact(key, secrets): redact(item, secrets) for key, item in value.items()}
    if isinstance(value, list):
        return [redact(item, secrets) for item in value]
    return value


def normalized(api: str, method: str, target: str, body: Any) -> dict[str, Any]:
    """A request as an exchange keeps it: the path after the provider's prefix with key-like query
    parameters left out, and the JSON body without its ``VOLATILE`` fields."""
    parts = urllib.parse.urlsplit(target)
    query = [
        (name, value)
        for name, value in urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
        if not any(word in name.lower() for word in SECRET_PARAMS)
    ]
    path = parts.path + ("?" + urllib.parse.urlencode(query) if query else "")
    if isinstance(body, dict):
        body = {key: value for key, value in body.items() if key not in VOLATILE}
    return {"api": api, "method": method, "path": path, "body": body}


def first_difference(
    recorded: Any, sent: Any, path: tuple[str | int, ...] = ()
) -> tuple[str, str, str]:
    """Where two requests first differ (``body.messages[2].content``) and each side's value there,
    quoted."""
    if isinstance(recorded, dict) and isinstance(sent, dict):
        for key in (*recorded, *(k for k in sent if k not in recorded)):
            if key not in sent or key not in recorded or recorded[key] != sent[key]:
                return first_difference(
                    recorded.get(key, _ABSENT), sent.get(key, _ABSENT), (*path, key)
                )
    elif isinstance(recorded, list) and isinstance(sent, list):
        for i, (one, other) in enumerate(zip(recorded, sent, strict=False)):
            if one != other:
                return first_difference(one, other, (*path, i))
        if len(recorded) != len(sent):
            return (
                format_path(path) or "the request",
                f"{len(recorded)} items",
                f"{len(sent)} items",
            )
    return format_path(path) or "the request", _shown(recorded), _shown(sent)


_ABSENT = object()


def _shown(value: Any) -> str:
    """A value for a message: JSON, on one line, at most ``CLIP`` characters; ``nothing`` for a
    missing one."""
    if value is _ABSENT:
        return "nothing"
    text = inline(json.dumps(value, ensure_ascii=False))
    return text if len(text) <= CLIP else text[:CLIP] + "…"


def sse(events: list[dict[str, Any]]) -> bytes:
    """Recorded events as a server-sent event stream."""
    out = []
    for event in events:
        data = event["data"]
        text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
        head = f"event: {event['event']}\n" if "event" in event else ""
        out.append(head + "".join(f"data: {line}\n" for line in text.split("\n")) + "\n")
    return "".join(out).encode("utf-8")


class EventReader:
    """Server-sent events parsed as their bytes pass through: ``{"event"?, "data"}``, data decoded
    when it is a JSON object or list. A stream that is not UTF-8 is ``Refused``."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self._pending = b""
        self._name: str | None = None
        self._data: list[str] = []

    def feed(self, chunk: bytes) -> None:
        """Parse the whole lines of ``chunk`` (with what came before it)."""
        *lines, self._pending = (self._pending + chunk).split(b"\n")
        for raw in lines:
            try:
                self._line(raw.rstrip(b"\r").decode("utf-8"))
            except UnicodeDecodeError:
                raise Refused(502, "an event stream that is not UTF-8 text") from None

    def close(self) -> list[dict[str, Any]]:
        """The events, the last one included when the stream ended without a blank line."""
        if self._pending:
            self.feed(b"\n")
        self._line("")
        return self.events

    def _line(self, line: str) -> None:
        """One line: a field, a comment, or the blank line that ends an event."""
        if not line:
            if self._data:
                event: dict[str, Any] = {"event": self._name} if self._name else {}
                event["data"] = _data("\n".join(self._data))
                self.events.append(event)
            self._name, self._data = None, []
            return
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "data":
            self._data.append(value)
        elif field == "event":
            self._name = value


def _data(text: str) -> Any:
    """An event's data: a JSON object or list decoded, anything else (``[DONE]``) kept as text."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return text
    return value if isinstance(value, (dict, list)) else text


def _no_proxy(current: str | None) -> str:
    """``NO_PROXY`` with 127.0.0.1 added, so an HTTP proxy set for the agent never carries its model
    calls."""
    return f"{current},127.0.0.1" if current else "127.0.0.1"


class _Server(ThreadingHTTPServer):
    """The HTTP server of one ``ModelProxy``; binding never looks the host name up."""

    daemon_threads = True

    def __init__(self, proxy: ModelProxy) -> None:
        self.proxy = proxy
        super().__init__(("127.0.0.1", 0), _Handler)

    def server_bind(self) -> None:
        """Bind without ``HTTPServer``'s ``getfqdn`` (a reverse DNS query)."""
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = "127.0.0.1", self.server_address[1]

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A connection that could not be served: a problem of the run, not a traceback on
        stderr."""
        exc = sys.exc_info()[1]
        self.proxy.fail(f"the model proxy could not serve a connection: {type(exc).__name__}: "
                        f"{inline(str(exc))[:200]}")  # fmt: skip


def _bind(proxy: ModelProxy, origin: str) -> _Server:
    """A server on a free port of 127.0.0.1; a port found taken when binding is retried on
    another."""
    for attempt in range(1, BIND_ATTEMPTS + 1):
        try:
            return _Server(proxy)
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE or attempt == BIND_ATTEMPTS:
                raise SourceError(
                    f"cannot start the model proxy on 127.0.0.1: {exc.strerror or exc}", origin
                ) from None
    raise AssertionError("unreachable")


class _Handler(BaseHTTPRequestHandler):
    """One connection from the agent's model client (kept open between requests, HTTP/1.1)."""

    server: _Server
    rfile: io.BufferedReader  # buffered: StreamRequestHandler's rbufsize is -1
    protocol_version = "HTTP/1.1"
    timeout = 60
    _began = False

    def handle_one_request(self) -> None:
        """One request; a connection closed or reset between requests (a client done with it) is no
        problem."""
        try:
            if not self.rfile.peek(1):
                self.close_connection = True
                return
        except OSError:
            self.close_connection = True
            return
        super().handle_one_request()

    def do_POST(self) -> None:
        """A model call."""
        self._serve()

    do_GET = do_PUT = do_PATCH = do_DELETE = do_POST

    def _serve(self) -> None:
        """Answer one request from the cassette or the upstream; a problem is kept and answered with
        an error."""
        proxy = self.server.proxy
        slot = proxy.begin()
        self._began = False
        try:
            earlier = proxy.failed()
            if earlier is not None:
                raise Refused(400, f"an earlier request failed: {earlier}")
            request, body = self._request()
            if proxy.replay is not None:
                _, exchange = proxy.match(request)
                self._replay(exchange["response"])
                proxy.keep(slot, exchange)
                return
            proxy.keep(slot, {"request": request, "response": self._forward(request, body)})
        except Refused as exc:
            if not exc.problem.startswith("an earlier request failed"):
                proxy.fail(exc.problem)
            if self._began:  # half an answer went out: end it, the agent sees the call fail
                self.close_connection = True
            else:
                self._error(exc.status, exc.problem)
        except OSError as exc:  # the agent's connection broke: its request is lost
            self.close_connection = True
            proxy.fail(
                f"the agent's connection to the model proxy failed ({exc.strerror or exc}), so a "
                "model call is missing"
            )
        finally:
            proxy.end()

    def _request(self) -> tuple[dict[str, Any], bytes]:
        """The request as an exchange keeps it, and its body as sent."""
        proxy = self.server.proxy
        api, _, rest = self.path.lstrip("/").partition("/")
        if api not in APIS:
            raise Refused(
                404,
                f"the agent sent {self.command} {inline(self.path[:CLIP])}, which is under neither "
                "/openai nor /anthropic; have its model client take its base URL from "
                "OPENAI_BASE_URL or ANTHROPIC_BASE_URL",
            )
        for header in SECRET_HEADERS:
            if self.headers.get(header):
                proxy.secret(self.headers[header])
        body = self._body()
        try:
            data = json.loads(body) if body.strip() else None
        except (ValueError, RecursionError):
            raise Refused(
                400,
                f"the agent sent {self.command} /{api}/{inline(rest[:CLIP])} with a body that is "
                "not JSON, which no model API takes",
            ) from None
        return proxy.redacted(normalized(api, self.command, "/" + rest, data)), body

    def _body(self) -> bytes:
        """The request body, as long as its ``Content-Length`` says (within the limit)."""
        if self.headers.get("Transfer-Encoding") is not None:
            raise Refused(
                411,
                "the agent sent a chunked request body; the model proxy takes bodies with a "
                "Content-Length",
            )
        text = (self.headers.get("Content-Length") or "0").strip()
        if not (text.isascii() and text.isdigit()) or len(text) > MAX_LENGTH_DIGITS:
            raise Refused(
                400,
                "the agent sent a Content-Length that is not a number of bytes "
                f"({inline(text[:40])})",
            )
        length = int(text)
        self.server.proxy.reserve(length)
        body = self.rfile.read(length)
        if len(body) != length:
            raise Refused(
                400, f"the agent's request ended after {len(body):,} of {length:,} body bytes"
            )
        return body

    def _replay(self, response: dict[str, Any]) -> None:
        """Answer with a recorded response: its JSON body, or its events as a stream."""
        if "events" in response:
            self._send(
                response["status"], "text/event-stream; charset=utf-8", sse(response["events"])
            )
        else:
            body = (
                b""
                if response["body"] is None
                else json.dumps(response["body"], ensure_ascii=False).encode()
            )
            self._send(response["status"], "application/json", body)

    def _forward(self, request: dict[str, Any], body: bytes) -> dict[str, Any]:
        """Send the request upstream and pass its answer back as it comes; the response as an
        exchange keeps it."""
        proxy = self.server.proxy
        parts = proxy.upstream[request["api"]]
        target = parts.path.rstrip("/") + "/" + self.path.lstrip("/").partition("/")[2]
        shown = f"the upstream {inline(parts.scheme + '://' + parts.netloc + target.split('?')[0])}"
        variable = APIS[request["api"]][0]
        headers = {
            name: value for name, value in self.headers.items() if name.lower() not in HOP_BY_HOP
        }
        headers["Accept-Encoding"] = "identity"
        try:
            connection = _connect(parts, proxy.timeout)
            try:
                connection.request(self.command, target, body=body or None, headers=headers)
                return self._relay(connection.getresponse(), shown)
            finally:
                connection.close()
        except TimeoutError:
            raise Refused(
                504,
                f"{shown} sent nothing for {proxy.timeout:g}s (the model call hangs); set "
                f"{UPSTREAM_TIMEOUT_VAR} to wait longer",
            ) from None
        except http.client.HTTPException as exc:
            raise Refused(
                502, f"{shown} answered garbage, not HTTP ({type(exc).__name__}); check {variable}"
            ) from None
        except OSError as exc:
            reason = inline(str(exc.strerror or exc))[:200]
            raise Refused(
                502, f"cannot reach {shown} ({reason}); check the network and {variable}"
            ) from None

    def _relay(self, answer: http.client.HTTPResponse, shown: str) -> dict[str, Any]:
        """Pass the upstream's answer back: a stream as it comes, JSON whole."""
        content_type = (answer.getheader("Content-Type") or "").split(";")[0].strip().lower()
        if content_type == "text/event-stream":
            return {"status": answer.status, "events": self._stream(answer)}
        body = self._upstream_body(answer)
        if content_type == "application/json" or content_type.endswith("+json"):
            try:
                data = json.loads(body) if body.strip() else None
            except (ValueError, RecursionError):
                raise Refused(
                    502,
                    f"{shown} answered {answer.status} with a body that is not JSON though it says "
                    f"it is: {_clip(body)}",
                ) from None
        elif not body:
            data = None
        else:
            raise Refused(
                502,
                f"{shown} answered {answer.status} with "
                f"{inline(content_type or 'no Content-Type')}, neither JSON nor an event stream: "
                f"{_clip(body)}",
            )
        self._send(
            answer.status, answer.getheader("Content-Type") or "application/json", body, answer
        )
        return {"status": answer.status, "body": self.server.proxy.redacted(data)}

    def _upstream_body(self, answer: http.client.HTTPResponse) -> bytes:
        """A whole answer's body, counted against the limit as it comes."""
        proxy, body = self.server.proxy, bytearray()
        while chunk := answer.read1(CHUNK):
            proxy.reserve(len(chunk))
            body += chunk
        return bytes(body)

    def _stream(self, answer: http.client.HTTPResponse) -> list[dict[str, Any]]:
        """Pass an event stream back a piece at a time (chunked), parsing its events on the way."""
        proxy, reader = self.server.proxy, EventReader()
        self._began = True
        self.send_response(answer.status)
        self._headers(answer, "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        while chunk := answer.read1(CHUNK):
            proxy.reserve(len(chunk))
            reader.feed(chunk)
            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        return proxy.redacted(reader.close())

    def _send(
        self,
        status: int,
        content_type: str,
        body: bytes,
        answer: http.client.HTTPResponse | None = None,
    ) -> None:
        """Send a whole response."""
        self._began = True
        self.send_response(status)
        self._headers(answer, content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _headers(self, answer: http.client.HTTPResponse | None, content_type: str) -> None:
        """The content type, and the upstream's headers a model client reads (request id,
        retry-after)."""
        self.send_header("Content-Type", content_type)
        for name in PASSED_BACK[1:]:
            value = answer.getheader(name) if answer is not None else None
            if value is not None:
                self.send_header(name, value)

    def _error(self, status: int, problem: str) -> None:
        """An error of the proxy's own, in the shape model clients read (``error.message``), never
        retried."""
        body = json.dumps(
            {"error": {"message": f"trajrun model proxy: {problem}", "type": "trajrun_proxy_error"}}
        )
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        # the openai and anthropic SDKs would retry a 5xx otherwise
        self.send_header("x-should-retry", "false")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: trajrun's output is its report."""


def _clip(body: bytes) -> str:
    """The start of a body for a message, as one line."""
    text = inline(body[:CLIP].decode("utf-8", "replace"))
    return repr(text + ("…" if len(body) > CLIP else ""))


def _connect(parts: urllib.parse.SplitResult, timeout: float) -> http.client.HTTPConnection:
    """A connection to the upstream; an https one through the environment's HTTP proxy when one is
    set for it."""
    host, port = parts.hostname or "", parts.port
    if parts.scheme == "http":
        return http.client.HTTPConnection(host, port, timeout=timeout)
    context = ssl.create_default_context()
    through = (
        None if urllib.request.proxy_bypass(host) else urllib.request.getproxies().get("https")
    )
    if not through:
        return http.client.HTTPSConnection(host, port, timeout=timeout, context=context)
    via = urllib.parse.urlsplit(through)
    connection = http.client.HTTPSConnection(
        via.hostname or "", via.port or 80, timeout=timeout, context=context
    )
    connection.set_tunnel(host, port or 443)
    return connection
