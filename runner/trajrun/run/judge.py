"""The LLM judge of ``judge:`` checks: a prompt built from the run, one chat-completions request through the
official ``openai`` SDK (the ``trajrun[judge]`` extra), and a strict reading of the answer.

Requests run in a thread pool (``--judge-concurrency``), so they overlap the rest of the run; each is retried
with backoff on 408, 409, 429, 5xx, timeouts and dropped connections. Answers are kept in an on-disk cache
keyed by model, prompt and parameters, so an unchanged run asks nothing. The check itself is data
(``trajrun.match.expectation.JudgeSpec``); only this module talks to a model.
"""

from __future__ import annotations

import functools
import json
import math
import os
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import field
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import TrajrunError, exception_line
from ..files import FileWriteError, atomic_write
from ..frozen import frozen
from ..match.expectation import ANY_ARGS, JudgeSpec, Step
from ..match.values import render_value
from ..match.verdict import JudgeVerdict
from ..suites.model import JudgeSettings
from ..trajectory import ToolCall, Trajectory

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor

INSTALL_HINT = "pip install 'trajrun[judge]'"
CACHE_FOLDER = ".trajrun-cache"
"""The judge cache's folder, beside the run's root unless ``--judge-cache DIR`` says otherwise."""
MODEL_VAR, BASE_URL_VAR, API_KEY_VAR = "TRAJRUN_JUDGE_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY"
MAX_VALUE = 2000
"""Characters of one call's arguments or result in the prompt (cut with ``…``), so one huge result cannot
crowd out the rest of the run."""
MAX_RAW = 500
"""Characters of a malformed answer shown in the check's error."""
MAX_PAUSE = 60.0
"""The longest pause before a retry, a server's ``Retry-After`` included."""
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
    """Why a judge check has no score: the extra is missing, no model or key, the endpoint failed, or the
    answer does not read."""


@frozen
class JudgeOptions:
    """How a run treats ``judge:`` checks: ``--no-judge``, ``--judge-cache DIR`` (``None``: no cache) and
    ``--judge-concurrency N``. ``backoff`` is the pause before the first retry in seconds (doubling, jittered)."""

    enabled: bool = True
    cache: Path | None = Path(CACHE_FOLDER)
    concurrency: int = 4
    backoff: float = 1.0


@frozen
class Endpoint:
    """Where one judge request goes and how: the case's model, else the suite's ``judge_defaults``, else the
    environment."""

    model: str
    base_url: str | None
    api_key: str = field(repr=False)
    timeout: float = 60.0
    retries: int = 3
    temperature: float = 0.0

    @property
    def where(self) -> str:
        """``judge gpt-4o-mini at http://127.0.0.1:8000/v1``, for messages."""
        return f"judge {self.model} at {self.base_url or 'the OpenAI API'}"


def endpoint(spec: JudgeSpec, settings: JudgeSettings, environ: Mapping[str, str] = os.environ) -> Endpoint:
    """The endpoint of one check; raises ``JudgeProblem`` naming what to set when the model or key is missing."""
    model = spec.model or settings.model or environ.get(MODEL_VAR)
    if not model:
        raise JudgeProblem(f"no judge model: set `judge_defaults: {{model: ...}}` in the suite, `model:` in the "
                           f"case's judge, or the {MODEL_VAR} environment variable")
    key = settings.api_key or environ.get(API_KEY_VAR)
    if not key:
        raise JudgeProblem(f"no API key for {model}: set {API_KEY_VAR}, or `judge_defaults: {{api_key: "
                           "\"{{ env.MY_KEY }}\"}` (a local server takes any non-empty value)")
    base = settings.base_url or environ.get(BASE_URL_VAR) or None
    return Endpoint(model, base, key, settings.timeout, settings.retries, settings.temperature)


# -- the prompt --------------------------------------------------------------------------------------


