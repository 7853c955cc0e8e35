"""A loopback server that speaks OpenAI's chat-completions protocol, for the judge's tests: never a real model.

It answers ``POST /v1/chat/completions`` on 127.0.0.1 (a free port) with scripted replies, then a default one;
it records every request, its path and ``Authorization`` header, and how many were in flight at once. A reply can also
misbehave: send raw bytes as the body, trickle the whole answer a byte at a time, or echo the key it was sent
in a 401 (as OpenAI's ``Incorrect API key provided`` does).
"""

from __future__ import annotations

import json
import ssl
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from collections.abc import Iterable, Iterator
from typing import Any

import pytest


@dataclass
class Reply:
    """One scripted reply: the assistant's text (``None``: no text), or an HTTP error status; after ``delay`` s.

    ``body`` replaces the whole body with these bytes; ``trickle`` sends the whole answer (status line and
    headers too) one byte every so many seconds; ``echo_key`` answers 401 quoting the Authorization it got.
    """

    content: str | None = None
    status: int = 200
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None
    trickle: float = 0.0
    echo_key: bool = False


def answer(score: float, reasoning: str = "The run does what the rubric asks.") -> Reply:
    """A well-formed judge answer."""
    return Reply(json.dumps({"score": score, "reasoning": reasoning}))


class ChatServer:
    """The server: ``script`` replies are used first, in order, then ``default``; ``requests`` holds each body.
    With ``tls`` it speaks HTTPS."""

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self.requests: list[dict[str, Any]] = []
        self.authorizations: list[str | None] = []
        self.paths: list[str] = []
        self.script: deque[Reply] = deque()
        self.default = answer(0.9)
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.scheme = "https" if tls else "http"
        if tls:
            self.httpd.socket = tls.wrap_socket(self.httpd.socket, server_side=True)
        self.httpd.daemon_threads = True  # a reply still sleeping past the client's timeout never blocks teardown
        self._thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        """The base URL to give the SDK."""
        return f"{self.scheme}://127.0.0.1:{self.httpd.server_port}/v1"

    def reply(self, *replies: Reply) -> None:
        """Script the next replies."""
        self.script.extend(replies)

    def close(self) -> None:
        """Stop serving."""
        self.httpd.shutdown()
        self.httpd.server_close()

    def _take(self, body: dict[str, Any], authorization: str | None) -> Reply:
        """Record a request and pick its reply."""
        with self._lock:
            self.requests.append(body)
            self.authorizations.append(authorization)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            return self.script.popleft() if self.script else self.default

    def _done(self) -> None:
        with self._lock:
            self.in_flight -= 1


def _handler(server: ChatServer) -> type[BaseHTTPRequestHandler]:
    """A request handler bound to ``server``."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            server.paths.append(self.path)  # absolute (``http://host/v1/...``) when it is asked as a proxy
            if not self.path.endswith("/chat/completions"):
                self._send(404, {"error": {"message": f"no route {self.path}"}})
                return
            authorization = self.headers.get("Authorization")
            reply = server._take(body, authorization)
            try:
                time.sleep(reply.delay)
                if reply.echo_key:
                    token = (authorization or "").partition(" ")[2]
                    self._send(401, {"error": {"message": f"Incorrect API key provided: {token}. The request "
                                                          f"carried Authorization: {authorization}",
                                               "type": "invalid_request_error"}})
                elif reply.body is not None or reply.trickle:
                    self._send_raw(reply, body)
                elif reply.status != 200:
                    self._send(reply.status, {"error": {"message": f"scripted {reply.status}", "type": "test"}},
                               reply.headers)
                else:
                    self._send(200, json.loads(_completion(body, reply.content)))
            except OSError:  # the client gave up (a timeout test)
                pass
            finally:
                server._done()

        def _send(self, status: int, data: dict[str, Any], headers: dict[str, str] | None = None) -> None:
            raw = json.dumps(data).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(raw)

        def _send_raw(self, reply: Reply, request: dict[str, Any]) -> None:
            """``reply.body`` (or a well-formed completion) as is, at once or trickled byte by byte."""
            raw = reply.body if reply.body is not None else _completion(request, reply.content)
            head = [f"HTTP/1.1 {reply.status} Scripted", "Content-Type: application/json",
                    f"Content-Length: {len(raw)}", *(f"{k}: {v}" for k, v in reply.headers.items())]
            data = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + raw
            if not reply.trickle:
                self.wfile.write(data)
                return
            for byte in data:
                self.wfile.write(bytes([byte]))
                time.sleep(reply.trickle)

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet."""

    return Handler


def _completion(request: dict[str, Any], content: str | None) -> bytes:
    """A well-formed chat completion whose first choice says ``content``."""
    message = {"role": "assistant", "content": content}
    return json.dumps({"id": "chatcmpl-test", "object": "chat.completion", "created": 0,
                       "model": request.get("model", ""),
                       "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                       "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}).encode("utf-8")


JUDGE_ENV = ("TRAJRUN_JUDGE_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID")
"""The environment variables the judge reads."""


def serving(monkeypatch: pytest.MonkeyPatch, also: Iterable[str] = ()) -> Iterator[ChatServer]:
    """A loopback chat-completions server for a fixture: the judge's environment variables (and ``also``)
    cleared, proxies bypassed; closed after the test."""
    for name in (*JUDGE_ENV, *also):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    chat = ChatServer()
    yield chat
    chat.close()
