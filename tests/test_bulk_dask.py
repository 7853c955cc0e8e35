"""``--engine dask``: a bulk case on a ``LocalCluster`` of two worker processes gives what ``--engine local`` gives.

One cluster serves the module (starting one takes a few seconds); it is closed cleanly at the end.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trajrun
from bulk_logs import expected, record, write_logs
from trajrun.run import dask_engine
from trajrun.run.bulk import BulkOptions
from trajrun.run.runner import RunOptions, run_paths

@pytest.fixture(scope="module")
def distributed() -> Any:
    """dask.distributed, imported by the worker that runs these tests rather than by every worker's collection."""
    return pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def scheduler(distributed: Any) -> Iterator[str]:
    """The address of a two-process ``LocalCluster`` on 127.0.0.1."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        yield cluster.scheduler_address


def run_bulk(folder: Path, records: str, **options: object) -> trajrun.CaseResult:
    """The folder's one bulk case, its records written to ``records``."""
    bulk = BulkOptions(records=folder / records, split=20_000, **options)  # type: ignore[arg-type]
    [case] = run_paths([folder / "prod.suite.yaml"], RunOptions(root=folder, bulk=bulk)).cases
    return case


def test_dask_gives_the_same_outcomes_in_the_same_order_as_local(tmp_path: Path, scheduler: str) -> None:
    write_logs(tmp_path, 400, files=3)
    (tmp_path / "logs" / "plain.jsonl").write_text("".join(json.dumps(record(i)) + "\n" for i in range(400, 500)))
    local = run_bulk(tmp_path, "local.jsonl")
    dask = run_bulk(tmp_path, "dask.jsonl", engine="dask", scheduler=scheduler)
    assert (tmp_path / "local.jsonl").read_bytes() == (tmp_path / "dask.jsonl").read_bytes()
    assert (dask.outcome, dask.message, dask.details) == (local.outcome, local.message, local.details)
    assert dict(dask.bulk.by_check) == expected(range(400)) and dask.bulk.engine == "dask"


def test_a_dask_bag_of_documents_is_evaluated_in_order(scheduler: str, distributed: Any) -> None:
    bag = pytest.importorskip("dask.bag")
    documents = bag.from_sequence([record(i) for i in range(200)], npartitions=4)
    with distributed.Client(scheduler):
        summary = trajrun.evaluate_bulk(trajrun.Expectation(never=("refund_all",)), documents, select="$.messages")
    assert (summary.total, summary.failed, summary.engine) == (200, 6, "dask")
    assert [r.record for r in summary.worst] == ["0", "37", "74", "111", "148", "185"]


def test_an_unreachable_scheduler_is_a_case_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, distributed: Any) -> None:
    monkeypatch.setattr(dask_engine, "CONNECT_TIMEOUT", 0.5)
    write_logs(tmp_path, 10)
    case = run_bulk(tmp_path, "r.jsonl", engine="dask", scheduler="tcp://127.0.0.1:9")
    assert case.outcome == "error"
    assert "cannot reach the Dask scheduler at tcp://127.0.0.1:9 (from --scheduler)" in case.message