def build_messages(spec: JudgeSpec, traj: Trajectory, steps: Sequence[Step] | None, mode: str) -> list[dict[str, str]]:
    """The chat messages of one check: the fixed instructions, then the rubric, the run, the answer, the reference."""
    turns: dict[int, list[dict[str, Any]]] = {}
    for call in traj.calls:
        turns.setdefault(call.turn, []).append({"position": call.position, "name": call.name,
                                                "args": render_value(call.args, MAX_VALUE), "outcome": _outcome(call)})
    reference = [_step_text(s) for s in steps or ()] if spec.reference else None
    answer = traj.answer if traj.answer is not None else "(the run has no final answer text)"
    context = {"rubric": spec.rubric.strip(), "turns": [{"index": t, "calls": c} for t, c in sorted(turns.items())],
               "turns_total": traj.turns, "answer": answer, "reference": reference, "mode": MODE_WORDS.get(mode, mode)}
    return [{"role": "system", "content": _template("system.j2").render()},
            {"role": "user", "content": _template("user.j2").render(context)}]


def _outcome(call: ToolCall) -> str:
    """What a call returned, for the prompt: text as it is, anything else as compact JSON; cut past ``MAX_VALUE``."""
    if not call.has_result:
        return "returned: (not recorded)"
    text = call.result if isinstance(call.result, str) else render_value(call.result, MAX_VALUE)
    text = text if len(text) <= MAX_VALUE else text[: MAX_VALUE - 1] + "…"
    return f"returned an error: {text}" if call.error else f"returned: {text}"


def _step_text(step: Step) -> str:
    """``search {"q":"x"}``; a step with any arguments reads ``search (any arguments)``; matchers as ``<regex 'x'>``."""
    args = "(any arguments)" if step.args is ANY_ARGS else render_value(step.args, MAX_VALUE)
    return f"{step.name} {args}"


@functools.lru_cache(maxsize=2)
def _template(name: str) -> Any:
    """A prompt template shipped in ``run/judge_prompts/``, compiled once."""
    from importlib import resources  # deferred: only runs with judge checks need it

    import jinja2  # deferred: only runs with judge checks need it

    text = (resources.files(__package__) / "judge_prompts" / name).read_text(encoding="utf-8")
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             keep_trailing_newline=False, autoescape=False)
    return env.from_string(text)


# -- the answer --------------------------------------------------------------------------------------


def parse_answer(text: str) -> tuple[float, str]:
    """The score and reasoning of an answer that is exactly ``{"score": 0..1, "reasoning": "..."}``.

    Anything else (prose, a fenced block, other keys, a score out of range) raises ``JudgeProblem`` that
    shows the raw text, since a guess at what the model meant would be a silent pass or fail.
    """
    problem, data = _answer_problem(text)
    if problem:
        shown = text if len(text) <= MAX_RAW else text[: MAX_RAW - 1] + "…"
        raise JudgeProblem(f"the judge's answer is not {{\"score\": 0..1, \"reasoning\": \"...\"}}: {problem}; "
                           f"raw answer: {json.dumps(shown, ensure_ascii=False)}")
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
    score = data["score"]
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
        return f"score is not a number ({json.dumps(score)})", None
    if not 0 <= score <= 1:
        return f"score {score} is outside 0..1", None
    if not isinstance(data["reasoning"], str):
        return "reasoning is not a string", None
    return None, data


# -- the cache ---------------------------------------------------------------------------------------


