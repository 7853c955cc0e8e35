"""Issue 28, items 4-6: a forced format that reads no call where another reads some is an error
naming the format that fits; steps written as calls, or with their arguments under-indented, are
load errors showing the step meant; a short-form step's tool name is templated."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import invoke_in
from trajrun.errors import SourceError, SuiteErrors
from trajrun.sources import load_trajectory, read_trajectory
from trajrun.suites.golden import load_golden
from trajrun.suites.load import load_suite

LOOKUP = {"type": "tool_use", "id": "t1", "name": "lookup_customer", "input": {"id": "c1"}}
SEND = {"type": "tool_use", "id": "t2", "name": "send_email", "input": {"to": "ada"}}
ANTHROPIC = [
    {"role": "user", "content": "find customer c1"},
    {"role": "assistant", "content": [{"type": "text", "text": "looking"}, LOOKUP]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "Ada"}]},
    {"role": "assistant", "content": [SEND]},
]
OPENAI_CALL = {"id": "c1", "type": "function",
               "function": {"name": "lookup_customer", "arguments": '{"id": "c1"}'}}
OPENAI = [
    {"role": "user", "content": "find customer c1"},
    {"role": "assistant", "content": None, "tool_calls": [OPENAI_CALL]},
    {"role": "tool", "tool_call_id": "c1", "content": "Ada"},
]
FORCED = ("format openai read no tool call from these 4 messages, but they read as anthropic "
          "(2 calls): use {format}, or auto")


def _process(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python -m trajrun ARGS`` as a real process, bounded in time."""
    return subprocess.run([sys.executable, "-m", "trajrun", *args], cwd=cwd, capture_output=True,
                          text=True, env={**os.environ, "NO_COLOR": "1"}, timeout=120)


def _errors(tmp_path: Path, text: str) -> list[str]:
    """The load errors of a suite written as ``t.suite.yaml``."""
    path = tmp_path / "t.suite.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SuiteErrors) as info:
        load_suite(path)
    return [str(error).replace(str(path), "t.suite.yaml") for error in info.value.errors]


def _refusal(doc: object, format: str) -> str:
    """The message of reading ``doc`` as ``format``, which must fail."""
    with pytest.raises(SourceError) as info:
        read_trajectory(doc, format, origin="run")
    return str(info.value)


# -- item 5: a forced format that reads nothing -----------------------------------------------


def test_show_with_a_format_that_reads_no_call_names_the_format_that_fits(tmp_path: Path) -> None:
    """`show --format openai` on an Anthropic history exits 2 naming anthropic (was: calls: 0)."""
    (tmp_path / "run.json").write_text(json.dumps(ANTHROPIC), encoding="utf-8")
    out = _process("show", "run.json", "--format", "openai", cwd=tmp_path)
    assert out.returncode == 2
    assert out.stdout == ""
    assert out.stderr == f"trajrun: error: run.json: {FORCED.format(format='--format anthropic')}\n"


def test_a_case_with_a_format_that_reads_no_call_names_the_format_that_fits(tmp_path: Path) -> None:
    """In a suite the case errors with the fix in a suite's words (was: "no tool was called")."""
    (tmp_path / "run.json").write_text(json.dumps(ANTHROPIC), encoding="utf-8")
    (tmp_path / "t.suite.yaml").write_text(
        "cases:\n  - name: forced\n    source: {file: run.json, format: openai}\n"
        "    steps: [lookup_customer]\n", encoding="utf-8")
    out = invoke_in(tmp_path, "run", "t.suite.yaml")
    assert out.exit_code == 1
    expected = FORCED.format(format="format: anthropic")
    assert f"ERROR t.suite.yaml::forced - source: run.json: {expected}" in out.output


def test_one_message_and_a_mapping_are_worded_as_such() -> None:
    """A list of one message is "this message"; a document that is not a list "this document"."""
    assert _refusal([ANTHROPIC[3]], "openai") == (
        "run: format openai read no tool call from this message, but it reads as anthropic "
        "(1 call): use format: anthropic, or auto")
    assert _refusal(ANTHROPIC[3], "openai") == (
        "run: format openai read no tool call from this document, but it reads as anthropic "
        "(1 call): use format: anthropic, or auto")
    assert _refusal({"messages": OPENAI}, "openai-responses") == (
        "run: format openai-responses read no tool call from these 3 messages, but they read as "
        "openai (1 call): use format: openai, or auto")


@pytest.mark.parametrize(("doc", "format"), [
    (ANTHROPIC[:1], "openai"),                          # no call in any format: an empty run
    ([ANTHROPIC[0], {"role": "assistant", "content": [{"type": "text", "text": "hi"}]}], "openai"),
    (OPENAI, "openai"),                                 # calls read: nothing more is asked
    ({"tool_calls": [], "turns": 0}, "trajectory"),     # no call, and detection reads the same
    ([], "anthropic"),
])
def test_a_forced_format_that_fits_is_read_as_before(doc: object, format: str) -> None:
    """No error where no other format reads a call, or the forced one read some."""
    assert read_trajectory(doc, format).format == format


