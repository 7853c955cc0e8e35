"""Scaling: one match of N calls (10 … 10,000) per mode, a typical and a worst-case workload, trajrun vs peers.

typical: 8 tools, exact arguments, the actual run equal to the reference.
worst: every call the same tool, partial arguments (the reference keeps only ``query``), the
reference in reversed order. Times are CPU seconds of trajrun_match / the peers' evaluators on
message lists (extraction included). A peer measurement predicted (quadratic from the previous
size) or found to exceed ``--cap`` seconds is marked timed out. Usage: ``python bench/bench_scaling.py``.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import MODES, median_of, partial, peer_evaluators, random_calls, save, to_messages, trajrun_match  # noqa: E402

SIZES = (10, 100, 1000, 10000)


def workload(kind: str, n: int) -> tuple[list, list, str]:
    """(outputs, reference, argument rule) message lists for one size."""
    rng = random.Random(n)
    if kind == "typical":
        calls = random_calls(n, rng)
        return to_messages(calls, 1, "o"), to_messages(calls, 1, "r"), "exact"
    calls = random_calls(n, rng, ("search",))
    return to_messages(calls, 1, "o"), to_messages(partial(calls)[::-1], 1, "r"), "superset"


def main() -> None:
    """Measure every size, workload, mode and tool; save bench/out/scaling.json."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--cap", type=float, default=60.0)
    opts = parser.parse_args()
    rows = []
    last: dict[tuple[str, str, str], float] = {}
    for kind in ("typical", "worst"):
        for n in SIZES:
            out, ref, rule = workload(kind, n)
            for mode in (*MODES, "in_order"):
                tools = {"trajrun": lambda o, r, m=mode: trajrun_match(m, rule, o, r)}
                if mode != "in_order":
                    tools.update(peer_evaluators(mode, rule))
                for tool, func in tools.items():
                    row = _measure(tool, func, out, ref, opts, last.get((kind, mode, tool)), n)
                    row.update(kind=kind, n=n, mode=mode, tool=tool)
                    rows.append(row)
                    if row.get("cpu_s") is not None:
                        last[(kind, mode, tool)] = row["cpu_s"]
                    shown = f"{row['cpu_s'] * 1000:10.1f} ms" if row.get("cpu_s") is not None else f"timed out ({row['note']})"
                    print(f"{kind:8} {n:6} {mode:10} {tool:11} {shown} {row.get('verdict', '')}", flush=True)
            save("scaling", {"runs": opts.runs, "cap_s": opts.cap, "rows": rows})


def _measure(tool: str, func, out: list, ref: list, opts, previous: float | None, n: int) -> dict:
    """One measurement: trajrun always, ``--runs`` times; a peer once per size from 1,000 calls up, unless over the cap."""
    if tool != "trajrun" and previous is not None and previous * 100 > opts.cap and n >= 1000:
        return {"cpu_s": None, "wall_s": None, "note": f"predicted {previous * 100:.0f} s > {opts.cap:.0f} s cap"}
    runs = opts.runs if tool == "trajrun" or n < 1000 else 1
    verdict = func(out, ref)
    cpu, wall = median_of(lambda: func(out, ref), runs)
    if tool != "trajrun" and wall > opts.cap:
        return {"cpu_s": None, "wall_s": wall, "note": f"took {wall:.0f} s > {opts.cap:.0f} s cap", "verdict": verdict}
    return {"cpu_s": cpu, "wall_s": wall, "runs": runs, "verdict": verdict}


if __name__ == "__main__":
    main()
