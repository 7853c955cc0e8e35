"""CI gates of ``trajrun run``: ``--baseline`` marks failures new or known (console, JSON, JUnit,
HTML, GitHub) and ``--fail-on new`` lets known ones pass; ``--min-pass-rate``; ``--lf``, ``--ff``
and ``--cache-clear`` over the record in ``.trajrun-cache/``."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Collection
from pathlib import Path

import pytest
from cli_helpers import invoke_in

CASE = """\
  - name: {name}
    source: ../runs/{name}.json
    steps:
      - get_weather: {{city: {city}}}
"""
CITIES = {"paris": "Paris", "lyon": "Lyon", "nice": "Nice"}
W = "suites/weather.suite.yaml"


def project(folder: Path, wrong: Collection[str] = (),
            files: tuple[str, ...] = ("weather",)) -> Path:
    """Suites (a file per name in ``files``, each with the three cases) whose ``wrong`` cases call
    the wrong city; returns the folder."""
    (folder / "suites").mkdir(exist_ok=True)
    (folder / "runs").mkdir(exist_ok=True)
    cases = "".join(CASE.format(name=case, city=city) for case, city in CITIES.items())
    for name in files:
        text = f"suite: {name}\ncases:\n{cases}"
        (folder / "suites" / f"{name}.suite.yaml").write_text(text, encoding="utf-8")
    for case, city in CITIES.items():
        called = "Rome" if case in wrong else city
        data = {"tool_calls": [{"name": "get_weather", "args": {"city": called}}]}
        (folder / "runs" / f"{case}.json").write_text(json.dumps(data), encoding="utf-8")
    return folder


def short_summary(output: str) -> list[str]:
    """The lines from the short test summary on, the run time left out."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if "short test summary info" in line)
    return [line.split(" in ")[0] if line[:1].isdigit() else line for line in lines[start:]]


def baseline_properties(junit: Path) -> list[tuple[str | None, str | None]]:
    """The ``baseline_*`` suite properties of a JUnit report, in order."""
    props = ET.parse(junit).getroot().findall(".//testsuite/properties/property")
    return [(p.get("name"), p.get("value")) for p in props
            if p.get("name", "").startswith("baseline")]


def ran(output: str) -> list[str]:
    """The case ids of a ``-v`` run, in the order they ran."""
    return [line.split()[0] for line in output.splitlines() if line.endswith("%]")]


@pytest.fixture
def baseline(tmp_path: Path) -> Path:
    """``base.json``: a run where lyon failed."""
    project(tmp_path, {"lyon"})
    assert invoke_in(tmp_path, "run", "suites", "--json", "base.json", "-q").exit_code == 1
    return tmp_path


def test_fail_on_new_passes_over_a_known_failure(baseline: Path) -> None:
    """lyon fails again: known, and with ``--fail-on new`` the run exits 0; each report marks it."""
    out = invoke_in(baseline, "run", "suites", "--baseline", "base.json", "--fail-on", "new",
                    "--json", "r.json", "--junit-xml", "j.xml", "--html", "r.html",
                    "--annotations", "github")
    assert out.exit_code == 0, out.output
    assert f"{W}:7\nknown failure: it failed in the baseline too\n" in out.stdout
    title = "title=weather %3A%3A lyon failed (known failure)::"
    assert f"::warning file={W},line=7,{title}" in out.stdout
    assert short_summary(out.stdout)[1:-1] == [  # the annotation last
        f"FAILED {W}::lyon [known] - 1 check failed: steps (1 arg differs)",
        "==================================== gates =====================================",
        "--baseline base.json: 0 new failures, 1 known (failing there too)",
        "--fail-on new: the 1 known failure does not fail the run",
        "=" * 80,
        "2 passed, 1 failed",
    ]
    data = json.loads((baseline / "r.json").read_text())
    assert [c["baseline"] for c in data["suites"][0]["cases"]] == [None, "known", None]
    assert data["summary"]["gates"] == {"baseline": "base.json", "new": 0, "known": 1,
                                        "fail_on": "new", "min_pass_rate": None,
                                        "pass_rate": 0.666667}
    assert data["summary"]["exit_code"] == 0
    assert baseline_properties(baseline / "j.xml") == [("baseline_known", "lyon")]
    page = (baseline / "r.html").read_text(encoding="utf-8")
    assert '"baseline":"known"' in page and "known failure: it failed in the baseline too" in page


