"""``trajrun run`` as a library: collect suite files, load, select, run cases, return results."""

from __future__ import annotations

import os
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Mapping, Protocol, Sequence

from .case import SourceCache, run_case
from .errors import SuiteErrors, TrajrunError
from .results import CaseResult, RunResult, SuiteResult
from .select import in_shard, keyword_matcher, marker_matcher
from .suite import Case, Suite

SUITE_SUFFIXES = (".suite.yaml", ".suite.yml")


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
    from .loader import load_suite

    loaded: list[Suite | SuiteResult] = []
    names: dict[str, Path] = {}
    for path in files:
        try:
            suite = load_suite(path, variables)
        except SuiteErrors as exc:
            loaded.append(SuiteResult(path.name, str(path), load_errors=tuple(str(e) for e in exc.errors)))
            continue
        if suite.name in names:
            message = f"{path}: suite: suite name {suite.name!r} is already used by {names[suite.name]}; rename one"
            loaded.append(SuiteResult(path.name, str(path), load_errors=(message,)))
            continue
        names[suite.name] = path
        loaded.append(suite)
    return loaded


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


def run(paths: Sequence[str | Path], options: RunOptions, reporter: Reporter | None = None) -> RunResult:
    """Collect, load, select and run; a broken suite or case never stops the others."""
    started = time.perf_counter()
    root = options.root or Path.cwd()
    plans: list[Planned | SuiteResult] = []
    deselected = 0
    for item in load(collect(paths), options.variables):
        if isinstance(item, SuiteResult):
            plans.append(item)
            continue
        planned, left_out = plan(item, options, root)
        deselected += left_out
        plans.append(planned)
    if reporter:
        reporter.start(sum(len(p.cases) for p in plans if isinstance(p, Planned)))
    suites = _execute(plans, options, reporter)
    result = RunResult(tuple(suites), time.perf_counter() - started, deselected)
    if reporter:
        reporter.finish(result)
    return result


def _execute(plans: list[Planned | SuiteResult], options: RunOptions, reporter: Reporter | None) -> list[SuiteResult]:
    """Run every planned case, serially or in worker processes, reporting suites in path order."""
    if options.jobs > 1:
        outcomes = _run_parallel([p for p in plans if isinstance(p, Planned)], options)
    suites: list[SuiteResult] = []
    cache = SourceCache()
    stop = False
    for item in plans:
        if isinstance(item, SuiteResult):
            suites.append(item)
            if reporter:
                reporter.suite_load_error(item)
            continue
        stamp, began, results = datetime.now(), time.perf_counter(), []
        for cid, case in item.cases:
            if stop:
                break
            result = outcomes[cid] if options.jobs > 1 else run_case(case, item.suite, cid, cache, options.update_golden)
            results.append(result)
            if reporter:
                reporter.case_done(result)
            stop = options.exitfirst and result.outcome in ("failed", "error", "xpassed")
        elapsed = sum(r.duration for r in results) if options.jobs > 1 else time.perf_counter() - began
        suites.append(SuiteResult(item.suite.name, str(item.suite.path), tuple(results), duration=elapsed, timestamp=stamp))
    return suites


def _run_parallel(plans: list[Planned], options: RunOptions) -> dict[str, CaseResult]:
    """Run cases in ``options.jobs`` processes; cases sharing a source file go to the same worker."""
    batches: dict[Any, list[tuple[str, str, str]]] = {}
    for planned in plans:
        for cid, case in planned.cases:
            key = case.source.file if case.source and case.source.file else cid
            batches.setdefault(key, []).append((str(planned.suite.path), case.name, cid))
    groups: list[list[tuple[str, str, str]]] = [[] for _ in range(options.jobs)]
    for batch in sorted(batches.values(), key=len, reverse=True):
        min(groups, key=len).extend(batch)
    args = dict(options.variables)
    with ProcessPoolExecutor(max_workers=options.jobs) as pool:
        futures = [pool.submit(_worker, g, args, options.update_golden) for g in groups if g]
        return {cid: res for f in futures for cid, res in f.result()}


@lru_cache(maxsize=None)
def _worker_suite(path: str, variables: tuple[tuple[str, Any], ...]) -> Suite:
    """A suite loaded once per worker process."""
    from .loader import load_suite

    return load_suite(Path(path), dict(variables))


def _worker(batch: list[tuple[str, str, str]], variables: dict[str, Any], update_golden: bool) -> list[tuple[str, CaseResult]]:
    """A worker process: load each suite once and run the named cases with one source cache."""
    cache, out = SourceCache(), []
    frozen_vars = tuple(sorted(variables.items()))
    for path, name, cid in batch:
        suite = _worker_suite(path, frozen_vars)
        case = next(c for c in suite.cases if c.name == name)
        out.append((cid, run_case(case, suite, cid, cache, update_golden)))
    return out
