"""The LLM judge of ``judge:`` checks: a prompt built from the run, one chat-completions request
(``judge_http``: one deadline, bounded size), and a strict reading of the answer.

Requests run in a thread pool (``--judge-concurrency``), so they overlap the rest of the run; each
is retried with backoff on 408, 409, 429, 5xx, timeouts and dropped connections. Answers are kept in
an on-disk cache keyed by model, prompt and parameters, so an unchanged run asks nothing. The check
itself is data (``trajrun.match.expectation.JudgeSpec``); only this module talks to a model. The key
and any credentials in the URL are redacted from every message the judge keeps.
"""

from __future__ import annotations

import functools
import json
import math
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import TrajrunError, exception_line
from ..files import FileWriteError, atomic_write
from ..match.expectation import ANY_ARGS, JudgeSpec, Step
from ..match.values import render_value
from ..match.verdict import JudgeVerdict
from ..suites.model import JudgeSettings
from ..trajectory import ToolCall, Trajectory

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor

    from .judge_http import Sockets

CACHE_FOLDER = ".trajrun-cache"
"""The judge cache's folder, beside the run's root unless ``--judge-cache DIR`` says otherwise."""
MODEL_VAR, BASE_URL_VAR, API_KEY_VAR = "TRAJRUN_JUDGE_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
ACCOUNT_HEADERS = (
    ("OPENAI_ORG_ID", "OpenAI-Organization"),
    ("OPENAI_PROJECT_ID", "OpenAI-Project"),
)
"""Variables sent as headers beside ``OPENAI_API_KEY`` (as the OpenAI SDK does), never with a
suite's key."""
MAX_VALUE = 2000
"""Characters of one call's arguments or result in the prompt (cut with ``…``), so one huge result
cannot crowd out the rest of the run."""
MAX_RAW = 500
"""Characters of a malformed answer shown in the check's error."""
MAX_MESSAGE = 200
"""Characters of a server's error message shown in the check's error."""
MAX_CACHE_FILE = 8 * 1024 * 1024
"""Bytes of one cache file: a larger one is a miss (an answer is at most 4 MiB)."""
MAX_PAUSE = 60.0
"""The longest pause before a retry, a server's ``Retry-After`` included."""
MIN_SECRET = 4
"""Shorter keys and passwords (``x``, ``sk``) are placeholders, not secrets: left in messages, whose
words would otherwise be cut up."""
REDACTED = "***"
RETRIED_STATUS = (408, 409, 429)
"""HTTP statuses worth asking again (with every 5xx): the server is busy, not saying no."""
RESPONSE_FORMAT = {"type": "json_object"}
CACHE_VERSION = 1
SKIPPED = "--no-judge"
MODE_WORDS = {
    "strict": "strict: these calls in this order, and no others",
    "unordered": "unordered: these calls in any order, and no others",
    "superset": "superset: at least these calls; others are allowed",
    "subset": "subset: no calls but these; some may be missing",
    "in_order": "in_order: these calls in this order; others are allowed between them",
}


class JudgeProblem(TrajrunError):
    """Why a judge check has no score: no model or key, the endpoint failed, or the answer does not
    read."""


@dataclass(frozen=True, slots=True)
class JudgeOptions:
    """How a run treats ``judge:`` checks: ``--no-judge``, ``--judge-cache DIR`` (``None``: no
    cache) and ``--judge-concurrency N``. ``backoff`` is the pause before the first retry in seconds
    (doubling, jittered)."""

    enabled: bool = True
    cache: Path | None = Path(CACHE_FOLDER)
    concurrency: int = 4
    backoff: float = 1.0


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where one judge request goes and how: the case's model, else the suite's ``judge_defaults``,
    else the environment. ``base_url`` ``None`` is the OpenAI API; ``api_key`` ``None`` sends no key
    (a suite's loopback server); ``account`` holds the environment's organization and project
    headers."""

    model: str
    base_url: str | None
    api_key: str | None = field(default=None, repr=False)
    timeout: float = 60.0
    retries: int = 3
    temperature: float = 0.0
    account: tuple[tuple[str, str], ...] = ()

    @property
    def where(self) -> str:
        """``judge gpt-4o-mini at http://127.0.0.1:8000/v1``, for messages (credentials in the URL
        as ``***``)."""
        at = shown_url(self.base_url) if self.base_url else "the OpenAI API"
        return f"judge {self.model} at {at}"

    @property
    def secrets(self) -> tuple[str, ...]:
        """Every form of the key and the URL's credentials a message could carry, longest first."""
        from . import judge_http  # deferred: only runs with judge checks need it

        found = {self.api_key or "", *judge_http.url_secrets(self.base_url or "")}
        found |= {json.dumps(s, ensure_ascii=False)[1:-1] for s in found}
        return tuple(sorted((s for s in found if len(s) >= MIN_SECRET), key=len, reverse=True))

    def redact(self, text: str) -> str:
        """``text`` with every secret of ``secrets`` shown as ``***``."""
        for secret in self.secrets:
            text = text.replace(secret, REDACTED)
        return text

    def headers(self) -> dict[str, str]:
        """The request's headers: credentials in the URL go as HTTP Basic (as curl and httpx send
        them), else the key as a Bearer token."""
        from . import judge_http  # deferred: only runs with judge checks need it

        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "Accept-Encoding": "gzip, deflate",
            "User-Agent": "trajrun",
        }
        parts = judge_http.url_parts(self.base_url or DEFAULT_BASE_URL)
        token = judge_http.basic_token(parts) if parts else None
        if token:
            headers["Authorization"] = f"Basic {token}"
        elif self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return {**headers, **dict(self.account)}


