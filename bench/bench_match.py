"""trajrun vs agentevals vs openevals on identical OpenAI message lists, every shared mode, exact and partial args.

Two workloads per mode and argument rule: 1,000 matches of 200-call trajectories (50 distinct
pairs, cycled) and one 1,000-call trajectory against itself. trajrun's time includes reading both
message lists (format auto-detected) and building the expectation from the reference's calls.
``floor`` is no matcher but a cost reference: the bare walk-decode-compare any pure-Python tool must do.
The peers run ``peer_matches`` of the 1,000 per timing run (they are slow); their figure is scaled
to 1,000 and the table says so. Usage: ``python bench/bench_match.py [--runs 5] [--peer-matches 50]``.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ARGS, MODES, all_matchers, floor_match, partial, random_calls, save, timed, to_messages  # noqa: E402


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


def interleaved(batches: dict[str, Callable[[], None]], runs: int) -> dict[str, tuple[float, float]]:
    """Median (CPU, wall) seconds per tool, the tools' runs interleaved so a slow spell on a shared machine hits all.

    Each timed run follows an untimed one of the same tool, so no tool pays for the caches the previous one left cold.
    """
    samples: dict[str, list[tuple[float, float]]] = {tool: [] for tool in batches}
    for _ in range(runs):
        for tool, run in batches.items():
            run()
            samples[tool].append(timed(run))
    return {tool: (statistics.median(s[0] for s in got), statistics.median(s[1] for s in got)) for tool, got in samples.items()}


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
            tools = {**all_matchers(mode, ARGS[args]), "floor": floor_match}
            counts = {tool: opts.peer_matches if tool in ("agentevals", "openevals") else opts.matches for tool in tools}
            t_small = interleaved({tool: batch(f, small, counts[tool]) for tool, f in tools.items()}, opts.runs)
            t_big = interleaved({tool: batch(f, big, 1) for tool, f in tools.items()}, opts.runs)
            for tool, func in tools.items():
                n = counts[tool]
                row = {"mode": mode, "args": args, "tool": tool, "measured_matches": n,
                       "cpu_s_per_1000x200": t_small[tool][0] * 1000 / n, "wall_s_per_1000x200": t_small[tool][1] * 1000 / n,
                       "verdict_200": func(*small[0]), "cpu_s_1000_calls": t_big[tool][0], "wall_s_1000_calls": t_big[tool][1],
                       "verdict_1000": func(*big[0])}
                rows.append(row)
                print(f"{args:8} {mode:10} {tool:11} 1000x200: {row['cpu_s_per_1000x200']:8.3f} s cpu"
                      f" ({row['verdict_200']})  1x1000: {row['cpu_s_1000_calls'] * 1000:9.1f} ms cpu ({row['verdict_1000']})",
                      flush=True)
    save("match", {"runs": opts.runs, "matches": opts.matches, "peer_matches": opts.peer_matches, "rows": rows})


if __name__ == "__main__":
    main()
