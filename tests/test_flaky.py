"""Flakiness, measured: ``repeat: k`` reports every run's outcome, pass@k, pass^k, the share passed
and the checks that flipped, and labels a case whose runs disagree *flaky* in the console, the JSON,
JUnit (suite properties, valid under junit-10.xsd) and HTML reports.

The agent passes or fails by a counter file beside it, so its flakiness is deterministic: run ``n``
does what the ``pattern`` argument says at ``n`` (``.`` the right call, ``F`` the wrong city, ``N``
a forbidden call too, ``E`` exit with status 3)."""

from __future__ import annotations

import json
import textwrap
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import test_reports_html
import xmlschema
from cli_helpers import invoke_in
from click.testing import Result
from trajrun.reports import html
from trajrun.run.results import RepeatRun, Repeats

# the browser tests' fixtures: one headless Chromium, its tab, and a page opener
browser, tab, open_page = (
    test_reports_html.browser, test_reports_html.tab, test_reports_html.open_page
)

XSD = xmlschema.XMLSchema(Path(__file__).parent / "data" / "junit-10.xsd")
S = "live.suite.yaml"
AGENT = '''
import os, sys

def run(counter, pattern):
    path = os.path.join(os.path.dirname(__file__), counter)
    n = int(open(path).read()) if os.path.exists(path) else 0
    with open(path, "w") as f:
        f.write(str(n + 1))
    kind = pattern[n % len(pattern)]
    if kind == "E":
        sys.stderr.write("connecting...\\nerror: no API key\\n")
        sys.stderr.flush()
        os._exit(3)
    calls = [{"name": "get_forecast", "args": {"city": "Lyon" if kind == "F" else "Paris"}}]
    if kind == "N":
        calls.append({"name": "refund_all", "args": {}})
    return {"tool_calls": calls}
'''
CASE = """\
- name: {name}
  source: {{python: "agent_flaky:run", args: {{counter: {counter}.txt, pattern: "{pattern}"}}}}
  mode: superset
  never: [refund_all]
  steps: [{{get_forecast: {{city: Paris}}}}]
"""
CASES = {  # name: (pattern, repeat, pass_rate)
    "mostly": (".F..", 4, 0.75),
    "half": (".FE", 3, None),
    "steady": (".", 2, None),
    "wrong": ("FN", 2, None),
    "once": (".", None, None),
}


def trajrun_run(folder: Path, *args: str) -> Result:
    """``trajrun run ARGS`` in process from ``folder``."""
    return invoke_in(folder, "run", *args)


