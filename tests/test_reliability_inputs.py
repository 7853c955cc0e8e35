"""Hostile inputs to the bulk globs, the bulk readers, ``trajrun report`` and the importers: a folder linked to
itself, lines holding secrets, reports of the wrong shape, symlinked outputs and ids that hold line breaks.

Each ends in bounded time with a clear message and the README's exit code, quotes nothing of a file it could
not read, and writes nowhere but where it was asked.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trajrun
from cli_helpers import invoke_in
from hypothesis import given
from hypothesis import strategies as st
from properties import PROPERTY
from trajrun.reports import html
from trajrun.sources.streams import expand
from trajrun.suites.model import JudgeSettings
from trajrun.yaml_core import load_data

SECRET = "sk-SECRET-0123456789"
CALL = {"role": "assistant", "content": None,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "t", "arguments": "{}"}}]}
GOOD = json.dumps({"messages": [CALL]})
BULK_SUITE = """suite: prod
cases:
  - name: policies
    source: {file: "FILE", each: EACH, select: $.messages}
    mode: superset
    steps: [t]
"""


def process(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python -m trajrun ARGS`` as a real process, killed after a minute (a walk that never ends fails here)."""
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-m", "trajrun", *args], cwd=cwd, capture_output=True, text=True,
                          env=env, timeout=60)


def bulk_suite(folder: Path, file: str, each: str = "record") -> None:
    """A suite at ``folder/prod.suite.yaml`` whose one bulk case reads ``file`` with ``each``."""
    (folder / "prod.suite.yaml").write_text(BULK_SUITE.replace("FILE", file).replace("EACH", each), encoding="utf-8")


def records_of(path: Path) -> list[tuple[str, str, str]]:
    """The ``--records`` lines of a file as (record, outcome, message)."""
    lines = [json.loads(text) for text in path.read_text(encoding="utf-8").splitlines()]
    return [(line["record"], line["outcome"], line["message"]) for line in lines]


# -- bulk globs ----------------------------------------------------------------------------------------------


def test_a_glob_over_folders_linked_to_themselves_ends_and_reads_each_file_once(tmp_path: Path) -> None:
    """``logs/**/*.jsonl`` over links to ``.``, to the parent and to each other reads the one real file once
    (``glob`` followed them for ever); ``validate`` over the same folder ends too."""
    (tmp_path / "logs" / "day" / "deep").mkdir(parents=True)
    (tmp_path / "logs" / "day" / "a.jsonl").write_text(GOOD + "\n" + GOOD + "\n", encoding="utf-8")
    (tmp_path / "logs" / "self").symlink_to(".")
    (tmp_path / "logs" / "day" / "up").symlink_to("..")
    (tmp_path / "logs" / "day" / "deep" / "root").symlink_to(tmp_path)
    (tmp_path / "logs" / "day" / "deep" / "day").symlink_to(tmp_path / "logs" / "day")
    bulk_suite(tmp_path, "logs/**/*.jsonl")
    run = process("run", "prod.suite.yaml", "--records", "records.jsonl", cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert records_of(tmp_path / "records.jsonl") == [("logs/day/a.jsonl:1", "passed", "passed"),
                                                      ("logs/day/a.jsonl:2", "passed", "passed")]
    checked = process("validate", ".", cwd=tmp_path)
    assert (checked.returncode, checked.stdout) == (0, "1 suite file checked, 0 problems\n")


def test_a_glob_descends_into_no_symlinked_folder_but_reads_one_it_names(tmp_path: Path) -> None:
    """``**`` leaves a link to a folder elsewhere alone; a pattern that names the link, or matches it with ``*``,
    reads through it; a second name for a file (a symlink, a hard link) is read once, under its first name."""
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "x.jsonl").write_text(GOOD + "\n", encoding="utf-8")
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "a.jsonl").write_text(GOOD + "\n", encoding="utf-8")
    (tmp_path / "logs" / "b.jsonl").symlink_to("a.jsonl")
    os.link(tmp_path / "logs" / "a.jsonl", tmp_path / "logs" / "c.jsonl")
    (tmp_path / "logs" / "ext").symlink_to(tmp_path / "elsewhere")
    logs = str(tmp_path / "logs")
    assert expand(f"{logs}/**/*.jsonl") == [f"{logs}/a.jsonl"]
    assert expand(f"{logs}/ext/**/*.jsonl") == [f"{logs}/ext/x.jsonl"]
    assert expand(f"{logs}/*/*.jsonl") == [f"{logs}/ext/x.jsonl"]