def shown_url(url: str) -> str:
    """``url`` with any ``user:password@`` shown as ``***@``."""
    scheme, sep, rest = url.partition("://")
    netloc, slash, tail = rest.partition("/")
    if not sep or "@" not in netloc:
        return url
    return f"{scheme}://{REDACTED}@{netloc.rpartition('@')[2]}{slash}{tail}"


def endpoint(
    spec: JudgeSpec, settings: JudgeSettings, environ: Mapping[str, str] = os.environ
) -> Endpoint:
    """The endpoint of one check; raises ``JudgeProblem`` naming what to set when the model or key
    is missing.

    A key from the environment goes only to the environment's base URL (or the OpenAI API): a suite
    that names its own ``base_url`` reaches it with its own ``api_key`` or ``api_key_env``, or with
    no key at all.
    """
    from . import judge_http  # deferred: only runs with judge checks need it

    model = spec.model or settings.model or environ.get(MODEL_VAR)
    if not model:
        raise JudgeProblem(
            f"no judge model: set `judge_defaults: {{model: ...}}` in the suite, `model:` in the "
            f"case's judge, or the {MODEL_VAR} environment variable"
        )
    account: tuple[tuple[str, str], ...] = ()
    key, origin = _suite_key(settings, environ, model)
    base = settings.base_url or None
    if base is None:
        base = environ.get(BASE_URL_VAR) or None
        if key is None:
            key, origin = environ.get(API_KEY_VAR, "").strip() or None, API_KEY_VAR
            account = _account(environ)
        if key is None:
            raise JudgeProblem(
                f"no API key for {model}: set {API_KEY_VAR}, or `judge_defaults: {{api_key_env: "
                "MY_KEY}` naming the variable that holds it (a local server takes any non-empty "
                "value)"
            )
    if key is not None and not _header_safe(key):
        raise _unfit(origin)
    ep = Endpoint(
        model, base, key, settings.timeout, settings.retries, settings.temperature, account
    )
    if base is not None and judge_http.url_parts(base) is None:
        origin = "judge_defaults.base_url" if settings.base_url else BASE_URL_VAR
        raise JudgeProblem(
            f"the judge's base URL from {origin} is not an http:// or https:// URL with a host, in "
            "ASCII without spaces: "
            f"{json.dumps(ep.redact(shown_url(base)), ensure_ascii=False)}"
        )
    return ep


