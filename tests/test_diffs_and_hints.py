"""Issue 28, items 3, 4 and 12: long texts in a diff shown where they part, hints that name the
setting that would accept a call or an answer, step summaries that agree in number
(`1 arg differs`).

Runs real suites on real files through the ``trajrun`` command (console and JSON report), and opens
the HTML report in Debian's ``chromium`` through Playwright (skipped, saying why, when either is
missing).
"""

from __future__ import annotations

import json
import shutil
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import invoke_in
from trajrun.match.evaluate import evaluate
from trajrun.match.expectation import Expectation, Step
from trajrun.match.matchers import compile_value
from trajrun.match.values import contains_hint, parting
from trajrun.reports import html
from trajrun.reports.diff import CallRow, calls_summary
from trajrun.trajectory import ToolCall, Trajectory

LETTER = ("Dear Ada, your trip is confirmed: you fly on Friday from Paris at 9:40 and land at "
          "11:15; the hotel is booked for three nights, and a car waits for you at the airport. "
          "Enjoy your trip to Lisbon.")
SENT = LETTER[:-2] + "a."
LETTER_DIFF = ("$.body: expected …'Enjoy your trip to Lisbon.', got …'Enjoy your trip to Lisboa.' "
               "(differs at character 193)")
NOTE = ("Dear Ada,\n\nYour trip is confirmed: you fly on Friday from Paris at 9:40 and land at "
        "11:15.\nKind regards, Ada")
ANSWER = ("Done: I emailed Ada about her trip to Lisbon.\nShe lands at 11:15 on Friday and the "
          "forecast says sunny, 24 degrees.")
EXTRA_KEYS = "args_mode is exact; args_mode: superset allows extra keys"
CONTAINS = "the actual text contains the expected one"
RUN = {"tool_calls": [
    {"name": "send_email", "args": {"to": "ada@example.com", "body": SENT}, "turn": 0,
     "result": "Message queued for delivery to ada@example.com (id 8812)"},
    {"name": "send_note", "args": {"body": NOTE + " L."}, "turn": 0},
    {"name": "get_forecast", "args": {"city": "Lisbon", "units": "C"}, "turn": 0,
     "result": '{"summary": "sunny", "high": 24}'},
], "answer": ANSWER}
SUITE = f"""
defaults: {{source: run.json, mode: superset}}
cases:
  - name: letter
    steps:
      - send_email: {{to: ada@example.com, body: {json.dumps(LETTER)}}}
  - name: note
    steps:
      - send_note: {{body: {json.dumps(NOTE)}}}
  - name: extra keys
    steps:
      - get_forecast: {{city: Lisbon}}
  - name: extra keys under subset
    args_mode: subset
    steps:
      - get_forecast: {{city: Lisbon}}
  - name: extra key and a wrong value
    steps:
      - get_forecast: {{city: Lisboa}}
  - name: results
    args_mode: ignore
    steps:
      - name: send_email
        result: Message queued
      - name: get_forecast
        result: {{summary: sunny}}
  - name: answer contained
    mode: strict
    answer: the forecast says sunny
"""
Ran = tuple[str, dict[str, Any]]


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Ran:
    """The console output of ``trajrun run`` on SUITE over RUN, and its JSON report."""
    folder = tmp_path_factory.mktemp("diffs")
    (folder / "run.json").write_text(json.dumps(RUN), encoding="utf-8")
    (folder / "d.suite.yaml").write_text(textwrap.dedent(SUITE), encoding="utf-8")
    result = invoke_in(folder, "run", "d.suite.yaml", "--json", "report.json")
    assert result.exit_code == 1, result.output
    return result.stdout, json.loads((folder / "report.json").read_text(encoding="utf-8"))


def _nearest(report: dict[str, Any], name: str) -> list[dict[str, Any]]:
    """The ``nearest`` entries of the case called ``name`` in a JSON report."""
    case = next(c for s in report["suites"] for c in s["cases"] if c["name"] == name)
    return case["steps"]["nearest"]  # type: ignore[no-any-return]


def _block(output: str, name: str) -> list[str]:
    """The console lines of one failing case, from its header to the next."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if f"d.suite.yaml::{name} _" in line)
    ends = (i for i in range(start + 1, len(lines)) if lines[i].startswith(("_", "=")))
    return lines[start:next(ends, len(lines))]


# -- 3. long strings from where they part -----------------------------------------------------


def test_a_long_text_differing_at_its_end_is_shown_where_it_parts(ran: Ran) -> None:
    """The letter differs in its 193rd character: both sides start at the word before it, the
    common start elided, in the console and in the JSON report's diffs alike."""
    output, report = ran
    assert len(LETTER) == 194 and LETTER[192] != SENT[192] and LETTER[:192] == SENT[:192]
    assert f"  {LETTER_DIFF}" in _block(output, "letter")
    nearest = {"step": 0, "call": 0, "diffs": [LETTER_DIFF], "note": ""}
    assert _nearest(report, "letter") == [nearest]


