"""Evaluating the records of a bulk case: what every engine runs on its workers, the same
everywhere.

``evaluate_partition`` reads one partition and evaluates each record with the case's expectation;
``evaluate_records`` does it for records already in hand (a library caller's documents, a Dask bag's
partition). Each record ends as a compact ``RecordResult``: whatever goes wrong in it (a record that
cannot be read, a format that does not fit, an internal error) is that record's error.
"""

from __future__ import annotations

import contextlib
import gc
import json
import re
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from ..errors import TrajrunError
from ..match.evaluate import evaluate
from ..match.expectation import UNSET, Expectation
from ..match.failed import mark_errors
from ..match.plan import Plan
from ..match.quick import QuickPass, quick_pass
from ..sources import read_trajectory
from ..sources.records import Partition, PartitionReader, Record, compile_path
from .bulk_results import WORST, RecordResult, Tally, labels_of

BATCH = 2_000
"""Records a worker evaluates between two messages to the client (progress, and the records
kept)."""
_BREAKS = re.compile(r"\s*[\r\n]+\s*")


@dataclass(frozen=True, slots=True)
class BulkSpec:
    """What evaluating a partition needs, the same on every worker (it is pickled to Dask
    workers)."""

    expect: Expectation
    each: str = "record"
    format: str = "auto"
    select: str | None = None
    id: str | None = None
    keep_all: bool = False
    error_when: Any = UNSET
    """The source's ``error_when``: what a failed call's result matches (``match.failed``)."""


Emit = Callable[[list[RecordResult], int], None]
"""Where a worker sends a batch of kept records and how many records it evaluated for them."""


def evaluate_partition(
    spec: BulkSpec, part: Partition, emit: Emit | None = None
) -> tuple[list[RecordResult], Tally]:
    """Read and evaluate one partition. With ``emit``, kept records go out in batches as they come
    (and none are returned); without, they are returned whole. Kept: every record with ``keep_all``,
    else the first failing ones."""
    reader = PartitionReader(part, spec.each)
    with young_gc_rarely():
        kept, tally = evaluate_records(spec, reader, emit)
    tally.lines = reader.lines
    return kept, tally


@contextlib.contextmanager
def young_gc_rarely() -> Iterator[None]:
    """While a partition is evaluated, collect the young generation as rarely as ``trajrun run``
    does (records build many short-lived objects; a Dask worker keeps Python's defaults otherwise);
    restored after."""
    previous = gc.get_threshold()
    gc.set_threshold(max(previous[0], 100_000), *previous[1:])
    try:
        yield
    finally:
        gc.set_threshold(*previous)


def evaluate_records(
    spec: BulkSpec, records: Iterable[Record], emit: Emit | None = None
) -> tuple[list[RecordResult], Tally]:
    """Evaluate records in order, counting every one and keeping what ``spec`` asks for (see
    ``evaluate_partition``)."""
    plan = _Plan.of(spec)
    tally, kept, failing, since = Tally(), [], 0, 0
    for record in records:
        result, labels = _verdict(spec, record, plan)
        tally.add(result, labels)
        if spec.keep_all or (result.outcome != "passed" and failing < WORST):
            kept.append(result)
            failing += result.outcome != "passed"
        since += 1
        if emit is not None and since >= BATCH:
            emit(kept, since)
            kept, since = [], 0
    if emit is not None and (kept or since):
        emit(kept, since)
        kept = []
    return kept, tally


@dataclass(frozen=True, slots=True)
class _Plan:
    """What evaluating each record of a spec takes, worked out once: the compiled ``select`` and
    ``id`` paths, whether the checks read calls' arguments or results (``details``; if not, records
    are read without them), the expectation's compiled plan, and the quick test of a passing record
    with the score it gives (``match.quick``)."""

    select: Any
    name: Any
    details: bool
    match: Plan
    quick: QuickPass | None
    score: float | None

    @classmethod
    def of(cls, spec: BulkSpec) -> _Plan:
        """The plan of ``spec``."""
        match = Plan(spec.expect)
        quick, score = quick_pass(match) or (None, None)
        details = match.reads_details or spec.error_when is not UNSET
        return cls(compile_path(spec.select), compile_path(spec.id), details, match, quick, score)


def _verdict(spec: BulkSpec, record: Record, plan: _Plan) -> tuple[RecordResult, list[str]]:
    """One record's result and the labels its failures count under; nothing it holds can raise past
    here."""
    if record.error is not None:
        return RecordResult(record.key, None, "error", (), _one_line(f"source: {record.error}")), []
    rid = _record_id(plan.name, record.doc)
    try:
        doc = plan.select(record.doc) if plan.select is not None else record.doc
        run = read_trajectory(doc, spec.format, origin="", details=plan.details)
        if spec.error_when is not UNSET:
            run = mark_errors(run, spec.error_when)
        if plan.quick is not None and plan.quick(run):  # most records
            return RecordResult(record.key, rid, "passed", (), "passed", plan.score), []
        evaluation = evaluate(spec.expect, run, verdict_only=True, plan=plan.match)
    except TrajrunError as exc:
        return RecordResult(record.key, rid, "error", (), _one_line(f"source: {exc}")), []
    except Exception as exc:  # noqa: BLE001 - one record's trouble never stops the others
        last = traceback.format_exception_only(type(exc), exc)[-1].strip()
        return RecordResult(
            record.key, rid, "error", (), f"internal error: {last} (please report it)"
        ), []
    if not (evaluation.errors or evaluation.failures):
        return RecordResult(record.key, rid, "passed", (), "passed", evaluation.score), []
    outcome = "error" if evaluation.errors else "failed"
    failed = tuple(f.check for f in evaluation.failures)
    return (
        RecordResult(
            record.key, rid, outcome, failed, _one_line(evaluation.message()), evaluation.score
        ),
        labels_of(evaluation.failures),
    )


def _record_id(name: Any, doc: Any) -> str | None:
    """The record's id from the case's ``id`` JSONPath: a string as is, another value as JSON;
    ``None`` when the path finds nothing (the record is then named by its file and line)."""
    if name is None:
        return None
    try:
        value = name(doc)
    except TrajrunError:
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _one_line(text: str) -> str:
    """A message on one line."""
    return _BREAKS.sub(" ", text).strip()


def numbered(documents: Iterable[Any]) -> Iterator[Record]:
    """Documents as records keyed by their 0-based position."""
    return (Record(index, doc) for index, doc in enumerate(documents))


def evaluate_documents(
    spec: BulkSpec, documents: Iterable[Any]
) -> tuple[list[RecordResult], Tally]:
    """Evaluate documents in hand (a Dask bag's partition, a library caller's iterable), named by
    position."""
    with young_gc_rarely():
        kept, tally = evaluate_records(spec, numbered(documents))
    tally.lines = tally.total
    return kept, tally
