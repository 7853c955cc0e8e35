"""The pytest plugin: suite files collected and run as pytest items (driven through ``pytester``)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
import yaml  # noqa: F401  (see below)

# pytester's inline runs restore sys.modules after each run, but PyYAML's C parser keeps the event
# classes of its first import: importing yaml here, once, keeps them the same in every inline run.

PARIS = {"tool_calls": [{"name": "search", "args": {"q": "paris"}}, {"name": "get_forecast", "args": {"city": "Paris"}}]}

WEATHER = """\
suite: weather
tags: [smoke]
cases:
  - name: good
    source: runs/paris.json
    steps:
      - search: {q: paris}
      - get_forecast: {city: Paris}
  - name: wrong_city
    tags: [nightly]
    source: runs/paris.json
    steps:
      - search: {q: tokyo}
      - get_forecast: {city: Tokyo}
  - name: no_source
    source: runs/missing.json
    steps: [search]
  - name: later
    skip: the forecast API is down
    source: runs/missing.json
    steps: [search]
  - name: known_bug
    xfail: tokyo is not supported yet
    source: runs/paris.json
    steps:
      - search: {q: tokyo}
      - get_forecast: {city: Tokyo}
  - name: fixed_bug
    xfail: flaky ordering
    source: runs/paris.json
    steps:
      - search: {q: paris}
      - get_forecast: {city: Paris}
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A folder with collection on, a recorded run and the weather suite (hypothesis off: it is slow to load)."""
    pytester.makeini("[pytest]\ntrajrun_collect = true\naddopts = -p no:hypothesispytest\n")
    runs = pytester.mkdir("runs")
    (runs / "paris.json").write_text(json.dumps(PARIS), encoding="utf-8")
    (pytester.path / "weather.suite.yaml").write_text(WEATHER, encoding="utf-8")
    return pytester


def test_passing_case_passes(project: pytest.Pytester) -> None:
    """A case whose steps match its source is a passed test."""
    project.runpytest("-k", "good").assert_outcomes(passed=1, deselected=5)


def test_failing_case_fails_with_message_and_table(project: pytest.Pytester) -> None:
    """A mismatch fails and prints the one-line message and the expected/actual table, no traceback."""
    result = project.runpytest("-k", "wrong_city")
    result.assert_outcomes(failed=1, deselected=5)
    result.stdout.fnmatch_lines(["1 check failed: steps*", "*expected*actual*verdict*", '*search {"q":"tokyo"}*search {"q":"paris"}*'])
    text = result.stdout.str()
    assert "Traceback" not in text and "runner/" not in text


def test_failure_report_is_the_cli_case_report(project: pytest.Pytester) -> None:
    """The failure body is what ``trajrun run`` prints for the case: message, then the details lines."""
    from trajrun.run.execute import SourceCache, run_case
    from trajrun.suites.load import load_suite

    suite = load_suite(project.path / "weather.suite.yaml")
    case = next(c for c in suite.cases if c.name == "wrong_city")
    case_result = run_case(case, suite, "weather.suite.yaml::wrong_city", SourceCache())
    expected = [case_result.message, *case_result.details.splitlines()]
    result = project.runpytest("-k", "wrong_city")
    result.stdout.fnmatch_lines([line.replace("[", "[[]") for line in expected], consecutive=True)


def test_reports_start_with_file_and_line_and_summaries_read_like_the_cli(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failure or error report starts with the case's ``file:line``; ``-rA`` lines carry the CLI's one-line message."""
    monkeypatch.setenv("COLUMNS", "400")  # summary lines are cut to the terminal's width
    result = project.runpytest("-k", "wrong_city or no_source", "-rA")
    result.stdout.fnmatch_lines(["*_ case wrong_city _*", "weather.suite.yaml:9", "1 check failed: steps (2 args differ)",
                                 "steps: 2 args differ"], consecutive=True)  # fmt: skip
    result.stdout.fnmatch_lines(["*_ ERROR at setup of case no_source _*", "weather.suite.yaml:15",
                                 "source: *missing.json: file not found; *"], consecutive=True)  # fmt: skip
    result.stdout.fnmatch_lines([
        "ERROR weather.suite.yaml::no_source - source: *missing.json: file not found; *",
        "FAILED weather.suite.yaml::wrong_city - 1 check failed: steps (2 args differ)",
    ])  # fmt: skip
    assert "CaseErrorException" not in result.stdout.str() and "CaseFailure" not in result.stdout.str()


