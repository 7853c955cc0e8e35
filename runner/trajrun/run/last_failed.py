"""``--lf`` and ``--ff``: the ids of the cases that failed, erred or xpassed in the last runs, kept
in the cache folder the judge keeps its answers in (``.trajrun-cache/``, one cache for trajrun), as
pytest keeps its own.

A run updates the record as pytest does: a case that ran is added when it failed and dropped when it
did not; cases that did not run (deselected, ``--lf``) keep their entry. A suite file that could not
be loaded is recorded by its id (its cases' ids before ``::``), and ``--lf`` then reruns all of it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..files import FileWriteError, atomic_write
from .judge import CACHE_FOLDER
from .plans import suite_id
from .results import PROBLEMS, RunResult

CACHE_FILE = "lastfailed.json"
MAX_CACHE_FILE = 64 * 1024 * 1024
"""Bytes of the record: a larger file is not read (it is rewritten by the next run)."""
GITIGNORE = "# trajrun's cache (judge answers, last failures); safe to delete\n*\n"


@dataclass(frozen=True, slots=True)
class Rerun:
    """What ``--lf`` / ``--ff`` make of the record for a run: the ids ``--lf`` keeps (``None``:
    every case), the ids ``--ff`` runs first, and a note saying what was chosen."""

    only: frozenset[str] | None
    first: frozenset[str]
    note: str


class LastFailed:
    """The failed case ids in ``<folder>/lastfailed.json`` (``folder``: ``.trajrun-cache``)."""

    def __init__(self, folder: Path = Path(CACHE_FOLDER)) -> None:
        self.folder = folder
        self.path = folder / CACHE_FILE

    def read(self) -> frozenset[str] | None:
        """The recorded ids; empty without a record, ``None`` when the file is not one trajrun
        wrote."""
        try:
            if self.path.stat().st_size > MAX_CACHE_FILE:
                return None
            data = json.loads(self.path.read_bytes())
        except FileNotFoundError:
            return frozenset()
        except (OSError, ValueError, RecursionError):
            return None
        failed = data.get("failed") if isinstance(data, dict) else None
        if not isinstance(failed, list) or not all(isinstance(item, str) for item in failed):
            return None
        return frozenset(failed)

    def update(self, result: RunResult, root: Path) -> None:
        """Add the cases of ``result`` that failed, drop those that ran and did not (and those of
        suite files that are gone); written only when it changed. A cache that cannot be written
        costs the next ``--lf`` its selection, nothing else."""
        before = self.read()
        failed = {i for i in before or () if (root / i.partition("::")[0]).exists()}
        for suite in result.suites:
            file_id = suite_id(root, Path(suite.file))
            (failed.add if suite.load_errors else failed.discard)(file_id)
            for case in suite.cases:
                (failed.add if case.outcome in PROBLEMS else failed.discard)(case.case_id)
        if before is not None and failed == before:
            return
        data = json.dumps({"failed": sorted(failed)}, indent=1).encode("utf-8")
        try:
            self._ignore_in_git()
            atomic_write(self.path, lambda handle: handle.writelines([data]), "cache file")
        except (OSError, FileWriteError):
            pass

    def clear(self) -> None:
        """``--cache-clear``: forget the record and the judge's answers (the folder and its
        ``.gitignore`` stay)."""
        self.path.unlink(missing_ok=True)
        answers = self.folder / "judge"
        if answers.is_symlink():
            answers.unlink()
        elif answers.is_dir():
            import shutil  # deferred: it loads bz2 and lzma, a start-up cost for every run

            shutil.rmtree(answers)

    def _ignore_in_git(self) -> None:
        """Create the folder with a ``.gitignore`` that keeps it out of git (as the judge does)."""
        ignore = self.folder / ".gitignore"
        if not ignore.exists():
            self.folder.mkdir(parents=True, exist_ok=True)
            ignore.write_text(GITIGNORE, encoding="utf-8")


def rerun(
    recorded: frozenset[str], files: Sequence[Path], root: Path, only: bool, first: bool
) -> Rerun:
    """What ``--lf`` (``only``) and ``--ff`` (``first``) select among the suite ``files`` of this
    run, given the recorded ids: with none recorded under these paths, every case runs, as in
    pytest."""
    here = {suite_id(root, path) for path in files}
    chosen = frozenset(i for i in recorded if i in here or i.partition("::")[0] in here)
    if not chosen:
        n = len(recorded)
        why = (
            f"{n} failure{'s' if n != 1 else ''} recorded, none in these suites"
            if n
            else "no failures recorded"
        )
        return Rerun(None, frozenset(), f"{why}; running every case")
    whole = sum(1 for i in chosen if i in here)
    cases = len(chosen) - whole
    what = f"{cases} case{'s' if cases != 1 else ''} that failed"
    if whole:
        what += f" and {whole} suite file{'s' if whole != 1 else ''} that did not load"
    if only:
        return Rerun(chosen, chosen if first else frozenset(), f"rerunning the {what} last time")
    return Rerun(None, chosen, f"running the {what} last time first")


def failed_first(files: list[Path], first: frozenset[str], root: Path) -> list[Path]:
    """``files`` with those holding a case of ``first`` (or named by it) ahead, each group in its
    order."""
    if not first:
        return files
    prefixes = {i.partition("::")[0] for i in first}
    return sorted(files, key=lambda path: suite_id(root, path) not in prefixes)
