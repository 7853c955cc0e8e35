"""One HTTP POST for the judge, over the standard library's ``http.client``, bounded in time and
size.

A single deadline covers connecting, sending and reading the whole answer (each read waits only for
what is left of it, so a server trickling bytes cannot stretch it), and an answer is capped at
``MAX_ANSWER`` bytes as sent and again after gzip or deflate is undone, in chunks, so a compressed
bomb is never held whole. Redirects are not followed (the key would go where the server says), and
proxies come from the environment (``HTTPS_PROXY``, ``HTTP_PROXY``, ``NO_PROXY``) as they do for the
rest of the user's tools.
"""

from __future__ import annotations

import base64
import functools
import http.client
import io
import socket
import ssl
import threading
import time
import urllib.parse
import urllib.request
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

MAX_ANSWER = 4 * 1024 * 1024
"""Bytes of one answer, status line and headers included, and again of its body once
decompressed."""
TOO_LARGE = "the answer is larger than 4 MiB{}; a judge's answer is a chat completion of a few KiB"
CHUNK = 64 * 1024


class Timeout(Exception):
    """The deadline passed before the whole answer arrived."""


class Dropped(Exception):
    """The connection failed, was refused, or broke before the answer was whole (worth asking
    again)."""


class Fatal(Exception):
    """A failure asking again cannot mend: an answer too large or in an encoding trajrun does not
    undo, an untrusted certificate, an unusable proxy setting."""


@dataclass(frozen=True, slots=True)
class Answer:
    """A whole HTTP answer: status, headers (names in lower case) and the decoded body."""

    status: int
    headers: Mapping[str, str]
    body: bytes


class Sockets:
    """The sockets of requests in flight, so that ``abort`` (another thread) can end them at
    once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self.aborted = False

    def add(self, sock: socket.socket) -> None:
        """Track ``sock``; a request that connects after ``abort`` is ended at once."""
        with self._lock:
            self._open.add(sock)
            aborted = self.aborted
        if aborted:
            _shut(sock)

    def discard(self, sock: socket.socket | None) -> None:
        """Stop tracking ``sock`` (``None``: a request that never connected)."""
        if sock is not None:
            with self._lock:
                self._open.discard(sock)

    def abort(self) -> None:
        """End every request in flight: a read blocked in another thread returns at once."""
        with self._lock:
            self.aborted = True
            open_now = list(self._open)
        for sock in open_now:
            _shut(sock)


def url_parts(url: str) -> urllib.parse.SplitResult | None:
    """The parts of an ``http://`` or ``https://`` URL with a host, or ``None`` for anything else:
    spaces, control characters and non-ASCII text included (percent-encode them; a host in
    punycode)."""
    if not all(33 <= ord(c) <= 126 for c in url):
        return None
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number from 0 to 65535
    except ValueError:
        return None
    return parts if parts.scheme in ("http", "https") and parts.hostname else None


def basic_token(parts: urllib.parse.SplitResult) -> str | None:
    """The ``Basic`` credentials of a URL's ``user:password@``, or ``None`` when it has none."""
    if parts.username is None and parts.password is None:
        return None
    pair = (
        f"{urllib.parse.unquote(parts.username or '')}:{urllib.parse.unquote(parts.password or '')}"
    )
    return base64.b64encode(pair.encode("utf-8")).decode("ascii")


def url_secrets(url: str) -> set[str]:
    """The credentials of a URL's ``user:password@`` in every form a message could quote: as
    written, decoded, and as the ``Basic`` token; the user name only when there is no password
    (``https://TOKEN@host``)."""
    parts = url_parts(url)
    if parts is None:
        return set()
    found = {basic_token(parts) or ""}
    for value in (parts.password, parts.username if parts.password is None else None):
        found |= {value or "", urllib.parse.unquote(value or "")}
    return found - {""}


