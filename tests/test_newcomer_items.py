"""Newcomer stumbles of issue 28: did-you-mean by meaning for `mode` and `args_mode`, `record` keeping
error flags and parallel turns, matchers written readably, a misspelt budget key reported once."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest
from cli_helpers import invoke_in
from trajrun.errors import SuiteErrors
from trajrun.match.evaluate import evaluate
from trajrun.match.expectation import Expectation
from trajrun.match.matchers import compile_value
from trajrun.match.values import render_value
from trajrun.sources import load_trajectory
from trajrun.suites.golden import compact_steps, dump_steps, load_golden
from trajrun.suites.load import load_suite
from trajrun.trajectory import ToolCall, Trajectory

DATA = Path(__file__).parent / "data"
SPECS = Path(__file__).parent.parent / "specs"

STRICT_OR_IN_ORDER = ("did you mean 'strict' (these calls and no others, in order) or 'in_order' (these calls "
                      "in this order, others allowed)?")
UNORDERED_OR_SUPERSET = ("did you mean 'unordered' (these calls and no others, in any order) or 'superset' "
                         "(at least these calls, in any order)?")


def _load_errors(tmp_path: Path, text: str) -> list[str]:
    """The load errors of a suite file holding ``text``, each without its ``file:line:col: `` head."""
    path = tmp_path / "t.suite.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    with pytest.raises(SuiteErrors) as info:
        load_suite(path)
    return [f"{error.loc.path}: {error.message}" for error in info.value.errors]  # type: ignore[union-attr]


# -- 7. did-you-mean by meaning ------------------------------------------------------------------


@pytest.mark.parametrize(("key", "value", "message"), [
    ("mode", "ordered", f"unknown match mode 'ordered' — {STRICT_OR_IN_ORDER}"),
    ("mode", "sequence", f"unknown match mode 'sequence' — {STRICT_OR_IN_ORDER}"),
    ("mode", "any_order", f"unknown match mode 'any_order' — {UNORDERED_OR_SUPERSET}"),
    ("mode", "ANY_ORDER", f"unknown match mode 'ANY_ORDER' — {UNORDERED_OR_SUPERSET}"),
    ("mode", "any-order", f"unknown match mode 'any-order' — {UNORDERED_OR_SUPERSET}"),
    ("mode", "exact", f"unknown match mode 'exact' — 'exact' is an `args_mode` value, not a match mode: "
                      f"{STRICT_OR_IN_ORDER}"),
    ("mode", "EXACT", f"unknown match mode 'EXACT' — 'exact' is an `args_mode` value, not a match mode: "
                      f"{STRICT_OR_IN_ORDER}"),
    ("mode", "ignore", "unknown match mode 'ignore' — 'ignore' is an `args_mode` value, not a match mode "
                       "(`args_mode: ignore` does not compare arguments); the match modes are strict, in_order, "
                       "unordered, superset, subset"),
    ("mode", "IN_ORDER", "unknown match mode 'IN_ORDER' — did you mean 'in_order'?"),
    ("mode", "contains", "unknown match mode 'contains' — did you mean 'superset' (at least these calls, in any "
                         "order) or 'in_order' (these calls in this order, others allowed)?"),
    ("mode", "only", "unknown match mode 'only' — did you mean 'subset' (nothing but these calls, some may be "
                     "missing)?"),
    ("mode", "unorderd", "unknown match mode 'unorderd' — did you mean 'unordered'?"),
    ("mode", "sideways", "unknown match mode 'sideways'; expected one of strict, unordered, subset, superset, "
                         "in_order"),
    ("args_mode", "strict", "unknown argument rule 'strict' — 'strict' is a `mode` value, not an argument rule: "
                            "did you mean 'exact' (every key present and equal, no others)?"),
    ("args_mode", "unordered", "unknown argument rule 'unordered' — 'unordered' is a `mode` value, not an "
                               "argument rule; the argument rules are exact, ignore, subset, superset"),
    ("args_mode", "partial", "unknown argument rule 'partial' — did you mean 'superset' (your keys equal, the "
                             "call may have more) or 'subset' (no keys but yours, some may be absent)?"),
    ("args_mode", "any", "unknown argument rule 'any' — did you mean 'ignore' (arguments not compared)?"),
    ("args_mode", "equal", "unknown argument rule 'equal' — did you mean 'exact' (every key present and equal, "
                           "no others)?"),
    ("args_mode", "EXACT", "unknown argument rule 'EXACT' — did you mean 'exact'?"),
    ("args_mode", "ignored", "unknown argument rule 'ignored' — did you mean 'ignore'?"),
])
def test_a_mode_other_tools_name_gets_a_hint_by_meaning(tmp_path: Path, key: str, value: str, message: str) -> None:
    """The names agentevals, openevals and ADK use (and an `args_mode` value given as `mode`, or the other
    way round) get the choice they mean, with the difference in a few words; a plain slip keeps the
    nearest spelling. `ordered` no longer suggests `unordered`, nor `any_order` `in_order`."""
    errors = _load_errors(tmp_path, f"""
        cases:
          - name: c
            source: run.json
            steps: [search]
            {key}: {value}
    """)
    assert errors == [f"cases[0].{key}: {message}"]


def test_args_mode_hints_apply_at_every_level(tmp_path: Path) -> None:
    """A step's `args_mode`, a `tools` rule name and a `tools` map's `args_mode` get the same hints."""
    errors = _load_errors(tmp_path, """
        cases:
          - name: c
            source: run.json
            tools: {search: strict, book: {args_mode: loose}}
            steps: [{name: search, args_mode: any}]
    """)
    assert errors == [
        "cases[0].tools.search: unknown argument rule 'strict' — 'strict' is a `mode` value, not an argument rule: "
        "did you mean 'exact' (every key present and equal, no others)?",
        "cases[0].tools.book.args_mode: unknown argument rule 'loose' — did you mean 'superset' (your keys equal, "
        "the call may have more) or 'subset' (no keys but yours, some may be absent)?",
        "cases[0].steps[0].args_mode: unknown argument rule 'any' — did you mean 'ignore' (arguments not compared)?",
    ]


def test_validate_prints_the_hint_by_meaning(tmp_path: Path) -> None:
    """`trajrun validate` on `mode: ordered` says strict or in_order, at the value's line and column."""
    (tmp_path / "t.suite.yaml").write_text("cases:\n  - name: c\n    source: run.json\n    steps: [search]\n"
                                           "    mode: ordered\n", encoding="utf-8")
    result = invoke_in(tmp_path, "validate", "t.suite.yaml")
    assert result.exit_code == 2
    assert result.stdout.splitlines()[0] == f"t.suite.yaml:5:11: cases[0].mode: unknown match mode 'ordered' — " \
                                            f"{STRICT_OR_IN_ORDER}"


