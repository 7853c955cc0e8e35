"""trajrun's optional extras: the modules each one brings, whether they import here, and the command
that installs them.

Features that need an extra import its packages only when used. A feature used without its extra is
an error naming the ``pip install`` command; a case that says it ``requires`` an extra (or a module)
is skipped instead, with the same command as its reason, so an example suite stays green on a bare
install.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Iterable

from ..errors import SourceError, did_you_mean

EXTRAS: dict[str, tuple[str, ...]] = {
    "otel": ("google.protobuf", "opentelemetry.proto"),
    "langgraph": ("langgraph.checkpoint.sqlite",),
    "judge": (),  # empty: the judge needs nothing beyond the standard library
}
"""Each extra of the ``trajrun`` package and the modules it makes importable."""

EXTRA_ITEM = re.compile(r"trajrun\[([\w-]+)\]")
MODULE_ITEM = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")


def install_hint(extra: str) -> str:
    """The command that installs an extra: ``pip install 'trajrun[otel]'``."""
    return f"pip install 'trajrun[{extra}]'"


def importable(module: str) -> bool:
    """Whether ``module`` can be imported here (found on the path; its parent packages are imported
    to look)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def missing_module(extra: str) -> str | None:
    """The first module of ``extra`` that cannot be imported here; None when the extra is
    installed."""
    return next((module for module in EXTRAS[extra] if not importable(module)), None)


def require_extra(extra: str, feature: str, origin: str | None) -> None:
    """Raise a ``SourceError`` naming the install command when ``feature``'s extra is not
    installed."""
    module = missing_module(extra)
    if module is not None:
        raise SourceError(
            f"{feature} needs the {extra} extra, which is not installed (no module {module}): "
            f"{install_hint(extra)}",
            origin,
        )


def unmet(requirements: Iterable[str]) -> str | None:
    """Why a case's ``requires`` is not met here (its skip reason), or None when everything
    imports."""
    missing = []
    for item in requirements:
        extra = EXTRA_ITEM.fullmatch(item)
        if extra is not None:
            if missing_module(extra[1]) is not None:
                missing.append(f"{item} ({install_hint(extra[1])})")
        elif not importable(item):
            missing.append(f"the module {item}")
    if not missing:
        return None
    listed = ", ".join(missing[:-1]) + " and " + missing[-1] if len(missing) > 1 else missing[0]
    return (
        f"requires {listed}, {'which are' if len(missing) > 1 else 'which is'} not installed here"
    )


def requirement_problem(item: str) -> str | None:
    """What is wrong with one ``requires`` entry (for the loader), or None."""
    extra = EXTRA_ITEM.fullmatch(item)
    if extra is not None:
        if extra[1] in EXTRAS:
            return None
        return f"unknown extra '{extra[1]}' of trajrun{did_you_mean(extra[1], EXTRAS)}"
    if MODULE_ITEM.fullmatch(item):
        return None
    return (
        f"expected an extra such as 'trajrun[otel]' ({', '.join(EXTRAS)}) or a Python module name "
        f"such as 'opentelemetry.sdk', found {item!r}"
    )
