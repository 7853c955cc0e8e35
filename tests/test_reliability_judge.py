"""The judge against hostile and broken servers, and hostile suites and cache files (issue #27).

Every server here is the loopback one of tests/judge_server.py; nothing leaves the machine. Secrets are checked
in every output the command line writes (console, JSON, JUnit, HTML, job summary) by looking for them verbatim.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import ssl
import subprocess
import sys
import textwrap
import time
import tracemalloc
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
import trajrun
from judge_server import ChatServer, Reply, answer, serving
from trajrun.match.expectation import JudgeSpec
from trajrun.match.verdict import JudgeVerdict
from trajrun.run import judge_http
from trajrun.run.judge import Judge, JudgeOptions
from trajrun.run.runner import RunOptions
from trajrun.suites.model import JudgeSettings

RUN = {"tool_calls": [{"name": "get_forecast", "args": {"city": "Paris"}, "result": "sunny"}],
       "answer": "Paris will be sunny."}
SECRET = "sk-proj-TOPSECRET0123456789abcdefXYZ"
PASSWORD = "hunter2-very-secret"
ONE_CASE = "- {name: a, source: run.json, judge: {rubric: good}}\n"
DOING = "; expected a chat completion in JSON"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatServer]:
    """A loopback chat-completions server; the judge's environment variables cleared, proxies bypassed."""
    yield from serving(monkeypatch, also=("JUDGE_KEY", "GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY"))


def suite(folder: Path, defaults: str, cases: str = ONE_CASE) -> Path:
    """A suite with ``judge_defaults: {model: judge-test, <defaults>}`` and the run file it reads."""
    (folder / "run.json").write_text(json.dumps(RUN), encoding="utf-8")
    path = folder / "judged.suite.yaml"
    head = f"judge_defaults: {{model: judge-test{', ' if defaults else ''}{defaults}}}\n"
    path.write_text(head + "cases:\n" + textwrap.indent(cases, "  "), encoding="utf-8")
    return path


def run(path: Path, **judge: object) -> trajrun.CaseResult:
    """The suite's first case, run as a library call without a judge cache and with short backoff."""
    options = JudgeOptions(**{"cache": None, "backoff": 0.01, **judge})  # type: ignore[arg-type]
    return trajrun.run_paths([str(path)], RunOptions(root=path.parent, judge=options)).cases[0]


def verdict(case: trajrun.CaseResult) -> JudgeVerdict:
    """The judge's verdict on a case."""
    assert case.evaluation is not None and case.evaluation.judge is not None, case.message
    return case.evaluation.judge


