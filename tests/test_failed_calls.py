"""Failed calls: ``error_when`` marks them where the format has no error flag, ``failed_calls:
ignore`` leaves them out of steps, calls, never and budget, and a note says when that changed a
verdict.

The fixture is a tau-bench airline result (OpenAI Chat Completions messages under ``traj``) in
which a booking failed (``Error: payment method not found``, nothing changed) and the agent
retried it successfully.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from trajrun.errors import SuiteErrors
from trajrun.match.evaluate import evaluate
from trajrun.match.expectation import UNSET
from trajrun.match.failed import mark_errors
from trajrun.match.matchers import compile_value
from trajrun.match.plan import Plan
from trajrun.match.quick import quick_pass
from trajrun.sources import load_trajectory
from trajrun.suites.load import load_suite

DATA = Path(__file__).parent.parent / "suites" / "runs" / "airline"  # the demo's run, shared
RUN = "retried_write.json"
SOURCE = f"{{file: {RUN}, select: '$[0].traj'}}"
RETRIED = f"{{file: {RUN}, select: '$[0].traj', error_when: {{$regex: '^Error'}}}}"
WRITES = """\
    mode: strict
    args_mode: superset
    steps:
      - get_user_details
      - search_direct_flight
      - book_reservation: {payment_methods: [{payment_id: credit_card_4421486, amount: 178}]}
    calls: {book_reservation: 1}
    never: [cancel_reservation]
    budget: {calls: 3}
"""
IGNORE = "    failed_calls: ignore\n"
NOTE = ("failed_calls: ignore left out 1 failed call: book_reservation at position 2 "
        "(counting it, steps, calls and budget would fail)")
COUNTED = ("3 checks failed: steps (1 unexpected), calls (book_reservation called 2 times, "
           "expected 1), budget (calls 4 > 3)")
NO_FLAG = ("records no per-call error flag; add error_when to the source (such as "
           "`error_when: {$regex: '^Error'}`)")


def _case(name: str, source: str, body: str) -> str:
    """One case of a suite's ``cases`` list: its name, source and the rest of its keys."""
    return f"  - name: {name}\n    source: {source}\n{body}"


def _project(tmp_path: Path, suite: str) -> Path:
    """The tau-bench run and ``suite`` in a folder; the suite's path."""
    shutil.copy(DATA / RUN, tmp_path / RUN)
    path = tmp_path / "tau.suite.yaml"
    path.write_text(suite, encoding="utf-8")
    return path


def _run(tmp_path: Path, suite: str, *options: str) -> subprocess.CompletedProcess[str]:
    """``trajrun run`` on ``suite`` beside the tau-bench run, as a user runs it."""
    path = _project(tmp_path, suite)
    return subprocess.run([sys.executable, "-m", "trajrun", "run", *options, path.name],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={"PATH": "", "NO_COLOR": "1"})


def _errors(tmp_path: Path, suite: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """What loading ``suite`` reports (from its folder, so messages name it as a user sees it)."""
    path = _project(tmp_path, suite)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SuiteErrors) as info:
        load_suite(path.name)
    return "\n".join(str(e) for e in info.value.errors)


def test_exactly_the_successful_writes_pass_with_the_new_keys(tmp_path: Path) -> None:
    """The retried booking: one successful write, as tau-bench counts it, passes with error_when
    and failed_calls: ignore; the note says what was left out and that it changed the verdict."""
    done = _run(tmp_path, "cases:\n" + _case("retried", RETRIED, IGNORE + WRITES))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"tau.suite.yaml::retried: {NOTE}" in done.stdout.splitlines()
    assert "1 passed" in done.stdout


def test_without_the_new_keys_the_failed_write_counts(tmp_path: Path) -> None:
    """The same checks without error_when and failed_calls fail: the failed booking is one more
    call."""
    done = _run(tmp_path, "cases:\n" + _case("retried", SOURCE, WRITES))
    assert done.returncode == 1
    assert f"FAILED tau.suite.yaml::retried - {COUNTED}" in done.stdout.splitlines()
    assert "failed_calls" not in done.stdout


