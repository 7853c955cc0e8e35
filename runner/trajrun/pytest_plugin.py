"""pytest plugin: collect ``*.suite.yaml`` files as test items, so
``pytest`` and pytest-xdist run suites.

Follows pytest's ``doc/en/example/nonpython/conftest.py``: ``pytest_collect_file`` yields a
:class:`SuiteFile` per suite file, whose cases become :class:`CaseItem` items named as the CLI
names them (``suites/x.suite.yaml::paris[city=Paris]``).

Outcomes map onto pytest's:

* passed / failed as usual; a failure prints what ``trajrun run`` prints (``file:line``,
  the message, table and notes), and its short summary line (``-rA``) and JUnit message
  are the CLI's one-line message.
* a case *error* (missing source, unreadable document, a check that cannot be evaluated) is a pytest
  error: the case runs in the item's setup, and an error is raised there, reported the same way.
* ``skip: reason`` is a ``skip`` marker; the case is not run.
* ``xfail: reason`` is handled here, not with ``pytest.mark.xfail``: it covers
  failures only. A failing case is xfailed, a passing one fails as
  ``XPASS(strict): reason``, an error stays an error.

Tags (the suite's and the case's) become markers, registered as they are seen so
``--strict-markers`` passes and ``-m smoke`` selects. Some tags are not made markers and are kept
as extra keywords instead, so ``-k`` still selects them: a tag that is not a Python identifier (or
starts with ``_``), such as ``no-network`` or ``team:search``, which cannot be a registered marker
name; and a tag named like one of pytest's own markers (``skip``, ``xfail``, ``parametrize``...),
which as a bare marker would change how the case runs.

The ini option ``trajrun_collect`` (default true) turns collection off; ``--trajrun-var K=V``
(repeatable) sets template variables as ``trajrun run --var`` does, ``--trajrun-golden-root DIR``
allows golden files under DIR as ``trajrun run --golden-root`` does, and ``--trajrun-no-judge``
skips ``judge:`` checks as ``trajrun run --no-judge`` does.

Under ``--junitxml`` a case's ``<testcase>`` is named as ``trajrun run --junit-xml`` names it
(``classname`` the suite's name, ``name`` the case's; a suite file that cannot be loaded is its file
name and ``(load)``), and errors name files by their path from the working folder, as the CLI does.
"""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

import pytest
from _pytest.outcomes import Failed  # pytest.fail.Exception, by a name a type checker can follow

from .errors import SuiteErrors
from .suites.model import SUITE_SUFFIXES

_JUNIT_XML: pytest.StashKey[Any] | None
try:
    from _pytest.junitxml import xml_key as _JUNIT_XML
except ImportError:  # a pytest that moved it: testcases keep the names pytest gives them
    _JUNIT_XML = None

if TYPE_CHECKING:
    from _pytest._code.code import TerminalRepr

    from .run.execute import SourceCache
    from .run.judge import Judge
    from .run.results import CaseResult
    from .suites.model import Case, Suite

PYTEST_MARKERS = frozenset(
    {
        "skip",
        "skipif",
        "xfail",
        "parametrize",
        "usefixtures",
        "filterwarnings",
        "tryfirst",
        "trylast",
    }
)