# -- 10. record keeps error flags and parallel turns ----------------------------------------------


RETRY_RUN = Trajectory(calls=(
    ToolCall("search", {"q": "TP433"}, turn=0, position=0, error=False),
    ToolCall("book", {"flight": "TP433"}, turn=1, position=1, error=True),
    ToolCall("book", {"flight": "TP433"}, turn=2, position=2, error=False),
    ToolCall("get_forecast", {"city": "Paris"}, turn=3, position=3, error=False),
    ToolCall("get_forecast", {"city": "Tokyo"}, turn=3, position=4, error=False),
), turns=4, format="anthropic")


def test_record_writes_error_flags_and_parallel_groups() -> None:
    """A failed call is written `error: true`, a success of a tool that failed elsewhere `error: false`
    (other calls stay short), and the calls of one turn are a `parallel:` group."""
    assert dump_steps(RETRY_RUN) == textwrap.dedent("""\
        - search:
            q: TP433
        - name: book
          args:
            flight: TP433
          error: true
        - name: book
          args:
            flight: TP433
          error: false
        - parallel:
          - get_forecast:
              city: Paris
          - get_forecast:
              city: Tokyo
    """)
    assert compact_steps(RETRY_RUN) == textwrap.dedent("""\
        - search: {"q": "TP433"}
        - {name: book, args: {"flight": "TP433"}, error: true}
        - {name: book, args: {"flight": "TP433"}, error: false}
        - parallel: [{get_forecast: {"city": "Paris"}}, {get_forecast: {"city": "Tokyo"}}]
    """)


def test_the_recorded_steps_pin_the_retry_and_the_turn(tmp_path: Path) -> None:
    """The golden file fails a run whose retry failed too, and a run that made the parallel calls in two
    turns: what a file recorded without flags and groups let pass."""
    path = tmp_path / "g.yaml"
    path.write_text(dump_steps(RETRY_RUN), encoding="utf-8")
    steps = load_golden(path)
    assert evaluate(Expectation(steps=steps), RETRY_RUN).passed
    calls = list(RETRY_RUN.calls)
    retry_failed = Trajectory(tuple([*calls[:2], calls[2]._replace(error=True), *calls[3:]]), 4, format="anthropic")
    failed = evaluate(Expectation(steps=steps), retry_failed)
    assert re.fullmatch(r"1 check failed: steps \(1 errors? differs?\)", failed.message())  # plural: issue 28's item 12
    apart = Trajectory(tuple([*calls[:4], calls[4]._replace(turn=4)]), 5, format="anthropic")
    assert evaluate(Expectation(steps=steps), apart).message() == "1 check failed: steps (1 in another turn)"


SAMPLES = [  # (file under tests/data, select): real histories with an error result, a parallel turn or both
    ("sources/anthropic_server_tools.json", None),  # Anthropic: a server tool's *_error result, two calls in a turn
    ("samples/anthropic/sdk_message_model_dump.json", "$.typical_saved_history"),  # four parallel tool_use blocks
    ("samples/bedrock_converse/pydantic_ai_cassette_tooluse_error_result.json",
     "$.interactions[1].request_body"),  # Bedrock toolResult status: error
    ("samples/langchain/messages_to_dict.json", None),  # ToolMessage status: error, three calls in one turn
    ("samples/langgraph/get_state_messages_to_dict.json", None),
    ("sources/openai_argument_encodings.json", None),  # OpenAI parallel tool_calls
    ("samples/openai_chat/pydantic_ai_cassette_tool_retry.json", "$.interactions[2].request_body"),  # no flag
]


