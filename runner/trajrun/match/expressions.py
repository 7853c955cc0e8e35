"""The sandboxed Jinja2 environment: ``$expr`` matchers compile here, suite templates render with it."""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable


@lru_cache(maxsize=1)
def environment() -> Any:
    """The shared sandboxed environment."""
    from jinja2 import StrictUndefined  # deferred: jinja2 costs start-up time
    from jinja2.sandbox import ImmutableSandboxedEnvironment  # deferred, as above

    return ImmutableSandboxedEnvironment(undefined=StrictUndefined, autoescape=False)


@lru_cache(maxsize=1024)
def compile_expression(source: str) -> Callable[..., Any]:
    """Compile a Jinja2 expression once (``value | length < 200``); call the result with variables.

    Raises ``jinja2.TemplateSyntaxError`` on a bad expression.
    """
    return environment().compile_expression(source, undefined_to_none=False)  # type: ignore[no-any-return]


def syntax_problem(source: str) -> str | None:
    """Why a Jinja2 expression does not parse (the parser's message), or ``None`` when it does."""
    from jinja2 import TemplateSyntaxError  # deferred: jinja2 costs start-up time

    try:
        compile_expression(source)
    except TemplateSyntaxError as exc:
        return str(exc.message)
    return None
