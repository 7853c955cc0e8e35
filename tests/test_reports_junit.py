"""The JUnit XML report: valid under junit-10.xsd, readable by junitparser, safe and atomic."""

from __future__ import annotations

import io
import json
import re
import socket
import xml.etree.ElementTree as ET
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import xmlschema
from junitparser import Error, Failure, JUnitXml, Skipped
from trajrun.match.verdict import CheckFailure, Evaluation
from trajrun.reports import junit
from trajrun.reports.text import xml_safe
from trajrun.run.bulk_results import BulkSummary
from trajrun.run.results import CaseResult, RunResult, SuiteResult
from trajrun.trajectory import ToolCall, Trajectory, Usage

XSD = xmlschema.XMLSchema(Path(__file__).parent / "data" / "junit-10.xsd")
W = "suites/weather.suite.yaml"
B = "suites/billing.suite.yaml"
BAD = "suites/bad.suite.yaml"
STAMP = datetime(2025, 3, 14, 9, 26, 53, 589793)
DETAILS = (
    "steps: 1 missing\n"
    "  expected                  | actual                    | verdict\n"
    "  get_forecast {city: Rome} | get_forecast {city: Rome} | ok\n"
    "  search {q: rome}          | -                         | MISSING"
)
ROME_YAML = '- get_forecast: {"city": "Rome"}\n'


def trajectory(tokens: tuple[int, int] | None, *names: str) -> Trajectory:
    """A trajectory calling ``names`` one per turn, with usage when given."""
    calls = tuple(ToolCall(n, {"city": "Rome"}, id=f"call_{i}", turn=i, position=i) for i, n in enumerate(names))
    return Trajectory(calls=calls, turns=len(calls), usage=Usage(*tokens) if tokens else None)


def case(file: str, suite: str, name: str, outcome: str, **kw: object) -> CaseResult:
    """A case result with the id the runner gives it."""
    return CaseResult(case_id=f"{file}::{name}", suite=suite, name=name, file=file,
                      line=kw.pop("line", 7), outcome=outcome, **kw)  # type: ignore[arg-type]


def sample_run() -> RunResult:
    """A load error, then every outcome, tokens on two runs, and hostile characters."""
    rome_eval = Evaluation(failures=(CheckFailure("steps", "1 missing", DETAILS.split("\n", 1)[1]),), score=0.67)
    weather = SuiteResult("weather agent", W, timestamp=STAMP, duration=1.23456789, cases=(
        case(W, "weather agent", "paris", "passed", duration=0.0000004, score=1.0,
             trajectory=trajectory((120, 30), "get_forecast")),
        case(W, "weather agent", "rome", "failed", line=14, duration=0.5, message=rome_eval.message(),
             details=rome_eval.details(), check_type="steps", evaluation=rome_eval, score=0.67,
             trajectory=trajectory((200, 50), "get_forecast")),
        case(W, "weather agent", "tokyo", "skipped", message="flaky upstream"),
        case(W, "weather agent", "oslo", "xfailed", message="known bug #12", details=DETAILS),
    ))
    billing = SuiteResult("billing", B, timestamp=STAMP, cases=(
        case(B, "billing", "refund", "error", line=3, duration=0.25, check_type="error",
             message="source runs/refund.json not found\nrecord it with trajrun record",
             details="error: source runs/refund.json not found"),
        case(B, "billing", "vip", "xpassed", message="XPASS(strict): vip pricing not done", check_type="xpass"),
        case(B, "billing", "café ☕ 東京", "failed", check_type="answer",
             message="answer: got \x1b[31mred\x00 \ufffe", details="body \x0b\x7f ok",
             trajectory=Trajectory(calls=(ToolCall("search", {"q": "\x00\x1b\ud800"}),))),
    ))
    bad = SuiteResult("bad.suite.yaml", BAD, timestamp=STAMP, load_errors=(
        f"{BAD}:4:7: cases[0]: unknown key 'mdoe' in case 'x' — did you mean 'mode'?",
        f"{BAD}:9:3: cases[1]: case 'y' asserts nothing",
    ))
    return RunResult((bad, billing, weather), duration=2.5)


