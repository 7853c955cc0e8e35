"""The match layer alone, by instruction count: ``evaluate`` on runs already read, and a bulk case.

Workloads (every input generated here, the same every time):

* ``deep``: the deep end-to-end shape (§4) in process, 60 of its cases: 20 partial steps in
  ``superset`` mode against a 200-call run.
* ``match``: 10 runs of 200 calls, each against its own calls taken literally and partially
  (``steps_of``), in the four unordered and ordered modes of §1: 80 matches.
* ``worst``: one tool, 1,000 calls, partial arguments, the steps reversed (§3), ``unordered`` and
  ``strict``.
* ``failing``: 40 failing cases of 50 calls (every seventh step expects another page) with
  ``never`` and ``budget``: the steps report with its table and nearest calls.
* ``bulk``: 1,000 records shaped as §7's (reading included), through ``evaluate_documents``.

``python bench/bench_match_layer.py WORKLOAD REPS`` runs one; ``--count WORKLOAD...`` runs each under
``valgrind --tool=callgrind`` with 1 and 3 repetitions and prints the instructions of one (the
difference, halved: start-up, imports and generating the inputs cancel out). Run it with
``PYTHONPATH`` naming the tree to measure, ``PYTHONHASHSEED=0`` for repeatable counts.
"""

from __future__ import annotations

import gc
import os
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import partial, random_calls, to_messages  # noqa: E402

from trajrun import Expectation, evaluate, read_trajectory, steps_of  # noqa: E402
from trajrun.match.expectation import Budget, Step  # noqa: E402
from trajrun.run.bulk_eval import BulkSpec, evaluate_documents  # noqa: E402

Work = list[tuple[Expectation, Any]]


def deep(rng: random.Random) -> Work:
    """60 cases of the deep shape."""
    work = []
    for c in range(60):
        run = random_calls(200, rng)
        traj = read_trajectory(to_messages(run, 1 + c % 3, "call"))
        steps = tuple(Step(n, a) for n, a in partial(run[::10]))
        work.append((Expectation(steps=steps, mode="superset", args_mode="superset"), traj))
    return work


def match(rng: random.Random) -> Work:
    """10 runs against their reference, exact and partial, in four modes."""
    work = []
    for c in range(10):
        run = random_calls(200, rng)
        traj = read_trajectory(to_messages(run, 1 + c % 3, "call"))
        for args_mode, ref in (("exact", run), ("superset", partial(run))):
            steps = steps_of(read_trajectory(to_messages(ref, 1 + c % 2, "r")).calls)
            for mode in ("strict", "unordered", "subset", "superset"):
                expect = Expectation(steps=steps, mode=mode, args_mode=args_mode)  # type: ignore[arg-type]
                work.append((expect, traj))
    return work


def worst(rng: random.Random) -> Work:
    """The reversed one-tool worst case of 1,000 calls."""
    calls = [("search", {"query": f"q{i}", "page": i % 5}) for i in range(1000)]
    traj = read_trajectory(to_messages(calls, 1, "c"))
    steps = tuple(Step(n, {"query": a["query"]}) for n, a in reversed(calls))
    return [(Expectation(steps=steps, mode=m, args_mode="superset"), traj) for m in ("unordered", "strict")]


def failing(rng: random.Random) -> Work:
    """40 failing cases, whose reports are written out."""
    work = []
    for c in range(20):
        run = random_calls(50, rng)
        traj = read_trajectory(to_messages(run, 1 + c % 3, "call"))
        ref = [(n, {**a, "page": 9}) if i % 7 == 3 else (n, a) for i, (n, a) in enumerate(run)]
        steps = tuple(Step(n, a) for n, a in ref)
        for mode in ("strict", "unordered"):
            expect = Expectation(steps=steps, mode=mode, never=("calc",), budget=Budget(calls=40))  # type: ignore[arg-type]
            work.append((expect, traj))
    return work


def bulk_docs(rng: random.Random) -> list[dict[str, Any]]:
    """1,000 records as ``bench_bulk.record`` makes them."""
    out = []
    for i in range(1000):
        calls = [("lookup_user", {"query": f"u{i}", "limit": 1, "page": 0}), *random_calls(rng.randint(9, 29), rng)]
        if i % 97 == 0:
            calls[len(calls) // 2] = ("refund_all", {"query": "all", "limit": 1, "page": 0})
        out.append({"run_id": f"run-{i:07d}", "messages": to_messages(calls, 1 + i % 3, "c")})
    return out


WORKLOADS = {"deep": deep, "match": match, "worst": worst, "failing": failing}


def run(name: str, reps: int) -> None:
    """One workload, ``reps`` times over; the inputs are built first and frozen out of the collector's
    sight, so its passes walk only what the repetitions make."""
    rng = random.Random(7)
    if name == "bulk":
        docs = bulk_docs(rng)
        expect = Expectation(steps=(Step("lookup_user"),), mode="superset", never=("refund_all",),
                             budget=Budget(calls=29))
        spec = BulkSpec(expect, select="$.messages", id="$.run_id")
        gc.collect()
        gc.freeze()
        for _ in range(reps):
            evaluate_documents(spec, docs)
        return
    work = WORKLOADS[name](rng)
    gc.collect()
    gc.freeze()
    for _ in range(reps):
        for expect, traj in work:
            evaluate(expect, traj)


def count(name: str) -> int:
    """Instructions of one repetition of a workload (callgrind, 3 repetitions less 1, halved)."""
    subprocess.run([sys.executable, __file__, name, "0"], check=True)  # bytecode compiled before counting
    found = []
    for reps in (1, 3):
        done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
                               __file__, name, str(reps)], capture_output=True, text=True, check=True,
                              env={**os.environ, "PYTHONHASHSEED": "0"})
        found.append(int(re.findall(r"Collected : (\d+)", done.stderr)[-1]))
    return (found[1] - found[0]) // 2


def main() -> None:
    if sys.argv[1] == "--count":
        for name in sys.argv[2:]:
            print(f"{name}: {count(name):,} instructions", flush=True)
    else:
        run(sys.argv[1], int(sys.argv[2]))


if __name__ == "__main__":
    main()
