"""Suite files to ``Suite`` models: YAML with marks, defaults, parametrize, templating, checks with locations.

``load_suite`` reports every error of a file at once (``SuiteErrors``), each at
``file:line:column: key.path``. ``validate_suite`` adds what needs the file system.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any, Mapping

from ..collector import collector_paused
from ..errors import SpecError, SuiteError, SuiteErrors, kind
from ..match.expectation import ARGS_MODES, MODES, ORDERED_MODES, UNSET, Expectation, JudgeSpec
from ..sources.checkpoints import SUFFIXES as DATABASE_SUFFIXES
from ..sources.extras import requirement_problem
from ..yaml_core import Path as KeyPath
from .bulk_keys import BULK_KEYS, bulk_fields, bulk_problems, check_bulk_case
from .document import Ctx, parse_document, raise_errors, read_text
from .expectation_keys import jsonpath_problem, parse_budget, parse_calls, parse_latency, parse_steps, parse_tools
from .golden import golden_outside, load_golden
from .model import CAPTURES, DEFAULT_TIMEOUT, FORMATS, Case, JudgeSettings, Source, Suite
from .schema import schema_text
from .templating import (MAX_CASES, case_name, expand_parametrize, has_templates, merge_defaults, render_tree,
                         variables)

__all__ = ["load_suite", "validate_suite", "schema_text"]

TOP_KEYS = ("suite", "description", "tags", "vars", "defaults", "judge_defaults", "cases")
CASE_KEYS = ("name", "source", "mode", "args_mode", "tools", "steps", "golden", "never", "before", "calls",
             "budget", "nodes", "answer", "judge", "threshold", "repeat", "pass_rate", "parametrize", "tags", "skip",
             "xfail", "requires", "latency")
ASSERTING = ("steps", "golden", "never", "before", "calls", "budget", "nodes", "answer", "judge", "latency")
JUDGE_KEYS = ("rubric", "reference", "threshold", "model")
JUDGE_DEFAULT_KEYS = ("model", "base_url", "api_key", "timeout", "retries", "temperature")
SOURCE_KEYS = ("file", "format", "select", "record", "messages", "command", "timeout", "python", "args", "thread",
               "checkpoint", "capture", *BULK_KEYS)
SOURCE_KINDS = ("file", "messages", "command", "python")
_ONLY_WITH = {"record": ("file",), "timeout": ("command", "python"), "args": ("python",), "thread": ("file",),
              "checkpoint": ("file",), "capture": ("command", "python")}
_NOT_RENDERED = ("source", "messages")
MAX_SUITE_CASES = 100_000
"""The most cases one suite file may hold after ``parametrize`` (counted before any is built)."""


def load_suite(path: str | Path, variables: Mapping[str, Any] | None = None,
               golden_root: str | Path | None = None) -> Suite:
    """Load one suite file; ``variables`` are ``--var`` values (already parsed). Raises ``SuiteErrors``.

    Golden files must resolve inside the suite's project or ``golden_root``.
    """
    with collector_paused():
        return _load_suite(str(path), Path(path), variables, golden_root)


def _load_suite(file: str, path: Path, variables: Mapping[str, Any] | None, golden_root: str | Path | None) -> Suite:
    """``load_suite`` with the collector paused; ``file`` is the path as given, for messages."""
    text = read_text(path, file)
    loaded, ctx = parse_document(text, file)
    top = loaded.data
    if not isinstance(top, dict):
        ctx.error((), f"a suite is a map with `cases` (and optionally suite, description, tags, vars, defaults, "
                      f"judge_defaults); found {kind(top)}")
        raise_errors(ctx.errors)
    top = ctx.keys(top, TOP_KEYS, (), "at the top level")
    suite = _Top(ctx, top, path, dict(variables or {}), golden_root, has_templates(text))
    cases = suite.cases()
    raise_errors(ctx.errors)
    return Suite(suite.name, path, suite.description, suite.tags, cases, ctx.loc(()), suite.judge_defaults)


class _Top:
    """The suite-level keys, read once, and the expansion of every case."""

    def __init__(self, ctx: Ctx, top: dict[str, Any], path: Path, cli_vars: dict[str, Any],
                 golden_root: str | Path | None = None, templated: bool = True) -> None:
        self.ctx, self.top, self.folder, self.cli_vars = ctx, top, path.parent, cli_vars
        self.golden_root, self.templated = golden_root, templated
        self.vars = top.get("vars", {})
        if not ctx.check(self.vars, dict, ("vars",), "vars must be a map of variables"):
            self.vars = {}
        errors: list[SpecError] = []
        head = render_tree({k: top[k] for k in ("suite", "description", "tags") if k in top},
                           variables(self.vars, cli_vars, {}), lambda p: False, errors)
        for problem in errors:
            ctx.error(problem.path, problem.message)
        self.name = _default_name(path)
        if "suite" in head and ctx.check(head["suite"], str, ("suite",), "suite must be the suite's name"):
            self.name = head["suite"]
        self.description = None
        if "description" in head and ctx.check(head["description"], str, ("description",), "description must be text"):
            self.description = head["description"]
        self.tags = ctx.names(head["tags"], ("tags",), "tags") if "tags" in head else ()
        self.defaults = self._defaults()
        self.judge_defaults = self._judge_defaults()

    def _judge_defaults(self) -> JudgeSettings:
        """``judge_defaults``: model, endpoint and key of the judge, rendered (``{{ env.KEY }}``) and checked."""
        raw = self.top.get("judge_defaults", {})
        if not self.ctx.check(raw, dict, ("judge_defaults",), "judge_defaults must be a map of "
                                                              f"{', '.join(JUDGE_DEFAULT_KEYS)}"):
            return JudgeSettings()
        raw = self.ctx.keys(raw, JUDGE_DEFAULT_KEYS, ("judge_defaults",), "in judge_defaults")
        errors: list[SpecError] = []
        value = render_tree(raw, variables(self.vars, self.cli_vars, {}), lambda p: False, errors)
        for problem in errors:
            self.ctx.error(("judge_defaults", *problem.path), problem.message)
        return JudgeSettings(**_judge_settings(value, self.ctx))

    def _defaults(self) -> dict[str, Any]:
        """The ``defaults`` map without unknown keys (reported)."""
        defaults = self.top.get("defaults", {})
        if not self.ctx.check(defaults, dict, ("defaults",), "defaults must be a map of case keys"):
            return {}
        for key in ("name", "parametrize"):
            if key in defaults:
                self.ctx.error(("defaults", key), f"defaults cannot hold `{key}`; set it on each case", key=True)
        if "steps" in defaults and "golden" in defaults:
            self.ctx.error(("defaults", "golden"), "`steps` and `golden` both given; keep one of them", key=True)
        allowed = [k for k in CASE_KEYS if k not in ("name", "parametrize")]
        known = {k: v for k, v in defaults.items() if k not in ("name", "parametrize")}
        return self.ctx.keys(known, allowed, ("defaults",), "in defaults")

    def cases(self) -> tuple[Case, ...]:
        """Every case of the file, parametrized ones expanded; names checked for uniqueness."""
        raw = self.top.get("cases")
        if "cases" not in self.top:
            self.ctx.error((), "a suite needs `cases`: a list of at least one case")
            return ()
        if not self.ctx.check(raw, list, ("cases",), "cases must be a list of cases"):
            return ()
        if not raw:
            self.ctx.error(("cases",), "cases is empty; a suite needs at least one case")
        total = sum(count for count in map(_planned, raw) if count <= MAX_CASES)  # a larger one errs on its own
        if total > MAX_SUITE_CASES:
            self.ctx.error(("cases",), f"the cases would make {total:,} cases after parametrize, above the limit of "
                                       f"{MAX_SUITE_CASES:,} per suite file; split them into several suite files")
            return ()
        built = [case for index, item in enumerate(raw) for case in self._expand(item, index)]
        seen: dict[str, Case] = {}
        for case in built:
            if case.name in seen:
                self.ctx.errors.append(SuiteError(
                    f"duplicate case name '{case.name}' (first at line {seen[case.name].loc.line}); "
                    "case names must be unique after templating", case.loc))
            seen.setdefault(case.name, case)
        return tuple(built)

    def _expand(self, item: Any, index: int) -> list[Case]:
        """One written case: defaults merged, parametrize expanded, strings rendered, each built."""
        where = ("cases", index)
        if not self.ctx.check(item, dict, where, "each case must be a map with at least `name` and `source`"):
            return []
        label = f"case '{item['name']}'" if isinstance(item.get("name"), str) else f"cases[{index}]"
        known = self.ctx.keys(item, CASE_KEYS, where, f"in {label}")
        # a misspelt key ('setps') is reported as such; "asserts nothing" on top of it would be noise
        misspelt, item = len(known) < len(item), known
        if "steps" in item and "golden" in item:
            self.ctx.error((*where, "golden"), "`steps` and `golden` both given; a case takes its steps from one",
                           key=True)
        if not isinstance(item.get("name"), str) or not item["name"]:
            problem = "a case needs a `name`" if "name" not in item else "name must be a non-empty string"
            self.ctx.error((*where, "name") if "name" in item else where, problem)
            return []
        params: list[list[tuple[str, Any]]] = [[]]
        if "parametrize" in item:
            try:
                params = expand_parametrize(item["parametrize"])
            except SpecError as exc:
                self.ctx.error((*where, "parametrize", *exc.path), exc.message)
                return []
        merged, origins = merge_defaults(self.defaults, {k: v for k, v in item.items() if k != "parametrize"})
        absolute = {p: (*where, *o[1:]) if o[0] == "case" else o for p, o in origins.items()}
        ctx = self.ctx.child({(): where, **absolute})
        if not self.templated:  # every expansion is the same case but for its name: build it once
            first = self._build(merged, params[0], ctx, misspelt)
            return [first, *(dataclasses.replace(first, name=case_name(merged["name"], values)) for values in params[1:])]
        return [self._build(merged, values, ctx, misspelt) for values in params]

    def _build(self, merged: dict[str, Any], params: list[tuple[str, Any]], ctx: Ctx, misspelt: bool) -> Case:
        """Render one expansion of a case (in a file with templates) and build it."""
        rendered = merged
        if self.templated:
            errors: list[SpecError] = []
            names = variables(self.vars, self.cli_vars, dict(params))
            rendered = render_tree(merged, names, lambda p: p == _NOT_RENDERED, errors)
            for problem in errors:
                ctx.error(problem.path, problem.message)
        name = case_name(str(rendered["name"]), params)
        return _CaseBuilder(ctx, rendered, name, self.folder, self.golden_root).build(self.tags, misspelt)


def _planned(item: Any) -> int:
    """How many cases a written case makes, from its ``parametrize`` alone (a malformed one counts 1: it errs later)."""
    spec = item.get("parametrize") if isinstance(item, dict) else None
    if isinstance(spec, dict) and spec and all(isinstance(values, list) for values in spec.values()):
        return math.prod(map(len, spec.values()))
    return len(spec) if isinstance(spec, list) and spec else 1


def _default_name(path: Path) -> str:
    """The file name without ``.suite.yaml`` / ``.suite.yml`` (or ``.yaml``/``.yml``)."""
    name = path.name
    for suffix in (".suite.yaml", ".suite.yml", ".yaml", ".yml"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


class _CaseBuilder:
    """One rendered case to a ``Case`` model, every problem reported at its path."""

    def __init__(self, ctx: Ctx, case: dict[str, Any], name: str, folder: Path,
                 golden_root: str | Path | None = None) -> None:
        self.ctx, self.case, self.name, self.folder = ctx, case, name, folder
        self.golden_root = golden_root

    def build(self, suite_tags: tuple[str, ...], misspelt: bool = False) -> Case:
        """The case model (``misspelt``: an unknown key was reported, so no "asserts nothing" on top)."""
        case, ctx = self.case, self.ctx
        source = parse_source(case["source"], ("source",), ctx, self.folder) if "source" in case else None
        if "source" not in case:
            ctx.error((), f"case '{self.name}' has no source: add `source:` (a file path, or a map with file, "
                          "messages, command or python), or set one in defaults")
        if not misspelt and not any(key in case for key in ASSERTING):
            ctx.error((), f"case '{self.name}' asserts nothing: add steps, golden, never, before, calls, budget, "
                          "nodes, answer, judge or latency")
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
        steps = parse_steps(case["steps"], ("steps",), ctx) if "steps" in case else None
        threshold = self._share("threshold", None)
        if threshold is not None and "steps" not in case and "golden" not in case:
            ctx.error(("threshold",), "threshold scores the steps, but this case has no steps or golden file", key=True)
        mode = self._choice("mode", MODES, "match mode") or "strict"
        self._check_groups(mode)
        return Expectation(
            steps=steps,
            mode=mode,  # type: ignore[arg-type]
            args_mode=self._choice("args_mode", ARGS_MODES, "argument rule") or "exact",  # type: ignore[arg-type]
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
        )

    def _judge(self) -> JudgeSpec | None:
        """``judge:``: a rubric, and optionally reference, threshold and model."""
        if "judge" not in self.case:
            return None
        ctx, value = self.ctx, self.case["judge"]
        if not ctx.check(value, dict, ("judge",), "judge must be a map with `rubric` (and optionally reference, "
                                                  "threshold, model)"):
            return None
        value = ctx.keys(value, JUDGE_KEYS, ("judge",), "in judge")
        rubric = value.get("rubric")
        if "rubric" not in value:
            ctx.error(("judge",), "judge needs a `rubric`: what the judge model scores the run against")
        elif ctx.check(rubric, str, ("judge", "rubric"), "rubric must be text") and not rubric.strip():
            ctx.error(("judge", "rubric"), "rubric is empty; say what a good run does")
        reference = value.get("reference", False)
        if not ctx.check(reference, bool, ("judge", "reference"), "reference must be true or false"):
            reference = False
        elif reference and "steps" not in self.case and "golden" not in self.case:
            ctx.error(("judge", "reference"), "reference: true shows the judge the expected steps, but this case "
                                              "has no steps or golden file; add steps or remove reference", key=True)
        threshold = _share_of(value, "threshold", ("judge", "threshold"), ctx)
        model = value.get("model")
        if "model" in value and not ctx.check(model, str, ("judge", "model"), "model must be a model name"):
            model = None
        alone = not any(key in self.case for key in ASSERTING if key != "judge")
        return JudgeSpec(rubric if isinstance(rubric, str) else "", reference, 0.5 if threshold is None else threshold,
                         model, alone)

    def _check_groups(self, mode: str) -> None:
        """``parallel`` groups speak of turns, which only the ordered modes check."""
        steps = self.case.get("steps")
        if mode in ORDERED_MODES or not isinstance(steps, list):
            return
        for i, item in enumerate(steps):
            if isinstance(item, dict) and len(item) == 1 and isinstance(item.get("parallel"), list):
                self.ctx.error(("steps", i, "parallel"), f"parallel groups need mode strict or in_order (they check that "
                               f"calls share a turn); mode '{mode}' ignores turns — list the steps without `parallel`",
                               key=True)
                return

    def _choice(self, key: str, choices: tuple[str, ...], what: str) -> str | None:
        """A key whose value is one of fixed names (``mode``, ``args_mode``)."""
        return self.ctx.choice(self.case[key], choices, (key,), what) if key in self.case else None

    def _share(self, key: str, default: float | None) -> float | None:
        """A number from 0 to 1 (``threshold``, ``pass_rate``)."""
        value = self.case.get(key, default)
        if key in self.case and self.ctx.check(value, (int, float), (key,), f"{key} must be a number from 0 to 1"):
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
            if isinstance(pair, list) and len(pair) == 2 and all(isinstance(p, str) and p for p in pair):
                pairs.append((pair[0], pair[1]))
            else:
                self.ctx.error(("before", i), f"each before entry is a pair [a, b] of tool names (some call of a "
                                              f"comes before some call of b); found {kind(pair)}")
        return tuple(pairs)

    def _nodes(self) -> tuple[tuple[str, ...], ...] | None:
        """Graph nodes per turn: a list of lists of names."""
        if "nodes" not in self.case:
            return None
        value = self.case["nodes"]
        if not self.ctx.check(value, list, ("nodes",), "nodes must be a list of turns, each a list of node names"):
            return None
        return tuple(self.ctx.names(turn, ("nodes", i), "each turn of nodes") for i, turn in enumerate(value))

    def _golden(self) -> Path | None:
        """The golden file, resolved against the suite's folder; it must lie inside the project (it gets written)."""
        value = self.case.get("golden")
        if "golden" not in self.case or not self.ctx.check(value, str, ("golden",), "golden must be a file path"):
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
        return value if self.ctx.check(value, str, (key,), f"{key} must be a reason (text) or true") else None

    def _requires(self) -> tuple[str, ...]:
        """``requires``: extras (``trajrun[otel]``) and modules without which the case is skipped."""
        value = self.case.get("requires", [])
        if not self.ctx.check(value, list, ("requires",), "requires must be a list of extras such as 'trajrun[otel]' "
                                                          "and Python module names"):
            return ()
        good = []
        for i, item in enumerate(value):
            problem = requirement_problem(item) if isinstance(item, str) else (
                f"expected an extra such as 'trajrun[otel]' or a Python module name, found {kind(item)}")
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
            self.ctx.error(("repeat",), "repeat runs a live source several times, but this case reads a recorded "
                                        "run; use a command or python source, or remove repeat", key=True)
        return count


