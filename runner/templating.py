"""Jinja2 for suites: one sandboxed environment with StrictUndefined, for templates and ``$expr``."""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable


@lru_cache(maxsize=1)
def environment() -> Any:
    """The shared sandboxed environment (imported lazily: jinja2 costs start-up time)."""
    from jinja2 import StrictUndefined
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    return ImmutableSandboxedEnvironment(undefined=StrictUndefined, autoescape=False)


@lru_cache(maxsize=1024)
def compile_expression(source: str) -> Callable[..., Any]:
    """Compile a Jinja2 expression once (``value | length < 200``); call the result with variables.

    Raises ``jinja2.TemplateSyntaxError`` on a bad expression.
    """
    return environment().compile_expression(source, undefined_to_none=False)  # type: ignore[no-any-return]
