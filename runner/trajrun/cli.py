"""The ``trajrun`` command: parses the command line, calls the library, prints, sets the exit code.

Each command imports the layers it needs when it runs, so ``trajrun --version`` starts in well under 150 ms.
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import sys
from pathlib import Path
from typing import Any, Callable, Iterator, NoReturn

import click

from . import __version__
from .errors import TrajrunError, exception_line, exception_trace
from .sources.formats import FORMATS

EXIT_USAGE = 2
EXIT_INTERRUPTED = 2
EXIT_INTERNAL = 3
TRACEBACK_VAR = "TRAJRUN_TRACEBACK"
_CLICK_FLOW = (click.exceptions.ClickException, click.exceptions.Abort, click.exceptions.Exit)


def _fail(message: str, details: tuple[str, ...] = ()) -> NoReturn:
    """Print an error without a traceback (then the ``details`` lines) and exit with status 2."""
    click.echo(f"trajrun: error: {message}", err=True)
    for line in details:
        click.echo(line, err=True)
    sys.exit(EXIT_USAGE)


def _internal_error(exc: Exception, show_trace: bool, how_to_see: str) -> NoReturn:
    """A trajrun bug: one line naming the exception (its traceback first when ``show_trace``), exit status 3."""
    if show_trace:
        print(exception_trace(exc), file=sys.stderr)
    last = exception_line(exc)
    hint = "please report it" if show_trace else f"{how_to_see} for the traceback, and please report it"
    click.echo(f"trajrun: internal error: {last}; {hint}", err=True)
    sys.exit(EXIT_INTERNAL)


def _traceback_wanted() -> bool:
    """Whether ``TRAJRUN_TRACEBACK`` asks for tracebacks (set, and not 0)."""
    return os.environ.get(TRACEBACK_VAR, "").strip() not in ("", "0")


class _Trajrun(click.Group):
    """The ``trajrun`` group: whatever unexpected escapes a command is one line and exit status 3, not a traceback."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        """Run the command line (click's own exits, errors and Ctrl-C keep their behaviour)."""
        try:
            return super().main(*args, **kwargs)
        except _CLICK_FLOW:
            raise
        except Exception as exc:  # noqa: BLE001 - the last line of defence
            _internal_error(exc, _traceback_wanted(), f"rerun with {TRACEBACK_VAR}=1")


def _source_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The options ``show`` and ``record`` share."""
    func = click.option("-v", "--verbose", is_flag=True,
                        help="When no format fits, say why for each; on an internal error, print the traceback.")(func)
    func = click.option("--checkpoint", metavar="ID", help="LangGraph database: this checkpoint of the thread "
                                                           "(default: its latest).")(func)
    func = click.option("--thread", metavar="ID", help="LangGraph database (.sqlite, .db): the thread to read.")(func)
    func = click.option("--record", type=int, help="JSONL: the record at this 1-based line.")(func)
    func = click.option("--select", help="A JSONPath into the document.")(func)
    func = click.option("--format", "fmt", default="auto", show_default=True, metavar="FORMAT",
                        help=f"The message format: auto (detected from the content), {', '.join(FORMATS)}.")(func)
    return click.argument("source", type=click.Path(dir_okay=False))(func)


def _load(source: str, fmt: str, select: str | None, record: int | None, verbose: bool,
          picks: tuple[str | None, str | None] = (None, None)) -> Any:
    """The trajectory of a source file, or exit 2 with the reason (with ``verbose``, each format's too);
    ``picks`` are ``--thread`` and ``--checkpoint``."""
    from .sources import load_trajectory  # deferred: start-up time
    from .sources.documents import SHOW  # deferred: start-up time

    try:
        return load_trajectory(source, format=fmt, select=select, record=record, spelling=SHOW, thread=picks[0],
                               checkpoint=picks[1])
    except TrajrunError as exc:
        reasons = getattr(exc, "reasons", ()) if verbose else ()
        _fail(str(exc), ("why each format does not fit:", *(f"  {reason}" for reason in reasons)) if reasons else ())
    except Exception as exc:  # noqa: BLE001 - a reader bug: one line, the traceback with -v
        _internal_error(exc, verbose or _traceback_wanted(), "rerun with -v")


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


@click.group(cls=_Trajrun, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="trajrun")
def main() -> None:
    """Check how your agent works: tool-call trajectories against YAML suites."""


@main.command()
@_source_options
@click.option("-o", "--output", type=click.Choice(["table", "yaml", "json"]), default="table", show_default=True)
def show(source: str, fmt: str, select: str | None, record: int | None, verbose: bool, output: str,
         thread: str | None, checkpoint: str | None) -> None:
    """Print the trajectory extracted from SOURCE."""
    from .reports.show import render_json, render_table, render_yaml  # deferred: start-up time

    traj = _load(source, fmt, select, record, verbose, (thread, checkpoint))
    click.echo({"table": render_table, "yaml": render_yaml, "json": render_json}[output](traj))


@main.command()
@_source_options
def record(source: str, fmt: str, select: str | None, record: int | None, verbose: bool, thread: str | None,
           checkpoint: str | None) -> None:
    """Print SOURCE's steps as YAML, ready to paste into a suite or save as a golden file."""
    from .suites.golden import dump_steps  # deferred: start-up time

    click.echo(dump_steps(_load(source, fmt, select, record, verbose, (thread, checkpoint))), nl=False)


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
@click.option("--junit-system-out", type=click.Choice(["failed", "all", "none"]), default="failed", show_default=True,
              help="Which cases carry their actual steps in <system-out>.")
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
@click.option("--annotations", type=click.Choice(["github", "none"]), default=None,
              help="GitHub Actions annotations and job summary [default: github when GITHUB_ACTIONS=true].")
@click.option("--no-judge", is_flag=True, help="Skip judge: checks (reported as skipped, never as passed).")
@click.option("--judge-cache", type=click.Path(file_okay=False), default=".trajrun-cache", show_default=True,
              metavar="DIR", help="Keep judge answers here (relative to the current folder): unchanged runs ask nothing.")
@click.option("--no-judge-cache", is_flag=True, help="Ask the judge model every time; keep no answers.")
@click.option("--judge-concurrency", type=click.IntRange(min=1), default=4, show_default=True, metavar="N",
              help="Judge requests in flight at once (per worker process).")
@click.option("--engine", type=click.Choice(["local", "dask"]), default="local", show_default=True,
              help="Where bulk cases (sources with each) run: this machine (-j N processes), or a Dask cluster.")
@click.option("--scheduler", metavar="ADDRESS", help="--engine dask: a running scheduler (default: a LocalCluster here).")
@click.option("--junit-each", type=click.Choice(["case", "record"]), default="case", show_default=True,
              help="One JUnit testcase per bulk case, or one per record of each bulk case.")
@click.option("--records", "records_file", type=click.Path(dir_okay=False), metavar="FILE",
              help="Write one JSON line per record of every bulk case here.")
def run(paths: tuple[str, ...], junit_xml: str | None, junit_file_line: bool, junit_system_out: str,
        json_file: str | None, html_file: str | None, **opts: Any) -> None:
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
        for report in (junit_xml, json_file, html_file, opts["records_file"]):
            if report and report != "-":
                check_target(report)  # refuse /dev/null and the like before the run, not after it
    except (ValueError, ExpressionError, TrajrunError) as exc:
        _fail(str(exc))
    _tune_gc()
    spool = _records_spool(opts)
    options = RunOptions(opts["keyword"], opts["marker"], opts["exitfirst"], shard, _worker_count(opts["jobs"]),
                         _parse_vars(opts["variables"]), opts["update_golden"], golden_root=_folder(opts["golden_root"]),
                         judge=_judge_options(opts), bulk=_bulk_options(opts, spool),
                         expected_steps=bool(json_file or html_file))
    console = sys.stderr if json_file == "-" else sys.stdout  # stdout carries the JSON report alone
    reporter = ConsoleReporter(console, verbosity=-1 if opts["quiet"] else opts["verbose"])
    try:
        with _sigterm_interrupts():
            result = run_paths(list(paths) or ["suites"], options, reporter)
    except RunInterrupted as exc:
        _write_reports(exc.result, (junit_xml, junit_file_line, junit_system_out, opts["junit_each"]), json_file,
                       html_file)
        done = len(exc.result.cases)
        click.echo(f"trajrun: interrupted; the summary and reports hold the {done} case{'s' if done != 1 else ''} "
                   "that finished", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except TrajrunError as exc:
        _fail(str(exc))
    _write_reports(result, (junit_xml, junit_file_line, junit_system_out, opts["junit_each"]), json_file, html_file)
    _annotate(result, opts["annotations"], console)
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


@main.group("import")
def import_() -> None:
    """Write suite files from other tools' evaluation data (Google ADK eval sets, LangSmith datasets)."""


def _import_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The options every importer shares: where the suites go, what source the cases read, --select."""
    func = click.option("--force", is_flag=True, help="Replace suite files that exist.")(func)
    func = click.option("--select", metavar="JSONPATH", help="A JSONPath into each input (LangSmith: into each "
                                                             "example, to its reference messages).")(func)
    func = click.option("--source", "source_file", metavar="PATH",
                        help="Every case reads this run file ({case} is replaced by the case's name).")(func)
    func = click.option("--python", metavar="MODULE:FUNC",
                        help="Every case runs this function (default: a placeholder to replace).")(func)
    return click.option("-o", "--output", type=click.Path(file_okay=False), metavar="DIR",
                        help="Write DIR/<name>.suite.yaml per input file (default: the suite to stdout).")(func)


@import_.command("adk")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@_import_options
def import_adk(files: tuple[str, ...], **opts: Any) -> None:
    """Import Google ADK eval sets (FILES: *.evalset.json, *.test.json): expected tool calls become strict steps."""
    from .importers.adk import import_adk as read_adk  # deferred: start-up time

    _import(lambda path, source, folder: read_adk(path, source, opts["select"], folder), files, opts)


@import_.command("langsmith")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--mode", required=True, type=click.Choice(["strict", "unordered", "subset", "superset", "in_order"]),
              help="The match mode of the steps (agentevals' trajectory_match_mode).")
@click.option("--args-mode", default="exact", show_default=True,
              type=click.Choice(["exact", "ignore", "subset", "superset"]),
              help="The argument rule (agentevals' tool_args_match_mode).")
@_import_options
def import_langsmith(file: str, mode: str, args_mode: str, **opts: Any) -> None:
    """Import a LangSmith dataset export (FILE: JSONL, one example a line): reference messages become steps."""
    from .importers.langsmith import import_langsmith as read_langsmith  # deferred: start-up time

    _import(lambda path, source, folder: read_langsmith(path, mode, args_mode, source, opts["select"], folder),
            (file,), opts)


def _import(read: Callable[[Path, Any, Path | None], Any], files: tuple[str, ...], opts: dict[str, Any]) -> None:
    """Read each input with ``read``, write the suites (stdout or ``-o DIR``), report what was not carried over."""
    from .importers.common import PLACEHOLDER, source_choice, write_suites  # deferred: start-up time

    folder = Path(opts["output"]) if opts["output"] else None
    try:
        source = source_choice(opts["python"], opts["source_file"])
        suites = [read(Path(f), source, folder) for f in files]
        written = write_suites(suites, folder, opts["force"])
    except TrajrunError as exc:
        _fail(str(exc))
    for (target, text), suite in zip(written, suites):
        if target == "-":
            click.echo(text, nl=False)
        else:
            click.echo(f"wrote {target} ({len(suite.cases)} case{'s' if len(suite.cases) != 1 else ''})", err=True)
        for line in suite.report():
            click.echo(f"trajrun: {line}", err=True)
    if source.file is None and source.python == PLACEHOLDER:
        click.echo(f"trajrun: note: fill in the source: each case calls the placeholder `{source.python}`; pass "
                   "--python MODULE:FUNC or --source PATH, or edit the suite", err=True)


def _bulk_options(opts: dict[str, Any], records: Path | None) -> Any:
    """``--engine``, ``--scheduler`` and where per-record lines go, as options; exits 2 when Dask is missing."""
    import importlib.util  # deferred: start-up time

    from .run.bulk import BulkOptions  # deferred: start-up time

    if opts["engine"] == "dask" and importlib.util.find_spec("distributed") is None:
        from .run.dask_engine import INSTALL  # deferred: it loads logging, a cost for every run

        _fail(INSTALL)
    if opts["scheduler"] and opts["engine"] != "dask":
        _fail("--scheduler names a Dask scheduler; add --engine dask")
    return BulkOptions(opts["engine"], opts["scheduler"], records)


def _records_spool(opts: dict[str, Any]) -> Path | None:
    """Where per-record lines go: ``--records FILE``, or a temporary file that ``--junit-each record`` reads."""
    if opts["records_file"]:
        return Path(opts["records_file"])
    if opts["junit_each"] != "record":
        return None
    import atexit  # deferred: start-up time
    import tempfile  # deferred: start-up time

    handle, name = tempfile.mkstemp(prefix="trajrun-records-", suffix=".jsonl")
    os.close(handle)
    atexit.register(lambda: Path(name).unlink(missing_ok=True))
    return Path(name)


def _judge_options(opts: dict[str, Any]) -> Any:
    """``--no-judge``, ``--judge-cache DIR``, ``--no-judge-cache`` and ``--judge-concurrency N`` as options."""
    from .run.judge import JudgeOptions  # deferred: start-up time

    cache = None if opts["no_judge_cache"] else Path(opts["judge_cache"]).resolve()
    return JudgeOptions(enabled=not opts["no_judge"], cache=cache, concurrency=opts["judge_concurrency"])


def _worker_count(jobs: int | str) -> int:
    """``-j`` as a number: ``auto`` is one worker per core; more than the runner's limit is capped, with a note."""
    from .run.cores import JOBS_PER_CORE, usable_cores, worker_limit  # deferred: start-up time

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


def _annotate(result: Any, choice: str | None, stream: Any) -> None:
    """Under GitHub Actions (or ``--annotations github``): an annotation per failed case, and the job summary."""
    from .reports import github  # deferred: start-up time

    if not github.enabled(choice):
        return
    for line in github.annotations(result):
        print(line, file=stream)
    try:
        github.append_summary(result)
    except OSError as exc:
        click.echo(f"trajrun: note: cannot append the job summary: {exc.strerror or exc}", err=True)


def _write_reports(result: Any, junit: tuple[str | None, bool, str], json_file: str | None, html_file: str | None) -> None:
    """Write the requested report files (atomically); one that cannot be written exits 2 after the others.

    ``junit`` is the path (or None), ``--junit-file-line``, ``--junit-system-out`` and ``--junit-each``.
    """
    problems: list[str] = []
    junit_xml, file_line, system_out, each = junit
    if html_file:
        from .reports import html  # deferred: start-up time

        problems += _try_write("--html", lambda: html.write(result, Path(html_file)))
    if junit_xml:
        from .reports import junit as junit_report  # deferred: start-up time

        problems += _try_write("--junit-xml", lambda: junit_report.write(result, Path(junit_xml), file_line=file_line,
                                                                         system_out=system_out, each=each))
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