_VARIABLES = pytest.StashKey[dict[str, Any]]()
_CACHE: pytest.StashKey[SourceCache] = pytest.StashKey()
_JUDGE: pytest.StashKey[Judge] = pytest.StashKey()
_MARKERS = pytest.StashKey[set[str]]()
TESTCASE = "trajrun_testcase"
"""The report attribute holding a case's suite and case names for its JUnit ``<testcase>``
(pytest-xdist carries a report's attributes from its workers)."""


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add ``--trajrun-var``, ``--trajrun-golden-root``, ``--trajrun-update-golden``
    and ini ``trajrun_collect``."""
    group = parser.getgroup("trajrun", "trajrun suites (*.suite.yaml)")
    group.addoption(
        "--trajrun-var",
        action="append",
        default=[],
        dest="trajrun_vars",
        metavar="K=V",
        help="set a template variable for every suite (repeatable), like `trajrun run --var`",
    )
    group.addoption(
        "--trajrun-golden-root",
        dest="trajrun_golden_root",
        metavar="DIR",
        help="also allow golden files under DIR (default: only inside each suite's project), "
        "like `--golden-root`",
    )
    group.addoption(
        "--trajrun-update-golden",
        action="store_true",
        dest="trajrun_update_golden",
        help="rewrite golden files that are missing or whose steps check failed, "
        "like `trajrun run --update-golden`",
    )
    group.addoption(
        "--trajrun-no-judge",
        action="store_true",
        dest="trajrun_no_judge",
        help="skip `judge:` checks (reported as skipped, never as passed), "
        "like `trajrun run --no-judge`",
    )
    parser.addini(
        "trajrun_collect",
        "collect *.suite.yaml files as tests (default true)",
        type="bool",
        default=True,
    )


def pytest_configure(config: pytest.Config) -> None:
    """Parse ``--trajrun-var`` once, so a bad value is a usage error before collection starts."""
    config.stash[_VARIABLES] = _parse_vars(config.getoption("trajrun_vars") or [])
    config.stash[_MARKERS] = set()
    config.pluginmanager.register(JunitNames(config), "trajrun-junit-names")


def pytest_unconfigure(config: pytest.Config) -> None:
    """Stop the judge's threads, if a judged case started them."""
    judge = config.stash.get(_JUDGE, None)
    if judge is not None:
        judge.close()


def _judge(config: pytest.Config) -> Judge:
    """The session's judge: cache in ``.trajrun-cache/`` under pytest's rootdir,
    ``--trajrun-no-judge`` honoured."""
    from .run.judge import Judge, JudgeOptions  # deferred: the plugin loads in every pytest session

    if _JUDGE not in config.stash:
        options = JudgeOptions(enabled=not config.getoption("trajrun_no_judge"))
        config.stash[_JUDGE] = Judge(options, config.rootpath)
    return config.stash[_JUDGE]


def _parse_vars(raw: list[str]) -> dict[str, Any]:
    """``["city=Paris", "n=3"]`` -> ``{"city": "Paris", "n": 3}``; a
    malformed one is a usage error."""
    if not raw:
        return {}
    from .suites.templating import parse_var  # deferred: the plugin loads in every pytest session

    variables: dict[str, Any] = {}
    for item in raw:
        try:
            key, value = parse_var(item)
        except ValueError as exc:
            raise pytest.UsageError(f"--trajrun-var {item!r}: {exc}") from None
        variables[key] = value
    return variables


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> SuiteFile | None:
    """Collect ``*.suite.yaml`` / ``*.suite.yml`` files, unless ``trajrun_collect`` is false."""
    if file_path.name.endswith(SUITE_SUFFIXES) and parent.config.getini("trajrun_collect"):
        return SuiteFile.from_parent(parent, path=file_path)
    return None


class SuiteFile(pytest.File):
    """One suite file: loading it yields one item per case (after ``parametrize``)."""

    def collect(self) -> Iterator[CaseItem]:
        """Load the suite; load errors become one collection error listing every message."""
        from .errors import inline  # deferred: the plugin loads in every pytest session
        from .reports.text import not_a_command  # deferred: as below
        from .suites.load import load_suite  # deferred: the plugin loads in every pytest session

        try:  # loaded from its path as the CLI shows it, so its errors name the file the same way
            suite = load_suite(
                self._shown_path(),
                self.config.stash.get(_VARIABLES, {}),
                self.config.getoption("trajrun_golden_root"),
            )
        except SuiteErrors as exc:
            raise self.CollectError(
                not_a_command("\n".join(inline(str(e)) for e in exc.errors))
            ) from None
        for case in suite.cases:  # a name is one line of pytest's output, as of trajrun's
            yield CaseItem.from_parent(
                self, name=not_a_command(inline(case.name)), suite=suite, case=case
            )

    def _shown_path(self) -> Path:
        """The suite file's path from the folder pytest was started in, as ``trajrun run`` run there
        names it (the whole path when the file is outside that folder)."""
        from .run.plans import suite_id  # deferred: the plugin loads in every pytest session

        return Path(suite_id(self.config.invocation_params.dir, self.path))


