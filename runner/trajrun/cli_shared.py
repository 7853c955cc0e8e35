"""What the ``trajrun`` commands share: exit statuses, failing with a one-line error,
``--var`` and folder options."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable, NoReturn

import click

EXIT_USAGE = 2
EXIT_INTERRUPTED = 2
EXIT_INTERNAL = 3


def fail(message: str, details: tuple[str, ...] = ()) -> NoReturn:
    """Print an error without a traceback (then the ``details`` lines) and exit with status 2; each
    of them one line (a path or a name it quotes cannot break it), none that GitHub Actions would
    read as a workflow command."""
    from .errors import inline  # deferred: start-up time
    from .reports.text import not_a_command  # deferred: start-up time

    for line in (f"trajrun: error: {message}", *details):
        click.echo(not_a_command(inline(line)), err=True)
    sys.exit(EXIT_USAGE)


def parse_vars(items: tuple[str, ...]) -> dict[str, Any]:
    """``--var k=v`` values, parsed as YAML scalars."""
    from .suites.templating import parse_var  # deferred: start-up time

    try:
        return dict(parse_var(item) for item in items)
    except ValueError as exc:
        fail(str(exc))


def folder(path: str | None) -> Path | None:
    """An optional folder option as an absolute path (workers and the
    loader see the same folder)."""
    return Path(path).resolve() if path else None


def golden_root_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--golden-root DIR`` (or ``$TRAJRUN_GOLDEN_ROOT``), which ``run`` and ``validate`` share."""
    return click.option(
        "--golden-root",
        type=click.Path(file_okay=False),
        envvar="TRAJRUN_GOLDEN_ROOT",
        metavar="DIR",
        help="Also allow golden files under DIR (default: only inside the suite's project).",
    )(func)
