"""End to end: ``trajrun run --junit-xml`` on two shapes of suite, against a decode-only floor and the peers.

* ``wide``: 100 suites x 100 cases, each with its own 50-call OpenAI message file, every call expected (half
  exact, half partial arguments), modes cycling through all five.
* ``deep``: one suite of 300 cases, each reading a 200-call OpenAI history and checking 20 expected steps
  with partial arguments in ``superset`` mode.

The floor is one process that only decodes the same files: every suite with yaml's CSafeLoader, every
message file with json.load and every call's argument string with json.loads. The peers (agentevals,
openevals) each run in a process of their own doing the same matches in a loop: read the suite with
CSafeLoader, each history with json.load, build the reference messages from the case's steps, call their
``create_trajectory_match_evaluator`` (``in_order``, which they lack, as ``superset``). Every command is timed
as a whole process (wall, start-up included), median of ``--runs``, the commands interleaved by rounds.
Usage: ``python bench/bench_e2e.py [--shape wide|deep]``.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DATA, OUT, PEERS, compile_trajrun, partial, random_calls, save, to_messages  # noqa: E402

MODES = ("strict", "unordered", "superset", "subset", "in_order")
FLOOR = """
import json, sys, time, yaml
from pathlib import Path
root = Path(sys.argv[1]); start = time.perf_counter()
for p in sorted(root.glob("*.suite.yaml")):
    with open(p) as f: yaml.load(f, Loader=yaml.CSafeLoader)
for p in sorted((root / "runs").glob("*.json")):
    with open(p) as f:
        for m in json.load(f):
            for c in m.get("tool_calls") or (): json.loads(c["function"]["arguments"])
print(time.perf_counter() - start)
"""
PEER = """
import json, os, sys, time, yaml
from pathlib import Path
sys.path.insert(0, sys.argv[3])
from common import matcher, to_messages
root, peer = Path(sys.argv[1]), sys.argv[2]; start = time.perf_counter()
evaluators, passed, total = {}, 0, 0
for p in sorted(root.glob("*.suite.yaml")):
    with open(p) as f: suite = yaml.load(f, Loader=yaml.CSafeLoader)
    for case in suite["cases"]:
        case = {**suite.get("defaults", {}), **case}
        mode = "superset" if case["mode"] == "in_order" else case["mode"]
        key = (mode, case["args_mode"])
        if key not in evaluators: evaluators[key] = matcher(peer, *key)
        with open(root / case["source"]) as f: outputs = json.load(f)
        steps = [next(iter(step.items())) for step in case["steps"]]
        passed += evaluators[key](outputs, to_messages(steps, 1, "r"))
        total += 1
print(f"{passed} of {total} passed in {time.perf_counter() - start:.2f} s")
"""


def generate_wide(root: Path, suites: int = 100, cases: int = 100, calls: int = 50) -> None:
    """``suites`` files of ``cases`` cases, each with its own ``calls``-call message file, every call expected."""
    rng = random.Random(5)
    for s in range(suites):
        lines = [f"suite: generated {s:03}", "cases:"]
        for c in range(cases):
            run = random_calls(calls, rng)
            name = f"run_{s:03}_{c:03}.json"
            (root / "runs" / name).write_text(json.dumps(to_messages(run, 1 + c % 3, "call")))
            args_mode = "superset" if c % 2 else "exact"
            steps = partial(run) if args_mode == "superset" else run
            lines += [f"  - name: case {c:03}", f"    source: runs/{name}", f"    mode: {MODES[c % len(MODES)]}",
                      f"    args_mode: {args_mode}", "    steps:"]
            lines += [f"      - {tool}: {json.dumps(args)}" for tool, args in steps]
        (root / f"s{s:03}.suite.yaml").write_text("\n".join(lines) + "\n")


def generate_deep(root: Path, cases: int = 300, calls: int = 200, steps: int = 20) -> None:
    """One suite of ``cases`` cases, each a ``calls``-call history checked against every tenth call, partially."""
    rng = random.Random(7)
    lines = ["suite: deep", "cases:"]
    for c in range(cases):
        run = random_calls(calls, rng)
        name = f"run_{c:03}.json"
        (root / "runs" / name).write_text(json.dumps(to_messages(run, 1 + c % 3, "call")))
        lines += [f"  - name: case {c:03}", f"    source: runs/{name}", "    mode: superset",
                  "    args_mode: superset", "    steps:"]
        lines += [f"      - {tool}: {json.dumps(args)}" for tool, args in partial(run[:: calls // steps])]
    (root / "deep.suite.yaml").write_text("\n".join(lines) + "\n")


SHAPES = {"wide": generate_wide, "deep": generate_deep}


def run_once(cmd: list[str]) -> tuple[float, float, str]:
    """Wall and CPU seconds (user + system, the child's and its children's) of one command and its stdout's
    last line; a crash (not a failing case) stops the bench. CPU time is what a busy neighbour disturbs least."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    took = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    if done.returncode not in (0, 1):
        raise SystemExit(f"{cmd} exited {done.returncode}: {done.stderr[-2000:]}")
    return took, cpu, (done.stdout.strip().splitlines() or [""])[-1]


