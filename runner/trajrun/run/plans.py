"""Collecting suite files, loading and selecting them (``-k``, ``-m``, ``--shard``), and running the
selected cases of loaded suites in order: what a serial run and each ``-j`` worker both do."""

from __future__ import annotations

import os
import time
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence, TypeVar

from ..errors import SuiteErrors, TrajrunError
from ..suites.load import load_suite
from ..suites.model import SUITE_SUFFIXES, Case, Suite
from .bulk import BulkOptions, BulkSession, is_bulk, pending_result
from .execute import PendingCase, SourceCache, start_case
from .judge import Judge, JudgeOptions
from .results import CaseResult, Gates, SuiteResult, lean
from .selection import in_shard, keyword_matcher, marker_matcher

JUDGE_AHEAD = 64
"""How many cases may run ahead of the first one still waiting for its judge (results stay in
order)."""
T = TypeVar("T")


class UsageError(TrajrunError):
    """A wrong command line (a path that does not exist, a bad expression): exit status 2."""


@dataclass(frozen=True, slots=True)
class RunOptions:
    """What ``trajrun run`` was asked to do, beside the paths."""

    keyword: str | None = None
    marker: str | None = None
    exitfirst: bool = False
    shard: tuple[int, int] | None = None
    jobs: int = 1
    variables: Mapping[str, Any] = field(default_factory=dict)
    update_golden: bool = False
    root: Path | None = None
    golden_root: Path | None = None
    judge: JudgeOptions = field(default_factory=JudgeOptions)
    bulk: BulkOptions = field(default_factory=BulkOptions)
    keep: frozenset[str] | None = None
    """The outcomes whose results keep their trajectory and the steps and calls their steps check
    holds, which the reports asked for show (``None``: every outcome, for the JSON and HTML reports;
    JUnit's ``<system-out>`` shows some). The other results are ``lean``: a run holds its results,
    not its cases' runs (``prerun`` too)."""
    gates: Gates = field(default_factory=Gates)
    rerun: frozenset[str] | None = None
    """``--lf``: only the cases with these ids run (a suite file's id: all its cases); ``None``: no
    such selection."""
    first: frozenset[str] = frozenset()
    """``--ff``: the cases with these ids run first in their suite file."""


@dataclass(frozen=True, slots=True)
class Planned:
    """A loaded suite and the cases selected from it, with their ids.

    A case of a streamed file (``prerun``) may already be a result; ``prerun`` is how long those
    took.
    """

    suite: Suite
    cases: tuple[tuple[str, Case | CaseResult], ...]
    prerun: float = 0.0


@dataclass
class Progress:
    """What a run has produced so far, filled as it goes so that an interrupt keeps it."""

    suites: list[SuiteResult] = field(default_factory=list)
    deselected: int = 0
    selected: int = 0


def collect(paths: Sequence[str | Path]) -> list[Path]:
    """Suite files under each path (recursively, sorted); a file named explicitly is always
    taken."""
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files.extend(
                sorted(
                    p for p in path.rglob("*") if p.name.endswith(SUITE_SUFFIXES) and p.is_file()
                )
            )
        elif path.is_file():
            files.append(path)
        else:
            raise UsageError(f"{raw}: no such file or directory")
    return list(dict.fromkeys(files))


def nothing_found(paths: Sequence[str | Path]) -> str:
    """What to say when ``paths`` hold no suite file (a mistyped folder must not pass quietly)."""
    where = ", ".join(str(p) for p in paths)
    others = [p for raw in paths if Path(raw).is_dir() for p in Path(raw).rglob("*.y*ml")]
    hint = (
        (
            f"; {len(others)} YAML file{'s' if len(others) != 1 else ''} there "
            f"{'do' if len(others) != 1 else 'does'} not end in .suite.yaml — rename the suites"
        )
        if others
        else ""
    )
    return (
        f"no suite files found under {where} (suite files end in .suite.yaml or .suite.yml){hint}"
    )


def case_id(root: Path, suite_path: Path, name: str) -> str:
    """``<suite file path relative to the run's root>::<case name>``, with forward slashes."""
    return f"{suite_id(root, suite_path)}::{name}"


def suite_id(root: Path, suite_path: Path) -> str:
    """The suite file's part of its cases' ids: its path relative to the run's root (as given when
    outside it)."""
    try:
        rel = Path(os.path.relpath(suite_path.resolve(), root.resolve()))
        shown = suite_path if rel.parts[:1] == ("..",) else rel
    except ValueError:
        shown = suite_path
    return shown.as_posix()


def load_one(
    path: Path, variables: Mapping[str, Any], golden_root: Path | None = None
) -> Suite | SuiteResult:
    """One suite, or a SuiteResult holding every error of the file."""
    try:
        return load_suite(path, variables, golden_root)
    except SuiteErrors as exc:
        return SuiteResult(path.name, str(path), load_errors=tuple(str(e) for e in exc.errors))


def unique_suite(item: T, name: str, path: Path, names: dict[str, Path]) -> T | SuiteResult:
    """``item`` when its suite name is new; else the load error for a second suite of that name."""
    if name not in names:
        names[name] = path
        return item
    message = f"{path}: suite: suite name {name!r} is already used by {names[name]}; rename one"
    return SuiteResult(path.name, str(path), load_errors=(message,))


def plan(suite: Suite, options: RunOptions, root: Path) -> tuple[Planned, int]:
    """Select a suite's cases by ``--lf``, ``-k``, ``-m`` and ``--shard`` (``--ff``: the last
    failures first); returns the plan and the number left out."""
    chosen, left_out = choose(suite, options, root)
    return Planned(suite, chosen), left_out


