"""Bulk evaluation: one bulk case over N generated records (gzipped JSONL), trajrun's engines against the decode floor.

Records are OpenAI message lists of 10 to 30 calls (1 to 3 per assistant message, each answered by a
tool message), written over ``--files`` gzipped JSONL files; every 97th record calls ``refund_all``.
The suite checks each record: superset steps ``[lookup_user]`` (always called first), ``never:
[refund_all]``, ``budget: {calls: 29}``. Timed as whole processes (wall; CPU of the process tree;
peak RSS per process and of the whole tree, sampled with psutil every 0.1 s):

* floor: one process that only gunzips and ``json.loads`` every line (``gzip.open`` + a line loop);
* ``trajrun run --engine local -j 1`` and ``-j 2``; ``--engine dask -j 2`` (a 2-worker LocalCluster);
  ``-j 1`` again with ``format: openai`` named in the suite (no format detection per record);
* agentevals' superset trajectory match (``tool_args_match_mode="ignore"``, the reference being the
  ``lookup_user`` call) on the same records in a loop, stopped after ``--cap`` seconds and
  extrapolated linearly to N (its cost per record does not depend on the record's position).

``--only stages`` times the parts of one record in this process instead (the first 5,000 records of
part 0, warm caches): decoding, reading (format detected, named, and as the bulk case reads), the
checks, and the bulk loop around them.

Usage: ``python bench/bench_bulk.py [--records 1000000] [--files 8] [--cap 60] [--keep] [--only ...]``.
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import multiprocessing
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DATA, random_calls, save, to_messages  # noqa: E402
from trajrun.match.evaluate import evaluate  # noqa: E402
from trajrun.match.plan import Plan  # noqa: E402
from trajrun.run.bulk_eval import BulkSpec, evaluate_records, young_gc_rarely  # noqa: E402
from trajrun.sources import read_trajectory  # noqa: E402
from trajrun.sources.records import Record  # noqa: E402
from trajrun.suites.load import load_suite  # noqa: E402

ROOT = DATA / "bulk"
STAGE_RECORDS = 5_000
SUITE = """suite: bulk bench
cases:
  - name: production policies
    source: {file: "logs/*.jsonl.gz", each: record, id: $.run_id, select: $.messages}
    mode: superset
    steps: [lookup_user]
    never: [refund_all]
    budget: {calls: 29}
"""
FLOOR = """
import gzip, json, sys, time
from pathlib import Path
start, n = time.perf_counter(), 0
for path in sorted(Path(sys.argv[1]).glob("*.jsonl.gz")):
    with gzip.open(path, "rb") as lines:
        for line in lines:
            json.loads(line)
            n += 1
print(n, time.perf_counter() - start)
"""
PEER = """
import gzip, json, os, sys, time
from pathlib import Path
os.environ.setdefault("LANGSMITH_TRACING", "false")
from agentevals.trajectory.match import create_trajectory_match_evaluator
evaluate = create_trajectory_match_evaluator(trajectory_match_mode="superset", tool_args_match_mode="ignore")
reference = [{"role": "assistant", "content": "", "tool_calls": [{"id": "r", "type": "function",
              "function": {"name": "lookup_user", "arguments": "{}"}}]}]
cap, n, passed, start = float(sys.argv[2]), 0, 0, time.perf_counter()
for path in sorted(Path(sys.argv[1]).glob("*.jsonl.gz")):
    with gzip.open(path, "rb") as lines:
        for line in lines:
            record = json.loads(line)
            passed += bool(evaluate(outputs=record["messages"], reference_outputs=reference)["score"])
            n += 1
            if time.perf_counter() - start > cap:
                break
    if time.perf_counter() - start > cap:
        break
