"""``trajrun validate`` as a library: load suites and check their sources without running them."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from ..errors import SuiteErrors
from ..suites.load import load_suite, validate_suite
from .runner import collect


def validate_paths(paths: Sequence[str | Path], variables: Mapping[str, Any]) -> tuple[list[str], int]:
    """Every problem found in the suite files under ``paths``, one line each, and how many files were read."""

    files = collect(paths)
    problems: list[str] = []
    for path in files:
        try:
            suite = load_suite(path, variables)
        except SuiteErrors as exc:
            problems.extend(str(e) for e in exc.errors)
            continue
        problems.extend(str(e) for e in validate_suite(suite))
    return problems, len(files)