def choose(
    suite: Suite, options: RunOptions, root: Path
) -> tuple[tuple[tuple[str, Case], ...], int]:
    """The cases ``plan`` selects, with their ids, and the number left out."""
    keep = selector(options)
    prefix = suite_id(root, suite.path)  # resolving the paths once per file, not per case
    chosen = [
        (cid, case)
        for case in suite.cases
        if keep(suite.name, cid := f"{prefix}::{case.name}", case)
    ]
    if options.first:
        chosen.sort(key=lambda item: item[0] not in options.first)
    return tuple(chosen), len(suite.cases) - len(chosen)


def selector(options: RunOptions) -> Callable[[str, str, Case], bool]:
    """Whether ``--lf``, ``-k``, ``-m`` and ``--shard`` keep a case, given its suite's name and its
    id."""
    keep_k = keyword_matcher(options.keyword) if options.keyword else None
    keep_m = marker_matcher(options.marker) if options.marker else None
    shard, rerun = options.shard, options.rerun

    def keep(suite_name: str, cid: str, case: Case) -> bool:
        """The selections, cheapest first."""
        if rerun is not None and cid not in rerun and cid[: -len(case.name) - 2] not in rerun:
            return False
        if keep_k and not keep_k(f"{suite_name}::{case.name}") and not keep_k(cid):
            return False
        if keep_m and not keep_m(case.tags):
            return False
        return not shard or in_shard(cid, shard)

    return keep


class Ran:
    """A case that ran while its file loaded (``prerun``), as the pipeline holds a started case: its
    result alone."""

    __slots__ = ("_result",)

    def __init__(self, result: CaseResult) -> None:
        self._result = result

    def done(self) -> bool:
        """Always: nothing is left to wait for."""
        return True

    def result(self) -> CaseResult:
        """The result."""
        return self._result


def stops(case: CaseResult) -> bool:
    """Whether ``-x`` stops the run after this case."""
    return case.outcome in ("failed", "error", "xpassed")


def case_results(
    item: Planned,
    cache: SourceCache,
    update_golden: bool,
    exitfirst: bool,
    skip: int = 0,
    judge: Judge | None = None,
    ahead: int = JUDGE_AHEAD,
    bulk: BulkSession | None = None,
    keep: frozenset[str] | None = None,
) -> Iterator[CaseResult]:
    """Run a suite's selected cases in order (from the ``skip``-th), yielding each result as it is
    done; with ``exitfirst``, stop after the first that fails. Without ``bulk`` (a ``-j`` worker),
    bulk cases give stand-ins that the parent runs. Results are ``lean`` but for the outcomes in
    ``keep``."""
    share = [Planned(item.suite, item.cases[skip:])]
    for _, result in pipeline(
        share, cache, judge, update_golden, exitfirst, ahead=ahead, bulk=bulk, keep=keep
    ):
        yield result


def pipeline(
    plans: Sequence[Planned | SuiteResult],
    cache: SourceCache,
    judge: Judge | None,
    update_golden: bool,
    exitfirst: bool,
    start: Callable[[int], None] | None = None,
    ahead: int = JUDGE_AHEAD,
    bulk: BulkSession | None = None,
    keep: frozenset[str] | None = None,
) -> Iterator[tuple[int, CaseResult]]:
    """Run the plans' cases, yielding ``(plan index, result)`` in order, ``lean`` but for the
    outcomes in ``keep``; with ``exitfirst``, stop after the first that fails. ``start`` hears of
    each plan's index as its cases start. A file source leaves ``cache`` once the last of these
    cases naming it has read it.

    While a case waits for its judge, up to ``ahead`` later cases run, in later suite files too
    (none with ``exitfirst``, which must not start a case after a failure).
    """
    ahead = 0 if exitfirst else ahead
    pending: deque[tuple[int, PendingCase | Ran]] = deque()
    cache.expect(case for item in plans if isinstance(item, Planned) for _, case in item.cases)
    for index, item in enumerate(plans):
        if isinstance(item, SuiteResult):
            continue
        for cid, case in item.cases:
            if start:
                start(index)
            pending.append(
                (index, _start(case, item.suite, cid, cache, update_golden, judge, bulk))
            )
            cache.done(case)
            while pending and (pending[0][1].done() or len(pending) > ahead):
                done, case_result = pending[0][0], lean(pending.popleft()[1].result(), keep)
                yield done, case_result
                if exitfirst and stops(case_result):
                    return
    while pending:
        done, case_result = pending[0][0], lean(pending.popleft()[1].result(), keep)
        yield done, case_result


def _start(
    case: Case | CaseResult,
    suite: Suite,
    cid: str,
    cache: SourceCache,
    update_golden: bool,
    judge: Judge | None,
    bulk: BulkSession | None,
) -> PendingCase | Ran:
    """Start one case: a bulk case in the bulk session (a stand-in in a ``-j`` worker, which the
    parent runs later), any other here; a case that ran while its file loaded is its result."""
    if isinstance(case, CaseResult):
        return Ran(case)
    if is_bulk(case) and case.skip is None:
        return bulk.start(case, suite, cid) if bulk else pending_result(case, suite, cid)
    return start_case(case, suite, cid, cache, update_golden, judge)


def suite_result(
    suite: Suite, cases: list[CaseResult], began: float, stamp: datetime
) -> SuiteResult:
    """A suite's results, timed from ``began``."""
    return SuiteResult(
        suite.name,
        str(suite.path),
        tuple(cases),
        duration=time.perf_counter() - began,
        timestamp=stamp,
    )
