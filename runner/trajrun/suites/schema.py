"""The JSON Schema of suite files (``trajrun schema``), packaged beside this module.

Its ``format`` enum is generated from the reader registry (``sources.registry``), so editors reading
the file (``specs/suite.schema.json`` links to it) know every format: ``REGENERATE`` rewrites it,
and a test fails with that command when a reader was added or removed without it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..sources.registry import FORMATS

REGENERATE = "python -m trajrun.suites.schema"
"""The command that writes the registry's formats into the packaged schema."""
_FORMAT_ENUM_AT = ("definitions", "source", "anyOf", 1, "properties", "format", "anyOf", 0)
"""Where the ``format`` key's enum sits in the schema."""


def schema_text() -> str:
    """The JSON Schema of suite files, as ``trajrun schema`` prints it (packaged with the code)."""
    from importlib.resources import (
        files,
    )  # deferred: it loads tempfile and shutil, a cost for every run

    return files(__package__).joinpath("suite.schema.json").read_text(encoding="utf-8")


def format_enum() -> list[str]:
    """The values the schema allows for ``format``: ``auto`` and every reader's, in detection
    order."""
    return ["auto", *FORMATS]


def with_format_enum(text: str) -> str:
    """The schema ``text`` with the registry's ``format`` enum, written as the packaged file is."""
    schema = json.loads(text)
    holder: Any = schema
    for step in _FORMAT_ENUM_AT:
        holder = holder[step]
    holder["enum"] = format_enum()
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def main() -> None:
    """Write the registry's ``format`` enum into the packaged schema (``REGENERATE``)."""
    path = Path(__file__).with_name("suite.schema.json")
    path.write_text(with_format_enum(path.read_text(encoding="utf-8")), encoding="utf-8")


if __name__ == "__main__":
    main()
