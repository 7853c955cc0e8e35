"""``trajrun run``: its options, and what it sets up around the library's ``run_paths`` (signals,
the collector, report files, annotations)."""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import sys
from pathlib import Path
from typing import Any, Callable, Iterator

import click

from .cli_shared import EXIT_INTERRUPTED, EXIT_USAGE, fail, folder, golden_root_option, parse_vars
from .errors import TrajrunError


class _Jobs(click.ParamType):
    """``-j``: a number of worker processes, or ``auto``."""

    name = "N|auto"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> int | str:
        """A whole number of at least 1, or ``auto``."""
        if value == "auto":
            return "auto"
        if str(value).isdigit() and int(value) >= 1:
            return int(value)
        self.fail(f"{value!r} is neither a number of workers (1 or more) nor 'auto'", param, ctx)


@click.command()
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--junit-xml", type=click.Path(dir_okay=False), help="Write a JUnit XML report here.")
@click.option(
    "--junit-file-line",
    is_flag=True,
    help="Add file and line to each testcase (breaks junit-10.xsd).",
)
@click.option(
    "--junit-system-out",
    type=click.Choice(["failed", "all", "none"]),
    default="failed",
    show_default=True,
    help="Which cases carry their actual steps in <system-out>.",
)
@click.option(
    "--html",
    "html_file",
    type=click.Path(dir_okay=False),
    help="Write a one-file HTML report here.",
)
@click.option(
    "--json",
    "json_file",
    type=click.Path(dir_okay=False, allow_dash=True),
    help="Write a JSON report here ('-': to stdout, the console report then goes to stderr).",
)
@click.option("-k", "keyword", help="Select cases by a pytest-style expression over suite::case.")
@click.option("-m", "marker", help="Select cases by a pytest-style expression over tags.")
@click.option("-x", "--exitfirst", is_flag=True, help="Stop after the first failing case.")
@click.option(
    "--lf",
    "--last-failed",
    "last_failed",
    is_flag=True,
    help="Rerun only the cases that failed last time (all when none did).",
)
@click.option(
    "--ff",
    "--failed-first",
    "failed_first",
    is_flag=True,
    help="Run the cases that failed last time first, then the others.",
)
@click.option(
    "--cache-clear",
    is_flag=True,
    help="Empty .trajrun-cache/ (last failures, judge answers) first.",
)
@click.option(
    "--baseline",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="A `--json` report of an earlier run: mark each failure new or known.",
)
@click.option(
    "--fail-on",
    type=click.Choice(["new", "any"]),
    default="any",
    show_default=True,
    help="Which failures fail the run: any, or only those --baseline does not know.",
)
@click.option(
    "--min-pass-rate",
    type=click.FloatRange(0, 1),
    metavar="RATE",
    help="Exit 0 when this share (0 to 1) of the cases that ran passed.",
)
@click.option("--shard", help="Run shard I of N (I/N), a stable split by case id.")
@click.option(
    "-j",
    "--jobs",
    type=_Jobs(),
    default="1",
    show_default=True,
    help="Worker processes, or 'auto' for one per core.",
)
@click.option(
    "--var", "variables", multiple=True, metavar="K=V", help="A template variable (repeatable)."
)
@click.option(
    "--update-golden", is_flag=True, help="Rewrite golden files that are missing or failed."
)
@click.option(
    "--cassettes",
    type=click.Choice(["auto", "record", "replay", "off"]),
    default=None,
    help="Live sources' cassettes: replay or else record (auto), record anew, replay only "
    "(no model is called), or ignore them [default: TRAJRUN_CASSETTES, else auto].",
)
@golden_root_option
@click.option("-v", "--verbose", count=True, help="One line per case.")
@click.option("-q", "--quiet", is_flag=True, help="Only failures and the summary.")
@click.option(
    "--annotations",
    type=click.Choice(["github", "none"]),
    default=None,
    help="GitHub Actions annotations and job summary [default: github when GITHUB_ACTIONS=true].",
)
@click.option(
    "--no-judge", is_flag=True, help="Skip judge: checks (reported as skipped, never as passed)."
)
@click.option(
    "--judge-cache",
    type=click.Path(file_okay=False),
    default=".trajrun-cache",
    show_default=True,
    metavar="DIR",
    help="Keep judge answers here (relative to the current folder): unchanged runs ask nothing.",
)
@click.option(
    "--no-judge-cache", is_flag=True, help="Ask the judge model every time; keep no answers."
)
@click.option(
    "--judge-concurrency",
    type=click.IntRange(min=1),
    default=4,
    show_default=True,
    metavar="N",
    help="Judge requests in flight at once (per worker process).",
)
@click.option(
    "--engine",
    type=click.Choice(["local", "dask"]),
    default="local",
    show_default=True,
    help="Where bulk cases (sources with each) run: this machine (-j N processes), "
    "or a Dask cluster.",
)
@click.option(
    "--scheduler",
    metavar="ADDRESS",
    help="--engine dask: a running scheduler "
    "[default: DASK_SCHEDULER_ADDRESS, else a LocalCluster here].",
)
@click.option(
    "--junit-each",
    type=click.Choice(["case", "record"]),
    default="case",
    show_default=True,
    help="One JUnit testcase per bulk case, or one per record of each bulk case.",
)
@click.option(
    "--records",
    "records_file",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="Write one JSON line per record of every bulk case here.",
)
@click.option(
    "--watch",
    is_flag=True,
    help="Rerun the suites a change affects (a suite, a file it reads, a golden "
    "file) until Ctrl-C; needs trajrun[watch].",
)
def run(
    paths: tuple[str, ...],
    junit_xml: str | None,
    junit_file_line: bool,
    junit_system_out: str,
    json_file: str | None,
    html_file: str | None,
    **opts: Any,
) -> None:
    """Run suites (default: suites/) and report."""
    from .files import check_target  # deferred: start-up time
    from .reports.console import ConsoleReporter  # deferred: start-up time
    from .run.runner import RunInterrupted, RunOptions, run_paths  # deferred: start-up time
    from .run.selection import (  # deferred: start-up time
        ExpressionError,
        compile_expression,
        parse_shard,
    )

    try:
        shard = parse_shard(opts["shard"]) if opts["shard"] is not None else None
        for expr in (opts["keyword"], opts["marker"]):
            if expr:
                compile_expression(expr)
        for report in (junit_xml, json_file, html_file, opts["records_file"]):
            if report and report != "-":
                check_target(report)  # refuse /dev/null and the like before the run, not after it
    except (ValueError, ExpressionError, TrajrunError) as exc:
        fail(str(exc))
    _tune_gc()
    if opts["cassettes"] is not None:
        # read by each case's live source, in this process and in -j workers
        os.environ["TRAJRUN_CASSETTES"] = opts["cassettes"]
    spool = _records_spool(opts)
    options = RunOptions(
        opts["keyword"],
        opts["marker"],
        opts["exitfirst"],
        shard,
        _worker_count(opts["jobs"]),
        parse_vars(opts["variables"]),
        opts["update_golden"],
        golden_root=folder(opts["golden_root"]),
        judge=_judge_options(opts),
        bulk=_bulk_options(opts, spool),
        keep=_kept(junit_xml, junit_system_out, json_file or html_file),
        **_ci_options(paths, opts),
    )
    console = sys.stderr if json_file == "-" else sys.stdout  # stdout carries the JSON report alone
    reporter = ConsoleReporter(console, verbosity=-1 if opts["quiet"] else opts["verbose"])
    if opts["watch"]:
        from .cli_watch import watch_run  # deferred: start-up time

        watch_run(
            list(paths) or ["suites"],
            options,
            lambda: ConsoleReporter(console, verbosity=reporter.verbosity),
            console,
            {"--junit-xml": junit_xml, "--json": json_file, "--html": html_file},
        )
    try:
        with _sigterm_interrupts():
            result = run_paths(list(paths) or ["suites"], options, reporter)
    except RunInterrupted as exc:
        _remember(exc.result)
        _write_reports(
            exc.result,
            (junit_xml, junit_file_line, junit_system_out, opts["junit_each"]),
            json_file,
            html_file,
        )
        done = len(exc.result.cases)
        click.echo(
            "trajrun: interrupted; the summary and reports hold the "
            f"{done} case{'s' if done != 1 else ''} that finished",
            err=True,
        )
        sys.exit(EXIT_INTERRUPTED)
    except TrajrunError as exc:
        fail(str(exc))
    _remember(result)
    _write_reports(
        result,
        (junit_xml, junit_file_line, junit_system_out, opts["junit_each"]),
        json_file,
        html_file,
    )
    _annotate(result, opts["annotations"], console)
    sys.exit(result.exit_code())