@pytest.fixture
def report(tmp_path: Path) -> Path:
    """The sample run written as JUnit XML."""
    path = tmp_path / "junit.xml"
    junit.write(sample_run(), path)
    return path


def cases_by_id(path: Path) -> dict[str, object]:
    """junitparser's testcases keyed by ``classname::name``."""
    return {f"{c.classname}::{c.name}": c for suite in JUnitXml.fromfile(str(path)) for c in suite}


def test_report_validates_against_junit_10_xsd(report: Path) -> None:
    """The default report is valid under the Jenkins xUnit junit-10.xsd."""
    XSD.validate(str(report))


def test_root_and_suite_counts_match_the_testcases(report: Path) -> None:
    """tests/failures/errors/skipped agree with the testcases, xpass a failure, xfail a skip."""
    xml = JUnitXml.fromfile(str(report))
    root = ET.parse(report).getroot()
    assert (root.get("name"), root.get("tests"), root.get("failures"), root.get("errors")) == ("trajrun", "8", "3", "2")
    assert "skipped" not in root.attrib
    counts = {s.name: (s.tests, s.failures, s.errors, s.skipped, len(list(s))) for s in xml}
    assert counts == {BAD: (1, 0, 1, 0, 1), "billing": (3, 2, 1, 0, 3), "weather agent": (4, 1, 0, 2, 4)}


def test_each_outcome_maps_to_its_result_element(report: Path) -> None:
    """failed/xpassed are failures, error an error, skipped/xfailed skips, passed has none."""
    cases = cases_by_id(report)
    kinds = {key: [(type(r), r.type, r.message) for r in c.result] for key, c in cases.items()}
    assert kinds["weather agent::paris"] == []
    assert kinds["weather agent::rome"] == [(Failure, "steps", "1 check failed: steps (1 missing)")]
    assert kinds["weather agent::tokyo"] == [(Skipped, None, "flaky upstream")]
    assert kinds["weather agent::oslo"] == [(Skipped, None, "known bug #12")]
    assert kinds["billing::refund"] == [(Error, "error", "source runs/refund.json not found record it with trajrun record")]
    assert kinds["billing::vip"] == [(Failure, "xpass", "XPASS(strict): vip pricing not done")]


def test_failure_body_is_the_details_and_system_out_the_actual_yaml(report: Path) -> None:
    """The failure text is the details table; <system-out> holds the actual steps as YAML."""
    rome = cases_by_id(report)["weather agent::rome"]
    assert rome.result[0].text == DETAILS
    assert rome.system_out == ROME_YAML


def test_load_error_suite_is_one_error_testcase(report: Path) -> None:
    """A suite that could not load is a (load) testcase with every error, one per line."""
    load = cases_by_id(report)["bad.suite.yaml::(load)"]
    (error,) = load.result
    assert (type(error), error.message, error.type) == (Error, "suite could not be loaded", "load")
    assert error.text.splitlines()[1] == f"{BAD}:9:3: cases[1]: case 'y' asserts nothing"


def test_forbidden_characters_are_replaced_and_unicode_kept(report: Path) -> None:
    """NUL, ESC, U+FFFE and lone surrogates become #xNN notation (the steps' JSON escapes its own); other unicode survives."""
    odd = cases_by_id(report)["billing::café ☕ 東京"]
    assert odd.result[0].message == "answer: got #x1B[31mred#x00 #xFFFE"
    assert odd.result[0].text == "body #x0B\x7f ok"
    assert odd.system_out == '- search: {"q": "\\u0000\\u001b#xD800"}\n'  # JSON escapes controls; XML the surrogate


def test_every_character_outside_xml_1_0_is_replaced_and_no_other() -> None:
    """Over all of Unicode, exactly the characters XML 1.0's Char production leaves out are replaced."""
    allowed = re.compile("[\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")  # the production, verbatim
    every = "".join(map(chr, range(0x110000)))
    illegal = allowed.sub("", every)
    assert len(illegal) == 29 + 2048 + 2  # C0 controls but tab, LF, CR; surrogates; U+FFFE, U+FFFF
    assert xml_safe(illegal) == "".join(f"#x{ord(c):02X}" for c in illegal)
    kept = allowed.findall(every)
    assert xml_safe("".join(kept)) == "".join(kept)


