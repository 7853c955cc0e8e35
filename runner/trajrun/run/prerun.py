"""Suite files loaded for a serial run; large ones checked while they load, so that their cases are
never all held.

A file of a megabyte or more whose ``cases:`` comes last is built one case at a time
(``open_suite``). A case that only reads files (no agent to run, no judge to ask, no bulk log)
runs as soon as it is built and only its result is kept; any other case waits for the run, as
every case of a smaller file does. Nothing is reported before the whole file has loaded: a file
with a load error is still dropped whole, the results of its cases with it.
"""

from __future__ import annotations

import time
from pathlib import Path

from ..errors import SuiteErrors
from ..suites.load import SuiteStream, load_suite, open_suite
from ..suites.model import Case
from ..yaml_items import Unsplittable
from .execute import SourceCache, run_case
from .plans import Planned, RunOptions, plan, selector, stops, suite_id
from .results import CaseResult, SuiteResult, lean


class LoadInterrupted(KeyboardInterrupt):
    """Ctrl-C while a large file ran as it loaded: ``finished`` holds the results of the cases that
    finished."""

    def __init__(self, finished: SuiteResult) -> None:
        super().__init__()
        self.finished = finished


def prerun(
    path: Path, options: RunOptions, root: Path, cache: SourceCache
) -> tuple[Planned | SuiteResult, int]:
    """One suite file loaded (or its load errors) and its cases selected by ``-k``, ``-m`` and
    ``--shard``, with the number left out; a large file is loaded case by case, its file-reading
    cases run as they come.

    With ``-x``, cases after the first that stops the run are kept unrun: the run never reaches
    them.
    """
    try:
        # golden files are written only once the whole file is known to load: load it first
        opened = (
            load_suite(path, options.variables, options.golden_root)
            if options.update_golden
            else open_suite(path, options.variables, options.golden_root)
        )
        if isinstance(opened, SuiteStream):
            try:
                return _streamed(opened, path, options, root, cache)
            except Unsplittable:
                opened = opened.whole()
    except SuiteErrors as exc:
        return SuiteResult(path.name, str(path), load_errors=tuple(str(e) for e in exc.errors)), 0
    return plan(opened, options, root)


def _streamed(
    stream: SuiteStream, path: Path, options: RunOptions, root: Path, cache: SourceCache
) -> tuple[Planned, int]:
    """``prerun`` of a file whose cases come one at a time; raises what iterating them raises."""
    suite, keep, prefix = stream.suite, selector(options), suite_id(root, path)
    chosen: list[tuple[str, Case | CaseResult]] = []
    left_out, spent, stopped = 0, 0.0, False
    try:
        for case in stream.cases:
            cid = f"{prefix}::{case.name}"
            if not keep(suite.name, cid, case):
                left_out += 1
            elif stopped or not _reads_files_only(case):
                chosen.append((cid, case))
            else:
                began = time.perf_counter()
                result = run_case(case, suite, cid, cache)
                spent += time.perf_counter() - began
                chosen.append((cid, lean(result, options.keep)))
                stopped = options.exitfirst and stops(result)
    except KeyboardInterrupt:  # an interrupted run still reports every case that finished
        finished = tuple(result for _, result in chosen if isinstance(result, CaseResult))
        raise LoadInterrupted(
            SuiteResult(suite.name, str(path), finished, duration=spent)
        ) from None
    return Planned(suite, tuple(chosen), spent), left_out


def _reads_files_only(case: Case) -> bool:
    """Whether running the case only reads files: a file or inline source, no judge, not a bulk
    case."""
    source = case.source
    if case.expect.judge is not None or source is None or source.each is not None or source.live:
        return False
    return source.file is not None or source.messages is not None
