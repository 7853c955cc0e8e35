"""trajrun vs agentevals vs openevals on identical OpenAI message lists, every shared mode, exact and partial args.

Two workloads per mode and argument rule: 1,000 matches of 200-call trajectories (50 distinct
pairs, cycled) and one 1,000-call trajectory against itself. trajrun's time includes reading both
message lists (format auto-detected) and building the expectation from the reference's calls.
The peers run ``peer_matches`` of the 1,000 per timing run (they are slow); their figure is scaled
to 1,000 and the table says so. Usage: ``python bench/bench_match.py [--runs 5] [--peer-matches 50]``.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ARGS, MODES, all_matchers, median_of, partial, random_calls, save, to_messages  # noqa: E402


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


def time_workload(func, inputs: list[tuple[list, list]], matches: int, runs: int) -> tuple[tuple[float, float], bool]:
    """Median (CPU, wall) seconds of ``matches`` matches cycling through ``inputs``, and the verdict on the first input."""
    verdict = func(*inputs[0])

    def batch() -> None:
        for i in range(matches):
            func(*inputs[i % len(inputs)])

    return median_of(batch, runs), verdict


def main() -> None:
    """Run every mode and argument rule; print a table and save bench/out/match.json."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--matches", type=int, default=1000)
    parser.add_argument("--peer-matches", type=int, default=50)
    opts = parser.parse_args()
    rows = []
    for args in ARGS:
        small = pairs(200, 50, args, seed=7)
        big = pairs(1000, 1, args, seed=8)
        for mode in MODES:
            for tool, func in all_matchers(mode, ARGS[args]).items():
                n = opts.matches if tool == "trajrun" else opts.peer_matches
                t_small, ok_small = time_workload(func, small, n, opts.runs)
                t_big, ok_big = time_workload(func, big, 1, opts.runs)
                row = {"mode": mode, "args": args, "tool": tool, "measured_matches": n,
                       "cpu_s_per_1000x200": t_small[0] * 1000 / n, "wall_s_per_1000x200": t_small[1] * 1000 / n,
                       "verdict_200": ok_small, "cpu_s_1000_calls": t_big[0], "wall_s_1000_calls": t_big[1],
                       "verdict_1000": ok_big}
                rows.append(row)
                print(f"{args:8} {mode:10} {tool:11} 1000x200: {row['cpu_s_per_1000x200']:8.3f} s cpu"
                      f" ({ok_small})  1x1000: {t_big[0] * 1000:9.1f} ms cpu ({ok_big})", flush=True)
    save("match", {"runs": opts.runs, "matches": opts.matches, "peer_matches": opts.peer_matches, "rows": rows})


if __name__ == "__main__":
    main()