class CaseProblem(Failed):
    """A case that failed or xpassed (raised in the call) or could not run (raised
    in setup, so pytest says error).

    It carries the result, from which the report is built; pytest never shows it as a
    traceback. It is a ``pytest.fail`` without a Python trace because pytest formats a setup
    error's traceback before our report replaces it: with the trace, every case paid for
    parsing the source of every frame.
    """

    def __init__(self, result: CaseResult) -> None:
        super().__init__(result.message, pytrace=False)
        self.result = result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A case error raised in setup gets the case's report too (pytest builds setup
    reports without ``repr_failure``)."""
    report = yield
    excinfo = call.excinfo
    if (
        call.when == "setup"
        and isinstance(item, CaseItem)
        and excinfo
        and isinstance(excinfo.value, CaseProblem)
    ):
        report.longrepr = item.repr_failure(excinfo)
    if isinstance(item, CaseItem):
        setattr(report, TESTCASE, [item.suite.name, item.case.name])
    return report


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    """A suite file that cannot be loaded is named in JUnit as by the CLI: file name, ``(load)``."""
    report = yield
    if isinstance(collector, SuiteFile) and report.failed:
        from .reports.junit import LOAD_CASE  # deferred: loads in every pytest session

        setattr(report, TESTCASE, [collector.path.name, LOAD_CASE])
    return report


class JunitNames:
    """Under ``--junitxml``: a case's ``<testcase>`` gets the ``classname`` and ``name`` that
    ``trajrun run --junit-xml`` gives it (``reports.junit.testcase_names``), not those pytest
    derives from the node id (``suites.x.suite.yaml``), so a case keeps its CI history whichever
    runs it; ``--junitprefix`` still leads.

    pytest's junitxml keeps the attributes set on a testcase's reporter over its own (as for
    ``record_xml_attribute``); these hooks run before junitxml's, on the controller under xdist.
    """

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Name a case's testcase before junitxml writes it."""
        self._name(report)

    @pytest.hookimpl(tryfirst=True)
    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        """Name a suite file's load-error testcase before junitxml writes it."""
        self._name(report)

    def _name(self, report: pytest.TestReport | pytest.CollectReport) -> None:
        """Set the testcase's names from the report's ``TESTCASE``, when junitxml is writing."""
        names = getattr(report, TESTCASE, None)
        xml = self.config.stash.get(_JUNIT_XML, None) if _JUNIT_XML is not None else None
        if not names or xml is None:
            return
        from .reports.junit import testcase_names  # deferred: loads in every pytest session

        classname, name = testcase_names(*names)
        reporter = xml.node_reporter(report)
        prefix = f"{xml.prefix}." if xml.prefix else ""
        reporter.add_attribute("classname", prefix + classname)
        reporter.add_attribute("name", name)


def case_report(result: CaseResult) -> str:
    """What ``trajrun run`` prints for a case: the one-line message, the details body, then the
    notes (a suite's or a source's strings escaped as the console escapes them)."""
    from .errors import inline  # deferred: the plugin loads in every pytest session
    from .reports.text import (  # deferred: the plugin loads in every pytest session
        not_a_command,
        terminal_safe,
    )

    parts = [
        inline(result.message),
        terminal_safe(result.details),
        *(f"note: {inline(note)}" for note in result.notes),
    ]
    return not_a_command("\n".join(part for part in parts if part))


