"""Message sources: load a document, detect its format, and read it into a
:class:`~trajrun.trajectory.Trajectory`.

One reader module per format in ``readers`` (``openai``, ``anthropic``, …, ``otel`` for traces,
``native`` for trajrun's own ``trajectory`` format), found by ``registry``; ``documents`` for files
and ``select``, ``detect`` for choosing the reader, ``live`` for command and Python sources. Names
load on first use, so a command that only needs ``formats`` (the CLI's ``--traces`` choices) does
not import every reader.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

_WHERE = {
    "FORMATS": "registry",
    "load_trajectory": "detect",
    "read_trajectory": "detect",
    "apply_select": "documents",
    "load_document": "documents",
    "parse_json": "documents",
    "parse_yaml": "documents",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    """Import a public name's module on first use (PEP 562)."""
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'trajrun.sources' has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:  # the names as type checkers and editors see them
    from .detect import load_trajectory as load_trajectory
    from .detect import read_trajectory as read_trajectory
    from .documents import apply_select as apply_select
    from .documents import load_document as load_document
    from .documents import parse_json as parse_json
    from .documents import parse_yaml as parse_yaml
    from .registry import FORMATS as FORMATS
