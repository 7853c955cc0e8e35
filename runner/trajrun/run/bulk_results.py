"""Results of bulk cases: one record's verdict, a partition's tally, and a case's counts and worst
records.

Workers send back compact ``RecordResult`` tuples (every record when the run writes them out with
``--records`` or ``--junit-each record``, else only each partition's first failing ones) and one
``Tally`` per partition. ``Aggregate`` takes them in partition order on the client, names each
record (a partition's line numbers become the file's), writes the ``--records`` lines and builds
the case's ``BulkSummary``. Nothing here holds more than the worst records and the counts.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import IO, Any, NamedTuple

from ..errors import inline

WORST = 20
"""How many failing records a bulk case's report lists (the first ones, in record order)."""
LABELLED = ("never", "before")
"""Checks counted apart by what their summary names (``never (refund_all)``); others by name
alone."""
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class RecordResult(NamedTuple):
    """One record's verdict, as a worker sends it: ``key`` as the reader named the record, ``id``
    from the case's ``id`` JSONPath (``None``: named by its file and line), ``outcome`` passed,
    failed or error."""

    key: int | str
    id: str | None
    outcome: str
    checks: tuple[str, ...] = ()
    message: str = "passed"
    score: float | None = None


class RecordLine(NamedTuple):
    """A record as reports show it: its id, outcome, failed checks, one-line message and score."""

    record: str
    outcome: str
    checks: tuple[str, ...]
    message: str
    score: float | None

    def to_dict(self, case: str | None = None) -> dict[str, Any]:
        """The JSON shape of a ``--records`` line (with ``case``) or of a JSON report's worst
        record."""
        head = {"case": case} if case is not None else {}
        return {
            **head,
            "record": self.record,
            "outcome": self.outcome,
            "checks": list(self.checks),
            "message": self.message,
            "score": None if self.score is None else round(self.score, 6),
        }


@dataclass
class Tally:
    """A partition's counts: records per outcome, failures per check label, the score sum, and the
    lines it read."""

    lines: int = 0
    passed: int = 0
    failed: int = 0
    error: int = 0
    by_check: Counter[str] = field(default_factory=Counter)
    score_sum: float = 0.0
    scored: int = 0

    def add(self, result: RecordResult, labels: Iterable[str]) -> None:
        """Count one record."""
        if result.outcome == "passed":
            self.passed += 1
        elif result.outcome == "failed":
            self.failed += 1
        else:
            self.error += 1
        if labels:  # Counter.update is not free even with nothing to count
            self.by_check.update(labels)
        if result.score is not None:
            self.score_sum += result.score
            self.scored += 1

    def merge(self, other: Tally) -> None:
        """Add another partition's counts (not its lines: those are per file)."""
        self.passed += other.passed
        self.failed += other.failed
        self.error += other.error
        self.by_check.update(other.by_check)
        self.score_sum += other.score_sum
        self.scored += other.scored

    @property
    def total(self) -> int:
        """Records counted."""
        return self.passed + self.failed + self.error


@dataclass(frozen=True, slots=True)
class BulkSummary:
    """A bulk case's verdict over every record: counts, failures per check, the first failing
    records, the mean score, the share that must pass, and where the per-record lines went
    (``records_file``, byte span)."""

    each: str
    files: int
    total: int
    passed: int
    failed: int
    error: int
    by_check: tuple[tuple[str, int], ...] = ()
    worst: tuple[RecordLine, ...] = ()
    score: float | None = None
    pass_rate: float = 1.0
    engine: str = "local"
    records_file: str | None = None
    records_span: tuple[int, int] | None = None

    @property
    def share(self) -> float:
        """The share of records that passed (0 with no record)."""
        return self.passed / self.total if self.total else 0.0

    @property
    def ok(self) -> bool:
        """Whether enough records passed: every one by default, ``pass_rate`` of them when set."""
        return self.total > 0 and (
            self.passed == self.total or (self.pass_rate < 1 and self.share >= self.pass_rate)
        )

    def message(self) -> str:
        """One line:
        ``37 of 1,000,000 records failed: never (refund_all) 30, budget 7; 2 erred``."""
        bad = self.failed + self.error
        rate = (
            f" ({self.share:.2%} passed, pass_rate {self.pass_rate:g})"
            if self.pass_rate < 1
            else ""
        )
        counts = ", ".join(f"{label} {n:,}" for label, n in self.by_check)
        line = f"{bad:,} of {self.total:,} record{'s' if self.total != 1 else ''} failed{rate}"
        line += f": {counts}" if counts else ""
        return line + (f"; {self.error:,} erred" if self.error else "")

    def details(self) -> str:
        """The body: counts by check, then the first failing records with their one-line messages
        (record ids and messages escaped by ``inline``: they come from the records)."""
        counts = f"{self.passed:,} passed, {self.failed:,} failed, {self.error:,} erred"
        files = f"{self.files:,} file{'s' if self.files != 1 else ''}"
        lines = [f"records: {self.total:,} ({counts}) from {files}"]
        if self.by_check:
            width = max(len(label) for label, _ in self.by_check)
            lines += [
                "",
                "failures by check:",
                *(f"  {label.ljust(width)}  {n:,}" for label, n in self.by_check),
            ]
        if self.worst:
            bad = self.failed + self.error
            head = (
                f"first {len(self.worst)} failing records"
                if bad > len(self.worst)
                else "failing records"
            )
            ids = [inline(r.record) for r in self.worst]
            width = max(map(len, ids))
            lines += ["", f"{head}:"]
            lines += (
                f"  {rid.ljust(width)}  {r.outcome:<6}  {inline(r.message)}"
                for rid, r in zip(ids, self.worst, strict=True)
            )
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """The JSON report's ``bulk`` object."""
        return {
            "each": self.each,
            "files": self.files,
            "records": self.total,
            "passed": self.passed,
            "failed": self.failed,
            "error": self.error,
            "passed_share": round(self.share, 6),
            "pass_rate": self.pass_rate,
            "by_check": dict(self.by_check),
            "worst": [r.to_dict() for r in self.worst],
            "score": None if self.score is None else round(self.score, 6),
            "engine": self.engine,
            "records_file": self.records_file,
        }