def post(
    url: str, payload: bytes, headers: Mapping[str, str], timeout: float, sockets: Sockets
) -> Answer:
    """POST ``payload`` to ``url`` and read the whole answer within ``timeout`` seconds.

    Raises ``Timeout``, ``Dropped`` or ``Fatal``; ``url`` must be one ``url_parts`` accepts.
    """
    deadline = time.monotonic() + timeout
    parts = url_parts(url)
    assert parts is not None and parts.hostname is not None  # the caller checked the URL
    conn, target, extra = _connection(parts, deadline)
    sock, response = None, None
    try:
        conn.connect()
        sock = conn.sock
        sockets.add(sock)
        conn.request("POST", target, payload, {**headers, **extra, "Connection": "close"})
        response = conn.getresponse()
        wire = bytearray()
        while chunk := response.read(CHUNK):
            wire += chunk
        encoding = response.getheader("Content-Encoding", "") or ""
        answer_headers = {k.lower(): v for k, v in response.getheaders()}
        return Answer(response.status, answer_headers, _decoded(bytes(wire), encoding))
    except TimeoutError:
        raise Timeout() from None
    except ssl.SSLCertVerificationError as exc:
        raise Fatal(f"its TLS certificate is not trusted ({exc.verify_message})") from None
    except (OSError, http.client.HTTPException) as exc:
        raise Dropped(_why(exc)) from None
    finally:
        sockets.discard(sock)
        if response is not None:
            # the socket lives until its reader closes, even when the read stopped midway
            response.close()
        conn.close()


def _connection(
    parts: urllib.parse.SplitResult, deadline: float
) -> tuple[http.client.HTTPConnection, str, dict[str, str]]:
    """The connection for ``parts`` (through the environment's proxy, if any), the request target,
    and headers the proxy needs."""
    host, port = parts.hostname or "", parts.port
    path = urllib.parse.urlunsplit(("", "", parts.path or "/", parts.query, ""))
    proxy = _proxy(parts.scheme, parts.netloc.rpartition("@")[2])
    if proxy is None:
        if parts.scheme == "https":
            return _HTTPS(host, port, deadline, context=_tls()), path, {}
        return _HTTP(host, port, deadline), path, {}
    auth = basic_token(proxy)
    extra = {"Proxy-Authorization": f"Basic {auth}"} if auth else {}
    if parts.scheme == "https":
        conn = _HTTPS(proxy.hostname or "", proxy.port, deadline, context=_tls())
        conn.set_tunnel(host, parts.port, headers=extra)
        return conn, path, {}
    absolute = urllib.parse.urlunsplit(
        ("http", parts.netloc.rpartition("@")[2], parts.path or "/", parts.query, "")
    )
    return _HTTP(proxy.hostname or "", proxy.port, deadline), absolute, extra


def _proxy(scheme: str, netloc: str) -> urllib.parse.SplitResult | None:
    """The environment's proxy for ``scheme`` (``None``: connect directly, also for hosts in
    ``NO_PROXY``)."""
    if urllib.request.proxy_bypass(netloc):
        return None
    raw = urllib.request.getproxies().get(scheme)
    if not raw:
        return None
    parts = url_parts(raw if "://" in raw else f"http://{raw}")
    if parts is None or parts.scheme != "http":
        raise Fatal(
            f"the {scheme} proxy from the environment is not an http:// URL; trajrun reaches the "
            "judge through http:// proxies only"
        )
    return parts


@functools.lru_cache(maxsize=1)
def _tls() -> ssl.SSLContext:
    """Certificate checks against the system's authorities, plus certifi's when it is installed."""
    context = ssl.create_default_context()
    try:
        import certifi  # deferred and optional: the authorities httpx and requests ship with
    except ImportError:
        return context
    context.load_verify_locations(certifi.where())
    return context


def _decoded(wire: bytes, encoding: str) -> bytes:
    """The body with its ``Content-Encoding`` undone, at most ``MAX_ANSWER`` bytes of it."""
    name = encoding.strip().lower()
    if name in ("", "identity"):
        return wire
    if name in ("gzip", "x-gzip"):
        return _inflate(wire, 16 + zlib.MAX_WBITS, name)
    if name == "deflate":
        zlib_header = (
            len(wire) >= 2 and wire[0] & 0x0F == 8 and int.from_bytes(wire[:2], "big") % 31 == 0
        )
        return _inflate(
            wire, zlib.MAX_WBITS if zlib_header else -zlib.MAX_WBITS, name
        )  # some send it bare
    raise Fatal(
        f"the answer is encoded as {encoding!r}; trajrun reads gzip, deflate or no encoding"
    )


