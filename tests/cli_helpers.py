"""Running the ``trajrun`` command in process, from a given folder, for the CLI-level tests."""

from __future__ import annotations

import gc
import os
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from trajrun.cli import main


def invoke_in(folder: Path, *args: str, env: dict[str, Any] | None = None) -> Result:
    """``trajrun ARGS`` from ``folder`` with colours off; the result keeps stdout and stderr apart."""
    previous, thresholds = Path.cwd(), gc.get_threshold()
    os.chdir(folder)
    try:
        return CliRunner().invoke(main, list(args), env={"NO_COLOR": "1", **(env or {})}, catch_exceptions=False)
    finally:
        os.chdir(previous)
        gc.set_threshold(*thresholds)  # `run` tunes the collector for its process: a module fixture must not leak it