# -- bulk errors quote nothing ----------------------------------------------------------------------------------


def test_bulk_record_errors_say_the_line_and_the_reason_and_quote_nothing(tmp_path: Path) -> None:
    """An unreadable line of a file elsewhere is an error of that record that names its line and why, in every
    report, and no report holds a character of it."""
    (tmp_path / "logs").mkdir()
    huge = '{"id": ' + "7" * 5000 + "}"
    (tmp_path / "logs" / "a.jsonl").write_text(f'{GOOD}\n{{"api_key": "{SECRET}"\n{huge}\n', encoding="utf-8")
    bulk_suite(tmp_path, "logs/*.jsonl")
    out = invoke_in(tmp_path, "run", "prod.suite.yaml", "--records", "records.jsonl", "--json", "r.json",
                    "--junit-xml", "j.xml", "--html", "r.html")
    assert out.exit_code == 1
    assert records_of(tmp_path / "records.jsonl") == [
        ("logs/a.jsonl:1", "passed", "passed"),
        ("logs/a.jsonl:2", "error", "source: invalid JSON at column 35: Expecting ',' delimiter"),
        ("logs/a.jsonl:3", "error", "source: invalid JSON at column 8: an integer of 5,000 digits; trajrun reads "
                                    "integers of at most 4,300 digits (Python's limit) — quote it to keep it as a "
                                    "string")]
    shown = [out.output] + [(tmp_path / name).read_text(encoding="utf-8") for name in ("r.json", "j.xml", "r.html")]
    assert not [text for text in shown if "SECRET" in text or "7777" in text]


@pytest.mark.parametrize(("name", "content", "each", "message"), [
    ("a.json", '{"api_key": "' + SECRET + '" "x"}', "file",
     "invalid JSON at line 1, column 36: Expecting ',' delimiter"),
    ("a.json", '{"a": 1}\n{"api_key": "' + SECRET + '"}', "file",
     "invalid JSON at line 2, column 1: Extra data; for one JSON document per line, name the file .jsonl"),
    ("a.json", json.dumps(SECRET), "record",
     "each: record reads JSONL lines or the items of a top-level list, found a string; use each: file to read "
     "the file as one run"),
])
def test_bulk_file_errors_quote_nothing(tmp_path: Path, name: str, content: str, each: str, message: str) -> None:
    """``each: file`` and ``each: record`` over a JSON file that is not what they read: the reason, no quote."""
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / name).write_text(content, encoding="utf-8")
    bulk_suite(tmp_path, "logs/*.json", each)
    out = invoke_in(tmp_path, "run", "prod.suite.yaml", "--records", "records.jsonl")
    assert records_of(tmp_path / "records.jsonl") == [(f"logs/{name}", "error", f"source: {message}")]
    assert "SECRET" not in out.output


# -- trajrun report ---------------------------------------------------------------------------------------------


@pytest.fixture
def saved_report(tmp_path: Path) -> dict[str, Any]:
    """The JSON report of a run with a passing and a failing case, as ``trajrun run --json`` saved it."""
    (tmp_path / "run.json").write_text(json.dumps([CALL]), encoding="utf-8")
    (tmp_path / "s.suite.yaml").write_text("suite: s\ncases:\n- {name: a, source: run.json, steps: [t]}\n"
                                           "- {name: b, source: run.json, steps: [u]}\n", encoding="utf-8")
    assert invoke_in(tmp_path, "run", "s.suite.yaml", "--json", "r.json").exit_code == 1
    report: dict[str, Any] = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    return report