def labels_of(failures: Iterable[Any]) -> list[str]:
    """The labels a record's failed checks are counted under: ``never (refund_all)``, ``budget``."""
    return [
        f"{f.check} ({f.summary})" if f.check in LABELLED and f.summary else f.check
        for f in failures
    ]


class Aggregate:
    """Takes partitions' results in order on the client: names the records, writes ``--records``
    lines, counts."""

    def __init__(
        self,
        case_id: str,
        sink: IO[str] | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> None:
        self.case_id, self.sink, self.progress = case_id, sink, progress
        self.tally = Tally()
        self.worst: list[RecordLine] = []
        self.offsets: dict[str, int] = {}
        self.seen = 0

    def records(
        self, path: str, start: int, results: Iterable[RecordResult], evaluated: int = 0
    ) -> None:
        """A batch of one partition's records (``path``, byte ``start``), in order; ``evaluated``
        records were read for it in all (the batch may hold only the failing ones)."""
        offset = self.offsets.get(path, 0) if start else 0
        for result in results:
            if result.outcome == "passed" and self.sink is None:
                continue
            rid = result.id or _default_id(path, offset, result.key)
            line = RecordLine(rid, result.outcome, result.checks, result.message, result.score)
            if self.sink is not None:
                self.sink.write(_json_line(line.to_dict(self.case_id)))
            if result.outcome != "passed" and len(self.worst) < WORST:
                self.worst.append(line)
        self.seen += evaluated
        if self.progress is not None and evaluated:
            self.progress(self.seen)

    def finish(self, path: str, start: int, tally: Tally) -> None:
        """A partition is done: its counts, and its lines for the line numbers of the file's next
        partition."""
        self.tally.merge(tally)
        self.offsets[path] = (self.offsets.get(path, 0) if start else 0) + tally.lines

    def summary(self, each: str, files: int, pass_rate: float, engine: str) -> BulkSummary:
        """The case's summary once every partition is in."""
        t = self.tally
        ranked = tuple(sorted(t.by_check.items(), key=lambda item: (-item[1], item[0])))
        score = t.score_sum / t.scored if t.scored else None
        return BulkSummary(
            each,
            files,
            t.total,
            t.passed,
            t.failed,
            t.error,
            ranked,
            tuple(self.worst),
            score=score,
            pass_rate=pass_rate,
            engine=engine,
        )


def _json_line(data: dict[str, Any]) -> str:
    """One ``--records`` line: UTF-8 JSON, or escaped ASCII when some string holds a lone surrogate
    (which UTF-8 cannot carry; ``\\ud800`` reads back the same), as the JSON report writes it."""
    text = json.dumps(data, ensure_ascii=False, default=str)
    if _LONE_SURROGATE.search(text):
        text = json.dumps(data, ensure_ascii=True, default=str)
    return text + "\n"


def _default_id(path: str, offset: int, key: int | str) -> str:
    """A record named by where it is: ``file:line`` for a JSONL line, its number for a document of
    an iterable."""
    if isinstance(key, str):
        return key
    return f"{path}:{offset + key}" if path else str(offset + key)
