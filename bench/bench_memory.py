"""Memory: peak RSS of ``trajrun show --record N`` (and of ``load_trajectory``) near the end of a ~1 GB JSONL file.

The file (OpenAI message lists, 50 calls per record) is generated under bench/data/ and deleted
afterwards. Usage: ``python bench/bench_memory.py [--gb 1.0]``.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DATA, random_calls, save, to_messages  # noqa: E402
from proc import run_measured  # noqa: E402

LOAD = "import sys; from trajrun import load_trajectory; load_trajectory(sys.argv[1], record=int(sys.argv[2]))"


def generate(path: Path, target_bytes: int) -> int:
    """Write JSONL records until the file reaches ``target_bytes``; returns the record count."""
    rng = random.Random(3)
    pool = [to_messages(random_calls(50, rng), 1 + k % 3) for k in range(20)]
    count = size = 0
    with path.open("w", encoding="utf-8") as out:
        while size < target_bytes:
            record = [{"role": "user", "content": f"record {count + 1}"}, *pool[count % len(pool)][1:]]
            line = json.dumps(record) + "\n"
            out.write(line)
            size += len(line)
            count += 1
    return count


def main() -> None:
    """Generate, measure three commands, delete; print and save bench/out/memory.json."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gb", type=float, default=1.0)
    opts = parser.parse_args()
    DATA.mkdir(parents=True, exist_ok=True)
    path = DATA / "big.jsonl"
    try:
        start = time.perf_counter()
        records = generate(path, int(opts.gb * 1024**3))
        size = path.stat().st_size
        print(f"generated {size / 1024**3:.2f} GB, {records} records in {time.perf_counter() - start:.1f} s", flush=True)
        near_end = records - 2
        trajrun = str(Path(sys.executable).with_name("trajrun"))
        commands = {
            "python -c pass (baseline)": [sys.executable, "-c", "pass"],
            f"trajrun show big.jsonl --record {near_end} -o json": [trajrun, "show", str(path), "--record", str(near_end), "-o", "json"],
            f"trajrun show big.jsonl --record {near_end}": [trajrun, "show", str(path), "--record", str(near_end)],
            f"load_trajectory(big.jsonl, record={near_end})": [sys.executable, "-c", LOAD, str(path), str(near_end)],
        }
        rows = []
        for label, cmd in commands.items():
            wall, rss, status = run_measured(cmd)
            rows.append({"command": label, "wall_s": wall, "peak_rss_mb": rss, "exit": status, "target_mb": None if "pass" in label else 100})
            print(f"{label:55} {wall:6.2f} s {rss:7.1f} MB exit {status}", flush=True)
        save("memory", {"file_bytes": size, "records": records, "rows": rows})
    finally:
        path.unlink(missing_ok=True)


if __name__ == "__main__":
    main()
