#!/bin/sh
# Every trajrun benchmark, one after the other (run by hand, never in CI). Results: bench/out/*.json, bench/scaling.png.
# Needs the bench venv: python3 -m venv /work/benchvenv && /work/benchvenv/bin/pip install -e '.[bench]'
set -eu
cd "$(dirname "$0")/.."
PY="${PY:-/work/benchvenv/bin/python}"
"$PY" bench/bench_startup.py
"$PY" bench/bench_correctness.py
"$PY" bench/bench_match.py
"$PY" bench/bench_scaling.py --cap 20
"$PY" bench/plot.py
"$PY" bench/bench_memory.py
"$PY" bench/bench_e2e.py --shape wide --runs 3
"$PY" bench/bench_e2e.py --shape deep --runs 5
"$PY" bench/bench_big.py
"$PY" bench/bench_bulk.py
