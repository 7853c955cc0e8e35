"""Start-up: wall time and peak RSS of ``trajrun --version`` and ``import trajrun``, next to agentevals' import.

Each command runs ``--runs`` times in a fresh process (a warm-up run first, so files are cached);
medians are reported. Usage: ``python bench/bench_startup.py [--runs 15]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import save  # noqa: E402
from proc import run_measured  # noqa: E402

PY = sys.executable
COMMANDS = {
    "python -c pass (baseline)": [PY, "-c", "pass"],
    "trajrun --version": [str(Path(PY).with_name("trajrun")), "--version"],
    "python -c 'import trajrun'": [PY, "-c", "import trajrun"],
    "python -c 'import trajrun.cli'": [PY, "-c", "import trajrun.cli"],
    "python -c 'import agentevals.trajectory.match'": [PY, "-c", "import agentevals.trajectory.match"],
    "python -c 'import openevals.trajectory.match'": [PY, "-c", "import openevals.trajectory.match"],
}
TARGETS = {"trajrun --version": 0.150, "python -c 'import trajrun'": 0.100}


def main() -> None:
    """Measure every command; print and save bench/out/startup.json."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    opts = parser.parse_args()
    rows = []
    for label, cmd in COMMANDS.items():
        run_measured(cmd)
        samples = [run_measured(cmd) for _ in range(opts.runs)]
        if any(s[2] != 0 for s in samples):
            raise SystemExit(f"{label} failed")
        row = {"command": label, "wall_s": statistics.median(s[0] for s in samples),
               "min_wall_s": min(s[0] for s in samples), "peak_rss_mb": statistics.median(s[1] for s in samples),
               "target_s": TARGETS.get(label)}
        rows.append(row)
        print(f"{label:48} {row['wall_s'] * 1000:7.1f} ms (min {row['min_wall_s'] * 1000:6.1f})"
              f" {row['peak_rss_mb']:6.1f} MB", flush=True)
    save("startup", {"runs": opts.runs, "rows": rows})


if __name__ == "__main__":
    main()
