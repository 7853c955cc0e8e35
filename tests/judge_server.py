"""A loopback server that speaks OpenAI's chat-completions protocol, for the judge's tests: never a real model.

It answers ``POST /v1/chat/completions`` on 127.0.0.1 (a free port) with scripted replies, then a default one;
it records every request and how many were in flight at once.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted reply: the assistant's text (``None``: no text), or an HTTP error status; after ``delay`` s."""

    content: str | None = None
    status: int = 200
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


def answer(score: float, reasoning: str = "The run does what the rubric asks.") -> Reply:
    """A well-formed judge answer."""
    return Reply(json.dumps({"score": score, "reasoning": reasoning}))


class ChatServer:
    """The server: ``script`` replies are used first, in order, then ``default``; ``requests`` holds each body."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.script: deque[Reply] = deque()
        self.default = answer(0.9)
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.httpd.daemon_threads = True  # a reply still sleeping past the client's timeout never blocks teardown
        self._thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        """The base URL to give the SDK."""
        return f"http://127.0.0.1:{self.httpd.server_port}/v1"

    def reply(self, *replies: Reply) -> None:
        """Script the next replies."""
        self.script.extend(replies)

    def close(self) -> None:
        """Stop serving."""
        self.httpd.shutdown()
        self.httpd.server_close()

    def _take(self, body: dict[str, Any]) -> Reply:
        """Record a request and pick its reply."""
        with self._lock:
            self.requests.append(body)
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
            if not self.path.endswith("/chat/completions"):
                self._send(404, {"error": {"message": f"no route {self.path}"}})
                return
            reply = server._take(body)
            try:
                time.sleep(reply.delay)
                if reply.status != 200:
                    self._send(reply.status, {"error": {"message": f"scripted {reply.status}", "type": "test"}},
                               reply.headers)
                    return
                message = {"role": "assistant", "content": reply.content}
                self._send(200, {"id": "chatcmpl-test", "object": "chat.completion", "created": 0,
                                 "model": body.get("model", ""), "usage": {"prompt_tokens": 1, "completion_tokens": 1,
                                                                           "total_tokens": 2},
                                 "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]})
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

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet."""

    return Handler
