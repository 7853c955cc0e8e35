"""``trajrun diff OLD.json NEW.json``: regressed, fixed, still failing, new and removed cases, score
changes, the step-level difference of a regressed case, the JSON and HTML forms, and reports that
cannot be compared."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import invoke_in
from trajrun.reports.diff import align

SUITE = """\
suite: weather
cases:
  - name: paris
    source: runs/paris.json
    mode: superset
    steps:
      - search: {q: paris}
      - get_weather: {city: Paris}
  - name: lyon
    source: runs/lyon.json
    steps:
      - get_weather: {city: Lyon}
  - name: nice
    source: runs/nice.json
    steps:
      - get_weather: {city: Nice}
"""
Calls = dict[str, list[tuple[str, object]]]
GOOD: Calls = {
    "paris": [("search", {"q": "paris"}), ("get_weather", {"city": "Paris"}), ("log", {"a": 1})],
    "lyon": [("get_weather", {"city": "Lyon"})],
    "nice": [("get_weather", {"city": "Nice"})],
}


def runs(folder: Path, calls: Calls) -> None:
    """Write each case's run file (``{"tool_calls": [...]}``)."""
    (folder / "runs").mkdir(exist_ok=True)
    for name, made in calls.items():
        data = {"tool_calls": [{"name": tool, "args": args} for tool, args in made]}
        (folder / "runs" / f"{name}.json").write_text(json.dumps(data), encoding="utf-8")


def report(folder: Path, name: str, calls: Calls, suite: str = SUITE) -> Path:
    """Run the weather suite over ``calls`` and keep its JSON report as ``name``."""
    (folder / "suites").mkdir(exist_ok=True)
    text = suite.replace("runs/", "../runs/")
    (folder / "suites" / "weather.suite.yaml").write_text(text, encoding="utf-8")
    runs(folder, calls)
    invoke_in(folder, "run", "suites", "--json", name, "-q")
    return folder / name


@pytest.fixture
def regressed(tmp_path: Path) -> Path:
    """old.json (all pass) and new.json, where paris calls log first, another city, and book."""
    report(tmp_path, "old.json", GOOD)
    moved = [("log", {"a": 1}), ("get_weather", {"city": "Lyon", "units": "C"}),
             ("search", {"q": "paris"}), ("book", {"id": 1})]
    report(tmp_path, "new.json", {**GOOD, "paris": moved})
    return tmp_path


def test_regressed_case_shows_its_step_level_difference(regressed: Path) -> None:
    """A case that passed and now fails is regressed, exit status 1; its calls are aligned as a
    failure's table: one moved, one with other arguments (each argument's change below), one
    added."""
    command = [sys.executable, "-m", "trajrun", "diff", "old.json", "new.json"]
    done = subprocess.run(command, cwd=regressed, capture_output=True, text=True, timeout=60,
                          env={"NO_COLOR": "1", "PATH": ""}, check=False)
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("old: old.json: 3 passed in ")
    assert lines[1].startswith("new: new.json: 2 passed, 1 failed in ")
    get_weather = '[1] get_weather {"city":"Paris"}  [1] get_weather {"city":"Lyon","units":"C"}'
    assert lines[2:15] == [
        "================================ REGRESSED (1) =================================",
        "______________ suites/weather.suite.yaml::paris: passed -> failed ______________",
        "1 check failed: steps (1 arg differs)",
        "calls: 1 added, 1 moved, 1 arg differs",
        "old                               new                                          verdict",
        '[2] log {"a":1}                   [0] log {"a":1}                              moved',
        f"{get_weather}  args differ",
        '[0] search {"q":"paris"}          [2] search {"q":"paris"}                     same',
        '                                  [3] book {"id":1}                            ADDED',
        "",
        "get_weather: old [1] -> new [1]",
        '  $.city: was "Paris", now "Lyon"',
        '  $.units: was absent, now "C"',
    ]
    assert lines[-3:] == ["suites/weather.suite.yaml::paris: score 1.00 -> 0.67 (-0.33)",
                          "=" * 80, "1 regressed, 1 score change"]