print(n, passed, time.perf_counter() - start)
"""


def record(i: int, rng: random.Random) -> dict[str, Any]:
    """Record ``i``: a ``lookup_user`` call, then 9 to 29 random calls; every 97th calls ``refund_all``."""
    calls = [("lookup_user", {"query": f"u{i}", "limit": 1, "page": 0}), *random_calls(rng.randint(9, 29), rng)]
    if i % 97 == 0:
        calls[len(calls) // 2] = ("refund_all", {"query": "all", "limit": 1, "page": 0})
    return {"run_id": f"run-{i:07d}", "messages": to_messages(calls, 1 + i % 3, "c")}


def write_file(job: tuple[int, int, int]) -> None:
    """One gzipped JSONL file of records ``[first, end)``."""
    index, first, end = job
    rng = random.Random(index)
    with gzip.open(ROOT / "logs" / f"part-{index:03d}.jsonl.gz", "wt", encoding="utf-8", compresslevel=1) as out:
        for i in range(first, end):
            out.write(json.dumps(record(i, rng), separators=(",", ":")) + "\n")


def generate(total: int, files: int) -> None:
    """The records over ``files`` files, written by one process per core, and the suite beside them."""
    shutil.rmtree(ROOT, ignore_errors=True)
    (ROOT / "logs").mkdir(parents=True)
    jobs = [(f, f * total // files, (f + 1) * total // files) for f in range(files)]
    with multiprocessing.Pool() as pool:
        pool.map(write_file, jobs)
    (ROOT / "bulk.suite.yaml").write_text(SUITE)
    (ROOT / "named.suite.yaml").write_text(SUITE.replace("select: $.messages}", "select: $.messages, format: openai}"))
    (ROOT / "size.json").write_text(json.dumps({"records": total, "files": files}))


class Sampler(threading.Thread):
    """Peak RSS of a process tree, per process and in total, and each process's CPU seconds, sampled every 0.1 s."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.root, self.peak_one, self.peak_all, self.done = psutil.Process(pid), 0, 0, threading.Event()
        self.cpu: dict[int, float] = {}

    def run(self) -> None:
        while not self.done.is_set():
            rss = []
            for process in self._tree():
                try:
                    rss.append(process.memory_info().rss)
                    times = process.cpu_times()
                    self.cpu[process.pid] = times.user + times.system
                except psutil.Error:
                    continue
            if rss:
                self.peak_one, self.peak_all = max(self.peak_one, max(rss)), max(self.peak_all, sum(rss))
            self.done.wait(0.1)

    def _tree(self) -> list[psutil.Process]:
        """The process and its descendants, as far as they can be listed."""
        try:
            return [self.root, *self.root.children(recursive=True)]
        except psutil.Error:
            return []