def test_error_when_alone_marks_the_failed_call_and_counts_it(tmp_path: Path) -> None:
    """error_when without failed_calls: the failed call is marked (a step can expect `error:
    true`) and still counted."""
    body = ("    mode: in_order\n    steps:\n      - {name: book_reservation, error: true}\n"
            "      - {name: book_reservation, error: false}\n    calls: {book_reservation: 2}\n")
    done = _run(tmp_path, "cases:\n" + _case("marked", RETRIED, body))
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_step_expecting_an_error_names_error_when(tmp_path: Path) -> None:
    """Without error_when an OpenAI run records no error flag; the case error says how to mark
    failed calls."""
    body = "    mode: superset\n    steps:\n      - {name: book_reservation, error: true}\n"
    done = _run(tmp_path, "cases:\n" + _case("flagless", SOURCE, body))
    assert done.returncode == 1
    assert ("ERROR tau.suite.yaml::flagless - steps: step 0 (book_reservation) expects `error`, "
            "but format 'openai' records no per-call error flag; remove `error` from the step, "
            "or mark failed calls with the source's error_when (such as "
            "`error_when: {$regex: '^Error'}`)") in done.stdout.splitlines()


def test_ignoring_failed_calls_needs_a_flag_or_error_when(tmp_path: Path) -> None:
    """failed_calls: ignore on a run whose format cannot say which calls failed errs instead of
    passing wrongly."""
    done = _run(tmp_path, "cases:\n" + _case("unmarked", SOURCE, IGNORE + WRITES))
    assert done.returncode == 1
    assert ("ERROR tau.suite.yaml::unmarked - failed_calls: ignore cannot tell which calls failed: "
            f"format 'openai' {NO_FLAG}; {COUNTED}") in done.stdout.splitlines()


def test_a_failing_case_shows_the_note_and_the_positions_of_the_whole_run(tmp_path: Path) -> None:
    """When the case still fails, its failure block carries the note; the steps table numbers
    calls as the run does (the retried booking is [3] though the failed one at [2] is left out)."""
    wrong_card = ("    mode: superset\n    args_mode: superset\n    steps:\n"
                  "      - book_reservation:\n"
                  "          payment_methods: [{payment_id: gift_card_1, amount: 178}]\n")
    answer = "    answer: cancelled\n"
    suite = "cases:\n" + _case("still-failing", RETRIED, IGNORE + WRITES + answer) \
        + _case("wrong-card", RETRIED, IGNORE + wrong_card)
    lines = _run(tmp_path, suite).stdout.splitlines()
    assert f"note: {NOTE}" in lines
    assert "FAILED tau.suite.yaml::still-failing - 1 check failed: answer (answer differs)" in lines
    table = [line for line in lines if "book_reservation {" in line and "args differ" in line]
    assert len(table) == 1 and "[3] book_reservation" in table[0], lines
    start = next(i for i, line in enumerate(lines) if line.startswith("_") and "wrong-card" in line)
    block = lines[start:]
    assert not any("left out" in line for line in block), "no verdict changed there: no note"


def test_a_format_with_its_own_flag_needs_no_error_when(tmp_path: Path) -> None:
    """trajrun's own format records `error`; failed_calls: ignore leaves the flagged call out of
    never."""
    run = {"tool_calls": [{"name": "refund", "args": {}, "result": "denied", "error": True},
                          {"name": "lookup", "args": {}, "result": "ok", "error": False}]}
    (tmp_path / "own.json").write_text(json.dumps(run), encoding="utf-8")
    suite = ("cases:\n  - {name: own, source: own.json, failed_calls: ignore, never: [refund]}\n"
             "  - {name: counted, source: own.json, never: [refund]}\n")
    lines = _run(tmp_path, suite).stdout.splitlines()
    assert ("tau.suite.yaml::own: failed_calls: ignore left out 1 failed call: refund at position "
            "0 (counting it, never would fail)") in lines
    assert "FAILED tau.suite.yaml::counted - 1 check failed: never (refund)" in lines


def test_error_when_adds_to_a_formats_flag_and_leaves_unrecorded_calls_unknown() -> None:
    """A result error_when matches is an error, one the format flagged stays one, a call without
    a result keeps no flag."""
    rule = compile_value({"$regex": "^Error"})
    run = load_trajectory(DATA / RUN, select="$[0].traj")
    marked = mark_errors(run, rule)
    assert [c.error for c in run.calls] == [None, None, None, None]
    assert [c.error for c in marked.calls] == [False, False, True, False]
    flagged = marked.calls[0]._replace(error=True)
    unrecorded = marked.calls[1]._replace(has_result=False, result=None, error=None)
    again = mark_errors(type(marked)(calls=(flagged, unrecorded)), rule)
    assert [c.error for c in again.calls] == [True, None]


def test_a_plain_value_and_a_map_compare_as_a_step_result_does() -> None:
    """error_when compares as `result` does: a plain text equals the whole result, a map sees the
    decoded JSON object of an OpenAI tool message."""
    run = load_trajectory(DATA / RUN, select="$[0].traj")
    by_text = mark_errors(run, "Error: payment method not found")
    assert [c.error for c in by_text.calls] == [False, False, True, False]
    by_map = mark_errors(run, compile_value({"$contains": {"reservation_id": "NO6JO3"}}))
    assert [c.error for c in by_map.calls] == [False, False, False, True]