def commands(root: Path, shape: str, peers: bool) -> dict[str, list[str]]:
    """Every timed command by label: the floor, trajrun -j 1 and -j 2, and (with ``peers``) each peer."""
    trajrun = str(Path(sys.executable).with_name("trajrun"))
    run = [trajrun, "run", str(root), "-q", "--junit-xml"]
    found = {"floor": [sys.executable, "-c", FLOOR, str(root)],
             "j1": [*run, str(OUT / f"e2e-{shape}-j1.xml"), "-j", "1"],
             "j2": [*run, str(OUT / f"e2e-{shape}-j2.xml"), "-j", "2"]}
    if peers:
        here = str(Path(__file__).resolve().parent)
        found.update({peer: [sys.executable, "-c", PEER, str(root), peer, here] for peer in PEERS})
    return found


def time_rounds(cmds: dict[str, list[str]], runs: int) -> tuple[dict[str, list[float]], dict[str, list[float]], dict[str, str]]:
    """Every command once per round, the rounds interleaved: wall and CPU samples by label, and each last line."""
    samples: dict[str, list[float]] = {label: [] for label in cmds}
    cpu: dict[str, list[float]] = {label: [] for label in cmds}
    last: dict[str, str] = {}
    for round_ in range(runs):
        for label, cmd in cmds.items():
            took, spent, last[label] = run_once(cmd)
            samples[label].append(took)
            cpu[label].append(spent)
            print(f"round {round_ + 1} {label}: {took:.2f} s, {spent:.2f} s CPU — {last[label]}", flush=True)
    return samples, cpu, last


def summarize(kind: str, runs: dict[str, list[float]], peers: bool) -> dict[str, object]:
    """Medians and the median of each round's ratio to the floor, printed and returned under ``kind`` (wall, cpu)."""
    medians = {label: statistics.median(s) for label, s in runs.items()}
    ratios = {label: statistics.median(s / f for s, f in zip(runs[label], runs["floor"])) for label in runs}
    for label in runs:
        print(f"{kind} {label}: median {medians[label]:.2f} s, {ratios[label]:.2f}x floor", flush=True)
    if peers:
        faster = min(medians[p] for p in PEERS)
        print(f"{kind}: faster peer / trajrun -j 1: {faster / medians['j1']:.2f}x", flush=True)
    return {f"medians_{kind}": medians, f"ratio_to_floor_{kind}": ratios}


def main() -> None:
    """Generate (unless --keep and present), time every command by rounds, save bench/out/e2e-SHAPE.json."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", choices=SHAPES, default="wide")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--no-peers", action="store_true", help="time only the floor and trajrun")
    parser.add_argument("--keep", action="store_true", help="reuse bench/data/e2e-SHAPE if it exists")
    opts = parser.parse_args()
    root = DATA / f"e2e-{opts.shape}"
    if not (opts.keep and root.exists()):
        shutil.rmtree(root, ignore_errors=True)
        (root / "runs").mkdir(parents=True)
        start = time.perf_counter()
        SHAPES[opts.shape](root)
        print(f"generated in {time.perf_counter() - start:.1f} s", flush=True)
    OUT.mkdir(exist_ok=True)
    compile_trajrun()
    cmds = commands(root, opts.shape, not opts.no_peers)
    samples, cpu, last = time_rounds(cmds, opts.runs)
    result: dict[str, object] = {"shape": opts.shape, "bytes": sum(p.stat().st_size for p in root.rglob("*") if p.is_file()),
                                 "samples": samples, "cpu_samples": cpu, "last_line": last}
    for kind, runs in (("wall", samples), ("cpu", cpu)):
        result.update(summarize(kind, runs, peers=not opts.no_peers))
    save(f"e2e-{opts.shape}", result)


if __name__ == "__main__":
    main()