def _ci_options(paths: tuple[str, ...], opts: dict[str, Any]) -> dict[str, Any]:
    """``--baseline``, ``--fail-on``, ``--min-pass-rate``, ``--lf``, ``--ff`` and ``--cache-clear``
    as run options; exits 2 on a baseline that cannot be read or ``--fail-on new`` without one."""
    from .run.last_failed import LastFailed, rerun  # deferred: start-up time
    from .run.plans import collect  # deferred: start-up time
    from .run.results import Gates  # deferred: start-up time

    if opts["fail_on"] == "new" and not opts["baseline"]:
        fail(
            "--fail-on new keeps only the failures a baseline does not know; add --baseline FILE "
            "(a `trajrun run --json` report of an earlier run)"
        )
    baseline = opts["baseline"]
    gates = Gates(baseline, _known(baseline), opts["fail_on"], opts["min_pass_rate"])
    if opts["cache_clear"]:
        for folder in {LastFailed().folder.resolve(), Path(opts["judge_cache"]).resolve()}:
            LastFailed(folder).clear()
    if not (opts["last_failed"] or opts["failed_first"]):
        return {"gates": gates}
    recorded = LastFailed().read()
    if recorded is None:
        click.echo(
            f"trajrun: note: {LastFailed().path} is not a record trajrun wrote; it is "
            "replaced after this run",
            err=True,
        )
    try:
        files = collect(list(paths) or ["suites"])
    except TrajrunError as exc:
        fail(str(exc))
    only, first = opts["last_failed"], opts["failed_first"]
    chosen = rerun(recorded or frozenset(), files, Path.cwd(), only, first)
    click.echo(f"trajrun: note: {'--lf' if only else '--ff'}: {chosen.note}", err=True)
    return {"gates": gates, "rerun": chosen.only, "first": chosen.first}


