"""Feeding a finished run to the console reporter, in the order the runner reports it."""

from __future__ import annotations

from trajrun.reports.console import ConsoleReporter
from trajrun.run.results import RunResult


def drive(reporter: ConsoleReporter, run: RunResult) -> None:
    """Start, each suite's load errors and cases in order, then finish, as the runner would."""
    reporter.start(len(run.cases))
    for suite in run.suites:
        if suite.load_errors:
            reporter.suite_load_error(suite)
        for result in suite.cases:
            reporter.case_done(result)
    reporter.finish(run)
