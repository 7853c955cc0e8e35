"""``trajrun run --watch`` as a library: which files each suite reads, and a loop that reruns the
suites a change affects (a suite file, a file source it reads, a golden file). Watching is done by
``watchfiles``, the optional extra ``trajrun[watch]``."""

from __future__ import annotations

import fnmatch
import functools
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from ..errors import SuiteErrors
from ..sources.streams import has_glob, is_url
from ..suites.load import load_suite
from ..suites.model import SUITE_SUFFIXES, Suite
from .plans import collect

INSTALL = "--watch needs the watchfiles package: pip install 'trajrun[watch]'"
_TICK_MS = 200
"""How often the watcher wakes with no change (to see a stop request): at most this long before it
is ready."""


@dataclass(frozen=True)
class Inputs:
    """What a set of suites reads: each suite file (as ``collect`` names it) by its resolved path,
    the resolved files it reads (itself, its file sources, its golden files) and glob sources; the
    folders given, where a new suite file is picked up; and every folder to watch."""

    suites: Mapping[Path, tuple[Path, frozenset[Path], tuple[str, ...]]]
    roots: tuple[Path, ...]
    folders: frozenset[Path]

    def affected(self, changed: Iterable[Path]) -> list[Path]:
        """The suite files to rerun for these changed (resolved) paths, as ``collect`` names them,
        in path order: those that read a changed file, and suite files new under a folder given."""
        changed = set(changed)
        chosen = {
            shown
            for shown, files, globs in self.suites.values()
            if files & changed
            or any(fnmatch.fnmatch(str(path), glob) for glob in globs for path in changed)
        }
        chosen.update(
            _relative(path) for path in changed if path not in self.suites and self._new_suite(path)
        )
        return sorted(path for path in chosen if path.is_file())

    def describe(self) -> str:
        """``2 suite files and the 3 files they read``, for the console."""
        count = len(self.suites)
        read = len(
            {
                file
                for suite, (_, files, _) in self.suites.items()
                for file in files
                if file != suite
            }
        )
        return (
            f"{count} suite file{'s' if count != 1 else ''} and the {read} "
            f"file{'s' if read != 1 else ''} "
            f"{'they read' if count != 1 else 'it reads'}"
        )

    def _new_suite(self, path: Path) -> bool:
        """Whether ``path`` is a suite file under a folder given (or a suite file given by name)."""
        return path.name.endswith(SUITE_SUFFIXES) and any(
            path == root or path.is_relative_to(root) for root in self.roots
        )


def read_inputs(
    paths: Sequence[str | Path],
    variables: Mapping[str, Any] | None = None,
    golden_root: Path | None = None,
) -> Inputs:
    """What the suites under ``paths`` read now (a suite that does not load reads only itself)."""
    suites = {}
    for path in collect(paths):
        files, globs = suite_inputs(path, variables, golden_root)
        suites[path.resolve()] = (path, files, globs)
    roots = tuple(Path(raw).resolve() for raw in paths)
    folders = {
        folder for root in roots for folder in (_tree(root) if root.is_dir() else [root.parent])
    }
    for _, files, globs in suites.values():
        folders.update(file.parent for file in files)
        folders.update(folder for glob in globs for folder in _tree(_fixed_part(glob)))
    return Inputs(suites, roots, frozenset(folder for folder in folders if folder.is_dir()))


def suite_inputs(
    path: Path, variables: Mapping[str, Any] | None = None, golden_root: Path | None = None
) -> tuple[frozenset[Path], tuple[str, ...]]:
    """The resolved files one suite reads (itself, its file sources, its golden files) and its local
    glob sources."""
    files, globs = {path.resolve()}, []
    try:
        suite = load_suite(path, variables, golden_root)
    except SuiteErrors:
        return frozenset(files), ()
    for location in _locations(suite):
        if is_url(str(location)):
            continue
        if has_glob(str(location)):
            globs.append(str(Path(os.path.abspath(location))))
        else:
            files.add(location.resolve())
    return frozenset(files), tuple(globs)


