"""The ``trajrun`` command: parses the command line, calls the library, prints, sets the exit code.

Each command imports the layers it needs when it runs, so ``trajrun --version`` starts in well under 150 ms.
"""

from __future__ import annotations

import contextlib
import gc
import signal
import sys
from pathlib import Path
from typing import Any, Callable, Iterator, NoReturn

import click

from . import __version__
from .errors import TrajrunError
from .sources.formats import FORMATS

EXIT_USAGE = 2
EXIT_INTERRUPTED = 2


def _fail(message: str) -> NoReturn:
    """Print an error without a traceback and exit with status 2."""
    click.echo(f"trajrun: error: {message}", err=True)
    sys.exit(EXIT_USAGE)


def _source_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The options ``show`` and ``record`` share."""
    func = click.option("--record", type=int, help="JSONL: the record at this 1-based line.")(func)
    func = click.option("--select", help="A JSONPath into the document.")(func)
    func = click.option("--format", "fmt", default="auto", show_default=True, metavar="FORMAT",
                        help=f"The message format: auto (detected from the content), {', '.join(FORMATS)}.")(func)
    return click.argument("source", type=click.Path(dir_okay=False))(func)


def _load(source: str, fmt: str, select: str | None, record: int | None) -> Any:
    """The trajectory of a source file, or exit 2 with the reason."""
    from .sources import load_trajectory  # deferred: start-up time

    try:
        return load_trajectory(source, format=fmt, select=select, record=record)
    except TrajrunError as exc:
        _fail(str(exc))


def _golden_root_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--golden-root DIR`` (or ``$TRAJRUN_GOLDEN_ROOT``), which ``run`` and ``validate`` share."""
    return click.option("--golden-root", type=click.Path(file_okay=False), envvar="TRAJRUN_GOLDEN_ROOT", metavar="DIR",
                        help="Also allow golden files under DIR (default: only inside the suite's project).")(func)


class _Jobs(click.ParamType):
    """``-j``: a number of worker processes, or ``auto``."""

    name = "N|auto"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int | str:
        """A whole number of at least 1, or ``auto``."""
        if value == "auto":
            return "auto"
        if str(value).isdigit() and int(value) >= 1:
            return int(value)
        self.fail(f"{value!r} is neither a number of workers (1 or more) nor 'auto'", param, ctx)


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
@_golden_root_option
def validate(paths: tuple[str, ...], variables: tuple[str, ...], golden_root: str | None) -> None:
    """Load and check suites and their sources without running them."""
    from .run.validate import validate_paths  # deferred: start-up time

    try:
        problems, count = validate_paths(list(paths) or ["suites"], _parse_vars(variables), _folder(golden_root))
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
@click.option("--html", "html_file", type=click.Path(dir_okay=False), help="Write a one-file HTML report here.")
@click.option("--json", "json_file", type=click.Path(dir_okay=False, allow_dash=True),
              help="Write a JSON report here ('-': to stdout, the console report then goes to stderr).")
@click.option("-k", "keyword", help="Select cases by a pytest-style expression over suite::case.")
@click.option("-m", "marker", help="Select cases by a pytest-style expression over tags.")
@click.option("-x", "--exitfirst", is_flag=True, help="Stop after the first failing case.")
@click.option("--shard", help="Run shard I of N (I/N), a stable split by case id.")
@click.option("-j", "--jobs", type=_Jobs(), default="1", show_default=True,
              help="Worker processes, or 'auto' for one per core.")
