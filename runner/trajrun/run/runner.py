"""``trajrun run`` as a library: collect suite files, load, select, run cases, return results."""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable, Mapping, Protocol, Sequence

from ..errors import SuiteErrors, TrajrunError
from ..suites.load import load_suite
from ..suites.model import SUITE_SUFFIXES, Case, Suite
from .execute import SourceCache, run_case
from .results import CaseResult, RunResult, SuiteResult
from .selection import in_shard, keyword_matcher, marker_matcher


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


class Reporter(Protocol):
    """What the runner tells as it goes (the console reporter implements it)."""

    def start(self, total_cases: int) -> None:
        """Before the first case: how many will run."""
    def suite_load_error(self, result: SuiteResult) -> None:
        """A suite file that could not be loaded."""
    def case_done(self, result: CaseResult) -> None:
        """One case finished."""
    def finish(self, run: RunResult) -> None:
        """The run is over."""


@dataclass(frozen=True, slots=True)
class Planned:
    """A loaded suite and the cases selected from it, with their ids."""

    suite: Suite
    cases: tuple[tuple[str, Case], ...]


def collect(paths: Sequence[str | Path]) -> list[Path]:
    """Suite files under each path (recursively, sorted); a file named explicitly is always taken."""
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob("*") if p.name.endswith(SUITE_SUFFIXES) and p.is_file()))
        elif path.is_file():
            files.append(path)
        else:
            raise UsageError(f"{raw}: no such file or directory")
    return list(dict.fromkeys(files))


def case_id(root: Path, suite_path: Path, name: str) -> str:
    """``<suite file path relative to the run's root>::<case name>``, with forward slashes."""
    try:
        rel = Path(os.path.relpath(suite_path.resolve(), root.resolve()))
        shown = suite_path if rel.parts[:1] == ("..",) else rel
    except ValueError:
        shown = suite_path
    return f"{shown.as_posix()}::{name}"


def load(files: Iterable[Path], variables: Mapping[str, Any]) -> list[Suite | SuiteResult]:
    """Load every file; a file that fails (or repeats another suite's name) becomes a SuiteResult of errors."""
    loaded: list[Suite | SuiteResult] = []
    names: dict[str, Path] = {}
    for path in files:
        item = _load_one(path, variables)
        if isinstance(item, Suite):
            item = _unique(item, item.name, path, names)
        loaded.append(item)
    return loaded


def _load_one(path: Path, variables: Mapping[str, Any]) -> Suite | SuiteResult:
    """One suite, or a SuiteResult holding every error of the file."""
    try:
        return load_suite(path, variables)
    except SuiteErrors as exc:
        return SuiteResult(path.name, str(path), load_errors=tuple(str(e) for e in exc.errors))


def _unique(item: Any, name: str, path: Path, names: dict[str, Path]) -> Any:
    """``item`` when its suite name is new; else the load error for a second suite of that name."""
    if name not in names:
        names[name] = path
        return item
    message = f"{path}: suite: suite name {name!r} is already used by {names[name]}; rename one"
    return SuiteResult(path.name, str(path), load_errors=(message,))


def plan(suite: Suite, options: RunOptions, root: Path) -> tuple[Planned, int]:
    """Select a suite's cases by ``-k``, ``-m`` and ``--shard``; returns the plan and the number left out."""
    keep_k = keyword_matcher(options.keyword) if options.keyword else None
    keep_m = marker_matcher(options.marker) if options.marker else None
    chosen = []
    for case in suite.cases:
        cid = case_id(root, suite.path, case.name)
        if keep_k and not keep_k(f"{suite.name}::{case.name}") and not keep_k(cid):
            continue
        if keep_m and not keep_m(case.tags):
            continue
        if options.shard and not in_shard(cid, options.shard):
            continue
        chosen.append((cid, case))
    return Planned(suite, tuple(chosen)), len(suite.cases) - len(chosen)


def run_paths(paths: Sequence[str | Path], options: RunOptions | None = None, reporter: Reporter | None = None) -> RunResult:
    """Collect, load, select and run, as ``trajrun run`` does; a broken suite or case never stops the others."""
    options = options or RunOptions()
    started = time.perf_counter()
    root = options.root or Path.cwd()
    files = collect(paths)
    if options.jobs > 1:
        suites, deselected = _run_parallel(files, options, root)
        suites = _replay(suites, options.exitfirst, reporter)
    else:
        suites, deselected = _run_serial(files, options, root, reporter)
    result = RunResult(tuple(suites), time.perf_counter() - started, deselected)
    if reporter:
        reporter.finish(result)
    return result


def run_suite(suite: Suite, options: RunOptions | None = None) -> SuiteResult:
    """Run the cases of one loaded suite that ``options`` select (``-k``, ``-m``, ``--shard``), in order."""
    options = options or RunOptions()
    planned, _ = plan(suite, options, options.root or Path.cwd())
    return _run_planned(planned, SourceCache(), options.update_golden, exitfirst=options.exitfirst)


