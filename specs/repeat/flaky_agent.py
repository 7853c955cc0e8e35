"""A stand-in for an agent whose model answers differently from run to run, made deterministic for
specs/suite-format.md's ``repeat`` example: each run of a case takes the next letter of ``pattern``
(``.`` searches flights to the right city, ``F`` to the wrong one), counted in a file in the temp
folder named after the trajrun process and removed after the pattern's last letter, so every
``trajrun run`` (whose ``repeat`` is the pattern's length) starts it afresh."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any


def run(case: str, pattern: str) -> dict[str, Any]:
    """This run's calls: ``search_flights`` to Tokyo, or to Osaka where ``pattern`` says ``F``."""
    counter = Path(tempfile.gettempdir()) / f"trajrun-repeat-example-{os.getppid()}-{case}.txt"
    n = int(counter.read_text()) if counter.exists() else 0
    if n + 1 < len(pattern):
        counter.write_text(str(n + 1))
    else:
        counter.unlink(missing_ok=True)
    city = "Osaka" if pattern[n % len(pattern)] == "F" else "Tokyo"
    return {"tool_calls": [{"name": "search_flights", "args": {"to": city}}]}