def _inflate(data: bytes, wbits: int, name: str) -> bytes:
    """``data`` decompressed a chunk at a time, stopping past ``MAX_ANSWER`` bytes."""
    inflater, out, rest = zlib.decompressobj(wbits), bytearray(), data
    try:
        while not inflater.eof:
            chunk = inflater.decompress(rest, CHUNK)
            out += chunk
            if len(out) > MAX_ANSWER:
                raise Fatal(TOO_LARGE.format(f" once its {name} encoding is undone"))
            rest = inflater.unconsumed_tail
            if not chunk and not rest:
                break
    except zlib.error as exc:
        raise Fatal(f"the answer's {name} data is corrupt ({exc})") from None
    if not inflater.eof:
        raise Fatal(f"the answer's {name} data is cut short")
    return bytes(out)


def _why(exc: BaseException) -> str:
    """A connection failure in a few words."""
    if isinstance(exc, http.client.IncompleteRead):
        return "the connection closed before the whole answer arrived"
    if isinstance(exc, http.client.RemoteDisconnected):
        return "the server closed the connection without answering"
    if isinstance(exc, http.client.HTTPException):
        return f"the answer is not well-formed HTTP ({type(exc).__name__})"
    return str(exc) or type(exc).__name__


def _shut(sock: socket.socket) -> None:
    """End a socket's traffic both ways, waking a read blocked on it in another thread."""
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # already closed


def _left(deadline: float) -> float:
    """Seconds until ``deadline``; raises ``TimeoutError`` once it has passed."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("the deadline passed")
    return left


class _Reader(io.RawIOBase):
    """A socket's incoming bytes, each read waiting only for what is left of the deadline, and
    counted.

    It reads through the socket's own ``makefile``, which keeps the socket open until this reader
    closes (``http.client`` closes the connection once the headers say ``Connection: close``)."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        super().__init__()
        self._sock, self._raw, self._deadline, self._count = (
            sock,
            sock.makefile("rb", buffering=0),
            deadline,
            0,
        )

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        self._sock.settimeout(_left(self._deadline))
        count = self._raw.readinto(buffer) or 0
        self._count += count
        if self._count > MAX_ANSWER:
            raise Fatal(TOO_LARGE.format(""))
        return count

    def close(self) -> None:
        self._raw.close()
        super().close()


class _Socket:
    """What ``http.client.HTTPResponse`` takes as its socket: only ``makefile`` is used."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self._sock, self._deadline = sock, deadline

    def makefile(self, mode: str) -> io.BufferedReader:
        return io.BufferedReader(_Reader(self._sock, self._deadline))


def _response_class(deadline: float) -> Any:
    """An ``HTTPResponse`` factory whose reads keep to ``deadline`` (the tunnel's answer and the
    server's)."""

    def response(sock: socket.socket, *args: Any, **kwargs: Any) -> http.client.HTTPResponse:
        reader = cast(socket.socket, _Socket(sock, deadline))  # only its makefile is used
        return http.client.HTTPResponse(reader, *args, **kwargs)

    return response


class _HTTP(http.client.HTTPConnection):
    """A connection that connects within what is left of ``deadline`` and reads within it."""

    def __init__(self, host: str, port: int | None, deadline: float) -> None:
        super().__init__(host, port)
        self._deadline = deadline
        self.response_class = _response_class(deadline)

    def connect(self) -> None:
        self.timeout = _left(self._deadline)
        super().connect()


class _HTTPS(http.client.HTTPSConnection):
    """``_HTTP`` over TLS."""

    def __init__(
        self, host: str, port: int | None, deadline: float, context: ssl.SSLContext
    ) -> None:
        super().__init__(host, port, context=context)
        self._deadline = deadline
        self.response_class = _response_class(deadline)

    def connect(self) -> None:
        self.timeout = _left(self._deadline)
        super().connect()
