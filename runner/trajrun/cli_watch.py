"""``trajrun run --watch``: the console side of the watch loop (``run.watch``): a report per run, a
line on what changed, and the exit status of the last run."""

from __future__ import annotations

import importlib.util
import sys
from typing import Any, Callable, NoReturn, Sequence, TextIO

import click

from .cli_shared import EXIT_INTERRUPTED, fail
from .errors import TrajrunError, inline


def watch_run(
    paths: Sequence[str],
    options: Any,
    reporter: Callable[[], Any],
    console: TextIO,
    reports: dict[str, str | None],
) -> NoReturn:
    """Run ``paths``, then rerun the suite files each change affects, until Ctrl-C; exits with the
    last run's status.

    ``reporter`` makes each run's console reporter; ``reports`` are the report options by name
    (``--html``…): a watch writes none, and says so when some were asked for."""
    from .reports.text import not_a_command  # deferred: start-up time
    from .run.runner import RunInterrupted, run_paths  # deferred: start-up time
    from .run.watch import INSTALL, watch  # deferred: start-up time

    if importlib.util.find_spec("watchfiles") is None:
        fail(INSTALL)
    if options.update_golden:
        fail(
            "--watch and --update-golden do not go together: each golden file written would "
            "start another run"
        )
    asked = [name for name, value in reports.items() if value]
    if asked:
        click.echo(
            f"trajrun: note: --watch writes no report files ({', '.join(asked)} left out)", err=True
        )

    def tell(line: str) -> None:
        click.echo(not_a_command(f"\ntrajrun: {inline(line)}"), file=console)

    try:
        last = watch(
            paths,
            lambda chosen: run_paths(chosen, options, reporter()),
            options.variables,
            options.golden_root,
            tell=tell,
        )
    except RunInterrupted:
        click.echo("trajrun: interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except TrajrunError as exc:
        fail(str(exc))
    sys.exit(last.exit_code())