def test_fail_on_new_fails_over_a_new_failure(baseline: Path) -> None:
    """nice fails now and did not in the baseline: a new failure, exit 1, an ``::error``."""
    project(baseline, {"lyon", "nice"})
    out = invoke_in(baseline, "run", "suites", "--baseline", "base.json", "--fail-on", "new",
                    "--annotations", "github", "--junit-xml", "j.xml")
    assert out.exit_code == 1
    title = "title=weather %3A%3A nice failed (new failure)::"
    assert f"::error file={W},line=11,{title}" in out.stdout
    assert short_summary(out.stdout)[1:5] == [
        f"FAILED {W}::lyon [known] - 1 check failed: steps (1 arg differs)",
        f"FAILED {W}::nice [new] - 1 check failed: steps (1 arg differs)",
        "==================================== gates =====================================",
        "--baseline base.json: 1 new failure, 1 known (failing there too)",
    ]
    assert baseline_properties(baseline / "j.xml") == [("baseline_known", "lyon"),
                                                       ("baseline_new", "nice")]
    anyway = invoke_in(baseline, "run", "suites", "--baseline", "base.json", "-q")
    assert anyway.exit_code == 1  # --fail-on any (the default): a known failure still fails


def test_fail_on_new_needs_a_baseline_and_a_corrupt_baseline_is_refused(baseline: Path) -> None:
    """``--fail-on new`` alone, and a baseline that is not a JSON report: exit 2 before anything
    runs."""
    out = invoke_in(baseline, "run", "suites", "--fail-on", "new")
    assert out.exit_code == 2 and out.stdout == ""
    assert out.stderr == ("trajrun: error: --fail-on new keeps only the failures a baseline does "
                          "not know; add --baseline FILE (a `trajrun run --json` report of an "
                          "earlier run)\n")
    (baseline / "bad.json").write_text('{"version": 1, "summary": {}, "suites": [{"name": 3}]}')
    bad = invoke_in(baseline, "run", "suites", "--baseline", "bad.json")
    assert bad.exit_code == 2 and bad.stdout == ""
    assert bad.stderr == ("trajrun: error: --baseline: bad.json: suites[0].name must be a string, "
                          "found a whole number; give the file that `trajrun run --json FILE` "
                          "wrote\n")


def test_min_pass_rate_lets_failures_pass_when_enough_cases_did(tmp_path: Path) -> None:
    """2 of 3 cases pass: ``--min-pass-rate 0.6`` exits 0 (the failure still reported), 0.7
    exits 1."""
    project(tmp_path, {"lyon"})
    out = invoke_in(tmp_path, "run", "suites", "--min-pass-rate", "0.6", "--json", "r.json")
    assert out.exit_code == 0
    passes = "66.7% of the 3 cases that ran passed; the failures do not fail the run"
    assert short_summary(out.stdout) == [
        "=========================== short test summary info ============================",
        f"FAILED {W}::lyon - 1 check failed: steps (1 arg differs)",
        "==================================== gates =====================================",
        f"--min-pass-rate 0.6: {passes}",
        "=" * 80,
        "2 passed, 1 failed",
    ]
    assert json.loads((tmp_path / "r.json").read_text())["summary"]["exit_code"] == 0
    strict = invoke_in(tmp_path, "run", "suites", "--min-pass-rate", "0.7", "-q")
    assert strict.exit_code == 1
    fails = "66.7% of the 3 cases that ran passed; below it: the failures fail the run"
    assert f"--min-pass-rate 0.7: {fails}" in strict.stdout.splitlines()
    wrong = invoke_in(tmp_path, "run", "suites", "--min-pass-rate", "95")
    assert wrong.exit_code == 2 and "95.0 is not in the range 0<=x<=1" in wrong.stderr