def test_a_long_text_with_lines_shows_its_first_differing_line(ran: Ran) -> None:
    """A text with line breaks shows the first line that differs, with its number."""
    output, report = ran
    line = "$.body: expected 'Kind regards, Ada', got 'Kind regards, Ada L.' (differs on line 4)"
    assert f"  {line}" in _block(output, "note")
    assert _nearest(report, "note")[0]["diffs"] == [line]


@pytest.mark.parametrize(("expected", "actual", "shown"), [
    # a long line of a text with lines: the line from where it parts, its number and the character
    ("a\n" + "word " * 20 + "end", "a\n" + "word " * 20 + "END",
     ("…'word word word word end'", "…'word word word word END'",
      "differs on line 2 at character 101")),
    # fewer lines on one side
    (NOTE + "\nPS: see you soon", NOTE, ("'PS: see you soon'", "end of text", "differs on line 5")),
    # one text the start of the other: both from just before the end of the shorter
    ("x" * 70, "x" * 71, ("…'" + "x" * 20 + "'", "…'" + "x" * 21 + "'", "differs at character 71")),
    # parting early: shown from the start, cut past the width as before, no position needed
    ("ab" + "c" * 70, "aB" + "c" * 70, ("'ab" + "c" * 57 + "'…", "'aB" + "c" * 57 + "'…", "")),
])
def test_parting_windows(expected: str, actual: str, shown: tuple[str, str, str]) -> None:
    """Where two long texts part, for each shape of text."""
    assert parting(expected, actual, 60, repr) == shown


def test_short_values_are_shown_whole_as_before() -> None:
    """Texts up to 60 characters, and anything not two strings, are not parted."""
    assert parting("x" * 60, "y" * 60, 60, repr) is None
    assert parting("x" * 61, 3, 60, repr) is None
    step = Step("search", compile_value({"q": "weather in Paris", "n": 3}))
    traj = Trajectory(calls=(ToolCall("search", {"q": "weather in Lyon", "n": 4}),), turns=1)
    diffs = evaluate(Expectation(steps=(step,)), traj).steps.nearest[0].diffs
    assert diffs == ("$.q: expected 'weather in Paris', got 'weather in Lyon'",
                     "$.n: expected 3, got 4")


def test_a_long_answer_is_shown_where_it_parts(tmp_path: Path) -> None:
    """The `answer` check shows long texts (over 200 characters) from where they part, too: the
    second line (242 characters) differs in its 243rd."""
    long = ANSWER + " " + "Safe travels. " * 12 + "Bye."
    assert len(long.split("\n")[1]) == 242
    run = {"tool_calls": [], "answer": long + "!"}
    (tmp_path / "run.json").write_text(json.dumps(run), encoding="utf-8")
    suite = f"cases:\n  - name: long answer\n    source: run.json\n    answer: {json.dumps(long)}\n"
    (tmp_path / "a.suite.yaml").write_text(suite, encoding="utf-8")
    out = invoke_in(tmp_path, "run", "a.suite.yaml").stdout.splitlines()
    at = out.index("answer: answer differs")
    assert out[at + 1:at + 4] == [
        'expected: …"travels. Safe travels. Safe travels. Safe travels. Safe travels. Bye."',
        'actual:   …"travels. Safe travels. Safe travels. Safe travels. Safe travels. Bye.!"',
        "(differs on line 2 at character 243)",
    ]


# -- 4. hints that name the fix ---------------------------------------------------------------


def test_extra_argument_keys_hint_at_args_mode_superset(ran: Ran) -> None:
    """A call whose only difference is keys the step does not list names the argument rule and
    the fix, in the console and as the JSON report's note."""
    output, report = ran
    assert _block(output, "extra keys")[-2:] == ["  $.units: expected absent, got 'C'",
                                                 f"  ({EXTRA_KEYS})"]
    assert _nearest(report, "extra keys")[0]["note"] == EXTRA_KEYS
    assert _block(output, "extra keys under subset")[-1] == (
        "  (args_mode is subset; args_mode: superset allows extra keys)")


def test_no_hint_when_a_value_differs_too(ran: Ran) -> None:
    """Superset would not accept a call whose listed values differ: no hint then."""
    output, report = ran
    assert _block(output, "extra key and a wrong value")[-2:] == [
        "  $.city: expected 'Lisboa', got 'Lisbon'",
        "  $.units: expected absent, got 'C'",
    ]
    assert _nearest(report, "extra key and a wrong value")[0]["note"] == ""


def test_a_result_that_contains_the_expected_one_hints_at_contains(ran: Ran) -> None:
    """A plain `result` text within the actual text, or map within the actual map, names
    `$contains`."""
    output, _ = ran
    assert _block(output, "results")[-5:] == [
        "  result: expected 'Message queued', got 'Message queued for delivery to ada@example.com "
        "(id 8812)'",
        f'  ({CONTAINS}: use {{$contains: "Message queued"}} to accept it)',
        'step 1 get_forecast: nearest [2] get_forecast {"city":"Lisbon","units":"C"}',
        "  result.high: expected absent, got 24",
        "  (the actual value contains the expected one: use {$contains: "
        '{"summary":"sunny"}} to accept it)',
    ]