def _run_serial(files: list[Path], options: RunOptions, root: Path, reporter: Reporter | None) -> tuple[list[SuiteResult], int]:
    """Load every suite (so the reporter knows the total), then run the cases in order."""
    plans: list[Planned | SuiteResult] = []
    deselected = 0
    for item in load(files, options.variables):
        if isinstance(item, Suite):
            planned, left_out = plan(item, options, root)
            deselected += left_out
            plans.append(planned)
        else:
            plans.append(item)
    if reporter:
        reporter.start(sum(len(p.cases) for p in plans if isinstance(p, Planned)))
    cache, suites, stop = SourceCache(), [], False
    for item in plans:
        if isinstance(item, SuiteResult):
            suites.append(item)
            if reporter:
                reporter.suite_load_error(item)
            continue
        result = _run_planned(item, cache, options.update_golden, reporter, stop, options.exitfirst)
        stop = stop or options.exitfirst and any(_stops(c) for c in result.cases)
        suites.append(result)
    return suites, deselected


def _stops(case: CaseResult) -> bool:
    """Whether ``-x`` stops the run after this case."""
    return case.outcome in ("failed", "error", "xpassed")


def _run_planned(item: Planned, cache: SourceCache, update_golden: bool, reporter: Reporter | None = None,
                 stopped: bool = False, exitfirst: bool = False) -> SuiteResult:
    """Run a suite's selected cases in order; with ``exitfirst``, stop after the first that fails."""
    stamp, began, results = datetime.now(), time.perf_counter(), []
    for cid, case in item.cases:
        if stopped:
            break
        result = run_case(case, item.suite, cid, cache, update_golden)
        results.append(result)
        if reporter:
            reporter.case_done(result)
        stopped = exitfirst and _stops(result)
    return SuiteResult(item.suite.name, str(item.suite.path), tuple(results), duration=time.perf_counter() - began,
                       timestamp=stamp)


Unit = tuple[Path, int, int]
"""A share of the work: a suite file, and which of how many contiguous parts of its cases."""


def _run_parallel(files: list[Path], options: RunOptions, root: Path) -> tuple[list[SuiteResult], int]:
    """Workers load, select and run whole suite files (split in parts when files are fewer than workers)."""
    parts = max(1, options.jobs // max(1, len(files)))
    units = [(path, i, parts) for path in files for i in range(parts)]
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else None)
    with ProcessPoolExecutor(max_workers=options.jobs, mp_context=context) as pool:
        done = list(pool.map(_run_unit, units, [options] * len(units), [root] * len(units)))
    suites: list[SuiteResult] = []
    names: dict[str, Path] = {}
    deselected = 0
    for (path, part, _), (result, left_out) in zip(units, done):
        if part:
            suites[-1] = _join(suites[-1], result)
            continue
        if not result.load_errors:
            result = _unique(result, result.name, path, names)
        deselected += left_out if not result.load_errors else 0
        suites.append(result)
    return suites, deselected


_WORKER_CACHE = SourceCache()
"""Each worker process's source cache, shared by every unit it runs."""


def _run_unit(unit: Unit, options: RunOptions, root: Path) -> tuple[SuiteResult, int]:
    """In a worker: one part of one suite file, loaded and selected there; the number left out."""
    path, part, parts = unit
    item = _load_one(path, options.variables)
    if isinstance(item, SuiteResult):
        return (item if part == 0 else SuiteResult(item.name, item.file)), 0
    planned, left_out = plan(item, options, root)
    size = len(planned.cases)
    share = Planned(planned.suite, planned.cases[part * size // parts:(part + 1) * size // parts])
    result = _run_planned(share, _WORKER_CACHE, options.update_golden, exitfirst=options.exitfirst)
    return result, left_out if part == 0 else 0


def _join(first: SuiteResult, more: SuiteResult) -> SuiteResult:
    """Two parts of one suite file's results, in order."""
    return dataclasses.replace(first, cases=first.cases + more.cases, duration=first.duration + more.duration)


def _replay(suites: list[SuiteResult], exitfirst: bool, reporter: Reporter | None) -> list[SuiteResult]:
    """Report results that workers produced, in path order; with ``exitfirst``, drop those after the first failure."""
    if exitfirst:
        suites = _cut_after_first_failure(suites)
    if reporter:
        reporter.start(sum(len(s.cases) for s in suites))
        for suite in suites:
            if suite.load_errors:
                reporter.suite_load_error(suite)
            for case in suite.cases:
                reporter.case_done(case)
    return suites


def _cut_after_first_failure(suites: list[SuiteResult]) -> list[SuiteResult]:
    """The results up to and including the first failing case (later suites dropped)."""
    kept: list[SuiteResult] = []
    for suite in suites:
        stop = next((i for i, c in enumerate(suite.cases) if _stops(c)), None)
        if stop is None:
            kept.append(suite)
            continue
        kept.append(dataclasses.replace(suite, cases=suite.cases[: stop + 1]))
        break
    return kept