def _share_of(value: dict[str, Any], key: str, path: KeyPath, ctx: Ctx) -> float | None:
    """A number from 0 to 1 under ``key`` of a map, or None (absent or reported)."""
    if key not in value or not ctx.check(value[key], (int, float), path, f"{key} must be a number from 0 to 1"):
        return None
    if not 0 <= value[key] <= 1:
        ctx.error(path, f"{key} must be from 0 to 1, found {value[key]}")
        return None
    return float(value[key])


def _judge_settings(value: dict[str, Any], ctx: Ctx) -> dict[str, Any]:
    """The checked fields of ``judge_defaults``."""
    out: dict[str, Any] = {}
    for key in ("model", "base_url", "api_key"):
        if key in value and ctx.check(value[key], str, ("judge_defaults", key), f"{key} must be text"):
            out[key] = value[key]
    if "timeout" in value and ctx.check(value["timeout"], (int, float), ("judge_defaults", "timeout"),
                                        "timeout must be seconds"):
        if value["timeout"] > 0:
            out["timeout"] = float(value["timeout"])
        else:
            ctx.error(("judge_defaults", "timeout"), f"timeout must be above 0 seconds, found {value['timeout']}")
    retries = ctx.count(value["retries"], ("judge_defaults", "retries"), "retries") if "retries" in value else None
    if retries is not None:
        out["retries"] = retries
    if "temperature" in value and ctx.check(value["temperature"], (int, float), ("judge_defaults", "temperature"),
                                            "temperature must be a number"):
        out["temperature"] = float(value["temperature"])
    return out


