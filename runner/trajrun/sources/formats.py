"""Names sources take that need no reader: what one record of a bulk source is, and how several
OpenTelemetry traces are read (the CLI's choices, suite keys). The formats, which come from the
readers themselves, are ``registry.FORMATS``."""

from __future__ import annotations

EACH: tuple[str, ...] = ("record", "file", "trace")
"""What one record of a bulk source (``each``) is: a JSONL line or list item, a whole file, an
OpenTelemetry trace."""
TRACE_RULES: tuple[str, ...] = ("auto", "merge", "one")
"""How a document of several OpenTelemetry traces is read (a source's ``traces``): ``auto`` reads
fragments of one run as one run and refuses whole runs, ``merge`` reads every trace as one run,
``one`` refuses several traces."""
