"""Correctness side by side: trajrun, agentevals and openevals on many random small inputs, against a brute-force oracle.

The oracle follows the contract's Match modes literally, by trying every pairing (permutations).
For each mode and argument rule it counts the inputs where a peer disagrees with trajrun, and
where anyone disagrees with the oracle. Usage: ``python bench/bench_correctness.py [--inputs 5000]``.
"""

from __future__ import annotations

import argparse
import random
import sys
from itertools import permutations
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ARGS, MODES, all_matchers, save, to_messages  # noqa: E402

Expected = list[tuple[str, dict]]
Actual = list[tuple[str, dict, int]]


def args_ok(expected: dict, actual: dict, rule: str) -> bool:
    """The argument rule on flat argument maps: ``exact`` equality, or ``superset`` (actual holds every expected key)."""
    if rule == "exact":
        return expected == actual
    return all(k in actual and actual[k] == v for k, v in expected.items())


def oracle(mode: str, rule: str, steps: Expected, calls: Actual) -> bool:
    """Does the mode hold? Tries every pairing; ``strict`` also needs turns never decreasing along the steps."""
    n, m = len(steps), len(calls)

    def ok(i: int, j: int) -> bool:
        return steps[i][0] == calls[j][0] and args_ok(steps[i][1], calls[j][1], rule)

    if mode in ("strict", "unordered"):
        if n != m:
            return False
        for p in permutations(range(m)):
            if all(ok(i, p[i]) for i in range(n)):
                if mode == "unordered" or all(calls[p[i]][2] <= calls[p[i + 1]][2] for i in range(n - 1)):
                    return True
        return False
    if mode == "superset":
        return any(all(ok(i, p[i]) for i in range(n)) for p in permutations(range(m), n))
    return any(all(ok(p[j], j) for j in range(m)) for p in permutations(range(n), m))


def random_args(rng: random.Random) -> dict:
    """A flat argument map over a tiny key and value pool, so collisions are common."""
    return {k: rng.choice(["a", "b", 1]) for k in ("q", "n") if rng.random() < 0.6}


def random_input(rng: random.Random, rule: str) -> tuple[list, list, Expected, Actual]:
    """(actual messages, reference messages, oracle steps, oracle calls) for one random case."""
    actual = [(rng.choice(["search", "fetch"]), random_args(rng)) for _ in range(rng.randrange(5))]
    if actual and rng.random() < 0.6:
        reference = [(name, dict(args)) for name, args in rng.sample(actual, rng.randrange(1, len(actual) + 1))]
        if rng.random() < 0.5:
            reference.append((rng.choice(["search", "fetch"]), random_args(rng)))
    else:
        reference = [(rng.choice(["search", "fetch"]), random_args(rng)) for _ in range(rng.randrange(5))]
    if rule == "superset":
        reference = [(name, {k: v for k, v in args.items() if rng.random() < 0.5}) for name, args in reference]
    per_out, per_ref = rng.choice([1, 1, 2]), rng.choice([1, 1, 2])
    calls = [(name, args, i // per_out + 1) for i, (name, args) in enumerate(actual)]
    return to_messages(actual, per_out, "o"), to_messages(reference, per_ref, "r"), reference, calls


def greedy_trap() -> tuple[list, list, Expected, Actual]:
    """The contract's trap: expected [search, search{q: a}] vs actual [search{q: a}, search{q: b}]."""
    reference = [("search", {}), ("search", {"q": "a"})]
    actual = [("search", {"q": "a"}), ("search", {"q": "b"})]
    calls = [(n, a, i + 1) for i, (n, a) in enumerate(actual)]
    return to_messages(actual, 1, "o"), to_messages(reference, 1, "r"), reference, calls


def main() -> None:
    """Count disagreements per mode and argument rule; print and save bench/out/correctness.json."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=11)
    opts = parser.parse_args()
    rows = []
    for args, rule in ARGS.items():
        for mode in MODES:
            rng = random.Random(opts.seed)
            matchers = all_matchers(mode, rule)
            row = {"mode": mode, "args": args, "inputs": opts.inputs, "trajrun_wrong": 0, "examples": []}
            for peer in ("agentevals", "openevals"):
                row.update({f"{peer}_disagrees": 0, f"{peer}_wrong": 0, f"trajrun_right_where_{peer}_disagrees": 0})
            for _ in range(opts.inputs):
                out, ref, steps, calls = random_input(rng, rule)
                _score(row, matchers, out, ref, oracle(mode, rule, steps, calls), steps, calls)
            rows.append(row)
            print(f"{args:8} {mode:10} " + " ".join(f"{k}={v}" for k, v in row.items() if k.endswith(("wrong", "disagrees"))), flush=True)
    trap = {}
    for tool, func in all_matchers("superset", "superset").items():
        out, ref, steps, calls = greedy_trap()
        trap[tool] = func(out, ref)
    trap["oracle"] = oracle("superset", "superset", *greedy_trap()[2:])
    print("greedy trap (superset, partial args):", trap)
    save("correctness", {"rows": rows, "greedy_trap": trap})


def _score(row: dict, matchers: dict, out: list, ref: list, truth: bool, steps: Expected, calls: Actual) -> None:
    """Tally one input: trajrun and each peer against the oracle and against each other."""
    verdicts = {tool: func(out, ref) for tool, func in matchers.items()}
    row["trajrun_wrong"] += verdicts["trajrun"] != truth
    for peer in ("agentevals", "openevals"):
        wrong = verdicts[peer] != truth
        row[f"{peer}_wrong"] += wrong
        if verdicts[peer] != verdicts["trajrun"]:
            row[f"{peer}_disagrees"] += 1
            row[f"trajrun_right_where_{peer}_disagrees"] += verdicts["trajrun"] == truth
            if len(row["examples"]) < 3:
                row["examples"].append({"expected": steps, "actual": calls, "oracle": truth, **verdicts})


if __name__ == "__main__":
    main()
