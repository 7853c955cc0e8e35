"""Suite files to ``Suite`` models: YAML with marks, defaults, parametrize, templating, checks
with locations.

``load_suite`` reports every error of a file at once (``SuiteErrors``), each at
``file:line:column: key.path``. ``case_problems`` adds what needs the file system.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from ..collector import collector_paused
from ..errors import SpecError, SuiteError, SuiteErrors, kind
from ..yaml_items import Split, Unsplittable, split_last_sequence
from .bulk_keys import bulk_problems
from .case_keys import CaseBuilder, judge_settings
from .document import Ctx, parse_document, raise_errors, read_text
from .golden import load_golden
from .model import Case, JudgeSettings, Suite
from .schema import schema_text
from .templating import (
    MAX_CASES,
    case_name,
    expand_parametrize,
    has_templates,
    merge_defaults,
    render_tree,
    variables,
)

__all__ = ["load_suite", "open_suite", "case_problems", "schema_text"]

TOP_KEYS = ("suite", "description", "tags", "vars", "defaults", "judge_defaults", "cases")
CASE_KEYS = (
    "name",
    "source",
    "mode",
    "args_mode",
    "tools",
    "steps",
    "golden",
    "never",
    "before",
    "calls",
    "budget",
    "nodes",
    "answer",
    "judge",
    "threshold",
    "repeat",
    "pass_rate",
    "parametrize",
    "tags",
    "skip",
    "xfail",
    "requires",
    "latency",
    "failed_calls",
)
JUDGE_DEFAULT_KEYS = (
    "model",
    "base_url",
    "api_key",
    "api_key_env",
    "timeout",
    "retries",
    "temperature",
)
_NOT_RENDERED = ("source", "messages")
MAX_SUITE_CASES = 100_000
"""The most cases the ``parametrize`` keys of one suite file may make together (counted before
any is built). Cases written out are not counted: the file's size bounds them, and a large file
is built one case at a time."""
STREAM_BYTES = 1 << 20
"""Suite files of at least this size can be built one case at a time (``open_suite``)."""


def load_suite(
    path: str | Path,
    variables: Mapping[str, Any] | None = None,
    golden_root: str | Path | None = None,
) -> Suite:
    """Load one suite file; ``variables`` are ``--var`` values (already parsed). Raises
    ``SuiteErrors``.

    Golden files must resolve inside the suite's project or ``golden_root``. A large file is built
    case by case (``open_suite``), so that its whole YAML node tree, several times the cases' size,
    never exists.
    """
    opened = open_suite(path, variables, golden_root)
    if isinstance(opened, Suite):
        return opened
    with collector_paused():
        try:
            return dataclasses.replace(opened.suite, cases=tuple(opened.cases))
        except Unsplittable:
            return opened.whole()


@dataclass(slots=True)
class SuiteStream:
    """A suite file whose cases are built one at a time as ``cases`` is iterated: ``suite`` holds
    the rest.

    Iterating ends by raising ``SuiteErrors`` when the file has any error (a suite that cannot be
    loaded is dropped whole, cases already built included), or ``Unsplittable`` when the file must
    be loaded whole after all: ``whole()`` does that from the text already read, and says exactly
    what it holds.
    """

    suite: Suite
    cases: Iterator[Case]
    whole: Callable[[], Suite]


def open_suite(
    path: str | Path,
    variables: Mapping[str, Any] | None = None,
    golden_root: str | Path | None = None,
) -> Suite | SuiteStream:
    """A suite file, read once: loaded whole, or when it is large (``STREAM_BYTES``) with a block
    list of ``cases`` last, its cases one at a time so that they are never all held. Raises
    ``SuiteErrors``."""
    file, path = str(path), Path(path)
    with collector_paused():
        text = read_text(path, file)
        try:
            split = split_last_sequence(text, "cases") if len(text) >= STREAM_BYTES else None
        except Unsplittable:  # the head does not parse cleanly: loading it whole says why
            split = None
        if split is None:
            return _load_text(text, file, path, variables, golden_root)
    ctx = Ctx(file, split.head.marks)
    top = ctx.keys(split.head.data, TOP_KEYS, (), "at the top level")
    head = _Top(ctx, top, path, dict(variables or {}), golden_root, has_templates(text))
    suite = Suite(
        head.name, path, head.description, head.tags, (), ctx.loc(()), head.judge_defaults
    )
    return SuiteStream(
        suite, head.streamed(split), lambda: _whole(text, file, path, variables, golden_root)
    )


def _whole(
    text: str,
    file: str,
    path: Path,
    variables: Mapping[str, Any] | None,
    golden_root: str | Path | None,
) -> Suite:
    """``_load_text`` with the collector paused: a streamed file read whole after all."""
    with collector_paused():
        return _load_text(text, file, path, variables, golden_root)


def _load_text(
    text: str,
    file: str,
    path: Path,
    variables: Mapping[str, Any] | None,
    golden_root: str | Path | None,
) -> Suite:
    """A suite file's text loaded whole (the collector paused by the caller); ``file`` is the path
    as given."""
    loaded, ctx = parse_document(text, file)
    top = loaded.data
    if not isinstance(top, dict):
        ctx.error(
            (),
            "a suite is a map with `cases` (and optionally suite, description, tags, vars, "
            f"defaults, judge_defaults); found {kind(top)}",
        )
        raise_errors(ctx.errors)
    top = ctx.keys(top, TOP_KEYS, (), "at the top level")
    suite = _Top(ctx, top, path, dict(variables or {}), golden_root, has_templates(text))
    cases = suite.cases()
    raise_errors(ctx.errors)
    return Suite(
        suite.name, path, suite.description, suite.tags, cases, ctx.loc(()), suite.judge_defaults
    )


class _Top:
    """The suite-level keys, read once, and the expansion of every case."""

    def __init__(
        self,
        ctx: Ctx,
        top: dict[str, Any],
        path: Path,
        cli_vars: dict[str, Any],
        golden_root: str | Path | None = None,
        templated: bool = True,
    ) -> None:
        self.ctx, self.top, self.folder, self.cli_vars = ctx, top, path.parent, cli_vars
        self.golden_root, self.templated = golden_root, templated
        self.vars = top.get("vars", {})
        if not ctx.check(self.vars, dict, ("vars",), "vars must be a map of variables"):
            self.vars = {}
        errors: list[SpecError] = []
        head = render_tree(
            {k: top[k] for k in ("suite", "description", "tags") if k in top},
            variables(self.vars, cli_vars, {}),
            lambda p: False,
            errors,
        )
        for problem in errors:
            ctx.error(problem.path, problem.message)
        self.name = _default_name(path)
        if "suite" in head and ctx.check(
            head["suite"], str, ("suite",), "suite must be the suite's name"
        ):
            self.name = head["suite"]
        self.description = None
        if "description" in head and ctx.check(
            head["description"], str, ("description",), "description must be text"
        ):
            self.description = head["description"]
        self.tags = ctx.names(head["tags"], ("tags",), "tags") if "tags" in head else ()
        self.defaults = self._defaults()
        self.judge_defaults = self._judge_defaults()

    def _judge_defaults(self) -> JudgeSettings:
        """``judge_defaults``: model, endpoint and key of the judge, rendered (``{{ env.KEY }}``)
        and checked."""
        raw = self.top.get("judge_defaults", {})
        if not self.ctx.check(
            raw,
            dict,
            ("judge_defaults",),
            f"judge_defaults must be a map of {', '.join(JUDGE_DEFAULT_KEYS)}",
        ):
            return JudgeSettings()
        raw = self.ctx.keys(raw, JUDGE_DEFAULT_KEYS, ("judge_defaults",), "in judge_defaults")
        errors: list[SpecError] = []
        value = render_tree(raw, variables(self.vars, self.cli_vars, {}), lambda p: False, errors)
        for problem in errors:
            self.ctx.error(("judge_defaults", *problem.path), problem.message)
        return JudgeSettings(**judge_settings(value, self.ctx))

    def _defaults(self) -> dict[str, Any]:
        """The ``defaults`` map without unknown keys (reported)."""
        defaults = self.top.get("defaults", {})
        if not self.ctx.check(defaults, dict, ("defaults",), "defaults must be a map of case keys"):
            return {}
        for key in ("name", "parametrize"):
            if key in defaults:
                self.ctx.error(
                    ("defaults", key),
                    f"defaults cannot hold `{key}`; set it on each case",
                    key=True,
                )
        if "steps" in defaults and "golden" in defaults:
            self.ctx.error(
                ("defaults", "golden"),
                "`steps` and `golden` both given; keep one of them",
                key=True,
            )
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
        # a larger one errs on its own
        total = sum(count for count in map(_planned, raw) if count <= MAX_CASES)
        if total > MAX_SUITE_CASES:
            self.ctx.error(("cases",), _too_many(total))
            return ()
        seen: dict[str, int] = {}
        return tuple(
            self._unique(case, seen)
            for index, item in enumerate(raw)
            for case in self._expand(item, index, self.ctx)
        )

    def streamed(self, split: Split) -> Iterator[Case]:
        """Every case, each item parsed and built when it is reached; the file's errors raised at
        the end.

        The limit on the cases ``parametrize`` makes is counted as the items come: past it,
        ``Unsplittable`` (loaded whole, the file's total is reported before anything is built).
        """
        seen: dict[str, int] = {}
        total = 0
        items = split.items("cases")
        while True:
            # paused per item, never across a yield: the caller runs the case
            with collector_paused():
                index, loaded = next(items, (-1, None))
                if loaded is None:
                    break
                total += count if (count := _planned(loaded.data)) <= MAX_CASES else 0
                if total > MAX_SUITE_CASES:
                    raise Unsplittable(f"parametrize makes more than {MAX_SUITE_CASES:,} cases")
                built = self._expand(
                    loaded.data, index, Ctx(self.ctx.file, loaded.marks, self.ctx.errors)
                )
            yield from (self._unique(case, seen) for case in built)
        raise_errors(self.ctx.errors)

    def _unique(self, case: Case, seen: dict[str, int]) -> Case:
        """``case``, its name reported when an earlier case of the file has it (``seen``: name to
        line)."""
        if case.name in seen:
            self.ctx.errors.append(
                SuiteError(
                    f"duplicate case name '{case.name}' (first at line {seen[case.name]}); "
                    "case names must be unique after templating",
                    case.loc,
                )
            )
        seen.setdefault(case.name, case.loc.line)
        return case

    def _expand(self, item: Any, index: int, ctx: Ctx) -> list[Case]:
        """One written case (``ctx`` knows where it was written): defaults merged, parametrize
        expanded, strings rendered, each built."""
        where = ("cases", index)
        if not ctx.check(
            item, dict, where, "each case must be a map with at least `name` and `source`"
        ):
            return []
        label = f"case '{item['name']}'" if isinstance(item.get("name"), str) else f"cases[{index}]"
        known = ctx.keys(item, CASE_KEYS, where, f"in {label}")
        # a misspelt key ('setps') is reported as such; "asserts nothing" on top of it would be
        # noise
        misspelt, item = len(known) < len(item), known
        if "steps" in item and "golden" in item:
            ctx.error(
                (*where, "golden"),
                "`steps` and `golden` both given; a case takes its steps from one",
                key=True,
            )
        if not isinstance(item.get("name"), str) or not item["name"]:
            problem = (
                "a case needs a `name`" if "name" not in item else "name must be a non-empty string"
            )
            ctx.error((*where, "name") if "name" in item else where, problem)
            return []
        params: list[list[tuple[str, Any]]] = [[]]
        if "parametrize" in item:
            try:
                params = expand_parametrize(item["parametrize"])
            except SpecError as exc:
                ctx.error((*where, "parametrize", *exc.path), exc.message)
                return []
        merged, origins = merge_defaults(
            self.defaults, {k: v for k, v in item.items() if k != "parametrize"}
        )
        absolute = {p: (*where, *o[1:]) if o[0] == "case" else o for p, o in origins.items()}
        case_ctx = ctx.child({(): where, **absolute})
        if not self.templated and len(params) > 1:
            # every expansion is the same case but for its name: build it once, its problems named
            # as written
            once = self._build(merged, [], case_ctx, misspelt)
            return [
                dataclasses.replace(once, name=case_name(once.name, values)) for values in params
            ]
        return [self._build(merged, values, case_ctx, misspelt) for values in params]

    def _build(
        self, merged: dict[str, Any], params: list[tuple[str, Any]], ctx: Ctx, misspelt: bool
    ) -> Case:
        """Render one expansion of a case (in a file with templates) and build it."""
        rendered = merged
        if self.templated:
            errors: list[SpecError] = []
            names = variables(self.vars, self.cli_vars, dict(params))
            rendered = render_tree(merged, names, lambda p: p == _NOT_RENDERED, errors)
            for problem in errors:
                ctx.error(problem.path, problem.message)
        name = case_name(str(rendered["name"]), params)
        return CaseBuilder(ctx, rendered, name, self.folder, self.golden_root).build(
            self.tags, misspelt
        )


def _planned(item: Any) -> int:
    """How many cases a written case's ``parametrize`` makes: 0 without one (a malformed one
    counts 1: it errs later)."""
    if not isinstance(item, dict) or "parametrize" not in item:
        return 0
    spec = item["parametrize"]
    if (
        isinstance(spec, dict)
        and spec
        and all(isinstance(values, list) for values in spec.values())
    ):
        return math.prod(map(len, spec.values()))
    return len(spec) if isinstance(spec, list) and spec else 1


def _too_many(total: int) -> str:
    """The message for a file whose ``parametrize`` keys make more than ``MAX_SUITE_CASES``
    cases."""
    return (
        f"parametrize would make {total:,} cases in this file, above the limit of "
        f"{MAX_SUITE_CASES:,} per suite file (cases written out are not counted); split the "
        "parametrized cases into several suite files"
    )


def _default_name(path: Path) -> str:
    """The file name without ``.suite.yaml`` / ``.suite.yml`` (or ``.yaml``/``.yml``)."""
    name = path.name
    for suffix in (".suite.yaml", ".suite.yml", ".yaml", ".yml"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def case_problems(case: Case) -> list[SuiteError]:
    """What ``trajrun validate`` adds to loading a case: its file source and golden file exist,
    the golden file loads."""
    problems: list[SuiteError] = []
    if case.source is not None and case.source.file is not None and not case.source.file.exists():
        if case.source.each is None:
            problems.append(
                SuiteError(f"source file {case.source.file} does not exist", case.source.loc)
            )
        problems.extend(bulk_problems(case.source))
    if case.golden is None:
        return problems
    if not case.golden.exists():
        problems.append(
            SuiteError(
                f"golden file {case.golden} does not exist; run `trajrun run "
                "--update-golden` to record it",
                case.loc,
            )
        )
        return problems
    try:
        load_golden(case.golden)
    except SuiteErrors as exc:
        problems.extend(exc.errors)
    return problems
