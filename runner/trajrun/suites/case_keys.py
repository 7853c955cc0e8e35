"""One case's map (defaults merged, templates rendered) to a ``Case`` model, every problem
reported at its path."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar, cast

from ..errors import kind
from ..match.expectation import (
    ARGS_MODES,
    MODES,
    ORDERED_MODES,
    UNSET,
    ArgsMode,
    Expectation,
    JudgeSpec,
    Mode,
)
from ..match.failed import FAILED_CALLS, FAILED_CALLS_MEANINGS
from ..sources.extras import requirement_problem
from ..yaml_core import Path as KeyPath
from .bulk_keys import check_bulk_case
from .document import Ctx
from .expectation_keys import (
    ARGS_MODE_MEANINGS,
    MODE_MEANINGS,
    named_rule,
    parse_budget,
    parse_calls,
    parse_latency,
    parse_steps,
    parse_tools,
)
from .golden import golden_outside
from .model import Case, Source
from .source_keys import parse_source

ASSERTING = (
    "steps",
    "golden",
    "never",
    "before",
    "calls",
    "budget",
    "nodes",
    "answer",
    "judge",
    "latency",
)
JUDGE_KEYS = ("rubric", "reference", "threshold", "model")
COUNTING_KEYS = ("steps", "golden", "calls", "never", "budget")
"""The checks ``failed_calls: ignore`` leaves failed calls out of."""

_Default = TypeVar("_Default", float, None)


class CaseBuilder:
    """One rendered case to a ``Case`` model, every problem reported at its path."""

    def __init__(
        self,
        ctx: Ctx,
        case: dict[str, Any],
        name: str,
        folder: Path,
        golden_root: str | Path | None = None,
    ) -> None:
        self.ctx, self.case, self.name, self.folder = ctx, case, name, folder
        self.golden_root = golden_root

    def build(self, suite_tags: tuple[str, ...], misspelt: bool = False) -> Case:
        """The case model (``misspelt``: an unknown key was reported, so no "asserts nothing" on
        top)."""
        case, ctx = self.case, self.ctx
        source = (
            parse_source(case["source"], ("source",), ctx, self.folder)
            if "source" in case
            else None
        )
        if "source" not in case:
            ctx.error(
                (),
                f"case '{self.name}' has no source: add `source:` (a file path, or a map with "
                "file, messages, command or python), or set one in defaults",
            )
        if not misspelt and not any(key in case for key in ASSERTING):
            ctx.error(
                (),
                f"case '{self.name}' asserts nothing: add steps, golden, never, before, calls, "
                "budget, nodes, answer, judge or latency",
            )
        tags = suite_tags + (ctx.names(case["tags"], ("tags",), "tags") if "tags" in case else ())
        check_bulk_case(case, source, ctx)
        return Case(
            name=self.name,
            source=source,
            expect=self._expectation(),
            golden=self._golden(),
            tags=tuple(dict.fromkeys(tags)),
            skip=self._reason("skip"),
            xfail=self._reason("xfail"),
            requires=self._requires(),
            repeat=self._repeat(source),
            pass_rate=self._share("pass_rate", 1.0),
            loc=ctx.loc(()),
        )

    def _expectation(self) -> Expectation:
        """Everything the case checks."""
        case, ctx = self.case, self.ctx
        steps = None
        if "steps" in case:
            steps = parse_steps(case["steps"], ("steps",), ctx, check_names=True)
        threshold = self._share("threshold", None)
        if threshold is not None and "steps" not in case and "golden" not in case:
            ctx.error(
                ("threshold",),
                "threshold scores the steps, but this case has no steps or golden file",
                key=True,
            )
        mode = self._choice("mode", MODES, MODE_MEANINGS, "match mode") or "strict"
        self._check_groups(mode)
        args_mode = (
            self._choice("args_mode", ARGS_MODES, ARGS_MODE_MEANINGS, "argument rule") or "exact"
        )
        return Expectation(
            steps=steps,
            mode=cast(Mode, mode),  # _choice returned one of MODES
            args_mode=cast(ArgsMode, args_mode),
            tools=parse_tools(case["tools"], ("tools",), ctx) if "tools" in case else {},
            never=ctx.names(case["never"], ("never",), "never") if "never" in case else (),
            before=self._before(),
            calls=parse_calls(case["calls"], ("calls",), ctx) if "calls" in case else {},
            budget=parse_budget(case["budget"], ("budget",), ctx) if "budget" in case else None,
            nodes=self._nodes(),
            answer=ctx.compiled(case["answer"], ("answer",)) if "answer" in case else UNSET,
            threshold=threshold,
            judge=self._judge(),
            latency=parse_latency(case["latency"], ("latency",), ctx) if "latency" in case else {},
            failed_calls=self._failed_calls(),
        )

    def _failed_calls(self) -> str:
        """``failed_calls``: ``count`` (the default) or ``ignore``, which needs a check counting
        calls."""
        meanings = FAILED_CALLS_MEANINGS
        rule = self._choice("failed_calls", FAILED_CALLS, meanings, "failed_calls") or "count"
        if rule == "ignore" and not any(key in self.case for key in COUNTING_KEYS):
            self.ctx.error(
                ("failed_calls",),
                "failed_calls: ignore leaves failed calls out of "
                "steps, golden, calls, never and budget, but this "
                "case has none of them; remove it",
                key=True,
            )
        return rule

    def _judge(self) -> JudgeSpec | None:
        """``judge:``: a rubric, and optionally reference, threshold and model."""
        if "judge" not in self.case:
            return None
        ctx, value = self.ctx, self.case["judge"]
        if not ctx.check(
            value,
            dict,
            ("judge",),
            "judge must be a map with `rubric` (and optionally reference, threshold, model)",
        ):
            return None
        value = ctx.keys(value, JUDGE_KEYS, ("judge",), "in judge")
        rubric = value.get("rubric")
        if "rubric" not in value:
            ctx.error(
                ("judge",), "judge needs a `rubric`: what the judge model scores the run against"
            )
        elif (
            ctx.check(rubric, str, ("judge", "rubric"), "rubric must be text")
            and not rubric.strip()
        ):
            ctx.error(("judge", "rubric"), "rubric is empty; say what a good run does")
        reference = value.get("reference", False)
        if not ctx.check(
            reference, bool, ("judge", "reference"), "reference must be true or false"
        ):
            reference = False
        elif reference and "steps" not in self.case and "golden" not in self.case:
            ctx.error(
                ("judge", "reference"),
                "reference: true shows the judge the expected steps, but this case "
                "has no steps or golden file; add steps or remove reference",
                key=True,
            )
        threshold = _share_of(value, "threshold", ("judge", "threshold"), ctx)
        model = value.get("model")
        if "model" in value and not ctx.check(
            model, str, ("judge", "model"), "model must be a model name"
        ):
            model = None
        alone = not any(key in self.case for key in ASSERTING if key != "judge")
        return JudgeSpec(
            rubric if isinstance(rubric, str) else "",
            reference,
            0.5 if threshold is None else threshold,
            model,
            alone,
        )

    def _check_groups(self, mode: str) -> None:
        """``parallel`` groups speak of turns, which only the ordered modes check."""
        steps = self.case.get("steps")
        if mode in ORDERED_MODES or not isinstance(steps, list):
            return
        for i, item in enumerate(steps):
            if isinstance(item, dict) and len(item) == 1 and isinstance(item.get("parallel"), list):
                self.ctx.error(
                    ("steps", i, "parallel"),
                    f"parallel groups need mode strict or in_order (they check that "
                    f"calls share a turn); mode '{mode}' ignores turns — list the steps "
                    "without `parallel`",
                    key=True,
                )
                return

    def _choice(
        self, key: str, choices: tuple[str, ...], meanings: dict[str, str], what: str
    ) -> str | None:
        """A key whose value is one of fixed names (``mode``, ``args_mode``, ``failed_calls``)."""
        return (
            named_rule(self.case[key], choices, meanings, (key,), self.ctx, what)
            if key in self.case
            else None
        )

    def _share(self, key: str, default: _Default) -> float | _Default:
        """A number from 0 to 1 (``threshold``, ``pass_rate``)."""
        value = self.case.get(key, default)
        if key in self.case and self.ctx.check(
            value, (int, float), (key,), f"{key} must be a number from 0 to 1"
        ):
            if not 0 <= value <= 1:
                self.ctx.error((key,), f"{key} must be from 0 to 1, found {value}")
            return float(value)
        return default

    def _before(self) -> tuple[tuple[str, str], ...]:
        """``before`` pairs ``[a, b]``."""
        if "before" not in self.case:
            return ()
        value = self.case["before"]
        if not self.ctx.check(value, list, ("before",), "before must be a list of [a, b] pairs"):
            return ()
        pairs = []
        for i, pair in enumerate(value):
            if (
                isinstance(pair, list)
                and len(pair) == 2
                and all(isinstance(p, str) and p for p in pair)
            ):
                pairs.append((pair[0], pair[1]))
            else:
                self.ctx.error(
                    ("before", i),
                    f"each before entry is a pair [a, b] of tool names (some call of a "
                    f"comes before some call of b); found {kind(pair)}",
                )
        return tuple(pairs)

    def _nodes(self) -> tuple[tuple[str, ...], ...] | None:
        """Graph nodes per turn: a list of lists of names."""
        if "nodes" not in self.case:
            return None
        value = self.case["nodes"]
        if not self.ctx.check(
            value, list, ("nodes",), "nodes must be a list of turns, each a list of node names"
        ):
            return None
        return tuple(
            self.ctx.names(turn, ("nodes", i), "each turn of nodes") for i, turn in enumerate(value)
        )

    def _golden(self) -> Path | None:
        """The golden file, resolved against the suite's folder; it must lie inside the project
        (it gets written)."""
        value = self.case.get("golden")
        if "golden" not in self.case or not self.ctx.check(
            value, str, ("golden",), "golden must be a file path"
        ):
            return None
        if problem := golden_outside(self.folder / value, self.folder, self.golden_root):
            self.ctx.error(("golden",), problem)
        return self.folder / value

    def _reason(self, key: str) -> str | None:
        """``skip``/``xfail``: a reason; ``true`` means no reason given, ``false`` means not set."""
        value = self.case.get(key)
        if key not in self.case or value is False:
            return None
        if value is True:
            return ""
        return (
            value
            if self.ctx.check(value, str, (key,), f"{key} must be a reason (text) or true")
            else None
        )

    def _requires(self) -> tuple[str, ...]:
        """``requires``: extras (``trajrun[otel]``) and modules without which the case is
        skipped."""
        value = self.case.get("requires", [])
        if not self.ctx.check(
            value,
            list,
            ("requires",),
            "requires must be a list of extras such as 'trajrun[otel]' and Python module names",
        ):
            return ()
        good = []
        for i, item in enumerate(value):
            problem = (
                requirement_problem(item)
                if isinstance(item, str)
                else (
                    "expected an extra such as 'trajrun[otel]' or a Python module name, "
                    f"found {kind(item)}"
                )
            )
            if problem:
                self.ctx.error(("requires", i), problem)
            else:
                good.append(item)
        return tuple(good)

    def _repeat(self, source: Source | None) -> int | None:
        """``repeat``: a count of at least 1, for live sources only."""
        if "repeat" not in self.case:
            return None
        count = self.ctx.count(self.case["repeat"], ("repeat",), "repeat", least=1)
        if source is not None and not source.live:
            self.ctx.error(
                ("repeat",),
                "repeat runs a live source several times, but this case reads a recorded "
                "run; use a command or python source, or remove repeat",
                key=True,
            )
        return count


def _share_of(value: dict[str, Any], key: str, path: KeyPath, ctx: Ctx) -> float | None:
    """A number from 0 to 1 under ``key`` of a map, or None (absent or reported)."""
    if key not in value or not ctx.check(
        value[key], (int, float), path, f"{key} must be a number from 0 to 1"
    ):
        return None
    if not 0 <= value[key] <= 1:
        ctx.error(path, f"{key} must be from 0 to 1, found {value[key]}")
        return None
    return float(value[key])


def judge_settings(value: dict[str, Any], ctx: Ctx) -> dict[str, Any]:
    """The checked fields of ``judge_defaults``."""
    out: dict[str, Any] = {}
    for key in ("model", "base_url", "api_key", "api_key_env"):
        if key in value and ctx.check(
            value[key], str, ("judge_defaults", key), f"{key} must be text"
        ):
            out[key] = value[key]
    _check_key_route(out, ctx)
    if "timeout" in value and ctx.check(
        value["timeout"], (int, float), ("judge_defaults", "timeout"), "timeout must be seconds"
    ):
        if value["timeout"] > 0:
            out["timeout"] = float(value["timeout"])
        else:
            ctx.error(
                ("judge_defaults", "timeout"),
                f"timeout must be above 0 seconds, found {value['timeout']}",
            )
    retries = (
        ctx.count(value["retries"], ("judge_defaults", "retries"), "retries")
        if "retries" in value
        else None
    )
    if retries is not None:
        out["retries"] = retries
    if "temperature" in value and ctx.check(
        value["temperature"],
        (int, float),
        ("judge_defaults", "temperature"),
        "temperature must be a number",
    ):
        out["temperature"] = float(value["temperature"])
    return out


def _check_key_route(out: dict[str, Any], ctx: Ctx) -> None:
    """The judge's key reaches only an endpoint chosen with it: a suite's own ``base_url`` needs
    the suite's ``api_key_env`` (or ``api_key``), else OPENAI_API_KEY would go to a host the suite
    picked; a server on this machine needs none (it is sent no key). ``api_key_env`` must be a
    variable's name."""
    import re  # deferred: only suites with judge_defaults need it

    name = out.get("api_key_env")
    if name is not None and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        ctx.error(
            ("judge_defaults", "api_key_env"),
            "api_key_env must be the name of an environment variable "
            "(letters, digits and _), such as JUDGE_API_KEY; is the key "
            "itself written there?",
        )
        del out["api_key_env"]
    if name is not None and "api_key" in out:
        ctx.error(("judge_defaults", "api_key_env"), "set api_key_env or api_key, not both")
    url = out.get("base_url")
    if not url:
        return
    host = _http_host(url)
    if host is None:
        ctx.error(
            ("judge_defaults", "base_url"),
            "base_url must be an http:// or https:// URL with a host, in "
            "ASCII without spaces, such as http://localhost:8000/v1",
        )
    elif name is None and "api_key" not in out and not _loopback(host):
        ctx.error(
            ("judge_defaults", "base_url"),
            "a suite that sets its own base_url must name the variable "
            "that holds its key: add `api_key_env: MY_KEY` (OPENAI_API_KEY "
            "goes only to OPENAI_BASE_URL or the OpenAI API, never to a "
            "URL a suite picks; a server on this machine needs no key)",
        )


def _http_host(url: str) -> str | None:
    """The host of an ``http://`` or ``https://`` URL; ``None`` for anything else (a bad port,
    spaces, control characters and non-ASCII text included)."""
    import urllib.parse  # deferred: only suites with a base_url need it

    if not all(33 <= ord(c) <= 126 for c in url):
        return None
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 - reading it raises ValueError for a port that is not 0-65535
    except ValueError:
        return None
    return parts.hostname if parts.scheme in ("http", "https") else None


def _loopback(host: str) -> bool:
    """Whether ``host`` is this machine: ``localhost`` or a loopback address (127.0.0.0/8, ::1)."""
    import ipaddress  # deferred: only suites with a base_url need it

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