def test_times_have_three_decimals_and_timestamps_no_zone(report: Path) -> None:
    """Every time is d.ddd (no exponent) and every timestamp YYYY-MM-DDTHH:MM:SS."""
    root = ET.parse(report).getroot()
    times = [e.get("time") for e in root.iter() if e.get("time") is not None]
    assert times and all(re.fullmatch(r"\d+\.\d{3}", t) for t in times)
    assert {s.get("timestamp") for s in root.iter("testsuite")} == {"2025-03-14T09:26:53"}
    weather = root.find("testsuite[@name='weather agent']")
    assert weather.get("time") == "1.235" and weather.find("testcase[@name='paris']").get("time") == "0.000"


def test_token_usage_is_a_suite_property_never_a_case_property(report: Path) -> None:
    """Suite <properties> carry file, cases and summed tokens; testcases have none."""
    root = ET.parse(report).getroot()
    weather = root.find("testsuite[@name='weather agent']")
    props = {p.get("name"): p.get("value") for p in weather.find("properties")}
    assert props == {"file": W, "cases": "4", "tool_calls": "2", "input_tokens": "320",
                     "output_tokens": "80", "total_tokens": "400", "mean_score": "0.835"}
    assert not root.findall(".//testcase/properties")


def test_suite_without_usage_has_no_token_properties(report: Path) -> None:
    """A suite whose runs recorded no usage leaves the token properties out."""
    billing = ET.parse(report).getroot().find("testsuite[@name='billing']")
    assert {p.get("name") for p in billing.find("properties")} == {"file", "cases", "tool_calls"}  # one run, no usage


def test_duplicate_and_empty_names_become_unique_and_non_empty() -> None:
    """classname+name pairs never repeat and never are empty."""
    cases = (case(W, "", "", "passed"), case(W, "w", "a", "passed"), case(W, "w", "a", "passed"))
    root = junit.render(RunResult((SuiteResult("w", W, cases=cases),)), hostname="ci")
    pairs = [(c.get("classname"), c.get("name")) for c in root.iter("testcase")]
    assert pairs == [("(unnamed)", "(unnamed)"), ("w", "a"), ("w", "a (2)")]
    XSD.validate(ET.tostring(root, encoding="unicode"))


def test_file_line_adds_attributes_and_breaks_the_xsd_by_design() -> None:
    """file_line=True gives every testcase file and a 1-based line; junit-10.xsd then rejects it."""
    root = junit.render(sample_run(), file_line=True, hostname="ci")
    marks = {c.get("name"): (c.get("file"), c.get("line")) for c in root.iter("testcase")}
    assert marks["rome"] == (W, "14") and marks["(load)"] == (BAD, "1")
    assert not XSD.is_valid(ET.tostring(root, encoding="unicode"))
    assert XSD.is_valid(ET.tostring(junit.render(sample_run(), hostname="ci"), encoding="unicode"))


def test_xpass_message_is_normalised() -> None:
    """An xpassed case always reports ``XPASS(strict): reason``."""
    assert junit.xpass_message(case(W, "w", "a", "xpassed", message="not done yet")) == "XPASS(strict): not done yet"
    assert junit.xpass_message(case(W, "w", "a", "xpassed")) == "XPASS(strict)"


def test_empty_run_is_a_valid_report(tmp_path: Path) -> None:
    """A run with nothing collected is still a valid <testsuites> with zero counts."""
    path = tmp_path / "empty.xml"
    junit.write(RunResult(), path)
    XSD.validate(str(path))
    assert ET.parse(path).getroot().get("tests") == "0"


def test_write_creates_missing_folders_and_leaves_no_temp_files(tmp_path: Path) -> None:
    """Writing into a new folder works and only the report remains there."""
    path = tmp_path / "out" / "reports" / "junit.xml"
    junit.write(sample_run(), path)
    assert [p.name for p in path.parent.iterdir()] == ["junit.xml"]
    assert path.read_bytes().startswith(b"<?xml version='1.0' encoding='utf-8'?>")