def _known(baseline: str | None) -> frozenset[tuple[str, str]]:
    """The ``(suite, case)`` names that failed in the ``--baseline`` report; exits 2 when it cannot
    be read."""
    if baseline is None:
        return frozenset()
    from .reports.diff import failing_cases  # deferred: start-up time
    from .reports.html import load_json  # deferred: start-up time

    try:
        return failing_cases(load_json(baseline))
    except TrajrunError as exc:
        fail(f"--baseline: {exc}")


def _remember(result: Any) -> None:
    """Record the run's failures in ``.trajrun-cache/`` for ``--lf`` and ``--ff``."""
    from .run.last_failed import LastFailed  # deferred: start-up time

    LastFailed().update(result, Path.cwd())


def _bulk_options(opts: dict[str, Any], records: Path | None) -> Any:
    """``--engine``, ``--scheduler`` and where per-record lines go, as options;
    exits 2 when Dask is missing."""
    import importlib.util  # deferred: start-up time

    from .run.bulk import BulkOptions  # deferred: start-up time

    if opts["engine"] == "dask" and importlib.util.find_spec("distributed") is None:
        from .run.dask_engine import INSTALL  # deferred: it loads logging, a cost for every run

        fail(INSTALL)
    if opts["scheduler"] and opts["engine"] != "dask":
        fail("--scheduler names a Dask scheduler; add --engine dask")
    return BulkOptions(opts["engine"], opts["scheduler"], records, notes=_note)


def _note(text: str) -> None:
    """A note of the bulk engine (the Dask dashboard's link, a worker lost) on stderr, at once."""
    from .errors import inline  # deferred: start-up time
    from .reports.text import not_a_command  # deferred: start-up time

    click.echo(not_a_command(f"trajrun: {inline(text)}"), err=True)


