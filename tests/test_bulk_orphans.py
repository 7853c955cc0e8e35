"""Bulk workers end with trajrun however it ends: ``kill -9`` of trajrun while its ``-j 2`` bulk
workers (or the workers of the Dask cluster it started) are inside a partition leaves none of them
running."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from bulk_logs import line
from test_reliability_children import gone, kill_left, wait_until

pytestmark = pytest.mark.skipif(os.name != "posix", reason="signals are POSIX")

# a compare function the step calls on each record: it notes its worker's pid, then never returns
HANG = """
import os, pathlib, time

def forever(expected, actual):
    pathlib.Path("pids", str(os.getpid())).touch()
    time.sleep(300)
"""
SUITE = """cases:
  - name: hangs
    source: {file: "logs/*.jsonl", each: record, select: $.messages}
    mode: superset
    steps: [{lookup_customer: {n: 0}}]
    tools: {lookup_customer: {compare: "hang:forever"}}
"""


@pytest.mark.parametrize("engine", ["local", "dask"])
def test_sigkill_of_trajrun_mid_partition_ends_its_bulk_workers(tmp_path: Path,
                                                                engine: str) -> None:
    """Two partitions, each held by a worker inside a record; ``kill -9`` of trajrun: both workers
    are gone within seconds (local ones lived on until they next wrote to their pipe)."""
    if engine == "dask":
        pytest.importorskip("distributed")
    (tmp_path / "hang.py").write_text(HANG)
    (tmp_path / "hang.suite.yaml").write_text(SUITE)
    (tmp_path / "logs").mkdir()
    (tmp_path / "pids").mkdir()
    for name in ("a", "b"):
        (tmp_path / "logs" / f"{name}.jsonl").write_text(line(0) + line(1))
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}  # the compare function, in every worker
    command = [sys.executable, "-m", "trajrun", "run", "hang.suite.yaml", "-j", "2", "--engine",
               engine]
    proc = subprocess.Popen(command, cwd=tmp_path, env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pids: list[int] = []
    try:
        assert wait_until(lambda: len(list((tmp_path / "pids").iterdir())) == 2, 60)
        pids = [int(p.name) for p in (tmp_path / "pids").iterdir()]
        assert proc.pid not in pids
        proc.kill()
        proc.wait(30)
        left = lambda: [pid for pid in pids if not gone(pid)]  # noqa: E731
        assert wait_until(lambda: not left(), 10), json.dumps(left())
    finally:
        kill_left([proc.pid, *pids])
