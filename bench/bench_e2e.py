"""End to end: ``trajrun run --junit-xml`` over 100 suites x 100 cases x 50-call message files, against a decode-only floor.

The floor is one process that only decodes the same files: every suite with yaml's CSafeLoader
and every message file with json.load. Both are timed as whole processes (wall, start-up
included), median of ``--runs`` (default 1: a full run takes minutes); trajrun with -j 1 and -j 2,
as installed. Usage: ``python bench/bench_e2e.py``.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DATA, OUT, partial, random_calls, save, to_messages  # noqa: E402

ROOT = DATA / "e2e"
MODES = ("strict", "unordered", "superset", "subset", "in_order")
FLOOR = """
import json, sys, time, yaml
from pathlib import Path
root = Path(sys.argv[1]); start = time.perf_counter()
for p in sorted(root.glob("*.suite.yaml")):
    with open(p) as f: yaml.load(f, Loader=yaml.CSafeLoader)
for p in sorted((root / "runs").glob("*.json")):
    with open(p) as f: json.load(f)
print(time.perf_counter() - start)
"""


def generate(suites: int, cases: int, calls: int) -> None:
    """Write the suites and one OpenAI message file per case under bench/data/e2e/."""
    shutil.rmtree(ROOT, ignore_errors=True)
    (ROOT / "runs").mkdir(parents=True)
    rng = random.Random(5)
    for s in range(suites):
        lines = [f"suite: generated {s:03}", "cases:"]
        for c in range(cases):
            run = random_calls(calls, rng)
            name = f"run_{s:03}_{c:03}.json"
            (ROOT / "runs" / name).write_text(json.dumps(to_messages(run, 1 + c % 3, "call")))
            args_mode = "superset" if c % 2 else "exact"
            steps = partial(run) if args_mode == "superset" else run
            lines += [f"  - name: case {c:03}", f"    source: runs/{name}", f"    mode: {MODES[c % len(MODES)]}",
                      f"    args_mode: {args_mode}", "    steps:"]
            lines += [f"      - {tool}: {json.dumps(args)}" for tool, args in steps]
        (ROOT / f"s{s:03}.suite.yaml").write_text("\n".join(lines) + "\n")


def wall(cmd: list[str], runs: int) -> tuple[float, list[float], str]:
    """Median wall seconds of a command, every sample, and the last stdout's last line."""
    samples, last = [], ""
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        samples.append(time.perf_counter() - start)
        last = (done.stdout.strip().splitlines() or [""])[-1]
        if done.returncode not in (0, 1):
            raise SystemExit(f"{cmd} exited {done.returncode}: {done.stderr[-2000:]}")
    return statistics.median(samples), samples, last


def main() -> None:
    """Generate (unless --keep and present), time the floor and trajrun -j 1 / -j 2, save bench/out/e2e.json."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--suites", type=int, default=100)
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--keep", action="store_true", help="reuse bench/data/e2e if it exists")
    opts = parser.parse_args()
    if not (opts.keep and ROOT.exists()):
        start = time.perf_counter()
        generate(opts.suites, opts.cases, opts.calls)
        print(f"generated in {time.perf_counter() - start:.1f} s", flush=True)
    OUT.mkdir(exist_ok=True)
    size = sum(p.stat().st_size for p in ROOT.rglob("*") if p.is_file())
    floor, floor_samples, inproc = wall([sys.executable, "-c", FLOOR, str(ROOT)], opts.runs)
    print(f"floor: {floor:.2f} s (decode only, in process {float(inproc):.2f} s)", flush=True)
    trajrun = str(Path(sys.executable).with_name("trajrun"))
    result = {"suites": opts.suites, "cases": opts.suites * opts.cases, "calls_per_file": opts.calls,
              "bytes": size, "floor_wall_s": floor, "floor_samples": floor_samples, "floor_decode_s": float(inproc)}
    for label, command, jobs in (("j1", [trajrun], 1), ("j2", [trajrun], 2)):
        cmd = [*command, "run", str(ROOT), "--junit-xml", str(OUT / f"e2e-{label}.xml"), "-q", "-j", str(jobs)]
        median, samples, summary = wall(cmd, opts.runs)
        result[f"{label}_wall_s"], result[f"{label}_samples"], result[f"{label}_summary"] = median, samples, summary
        print(f"{label}: {median:.2f} s ({median / floor:.2f}x floor) — {summary}", flush=True)
    save("e2e", result)


if __name__ == "__main__":
    main()