def cache_key(ep: Endpoint, messages: list[dict[str, str]]) -> str:
    """The cache key of one request: model, messages and parameters (never the key or the URL)."""
    material = {"v": CACHE_VERSION, "model": ep.model, "messages": messages, "temperature": ep.temperature,
                "response_format": RESPONSE_FORMAT}
    import hashlib  # deferred: only judged cases need it, and it costs start-up time in every run

    return hashlib.sha256(json.dumps(material, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


class AnswerCache:
    """Judge answers on disk, one small JSON file per request key under ``<folder>/judge/``.

    The folder is made on the first answer written, with a ``.gitignore`` that ignores it all. A file that
    cannot be read is a miss; one that cannot be written is skipped (the answer still counts).
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _path(self, key: str) -> Path:
        """Where the answer for ``key`` lives."""
        return self.folder / "judge" / key[:2] / f"{key}.json"

    def get(self, key: str) -> tuple[float, str] | None:
        """A cached ``(score, reasoning)``, or ``None``."""
        try:
            data = json.loads(self._path(key).read_text(encoding="utf-8"))
            return float(data["score"]), str(data["reasoning"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put(self, key: str, score: float, reasoning: str, model: str) -> None:
        """Keep one answer (atomically: a reader sees the whole file or none)."""
        data = json.dumps({"score": score, "reasoning": reasoning, "model": model}, ensure_ascii=False).encode("utf-8")
        try:
            self._ignore_in_git()
            atomic_write(self._path(key), lambda handle: handle.write(data), "judge cache file")
        except (OSError, FileWriteError):
            pass  # a cache that cannot be written costs a request next time, nothing else

    def _ignore_in_git(self) -> None:
        """Create the folder with a ``.gitignore`` that keeps it out of git."""
        ignore = self.folder / ".gitignore"
        if not ignore.exists():
            self.folder.mkdir(parents=True, exist_ok=True)
            ignore.write_text("# trajrun's cache (judge answers); safe to delete\n*\n", encoding="utf-8")


# -- asking ------------------------------------------------------------------------------------------


class Judge:
    """Asks the judge model about runs, ``concurrency`` at a time in threads, through the answer cache.

    ``submit`` returns at once with a future of the ``JudgeVerdict``; ``verdict`` asks and waits. Neither
    raises: every problem becomes the verdict's ``error``.
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
        self._clients: dict[tuple[Any, ...], Any] = {}

    def submit(self, spec: JudgeSpec, settings: JudgeSettings, traj: Trajectory, steps: Sequence[Step] | None,
               mode: str) -> Future[JudgeVerdict]:
        """Start judging one run; with ``--no-judge`` the future already holds a skipped verdict."""
        from concurrent.futures import Future  # deferred: its logging import costs every run's start-up

        if not self.options.enabled:
            done: Future[JudgeVerdict] = Future()
            done.set_result(JudgeVerdict(spec.threshold, skipped=SKIPPED))
            return done
        return self._executor().submit(self.verdict, spec, settings, traj, steps, mode)

    def verdict(self, spec: JudgeSpec, settings: JudgeSettings, traj: Trajectory, steps: Sequence[Step] | None,
                mode: str) -> JudgeVerdict:
        """Judge one run now: from the cache, else from the model."""
        model = spec.model or settings.model
        try:
            if not _has_openai():
                raise JudgeProblem(f"judge checks need the openai package: {INSTALL_HINT}")
            ep = endpoint(spec, settings)
            model = ep.model
            messages = build_messages(spec, traj, steps, mode)
            key = cache_key(ep, messages)
            hit = self.cache.get(key) if self.cache else None
            if hit is not None:
                return JudgeVerdict(spec.threshold, hit[0], hit[1], model, cached=True)
            score, reasoning = parse_answer(self._ask(ep, messages))
            if self.cache:
                self.cache.put(key, score, reasoning, model)
            return JudgeVerdict(spec.threshold, score, reasoning, model)
        except JudgeProblem as exc:
            return JudgeVerdict(spec.threshold, model=model, error=str(exc))
        except Exception as exc:  # noqa: BLE001 - a judge bug fails this check, never the run
            last = exception_line(exc)
            return JudgeVerdict(spec.threshold, model=model, error=f"internal error: {last} (please report it)")

    def close(self) -> None:
        """Stop: requests not started are dropped, pauses before a retry end, open connections close (an
        interrupted run must not wait for answers nobody will read)."""
        self._stop.set()
        with self._lock:
            pool, self._pool = self._pool, None
            clients, self._clients = list(self._clients.values()), {}
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        for client in clients:
            client.close()

    def _executor(self) -> ThreadPoolExecutor:
        """The thread pool, started on the first request (so runs without judge checks start no thread)."""
        with self._lock:
            if self._pool is None:
                from concurrent.futures import ThreadPoolExecutor  # deferred, as in submit

                self._pool = ThreadPoolExecutor(max(1, self.options.concurrency), thread_name_prefix="trajrun-judge")
            return self._pool

    def _client(self, ep: Endpoint) -> Any:
        """One SDK client per endpoint, shared by the threads (its HTTP pool is thread-safe)."""
        import openai  # deferred: the optional trajrun[judge] extra, and a second to import

        key = (ep.base_url, ep.api_key, ep.timeout)
        with self._lock:
            if key not in self._clients:
                self._clients[key] = openai.OpenAI(api_key=ep.api_key, base_url=ep.base_url, timeout=ep.timeout,
                                                   max_retries=0)
            return self._clients[key]

    def _ask(self, ep: Endpoint, messages: list[dict[str, str]]) -> str:
        """The model's answer text; retried with backoff on busy servers, timeouts and dropped connections."""
        import openai  # deferred: the optional trajrun[judge] extra, and a second to import

        client, failure = self._client(ep), ""
        for attempt in range(ep.retries + 1):
            pause = None
            try:
                response = client.chat.completions.create(model=ep.model, messages=messages,  # type: ignore[arg-type]
                                                          temperature=ep.temperature, response_format=RESPONSE_FORMAT)
            except openai.APIStatusError as exc:
                if exc.status_code not in RETRIED_STATUS and exc.status_code < 500:
                    raise JudgeProblem(f"{ep.where} refused the request: HTTP {exc.status_code}: "
                                       f"{_api_message(exc)}") from None
                failure, pause = f"HTTP {exc.status_code} ({_api_message(exc)})", _retry_after(exc.response)
            except openai.APITimeoutError:
                failure = f"no answer within {ep.timeout:g} s"
            except openai.APIConnectionError as exc:
                failure = f"cannot connect ({exc.__cause__ or exc})"
            except openai.OpenAIError as exc:
                raise JudgeProblem(f"{ep.where}: {type(exc).__name__}: {exc}") from None
            else:
                return _content(response, ep)
            if attempt < ep.retries and self._stop.wait(self._pause(attempt, pause)):
                raise JudgeProblem(f"{ep.where}: the run stopped while waiting to ask again after {failure}")
        tries = ep.retries + 1
        raise JudgeProblem(f"{ep.where}: {failure}, {tries} attempt{'s' if tries != 1 else ''} with backoff; try "
                           "again later, raise judge_defaults.timeout or .retries, or lower --judge-concurrency")

    def _pause(self, attempt: int, asked: float | None) -> float:
        """Seconds before retry ``attempt + 1``: the server's ``Retry-After``, else doubling backoff with jitter."""
        if asked is not None:
            return min(asked, MAX_PAUSE)
        import random  # deferred: only a retried request needs it

        return min(self.options.backoff * 2 ** attempt * (0.5 + random.random() / 2), MAX_PAUSE)


_DEFAULT: list[Judge] = []
_DEFAULT_LOCK = threading.Lock()


def default_judge() -> Judge:
    """The judge of cases run without one (``run_case`` called directly): default options, cache in the cwd."""
    with _DEFAULT_LOCK:
        if not _DEFAULT:
            _DEFAULT.append(Judge())
        return _DEFAULT[0]


def _has_openai() -> bool:
    """Whether the ``openai`` package can be imported (without importing it: that takes a second)."""
    if "openai" in sys.modules:
        return sys.modules["openai"] is not None
    return find_spec("openai") is not None


def _content(response: Any, ep: Endpoint) -> str:
    """The text of the first choice; a response without one is a problem that says what came instead."""
    choices = getattr(response, "choices", None) or []
    message = getattr(choices[0], "message", None) if choices else None
    text = getattr(message, "content", None)
    if not isinstance(text, str):
        finish = getattr(choices[0], "finish_reason", None) if choices else None
        raise JudgeProblem(f"{ep.where} gave no text (finish_reason {finish!r}); the judge must answer in text")
    return text


def _api_message(exc: Any) -> str:
    """The error message an endpoint sent, on one line and short."""
    body = getattr(exc, "body", None)
    message = body.get("message") if isinstance(body, dict) else None
    text = " ".join(str(message or getattr(exc, "message", "") or exc).split())
    return text if len(text) <= 200 else text[:199] + "…"


def _retry_after(response: Any) -> float | None:
    """Seconds a server asked to wait (``retry-after-ms`` or ``retry-after`` in seconds), if it did."""
    headers = getattr(response, "headers", None) or {}
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        try:
            value = float(headers.get(name))
        except (TypeError, ValueError):
            continue
        if math.isfinite(value) and value >= 0:
            return value / scale
    return None
