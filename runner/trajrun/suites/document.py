"""A suite or golden YAML file as data with locations, and ``Ctx``, which reports problems at key
paths."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence, TypeGuard, TypeVar, overload

from ..errors import Location, SpecError, SuiteError, SuiteErrors, did_you_mean, format_path, kind
from ..match.matchers import compile_value
from ..yaml_core import Loaded, Marks, YamlProblem, decode_utf8, load_text
from ..yaml_core import Path as KeyPath

T = TypeVar("T")
U = TypeVar("U")


def read_document(path: Path, file: str) -> tuple[Loaded, Ctx]:
    """Read and parse one YAML file; a problem that stops reading raises ``SuiteErrors``."""
    return parse_document(read_text(path, file), file)


def read_text(path: Path, file: str) -> str:
    """The text of a UTF-8 file; a file that cannot be read or decoded raises ``SuiteErrors``."""
    try:
        return decode_utf8(path.read_bytes())
    except OSError as exc:
        raise SuiteErrors(
            [SuiteError(f"cannot read the file: {exc.strerror or exc}", Location(file))]
        ) from None
    except YamlProblem as exc:
        raise SuiteErrors([SuiteError(exc.message, _problem_loc(exc, file))]) from None


def parse_document(text: str, file: str) -> tuple[Loaded, Ctx]:
    """Parse one YAML document; syntax and refused content raise ``SuiteErrors``, duplicate keys
    are reported."""
    try:
        loaded = load_text(text)
    except YamlProblem as exc:
        raise SuiteErrors([SuiteError(exc.message, _problem_loc(exc, file))]) from None
    ctx = Ctx(file, loaded.marks)
    ctx.errors.extend(SuiteError(p.message, _problem_loc(p, file)) for p in loaded.duplicates)
    return loaded, ctx


def _problem_loc(problem: YamlProblem, file: str) -> Location:
    """Where a YAML-level problem is, as a ``Location``."""
    return Location(file, problem.pos.line, problem.pos.column, format_path(problem.path))


def raise_errors(errors: list[SuiteError]) -> None:
    """Raise every distinct error, in file order, when there is any."""
    unique = {str(e): e for e in errors}
    if unique:
        ordered = sorted(
            unique.values(), key=lambda e: (e.loc.line, e.loc.column) if e.loc else (0, 0)
        )
        raise SuiteErrors(ordered)


class Ctx:
    """Reports errors at key paths of one document; ``origins`` maps path prefixes to where they
    were written."""

    def __init__(
        self,
        file: str,
        marks: Marks,
        errors: list[SuiteError] | None = None,
        origins: dict[KeyPath, KeyPath] | None = None,
    ) -> None:
        self.file = file
        self.marks = marks
        self.errors: list[SuiteError] = [] if errors is None else errors
        self.origins = origins or {(): ()}

    def child(self, origins: dict[KeyPath, KeyPath]) -> Ctx:
        """A context for a derived tree (a merged case) sharing this one's error list."""
        return Ctx(self.file, self.marks, self.errors, origins)

    def absolute(self, path: KeyPath) -> KeyPath:
        """Where the value at ``path`` of this tree was written in the file."""
        for cut in range(len(path), -1, -1):
            if path[:cut] in self.origins:
                return (*self.origins[path[:cut]], *path[cut:])
        return path

    def loc(self, path: KeyPath, key: bool = False) -> Location:
        """The location of the value at ``path`` (of its key with ``key``)."""
        where = self.absolute(path)
        pos = self.marks.key(where) if key else self.marks.value(where)
        return Location(self.file, pos.line, pos.column, format_path(where))

    def item_locs(self, path: KeyPath, count: int) -> list[Location]:
        """The locations of the ``count`` items of the list at ``path``, found at once (a case's
        steps)."""
        where = self.absolute(path)
        positions = self.marks.items(where)
        inside = any(len(p) > len(path) and p[: len(path)] == path for p in self.origins)
        if positions is None or len(positions) != count or inside:
            # not written as one list: item by item
            return [self.loc((*path, i)) for i in range(count)]
        # each item's path is format_path((*where, i)): the head, then [i]
        head = format_path(where)
        return [
            Location(self.file, line, column, f"{head}[{i}]")
            for i, (line, column) in enumerate(positions)
        ]

    def error(self, path: KeyPath, message: str, key: bool = False) -> None:
        """Report one problem at ``path``."""
        self.errors.append(SuiteError(message, self.loc(path, key)))

    def keys(
        self, value: dict[str, Any], allowed: Sequence[str], path: KeyPath, where: str
    ) -> dict[str, Any]:
        """``value`` without its unknown keys, each reported with the nearest known key."""
        for key in value:
            if key not in allowed:
                self.error(
                    (*path, key),
                    f"unknown key '{key}' {where}{did_you_mean(key, allowed)}",
                    key=True,
                )
        return {k: v for k, v in value.items() if k in allowed}

    @overload
    def check(self, value: object, types: type[T], path: KeyPath, what: str) -> TypeGuard[T]: ...

    @overload
    def check(
        self, value: object, types: tuple[type[T], type[U]], path: KeyPath, what: str
    ) -> TypeGuard[T | U]: ...

    def check(
        self, value: object, types: type | tuple[type, ...], path: KeyPath, what: str
    ) -> bool:
        """Whether ``value`` has one of ``types`` (booleans are never numbers); reports it if not.

        The overloads tell a type checker what ``value`` is where the check passed.
        """
        ok = isinstance(value, types) and not (
            isinstance(value, bool) and bool not in _tuple(types)
        )
        if not ok:
            self.error(path, f"{what}, found {kind(value)}")
        return ok

    def choice(self, value: Any, choices: Sequence[str], path: KeyPath, what: str) -> str | None:
        """``value`` when it is one of ``choices``; otherwise reports it with the nearest choice."""
        if isinstance(value, str) and value in choices:
            return value
        if isinstance(value, str):
            self.error(path, f"unknown {what} '{value}'{did_you_mean(value, choices)}")
        else:
            self.error(path, f"{what} must be one of {', '.join(choices)}, found {kind(value)}")
        return None

    def count(self, value: Any, path: KeyPath, what: str, least: int = 0) -> int | None:
        """A whole number of at least ``least``, or ``None`` (reported)."""
        if self.check(value, int, path, f"{what} must be a whole number") and value < least:
            self.error(path, f"{what} must be at least {least}, found {value}")
            return None
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def names(self, value: Any, path: KeyPath, what: str) -> tuple[str, ...]:
        """A list of non-empty strings (tool names, tags)."""
        if not self.check(value, list, path, f"{what} must be a list of names"):
            return ()
        good = [
            v
            for i, v in enumerate(value)
            if self.check(v, str, (*path, i), f"each of {what} must be a name")
        ]
        return tuple(good)

    def compiled(self, value: Any, path: KeyPath) -> Any:
        """An expected value with its ``$`` matchers compiled; every problem reported at its own
        path."""
        problems: list[SpecError] = []
        compiled = compile_value(value, (), problems)
        for problem in problems:
            self.error((*path, *problem.path), problem.message)
        return value if problems else compiled


def _tuple(types: type | tuple[type, ...]) -> tuple[type, ...]:
    """``isinstance`` types as a tuple."""
    return types if isinstance(types, tuple) else (types,)