def test_a_bulk_case_errs_only_on_the_records_another_format_reads(tmp_path: Path) -> None:
    """Forced over records, each record is checked: an Anthropic line errs, an OpenAI line
    without calls passes."""
    lines = [{"messages": ANTHROPIC}, {"messages": OPENAI[:1]}]
    text = "".join(json.dumps(line) + "\n" for line in lines)
    (tmp_path / "runs.jsonl").write_text(text, encoding="utf-8")
    (tmp_path / "t.suite.yaml").write_text(
        "cases:\n  - name: bulk\n    source: {file: runs.jsonl, each: record, format: openai}\n"
        "    never: [delete_account]\n", encoding="utf-8")
    out = invoke_in(tmp_path, "run", "t.suite.yaml", "--records", "records.jsonl")
    assert out.exit_code == 1
    records = [json.loads(line) for line in
               (tmp_path / "records.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [(r["record"], r["outcome"], r["message"]) for r in records] == [
        ("runs.jsonl:1", "error", f"source: {FORCED.format(format='format: anthropic')}"),
        ("runs.jsonl:2", "passed", "passed")]


def test_load_trajectory_with_auto_is_unchanged(tmp_path: Path) -> None:
    """Detection itself reads the history as before."""
    (tmp_path / "run.json").write_text(json.dumps(ANTHROPIC), encoding="utf-8")
    run = load_trajectory(tmp_path / "run.json")
    assert (run.format, run.names) == ("anthropic", ["lookup_customer", "send_email"])


# -- item 6: steps that are not tool names ----------------------------------------------------

HEAD = "cases:\n  - name: c\n    source: run.json\n    steps:\n"
NOT_A_NAME = ("is not a tool name: tool names hold no spaces, brackets, braces or parentheses "
              "(no provider allows them)")
SPACES = "(for a tool a framework records with spaces in its name, write the long form"


@pytest.mark.parametrize(("step", "error"), [
    ("- lookup_customer(id=c1)",
     f"'lookup_customer(id=c1)' {NOT_A_NAME}; did you mean `- lookup_customer: {{id: c1}}`?"),
    ("- lookup_customer {id: c1}",
     f"'lookup_customer {{id: c1}}' {NOT_A_NAME}; did you mean `- lookup_customer: {{id: c1}}`?"),
    ("- lookup_customer(id: c1)",
     f"'lookup_customer(id: c1)' {NOT_A_NAME}; did you mean `- lookup_customer: {{id: c1}}`?"),
    ("- lookup_customer()",
     f"'lookup_customer()' {NOT_A_NAME}; did you mean `- lookup_customer: {{}}`?"),
    ('- book(city="Paris", days=3)',
     f"'book(city=\"Paris\", days=3)' {NOT_A_NAME}; did you mean "
     "`- book: {city: \"Paris\", days: 3}`?"),
    ("- search q=x n=2",
     f"'search q=x n=2' {NOT_A_NAME}; did you mean `- search: {{q: x, n: 2}}`?"),
    ('- lookup_customer("c1")',
     f"'lookup_customer(\"c1\")' {NOT_A_NAME}; did you mean "
     "`- lookup_customer: {<argument>: <value>}`?"),
    ("- lookup customer", f"'lookup customer' {NOT_A_NAME}; did you mean `- lookup_customer`? "
                          f"{SPACES} `- name: \"lookup customer\"`)"),
    ('- "search web": {q: "x y"}',
     f"'search web' {NOT_A_NAME}; did you mean `- search_web: {{q: \"x y\"}}`? "
     f"{SPACES} `- {{name: \"search web\", args: {{q: \"x y\"}}}}`)"),
])
def test_a_step_written_as_a_call_is_a_load_error_showing_the_step_meant(
        tmp_path: Path, step: str, error: str) -> None:
    """Each form is refused at the step's file:line:column with the form probably meant."""
    assert _errors(tmp_path, f"{HEAD}      - get_weather\n      {step}\n") == [
        f"t.suite.yaml:6:9: cases[0].steps[1]: {error}"]


def test_a_long_form_name_may_hold_spaces_but_no_brackets(tmp_path: Path) -> None:
    """The long form takes a name a framework records with spaces, not a call written as a name."""
    steps = ("      - name: Search the web\n      - name: book(city=Paris)\n"
             "      - name: pay(x)\n        args: {}\n")
    errors = _errors(tmp_path, HEAD + steps)
    head = ("is not a tool name: tool names hold no brackets, braces or parentheses (no provider "
            "allows them); did you mean")
    assert errors == [
        f"t.suite.yaml:6:15: cases[0].steps[1].name: 'book(city=Paris)' {head} `name: book` with "
        "`args: {city: Paris}`?",
        f"t.suite.yaml:7:15: cases[0].steps[2].name: 'pay(x)' {head} `name: pay`?"]


def test_steps_in_a_parallel_group_are_checked_too(tmp_path: Path) -> None:
    """A group's members are steps like any other."""
    errors = _errors(tmp_path, f"{HEAD}      - parallel:\n          - a(x=1)\n          - b\n")
    assert errors == [f"t.suite.yaml:6:13: cases[0].steps[0].parallel[0]: 'a(x=1)' {NOT_A_NAME}; "
                      "did you mean `- a: {x: 1}`?"]


def test_a_golden_file_keeps_names_as_recorded(tmp_path: Path) -> None:
    """A golden file holds the names a run recorded (a framework's may hold spaces): they load."""
    text = '- "Search the web": {q: x}\n- "read page"\n'
    (tmp_path / "g.yaml").write_text(text, encoding="utf-8")
    steps = load_golden(tmp_path / "g.yaml")
    assert [step.name for step in steps] == ["Search the web", "read page"]


# -- item 6: a short-form step's key is templated ---------------------------------------------


def test_a_short_form_step_key_is_rendered(tmp_path: Path) -> None:
    """`"{{ tool }}": {...}` under parametrize names each expansion's tool, in groups too."""
    path = tmp_path / "t.suite.yaml"
    path.write_text(
        "cases:\n  - name: c\n    source: run.json\n"
        "    parametrize: {tool: [lookup_customer, send_email]}\n"
        "    steps:\n      - \"{{ tool }}\": {id: \"{{ tool }}\"}\n"
        "      - parallel:\n          - \"{{ tool }}_a\": {}\n          - b: {}\n",
        encoding="utf-8")
    cases = load_suite(path).cases
    assert [[(s.name, s.args) for s in case.expect.steps or ()] for case in cases] == [
        [("lookup_customer", {"id": "lookup_customer"}), ("lookup_customer_a", {}), ("b", {})],
        [("send_email", {"id": "send_email"}), ("send_email_a", {}), ("b", {})]]


def test_a_step_key_that_does_not_render_to_a_name_is_a_load_error(tmp_path: Path) -> None:
    """An undefined variable is reported once (not also as a name with braces); a number is no
    tool name."""
    steps = '      - "{{ toll }}": {id: c1}\n      - "{{ n }}": {}\n'
    assert _errors(tmp_path, f"vars: {{n: 3}}\n{HEAD}{steps}") == [
        "t.suite.yaml:6:9: cases[0].steps[0]: undefined variable 'toll' in '{{ toll }}' (define it "
        "in `vars`, pass --var toll=..., or list it in `parametrize`)",
        "t.suite.yaml:7:9: cases[0].steps[1]: the tool name '{{ n }}' gave the number 3; a tool "
        "name is a string"]


# -- item 4: arguments at the indent of their tool name ---------------------------------------

SLIP = ("it looks like an indentation slip, the arguments of '{tool}' written at its indent; "
        "indent them under the tool name, or write")


def test_under_indented_arguments_are_reported_as_an_indentation_slip(tmp_path: Path) -> None:
    """`- book_flight:` then `flight_id: TP433` at its indent is one map of keys: the fixed form
    is shown."""
    steps = ("      - book_flight:\n        flight_id: TP433\n        seat: 12A\n"
             "        meal: null\n")
    assert _errors(tmp_path, HEAD + steps) == [
        "t.suite.yaml:5:9: cases[0].steps[0]: this step is one map of 4 keys (book_flight, "
        f"flight_id, seat, meal): {SLIP.format(tool='book_flight')} "
        "`- book_flight: {flight_id: TP433, seat: 12A, meal: null}`"]


def test_long_under_indented_arguments_show_their_keys_only(tmp_path: Path) -> None:
    """Arguments too long for one line of a message show each key with an ellipsis."""
    steps = f"      - send:\n        body: {'x' * 200}\n        to: ada\n"
    assert _errors(tmp_path, HEAD + steps) == [
        "t.suite.yaml:5:9: cases[0].steps[0]: this step is one map of 3 keys (send, body, to): "
        f"{SLIP.format(tool='send')} `- send: {{body: …, to: …}}`"]


def test_a_map_of_several_tools_keeps_its_message(tmp_path: Path) -> None:
    """A map whose first key has a value is not a slip: the message about one key stays."""
    errors = _errors(tmp_path, f"{HEAD}      - search: {{q: x}}\n        book: {{id: 1}}\n")
    assert errors == [
        "t.suite.yaml:5:9: cases[0].steps[0]: a step map has one key, the tool name "
        "({search: {q: x}}); found keys search, book — for the long form write `name: <tool>`"]
