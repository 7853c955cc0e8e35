"""The ``trajrun`` command: parses the command line, calls the library, prints, sets the exit code.

Each command imports the layers it needs when it runs, so ``trajrun --version`` starts in well under 150 ms.
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path
from typing import Any, Callable, NoReturn

import click

from . import __version__
from .errors import TrajrunError

EXIT_USAGE = 2


def _fail(message: str) -> NoReturn:
    """Print an error without a traceback and exit with status 2."""
    click.echo(f"trajrun: error: {message}", err=True)
    sys.exit(EXIT_USAGE)


def _source_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The options ``show`` and ``record`` share."""
    func = click.option("--record", type=int, help="JSONL: the record at this 1-based line.")(func)
    func = click.option("--select", help="A JSONPath into the document.")(func)
    func = click.option("--format", "fmt", default="auto", show_default=True, help="The message format.")(func)
    return click.argument("source", type=click.Path(dir_okay=False))(func)


def _load(source: str, fmt: str, select: str | None, record: int | None) -> Any:
    """The trajectory of a source file, or exit 2 with the reason."""
    from .sources import load_trajectory  # deferred: start-up time

    try:
        return load_trajectory(source, format=fmt, select=select, record=record)
    except TrajrunError as exc:
        _fail(str(exc))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="trajrun")
def main() -> None:
    """Check how your agent works: tool-call trajectories against YAML suites."""


@main.command()
@_source_options
@click.option("-o", "--output", type=click.Choice(["table", "yaml", "json"]), default="table", show_default=True)
def show(source: str, fmt: str, select: str | None, record: int | None, output: str) -> None:
    """Print the trajectory extracted from SOURCE."""
    from .reports.show import render_json, render_table, render_yaml  # deferred: start-up time

    traj = _load(source, fmt, select, record)
    click.echo({"table": render_table, "yaml": render_yaml, "json": render_json}[output](traj))


@main.command()
@_source_options
def record(source: str, fmt: str, select: str | None, record: int | None) -> None:
    """Print SOURCE's steps as YAML, ready to paste into a suite or save as a golden file."""
    from .suites.golden import dump_steps  # deferred: start-up time

    click.echo(dump_steps(_load(source, fmt, select, record)), nl=False)


@main.command()
def schema() -> None:
    """Print the JSON Schema of suite files (for editors)."""
    from .suites.schema import schema_text  # deferred: start-up time

    click.echo(schema_text())


@main.command()
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--var", "variables", multiple=True, metavar="K=V", help="A template variable (repeatable).")
def validate(paths: tuple[str, ...], variables: tuple[str, ...]) -> None:
    """Load and check suites and their sources without running them."""
    from .run.validate import validate_paths  # deferred: start-up time

    try:
        problems, count = validate_paths(list(paths) or ["suites"], _parse_vars(variables))
    except TrajrunError as exc:
        _fail(str(exc))
    for line in problems:
        click.echo(line)
    click.echo(f"{count} suite file{'s' if count != 1 else ''} checked, {len(problems)} problem{'s' if len(problems) != 1 else ''}")
    sys.exit(EXIT_USAGE if problems else 0)


def _parse_vars(items: tuple[str, ...]) -> dict[str, Any]:
    """``--var k=v`` values, parsed as YAML scalars."""
    from .suites.templating import parse_var  # deferred: start-up time

    try:
        return dict(parse_var(item) for item in items)
    except ValueError as exc:
        _fail(str(exc))


@main.command()
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--junit-xml", type=click.Path(dir_okay=False), help="Write a JUnit XML report here.")
@click.option("--junit-file-line", is_flag=True, help="Add file and line to each testcase (breaks junit-10.xsd).")
@click.option("--json", "json_file", type=click.Path(dir_okay=False), help="Write a JSON report here.")
@click.option("-k", "keyword", help="Select cases by a pytest-style expression over suite::case.")
@click.option("-m", "marker", help="Select cases by a pytest-style expression over tags.")
@click.option("-x", "--exitfirst", is_flag=True, help="Stop after the first failing case.")
@click.option("--shard", help="Run shard I of N (I/N), a stable split by case id.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=1, show_default=True, help="Worker processes.")
@click.option("--var", "variables", multiple=True, metavar="K=V", help="A template variable (repeatable).")
@click.option("--update-golden", is_flag=True, help="Rewrite golden files that are missing or failed.")
@click.option("-v", "--verbose", count=True, help="One line per case.")
@click.option("-q", "--quiet", is_flag=True, help="Only failures and the summary.")
def run(paths: tuple[str, ...], junit_xml: str | None, junit_file_line: bool, json_file: str | None, **opts: Any) -> None:
    """Run suites (default: suites/) and report."""
    from .reports.console import ConsoleReporter  # deferred: start-up time
    from .run.runner import RunOptions  # deferred: start-up time
    from .run.runner import run_paths  # deferred: start-up time
    from .run.selection import ExpressionError, compile_expression, parse_shard  # deferred: start-up time

    try:
        shard = parse_shard(opts["shard"]) if opts["shard"] else None
        for expr in (opts["keyword"], opts["marker"]):
            if expr:
                compile_expression(expr)
    except (ValueError, ExpressionError) as exc:
        _fail(str(exc))
    _tune_gc()
    options = RunOptions(opts["keyword"], opts["marker"], opts["exitfirst"], shard, opts["jobs"],
                         _parse_vars(opts["variables"]), opts["update_golden"])
    reporter = ConsoleReporter(sys.stdout, verbosity=-1 if opts["quiet"] else opts["verbose"])
    try:
        result = run_paths(list(paths) or ["suites"], options, reporter)
    except TrajrunError as exc:
        _fail(str(exc))
    _write_reports(result, junit_xml, junit_file_line, json_file)
    sys.exit(result.exit_code())


def _tune_gc() -> None:
    """A run builds many small long-lived objects (suites, results): collect the young generation
    far less often, which takes a quarter off large runs and costs no memory worth noting."""
    gc.set_threshold(100_000, 50, 100)


def _write_reports(result: Any, junit_xml: str | None, file_line: bool, json_file: str | None) -> None:
    """Write the requested report files (atomically)."""
    if junit_xml:
        from .reports import junit  # deferred: start-up time

        junit.write(result, Path(junit_xml), file_line=file_line)
    if json_file:
        from .reports import json_report  # deferred: start-up time

        json_report.write(result, Path(json_file))