def project(folder: Path) -> Path:
    """The agent and a suite of ``CASES`` in ``folder``, each case with its own counter."""
    folder.mkdir(exist_ok=True)
    (folder / "agent_flaky.py").write_text(AGENT, encoding="utf-8")
    text = ""
    for name, (pattern, repeat, rate) in CASES.items():
        text += CASE.format(name=name, counter=name, pattern=pattern)
        text += f"  repeat: {repeat}\n" if repeat else ""
        text += f"  pass_rate: {rate}\n" if rate else ""
    suite = "suite: live\ncases:\n" + textwrap.indent(text, "  ")
    (folder / S).write_text(suite, encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One ``trajrun run -v`` of the project writing every report: exit 1 (two cases fail)."""
    folder = project(tmp_path_factory.mktemp("flaky"))
    out = trajrun_run(folder, S, "-v", "--json", "r.json", "--junit-xml", "j.xml",
                      "--html", "r.html")  # fmt: skip
    assert out.exit_code == 1, out.stdout + out.stderr
    (folder / "stdout.txt").write_text(out.stdout, encoding="utf-8")
    yield folder


def cases(folder: Path) -> dict[str, dict[str, Any]]:
    """The JSON report's cases by name."""
    data = json.loads((folder / "r.json").read_text(encoding="utf-8"))
    return {c["name"]: c for s in data["suites"] for c in s["cases"]}


def test_each_case_line_shows_its_runs(reports: Path) -> None:
    """``-v``: a letter per run after the outcome, and ``flaky`` when the runs disagree."""
    lines = (reports / "stdout.txt").read_text().splitlines()
    shown = [line.rsplit("  ", 1)[0].rstrip() for line in lines if line.endswith("%]")]
    assert shown == [
        f"{S}::mostly PASSED (repeat .F.., flaky)",
        f"{S}::half FAILED (repeat .FE, flaky)",
        f"{S}::steady PASSED (repeat ..)",
        f"{S}::wrong FAILED (repeat FF)",
        f"{S}::once PASSED",
    ]


def test_console_failures_flaky_section_and_summary(tmp_path: Path) -> None:
    """A failing repeated case's block opens with its runs and each run that did not pass (a
    command's stderr tail as lines of its own); the ``flaky`` section lists every flaky case, with
    the failing runs of one that passed on ``pass_rate``; the summary line counts them."""
    out = trajrun_run(project(tmp_path), S)
    assert out.exit_code == 1
    lines = out.stdout.splitlines()
    start = next(n for n, line in enumerate(lines) if "FAILURES" in line)
    assert [line for line in lines[start:-1] if not line.startswith(("____", "===="))] == [
        f"{S}:10",
        "repeat .FE: 1/3 runs passed, pass@3 yes, pass^3 no, flaky; flipped: steps, error",
        "run 2 FAILED: 1 check failed: steps (1 arg differs)",
        "run 3 ERROR: source: agent_flaky:run: exited with status 3 before returning; stderr:",
        "  | connecting...",
        "  | error: no API key",
        "1 check failed: repeat (1/3 runs passed, pass_rate 1)",
        "repeat: 1/3 runs passed, pass_rate 1",
        "last failing run: source: agent_flaky:run: exited with status 3 before returning; stderr:",
        "  | connecting...",
        "  | error: no API key",
        f"{S}:22",
        "repeat FF: 0/2 runs passed, pass@2 no, pass^2 no; flipped: steps, never",
        "run 1 FAILED: 1 check failed: steps (1 arg differs)",
        "run 2 FAILED: 1 check failed: never (refund_all)",
        "1 check failed: repeat (0/2 runs passed, pass_rate 1)",
        "repeat: 0/2 runs passed, pass_rate 1",
        "last failing run: 1 check failed: never (refund_all)",
        "never: refund_all",
        "refund_all called at turn 1, position 1",
        f"{S}::mostly: repeat .F..: 3/4 runs passed, pass@4 yes, pass^4 no, flaky; flipped: steps",
        "  run 2 FAILED: 1 check failed: steps (1 arg differs)",
        f"{S}::half: repeat .FE: 1/3 runs passed, pass@3 yes, pass^3 no, flaky; flipped: steps, "
        "error",
        f"FAILED {S}::half [flaky] - 1 check failed: repeat (1/3 runs passed, pass_rate 1)",
        f"FAILED {S}::wrong - 1 check failed: repeat (0/2 runs passed, pass_rate 1)",
    ]
    assert "==== flaky ====" in out.stdout
    assert lines[-1].startswith("3 passed, 2 failed, 2 flaky in ")


def test_json_reports_each_run_pass_at_k_pass_all_k_and_flipped(reports: Path) -> None:
    """``repeats`` holds the counts, pass@k, pass^k, the flipped checks and each run; ``null``
    without ``repeat``; the summary counts the flaky cases."""
    got = cases(reports)
    assert got["mostly"]["outcome"] == "passed"
    assert got["mostly"]["repeats"] == {
        "runs": 4, "passed": 3, "passed_share": 0.75, "pass_at_k": True, "pass_all_k": False,
        "flaky": True, "flipped": ["steps"],
        "outcomes": [
            {"outcome": "passed", "message": "passed", "score": 1.0},
            {"outcome": "failed", "message": "1 check failed: steps (1 arg differs)", "score": 0.0},
            {"outcome": "passed", "message": "passed", "score": 1.0},
            {"outcome": "passed", "message": "passed", "score": 1.0},
        ],
    }  # fmt: skip
    half = got["half"]["repeats"]
    assert [r["outcome"] for r in half["outcomes"]] == ["passed", "failed", "error"]
    assert half["outcomes"][2]["message"] == (
        "source: agent_flaky:run: exited with status 3 before returning; stderr:\n"
        "  | connecting...\n  | error: no API key"
    )
    assert half["outcomes"][2]["score"] is None
    assert (half["passed_share"], half["flaky"]) == (0.333333, True)
    assert half["flipped"] == ["steps", "error"]
    steady, wrong = got["steady"]["repeats"], got["wrong"]["repeats"]
    assert (steady["pass_at_k"], steady["pass_all_k"], steady["flaky"]) == (True, True, False)
    assert steady["flipped"] == []
    assert (wrong["pass_at_k"], wrong["pass_all_k"], wrong["flaky"]) == (False, False, False)
    assert wrong["flipped"] == ["steps", "never"]  # both failed, each in one run: not flaky
    assert got["once"]["repeats"] is None
    summary = json.loads((reports / "r.json").read_text())["summary"]
    assert (summary["flaky"], summary["passed"], summary["failed"]) == (2, 3, 2)


def properties(junit: Path) -> list[tuple[str | None, str | None]]:
    """The ``repeat`` and ``flaky`` suite properties of a JUnit report, in order."""
    props = ET.parse(junit).getroot().findall(".//testsuite/properties/property")
    return [(p.get("name"), p.get("value")) for p in props if p.get("name") in ("repeat", "flaky")]


def test_junit_suite_properties_and_testcase_bodies(reports: Path) -> None:
    """JUnit: a ``repeat`` property per repeated case and a ``flaky`` one per flaky case (testcases
    have no properties in junit-10.xsd, which the report still passes); a failing case's body opens
    with its runs, a passing flaky case says them in ``<system-err>``, a steady one not at all."""
    junit = reports / "j.xml"
    XSD.validate(str(junit))
    assert properties(junit) == [
        ("repeat", "mostly: .F.. 3/4 runs passed, pass@4 yes, pass^4 no, flaky; flipped: steps"),
        ("repeat", "half: .FE 1/3 runs passed, pass@3 yes, pass^3 no, flaky; flipped: steps, "
                   "error"),
        ("repeat", "steady: .. 2/2 runs passed, pass@2 yes, pass^2 yes"),
        ("repeat", "wrong: FF 0/2 runs passed, pass@2 no, pass^2 no; flipped: steps, never"),
        ("flaky", "mostly"),
        ("flaky", "half"),
    ]
    testcases = {t.get("name"): t for t in ET.parse(junit).getroot().iter("testcase")}
    assert testcases["mostly"].findtext("system-err") == (
        "repeat .F..: 3/4 runs passed, pass@4 yes, pass^4 no, flaky; flipped: steps"
    )
    assert testcases["steady"].find("system-err") is None
    failure = testcases["half"].find("failure")
    assert failure is not None and failure.get("type") == "repeat"
    assert (failure.text or "").startswith(
        "repeat .FE: 1/3 runs passed, pass@3 yes, pass^3 no, flaky; flipped: steps, error\n\n"
        "repeat: 1/3 runs passed, pass_rate 1\n"
    )


def test_html_page_data_and_headline(reports: Path) -> None:
    """The page embeds ``repeats`` and its headline counts the flaky cases, as the console does."""
    page = (reports / "r.html").read_text(encoding="utf-8")
    assert '"flaky":true,"flipped":["steps"]' in page
    data = json.loads((reports / "r.json").read_text())
    assert html.headline(data["summary"]).startswith("3 passed, 2 failed, 2 flaky in ")


def test_html_refuses_a_report_whose_repeats_are_malformed(tmp_path: Path, reports: Path) -> None:
    """A hand-edited report whose ``repeats.outcomes`` is no list is refused, saying where."""
    data = json.loads((reports / "r.json").read_text())
    data["suites"][0]["cases"][0]["repeats"]["outcomes"] = "..F"
    (tmp_path / "bad.json").write_text(json.dumps(data))
    with pytest.raises(html.ReportReadError) as caught:
        html.load_json(tmp_path / "bad.json")
    assert str(caught.value) == (
        f"{tmp_path / 'bad.json'}: suites[0].cases[0].repeats.outcomes must be a list, found a "
        "string; give the file that `trajrun run --json FILE` wrote"
    )


def test_html_page_tags_flaky_cases_and_lists_the_runs(open_page: Any, reports: Path) -> None:
    """In the browser: a ``flaky`` tag beside the case's name, and in its body pass@k, pass^k, the
    flipped checks and a badge per run with the message of each run that did not pass."""
    page = open_page(json.loads((reports / "r.json").read_text()))
    flagged = page.eval_on_selector_all(
        "#cases > .case", "els => els.filter(e => e.querySelector('[data-flaky]'))"
        ".map(e => e.querySelector('.cname').lastChild.previousSibling.textContent)")  # fmt: skip
    assert sorted(flagged) == ["half", "mostly"]
    case = page.locator("#cases > .case", has_text="mostly")
    case.locator(".head").click()
    assert case.locator(".repeats p").inner_text() == (
        "repeat 3/4 runs passed · pass@4 yes · pass^4 no · flaky · flipped: steps"
    )
    runs = case.locator(".repeats li").all_inner_texts()
    assert runs == ["PASSED", "FAILED 1 check failed: steps (1 arg differs)", "PASSED", "PASSED"]


def test_parallel_workers_report_the_same_runs(tmp_path: Path) -> None:
    """Under ``-j 2`` each case's runs go on in one worker, one after another (the counter stays
    deterministic), and the runs come back to the reports whole."""
    out = trajrun_run(project(tmp_path), S, "-j", "2", "--json", "r.json")
    assert out.exit_code == 1, out.stdout + out.stderr
    got = {name: case["repeats"] for name, case in cases(tmp_path).items()}
    assert got["mostly"]["flipped"] == ["steps"] and got["half"]["flipped"] == ["steps", "error"]
    assert [r["outcome"] for r in got["half"]["outcomes"]] == ["passed", "failed", "error"]
    assert out.stdout.splitlines()[-1].startswith("3 passed, 2 failed, 2 flaky in ")


def test_repeats_summary_words() -> None:
    """The one-line summary every report uses, straight from the runs."""
    runs = (RepeatRun("passed", "passed"), RepeatRun("error", "source: boom"))
    repeats = Repeats(runs, ("error",))
    assert repeats.line() == (
        "repeat .E: 1/2 runs passed, pass@2 yes, pass^2 no, flaky; flipped: error"
    )
    assert Repeats((RepeatRun("passed", "passed"),)).line() == (
        "repeat .: 1/1 runs passed, pass@1 yes, pass^1 yes"
    )