def _kept(junit_xml: str | None, system_out: str, full: str | None) -> frozenset[str] | None:
    """The outcomes whose results keep their trajectory and steps: every one for the JSON and
    HTML reports (``full``), those JUnit's ``<system-out>`` shows, else none (the console prints
    only messages and details)."""
    if full:
        return None
    if not junit_xml:
        return frozenset()
    from .reports.junit import SHOWN  # deferred: start-up time

    return SHOWN[system_out]


def _records_spool(opts: dict[str, Any]) -> Path | None:
    """Where per-record lines go: ``--records FILE``, or a temporary file that
    ``--junit-each record`` reads."""
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
    """``--no-judge``, ``--judge-cache DIR``, ``--no-judge-cache`` and
    ``--judge-concurrency N`` as options."""
    from .run.judge import JudgeOptions  # deferred: start-up time

    cache = None if opts["no_judge_cache"] else Path(opts["judge_cache"]).resolve()
    return JudgeOptions(
        enabled=not opts["no_judge"], cache=cache, concurrency=opts["judge_concurrency"]
    )


def _worker_count(jobs: int | str) -> int:
    """``-j`` as a number: ``auto`` is one worker per core; more than the runner's
    limit is capped, with a note."""
    from .run.cores import JOBS_PER_CORE, usable_cores, worker_limit  # deferred: start-up time

    count = usable_cores() if jobs == "auto" else int(jobs)
    if count <= worker_limit():
        return count
    click.echo(
        f"trajrun: note: -j {count} is more than {JOBS_PER_CORE} workers per core "
        f"({usable_cores()} cores here); running {worker_limit()}",
        err=True,
    )
    return worker_limit()


@contextlib.contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """While the run lasts, SIGTERM (a cancelled CI job) stops it as Ctrl-C does, so
    the reports are still written."""
    try:
        previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    except ValueError:
        # not the main thread (trajrun embedded in another program): leave its signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _tune_gc() -> None:
    """A run builds many small long-lived objects (suites, results): collect the young generation
    far less often, which makes large runs markedly faster and costs no memory worth noting."""
    gc.set_threshold(100_000, 50, 100)


def _annotate(result: Any, choice: str | None, stream: Any) -> None:
    """Under GitHub Actions (or ``--annotations github``): an annotation per
    failed case, and the job summary."""
    from .reports import github  # deferred: start-up time

    if not github.enabled(choice):
        return
    for line in github.annotations(result):
        print(line, file=stream)
    try:
        github.append_summary(result)
    except OSError as exc:
        click.echo(f"trajrun: note: cannot append the job summary: {exc.strerror or exc}", err=True)


def _write_reports(
    result: Any,
    junit: tuple[str | None, bool, str, str],
    json_file: str | None,
    html_file: str | None,
) -> None:
    """Write the requested report files (atomically); one that cannot be
    written exits 2 after the others.

    ``junit`` is the path (or None), ``--junit-file-line``,
    ``--junit-system-out`` and ``--junit-each``.
    """
    problems: list[str] = []
    junit_xml, file_line, system_out, each = junit
    if html_file:
        from .reports import html  # deferred: start-up time

        problems += _try_write("--html", lambda: html.write(result, Path(html_file)))
    if junit_xml:
        from .reports import junit as junit_report  # deferred: start-up time

        problems += _try_write(
            "--junit-xml",
            lambda: junit_report.write(
                result, Path(junit_xml), file_line=file_line, system_out=system_out, each=each
            ),
        )
    if json_file:
        from .reports import json_report  # deferred: start-up time

        if json_file == "-":
            sys.stdout.buffer.write(json_report.encode(result))
            sys.stdout.flush()
        else:
            problems += _try_write("--json", lambda: json_report.write(result, Path(json_file)))
    from .errors import inline  # deferred: start-up time
    from .reports.text import not_a_command  # deferred: start-up time

    for problem in problems:
        click.echo(not_a_command(f"trajrun: error: {inline(problem)}"), err=True)
    if problems:
        sys.exit(EXIT_USAGE)


def _try_write(option: str, write: Callable[[], None]) -> list[str]:
    """Write one report; its error, after the option's name, as a list of none or one message."""
    try:
        write()
    except TrajrunError as exc:
        return [f"{option}: {exc}"]
    return []