def parse_source(value: Any, path: KeyPath, ctx: Ctx, folder: Path) -> Source | None:
    """A source: a file path, or a map with one of file, messages, command, python."""
    loc = ctx.loc(path)
    if isinstance(value, str) and value:
        return Source(file=folder / value, loc=loc)
    if not isinstance(value, dict):
        ctx.error(path, f"source must be a file path or a map with file, messages, command or python; "
                        f"found {kind(value)}")
        return None
    value = ctx.keys(value, SOURCE_KEYS, path, "in source")
    kinds = [k for k in SOURCE_KINDS if k in value]
    if len(kinds) != 1:
        found = f"found {' and '.join(kinds)}" if kinds else "found none"
        ctx.error(path, f"a source needs exactly one of file, messages, command, python; {found}")
        return None
    for key, needs in _ONLY_WITH.items():
        if key in value and not any(kind in value for kind in needs):
            ctx.error((*path, key), f"{key} applies to a {' or '.join(needs)} source only", key=True)
    return Source(loc=loc, **_source_fields(value, path, ctx, folder))


def _source_fields(value: dict[str, Any], path: KeyPath, ctx: Ctx, folder: Path) -> dict[str, Any]:
    """The checked fields of a source map."""
    out: dict[str, Any] = {}
    texts = {"file": "file must be a path", "command": "command must be a shell command line",
             "python": "python must be 'module:function'", "select": "select must be a JSONPath"}
    for key, what in texts.items():
        if key in value and ctx.check(value[key], str, (*path, key), what):
            out[key] = value[key]
    if "file" in out:
        out["file"] = folder / out["file"]
    if "python" in out and out["python"].count(":") != 1:
        ctx.error((*path, "python"), f"python must be 'module:function', found {out['python']!r}")
    if "select" in out and (problem := jsonpath_problem(out["select"])):
        ctx.error((*path, "select"), f"invalid JSONPath {out['select']!r}: {problem}")
    if "format" in value:
        out["format"] = ctx.choice(value["format"], FORMATS, (*path, "format"), "format") or "auto"
    if "record" in value:
        out["record"] = ctx.count(value["record"], (*path, "record"), "record (a 1-based line)", least=1)
    if "timeout" in value and ctx.check(value["timeout"], (int, float), (*path, "timeout"), "timeout must be seconds"):
        out["timeout"] = float(value["timeout"]) if value["timeout"] > 0 else DEFAULT_TIMEOUT
        if value["timeout"] <= 0:
            ctx.error((*path, "timeout"), f"timeout must be above 0 seconds, found {value['timeout']}")
    if "args" in value and ctx.check(value["args"], dict, (*path, "args"), "args must be a map of keyword arguments"):
        out["args"] = value["args"]
    if "messages" in value and ctx.check(value["messages"], (list, dict), (*path, "messages"),
                                         "messages must be a list of messages or a document map"):
        out["messages"] = value["messages"]
    _picking_fields(value, path, ctx, out)
    bulk_fields(value, path, ctx, out)
    return out