class CaseItem(pytest.Item):
    """One case of a suite; it runs in setup (so a case error is a pytest
    error) and is judged in the call."""

    def __init__(self, *, suite: Suite, case: Case, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.suite = suite
        self.case = case
        self.result: CaseResult | None = None
        self._mark(suite, case)

    def _mark(self, suite: Suite, case: Case) -> None:
        """Tags become markers (registered on first sight); skip becomes a skip marker."""
        self.extra_keyword_matches.add(suite.name)
        for tag in dict.fromkeys((*suite.tags, *case.tags)):
            if _is_marker_name(tag):
                _register_marker(self.config, tag)
                self.add_marker(tag)
            else:
                self.extra_keyword_matches.add(tag)
        if case.skip is not None:
            self.add_marker(pytest.mark.skip(reason=_reason(case.skip or "skipped")))

    def setup(self) -> None:
        """Run the case (each file source read once per session); a case error is raised here."""
        from .run.execute import (  # deferred: the plugin loads in every pytest session
            SourceCache,
            run_case,
        )
        from .run.plans import case_id  # deferred: the plugin loads in every pytest session

        cache = self.config.stash.setdefault(_CACHE, SourceCache())
        cid = case_id(self.config.rootpath, self.path, self.case.name)
        judge = _judge(self.config) if self.case.expect.judge is not None else None
        if self.case.source is not None and self.case.source.each is not None:
            from .run.bulk import BulkSession  # deferred: the plugin loads in every pytest session

            with BulkSession() as bulk:  # a bulk case runs in this process, over every record
                self.result = bulk.run(self.case, self.suite, cid)
        else:
            update = self.config.getoption("trajrun_update_golden")
            self.result = run_case(self.case, self.suite, cid, cache, update, judge)
        if self.result.notes:
            notes = "\n".join(f"note: {_reason(note)}" for note in self.result.notes)
            self.add_report_section("setup", "trajrun", notes)
        verdict = self.result.evaluation.judge if self.result.evaluation else None
        if verdict is not None and verdict.score is not None:
            from .reports.text import judge_text  # deferred: only a judged case needs it

            self.add_report_section("setup", "trajrun judge", _reason(judge_text(verdict)))
        if self.result.outcome == "error":
            raise CaseProblem(self.result)

    def runtest(self) -> None:
        """Turn the result into pytest's outcome: failed and xpassed
        raise, xfailed reports as xfail."""
        result = self.result
        assert result is not None, "setup() runs the case"
        if result.outcome in ("failed", "xpassed"):
            raise CaseProblem(result)
        if result.outcome == "xfailed":
            pytest.xfail(_reason(result.message))
        if result.outcome == "skipped":
            # what it `requires` is missing, or its only check is a skipped judge
            pytest.skip(_reason(result.message))

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None
    ) -> str | TerminalRepr:
        """A failed case prints as the CLI prints it; anything else
        falls back to pytest's report."""
        if isinstance(excinfo.value, CaseProblem):
            return self._case_repr(excinfo.value.result)
        if isinstance(excinfo.value, pytest.xfail.Exception):
            # pytest shows its reason, not this: skip the trace
            return excinfo.value.msg or ""
        return super().repr_failure(excinfo, style)

    def _case_repr(self, result: CaseResult) -> TerminalRepr:
        """``file:line`` then the case report, with the one-line message as
        the crash line pytest summarises.

        Built from pytest's own report classes, so pytest-xdist carries
        it from its workers unchanged.
        """
        from _pytest._code.code import (  # deferred: as below
            ReprEntry,
            ReprExceptionInfo,
            ReprFileLocation,
            ReprTraceback,
        )

        from .errors import inline  # deferred: the plugin loads in every pytest session
        from .reports.text import not_a_command  # deferred: as above

        where, line = inline(self.location[0]), self.case.loc.line
        lines = [not_a_command(f"{where}:{line}"), *case_report(result).splitlines()]
        entry = ReprEntry(lines, None, None, None, "value")
        crash = ReprFileLocation(where, line, _reason(result.message))
        return ReprExceptionInfo(
            reprtraceback=ReprTraceback([entry], None, "value"), reprcrash=crash
        )

    def reportinfo(self) -> tuple[Path, int, str]:
        """The suite file, the case's 0-based line, and a label."""
        return self.path, max(self.case.loc.line - 1, 0), f"case {self.name}"


def _reason(text: str) -> str:
    """A suite's or a source's text (a skip reason, a message, a note) as
    one line pytest prints safely."""
    from .errors import inline  # deferred: the plugin loads in every pytest session
    from .reports.text import not_a_command  # deferred: the plugin loads in every pytest session

    return not_a_command(inline(text))


def _is_marker_name(tag: str) -> bool:
    """Only identifiers can be registered markers; ``_`` names are private to
    pytest, its own markers act."""
    return tag.isidentifier() and not tag.startswith("_") and tag not in PYTEST_MARKERS


def _register_marker(config: pytest.Config, tag: str) -> None:
    """Declare a tag as a marker once, so ``--strict-markers`` accepts it."""
    seen = config.stash.setdefault(_MARKERS, set())
    if tag not in seen:
        seen.add(tag)
        config.addinivalue_line("markers", f"{tag}: trajrun suite tag")
