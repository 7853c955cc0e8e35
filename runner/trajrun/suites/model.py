"""Suite and Case models: what a suite file says, parsed once, with locations. Nothing downstream
reads raw dicts."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from ..errors import Location
from ..match.expectation import UNSET, Expectation
from ..sources import FORMATS as _READABLE

FORMATS: tuple[str, ...] = ("auto", *_READABLE)
"""The names a source's ``format`` may take: every format a reader exists for, and ``auto``."""
CAPTURES = ("otlp", "wire")
"""What a live source's ``capture`` may name: where its run is read from instead of its output."""
SUITE_SUFFIXES = (".suite.yaml", ".suite.yml")
"""What a suite file's name ends with (``trajrun run`` and the pytest plugin collect these)."""
DEFAULT_TIMEOUT = 300.0


@dataclass(frozen=True, slots=True)
class Source:
    """Where a case's actual run comes from: exactly one of ``file``, ``messages``, ``command``,
    ``python``.

    ``file`` is resolved against the suite's folder; ``messages`` is an inline document used as
    written (never templated); ``args`` are the keyword arguments of a ``python`` callable;
    ``thread`` and ``checkpoint`` pick a checkpoint of a LangGraph database; ``capture`` reads a
    live source's run from the OpenTelemetry spans it exports (``otlp``) or its model traffic
    (``wire``) instead of its output; ``cassette`` is where that traffic is recorded and replayed
    (``{case}``: the case's name).
    """

    file: Path | None = None
    format: str = "auto"
    select: str | None = None
    record: int | None = None
    messages: Any = None
    command: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    python: str | None = None
    args: Mapping[str, Any] = field(default_factory=dict)
    loc: Location = field(default_factory=lambda: Location(""))
    thread: str | None = None
    checkpoint: str | None = None
    capture: str | None = None
    cassette: str | None = None
    traces: str = "auto"
    """How an OpenTelemetry document of several traces is read: ``auto``, ``merge`` or ``one``."""
    each: str | None = None
    """A bulk source: ``record``, ``file`` or ``trace`` makes the case run once per record
    (``file`` may be a glob)."""
    id: str | None = None
    """A bulk source's JSONPath naming each record (default: its file and line)."""
    url: str | None = None
    """A bulk source's fsspec URL (``s3://…``, ``memory://…``), kept as written; ``file`` is then
    ``None``."""
    error_when: Any = UNSET
    """A value or inline matcher (compiled): a call whose result matches is marked as an error."""

    @property
    def live(self) -> bool:
        """Whether the source runs the agent (``command`` or ``python``) rather than reading a
        record."""
        return self.command is not None or self.python is not None


@dataclass(frozen=True, slots=True)
class Case:
    """One test case: a source, what it must satisfy, and how it is selected and reported.

    ``tags`` are the suite's, the defaults' and the case's own (de-duplicated, in that order);
    ``golden`` is the golden file (its steps are read at run time); ``skip``/``xfail`` hold a
    reason; ``requires`` names extras (``trajrun[otel]``) and modules without which the case is
    skipped.
    """

    name: str
    source: Source | None
    expect: Expectation
    golden: Path | None = None
    tags: tuple[str, ...] = ()
    skip: str | None = None
    xfail: str | None = None
    repeat: int | None = None
    pass_rate: float = 1.0
    loc: Location = field(default_factory=lambda: Location(""))
    requires: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class JudgeSettings:
    """``judge_defaults``: how to reach the judge model; a field left ``None`` falls back to the
    environment.

    ``api_key`` is kept out of ``repr`` so it never lands in a log or a report; ``api_key_env``
    names the variable that holds the key. The environment's key never goes to the suite's own
    ``base_url``.
    """

    model: str | None = None
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    api_key_env: str | None = None
    timeout: float = 60.0
    retries: int = 3
    temperature: float = 0.0


@dataclass(frozen=True, slots=True)
class Suite:
    """One suite file: its name (``suite:`` or the file name), tags and cases in file order.

    ``judge_defaults`` says how its ``judge:`` checks reach a model.
    """

    name: str
    path: Path
    description: str | None = None
    tags: tuple[str, ...] = ()
    cases: tuple[Case, ...] = ()
    loc: Location = field(default_factory=lambda: Location(""))
    judge_defaults: JudgeSettings = field(default_factory=JudgeSettings)
