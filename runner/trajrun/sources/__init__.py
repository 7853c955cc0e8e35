"""Message sources: load a document, detect its format, and read it into a :class:`~trajrun.trajectory.Trajectory`.

One reader per format (``openai``, ``anthropic``, …, ``native`` for trajrun's own ``trajectory``
format), ``documents`` for files and ``select``, ``detect`` for choosing the reader, ``live`` for
command and Python sources.
"""

from __future__ import annotations

from .detect import load_trajectory, read_trajectory
from .documents import apply_select, load_document, parse_json, parse_yaml
from .formats import FORMATS

__all__ = [
    "FORMATS",
    "apply_select",
    "load_document",
    "load_trajectory",
    "parse_json",
    "parse_yaml",
    "read_trajectory",
]