def _set(path: tuple[Any, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    """A change of the report: the field at ``path`` set to ``value``."""
    def change(report: dict[str, Any]) -> None:
        node = report
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
    return change


@pytest.mark.parametrize(("change", "message"), [
    (_set(("summary",), [1, 2]), "summary must be a map, found a list"),
    (_set(("summary", "passed"), "3"), "summary.passed must be a whole number of 0 or more, found a string"),
    (_set(("summary", "load_errors"), -1),
     "summary.load_errors must be a whole number of 0 or more, found a negative whole number"),
    (_set(("summary", "duration"), "fast"), "summary.duration must be a number, found a string"),
    (_set(("summary", "duration"), 10 ** 400), "summary.duration must be a number, found a whole number too large "
                                               "to read"),
    (_set(("suites", 0), "s"), "suites[0] must be a map, found a string"),
    (_set(("suites", 0, "cases"), {"a": 1}), "suites[0].cases must be a list, found a map"),
    (_set(("suites", 0, "cases", 1, "checks"), "steps"), "suites[0].cases[1].checks must be a list, found a string"),
    (_set(("suites", 0, "cases", 0, "trajectory", "tool_calls"), 5),
     "suites[0].cases[0].trajectory.tool_calls must be a list, found a whole number"),
])
def test_report_refuses_a_report_of_the_wrong_shape_naming_the_field(
        tmp_path: Path, saved_report: dict[str, Any], change: Callable[[dict[str, Any]], None], message: str) -> None:
    """A saved report whose summary is a list, whose counts are strings…: exit 2 naming the field, no page."""
    change(saved_report)
    (tmp_path / "bad.json").write_text(json.dumps(saved_report), encoding="utf-8")
    out = invoke_in(tmp_path, "report", "bad.json", "--html", "page.html")
    assert (out.exit_code, out.stdout) == (2, "")
    assert out.stderr == (f"trajrun: error: bad.json: {message}; give the file that `trajrun run --json FILE` "
                          "wrote\n")
    assert not (tmp_path / "page.html").exists()


def test_report_refuses_nesting_too_deep_to_decode(tmp_path: Path) -> None:
    """A report nested past what the decoder follows is refused as such, not an internal error."""
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    out = invoke_in(tmp_path, "report", "deep.json", "--html", "page.html")
    assert (out.exit_code, out.stderr) == (2, "trajrun: error: deep.json: not a trajrun JSON report (lists and maps "
                                              "nest too deeply to decode); give the file that `trajrun run --json "
                                              "FILE` wrote\n")


JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                                       max_size=3),
                           max_leaves=6)


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a node of a JSON value (the root excluded)."""
    children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    found = []
    for key, item in children:
        found.append((*path, key))
        found.extend(_paths(item, (*path, key)))
    return found


@PROPERTY
@given(data=st.data())
def test_any_field_of_a_report_replaced_renders_or_is_refused(tmp_path_factory: pytest.TempPathFactory,
                                                              data: st.DataObject) -> None:
    """Any one node of a real report replaced by any JSON value: the page renders, or ``ReportReadError``."""
    report = REPORT_FOR_PROPERTY
    target = data.draw(st.sampled_from(_paths(report)))
    changed = json.loads(json.dumps(report))
    _set(target, data.draw(JSON_VALUES))(changed)
    path = tmp_path_factory.mktemp("report") / "r.json"
    path.write_text(json.dumps(changed), encoding="utf-8")
    try:
        loaded = html.load_json(path)
    except html.ReportReadError as exc:
        assert str(exc).startswith(f"{path}: ")
        return
    assert html.render(loaded).startswith("<!DOCTYPE html>")


REPORT_FOR_PROPERTY: dict[str, Any] = {
    "version": 1,
    "summary": {"passed": 1, "failed": 1, "error": 0, "skipped": 0, "xfailed": 0, "xpassed": 0, "total": 2,
                "deselected": 0, "judge_skipped": 0, "load_errors": 0, "duration": 0.01, "exit_code": 1},
    "suites": [{"name": "s", "file": "s.suite.yaml", "load_errors": [], "cases": [
        {"id": "s.suite.yaml::a", "name": "a", "file": "s.suite.yaml", "line": 3, "outcome": "failed",
         "duration": 0.001, "message": "1 check failed", "details": "", "score": 0.5, "missing": [],
         "unexpected": [], "checks": [{"check": "steps", "summary": "1 missing", "detail": ""}], "errors": [],
         "notes": [], "judge": {"score": 0.5, "threshold": 0.7, "passed": False, "reasoning": "r"},
         "trajectory": {"format": "openai", "tool_calls": [{"name": "t", "args": {}, "result": "ok"}], "turns": 1},
         "steps": {"mode": "strict", "passed": False, "pairs": [], "nearest": [], "expected": [{"name": "u"}]},
         "bulk": {"each": "record", "files": 1, "records": 2, "passed": 1, "failed": 1, "error": 0,
                  "by_check": {"steps": 1}, "worst": [{"record": "x:1", "message": "m"}]}}]}],
}
"""A report with every part the page reads (the property test mutates copies of it)."""


# -- importers --------------------------------------------------------------------------------------------------

ARGS = {"a\njudge_defaults: 1": "x\u2028judge_defaults: 2", "? k": "# v", "b\x1b[2J": "{{ c }}"}
SET_ID = "weather\njudge_defaults: {base_url: 'http://127.0.0.1:9/steal'}\n#"
EVAL_SET = {"eval_set_id": SET_ID, "eval_cases": [{"eval_id": "c1", "conversation": [{
    "user_content": {"parts": [{"text": "hi"}]},
    "intermediate_data": {"tool_uses": [{"name": "lookup", "args": ARGS}]}}]}]}


def test_adk_ids_with_line_breaks_stay_in_the_header_comment_and_values_are_quoted(tmp_path: Path) -> None:
    """An ``eval_set_id`` holding line breaks is escaped in the header comment (it used to inject a working
    ``judge_defaults``); keys and values holding line breaks, ``#`` and escapes read back as written."""
    (tmp_path / "w.evalset.json").write_text(json.dumps(EVAL_SET), encoding="utf-8")
    out = invoke_in(tmp_path, "import", "adk", "w.evalset.json", "-o", "out")
    assert out.exit_code == 0, out.stderr
    text = (tmp_path / "out" / "w.suite.yaml").read_text(encoding="utf-8")
    assert text.splitlines()[0] == ("# Imported by `trajrun import adk` from w.evalset.json (eval set weather\\n"
                                    "judge_defaults: {base_url: 'http://127.0.0.1:9/steal'}\\n#).")
    assert list(load_data(text)) == ["suite", "defaults", "cases"]
    suite = trajrun.load_suite(tmp_path / "out" / "w.suite.yaml")
    assert suite.judge_defaults == JudgeSettings()
    assert suite.name == SET_ID
    [step] = suite.cases[0].expect.steps or ()
    assert (step.name, step.args) == ("lookup", ARGS)