def measured(cmd: list[str], cwd: Path | None = None) -> dict[str, Any]:
    """Wall and CPU seconds of a command's process tree, its peak RSS per process and in total, its last line."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    child = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    sampler = Sampler(child.pid)
    sampler.start()
    out, err = child.communicate()
    wall = time.perf_counter() - start
    sampler.done.set()
    sampler.join()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if child.returncode not in (0, 1):
        raise SystemExit(f"{cmd} exited {child.returncode}: {err[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": wall, "cpu_s": cpu, "peak_rss_mb": sampler.peak_one / 2**20,
            "peak_tree_rss_mb": sampler.peak_all / 2**20, "last_line": (out.strip().splitlines() or [""])[-1],
            "cpu_per_process_s": sorted((round(v, 1) for v in sampler.cpu.values()), reverse=True),
            "load_average": os.getloadavg()}


def stages(repeats: int = 7) -> dict[str, float]:
    """Microseconds per record of each part, in this process (medians of interleaved repeats, CPU time): decode
    (gunzip + ``json.loads``), read_auto / read_named / read_bulk (the message list read with the format detected,
    named, and without call details when the checks read none, as the bulk case does), checks, and loop (the
    bulk loop's own share: ``evaluate_records`` less read_bulk and checks); x_floor: the analog of × floor."""
    with gzip.open(sorted((ROOT / "logs").glob("*.jsonl.gz"))[0], "rb") as lines:
        raw = list(itertools.islice(lines, STAGE_RECORDS))
    packed, docs = gzip.compress(b"".join(raw), 1), [json.loads(line) for line in raw]
    messages = [doc["messages"] for doc in docs]
    expect = load_suite(ROOT / "bulk.suite.yaml").cases[0].expect
    runs, details = [read_trajectory(m, "openai") for m in messages], Plan(expect).reads_details
    spec = BulkSpec(expect, "record", "auto", "$.messages", "$.run_id")
    records = list(map(Record, itertools.count(1), docs))
    work: dict[str, Callable[[], object]] = {
        "decode": lambda: _each(json.loads, gzip.decompress(packed).splitlines()),
        "read_auto": lambda: _each(read_trajectory, messages),
        "read_named": lambda: _each(lambda m: read_trajectory(m, "openai"), messages),
        "read_bulk": lambda: _each(lambda m: read_trajectory(m, details=details), messages),
        "checks": lambda: _each(lambda run: evaluate(expect, run), runs),
        "bulk": lambda: evaluate_records(spec, records),
    }
    seconds: dict[str, list[float]] = {name: [] for name in work}
    with young_gc_rarely():
        for _ in range(repeats):
            for name, run in work.items():
                start = time.process_time()
                run()
                seconds[name].append(time.process_time() - start)
    micro = {name: statistics.median(times) / len(docs) * 1e6 for name, times in seconds.items()}
    micro["loop"] = micro["bulk"] - micro["read_bulk"] - micro["checks"]
    micro["x_floor"] = (micro["decode"] + micro["bulk"]) / micro["decode"]  # decoding and the bulk, against decoding
    return micro


def _each(work: Callable[[Any], object], items: list[Any]) -> None:
    """``work`` on every item, keeping no result: results held alive would make the collector's passes the figure."""
    for item in items:
        work(item)


def main() -> None:
    """Generate (unless --keep finds the same size), time every runner, save bench/out/bulk.json."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--cap", type=float, default=60.0, help="seconds agentevals may run before extrapolating")
    parser.add_argument("--keep", action="store_true", help="reuse bench/data/bulk when it holds as many records")
    parser.add_argument("--only", nargs="*", default=None,
                        help="floor j1 j2 dask j1_named agentevals (default: all), or stages (in this process)")
    opts = parser.parse_args()
    size = ROOT / "size.json"
    wanted = {"records": opts.records, "files": opts.files}
    if not (opts.keep and size.exists() and json.loads(size.read_text()) == wanted):
        start = time.perf_counter()
        generate(opts.records, opts.files)
        print(f"generated {opts.records:,} records in {time.perf_counter() - start:.1f} s", flush=True)
    gz = sum(p.stat().st_size for p in (ROOT / "logs").glob("*.jsonl.gz"))
    result: dict[str, Any] = {"records": opts.records, "files": opts.files, "gzip_bytes": gz}
    trajrun = str(Path(sys.executable).with_name("trajrun"))
    runs = {
        "floor": [sys.executable, "-c", FLOOR, str(ROOT / "logs")],
        "j1": [trajrun, "run", "bulk.suite.yaml", "-q", "-j", "1"],
        "j2": [trajrun, "run", "bulk.suite.yaml", "-q", "-j", "2"],
        "dask": [trajrun, "run", "bulk.suite.yaml", "-q", "--engine", "dask", "-j", "2"],
        "j1_named": [trajrun, "run", "named.suite.yaml", "-q", "-j", "1"],
    }
    if opts.only is not None and "stages" in opts.only:
        result["stages"] = stages()
        print("per record, µs: " + ", ".join(f"{k} {v:.1f}" for k, v in result["stages"].items()), flush=True)
    for label, cmd in runs.items():
        if opts.only is None or label in opts.only:
            result[label] = measured(cmd, ROOT)
            figures = result[label]
            print(f"{label}: {figures['wall_s']:.1f} s wall, {opts.records / figures['wall_s']:,.0f} records/s, "
                  f"cpu {figures['cpu_s']:.1f} s, peak {figures['peak_rss_mb']:.0f} MB/process "
                  f"({figures['peak_tree_rss_mb']:.0f} MB tree) — {figures['last_line']}", flush=True)
    if opts.only is None or "agentevals" in opts.only:
        peer = measured([sys.executable, "-c", PEER, str(ROOT / "logs"), str(opts.cap)])
        n, passed, seconds = peer["last_line"].split()
        peer.update(measured_records=int(n), passed=int(passed), loop_s=float(seconds),
                    extrapolated_s=float(seconds) / int(n) * opts.records)  # fmt: skip
        result["agentevals"] = peer
        print(f"agentevals: {int(n):,} records in {float(seconds):.1f} s -> {peer['extrapolated_s']:.0f} s for "
              f"{opts.records:,} ({int(n) / float(seconds):,.0f} records/s)", flush=True)
    save("bulk", result)


if __name__ == "__main__":
    main()
