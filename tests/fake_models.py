"""A fake model upstream on 127.0.0.1 for the model proxy's tests: OpenAI Chat Completions, OpenAI Responses and
Anthropic Messages, JSON or streamed (server-sent events), scripted like a weather agent's model.

The model asks for ``get_weather`` first, then ``get_forecast``, then answers with what the tools returned; which
step it is on comes from how many tool results the request holds. ``behaviour`` makes it misbehave: ``hang``
(never answers), ``garbage`` (bytes that are not HTTP), ``html`` (a web page). Every request's headers and body
are kept, so a test can see what reached the upstream.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

STDLIB_AGENT = '''
import json, os, sys, urllib.request

def call(messages):
    base = "http://127.0.0.1:9/v1" if sys.argv[2:] == ["ignore"] else os.environ["OPENAI_BASE_URL"]
    body = json.dumps({"model": "fake", "messages": messages, "stream_options": {"include_usage": True}}).encode()
    headers = {"Content-Type": "application/json", "Authorization": "Bearer " + os.environ["OPENAI_API_KEY"]}
    request = urllib.request.Request(base + "/chat/completions?api-key=sk-in-url-secret&v=2", body, headers)
    return json.load(urllib.request.urlopen(request, timeout=30))

messages = [{"role": "user", "content": "hi"}]
for round in range(int(sys.argv[1])):
    messages.append(call(messages)["choices"][0]["message"])
    messages.append({"role": "user", "content": "again"})
print(json.dumps(messages))
'''
"""A Chat Completions agent of the standard library: ``agent.py ROUNDS [ignore]`` makes ROUNDS model calls (to a
fixed address with ``ignore``), a key in the URL too, and prints the messages."""

CITY_CALLS: list[tuple[str, dict[str, Any]]] = [("get_weather", {"city": "Paris"}),
                                               ("get_forecast", {"city": "Paris", "days": 2})]


class Upstream(ThreadingHTTPServer):
    """The fake upstream: ``requests`` holds ``(path, headers, body)`` of each request it got."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: list[tuple[str, dict[str, str], Any]] = []
        self.behaviour = "normal"

    @property
    def url(self) -> str:
        """Its base URL."""
        return f"http://127.0.0.1:{self.server_address[1]}"


@contextmanager
def upstream() -> Iterator[Upstream]:
    """A fake upstream serving in a thread while the block runs."""
    server = Upstream()
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _step(results: list[str]) -> tuple[str, dict[str, Any]] | str:
    """The model's next move after ``results`` (the tool results so far): a call, or the answer."""
    if len(results) < len(CITY_CALLS):
        return CITY_CALLS[len(results)]
    return "Paris: " + "; ".join(results)