def test_last_failed_reruns_exactly_the_failed_cases(tmp_path: Path) -> None:
    """A run records its failures in .trajrun-cache/ (with a .gitignore); ``--lf`` reruns only
    those, a fixed case leaves the record, and with none left ``--lf`` runs every case."""
    project(tmp_path, {"lyon", "nice"})
    assert invoke_in(tmp_path, "run", "suites").exit_code == 1
    record = tmp_path / ".trajrun-cache" / "lastfailed.json"
    assert json.loads(record.read_text()) == {"failed": [f"{W}::lyon", f"{W}::nice"]}
    assert (record.parent / ".gitignore").read_text().splitlines()[-1] == "*"
    again = invoke_in(tmp_path, "run", "suites", "--lf", "-v")
    assert again.exit_code == 1
    assert again.stderr == "trajrun: note: --lf: rerunning the 2 cases that failed last time\n"
    assert ran(again.stdout) == [f"{W}::lyon", f"{W}::nice"]
    assert again.stdout.splitlines()[-1].startswith("2 failed, 1 deselected in ")
    project(tmp_path, {"nice"})
    fixed = invoke_in(tmp_path, "run", "suites", "--last-failed", "-q")
    assert fixed.stdout.splitlines()[-1].startswith("1 passed, 1 failed, 1 deselected in ")
    assert json.loads(record.read_text()) == {"failed": [f"{W}::nice"]}
    project(tmp_path)
    invoke_in(tmp_path, "run", "suites", "--lf", "-q")
    none_left = invoke_in(tmp_path, "run", "suites", "--lf", "-q")
    assert none_left.stderr == "trajrun: note: --lf: no failures recorded; running every case\n"
    assert none_left.exit_code == 0 and none_left.stdout.splitlines()[-1].startswith("3 passed in ")


def test_last_failed_with_workers_and_a_suite_that_did_not_load(tmp_path: Path) -> None:
    """Under ``-j 2`` the workers select the same cases; a suite file that did not load is rerun
    whole."""
    project(tmp_path, {"paris"}, files=("alpha", "beta", "gamma"))
    gamma = tmp_path / "suites" / "gamma.suite.yaml"
    good = gamma.read_text()
    gamma.write_text(good.replace("steps:", "stepz:", 1))
    assert invoke_in(tmp_path, "run", "suites", "-q").exit_code == 2
    gamma.write_text(good)
    out = invoke_in(tmp_path, "run", "suites", "--lf", "-j", "2", "-v")
    assert out.stderr == ("trajrun: note: --lf: rerunning the 2 cases that failed and 1 suite file "
                          "that did not load last time\n")
    assert ran(out.stdout) == ["suites/alpha.suite.yaml::paris", "suites/beta.suite.yaml::paris",
                               "suites/gamma.suite.yaml::paris", "suites/gamma.suite.yaml::lyon",
                               "suites/gamma.suite.yaml::nice"]


def test_failed_first_runs_the_last_failures_first(tmp_path: Path) -> None:
    """``--ff`` runs every case, the suite files with last failures first and in each those cases
    first."""
    project(tmp_path, {"nice"}, files=("alpha", "beta"))
    invoke_in(tmp_path, "run", "suites", "-k", "beta")
    out = invoke_in(tmp_path, "run", "suites", "--ff", "-v")
    assert out.stderr == "trajrun: note: --ff: running the 1 case that failed last time first\n"
    assert ran(out.stdout) == ["suites/beta.suite.yaml::nice", "suites/beta.suite.yaml::paris",
                               "suites/beta.suite.yaml::lyon", "suites/alpha.suite.yaml::paris",
                               "suites/alpha.suite.yaml::lyon", "suites/alpha.suite.yaml::nice"]


def test_cache_clear_forgets_failures_and_judge_answers(tmp_path: Path) -> None:
    """``--cache-clear`` empties the one cache folder (last failures, judge answers) before the
    run; a record trajrun did not write is noted and replaced."""
    project(tmp_path, {"lyon"})
    invoke_in(tmp_path, "run", "suites", "-q")
    cache = tmp_path / ".trajrun-cache"
    (cache / "judge" / "ab").mkdir(parents=True)
    answer = '{"score": 1, "reasoning": "ok", "model": "m"}'
    (cache / "judge" / "ab" / "ab12.json").write_text(answer)
    out = invoke_in(tmp_path, "run", "suites", "--cache-clear", "--lf", "-q")
    assert out.stderr == "trajrun: note: --lf: no failures recorded; running every case\n"
    assert not (cache / "judge").exists()
    assert json.loads((cache / "lastfailed.json").read_text()) == {"failed": [f"{W}::lyon"]}
    (cache / "lastfailed.json").write_text("[1, 2")
    odd = invoke_in(tmp_path, "run", "suites", "--lf", "-q")
    assert odd.stderr.splitlines() == [
        ("trajrun: note: .trajrun-cache/lastfailed.json is not a record trajrun wrote; it is "
         "replaced after this run"),
        "trajrun: note: --lf: no failures recorded; running every case"]
    assert json.loads((cache / "lastfailed.json").read_text()) == {"failed": [f"{W}::lyon"]}