def test_fixed_still_failing_new_removed_and_scores(tmp_path: Path) -> None:
    """Each kind of change has its section; nothing regressed, so the exit status is 0."""
    report(tmp_path, "old.json", {**GOOD, "lyon": [("get_weather", {"city": "Lion"})],
                                  "nice": [("get_weather", {"city": "Nizza"})]})
    renamed = SUITE.replace("paris", "rome")
    changed: Calls = {"rome": [("search", {"q": "rome"}), ("get_weather", {"city": "Paris"})],
                      "nice": [("get_weather", {"city": "Nizza"})]}
    report(tmp_path, "new.json", {**GOOD, **changed}, renamed)
    out = invoke_in(tmp_path, "diff", "old.json", "new.json")
    assert out.exit_code == 0, out.output
    assert out.stdout.splitlines()[2:] == [
        "================================== fixed (1) ===================================",
        "suites/weather.suite.yaml::lyon: failed -> passed",
        "============================== still failing (1) ===============================",
        "suites/weather.suite.yaml::nice: failed -> failed - 1 check failed: steps (1 arg differs)",
        "================================ new cases (1) =================================",
        "suites/weather.suite.yaml::rome: passed",
        "============================== removed cases (1) ===============================",
        "suites/weather.suite.yaml::paris: was passed",
        "============================== score changes (1) ===============================",
        "suites/weather.suite.yaml::lyon: score 0.00 -> 1.00 (+1.00)",
        "=" * 80,
        "1 fixed, 1 still failing, 1 new, 1 removed, 1 score change",
    ]


def test_json_to_stdout_for_machines(regressed: Path) -> None:
    """``--json -`` prints the diff as JSON on stdout (the console report goes to stderr)."""
    out = invoke_in(regressed, "diff", "old.json", "new.json", "--json", "-")
    assert out.exit_code == 1
    data = json.loads(out.stdout)
    assert data["exit_code"] == 1 and data["summary"] == "1 regressed, 1 score change"
    (case,) = data["regressed"]
    assert case["id"] == "suites/weather.suite.yaml::paris"
    assert (case["old"], case["new"]) == ("passed", "failed")
    assert case["calls"]["summary"] == "1 added, 1 moved, 1 arg differs"
    assert [(r["old"], r["new"], r["verdict"]) for r in case["calls"]["rows"]] == [
        (2, 0, "moved"), (1, 1, "args differ"), (0, 2, "same"), (None, 3, "ADDED")]
    assert case["calls"]["rows"][1]["diffs"] == ['$.city: was "Paris", now "Lyon"',
                                                 '$.units: was absent, now "C"']
    assert data["fixed"] == data["removed"] == [] and "REGRESSED (1)" in out.stderr


def test_html_page_escapes_everything_and_keeps_a_csp(tmp_path: Path) -> None:
    """``--html FILE`` writes a page in the report's style: a strict CSP, no script, names and
    arguments as text."""
    hostile = SUITE.replace("name: paris", "name: <script>alert(1)</script>")
    report(tmp_path, "old.json", GOOD, hostile)
    report(tmp_path, "new.json", {**GOOD, "paris": [("search", {"q": "<img src=x>"})]}, hostile)
    out = invoke_in(tmp_path, "diff", "old.json", "new.json", "--html", "diff.html")
    assert out.exit_code == 1, out.output
    page = (tmp_path / "diff.html").read_text(encoding="utf-8")
    assert "<script" not in page and "<img" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "&lt;img src=x&gt;" in page
    assert ('content="default-src \'none\'; style-src \'unsafe-inline\'; img-src data:"' in page)
    assert '<td class="verdict"><span class="v">REMOVED</span></td>' in page and "--failed:" in page


def test_reports_of_different_suites_compare_what_they_share(tmp_path: Path) -> None:
    """A suite in one report only is named (its cases listed as new or removed); the shared suite is
    compared."""
    report(tmp_path, "old.json", GOOD)
    (tmp_path / "suites" / "billing.suite.yaml").write_text(
        "suite: billing\ncases:\n  - name: refund\n    source: ../runs/nice.json\n"
        "    steps: [get_weather]\n")
    report(tmp_path, "new.json", {**GOOD, "nice": [("get_weather", {"city": "Nizza"})]})
    out = invoke_in(tmp_path, "diff", "old.json", "new.json")
    assert out.exit_code == 1
    lines = out.stdout.splitlines()
    assert " suites/weather.suite.yaml::nice: passed -> failed " in lines[3]
    assert lines[-7:] == [
        "suites/billing.suite.yaml::refund: passed",
        "============================== score changes (1) ===============================",
        "suites/weather.suite.yaml::nice: score 1.00 -> 0.00 (-1.00)",
        "================================= not compared =================================",
        "suite 'billing' is only in new.json: its 1 case is listed as new",
        "=" * 80,
        "1 regressed, 1 new, 1 score change",
    ]