def test_header_values_are_one_line_each(tmp_path: Path) -> None:
    """Every line of the header is a comment, whatever the file name and ``--python`` hold."""
    name = "we\u2028ather\r.evalset.json"
    (tmp_path / name).write_text(json.dumps({"eval_cases": EVAL_SET["eval_cases"]}), encoding="utf-8")
    out = invoke_in(tmp_path, "import", "adk", name, "--python", "agent:run\x85judge_defaults {}")
    assert out.exit_code == 0, out.stderr
    header = [line for line in out.stdout.splitlines() if not line.startswith(("suite:", "defaults:", "cases:", " ",
                                                                                "-"))]
    assert header[0] == "# Imported by `trajrun import adk` from we\\u2028ather\\r.evalset.json."
    assert all(line.startswith("#") for line in header), header
    assert list(load_data(out.stdout)) == ["suite", "defaults", "cases"]


def test_import_replaces_a_symlink_and_leaves_what_it_names_untouched(tmp_path: Path) -> None:
    """``-o out`` where ``out/w.suite.yaml`` links outside: refused without ``--force``, replaced with it; the file
    the link names, or would create, is never written."""
    (tmp_path / "w.evalset.json").write_text(json.dumps(EVAL_SET), encoding="utf-8")
    (tmp_path / "out").mkdir()
    (tmp_path / "outside.txt").write_text("keep me\n", encoding="utf-8")
    link = tmp_path / "out" / "w.suite.yaml"
    link.symlink_to(tmp_path / "outside.txt")
    refused = invoke_in(tmp_path, "import", "adk", "w.evalset.json", "-o", "out")
    assert (refused.exit_code, refused.stderr) == (2, "trajrun: error: out/w.suite.yaml exists (a symlink); pass "
                                                      "--force to replace it, or choose another -o folder\n")
    forced = invoke_in(tmp_path, "import", "adk", "w.evalset.json", "-o", "out", "--force")
    assert forced.exit_code == 0, forced.stderr
    assert (tmp_path / "outside.txt").read_text(encoding="utf-8") == "keep me\n"
    assert not link.is_symlink() and trajrun.load_suite(link).cases[0].name == "c1"
    link.unlink()
    link.symlink_to(tmp_path / "created.txt")  # dangling: writing through it would create a file outside
    assert invoke_in(tmp_path, "import", "adk", "w.evalset.json", "-o", "out").exit_code == 2
    assert invoke_in(tmp_path, "import", "adk", "w.evalset.json", "-o", "out", "--force").exit_code == 0
    assert not (tmp_path / "created.txt").exists() and not link.is_symlink()