@pytest.mark.parametrize("exc", [RuntimeError("disk full"), KeyboardInterrupt()])
def test_failed_write_keeps_the_previous_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exc: BaseException) -> None:
    """A crash midway through serialising leaves the old report intact and no temp file behind."""
    path = tmp_path / "junit.xml"
    path.write_text("<testsuites name='old'/>")

    made = []
    case = junit._case

    def second_case_fails(*args: object) -> ET.Element:
        """The first testcase is written; building the second one fails."""
        made.append(1)
        if len(made) == 2:
            raise exc
        return case(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(junit, "_case", second_case_fails)
    with pytest.raises(type(exc)):
        junit.write(sample_run(), path)
    assert path.read_text() == "<testsuites name='old'/>"
    assert [p.name for p in tmp_path.iterdir()] == ["junit.xml"]


@pytest.mark.parametrize("system_out, expected", [("failed", {"rome", "café ☕ 東京"}), ("all", {"paris", "rome", "café ☕ 東京"}),
                                                  ("none", set())])  # fmt: skip
def test_system_out_goes_to_the_cases_asked_for(system_out: str, expected: set[str]) -> None:
    """By default only cases that did not pass carry their actual steps; ``all`` and ``none`` as named."""
    root = junit.render(sample_run(), hostname="ci", system_out=system_out)
    assert {tc.get("name") for tc in root.iter("testcase") if tc.find("system-out") is not None} == expected
    XSD.validate(ET.ElementTree(root))


def test_long_message_is_cut_and_kept_whole_in_the_body() -> None:
    """A failure message past the width is one cut line in the attribute; the body opens with all of it."""
    long = "1 check failed: answer (" + "x" * 500 + ")"
    run = RunResult((SuiteResult("s", "s.suite.yaml", timestamp=STAMP, cases=(
        case("s.suite.yaml", "s", "long", "failed", message=long, details="answer differs"),)),))
    failure = junit.render(run, hostname="ci").find("testsuite/testcase/failure")
    assert failure is not None
    assert len(failure.get("message", "")) == junit.MESSAGE_WIDTH and failure.get("message", "").endswith("…")
    assert (failure.text or "").startswith(long + "\n\nanswer differs")


def indented(root: ET.Element) -> bytes:
    """What ``ElementTree.write`` makes of a rendered report once ``ET.indent`` has indented it."""
    tree = ET.ElementTree(root)
    ET.indent(tree)
    out = io.BytesIO()
    tree.write(out, encoding="utf-8", xml_declaration=True)
    return out.getvalue()


def bulk_run(folder: Path) -> RunResult:
    """A run with a bulk case whose 4 per-record lines (2 failed, 1 erred) were written, beside a plain case."""
    lines = [{"case": "b.suite.yaml::prod", "record": f"r{i}", "outcome": outcome, "checks": checks, "message": text}
             for i, (outcome, checks, text) in enumerate([("passed", [], ""), ("failed", ["never"], "never <x>"),
                                                          ("error", [], "bad record"), ("failed", [], "no check")])]
    records = folder / "records.jsonl"
    records.write_text("".join(json.dumps(line) + "\n" for line in lines))
    summary = BulkSummary("record", 1, 4, 1, 2, 1, records_file=str(records), records_span=(0, records.stat().st_size))
    cases = (case(B, "bulk", "prod", "failed", bulk=summary, message=summary.message()),
             case(B, "bulk", "plain", "passed"))
    return RunResult((SuiteResult("bulk", B, timestamp=STAMP, cases=cases),), duration=1.0)


@pytest.mark.parametrize("options", [{}, {"file_line": True, "system_out": "all"}, {"each": "record"}])
def test_the_written_file_is_the_rendered_tree_indented(tmp_path: Path, options: dict[str, Any]) -> None:
    """``write`` streams the testcases one at a time; the bytes are those of ``render``'s tree, indented —
    per record too, where the counts come from the bulk summary before any record's testcase is built."""
    for run in (sample_run(), bulk_run(tmp_path), RunResult()):
        junit.write(run, tmp_path / "r.xml", **options)
        assert (tmp_path / "r.xml").read_bytes() == indented(junit.render(run, hostname=socket.gethostname(), **options))
    junit.write(bulk_run(tmp_path), tmp_path / "r.xml", each="record")
    suite = ET.parse(tmp_path / "r.xml").getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("5", "2", "1")
    assert len(suite.findall("testcase")) == 5 and len(suite.findall("testcase/failure")) == 2