def _account(environ: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """The organization and project headers ``OPENAI_ORG_ID`` and ``OPENAI_PROJECT_ID`` ask for."""
    found = []
    for var, header in ACCOUNT_HEADERS:
        value = environ.get(var, "").strip()
        if value and not _header_safe(value):
            raise _unfit(var)
        if value:
            found.append((header, value))
    return tuple(found)


def _header_safe(value: str) -> bool:
    """Whether ``value`` is visible ASCII, all an HTTP header can carry without being cut or
    refused."""
    return all(33 <= ord(c) <= 126 for c in value)


def _unfit(name: str) -> JudgeProblem:
    """The problem of a key or header value no HTTP header can carry (never showing the value)."""
    return JudgeProblem(
        f"the value of {name} holds characters an HTTP header cannot carry (spaces, line breaks or "
        "non-ASCII); check it"
    )


def _suite_key(
    settings: JudgeSettings, environ: Mapping[str, str], model: str
) -> tuple[str | None, str]:
    """The key the suite names (``api_key_env`` or ``api_key``) and where it came from; ``None``
    when it names none. A named variable that is unset or empty raises ``JudgeProblem``."""
    if settings.api_key_env:
        key = environ.get(settings.api_key_env, "").strip()
        if not key:
            raise JudgeProblem(
                f"no API key for {model}: set the {settings.api_key_env} environment variable "
                "(named by judge_defaults.api_key_env)"
            )
        return key, settings.api_key_env
    if settings.api_key and settings.api_key.strip():
        return settings.api_key.strip(), "judge_defaults.api_key"
    if settings.base_url and settings.api_key is not None:
        raise JudgeProblem(
            f"no API key for {model}: judge_defaults.api_key is empty; set the variable it reads, "
            "or name it with judge_defaults.api_key_env"
        )
    return None, ""


# -- the prompt ------------------------------------------------------------------------------------


def build_messages(
    spec: JudgeSpec, traj: Trajectory, steps: Sequence[Step] | None, mode: str
) -> list[dict[str, str]]:
    """The chat messages of one check: the fixed instructions, then the rubric, the run, the answer,
    the reference."""
    turns: dict[int, list[dict[str, Any]]] = {}
    for call in traj.calls:
        turns.setdefault(call.turn, []).append(
            {
                "position": call.position,
                "name": call.name,
                "args": render_value(call.args, MAX_VALUE),
                "outcome": _outcome(call),
            }
        )
    reference = [_step_text(s) for s in steps or ()] if spec.reference else None
    answer = traj.answer if traj.answer is not None else "(the run has no final answer text)"
    context = {
        "rubric": spec.rubric.strip(),
        "turns": [{"index": t, "calls": c} for t, c in sorted(turns.items())],
        "turns_total": traj.turns,
        "answer": answer,
        "reference": reference,
        "mode": MODE_WORDS.get(mode, mode),
    }
    return [
        {"role": "system", "content": _template("system.j2").render()},
        {"role": "user", "content": _template("user.j2").render(context)},
    ]


def _outcome(call: ToolCall) -> str:
    """What a call returned, for the prompt: text as it is, anything else as compact JSON; cut past
    ``MAX_VALUE``."""
    if not call.has_result:
        return "returned: (not recorded)"
    text = call.result if isinstance(call.result, str) else render_value(call.result, MAX_VALUE)
    text = text if len(text) <= MAX_VALUE else text[: MAX_VALUE - 1] + "…"
    return f"returned an error: {text}" if call.error else f"returned: {text}"


def _step_text(step: Step) -> str:
    """``search {"q":"x"}``; a step with any arguments reads ``search (any arguments)``; matchers as
    ``<regex 'x'>``."""
    args = "(any arguments)" if step.args is ANY_ARGS else render_value(step.args, MAX_VALUE)
    return f"{step.name} {args}"


@functools.lru_cache(maxsize=2)
def _template(name: str) -> Any:
    """A prompt template shipped in ``run/judge_prompts/``, compiled once."""
    from importlib import resources  # deferred: only runs with judge checks need it

    import jinja2  # deferred: only runs with judge checks need it

    text = (resources.files(__package__) / "judge_prompts" / name).read_text(encoding="utf-8")
    env = jinja2.Environment(
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
        autoescape=False,
    )
    return env.from_string(text)


# -- the answer ------------------------------------------------------------------------------------


def parse_answer(text: str) -> tuple[float, str]:
    """The score and reasoning of an answer that is exactly ``{"score": 0..1, "reasoning": "..."}``.

    Anything else (prose, a fenced block, other keys, a score out of range) raises ``JudgeProblem``
    that shows the raw text, since a guess at what the model meant would be a silent pass or fail.
    """
    problem, data = _answer_problem(text)
    if problem:
        shown = text if len(text) <= MAX_RAW else text[: MAX_RAW - 1] + "…"
        raise JudgeProblem(
            f'the judge\'s answer is not {{"score": 0..1, "reasoning": "..."}}: {problem}; '
            f"raw answer: {json.dumps(shown, ensure_ascii=False)}"
        )
    return float(data["score"]), data["reasoning"]


def _answer_problem(text: str) -> tuple[str | None, Any]:
    """What is wrong with an answer (``None`` when nothing), and the decoded data."""
    try:
        data = json.loads(text)
    except ValueError:
        return "it is not JSON", None
    if not isinstance(data, dict):
        return f"it is JSON but not an object ({type(data).__name__})", None
    extra = sorted(set(data) - {"score", "reasoning"})
    missing = [k for k in ("score", "reasoning") if k not in data]
    if missing or extra:
        parts = [f"no {' or '.join(missing)}"] if missing else []
        parts += [f"unexpected {', '.join(extra)}"] if extra else []
        return "; ".join(parts), None
    problem = _score_problem(data["score"])
    if problem is None and not isinstance(data["reasoning"], str):
        problem = "reasoning is not a string"
    return problem, None if problem else data


def _score_problem(score: Any) -> str | None:
    """What is wrong with a score (``None`` when it is a finite number from 0 to 1)."""
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
        return f"score is not a number ({_short(json.dumps(score, ensure_ascii=False), 50)})"
    if not 0 <= score <= 1:
        return f"score {score} is outside 0..1"
    return None


# -- the cache -------------------------------------------------------------------------------------


def cache_key(ep: Endpoint, messages: list[dict[str, str]]) -> str:
    """The cache key of one request: model, messages and parameters (never the key or the URL)."""
    material = {
        "v": CACHE_VERSION,
        "model": ep.model,
        "messages": messages,
        "temperature": ep.temperature,
        "response_format": RESPONSE_FORMAT,
    }
    import hashlib  # deferred: only judged cases need it, and it costs start-up time in every run

    return hashlib.sha256(
        json.dumps(material, sort_keys=True, ensure_ascii=False).encode("utf-8")
    ).hexdigest()


class AnswerCache:
    """Judge answers on disk, one small JSON file per request key under ``<folder>/judge/``.

    The folder is made on the first answer written, with a ``.gitignore`` that ignores it all. A
    file that cannot be read is a miss; one that cannot be written is skipped (the answer still
    counts).
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _path(self, key: str) -> Path:
        """Where the answer for ``key`` lives."""
        return self.folder / "judge" / key[:2] / f"{key}.json"

    def get(self, key: str) -> tuple[float, str] | None:
        """A cached ``(score, reasoning)``, or ``None`` (also for a file that is not a valid
        answer)."""
        path = self._path(key)
        try:
            if path.stat().st_size > MAX_CACHE_FILE:
                return None
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            return None
        if (
            not isinstance(data, dict)
            or _score_problem(data.get("score"))
            or not isinstance(data.get("reasoning"), str)
        ):
            return None  # an entry edited by hand (or by a tool) is asked again, never trusted
        return float(data["score"]), data["reasoning"]

    def put(self, key: str, score: float, reasoning: str, model: str) -> None:
        """Keep one answer (atomically: a reader sees the whole file or none)."""
        data = json.dumps(
            {"score": score, "reasoning": reasoning, "model": model}, ensure_ascii=False
        ).encode("utf-8")
        try:
            self._ignore_in_git()
            path = self._path(key)
            atomic_write(path, lambda handle: handle.writelines([data]), "judge cache file")
        except (OSError, FileWriteError):
            pass  # a cache that cannot be written costs a request next time, nothing else

    def _ignore_in_git(self) -> None:
        """Create the folder with a ``.gitignore`` that keeps it out of git."""
        ignore = self.folder / ".gitignore"
        if not ignore.exists():
            self.folder.mkdir(parents=True, exist_ok=True)
            ignore.write_text(
                "# trajrun's cache (judge answers); safe to delete\n*\n", encoding="utf-8"
            )


# -- asking ----------------------------------------------------------------------------------------


class Judge:
    """Asks the judge model about runs, ``concurrency`` at a time in threads, through the answer
    cache.

    ``submit`` returns at once with a future of the ``JudgeVerdict``; ``verdict`` asks and waits.
    Neither raises: every problem becomes the verdict's ``error``.
    """

    def __init__(self, options: JudgeOptions | None = None, root: Path | None = None) -> None:
        self.options = options or JudgeOptions()
        folder = self.options.cache
        if folder is not None and not folder.is_absolute():
            folder = (root or Path.cwd()) / folder
        self.cache = AnswerCache(folder) if folder is not None else None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._pool: ThreadPoolExecutor | None = None
        self._sockets: Sockets | None = None

    def submit(
        self,
        spec: JudgeSpec,
        settings: JudgeSettings,
        traj: Trajectory,
        steps: Sequence[Step] | None,
        mode: str,
    ) -> Future[JudgeVerdict]:
        """Start judging one run; with ``--no-judge`` the future already holds a skipped verdict."""
        from concurrent.futures import (
            Future,
        )  # deferred: its logging import costs every run's start-up

        if not self.options.enabled:
            done: Future[JudgeVerdict] = Future()
            done.set_result(JudgeVerdict(spec.threshold, skipped=SKIPPED))
            return done
        return self._executor().submit(self.verdict, spec, settings, traj, steps, mode)

    def verdict(
        self,
        spec: JudgeSpec,
        settings: JudgeSettings,
        traj: Trajectory,
        steps: Sequence[Step] | None,
        mode: str,
    ) -> JudgeVerdict:
        """Judge one run now: from the cache, else from the model. The key and the URL's credentials
        are redacted from the error and the reasoning."""
        model, redact = spec.model or settings.model, _unchanged
        try:
            ep = endpoint(spec, settings)
            model, redact = ep.model, ep.redact
            messages = build_messages(spec, traj, steps, mode)
            key = cache_key(ep, messages)
            hit = self.cache.get(key) if self.cache else None
            if hit is not None:
                return JudgeVerdict(spec.threshold, hit[0], redact(hit[1]), model, cached=True)
            score, reasoning = parse_answer(redact(self._ask(ep, messages)))
            if self.cache:
                self.cache.put(key, score, reasoning, model)
            return JudgeVerdict(spec.threshold, score, reasoning, model)
        except JudgeProblem as exc:
            return JudgeVerdict(spec.threshold, model=model, error=redact(str(exc)))
        except Exception as exc:  # noqa: BLE001 - a judge bug fails this check, never the run
            last = exception_line(exc)
            return JudgeVerdict(
                spec.threshold,
                model=model,
                error=redact(f"internal error: {last} (please report it)"),
            )

    def close(self) -> None:
        """Stop: requests not started are dropped, pauses before a retry end, requests in flight end
        (an interrupted run must not wait for answers nobody will read)."""
        self._stop.set()
        with self._lock:
            pool, self._pool = self._pool, None
            sockets = self._sockets
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        if sockets is not None:
            sockets.abort()

    def _executor(self) -> ThreadPoolExecutor:
        """The thread pool, started on the first request (so runs without judge checks start no
        thread)."""
        with self._lock:
            if self._pool is None:
                from concurrent.futures import ThreadPoolExecutor  # deferred, as in submit

                self._pool = ThreadPoolExecutor(
                    max(1, self.options.concurrency), thread_name_prefix="trajrun-judge"
                )
            return self._pool

    def _tracked(self) -> Sockets:
        """The sockets of this judge's requests in flight, made on the first request (after
        ``close``, already aborted)."""
        from . import judge_http  # deferred: only runs with judge checks need it

        with self._lock:
            if self._sockets is None:
                self._sockets = judge_http.Sockets()
                if self._stop.is_set():
                    self._sockets.abort()
            return self._sockets

    def _ask(self, ep: Endpoint, messages: list[dict[str, str]]) -> str:
        """The model's answer text; retried with backoff on busy servers, timeouts and dropped
        connections."""
        from . import judge_http  # deferred: only runs with judge checks need it

        url = (ep.base_url or DEFAULT_BASE_URL).rstrip("/") + "/chat/completions"
        payload = json.dumps(
            {
                "model": ep.model,
                "messages": messages,
                "temperature": ep.temperature,
                "response_format": RESPONSE_FORMAT,
            },
            ensure_ascii=False,
        ).encode("utf-8")
        failure = ""
        for attempt in range(ep.retries + 1):
            pause = None
            try:
                answer = judge_http.post(url, payload, ep.headers(), ep.timeout, self._tracked())
            except judge_http.Timeout:
                failure = f"no answer within {ep.timeout:g} s"
            except judge_http.Dropped as exc:
                failure = f"connection failed ({exc})"
            except judge_http.Fatal as exc:
                raise JudgeProblem(f"{ep.where}: {exc}") from None
            else:
                if 200 <= answer.status < 300:
                    return _content(answer.body, ep)
                _refused(answer, ep)
                failure, pause = (
                    f"HTTP {answer.status} ({_api_message(answer.body, ep)})",
                    _retry_after(answer.headers),
                )
            if self._stop.is_set():
                raise JudgeProblem(f"{ep.where}: the run stopped before the answer came")
            if attempt < ep.retries and self._stop.wait(self._pause(attempt, pause)):
                raise JudgeProblem(
                    f"{ep.where}: the run stopped while waiting to ask again after {failure}"
                )
        tries = ep.retries + 1
        raise JudgeProblem(
            f"{ep.where}: {failure}, {tries} attempt{'s' if tries != 1 else ''} with backoff; try "
            "again later, raise judge_defaults.timeout or .retries, or lower --judge-concurrency"
        )

    def _pause(self, attempt: int, asked: float | None) -> float:
        """Seconds before retry ``attempt + 1``: the server's ``Retry-After``, else doubling backoff
        with jitter."""
        if asked is not None:
            return min(asked, MAX_PAUSE)
        import random  # deferred: only a retried request needs it

        return min(self.options.backoff * 2**attempt * (0.5 + random.random() / 2), MAX_PAUSE)


_DEFAULT: list[Judge] = []
_DEFAULT_LOCK = threading.Lock()


def default_judge() -> Judge:
    """The judge of cases run without one (``run_case`` called directly): default options, cache in
    the cwd."""
    with _DEFAULT_LOCK:
        if not _DEFAULT:
            _DEFAULT.append(Judge())
        return _DEFAULT[0]


def _unchanged(text: str) -> str:
    """No redaction (before the endpoint, and so its secrets, is known)."""
    return text


def _short(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters with ``…``."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _refused(answer: Any, ep: Endpoint) -> None:
    """Raise ``JudgeProblem`` for a status not worth asking again (a redirect, 400, 401, 404…)."""
    status = answer.status
    if 300 <= status < 400:
        raise JudgeProblem(
            f"{ep.where} redirected the request (HTTP {status}); trajrun follows no redirect, so "
            "the key goes nowhere else: set the base URL to the address that answers"
        )
    if status not in RETRIED_STATUS and status < 500:
        raise JudgeProblem(
            f"{ep.where} refused the request: HTTP {status}: {_api_message(answer.body, ep)}"
        )


def _content(body: bytes, ep: Endpoint) -> str:
    """The text of the first choice of a chat completion; anything else is a problem that says what
    came."""
    expected = "expected a chat completion in JSON"
    if not body.strip():
        raise JudgeProblem(f"{ep.where} sent an empty answer; {expected}")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise JudgeProblem(
            f"{ep.where} sent an answer that is not UTF-8 text (byte {exc.start}); {expected}"
        ) from None
    try:
        data = json.loads(text)
    except RecursionError:
        raise JudgeProblem(f"{ep.where} sent JSON nested too deep to read; {expected}") from None
    except ValueError as exc:
        shown = json.dumps(_short(ep.redact(text), MAX_RAW), ensure_ascii=False)
        raise JudgeProblem(
            f"{ep.where} sent an answer that is not JSON ({exc}); {expected}; it starts: {shown}"
        ) from None
    choices = data.get("choices") if isinstance(data, dict) else None
    first = choices[0] if isinstance(choices, list) and choices else None
    message = first.get("message") if isinstance(first, dict) else None
    if not isinstance(message, dict):
        raise JudgeProblem(f"{ep.where} sent JSON without choices[0].message; {expected}")
    content = message.get("content")
    if not isinstance(content, str):
        finish = first.get("finish_reason") if isinstance(first, dict) else None
        reason = _short(ep.redact(finish), 50) if isinstance(finish, str) else None
        raise JudgeProblem(
            f"{ep.where} gave no text (finish_reason {reason!r}); the judge must answer in text"
        )
    return content


def _api_message(body: bytes, ep: Endpoint) -> str:
    """The error message an endpoint sent (``{"error": {"message": ...}}``, else the body), on one
    line and short."""
    text = body.decode("utf-8", errors="replace")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        data = None
    found: Any = None
    if isinstance(data, dict):
        error = data.get("error")
        found = error.get("message") if isinstance(error, dict) else error
        found = found if isinstance(found, str) else data.get("message")
    shown = " ".join(ep.redact(found if isinstance(found, str) else text).split())
    return _short(shown, MAX_MESSAGE) or "(no message)"


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds a server asked to wait (``retry-after-ms`` or ``retry-after`` in seconds), if it
    did."""
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        try:
            value = float(headers.get(name, ""))
        except (TypeError, ValueError):
            continue
        if math.isfinite(value) and value >= 0:
            return value / scale
    return None