@pytest.mark.parametrize(("file", "select"), SAMPLES)
def test_record_round_trips_on_real_histories(tmp_path: Path, file: str, select: str | None) -> None:
    """`trajrun record`'s output, used as a suite's golden file and as its steps, passes against the same
    run under strict and in_order: error flags and groups read back as what happened."""
    source = DATA / file
    spec = {"file": str(source), **({"select": select} if select else {})}
    recorded = invoke_in(tmp_path, "record", str(source), *(["--select", select] if select else []))
    assert recorded.exit_code == 0, recorded.output
    (tmp_path / "golden.yaml").write_text(recorded.stdout, encoding="utf-8")
    steps = textwrap.indent(recorded.stdout, " " * 6)
    cases = [f"  - {{name: golden {mode}, source: {json.dumps(spec)}, golden: golden.yaml, mode: {mode}}}\n"
             f"  - name: steps {mode}\n    source: {json.dumps(spec)}\n    mode: {mode}\n    steps:\n{steps}"
             for mode in ("strict", "in_order")]
    (tmp_path / "r.suite.yaml").write_text("cases:\n" + "".join(cases), encoding="utf-8")
    result = invoke_in(tmp_path, "run", "r.suite.yaml")
    assert result.exit_code == 0, result.stdout
    assert "4 passed in " in result.stdout.splitlines()[-1]


def test_samples_hold_what_the_round_trip_is_about() -> None:
    """The samples above do record an error flag and a parallel turn, so the round trip covers both."""
    runs = [load_trajectory(DATA / file, select=select) for file, select in SAMPLES]
    assert any(call.error for run in runs for call in run.calls)
    assert any(a.turn == b.turn for run in runs for a, b in zip(run.calls, run.calls[1:]))
    text = dump_steps(runs[2])
    assert text == "- name: get_capital\n  args:\n    country: France\n  error: true\n"


def test_update_golden_writes_groups_only_under_a_mode_that_reads_them(tmp_path: Path) -> None:
    """`--update-golden` on an unordered case writes the parallel calls as plain steps (a group there is an
    error); on a strict case, as a group."""
    (tmp_path / "run.json").write_text(json.dumps({"tool_calls": [
        {"name": "a", "args": {}, "turn": 0}, {"name": "b", "args": {}, "turn": 0}]}), encoding="utf-8")
    (tmp_path / "u.suite.yaml").write_text(
        "cases:\n  - {name: u, source: run.json, golden: u.yaml, mode: unordered}\n"
        "  - {name: s, source: run.json, golden: s.yaml, mode: strict}\n", encoding="utf-8")
    result = invoke_in(tmp_path, "run", "u.suite.yaml", "--update-golden")
    assert result.exit_code == 0, result.stdout
    assert (tmp_path / "u.yaml").read_text(encoding="utf-8") == "- a: {}\n- b: {}\n"
    assert (tmp_path / "s.yaml").read_text(encoding="utf-8") == "- parallel:\n  - a: {}\n  - b: {}\n"


# -- 12. nits: matchers written readably, a misspelt budget key once ------------------------------


@pytest.mark.parametrize(("spec", "text"), [
    ({"$lt": 100}, "<less than 100>"),
    ({"$lte": 100}, "<at most 100>"),
    ({"$gt": 0}, "<greater than 0>"),
    ({"$gte": 1.5}, "<at least 1.5>"),
    ({"$gte": 1, "$lte": 5}, "<at least 1 and at most 5>"),
])
def test_comparison_matchers_read_as_words(spec: dict[str, float], text: str) -> None:
    """`$lt: 100` was rendered `<< 100>`; now in words, inside the brackets that mark a matcher."""
    assert render_value({"n": compile_value(spec)}) == f'{{"n":{text}}}'


def test_a_comparison_in_a_failure_reads_well(tmp_path: Path) -> None:
    """The steps table and the diff line of a failed `$lt`."""
    (tmp_path / "run.json").write_text(json.dumps({"tool_calls": [{"name": "search", "args": {"n": 120}}]}))
    (tmp_path / "t.suite.yaml").write_text(
        "cases:\n  - {name: lt, source: run.json, steps: [{search: {n: {$lt: 100}}}]}\n", encoding="utf-8")
    out = invoke_in(tmp_path, "run", "t.suite.yaml").stdout
    assert '0  search {"n":<less than 100>}  [0] search {"n":120}  args differ' in out.splitlines()
    assert "  $.n: expected less than 100, got 120" in out.splitlines()


def test_a_misspelt_budget_key_is_reported_once(tmp_path: Path) -> None:
    """`budget: {call: 5}` is one error, the unknown key with its fix; an empty budget still says what it needs."""
    errors = _load_errors(tmp_path, """
        cases:
          - {name: a, source: run.json, budget: {call: 5}}
          - {name: b, source: run.json, budget: {}}
    """)
    assert errors == [
        "cases[0].budget.call: unknown key 'call' in budget — did you mean 'calls'?",
        "cases[1].budget: budget needs at least one of calls, turns, tokens",
    ]
