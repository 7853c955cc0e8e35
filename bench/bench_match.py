"""trajrun vs agentevals vs openevals on identical OpenAI message lists, every shared mode, exact and partial args.

Two workloads per mode and argument rule: 1,000 matches of 200-call trajectories (50 distinct
pairs, cycled) and one 1,000-call trajectory against itself. trajrun's time includes reading both
message lists (format auto-detected) and building the expectation from the reference's calls.
``floor`` is no matcher but a cost reference: the bare walk-decode-compare any pure-Python tool must do.

Each tool runs in its own process, as a user would run it: only its own imports on the heap, no
other tool's garbage or cold caches in between. A round starts one process per tool in turn
(so a slow spell on a shared machine hits every tool); each process times every mode once, each
timed batch after an untimed one. Figures are medians over the rounds. The peers run
``peer_matches`` of the 1,000 per batch (they are slow), scaled to 1,000 in the table.
Usage: ``python bench/bench_match.py [--runs 5] [--peer-matches 50]``.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ARGS, MODES, PEERS, matcher, partial, random_calls, save, timed, to_messages  # noqa: E402

TOOLS = ("trajrun", *PEERS, "floor")


def pairs(n_calls: int, count: int, args: str, seed: int) -> list[tuple[list, list]]:
    """``count`` (outputs, reference) message-list pairs; partial args keep only ``query`` in the reference."""
    rng = random.Random(seed)
    out = []
    for k in range(count):
        calls = random_calls(n_calls, rng)
        per_turn = 1 + k % 3
        ref = partial(calls) if args == "partial" else calls
        out.append((to_messages(calls, per_turn, "o"), to_messages(ref, per_turn, "r")))
    return out


def batch(func: Callable[..., bool], inputs: list[tuple[list, list]], matches: int) -> Callable[[], None]:
    """``matches`` matches cycling through ``inputs``, as one timed call."""

    def run() -> None:
        for i in range(matches):
            func(*inputs[i % len(inputs)])

    return run


def warm_timed(run: Callable[[], None]) -> tuple[float, float]:
    """(CPU, wall) seconds of ``run`` after one untimed call of it."""
    run()
    return timed(run)


def worker(tool: str, matches: int) -> dict[str, dict[str, object]]:
    """One round of one tool: every argument rule and mode, both workloads, in this process."""
    out: dict[str, dict[str, object]] = {}
    for args in ARGS:
        small, big = pairs(200, 50, args, seed=7), pairs(1000, 1, args, seed=8)
        for mode in MODES:
            func = matcher(tool, mode, ARGS[args])
            t_small, t_big = warm_timed(batch(func, small, matches)), warm_timed(batch(func, big, 1))
            out[f"{args} {mode}"] = {"small": t_small, "big": t_big,
                                     "verdict_200": func(*small[0]), "verdict_1000": func(*big[0])}  # fmt: skip
    return out


def run_worker(tool: str, matches: int) -> dict[str, dict[str, object]]:
    """``worker`` in a fresh process (this script with ``--worker``)."""
    command = [sys.executable, __file__, "--worker", tool, "--matches", str(matches)]
    proc = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def rows_of(rounds: dict[str, list[dict[str, dict]]], counts: dict[str, int]) -> list[dict[str, object]]:
    """One row per tool, argument rule and mode: medians over the rounds, per 1,000 matches."""
    rows = []
    for args in ARGS:
        for mode in MODES:
            for tool in TOOLS:
                got = [r[f"{args} {mode}"] for r in rounds[tool]]
                n = counts[tool]

                def median(workload: str, i: int) -> float:
                    return statistics.median(g[workload][i] for g in got)

                rows.append({"mode": mode, "args": args, "tool": tool, "measured_matches": n, "rounds": len(got),
                             "cpu_s_per_1000x200": median("small", 0) * 1000 / n,
                             "wall_s_per_1000x200": median("small", 1) * 1000 / n, "verdict_200": got[0]["verdict_200"],
                             "cpu_s_1000_calls": median("big", 0), "wall_s_1000_calls": median("big", 1),
                             "verdict_1000": got[0]["verdict_1000"]})  # fmt: skip
    return rows


def main() -> None:
    """Run every round; print a line per tool and mode and save bench/out/match.json."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="rounds (one process per tool each)")
    parser.add_argument("--matches", type=int, default=1000)
    parser.add_argument("--peer-matches", type=int, default=50)
    parser.add_argument("--worker", choices=TOOLS, help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.worker:
        print(json.dumps(worker(opts.worker, opts.matches)))
        return
    counts = {tool: opts.peer_matches if tool in PEERS else opts.matches for tool in TOOLS}
    rounds: dict[str, list[dict[str, dict]]] = {tool: [] for tool in TOOLS}
    for k in range(opts.runs):
        for tool in TOOLS:
            rounds[tool].append(run_worker(tool, counts[tool]))
        print(f"round {k + 1}/{opts.runs} done", flush=True)
    rows = rows_of(rounds, counts)
    for row in rows:
        print(f"{row['args']:8} {row['mode']:10} {row['tool']:11} 1000x200: {row['cpu_s_per_1000x200']:8.3f} s cpu"
              f" ({row['verdict_200']})  1x1000: {row['cpu_s_1000_calls'] * 1000:9.1f} ms cpu ({row['verdict_1000']})")
    save("match", {"runs": opts.runs, "matches": opts.matches, "peer_matches": opts.peer_matches, "rows": rows})


if __name__ == "__main__":
    main()