def test_xdist_runs_suites_and_carries_their_reports(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """``-n 2`` spreads the cases over two workers with the same outcomes; the reports travel from the workers
    with their ``file:line`` and one-line message intact."""
    monkeypatch.setenv("COLUMNS", "400")
    result = project.runpytest_subprocess("-n", "2", "-rA")
    result.assert_outcomes(passed=1, failed=2, errors=1, skipped=1, xfailed=1)
    result.stdout.fnmatch_lines(["weather.suite.yaml:9", "1 check failed: steps (2 args differ)"], consecutive=True)
    result.stdout.fnmatch_lines([
        "ERROR weather.suite.yaml::no_source - source: *missing.json: file not found; *",
        "FAILED weather.suite.yaml::wrong_city - 1 check failed: steps (2 args differ)",
    ])  # fmt: skip


def test_case_error_is_a_pytest_error(project: pytest.Pytester) -> None:
    """A missing source is an error (not a failure) whose report names the file, without a traceback."""
    result = project.runpytest("-k", "no_source")
    result.assert_outcomes(errors=1, deselected=5)
    text = result.stdout.str()
    assert "missing.json" in text
    assert "Traceback" not in text


def test_skip_is_skipped_with_its_reason(project: pytest.Pytester) -> None:
    """``skip: reason`` skips the case (its missing source is never read) and shows the reason."""
    result = project.runpytest("-k", "later", "-rs")
    result.assert_outcomes(skipped=1, deselected=5)
    result.stdout.fnmatch_lines(["*the forecast API is down*"])


def test_xfail_failing_case_is_xfailed(project: pytest.Pytester) -> None:
    """An ``xfail`` case whose checks fail is reported as xfailed with the reason."""
    result = project.runpytest("-k", "known_bug", "-rx")
    result.assert_outcomes(xfailed=1, deselected=5)
    result.stdout.fnmatch_lines(["*tokyo is not supported yet*"])


def test_xfail_passing_case_fails_strictly(project: pytest.Pytester) -> None:
    """An ``xfail`` case that passes fails as ``XPASS(strict): reason``."""
    result = project.runpytest("-k", "fixed_bug")
    result.assert_outcomes(failed=1, deselected=5)
    result.stdout.fnmatch_lines(["*XPASS(strict): flaky ordering*"])


def test_xfail_does_not_cover_errors(project: pytest.Pytester) -> None:
    """An ``xfail`` case that cannot run stays an error."""
    suite = "cases:\n  - name: gone\n    xfail: known\n    source: runs/missing.json\n    steps: [search]\n"
    (project.path / "gone.suite.yaml").write_text(suite, encoding="utf-8")
    project.runpytest("gone.suite.yaml").assert_outcomes(errors=1)


def test_whole_suite_outcomes(project: pytest.Pytester) -> None:
    """Every case of the file is one item, each with its own outcome."""
    result = project.runpytest()
    result.assert_outcomes(passed=1, failed=2, errors=1, skipped=1, xfailed=1)


def test_items_are_named_like_cli_case_ids(project: pytest.Pytester) -> None:
    """Node ids are ``file::case``, as ``trajrun run`` names cases."""
    result = project.runpytest("--collect-only", "-q")
    result.stdout.fnmatch_lines(["weather.suite.yaml::good", "weather.suite.yaml::wrong_city"])


def test_parametrized_cases_are_items(project: pytest.Pytester) -> None:
    """``parametrize`` expands to one item per value, named ``name[k=v]``."""
    suite = (
        "cases:\n  - name: city\n    parametrize: {city: [paris, tokyo]}\n"
        "    source: runs/paris.json\n    mode: superset\n    steps:\n      - search: {q: '{{ city }}'}\n"
    )
    (project.path / "cities.suite.yaml").write_text(suite, encoding="utf-8")
    result = project.runpytest("cities.suite.yaml", "-v")
    result.stdout.fnmatch_lines(["cities.suite.yaml::city?city=paris? PASSED*", "cities.suite.yaml::city?city=tokyo? FAILED*"])
    result.assert_outcomes(passed=1, failed=1)


def test_keyword_selects_cases(project: pytest.Pytester) -> None:
    """``-k`` selects by case name."""
    result = project.runpytest("-k", "good or known_bug")
    result.assert_outcomes(passed=1, xfailed=1, deselected=4)


def test_marker_selects_tagged_cases_under_strict_markers(project: pytest.Pytester) -> None:
    """Tags are registered markers: ``-m nightly --strict-markers`` selects the tagged case."""
    result = project.runpytest("-m", "nightly", "--strict-markers")
    result.assert_outcomes(failed=1, deselected=5)


def test_suite_tags_mark_every_case(project: pytest.Pytester) -> None:
    """A suite's tags apply to all its cases."""
    result = project.runpytest("-m", "smoke and not nightly", "--strict-markers")
    result.assert_outcomes(passed=1, failed=1, errors=1, skipped=1, xfailed=1, deselected=1)


def test_non_identifier_tag_is_a_keyword(project: pytest.Pytester) -> None:
    """A tag like ``no-network`` is no marker but ``-k`` still selects it, under ``--strict-markers``."""
    suite = "tags: [no-network]\ncases:\n  - name: one\n    source: runs/paris.json\n    steps: [search, get_forecast]\n"
    (project.path / "offline.suite.yaml").write_text(suite, encoding="utf-8")
    result = project.runpytest("--strict-markers", "-k", "no-network")
    result.assert_outcomes(passed=1, deselected=6)


def test_tag_named_like_a_pytest_marker_is_a_keyword(project: pytest.Pytester) -> None:
    """A tag ``skip`` does not skip the case: it is only a keyword for ``-k``."""
    suite = "tags: [skip]\ncases:\n  - name: one\n    source: runs/paris.json\n    steps: [search, get_forecast]\n"
    (project.path / "odd.suite.yaml").write_text(suite, encoding="utf-8")
    project.runpytest("odd.suite.yaml", "-k", "skip").assert_outcomes(passed=1)


def test_broken_suite_is_a_collection_error_without_traceback(project: pytest.Pytester) -> None:
    """A suite that does not load is a collection error listing ``file:line:column: path: message``."""
    (project.path / "broken.suite.yaml").write_text("cases:\n  - name: x\n    mdoe: strict\n    steps: [a]\n", encoding="utf-8")
    result = project.runpytest("broken.suite.yaml")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*broken.suite.yaml:3:5: cases[[]0[]]*mdoe*mode*"])
    assert "Traceback" not in result.stdout.str()


def test_trajrun_var_sets_template_variables(project: pytest.Pytester) -> None:
    """``--trajrun-var city=paris`` overrides the suite's ``vars``."""
    suite = "vars: {city: tokyo}\ncases:\n  - name: one\n    source: runs/paris.json\n    mode: superset\n    steps:\n      - search: {q: '{{ city }}'}\n"
    (project.path / "vars.suite.yaml").write_text(suite, encoding="utf-8")
    project.runpytest("vars.suite.yaml").assert_outcomes(failed=1)
    project.runpytest("vars.suite.yaml", "--trajrun-var", "city=paris").assert_outcomes(passed=1)


def test_malformed_trajrun_var_is_a_usage_error(project: pytest.Pytester) -> None:
    """``--trajrun-var`` without ``=`` stops pytest with a usage error naming the value."""
    result = project.runpytest("--trajrun-var", "city")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--trajrun-var 'city'*"])


def test_ini_turns_collection_off(project: pytest.Pytester) -> None:
    """``trajrun_collect = false`` leaves suite files alone."""
    project.makeini("[pytest]\ntrajrun_collect = false\n")
    result = project.runpytest()
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED


def test_file_source_is_read_once_per_session(project: pytest.Pytester) -> None:
    """Cases naming one file share its reading: deleting it after the first case changes nothing."""
    project.makeconftest(
        "import pathlib\n"
        "def pytest_runtest_teardown(item):\n"
        "    pathlib.Path('runs/paris.json').unlink(missing_ok=True)\n"
    )
    result = project.runpytest("-k", "good or wrong_city")
    result.assert_outcomes(passed=1, failed=1, deselected=4)


def test_reportinfo_gives_file_and_zero_based_line(project: pytest.Pytester) -> None:
    """JUnit (xunit1) carries the case's file and 0-based line from ``reportinfo``."""
    project.runpytest("-k", "good", "--junitxml=out.xml", "-o", "junit_family=xunit1")
    case = ET.parse(project.path / "out.xml").getroot().find(".//testcase")
    assert case is not None
    assert (case.get("file"), case.get("line")) == ("weather.suite.yaml", "3")


def test_junitxml_lists_cases_as_testcases(project: pytest.Pytester) -> None:
    """``--junitxml`` writes one testcase per case with its outcome element."""
    project.runpytest("--junitxml=out.xml")
    cases = {c.get("name"): c for c in ET.parse(project.path / "out.xml").getroot().iter("testcase")}
    assert set(cases) == {"good", "wrong_city", "no_source", "later", "known_bug", "fixed_bug"}
    assert cases["wrong_city"].find("failure") is not None
    assert cases["no_source"].find("error") is not None
    assert cases["later"].find("skipped") is not None


GOLDEN = """\
suite: recorded
cases:
  - name: paris
    source: runs/paris.json
    golden: golden/paris.yaml
"""


def test_update_golden_writes_missing_and_failing_golden_files(project: pytest.Pytester) -> None:
    """Without the flag a missing golden file is an error; with it the file is written, noted, and then passes."""
    (project.path / "recorded.suite.yaml").write_text(GOLDEN, encoding="utf-8")
    golden = project.path / "golden" / "paris.yaml"
    project.runpytest("-k", "paris").assert_outcomes(errors=1)
    assert not golden.exists()

    created = project.runpytest("-k", "paris", "--trajrun-update-golden", "-rA")
    created.assert_outcomes(passed=1)
    created.stdout.fnmatch_lines(["*note: golden file*created*"])
    assert [step["search"] for step in yaml.safe_load(golden.read_text(encoding="utf-8"))[:1]] == [{"q": "paris"}]

    golden.write_text("- search: {q: tokyo}\n- get_forecast: {city: Tokyo}\n", encoding="utf-8")
    project.runpytest("-k", "paris").assert_outcomes(failed=1)
    project.runpytest("-k", "paris", "--trajrun-update-golden").assert_outcomes(passed=1)
    project.runpytest("-k", "paris").assert_outcomes(passed=1)


USER_TEST = """\
import runner


def test_users_own_runner():
    assert runner.NAME == "the user's runner"
"""


def test_project_with_its_own_runner_module(pytester: pytest.Pytester) -> None:
    """A project with its own ``runner.py`` runs its tests with the plugin loaded (it once shadowed trajrun's package)."""
    pytester.makepyfile(runner="NAME = \"the user's runner\"\n", test_user=USER_TEST)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--trajrun-var", "x=1")  # trajrun's own option
    result.assert_outcomes(passed=1)


def test_project_with_its_own_runner_package(pytester: pytest.Pytester) -> None:
    """A project with a ``runner/`` package on ``pythonpath = .`` runs its tests, and its suites too."""
    pytester.makeini("[pytest]\npythonpath = .\ntrajrun_collect = true\naddopts = -p no:hypothesispytest -p no:cacheprovider\n")
    package = pytester.mkpydir("runner")
    (package / "__init__.py").write_text("NAME = \"the user's runner\"\n", encoding="utf-8")
    (package / "pytest_plugin.py").write_text("raise ImportError('the user\\'s module, never to be loaded')\n", encoding="utf-8")
    pytester.makepyfile(test_user=USER_TEST)
    runs = pytester.mkdir("runs")
    (runs / "paris.json").write_text(json.dumps(PARIS), encoding="utf-8")
    (pytester.path / "weather.suite.yaml").write_text(WEATHER, encoding="utf-8")
    result = pytester.runpytest_subprocess("-k", "users_own_runner or good")
    result.assert_outcomes(passed=2, deselected=5)