def watch(
    paths: Sequence[str | Path],
    rerun: Callable[[Sequence[str | Path]], Any],
    variables: Mapping[str, Any] | None = None,
    golden_root: Path | None = None,
    *,
    stop: threading.Event | None = None,
    max_runs: int | None = None,
    tell: Callable[[str], None] = lambda _: None,
) -> Any:
    """Run ``rerun(paths)``, then, on each change, ``rerun`` the suite files it affects, until
    ``stop`` is set, Ctrl-C outside a run, or ``max_runs`` runs (the first included); returns what
    the last ``rerun`` returned (Ctrl-C during a run propagates).

    ``tell`` gets a line when the watch is ready (``watching …``) and when a change starts a run.
    The files watched are read again after each run, so a suite that now reads another file is
    watched on it."""
    import watchfiles  # deferred: an optional extra (the CLI says how to install it)

    last, runs, watcher, running = rerun(list(paths)), 1, None, False
    try:
        while max_runs is None or runs < max_runs:
            inputs = read_inputs(paths, variables, golden_root)
            if watcher is None or watcher.folders != inputs.folders:
                if watcher is not None:
                    watcher.close()
                batches = watchfiles.watch(
                    *sorted(inputs.folders),
                    recursive=False,
                    stop_event=stop,
                    rust_timeout=_TICK_MS,
                    yield_on_timeout=True,
                )
                watcher = _Watcher(batches, inputs.folders)
            ready = functools.partial(tell, f"watching {inputs.describe()}; Ctrl-C to stop")
            change = watcher.wait(inputs, ready)
            if change is None:
                break
            changed, suites = change
            files = f"{len(suites)} suite file{'s' if len(suites) != 1 else ''}"
            tell(f"changed: {', '.join(changed)}; running {files}")
            running = True
            last, runs, running = rerun(suites), runs + 1, False
    except KeyboardInterrupt:
        if running:  # the run's own interrupt (its results are in it): the caller reports it
            raise
    finally:
        if watcher is not None:
            watcher.close()
    return last


class _Watcher:
    """A running ``watchfiles.watch`` over some folders, kept across runs so that a change made
    during a run is still seen after it."""

    def __init__(self, batches: Iterator[set[tuple[Any, str]]], folders: frozenset[Path]) -> None:
        self.batches, self.folders, self.started = batches, folders, False

    def wait(
        self, inputs: Inputs, ready: Callable[[], None]
    ) -> tuple[list[str], list[Path]] | None:
        """The changed paths (as shown) and the suites they affect, at the first change that affects
        one; None when the stop event is set. ``ready`` is called once the watcher runs."""
        if self.started:
            ready()
        for batch in self.batches:
            if not self.started:
                self.started = True
                ready()
            changed = {Path(path).resolve() for _, path in batch}
            suites = inputs.affected(changed)
            if suites:
                return sorted(_relative(path).as_posix() for path in changed), suites
        return None

    def close(self) -> None:
        """Stop watching."""
        close = getattr(self.batches, "close", None)
        if close is not None:
            close()


def _locations(suite: Suite) -> Iterator[Path]:
    """The file sources and golden files of a suite's cases."""
    for case in suite.cases:
        if case.source is not None and case.source.file is not None:
            yield case.source.file
        if case.golden is not None:
            yield case.golden


def _tree(folder: Path) -> list[Path]:
    """A folder and the folders under it, but for hidden ones and ``__pycache__``."""
    found = [folder]
    for parent, names, _ in os.walk(folder):
        names[:] = sorted(
            name for name in names if not name.startswith(".") and name != "__pycache__"
        )
        found.extend(Path(parent) / name for name in names)
    return found


def _fixed_part(glob: str) -> Path:
    """The folder a glob's matches lie under: its leading parts without glob characters."""
    parts = Path(glob).parts
    fixed = next((index for index, part in enumerate(parts) if has_glob(part)), len(parts))
    return Path(*parts[:fixed]) if fixed else Path(".")


def _relative(path: Path) -> Path:
    """A resolved path as the console shows it: relative to the working folder when inside it."""
    try:
        return path.relative_to(Path.cwd().resolve())
    except ValueError:
        return path