def cli(folder: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``trajrun ARGS`` as a real process in ``folder``, stdout and stderr together."""
    full = {**os.environ, "NO_COLOR": "1", **(env or {})}
    return subprocess.run([sys.executable, "-m", "trajrun", *args], cwd=folder, env=full, capture_output=True,
                          text=True, timeout=120, check=False)


def every_output(folder: Path, *secrets: str, env: dict[str, str]) -> str:
    """Run the suite in ``folder`` writing every report; assert each holds the server's message but no secret;
    return the console."""
    summary = folder / "summary.md"
    out = cli(folder, "run", ".", "--json", "r.json", "--junit-xml", "r.xml", "--html", "r.html",
              "--annotations", "github", "--no-judge-cache", env={**env, "GITHUB_STEP_SUMMARY": str(summary)})
    assert out.returncode == 1, out.stdout + out.stderr
    console = out.stdout + out.stderr
    texts = {"console": console, "summary": summary.read_text(encoding="utf-8")}
    texts |= {name: (folder / name).read_text(encoding="utf-8") for name in ("r.json", "r.xml", "r.html")}
    for name, text in texts.items():
        for secret in secrets:
            assert secret not in text, f"{name} holds {secret!r}"
        assert "Incorrect API key provided" in text, name  # the message is there, without the secret
    return console


# -- secrets ---------------------------------------------------------------------------------------------------------


def test_a_401_quoting_the_key_leaves_it_out_of_every_report(server: ChatServer, tmp_path: Path) -> None:
    """A server answering ``Incorrect API key provided: <key>`` has its message shown with the key as ``***``
    (also in its ``Bearer`` form) in the console, JSON, JUnit, HTML and the job summary."""
    suite(tmp_path, f"base_url: '{server.url}', api_key_env: JUDGE_KEY")
    server.default = Reply(echo_key=True)
    console = every_output(tmp_path, SECRET, env={"JUDGE_KEY": SECRET})
    assert server.authorizations == [f"Bearer {SECRET}"]
    assert (f"judge: judge judge-test at {server.url} refused the request: HTTP 401: Incorrect API key provided: "
            "***. The request carried Authorization: Bearer ***") in console


def test_a_password_in_the_base_url_is_never_shown(server: ChatServer, tmp_path: Path) -> None:
    """``OPENAI_BASE_URL=http://user:password@host/v1``: the credentials go as HTTP Basic (as curl and httpx send
    them), and every message shows the URL as ``http://***@host/v1`` and the echoed credentials as ``***``."""
    import base64

    suite(tmp_path, "retries: 0")
    url = server.url.replace("http://", f"http://judge-user:{PASSWORD}@")
    token = base64.b64encode(f"judge-user:{PASSWORD}".encode()).decode()
    server.default = Reply(echo_key=True)
    console = every_output(tmp_path, PASSWORD, token, SECRET,
                           env={"OPENAI_BASE_URL": url, "OPENAI_API_KEY": SECRET})
    assert server.authorizations == [f"Basic {token}"]
    shown = server.url.replace("http://", "http://***@")
    assert f"judge: judge judge-test at {shown} refused the request: HTTP 401: Incorrect API key provided: ***." \
           in console


