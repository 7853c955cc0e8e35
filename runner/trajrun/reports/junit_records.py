"""``--junit-each record``: a bulk case as one JUnit testcase per record, read
back from the per-record lines.

The runner writes every record's line (``--records FILE``, or a temporary file for this option) and
notes where each bulk case's lines are; each line becomes a ``<testcase>`` named ``case [record]``,
with ``<failure>`` or ``<error>`` carrying its one-line message.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from ..run.results import CaseResult

OUTCOME_TAGS = {"failed": "failure", "error": "error"}


def record_lines(case: CaseResult) -> Iterator[dict[str, Any]]:
    """The per-record lines of a bulk case, in order (none when they were not written)."""
    summary = case.bulk
    if summary is None or summary.records_file is None or summary.records_span is None:
        return
    start, end = summary.records_span
    with open(summary.records_file, "rb") as handle:
        handle.seek(start)
        while handle.tell() < end and (line := handle.readline()):
            yield json.loads(line)


def record_outcomes(case: CaseResult) -> Iterator[tuple[str, str | None, str, str]]:
    """Each record of a bulk case as a testcase's parts: its name ``case [record]``, the
    result tag (``failure``, ``error`` or ``None`` for a pass), its one-line message and its
    type (the first failed check)."""
    for line in record_lines(case):
        tag = OUTCOME_TAGS.get(line["outcome"])
        kind = line["checks"][0] if tag == "failure" and line["checks"] else line["outcome"]
        yield f"{case.name} [{line['record']}]", tag, line["message"], kind
