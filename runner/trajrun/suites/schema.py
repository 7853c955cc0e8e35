"""The JSON Schema of suite files (``trajrun schema``), packaged beside this module."""

from __future__ import annotations


def schema_text() -> str:
    """The JSON Schema of suite files, as ``trajrun schema`` prints it (packaged with the code)."""
    from importlib.resources import (
        files,
    )  # deferred: it loads tempfile and shutil, a cost for every run

    return files(__package__).joinpath("suite.schema.json").read_text(encoding="utf-8")