def test_an_answer_quoting_the_key_has_it_redacted_from_the_reasoning(server: ChatServer, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A judge that writes the key into its reasoning (or into prose that is no answer) shows ``***``."""
    monkeypatch.setenv("JUDGE_KEY", SECRET)
    path = suite(tmp_path, f"base_url: '{server.url}', api_key_env: JUDGE_KEY")
    server.reply(answer(0.9, f"I was called with {SECRET}."), Reply(f"Your key is {SECRET}"))
    assert verdict(run(path)).reasoning == "I was called with ***."
    assert run(path).message == ('judge: the judge\'s answer is not {"score": 0..1, "reasoning": "..."}: it is not '
                                 'JSON; raw answer: "Your key is ***"')


# -- where the key goes ------------------------------------------------------------------------------------------------


def test_a_suite_base_url_without_its_own_key_is_a_load_error(tmp_path: Path) -> None:
    """A suite that picks a remote endpoint must name the variable holding its key; OPENAI_API_KEY never goes
    there. ``api_key_env`` must be a variable's name (not the key), and only one of the two key settings."""
    (tmp_path / "a.suite.yaml").write_text(
        "judge_defaults: {model: m, base_url: 'https://judge.example.com/v1'}\ncases: []\n", encoding="utf-8")
    (tmp_path / "b.suite.yaml").write_text(
        f"judge_defaults: {{model: m, api_key_env: {SECRET}}}\ncases: []\n", encoding="utf-8")
    (tmp_path / "c.suite.yaml").write_text(
        "judge_defaults: {model: m, api_key_env: K, api_key: x, base_url: 'ftp://h/v1'}\ncases: []\n",
        encoding="utf-8")
    out = cli(tmp_path, "validate", ".")
    assert out.returncode == 2
    assert ("a.suite.yaml:1:38: judge_defaults.base_url: a suite that sets its own base_url must name the variable "
            "that holds its key: add `api_key_env: MY_KEY` (OPENAI_API_KEY goes only to OPENAI_BASE_URL or the "
            "OpenAI API, never to a URL a suite picks; a server on this machine needs no key)") in out.stdout
    assert ("b.suite.yaml:1:41: judge_defaults.api_key_env: api_key_env must be the name of an environment variable "
            "(letters, digits and _), such as JUDGE_API_KEY; is the key itself written there?") in out.stdout
    assert "c.suite.yaml:1:41: judge_defaults.api_key_env: set api_key_env or api_key, not both" in out.stdout
    assert ("c.suite.yaml:1:66: judge_defaults.base_url: base_url must be an http:// or https:// URL with a host, in "
            "ASCII without spaces, such as http://localhost:8000/v1") in out.stdout
    assert SECRET not in out.stdout + out.stderr


def test_the_environment_key_goes_only_to_the_environment_endpoint(server: ChatServer, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A suite's loopback base_url without a key of its own is sent no key at all; with ``api_key_env`` it is sent
    that variable's value; OPENAI_API_KEY (and the organization headers) go only to OPENAI_BASE_URL."""
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("JUDGE_KEY", "suite-key-123")
    assert run(suite(tmp_path, f"base_url: '{server.url}'")).outcome == "passed"
    assert run(suite(tmp_path, f"base_url: '{server.url}', api_key_env: JUDGE_KEY")).outcome == "passed"
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("OPENAI_ORG_ID", "org-1")
    assert run(suite(tmp_path, "")).outcome == "passed"
    assert server.authorizations == [None, "Bearer suite-key-123", f"Bearer {SECRET}"]
    monkeypatch.delenv("JUDGE_KEY")
    case = run(suite(tmp_path, f"base_url: '{server.url}', api_key_env: JUDGE_KEY"))
    assert case.message == ("judge: no API key for judge-test: set the JUDGE_KEY environment variable (named by "
                            "judge_defaults.api_key_env)")
    assert len(server.requests) == 3


def test_a_key_with_a_line_break_is_refused_without_showing_it(server: ChatServer, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A key (or organization) no header can carry is a case error naming its variable, never the value."""
    monkeypatch.setenv("JUDGE_KEY", f"{SECRET}\nX-Injected: 1")
    case = run(suite(tmp_path, f"base_url: '{server.url}', api_key_env: JUDGE_KEY"))
    assert case.message == ("judge: the value of JUDGE_KEY holds characters an HTTP header cannot carry "
                            "(spaces, line breaks or non-ASCII); check it")
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("OPENAI_ORG_ID", "org\r\nX-Injected: 1")
    assert run(suite(tmp_path, "")).message == ("judge: the value of OPENAI_ORG_ID holds characters an HTTP header "
                                                "cannot carry (spaces, line breaks or non-ASCII); check it")
    assert server.requests == []


def test_a_base_url_from_the_environment_that_is_no_url_is_a_case_error(server: ChatServer, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """OPENAI_BASE_URL is checked when used (it is not part of the suite); its credentials are not shown."""
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://me:{PASSWORD}@127.0.0.1:1/vé")
    assert run(suite(tmp_path, "")).message == ("judge: the judge's base URL from OPENAI_BASE_URL is not an http:// "
                                                "or https:// URL with a host, in ASCII without spaces: "
                                                '"http://***@127.0.0.1:1/vé"')


def test_redirects_are_not_followed(server: ChatServer, tmp_path: Path) -> None:
    """A 307 to another host is an error of the check: the key is not sent on."""
    path = suite(tmp_path, f"base_url: '{server.url}', api_key: local-key")
    server.default = Reply(status=307, body=b"", headers={"Location": "http://127.0.0.2:9/v1/chat/completions"})
    assert run(path).message == (f"judge: judge judge-test at {server.url} redirected the request (HTTP 307); trajrun "
                                 "follows no redirect, so the key goes nowhere else: set the base URL to the address "
                                 "that answers")
    assert len(server.requests) == 1


def test_the_environment_proxy_is_used(server: ChatServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``HTTP_PROXY`` carries the request (the loopback server answers as the proxy, seeing the absolute URL);
    a proxy that is not ``http://`` is a clear error, not retried."""
    monkeypatch.setenv("JUDGE_KEY", "suite-key-123")
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name)
    monkeypatch.setenv("http_proxy", server.url.removesuffix("/v1"))
    path = suite(tmp_path, "base_url: 'http://judge.invalid/v1', api_key_env: JUDGE_KEY")
    assert run(path).outcome == "passed"
    assert server.paths == ["http://judge.invalid/v1/chat/completions"]
    monkeypatch.setenv("http_proxy", "socks5://127.0.0.1:9")
    assert run(path).message == ("judge: judge judge-test at http://judge.invalid/v1: the http proxy from the "
                                 "environment is not an http:// URL; trajrun reaches the judge through http:// "
                                 "proxies only")


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command to make a certificate")
def test_https_checks_the_certificate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Over HTTPS an untrusted certificate is a clear error, not retried; a trusted one gets its answer."""
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=judge",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(tmp_path / "key.pem"),
                    "-out", str(tmp_path / "cert.pem")], check=True, capture_output=True, timeout=60)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    chat = ChatServer(tls)
    try:
        path = suite(tmp_path, f"base_url: '{chat.url}', retries: 2")
        assert run(path).message.startswith(f"judge: judge judge-test at {chat.url}: its TLS certificate is not "
                                            "trusted (")
        trusting = ssl.create_default_context(cafile=str(tmp_path / "cert.pem"))
        monkeypatch.setattr(judge_http, "_tls", lambda: trusting)
        assert run(path).outcome == "passed" and len(chat.requests) == 1
    finally:
        chat.close()


# -- one deadline, bounded size ----------------------------------------------------------------------------------------


def test_a_trickling_server_is_cut_off_at_the_timeout(server: ChatServer, tmp_path: Path) -> None:
    """One byte every 0.2 s (each read succeeding) still ends at ``timeout``: it bounds the whole answer, headers
    included, not each read."""
    path = suite(tmp_path, f"base_url: '{server.url}', timeout: 1, retries: 0")
    server.default = Reply(answer(0.9).content, trickle=0.2)
    started = time.monotonic()
    case = run(path)
    assert time.monotonic() - started < 15  # per-read timeouts would take over a minute
    assert case.message == (f"judge: judge judge-test at {server.url}: no answer within 1 s, 1 attempt with backoff; "
                            "try again later, raise judge_defaults.timeout or .retries, or lower --judge-concurrency")


def _bomb(size: int) -> bytes:
    """``size`` zero bytes, gzip-compressed (about a thousandth of that)."""
    packer, zeros = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS), bytes(1 << 20)
    return b"".join([*(packer.compress(zeros) for _ in range(size >> 20)), packer.flush()])


def test_a_gzip_bomb_is_refused_within_a_few_mib(server: ChatServer, tmp_path: Path) -> None:
    """An answer inflating to 256 MiB is stopped past 4 MiB: the message says so and memory stays small."""
    path = suite(tmp_path, f"base_url: '{server.url}'")
    server.default = Reply(body=_bomb(256 << 20), headers={"Content-Encoding": "gzip"})
    tracemalloc.start()
    try:
        case = run(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert case.message == (f"judge: judge judge-test at {server.url}: the answer is larger than 4 MiB once its gzip "
                            "encoding is undone; a judge's answer is a chat completion of a few KiB")
    assert peak < 64 << 20
    assert len(server.requests) == 1  # not asked again


SIZE = "; a judge's answer is a chat completion of a few KiB"


@pytest.mark.parametrize(("reply", "message"), [
    (Reply(body=b" " * (5 << 20)), "WHERE: the answer is larger than 4 MiB" + SIZE),
    (Reply(body=gzip.compress(b"{}")[:-6], headers={"Content-Encoding": "gzip"}),
     "WHERE: the answer's gzip data is cut short"),
    (Reply(body=b"{}", headers={"Content-Encoding": "br"}),
     "WHERE: the answer is encoded as 'br'; trajrun reads gzip, deflate or no encoding"),
    (Reply(body=b""), "WHERE sent an empty answer" + DOING),
    (Reply(body=b'{"choices": "\xff\xfe"}'), "WHERE sent an answer that is not UTF-8 text (byte 13)" + DOING),
    (Reply(body=b"[" * 200_000), "WHERE sent JSON nested too deep to read" + DOING),
    (Reply(body=b"<html>Bad gateway</html>"), ("WHERE sent an answer that is not JSON (Expecting value: line 1 "
                                               f"column 1 (char 0)){DOING}; it starts: \"<html>Bad gateway</html>\"")),
    (Reply(body=b'{"id": "x"}'), "WHERE sent JSON without choices[0].message" + DOING),
    (Reply(body=b'{"choices": [{"message": {"content": 3}, "finish_reason": ["x"]}]}'),
     "WHERE gave no text (finish_reason None); the judge must answer in text"),
    (Reply(body=zlib.compress(json.dumps({"choices": [{"message": {"content": "x"}}]}).encode()),
           headers={"Content-Encoding": "deflate"}),
     'the judge\'s answer is not {"score": 0..1, "reasoning": "..."}: it is not JSON; raw answer: "x"'),
], ids=["large", "cut-gzip", "brotli", "empty", "not-utf8", "deep", "html", "no-choices", "no-text", "deflate"])
def test_every_malformed_answer_is_a_clear_error_of_the_case(server: ChatServer, tmp_path: Path, reply: Reply,
                                                            message: str) -> None:
    """Bodies that are too large, badly encoded, empty, not UTF-8, too deep or not a completion: each is the
    case's error saying what came, never an internal error, and not asked again (a deflated answer reads)."""
    path = suite(tmp_path, f"base_url: '{server.url}'")
    server.default = reply
    assert run(path).message == "judge: " + message.replace("WHERE", f"judge judge-test at {server.url}")
    assert len(server.requests) == 1


def test_close_ends_a_request_in_flight(server: ChatServer, tmp_path: Path) -> None:
    """An interrupted run does not wait for a slow judge: ``close`` ends the request at once."""
    judge = Judge(JudgeOptions(cache=None))
    server.default = Reply(answer(0.9).content, delay=30)
    settings = JudgeSettings(model="m", base_url=server.url)
    future = judge.submit(JudgeSpec("r"), settings, trajrun.read_trajectory(RUN), None, "strict")
    while not server.in_flight:
        time.sleep(0.01)
    judge.close()
    verdict = future.result(timeout=10)
    assert verdict.error == f"judge m at {server.url}: the run stopped before the answer came"


# -- the cache ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("entry", [
    '{"score": 7, "reasoning": "edited"}',
    '{"score": -1, "reasoning": "edited"}',
    '{"score": "Infinity", "reasoning": "edited"}',
    '{"score": Infinity, "reasoning": "edited"}',
    '{"score": NaN, "reasoning": "edited"}',
    '{"score": true, "reasoning": "edited"}',
    '{"score": 0.9, "reasoning": ["edited"]}',
    '{"score": 0.9}',
    '[0.9, "edited"]',
    "[" * 100_000,
])
def test_an_invalid_cache_entry_is_a_miss(server: ChatServer, tmp_path: Path, entry: str) -> None:
    """A cache file edited to a score outside 0..1, a non-number, a non-string reasoning or other JSON is not
    trusted: the judge is asked again, and its answer replaces the entry."""
    path = suite(tmp_path, f"base_url: '{server.url}'", "- {name: a, source: run.json, judge: {rubric: good, "
                                                         "threshold: 0.5}}\n")
    cache = tmp_path / ".trajrun-cache"
    server.default = answer(0.2, "Not good.")
    assert run(path, cache=cache).outcome == "failed"
    (file,) = cache.glob("judge/*/*.json")
    file.write_text(entry, encoding="utf-8")
    case = run(path, cache=cache)
    assert (case.outcome, verdict(case).cached, verdict(case).score) == ("failed", False, 0.2)
    assert len(server.requests) == 2
    assert json.loads(file.read_text(encoding="utf-8"))["score"] == 0.2
    assert verdict(run(path, cache=cache)).cached is True
