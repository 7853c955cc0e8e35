"""What a case expects of a run: steps, argument rules and checks — the matcher's input.

The suite loader builds these from YAML (with locations); the matcher reads only these.
Expected argument values are *compiled*: plain JSON values, with ``trajrun.match.matchers.Matcher``
objects where the suite wrote ``{$op: ...}`` maps (see ``trajrun.match.matchers.compile_value``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import repeat
from operator import attrgetter
from typing import Any, Literal, Mapping, NamedTuple

from ..errors import Location
from ..trajectory import ToolCall, rows_as

Mode = Literal["strict", "unordered", "subset", "superset", "in_order"]
ArgsMode = Literal["exact", "ignore", "subset", "superset"]
FieldKind = Literal["exact", "ignore", "icase", "approx"]

MODES: tuple[str, ...] = ("strict", "unordered", "subset", "superset", "in_order")
ORDERED_MODES: tuple[str, ...] = ("strict", "in_order")
"""The modes that check turns, and so ``parallel`` groups."""
ARGS_MODES: tuple[str, ...] = ("exact", "ignore", "subset", "superset")
FIELD_KINDS: tuple[str, ...] = ("exact", "ignore", "icase", "approx")


class _Sentinel:
    """A named marker value that is not any JSON value."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return self._name

    def __reduce__(self) -> str:
        """Pickle by name, so a copy sent to or from a worker process is this same object (``is``
        checks hold)."""
        return self._name


ANY_ARGS: Any = _Sentinel("ANY_ARGS")
"""A step's ``args`` when the suite gave none: any arguments match."""

UNSET: Any = _Sentinel("UNSET")
"""A step's ``result`` or a case's ``answer`` when the suite did not ask for one."""


class Step(NamedTuple):
    """One expected tool call. ``args`` is compiled expected arguments, a raw string, or
    ``ANY_ARGS``.

    ``group`` numbers the ``parallel`` group the step belongs to (its calls happen in one turn), or
    is ``None``. A named tuple, like ``ToolCall``: immutable, and cheap to build by the thousand
    from a reference run.
    """

    name: str
    args: Any = ANY_ARGS
    args_mode: ArgsMode | None = None
    result: Any = UNSET
    error: bool | None = None
    loc: Location | None = None
    group: int | None = None


def steps_of(calls: Iterable[ToolCall]) -> tuple[Step, ...]:
    """Steps expecting recorded calls as made: each call's name and arguments, taken literally.

    The reference-run form of ``steps`` (agentevals' ``reference_outputs``): the arguments are data,
    so a map with ``$`` keys compares as a map and is never read as a matcher.
    """
    calls = tuple(calls)
    rows = zip(
        map(_NAME, calls),
        map(_ARGS, calls),
        repeat(None),
        repeat(UNSET),
        repeat(None),
        repeat(None),
        repeat(None),
    )
    return rows_as(Step, rows)


def is_bare(step: Step) -> bool:
    """Whether a step is a tool's name alone (no arguments, rule, result, error or group)."""
    return (
        step.args is ANY_ARGS
        and step.args_mode is None
        and step.result is UNSET
        and step.error is None
        and step.group is None
    )


_NAME = attrgetter("name")
_ARGS = attrgetter("args")


@dataclass(frozen=True, slots=True)
class FieldRule:
    """How one field compares, expected value against actual value."""

    kind: FieldKind = "exact"
    tol: float = 0.0


@dataclass(frozen=True, slots=True)
class ToolRule:
    """Per-tool argument rule.

    ``fields`` maps a key (or a JSONPath starting with ``$``) to its comparator. With
    ``only_fields`` (the field-list form) only those fields are compared; otherwise ``args_mode``
    (or the case's) decides the rest. ``compare`` is ``"module:function"`` replacing all of it.
    """

    args_mode: ArgsMode | None = None
    fields: Mapping[str, FieldRule] = field(default_factory=dict)
    only_fields: bool = False
    compare: str | None = None
    loc: Location | None = None


@dataclass(frozen=True, slots=True)
class CountBound:
    """Inclusive bounds on how often one tool is called."""

    min: int | None = None
    max: int | None = None


TOTAL = "total"
"""The ``latency`` entry that bounds the whole run's wall time rather than one tool's calls."""


@dataclass(frozen=True, slots=True)
class Budget:
    """Inclusive upper bounds on the whole run."""

    calls: int | None = None
    turns: int | None = None
    tokens: int | None = None


@dataclass(frozen=True, slots=True)
class JudgeSpec:
    """A case's ``judge:`` check, as data: a model scores the run against ``rubric`` from 0 to 1.

    ``reference`` shows the model the expected steps; the check passes when the score reaches
    ``threshold``. ``model`` overrides the suite's ``judge_defaults``. ``alone`` is true when the
    case has no other check, so a skipped judge (``--no-judge``) skips the case. The run layer calls
    the model.
    """

    rubric: str
    reference: bool = False
    threshold: float = 0.5
    model: str | None = None
    alone: bool = False


@dataclass(frozen=True, slots=True)
class Expectation:
    """Everything one case checks. ``steps`` is ``None`` when the case has no steps check."""

    steps: tuple[Step, ...] | None = None
    mode: Mode = "strict"
    args_mode: ArgsMode = "exact"
    tools: Mapping[str, ToolRule] = field(default_factory=dict)
    never: tuple[str, ...] = ()
    before: tuple[tuple[str, str], ...] = ()
    calls: Mapping[str, CountBound] = field(default_factory=dict)
    budget: Budget | None = None
    nodes: tuple[tuple[str, ...], ...] | None = None
    answer: Any = UNSET
    threshold: float | None = None
    judge: JudgeSpec | None = None
    latency: Mapping[str, float] = field(default_factory=dict)
    """Upper bounds in milliseconds: per tool on each of its calls, and on the whole run under
    ``TOTAL``."""
    failed_calls: str = "count"
    """``ignore`` leaves calls marked as errors out of steps, calls, never and budget."""
