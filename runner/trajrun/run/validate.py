"""``trajrun validate`` as a library: load suites and check their sources without running them."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from ..errors import SourceError, SuiteError, SuiteErrors
from ..sources import load_trajectory
from ..sources.extras import unmet
from ..suites.load import SuiteStream, case_problems, open_suite
from ..suites.model import Case, Source
from ..yaml_items import Unsplittable
from .execute import file_key
from .plans import collect, nothing_found


def validate_paths(
    paths: Sequence[str | Path], variables: Mapping[str, Any], golden_root: Path | None = None
) -> tuple[list[str], int]:
    """Every problem found in the suite files under ``paths``, one line each, and how many files
    were read.

    Finding no suite file at all is a problem too: a mistyped path must not pass a CI step.
    """
    files = collect(paths)
    problems: list[str] = [] if files else [nothing_found(paths)]
    read: dict[tuple[Any, ...], str | None] = {}
    for path in files:
        try:
            problems.extend(_file_problems(path, variables, golden_root, read))
        except SuiteErrors as exc:
            problems.extend(str(e) for e in exc.errors)
        except Exception as exc:  # noqa: BLE001 - a bug must not hide the other files' problems
            problems.append(
                f"{path}: internal error: {type(exc).__name__}: {exc} (please report it)"
            )
    return problems, len(files)


def _file_problems(
    path: Path,
    variables: Mapping[str, Any],
    golden_root: Path | None,
    read: dict[tuple[Any, ...], str | None],
) -> list[str]:
    """The problems of one suite file's cases; a file that does not load raises ``SuiteErrors`` (its
    cases' problems are not reported then). A large file is checked case by case, never held
    whole."""
    opened = open_suite(path, variables, golden_root)
    if isinstance(opened, SuiteStream):
        try:
            return [problem for case in opened.cases for problem in _case_problems(case, read)]
        except Unsplittable:
            opened = opened.whole()
    return [problem for case in opened.cases for problem in _case_problems(case, read)]


def _case_problems(case: Case, read: dict[tuple[Any, ...], str | None]) -> list[str]:
    """A case's missing files, and its file source when it exists but cannot be read as a trajectory
    (live sources are not run, nor cases skipped for want of what they ``require``)."""
    problems = [str(problem) for problem in case_problems(case)]
    source = case.source
    if (
        source is None
        or source.file is None
        or source.each is not None
        or not source.file.is_file()
    ):
        return problems
    if case.requires and unmet(case.requires):
        return problems
    key = file_key(source)
    if key not in read:
        read[key] = _problem(source, source.file)
    if read[key]:
        problems.append(str(SuiteError(f"source {read[key]}", source.loc)))
    return problems


def _problem(source: Source, file: Path) -> str | None:
    """Why a file source (``file``, its file) cannot be read, or None when it reads."""
    try:
        load_trajectory(
            file,
            format=source.format,
            select=source.select,
            record=source.record,
            thread=source.thread,
            checkpoint=source.checkpoint,
            traces=source.traces,
        )
    except SourceError as exc:
        return str(exc)
    except Exception as exc:  # noqa: BLE001 - a reader's bug is this source's problem, not the end of validate
        return (
            f"internal error reading {source.file}: {type(exc).__name__}: {exc} (please report it)"
        )
    return None