class _Handler(BaseHTTPRequestHandler):
    server: Upstream
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"null")
        self.server.requests.append((self.path, dict(self.headers.items()), body))
        behaviour = self.server.behaviour
        if behaviour == "hang":
            time.sleep(30)
            return
        if behaviour == "garbage":
            self.wfile.write(b"\x00\xffthis is not HTTP\r\n\r\n")
            self.close_connection = True
            return
        if behaviour == "html":
            self._send("text/html", b"<html><body>Welcome to nginx!</body></html>")
            return
        path = self.path.split("?")[0]
        if path.endswith("/chat/completions"):
            self._chat(body)
        elif path.endswith("/responses"):
            self._responses(body)
        elif path.endswith("/v1/messages"):
            self._anthropic(body)
        else:
            self._send("application/json", b'{"error": {"message": "not found"}}', 404)

    def _chat(self, body: dict[str, Any]) -> None:
        results = [str(m["content"]) for m in body["messages"] if m.get("role") == "tool"]
        step = _step(results)
        n = len(results)
        usage = {"prompt_tokens": 10 + n, "completion_tokens": 5, "total_tokens": 15 + n}
        if isinstance(step, str):
            message: dict[str, Any] = {"role": "assistant", "content": step}
        else:
            function = {"name": step[0], "arguments": json.dumps(step[1])}
            call = {"id": f"call_{n}", "type": "function", "function": function}
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
        if not body.get("stream"):
            completion = {"id": f"chatcmpl-{n}", "object": "chat.completion", "created": 1700000000 + n,
                          "model": "fake", "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                          "usage": usage}
            self._send("application/json", json.dumps(completion).encode())
            return
        head = {"id": f"chatcmpl-{n}", "object": "chat.completion.chunk", "created": 1700000000 + n, "model": "fake"}
        chunks = [{**head, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}]
        if isinstance(step, str):
            for piece in (step[:4], step[4:]):
                chunks.append({**head, "choices": [{"index": 0, "delta": {"content": piece}}]})
        else:
            args = json.dumps(step[1])
            first = {"index": 0, "id": f"call_{n}", "type": "function", "function": {"name": step[0], "arguments": ""}}
            chunks.append({**head, "choices": [{"index": 0, "delta": {"tool_calls": [first]}}]})
            for piece in (args[:5], args[5:]):
                chunks.append({**head, "choices": [{"index": 0, "delta": {"tool_calls": [
                    {"index": 0, "function": {"arguments": piece}}]}}]})
        chunks.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        chunks.append({**head, "choices": [], "usage": usage})
        self._stream([(None, chunk) for chunk in chunks] + [(None, "[DONE]")])

    def _responses(self, body: dict[str, Any]) -> None:
        items = body["input"] if isinstance(body["input"], list) else []
        results = [str(i["output"]) for i in items if i.get("type") == "function_call_output"]
        step = _step(results)
        n = len(results)
        if isinstance(step, str):
            output = [{"type": "message", "id": f"msg_{n}", "role": "assistant", "status": "completed",
                       "content": [{"type": "output_text", "text": step, "annotations": []}]}]
        else:
            output = [{"type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n}", "name": step[0],
                       "arguments": json.dumps(step[1]), "status": "completed"}]
        response = {"id": f"resp_{n}", "object": "response", "created_at": 1700000000, "model": "fake",
                    "status": "completed", "output": output, "usage": {"input_tokens": 10 + n, "output_tokens": 5,
                                                                       "total_tokens": 15 + n}}
        if not body.get("stream"):
            self._send("application/json", json.dumps(response).encode())
            return
        events = [("response.created", {"type": "response.created", "sequence_number": 0,
                                        "response": {**response, "status": "in_progress", "output": []}})]
        for i, item in enumerate(output):
            events.append(("response.output_item.done", {"type": "response.output_item.done", "sequence_number": i + 1,
                                                         "output_index": i, "item": item}))
        events.append(("response.completed", {"type": "response.completed", "sequence_number": 9,
                                              "response": response}))
        self._stream(events)

    def _anthropic(self, body: dict[str, Any]) -> None:
        results = [str(b["content"]) for m in body["messages"] if isinstance(m["content"], list)
                   for b in m["content"] if b.get("type") == "tool_result"]
        step = _step(results)
        n = len(results)
        if isinstance(step, str):
            content: list[dict[str, Any]] = [{"type": "text", "text": step}]
        else:
            content = [{"type": "tool_use", "id": f"toolu_{n}", "name": step[0], "input": step[1]}]
        usage = {"input_tokens": 10 + n, "output_tokens": 5}
        message = {"id": f"msg_{n}", "type": "message", "role": "assistant", "model": "fake", "content": content,
                   "stop_reason": "end_turn" if isinstance(step, str) else "tool_use", "stop_sequence": None,
                   "usage": usage}
        if not body.get("stream"):
            self._send("application/json", json.dumps(message).encode())
            return
        events: list[tuple[str | None, Any]] = [("message_start", {"type": "message_start", "message": {
            **message, "content": [], "stop_reason": None, "usage": {"input_tokens": 10 + n, "output_tokens": 1}}})]
        block = content[0]
        if block["type"] == "text":
            events.append(("content_block_start", {"type": "content_block_start", "index": 0,
                                                   "content_block": {"type": "text", "text": ""}}))
            events.append(("content_block_delta", {"type": "content_block_delta", "index": 0,
                                                   "delta": {"type": "text_delta", "text": block["text"]}}))
        else:
            events.append(("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {
                **block, "input": {}}}))
            args = json.dumps(block["input"])
            for piece in (args[:5], args[5:]):
                events.append(("content_block_delta", {"type": "content_block_delta", "index": 0,
                                                       "delta": {"type": "input_json_delta", "partial_json": piece}}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": 0}))
        events.append(("message_delta", {"type": "message_delta", "delta": {"stop_reason": message["stop_reason"],
                                                                            "stop_sequence": None},
                                         "usage": {"output_tokens": 5}}))
        events.append(("message_stop", {"type": "message_stop"}))
        self._stream(events)

    def _send(self, content_type: str, data: bytes, status: int = 200) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, events: Sequence[tuple[str | None, Any]]) -> None:
        """Events sent one at a time, without a length (the connection closes at the end)."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        for name, data in events:
            text = data if isinstance(data, str) else json.dumps(data)
            self.wfile.write(((f"event: {name}\n" if name else "") + f"data: {text}\n\n").encode())
            self.wfile.flush()
        self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        """Quiet."""
