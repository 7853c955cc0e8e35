"""The ``trajrun`` command: parses the command line, calls the library, prints, sets the exit code.

Each command imports the layers it needs when it runs, so a command pays the start-up time of only
the layers it uses.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Callable, NoReturn

import click

from . import __version__
from .cli_run import run
from .cli_shared import EXIT_INTERNAL, EXIT_USAGE, fail, folder, golden_root_option, parse_vars
from .errors import TrajrunError, exception_line, exception_trace, inline
from .sources.formats import TRACE_RULES

TRACEBACK_VAR = "TRAJRUN_TRACEBACK"
_CLICK_FLOW = (click.exceptions.ClickException, click.exceptions.Abort, click.exceptions.Exit)


def _internal_error(exc: Exception, show_trace: bool, how_to_see: str) -> NoReturn:
    """A trajrun bug: one line naming the exception (its traceback first when
    ``show_trace``), exit status 3."""
    if show_trace:
        print(exception_trace(exc), file=sys.stderr)
    last = exception_line(exc)
    hint = (
        "please report it"
        if show_trace
        else f"{how_to_see} for the traceback, and please report it"
    )
    click.echo(f"trajrun: internal error: {inline(last)}; {hint}", err=True)
    sys.exit(EXIT_INTERNAL)


def _traceback_wanted() -> bool:
    """Whether ``TRAJRUN_TRACEBACK`` asks for tracebacks (set, and not 0)."""
    return os.environ.get(TRACEBACK_VAR, "").strip() not in ("", "0")


class _Trajrun(click.Group):
    """The ``trajrun`` group: whatever unexpected escapes a command is one line and
    exit status 3, not a traceback."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        """Run the command line (click's own exits, errors and Ctrl-C keep their behaviour)."""
        try:
            return super().main(*args, **kwargs)
        except _CLICK_FLOW:
            raise
        except Exception as exc:  # noqa: BLE001 - the last line of defence
            _internal_error(exc, _traceback_wanted(), f"rerun with {TRACEBACK_VAR}=1")


class _FormatOption(click.Option):
    """``--format``, whose help names the formats only when shown: naming them loads the readers."""

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        """The help line, with every reader's format."""
        from .sources.registry import FORMATS  # deferred: start-up time

        self.help = f"The message format: auto (detected from the content), {', '.join(FORMATS)}."
        return super().get_help_record(ctx)


def _source_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The options ``show`` and ``record`` share."""
    func = click.option(
        "-v",
        "--verbose",
        is_flag=True,
        help="When no format fits, say why for each; on an internal error, print the traceback; "
        "with show, what the reader merged (spans of one call).",
    )(func)
    func = click.option(
        "--checkpoint",
        metavar="ID",
        help="LangGraph database: this checkpoint of the thread (default: its latest).",
    )(func)
    func = click.option(
        "--thread", metavar="ID", help="LangGraph database (.sqlite, .db): the thread to read."
    )(func)
    func = click.option("--record", type=int, help="JSONL: the record at this 1-based line.")(func)
    func = click.option("--select", help="A JSONPath into the document.")(func)
    func = click.option(
        "--format",
        "fmt",
        default="auto",
        show_default=True,
        metavar="FORMAT",
        cls=_FormatOption,
    )(func)
    return click.argument("source", type=click.Path(dir_okay=False))(func)


def _load(
    source: str,
    fmt: str,
    select: str | None,
    record: int | None,
    verbose: bool,
    picks: tuple[str | None, str | None] = (None, None),
    traces: str = "auto",
) -> Any:
    """The trajectory of a source file, or exit 2 with the reason (with ``verbose``, each
    format's too); ``picks`` are ``--thread`` and ``--checkpoint``, ``traces`` how several
    OpenTelemetry traces are read."""
    from .sources import load_trajectory  # deferred: start-up time
    from .sources.spelling import SHOW  # deferred: start-up time

    try:
        return load_trajectory(
            source,
            format=fmt,
            select=select,
            record=record,
            spelling=SHOW,
            thread=picks[0],
            checkpoint=picks[1],
            traces=traces,
        )
    except TrajrunError as exc:
        reasons = getattr(exc, "reasons", ()) if verbose else ()
        fail(
            str(exc),
            ("why each format does not fit:", *(f"  {reason}" for reason in reasons))
            if reasons
            else (),
        )
    except Exception as exc:  # noqa: BLE001 - a reader bug: one line, the traceback with -v
        _internal_error(exc, verbose or _traceback_wanted(), "rerun with -v")


@click.group(cls=_Trajrun, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="trajrun")
@click.pass_context
def main(ctx: click.Context) -> None:
    """Check how your agent works: tool-call trajectories against YAML suites."""
    if ctx.invoked_subcommand in ("run", "validate"):
        ctx.default_map = _project_defaults()


def _project_defaults() -> dict[str, Any]:
    """``[tool.trajrun]`` (or ``trajrun.toml``) as click's ``default_map``, so the command line
    still wins; a bad key or value exits 2, naming each."""
    from .cli_config import ConfigErrors, default_map, load_config  # deferred: start-up time

    try:
        return default_map(main, load_config(run))
    except ConfigErrors as exc:
        fail(exc.lines[0], tuple(f"trajrun: error: {line}" for line in exc.lines[1:]))


main.add_command(run)


@main.command()
def config() -> None:
    """Print each setting `trajrun run` takes from the project configuration, and its source."""
    from .cli_config import ConfigErrors, effective, load_config  # deferred: start-up time
    from .reports.text import not_a_command  # deferred: start-up time

    try:
        found = load_config(run)
    except ConfigErrors as exc:
        fail(exc.lines[0], tuple(f"trajrun: error: {line}" for line in exc.lines[1:]))
    if found is None:
        where = "none (no trajrun.toml, and no pyproject.toml with [tool.trajrun], here or above)"
    else:
        where = (
            f"{found.shown} ([tool.trajrun])"
            if found.file.name == "pyproject.toml"
            else found.shown
        )
    rows = [("setting", "value", "from"), *effective(run, found)]
    widths = [max(len(row[i]) for row in rows) for i in (0, 1)]
    click.echo(not_a_command(f"configuration: {inline(where)}"))
    for key, value, source in rows:
        click.echo(not_a_command(inline(f"{key:<{widths[0]}}  {value:<{widths[1]}}  {source}")))


@main.command()
@_source_options
@click.option(
    "-o",
    "--output",
    type=click.Choice(["table", "yaml", "json"]),
    default="table",
    show_default=True,
)
@click.option(
    "--traces",
    type=click.Choice(TRACE_RULES),
    default="auto",
    show_default=True,
    help="OpenTelemetry, several traces: auto reads fragments of one run as one and refuses "
    "whole runs; merge reads every trace as one run; one refuses several.",
)
def show(
    source: str,
    fmt: str,
    select: str | None,
    record: int | None,
    verbose: bool,
    output: str,
    thread: str | None,
    checkpoint: str | None,
    traces: str,
) -> None:
    """Print the trajectory extracted from SOURCE."""
    from .reports.show import render_json, render_table, render_yaml  # deferred: start-up time
    from .reports.text import not_a_command  # deferred: start-up time
    from .sources.readers.otel_spans import MERGED  # deferred: start-up time

    traj = _load(source, fmt, select, record, verbose, (thread, checkpoint), traces)
    click.echo({"table": render_table, "yaml": render_yaml, "json": render_json}[output](traj))
    for note in traj.notes if verbose else [note for note in traj.notes if MERGED in note]:
        click.echo(not_a_command(f"note: {inline(note)}"), err=True)


@main.command()
@_source_options
def record(
    source: str,
    fmt: str,
    select: str | None,
    record: int | None,
    verbose: bool,
    thread: str | None,
    checkpoint: str | None,
) -> None:
    """Print SOURCE's steps as YAML, ready to paste into a suite or save as a golden file."""
    from .reports.show import render_steps  # deferred: start-up time

    click.echo(
        render_steps(_load(source, fmt, select, record, verbose, (thread, checkpoint))), nl=False
    )


@main.command()
def schema() -> None:
    """Print the JSON Schema of suite files (for editors)."""
    from .suites.schema import schema_text  # deferred: start-up time

    click.echo(schema_text())


@main.command()
@click.argument("paths", nargs=-1, type=click.Path())
@click.option(
    "--var", "variables", multiple=True, metavar="K=V", help="A template variable (repeatable)."
)
@golden_root_option
def validate(paths: tuple[str, ...], variables: tuple[str, ...], golden_root: str | None) -> None:
    """Load and check suites and their sources without running them."""
    from .reports.text import not_a_command  # deferred: start-up time
    from .run.validate import validate_paths  # deferred: start-up time

    try:
        problems, count = validate_paths(
            list(paths) or ["suites"], parse_vars(variables), folder(golden_root)
        )
    except TrajrunError as exc:
        fail(str(exc))
    for line in problems:
        click.echo(not_a_command(inline(line)))
    files = f"{count} suite file{'s' if count != 1 else ''}"
    click.echo(f"{files} checked, {len(problems)} problem{'s' if len(problems) != 1 else ''}")
    sys.exit(EXIT_USAGE if problems else 0)


@main.command()
@click.argument("results", type=click.Path(dir_okay=False))
@click.option(
    "--html",
    "html_file",
    type=click.Path(dir_okay=False),
    required=True,
    help="Write the HTML report here.",
)
def report(results: str, html_file: str) -> None:
    """Render a saved `trajrun run --json` report (RESULTS) as the one-file HTML report."""
    from .reports import html  # deferred: start-up time

    try:
        html.write(html.load_json(results), Path(html_file))
    except TrajrunError as exc:
        fail(str(exc))
    click.echo(f"wrote {inline(html_file)}")


@main.command()
@click.argument("old", type=click.Path(dir_okay=False))
@click.argument("new", type=click.Path(dir_okay=False))
@click.option(
    "--html",
    "html_file",
    type=click.Path(dir_okay=False),
    help="Also write the diff as an HTML page here.",
)
@click.option(
    "--json",
    "json_file",
    type=click.Path(dir_okay=False, allow_dash=True),
    help="Write the diff as JSON here ('-': to stdout, the text then goes to stderr).",
)
def diff(old: str, new: str, html_file: str | None, json_file: str | None) -> None:
    """Compare two `trajrun run --json` reports: cases regressed, fixed, still failing, new,
    removed, and score changes; exit status 1 when a case regressed."""
    import json  # deferred: start-up time

    from .files import atomic_write, check_target  # deferred: start-up time
    from .reports import diff_views  # deferred: start-up time
    from .reports.diff import load_pair, to_json  # deferred: start-up time
    from .reports.text import json_safe  # deferred: start-up time

    try:
        for target in (html_file, json_file):
            if target and target != "-":
                check_target(target)
        found = load_pair(old, new)
        if html_file:
            diff_views.write_html(found, html_file)
        text = json_safe(json.dumps(to_json(found), indent=2)) + "\n"
        if json_file and json_file != "-":
            atomic_write(json_file, lambda handle: handle.writelines([text.encode("utf-8")]))
    except TrajrunError as exc:
        fail(str(exc))
    click.echo("\n".join(diff_views.render_text(found)), err=json_file == "-")
    if json_file == "-":
        click.echo(text, nl=False)
    sys.exit(found.exit_code())


@main.group("import")
def import_() -> None:
    """Write suite files from other tools' evaluation data (Google ADK
    eval sets, LangSmith datasets)."""


def _import_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The options every importer shares: where the suites go, what
    source the cases read, --select."""
    func = click.option("--force", is_flag=True, help="Replace suite files that exist.")(func)
    func = click.option(
        "--select",
        metavar="JSONPATH",
        help="A JSONPath into each input (LangSmith: into each "
        "example, to its reference messages).",
    )(func)
    func = click.option(
        "--source",
        "source_file",
        metavar="PATH",
        help="Every case reads this run file ({case} is replaced by the case's name).",
    )(func)
    func = click.option(
        "--python",
        metavar="MODULE:FUNC",
        help="Every case runs this function (default: a placeholder to replace).",
    )(func)
    return click.option(
        "-o",
        "--output",
        type=click.Path(file_okay=False),
        metavar="DIR",
        help="Write DIR/<name>.suite.yaml per input file (default: the suite to stdout).",
    )(func)


@import_.command("adk")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@_import_options
def import_adk(files: tuple[str, ...], **opts: Any) -> None:
    """Import Google ADK eval sets (FILES: *.evalset.json, *.test.json): expected tool calls become
    steps, checked as the test_config.json beside them says (strict without one)."""
    from .importers.adk import import_adk as read_adk  # deferred: start-up time

    _import(
        lambda path, source, folder: read_adk(path, source, opts["select"], folder), files, opts
    )


@import_.command("langsmith")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option(
    "--mode",
    required=True,
    type=click.Choice(["strict", "unordered", "subset", "superset", "in_order"]),
    help="The match mode of the steps (agentevals' trajectory_match_mode).",
)
@click.option(
    "--args-mode",
    default="exact",
    show_default=True,
    type=click.Choice(["exact", "ignore", "subset", "superset"]),
    help="The argument rule (agentevals' tool_args_match_mode).",
)
@_import_options
def import_langsmith(file: str, mode: str, args_mode: str, **opts: Any) -> None:
    """Import a LangSmith dataset export (FILE: JSONL, one example a line):
    reference messages become steps."""
    from .importers.langsmith import import_langsmith as read_langsmith  # deferred: start-up time

    _import(
        lambda path, source, folder: read_langsmith(
            path, mode, args_mode, source, opts["select"], folder
        ),
        (file,),
        opts,
    )


def _import(
    read: Callable[[Path, Any, Path | None], Any], files: tuple[str, ...], opts: dict[str, Any]
) -> None:
    """Read each input with ``read``, write the suites (stdout or ``-o DIR``),
    report what was not carried over."""
    from .importers.common import (  # deferred: start-up time
        PLACEHOLDER,
        source_choice,
        write_suites,
    )

    folder = Path(opts["output"]) if opts["output"] else None
    try:
        source = source_choice(opts["python"], opts["source_file"])
        suites = [read(Path(f), source, folder) for f in files]
        written = write_suites(suites, folder, opts["force"])
    except TrajrunError as exc:
        fail(str(exc))
    for (target, text), suite in zip(written, suites, strict=True):
        if target == "-":
            click.echo(text, nl=False)
        else:
            plural = "s" if len(suite.cases) != 1 else ""
            click.echo(f"wrote {inline(str(target))} ({len(suite.cases)} case{plural})", err=True)
        for line in suite.report():
            click.echo(f"trajrun: {line}", err=True)
    if source.file is None and source.python == PLACEHOLDER:
        click.echo(
            "trajrun: note: fill in the source: each case calls the placeholder "
            f"`{source.python}`; pass --python MODULE:FUNC or --source PATH, or edit the suite",
            err=True,
        )