def test_reports_that_share_no_suite_are_an_error(tmp_path: Path) -> None:
    """Two reports of different suites altogether: exit 2, saying which suites each holds."""
    report(tmp_path, "old.json", GOOD)
    report(tmp_path, "new.json", GOOD, SUITE.replace("suite: weather", "suite: climate"))
    out = invoke_in(tmp_path, "diff", "old.json", "new.json")
    assert out.exit_code == 2 and out.stdout == ""
    assert out.stderr == ("trajrun: error: old.json and new.json share no suite (old.json: "
                          "'weather'; new.json: 'climate'); compare two reports of the same "
                          "suites\n")


def test_a_corrupt_report_names_the_field_at_fault(regressed: Path) -> None:
    """A report that is not what ``--json`` writes: exit 2 with the field at fault (as ``trajrun
    report`` says)."""
    data = json.loads((regressed / "new.json").read_text())
    data["suites"][0]["cases"][1]["score"] = "high"
    (regressed / "new.json").write_text(json.dumps(data))
    out = invoke_in(regressed, "diff", "old.json", "new.json")
    assert out.exit_code == 2
    assert out.stderr == ("trajrun: error: new.json: suites[0].cases[1].score must be a number, "
                          "found a string; give the file that `trajrun run --json FILE` wrote\n")
    missing = invoke_in(regressed, "diff", "old.json", "gone.json")
    assert missing.exit_code == 2
    assert missing.stderr == ("trajrun: error: gone.json: file not found; write it with "
                              "`trajrun run --json gone.json`\n")


def test_a_suite_that_no_longer_loads_is_a_regression(tmp_path: Path) -> None:
    """A suite file that loaded in OLD and cannot be loaded in NEW counts as regressed; its cases
    are not listed as removed."""
    report(tmp_path, "old.json", GOOD)
    broken = SUITE.replace("    steps:\n      - get_weather: {city: Nice}", "    stepz: []")
    report(tmp_path, "new.json", GOOD, broken)
    out = invoke_in(tmp_path, "diff", "old.json", "new.json")
    assert out.exit_code == 1
    lines = out.stdout.splitlines()
    assert lines[2] == f"{'=' * 32} REGRESSED (1) {'=' * 33}"
    assert lines[3].startswith("suite 'weather' (suites/weather.suite.yaml) could not be loaded in "
                               "new.json (3 cases in old.json): suites/weather.suite.yaml:15:5: ")
    assert lines[3].endswith(" (exit status 1)") and lines[-1] == "1 regressed"


def test_a_regressed_case_without_a_run_says_why_there_is_no_table(tmp_path: Path) -> None:
    """A case that errs (its source cannot be read) has no run to compare: the entry says so."""
    report(tmp_path, "old.json", GOOD)
    (tmp_path / "runs" / "lyon.json").write_text("{not json")
    report(tmp_path, "new.json", {k: v for k, v in GOOD.items() if k != "lyon"})
    out = invoke_in(tmp_path, "diff", "old.json", "new.json")
    assert out.exit_code == 1
    assert ("no call table: new.json holds no run for this case (it could not run, or is a bulk "
            "case)" in out.stdout.splitlines())


def test_align_places_a_removed_call_after_the_call_before_it() -> None:
    """A call only OLD made sits after the NEW position of the OLD call before it."""
    old = [{"name": "a", "args": {}}, {"name": "gone", "args": {}}, {"name": "b", "args": {}}]
    new = [{"name": "a", "args": {}}, {"name": "b", "args": {}}, {"name": "c", "args": {}}]
    rows = [(r.old, r.new, r.verdict) for r in align(old, new)]
    assert rows == [(0, 0, "same"), (1, None, "REMOVED"), (2, 1, "same"), (None, 2, "ADDED")]
