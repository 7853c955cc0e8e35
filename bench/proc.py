"""Run a child process and read its wall time and peak RSS.

Peak RSS comes from ``/usr/bin/time -f %M``: a child forked straight from this Python process
would report at least this process's own RSS (Linux keeps the high-water mark across exec).
"""

from __future__ import annotations

import subprocess
import tempfile
import time
from pathlib import Path

TIME = "/usr/bin/time"


def run_measured(cmd: list[str]) -> tuple[float, float, int]:
    """(wall seconds, peak RSS in MB, exit status) of one run of ``cmd``, output discarded."""
    if not Path(TIME).exists():
        raise SystemExit(f"{TIME} is needed to read a child's peak RSS (apt-get install time)")
    with tempfile.NamedTemporaryFile("r", suffix=".time") as report:
        start = time.perf_counter()
        done = subprocess.run([TIME, "-f", "%M", "-o", report.name, *cmd],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        wall = time.perf_counter() - start
        lines = Path(report.name).read_text().strip().splitlines()
    return wall, int(lines[-1]) / 1024, done.returncode