def test_an_answer_that_contains_the_expected_one_hints_at_contains(ran: Ran) -> None:
    """A plain `answer` the actual answer contains names `$contains` under the expected and the
    actual text."""
    output, _ = ran
    assert _block(output, "answer contained")[-4:] == [
        "answer: answer differs",
        'expected: "the forecast says sunny"',
        'actual:   "Done: I emailed Ada about her trip to Lisbon.\\nShe lands at 11:15 on Friday '
        'and the forecast says sunny, 24 degrees."',
        f'({CONTAINS}: use {{$contains: "the forecast says sunny"}} to accept it)',
    ]


@pytest.mark.parametrize(("expected", "actual", "hint"), [
    ("Lisbon", "Lisbon", ""),
    ("Lisboa", "Lisbon", ""),
    ("", "Lisbon", ""),
    ({"a": 1}, {"a": 1}, ""),
    ({"a": 1}, {"a": 2, "b": 1}, ""),
    ({"a": compile_value({"$gt": 0})}, {"a": 1, "b": 2}, ""),
    (["a"], ["a", "b"], ""),
    ("x" * 61, "x" * 62, f"{CONTAINS}: write it as {{$contains: …}} to accept it"),
    ("a\x1b[2Jb", "a\x1b[2Jbc", f'{CONTAINS}: use {{$contains: "a\\u001b[2Jb"}} to accept it'),
    ("a\u2028b", "a\u2028bc", f'{CONTAINS}: use {{$contains: "a\\u2028b"}} to accept it'),
])
def test_contains_hint_only_where_contains_would_accept(expected: Any, actual: Any,
                                                        hint: str) -> None:
    """No hint for equal values, values not contained, an empty text, matchers or lists; a long
    operand is not repeated; a control character or line separator stays escaped."""
    assert contains_hint(expected, actual) == hint


# -- 12. plural agreement ---------------------------------------------------------------------


def _summary(step: Step, call: ToolCall, rows: int) -> str:
    """The message of a steps check whose ``rows`` steps each differ from their call as ``step``
    differs from ``call``."""
    steps = tuple(step._replace(name=f"t{k}") for k in range(rows))
    calls = tuple(call._replace(name=f"t{k}", position=k) for k in range(rows))
    return evaluate(Expectation(steps=steps), Trajectory(calls=calls, turns=1)).message()


@pytest.mark.parametrize(("step", "call", "one", "many"), [
    (Step("t", compile_value({"x": 1})), ToolCall("t", {"x": 2}),
     "1 arg differs", "2 args differ"),
    (Step("t", result="ok"), ToolCall("t", {}, result="no", has_result=True),
     "1 result differs", "2 results differ"),
    (Step("t", error=False), ToolCall("t", {}, error=True),
     "1 error differs", "2 errors differ"),
])
def test_step_summaries_agree_in_number(step: Step, call: ToolCall, one: str, many: str) -> None:
    """One row of a verdict reads in the singular, several in the plural."""
    assert _summary(step, call, 1) == f"1 check failed: steps ({one})"
    assert _summary(step, call, 2) == f"1 check failed: steps ({many})"


def test_the_call_table_of_trajrun_diff_agrees_in_number() -> None:
    """`trajrun diff` counts calls whose arguments changed the same way."""
    row = CallRow(0, 0, "a", "a", "args differ")
    assert calls_summary([row]) == "1 arg differs"
    assert calls_summary([row, row, CallRow(None, 2, "", "b", "ADDED")]) == "1 added, 2 args differ"


# -- the HTML report --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless system Chromium for the module, driven by Playwright."""
    reason = "playwright is not installed: pip install -e '.[test]'"
    sync_api = pytest.importorskip("playwright.sync_api", reason=reason)
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.skip("no chromium on PATH: apt-get install -y chromium (Playwright's own browser "
                    "download is not used)")
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=path)
        yield chromium
        chromium.close()


def test_the_html_report_marks_where_long_texts_part(browser: Any, ran: Ran,
                                                     tmp_path: Path) -> None:
    """The diff line of the letter marks each side's text from the first differing character and
    says where; the hint of a call with extra keys is listed under its difference."""
    page = browser.new_page()
    problems: list[str] = []

    def complain(msg: Any) -> None:
        """Keep a console error or warning."""
        if msg.type in ("error", "warning"):
            problems.append(msg.text)

    page.on("console", complain)
    page.on("pageerror", lambda exc: problems.append(str(exc)))
    html.write(ran[1], tmp_path / "report.html")
    page.goto((tmp_path / "report.html").as_uri())
    letter = page.locator("#cases > .case", has_text="letter").locator("tr.diffs li")
    assert letter.inner_text() == LETTER_DIFF
    assert letter.locator("mark.part").all_inner_texts() == ["n.", "a."]
    assert letter.locator(".where").inner_text() == "(differs at character 193)"
    extra = page.locator("#cases > .case", has_text="extra keys").first.locator("tr.diffs li")
    assert extra.all_inner_texts() == ["$.units: expected absent, got 'C'", EXTRA_KEYS]
    assert extra.locator("mark.part").count() == 0
    page.close()
    assert not problems