def _example(city: str) -> str:
    """One LangSmith example line whose reference calls ``get_weather`` for ``city``."""
    function = {"name": "get_weather", "arguments": json.dumps({"city": city})}
    call = {"id": "c1", "type": "function", "function": function}
    return json.dumps({"inputs": {"q": city}, "outputs": {"messages": [
        {"role": "user", "content": city}, {"role": "assistant", "content": None, "tool_calls": [call]}]}})


def test_langsmith_skips_a_line_that_is_not_json_and_imports_the_rest(tmp_path: Path) -> None:
    """One bad line is reported (file:line: reason, nothing of it quoted) and left out; the others are imported and
    the exit status is 0, as for every other item left out."""
    lines = [_example("Paris"), '{"inputs": ' + SECRET, "", _example("Oslo")]
    (tmp_path / "ds.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = invoke_in(tmp_path, "import", "langsmith", "ds.jsonl", "--mode", "strict", "--python", "agent:run",
                    "-o", ".")
    assert out.exit_code == 0
    assert out.stderr == ("wrote ds.suite.yaml (2 cases)\n"
                          "trajrun: ds.jsonl:2: left out: invalid JSON at column 12: Expecting value\n")
    suite = trajrun.load_suite(tmp_path / "ds.suite.yaml")
    assert [c.name for c in suite.cases] == ["Paris", "Oslo"]


def test_langsmith_reports_the_first_bad_lines_and_counts_the_rest(tmp_path: Path) -> None:
    """Seven bad lines: five named, two counted; with no good line left, nothing is written and the exit is 2."""
    (tmp_path / "ds.jsonl").write_text("[\n" * 7 + _example("Paris") + "\n", encoding="utf-8")
    out = invoke_in(tmp_path, "import", "langsmith", "ds.jsonl", "--mode", "strict", "--python", "agent:run")
    assert out.exit_code == 0
    assert out.stderr.splitlines() == [
        *(f"trajrun: ds.jsonl:{n}: left out: invalid JSON at column 2: Expecting value" for n in range(1, 6)),
        "trajrun: ds.jsonl: left out: 2 more lines that could not be read"]
    (tmp_path / "bad.jsonl").write_text("nope\n", encoding="utf-8")
    none = invoke_in(tmp_path, "import", "langsmith", "bad.jsonl", "--mode", "strict", "-o", "out")
    assert (none.exit_code, none.stderr) == (2, "trajrun: error: bad.jsonl: no example with reference messages to "
                                                "import; bad.jsonl:1: left out: invalid JSON at column 1: Expecting "
                                                "value\n")
    assert not (tmp_path / "out").exists()