def test_the_note_only_when_a_verdict_changed(tmp_path: Path) -> None:
    """Leaving the failed call out changes no verdict of a check that does not see it: no note."""
    done = _run(tmp_path, "cases:\n" + _case("quiet", RETRIED, IGNORE + "    never: [x]\n"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "failed_calls" not in done.stdout and "1 passed" in done.stdout


def test_bulk_records_use_both_keys(tmp_path: Path) -> None:
    """A bulk case (each: record) marks and leaves out failed calls in every record; the quick
    name-only pass is not taken, since it cannot tell failed calls."""
    runs = json.loads((DATA / RUN).read_text(encoding="utf-8"))
    (tmp_path / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in runs * 3),
                                         encoding="utf-8")
    bulk = "{file: runs.jsonl, each: record, select: $.traj"
    once = "    calls: {book_reservation: 1}\n"
    marked = f"{bulk}, error_when: {{$regex: '^Error'}}}}"
    suite = "cases:\n" + _case("bulk", marked, IGNORE + once) \
        + _case("bulk-counted", bulk + "}", once)
    lines = _run(tmp_path, suite).stdout.splitlines()
    assert "FAILED tau.suite.yaml::bulk-counted - 3 of 3 records failed: calls 3" in lines
    assert lines[-1].startswith("1 passed, 1 failed in ")
    case = load_suite(tmp_path / "tau.suite.yaml").cases[0]
    assert quick_pass(Plan(case.expect)) is None and Plan(case.expect).reads_details


def test_update_golden_leaves_failed_calls_out(tmp_path: Path) -> None:
    """--update-golden under failed_calls: ignore records the steps the case checks: the
    successful calls only."""
    suite = "cases:\n" + _case("g", RETRIED, IGNORE + "    golden: golden/g.yaml\n")
    done = _run(tmp_path, suite, "--update-golden")
    assert done.returncode == 0, done.stdout + done.stderr
    golden = (tmp_path / "golden" / "g.yaml").read_text(encoding="utf-8")
    assert golden.count("book_reservation") == 1 and "credit_card_4421486" in golden


@pytest.mark.parametrize(("keys", "expected"), [
    ("    source: {file: run.json, error_when: null}\n    never: [x]\n",
     "tau.suite.yaml:3:42: cases[0].source.error_when: error_when is empty; give what a failed "
     "call's result matches, such as `error_when: {$regex: '^Error'}`"),
    ("    source: {file: run.json, error_when: {$regex: 3}}\n    never: [x]\n",
     "tau.suite.yaml:3:42: cases[0].source.error_when: $regex needs a string pattern, got 3"),
    ("    source: run.json\n    failed_calls: skip\n    never: [x]\n",
     "tau.suite.yaml:4:19: cases[0].failed_calls: unknown failed_calls 'skip' — did you mean "
     "'ignore' (leave calls marked as errors out of steps, calls, never and budget)?"),
    ("    source: run.json\n    failed_calls: ignor\n    never: [x]\n",
     "tau.suite.yaml:4:19: cases[0].failed_calls: unknown failed_calls 'ignor' — did you mean "
     "'ignore'?"),
    ("    source: run.json\n    failed_calls: ignore\n    before: [[a, b]]\n",
     "tau.suite.yaml:4:5: cases[0].failed_calls: failed_calls: ignore leaves failed calls out of "
     "steps, golden, calls, never and budget, but this case has none of them; remove it"),
])
def test_bad_keys_report_exact_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, keys: str,
                                      expected: str) -> None:
    """Each misuse is a load error at its key with the fix."""
    assert _errors(tmp_path, "cases:\n  - name: c\n" + keys, monkeypatch) == expected


def test_defaults_carry_both_keys(tmp_path: Path) -> None:
    """Both keys may sit in defaults, like any case key."""
    suite = _project(tmp_path, f"defaults:\n  source: {RETRIED}\n  failed_calls: ignore\ncases:\n"
                               "  - {name: d, calls: {book_reservation: 1}}\n")
    case = load_suite(suite).cases[0]
    assert case.expect.failed_calls == "ignore"
    assert case.source is not None and case.source.error_when is not UNSET
    run = load_trajectory(tmp_path / RUN, select="$[0].traj")
    assert evaluate(case.expect, mark_errors(run, case.source.error_when)).passed
    assert not evaluate(case.expect, run).passed