def _picking_fields(value: dict[str, Any], path: KeyPath, ctx: Ctx, out: dict[str, Any]) -> None:
    """``thread`` and ``checkpoint`` (of a LangGraph database file), ``capture`` (a live source's spans)."""
    for key in ("thread", "checkpoint"):
        if key in value and ctx.check(value[key], (str, int), (*path, key), f"{key} must be an id"):
            out[key] = str(value[key])
            file = out.get("file")
            if file is not None and file.suffix.lower() not in DATABASE_SUFFIXES:
                databases = ", ".join(DATABASE_SUFFIXES)
                ctx.error((*path, key), f"{key} picks a checkpoint in a LangGraph database ({databases}); {file.name} "
                                        f"is not one — remove {key}", key=True)  # fmt: skip
    if "capture" in value:
        out["capture"] = ctx.choice(value["capture"], CAPTURES, (*path, "capture"), "capture")
        if out["capture"] is not None and out.get("format", "auto") not in ("auto", "otel"):
            ctx.error((*path, "format"), "capture: otlp reads the OpenTelemetry spans the agent exports; format "
                                         f"must be auto or otel, found {out['format']}")  # fmt: skip


def validate_suite(suite: Suite) -> list[SuiteError]:
    """What ``trajrun validate`` adds to loading: file sources and golden files exist (and golden files load)."""
    problems: list[SuiteError] = []
    for case in suite.cases:
        if case.source is not None and case.source.file is not None and not case.source.file.exists():
            if case.source.each is None:
                problems.append(SuiteError(f"source file {case.source.file} does not exist", case.source.loc))
            problems.extend(bulk_problems(case.source))
        if case.golden is None:
            continue
        if not case.golden.exists():
            problems.append(SuiteError(f"golden file {case.golden} does not exist; run `trajrun run "
                                       "--update-golden` to record it", case.loc))
            continue
        try:
            load_golden(case.golden)
        except SuiteErrors as exc:
            problems.extend(exc.errors)
    return problems

