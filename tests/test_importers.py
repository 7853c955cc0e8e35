"""``trajrun import adk`` and ``trajrun import langsmith``: suites that load and run, and a report of what was left out.

The ADK round trip uses the eval set and session samples in tests/data/samples/google_adk/ (copied from
shared/samples/google_adk/, recorded with google-adk 2.13).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import trajrun
from cli_helpers import invoke_in
from trajrun.match.expectation import Step

ADK = Path(__file__).parent / "data" / "samples" / "google_adk"
EVALSET = ADK / "generated.evalset.json"
EVENTS = ADK / "events_snake_case.json"


trajrun_cli = invoke_in


def steps(suite: trajrun.Suite, case: int = 0) -> list[tuple[str, Any]]:
    """A loaded case's steps as (name, args)."""
    return [(s.name, s.args) for s in suite.cases[case].expect.steps or ()]


# -- Google ADK -------------------------------------------------------------------------------------------


def test_adk_eval_set_imports_into_a_suite_that_runs_on_the_recorded_session(tmp_path: Path) -> None:
    """The generated eval set's expected calls become strict steps; pointed at the session's events, the suite passes."""
    shutil.copy(EVENTS, tmp_path / "events.json")
    out = trajrun_cli(tmp_path, "import", "adk", str(EVALSET), "--select", "$.evalset", "--source", "events.json",
                      "-o", "suites")
    assert out.exit_code == 0, out.output
    assert out.stdout == ""
    assert out.stderr.splitlines()[0] == "wrote suites/generated.suite.yaml (1 case)"
    text = (tmp_path / "suites" / "generated.suite.yaml").read_text(encoding="utf-8")
    assert text.startswith("# Imported by `trajrun import adk` from generated.evalset.json (eval set weather_set).\n")
    suite = trajrun.load_suite(tmp_path / "suites" / "generated.suite.yaml")
    assert (suite.name, suite.cases[0].name, suite.cases[0].expect.mode) == ("weather_set", "case1", "strict")
    assert suite.cases[0].expect.args_mode == "exact"
    assert steps(suite) == [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Atlantis"})]
    assert suite.cases[0].source.file == tmp_path / "suites" / ".." / "events.json"
    result = trajrun.run_paths([tmp_path / "suites"])
    assert [c.outcome for c in result.cases] == ["passed"]


def test_adk_suite_runs_a_python_source_with_the_users_queries(tmp_path: Path) -> None:
    """With ``--python``, each case calls the function with the user's messages as ``queries``; it runs the agent."""
    events = json.loads(EVENTS.read_text(encoding="utf-8"))["events"]
    (tmp_path / "agent.py").write_text(
        "import json\n"
        "def run(queries):\n"
        "    assert queries == ['Weather in Paris and Atlantis?'], queries\n"
        f"    return {{'events': json.loads({json.dumps(json.dumps(events))})}}\n", encoding="utf-8")
    out = trajrun_cli(tmp_path, "import", "adk", str(EVALSET), "--select", "$.evalset", "--python", "agent:run")
    assert out.exit_code == 0, out.stderr
    (tmp_path / "adk.suite.yaml").write_text(out.stdout, encoding="utf-8")
    assert "fill in the source" not in out.stderr
    result = trajrun.run_paths([tmp_path / "adk.suite.yaml"])
    assert [c.outcome for c in result.cases] == ["passed"], result.cases[0].message


def test_adk_report_says_what_was_not_carried_over_and_the_placeholder_source_loads(tmp_path: Path) -> None:
    """Final responses and tool results are reported on stderr; the default source is a placeholder to fill in."""
    out = trajrun_cli(tmp_path, "import", "adk", str(EVALSET), "--select", "$.evalset")
    assert out.exit_code == 0
    report = out.stderr.splitlines()
    assert report[0] == (f"trajrun: {EVALSET}: not carried over: the expected final responses (ADK scores them with "
                         "response_match_score, a ROUGE-1 text overlap; check the answer with `answer:` or a `judge:` "
                         "rubric) (1 case: case1)")
    assert "the recorded tool results" in report[1]
    assert report[2].startswith("trajrun: note: fill in the source: each case calls the placeholder `my_agent.evals:run`")
    (tmp_path / "x.suite.yaml").write_text(out.stdout, encoding="utf-8")
    case = trajrun.load_suite(tmp_path / "x.suite.yaml").cases[0]
    assert (case.source.python, dict(case.source.args)) == ("my_agent.evals:run",
                                                            {"queries": ["Weather in Paris and Atlantis?"]})


LEGACY_SET = {
    "eval_set_id": "home_automation",
    "eval_cases": [
        {
            "eval_id": "two turns",
            "conversation": [
                {"invocation_id": "a", "user_content": {"parts": [{"text": "Turn off device_2"}], "role": "user"},
                 "final_response": {"parts": [{"text": "Done."}], "role": "model"},
                 "intermediate_data": {"tool_uses": [{"id": None, "name": "set_device_info",
                                                      "args": {"location": None, "device_id": "device_2",
                                                               "status": "OFF"}}],
                                       "tool_responses": [], "intermediate_responses": [["sub", [{"text": "ok"}]]]}},
                {"invocation_id": "b", "user_content": {"parts": [{"text": "And query {{ it }}"}], "role": "user"},
                 "intermediate_data": {"tool_uses": [{"name": "query", "args": {"filter": {"$gt": 3},
                                                                                 "note": "{{ not a template }}"}},
                                                     {"name": "", "args": {}}]}},
            ],
            "session_input": {"app_name": "home", "user_id": "u", "state": {"tier": "gold"}},
            "rubrics": [{"rubric_id": "r1"}],
        },
        {"eval_id": "simulated", "conversation_scenario": {"starting_prompt": "hi"}},
        {"eval_id": "two turns", "conversation": [{"user_content": {"parts": [{"text": "nothing"}]}}]},
    ],
}


def test_adk_legacy_tool_uses_are_taken_literally(tmp_path: Path) -> None:
    """Snake-case tool_uses of every invocation in order; `$` keys and template-looking text stay data; session state
    is passed on; nameless calls, scenarios and rubrics are reported; repeated ids get a suffix."""
    (tmp_path / "home.evalset.json").write_text(json.dumps(LEGACY_SET), encoding="utf-8")
    out = trajrun_cli(tmp_path, "import", "adk", "home.evalset.json", "-o", ".")
    assert out.exit_code == 0, out.stderr
    suite = trajrun.load_suite(tmp_path / "home.suite.yaml")
    assert [c.name for c in suite.cases] == ["two turns", "two turns (2)"]
    assert steps(suite) == [("set_device_info", {"location": None, "device_id": "device_2", "status": "OFF"}),
                            ("query", {"filter": {"$gt": 3}, "note": "{{ not a template }}"})]
    assert steps(suite, 1) == []
    assert dict(suite.cases[0].source.args) == {"queries": ["Turn off device_2", "And query {{ it }}"],
                                               "state": {"tier": "gold"}}
    shown = out.stderr
    for what in ("the expected intermediate agent responses (sub-agents' text; trajrun checks tool calls) (1 case: two turns)",
                 "rubrics (write each as a `judge:` rubric) (1 case: two turns)",
                 ("user-simulation scenarios (no fixed conversation, so no expected tool calls): the case is left out "
                  "(1 case: simulated)"),
                 "tool calls without a name (left out of the steps) (1 case: two turns)"):
        assert f"not carried over: {what}" in shown
    run = trajrun.read_trajectory({"tool_calls": [
        {"name": "set_device_info", "args": {"location": None, "device_id": "device_2", "status": "OFF"}, "turn": 0},
        {"name": "query", "args": {"filter": {"$gt": 3}, "note": "{{ not a template }}"}, "turn": 1}]})
    assert trajrun.evaluate(suite.cases[0].expect, run).passed


def test_adk_old_test_json_list(tmp_path: Path) -> None:
    """The oldest format, a list of {query, expected_tool_use: [{tool_name, tool_input}], reference}, is one case."""
    old = [{"query": "hi", "expected_tool_use": [], "reference": "hello"},
           {"query": "turn off device 2", "expected_tool_use": [{"tool_name": "set", "tool_input": {"id": 2}}]}]
    (tmp_path / "simple.test.json").write_text(json.dumps(old), encoding="utf-8")
    out = trajrun_cli(tmp_path, "import", "adk", "simple.test.json", "-o", "out")
    suite = trajrun.load_suite(tmp_path / "out" / "simple.suite.yaml")
    assert (suite.cases[0].name, steps(suite)) == ("simple", [("set", {"id": 2})])
    assert "expected final responses" in out.stderr


def test_import_usage_errors(tmp_path: Path) -> None:
    """Not an eval set, two files to stdout, an existing file, a bad --python: exit 2 with one line saying why."""
    (tmp_path / "a.evalset.json").write_text(json.dumps(LEGACY_SET), encoding="utf-8")
    (tmp_path / "b.evalset.json").write_text(json.dumps(LEGACY_SET), encoding="utf-8")
    (tmp_path / "no.json").write_text("{}", encoding="utf-8")
    cases = [
        (["no.json"], "no.json: not an ADK eval set: expected a map with `eval_cases`"),
        (["a.evalset.json", "b.evalset.json"], "2 files to import: give -o DIR to write one suite file each"),
        (["a.evalset.json", "--python", "agent"], "--python must be 'module:function', found 'agent'"),
        (["a.evalset.json", "--python", "a:b", "--source", "r.json"], "give --python or --source, not both"),
        (["missing.json"], "missing.json: file not found"),
    ]
    for args, wanted in cases:
        out = trajrun_cli(tmp_path, "import", "adk", *args)
        assert out.exit_code == 2 and out.stderr.startswith("trajrun: error: ") and wanted in out.stderr, out.stderr
    assert trajrun_cli(tmp_path, "import", "adk", "a.evalset.json", "b.evalset.json", "-o", ".").exit_code == 0
    again = trajrun_cli(tmp_path, "import", "adk", "a.evalset.json", "-o", ".")
    assert again.exit_code == 2 and "a.suite.yaml exists; pass --force to replace it" in again.stderr
    assert trajrun_cli(tmp_path, "import", "adk", "a.evalset.json", "-o", ".", "--force").exit_code == 0


def test_source_file_pattern_names_each_case(tmp_path: Path) -> None:
    """``--source 'runs/{case}.json'`` gives each case its own file, relative to the suite's folder."""
    (tmp_path / "a.evalset.json").write_text(json.dumps(LEGACY_SET), encoding="utf-8")
    trajrun_cli(tmp_path, "import", "adk", "a.evalset.json", "--source", "runs/{case}.json", "-o", "suites")
    suite = trajrun.load_suite(tmp_path / "suites" / "a.suite.yaml")
    assert [c.source.file for c in suite.cases] == [tmp_path / "suites" / "../runs/two_turns.json",
                                                    tmp_path / "suites" / "../runs/two_turns_2.json"]


# -- LangSmith ----------------------------------------------------------------------------------------------


def _openai_reference(city: str) -> list[dict[str, Any]]:
    """An agentevals-style reference: OpenAI messages with a tool call, its result and an answer."""
    return [
        {"role": "user", "content": f"Weather in {city}?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": json.dumps({"city": city})}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        {"role": "assistant", "content": f"It is sunny in {city}."},
    ]


EXAMPLES = [
    {"id": "e1", "inputs": {"question": "Weather in Paris?"}, "outputs": {"messages": _openai_reference("Paris")},
     "metadata": {}},
    {"id": "e2", "inputs": {"question": "Weather in Tokyo?"}, "outputs": {"trajectory": _openai_reference("Tokyo")},
     "metadata": {"name": "tokyo"}},
    {"id": "e3", "inputs": {"question": "No reference"}, "outputs": {"answer": "x"}},
    [1, 2],
]


def test_langsmith_jsonl_imports_with_the_mode_given_and_runs(tmp_path: Path) -> None:
    """Reference messages become steps under ``--mode``/``--args-mode``; the suite runs against the agent function."""
    lines = "\n".join(json.dumps(e) for e in EXAMPLES) + "\n"
    (tmp_path / "dataset.jsonl").write_text(lines, encoding="utf-8")
    (tmp_path / "agent.py").write_text(
        "import json, re\n"
        f"REFS = json.loads({json.dumps(json.dumps({e['inputs']['question']: e['outputs'] for e in EXAMPLES[:2]}))})\n"
        "def run(inputs):\n"
        "    out = REFS[inputs['question']]\n"
        "    return out.get('messages') or out.get('trajectory')\n", encoding="utf-8")
    out = trajrun_cli(tmp_path, "import", "langsmith", "dataset.jsonl", "--mode", "superset", "--args-mode", "subset",
                      "--python", "agent:run", "-o", ".")
    assert out.exit_code == 0, out.stderr
    suite = trajrun.load_suite(tmp_path / "dataset.suite.yaml")
    assert [c.name for c in suite.cases] == ["Weather in Paris?", "tokyo"]
    assert {(c.expect.mode, c.expect.args_mode) for c in suite.cases} == {("superset", "subset")}
    assert steps(suite, 1) == [("get_weather", {"city": "Tokyo"})]
    assert dict(suite.cases[0].source.args) == {"inputs": {"question": "Weather in Paris?"}}
    report = out.stderr
    assert "not carried over: lines that are not example objects ({inputs, outputs}): left out (1 case: line 4)" in report
    assert ("not carried over: examples without reference messages (outputs.messages): left out; point --select at "
            "them (1 case: No reference)") in report
    assert "the reference's final answer text" in report and "the reference's tool results" in report
    result = trajrun.run_paths([tmp_path / "dataset.suite.yaml"])
    assert [c.outcome for c in result.cases] == ["passed", "passed"], [c.message for c in result.cases]


def test_langsmith_select_and_a_required_mode(tmp_path: Path) -> None:
    """``--select`` points at the reference inside each example; ``--mode`` is required."""
    example = {"inputs": {"q": "x"}, "outputs": {"reference": {"msgs": _openai_reference("Oslo")}}}
    (tmp_path / "d.jsonl").write_text(json.dumps(example) + "\n", encoding="utf-8")
    missing = trajrun_cli(tmp_path, "import", "langsmith", "d.jsonl")
    assert missing.exit_code == 2 and "Missing option '--mode'" in missing.stderr
    out = trajrun_cli(tmp_path, "import", "langsmith", "d.jsonl", "--mode", "strict", "--select", "$.outputs.reference.msgs")
    assert out.exit_code == 0, out.stderr
    (tmp_path / "d.suite.yaml").write_text(out.stdout, encoding="utf-8")
    suite = trajrun.load_suite(tmp_path / "d.suite.yaml")
    assert suite.cases[0].expect.steps == (Step("get_weather", {"city": "Oslo"}, loc=suite.cases[0].expect.steps[0].loc),)
    nothing = trajrun_cli(tmp_path, "import", "langsmith", "d.jsonl", "--mode", "strict")
    assert nothing.exit_code == 2 and "d.jsonl: no example with reference messages to import" in nothing.stderr