@click.option("--var", "variables", multiple=True, metavar="K=V", help="A template variable (repeatable).")
@click.option("--update-golden", is_flag=True, help="Rewrite golden files that are missing or failed.")
@_golden_root_option
@click.option("-v", "--verbose", count=True, help="One line per case.")
@click.option("-q", "--quiet", is_flag=True, help="Only failures and the summary.")
def run(paths: tuple[str, ...], junit_xml: str | None, junit_file_line: bool, json_file: str | None,
        html_file: str | None, **opts: Any) -> None:
    """Run suites (default: suites/) and report."""
    from .reports.console import ConsoleReporter  # deferred: start-up time
    from .files import check_target  # deferred: start-up time
    from .run.runner import RunOptions  # deferred: start-up time
    from .run.runner import RunInterrupted, run_paths  # deferred: start-up time
    from .run.selection import ExpressionError, compile_expression, parse_shard  # deferred: start-up time

    try:
        shard = parse_shard(opts["shard"]) if opts["shard"] is not None else None
        for expr in (opts["keyword"], opts["marker"]):
            if expr:
                compile_expression(expr)
        for report in (junit_xml, json_file, html_file):
            if report and report != "-":
                check_target(report)  # refuse /dev/null and the like before the run, not after it
    except (ValueError, ExpressionError, TrajrunError) as exc:
        _fail(str(exc))
    _tune_gc()
    options = RunOptions(opts["keyword"], opts["marker"], opts["exitfirst"], shard, _worker_count(opts["jobs"]),
                         _parse_vars(opts["variables"]), opts["update_golden"], golden_root=_folder(opts["golden_root"]))
    console = sys.stderr if json_file == "-" else sys.stdout  # stdout carries the JSON report alone
    reporter = ConsoleReporter(console, verbosity=-1 if opts["quiet"] else opts["verbose"])
    try:
        with _sigterm_interrupts():
            result = run_paths(list(paths) or ["suites"], options, reporter)
    except RunInterrupted as exc:
        _write_reports(exc.result, junit_xml, junit_file_line, json_file, html_file)
        done = len(exc.result.cases)
        click.echo(f"trajrun: interrupted; the summary and reports hold the {done} case{'s' if done != 1 else ''} "
                   "that finished", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except TrajrunError as exc:
        _fail(str(exc))
    _write_reports(result, junit_xml, junit_file_line, json_file, html_file)
    sys.exit(result.exit_code())


@main.command()
@click.argument("results", type=click.Path(dir_okay=False))
@click.option("--html", "html_file", type=click.Path(dir_okay=False), required=True,
              help="Write the HTML report here.")
def report(results: str, html_file: str) -> None:
    """Render a saved `trajrun run --json` report (RESULTS) as the one-file HTML report."""
    from .reports import html  # deferred: start-up time

    try:
        html.write(html.load_json(results), Path(html_file))
    except TrajrunError as exc:
        _fail(str(exc))
    click.echo(f"wrote {html_file}")


def _worker_count(jobs: int | str) -> int:
    """``-j`` as a number: ``auto`` is one worker per core; more than the runner's limit is capped, with a note."""
    from .run.runner import JOBS_PER_CORE, usable_cores, worker_limit  # deferred: start-up time

    count = usable_cores() if jobs == "auto" else int(jobs)
    if count <= worker_limit():
        return count
    click.echo(f"trajrun: note: -j {count} is more than {JOBS_PER_CORE} workers per core ({usable_cores()} cores "
               f"here); running {worker_limit()}", err=True)
    return worker_limit()


@contextlib.contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """While the run lasts, SIGTERM (a cancelled CI job) stops it as Ctrl-C does, so the reports are still written."""
    try:
        previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    except ValueError:  # not the main thread (trajrun embedded in another program): leave its signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _tune_gc() -> None:
    """A run builds many small long-lived objects (suites, results): collect the young generation
    far less often, which takes a quarter off large runs and costs no memory worth noting."""
    gc.set_threshold(100_000, 50, 100)


def _write_reports(result: Any, junit_xml: str | None, file_line: bool, json_file: str | None,
                   html_file: str | None = None) -> None:
    """Write the requested report files (atomically); one that cannot be written exits 2 after the others."""
    problems: list[str] = []
    if html_file:
        from .reports import html  # deferred: start-up time

        problems += _try_write("--html", lambda: html.write(result, Path(html_file)))
    if junit_xml:
        from .reports import junit  # deferred: start-up time

        problems += _try_write("--junit-xml", lambda: junit.write(result, Path(junit_xml), file_line=file_line))
    if json_file:
        from .reports import json_report  # deferred: start-up time

        if json_file == "-":
            sys.stdout.buffer.write(json_report.encode(result))
            sys.stdout.flush()
        else:
            problems += _try_write("--json", lambda: json_report.write(result, Path(json_file)))
    for problem in problems:
        click.echo(f"trajrun: error: {problem}", err=True)
    if problems:
        sys.exit(EXIT_USAGE)


def _try_write(option: str, write: Callable[[], None]) -> list[str]:
    """Write one report; its error, after the option's name, as a list of none or one message."""
    try:
        write()
    except TrajrunError as exc:
        return [f"{option}: {exc}"]
    return []


def _folder(path: str | None) -> Path | None:
    """An optional folder option as an absolute path (workers and the loader see the same folder)."""
    return Path(path).resolve() if path else None
