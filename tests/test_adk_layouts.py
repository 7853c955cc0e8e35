"""Every eval-set layout ADK loads, and its ``test_config.json``: ``trajrun import adk`` and ``trajrun show`` on each.

The fixtures in tests/data/adk/ follow adk-samples' eval data (see the README there): an ``EvalSet`` whose eval ids
are absolute paths, the older ``*.test.json`` list of queries, and the oldest list of ``{name, data}`` cases, each
beside a ``test_config.json`` of another form.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import trajrun
from cli_helpers import invoke_in
from trajrun.errors import SourceError
from trajrun.sources import read_trajectory

DATA = Path(__file__).parent / "data" / "adk"
TRAVEL = DATA / "travel" / "inspire.test.json"
SIMPLE = DATA / "customer_service" / "simple.test.json"
OLDEST = DATA / "brand_search" / "eval_data1.evalset.json"

SOURCE_NOTE = """\
# Source: `my_agent.evals:run` is called with the user's messages as `queries` (and the session
# state as `state`); it runs the agent and returns the session's events. Replace it with your
# function, or with `source: <file>` for a saved run.
"""
FINAL = ("not carried over: the expected final responses (ADK scores them with response_match_score, a ROUGE-1 text "
         "overlap; check the answer with `answer:` or a `judge:` rubric)")
PLACEHOLDER = ("trajrun: note: fill in the source: each case calls the placeholder `my_agent.evals:run`; pass --python "
               "MODULE:FUNC or --source PATH, or edit the suite")


def imported(folder: Path, *args: str) -> tuple[str, list[str]]:
    """``trajrun import adk ARGS`` from ``folder``: the suite printed, and the report lines."""
    out = invoke_in(folder, "import", "adk", *args)
    assert out.exit_code == 0, out.stderr
    return out.stdout, out.stderr.splitlines()


def refused(folder: Path, *args: str) -> str:
    """``trajrun import adk ARGS`` that exits 2: its one error line."""
    out = invoke_in(folder, "import", "adk", *args)
    assert (out.exit_code, out.stdout) == (2, ""), out.output
    return out.stderr


# -- the three layouts, each with its config -----------------------------------------------------------------


def test_eval_set_with_path_ids_and_a_bare_threshold(tmp_path: Path) -> None:
    """An ``EvalSet`` (adk-samples' travel-concierge): path ids become their last part, made unique; a bare
    ``tool_trajectory_avg_score: 0.1`` is EXACT at 0.1, so strict with ``threshold: 0.1``, and the header says so."""
    suite, report = imported(tmp_path, str(TRAVEL))
    assert suite == """\
# Imported by `trajrun import adk` from inspire.test.json (eval set 458648cd-dbfb-4dfd-a077-6997d73b0583).
# Steps: each eval case's expected tool calls, strict with exact arguments, as ADK's
# tool_trajectory_avg_score compares them (ADK scores each invocation apart).
# From test_config.json: tool_trajectory_avg_score 0.1, match type EXACT;
# so here mode: strict, threshold: 0.1.
# trajrun's threshold is the F1 score of steps against calls, order not checked; ADK's is the
# share of invocations whose calls match.
""" + SOURCE_NOTE + """\
suite: 458648cd-dbfb-4dfd-a077-6997d73b0583
defaults:
  mode: strict
  threshold: 0.1
cases:
- name: inspire.test.json
  source:
    python: my_agent.evals:run
    args:
      queries:
      - Inspire me about the Americas
      - Tell me more about Machu Picchu
      state:
        user_profile:
          home: San Diego
        itinerary: {}
  steps:
  - transfer_to_agent:
      agent_name: inspiration_agent
  - place_agent:
      request: Americas
  - poi_agent:
      request: Machu Picchu
  - map_tool:
      key: poi
- name: inspire.test.json (2)
  source:
    python: my_agent.evals:run
    args:
      queries:
      - Inspire me about Asia
  steps:
  - transfer_to_agent:
      agent_name: inspiration_agent
  - place_agent:
      request: Asia
"""
    assert report == [
        (f"trajrun: {TRAVEL}: not carried over: the folders of eval ids that are absolute file paths (each case is "
         "named by the path's last part) (2 cases: inspire.test.json, inspire.test.json (2))"),
        f"trajrun: {TRAVEL}: {FINAL} (2 cases: inspire.test.json, inspire.test.json (2))",
        PLACEHOLDER,
    ]


def test_older_list_of_queries_with_an_in_order_criterion(tmp_path: Path) -> None:
    """The ``*.test.json`` list of ``{query, expected_tool_use, reference}`` is one case named after the file; the
    criterion map ``{threshold: 1.0, match_type: IN_ORDER}`` is ``mode: in_order`` with no threshold."""
    suite, report = imported(tmp_path, str(SIMPLE))
    assert suite == """\
# Imported by `trajrun import adk` from simple.test.json.
# Steps: each eval case's expected tool calls, in_order with exact arguments, as ADK's
# tool_trajectory_avg_score compares them (ADK scores each invocation apart).
# From test_config.json: tool_trajectory_avg_score 1.0, match type IN_ORDER;
# so here mode: in_order.
""" + SOURCE_NOTE + """\
suite: simple
defaults:
  mode: in_order
cases:
- name: simple
  source:
    python: my_agent.evals:run
    args:
      queries:
      - hi,
      - I need help with planting some petunias in Las Vegas.
  steps:
  - get_product_recommendations:
      plant_type: Petunias
      customer_id: '123'
  - check_product_availability:
      product_id: soil-456
      store_id: pickup
"""
    assert report == [f"trajrun: {SIMPLE}: {FINAL} (1 case: simple)", PLACEHOLDER]


def test_oldest_list_of_named_cases_with_an_any_order_criterion(tmp_path: Path) -> None:
    """The oldest layout, ``[{name, data: [...], initial_session}]`` (brand-search-optimization's): one case per
    item, ``initial_session.state`` as ``state`` (``initial_state`` is not read, as ADK does not); ANY_ORDER at 0.2
    is ``superset`` with ``threshold: 0.2``."""
    suite, report = imported(tmp_path, str(OLDEST))
    assert suite == """\
# Imported by `trajrun import adk` from eval_data1.evalset.json.
# Steps: each eval case's expected tool calls, superset with exact arguments, as ADK's
# tool_trajectory_avg_score compares them (ADK scores each invocation apart).
# From test_config.json: tool_trajectory_avg_score 0.2, match type ANY_ORDER;
# so here mode: superset, threshold: 0.2.
# trajrun's threshold is the F1 score of steps against calls, order not checked; ADK's is the
# share of invocations whose calls match.
""" + SOURCE_NOTE + """\
suite: eval_data1
defaults:
  mode: superset
  threshold: 0.2
cases:
- name: eval_data_set_google_shopping
  source:
    python: my_agent.evals:run
    args:
      queries:
      - hello
      - BSOAgentTestBrand
      - can you search websites
  steps:
  - transfer_to_agent:
      agent_name: keyword_finding_agent
  - get_product_details_for_brand: {}
  - go_to_url:
      url: https://www.google.com/search?q=kids shoes
  - click_element_with_text:
      text: Shopping
  - get_page_source: {}
- name: returning_shopper
  source:
    python: my_agent.evals:run
    args:
      queries:
      - compare my brand again
      state:
        brand: BSOAgentTestBrand
  steps:
  - transfer_to_agent:
      agent_name: comparison_root_agent
"""
    assert report == [
        f"trajrun: {OLDEST}: {FINAL} (1 case: eval_data_set_google_shopping)",
        (f"trajrun: {OLDEST}: not carried over: the expected intermediate agent responses (sub-agents' text; "
         "trajrun checks tool calls) (1 case: eval_data_set_google_shopping)"),
        PLACEHOLDER,
    ]


def test_without_a_config_adks_defaults_apply(tmp_path: Path) -> None:
    """No ``test_config.json`` beside the file: ADK's defaults (EXACT at 1.0), so strict and no threshold."""
    shutil.copy(OLDEST, tmp_path / "eval_data1.evalset.json")
    suite, _ = imported(tmp_path, "eval_data1.evalset.json")
    assert suite.startswith("""\
# Imported by `trajrun import adk` from eval_data1.evalset.json.
# Steps: each eval case's expected tool calls, strict with exact arguments, as ADK's
# tool_trajectory_avg_score compares them (at threshold 1.0; ADK scores each invocation apart).
""" + SOURCE_NOTE + """\
suite: eval_data1
defaults:
  mode: strict
cases:
""")


# -- test_config.json forms ----------------------------------------------------------------------------------

THRESHOLD_NOTE = ["# trajrun's threshold is the F1 score of steps against calls, order not checked; ADK's is the",
                  "# share of invocations whose calls match."]


def with_config(folder: Path, config: object) -> None:
    """The list-of-queries fixture in ``folder``, with ``config`` as its ``test_config.json``."""
    shutil.copy(SIMPLE, folder / "simple.test.json")
    (folder / "test_config.json").write_text(json.dumps(config), encoding="utf-8")


@pytest.mark.parametrize(("criterion", "said", "defaults"), [
    (1, ["# From test_config.json: tool_trajectory_avg_score 1.0, match type EXACT;", "# so here mode: strict."],
     {"mode": "strict"}),
    ({"threshold": 1.0, "matchType": "in-order"},
     ["# From test_config.json: tool_trajectory_avg_score 1.0, match type IN_ORDER;", "# so here mode: in_order."],
     {"mode": "in_order"}),
    ({"threshold": 0.75, "match_type": 2, "ignoreArgs": True},
     ["# From test_config.json: tool_trajectory_avg_score 0.75, match type ANY_ORDER, ignore_args;",
      "# so here mode: superset, args_mode: ignore, threshold: 0.75.", *THRESHOLD_NOTE],
     {"mode": "superset", "args_mode": "ignore", "threshold": 0.75}),
    ({"threshold": 0, "match_type": " exact ", "ignore_args": False},
     ["# From test_config.json: tool_trajectory_avg_score 0.0, match type EXACT;",
      "# so here mode: strict, threshold: 0.0.", *THRESHOLD_NOTE],
     {"mode": "strict", "threshold": 0.0}),
])
def test_each_form_of_the_trajectory_criterion(tmp_path: Path, criterion: object, said: list[str],
                                               defaults: dict[str, object]) -> None:
    """A bare threshold or a criterion map, in either key spelling, match types by name (any case, ``-`` for
    ``_``) or by ADK's enum number; ``ignore_args`` is ``args_mode: ignore``. The header names what was taken."""
    with_config(tmp_path, {"criteria": {"response_match_score": 0.8, "tool_trajectory_avg_score": criterion}})
    imported(tmp_path, "simple.test.json", "-o", ".")
    text = (tmp_path / "simple.suite.yaml").read_text(encoding="utf-8").splitlines()
    assert text[3 : 3 + len(said)] == said
    assert text[3 + len(said)].startswith("# Source: ")
    loaded = trajrun.load_suite(tmp_path / "simple.suite.yaml").cases[0]
    assert loaded.expect.mode == defaults["mode"]
    assert loaded.expect.args_mode == defaults.get("args_mode", "exact")
    assert loaded.expect.threshold == defaults.get("threshold")


def test_a_config_that_leaves_the_trajectory_out(tmp_path: Path) -> None:
    """Criteria without ``tool_trajectory_avg_score``: ADK scores no tool call; the header says the steps are
    strict all the same."""
    with_config(tmp_path, {"criteria": {"response_match_score": 0.8}})
    suite, _ = imported(tmp_path, "simple.test.json")
    assert suite.splitlines()[1:5] == [
        "# Steps: each eval case's expected tool calls, strict with exact arguments, as ADK's",
        "# tool_trajectory_avg_score compares them (ADK scores each invocation apart).",
        "# From test_config.json: its criteria leave out tool_trajectory_avg_score, so ADK scores no tool call;",
        "# the steps are checked strict all the same.",
    ]


TRAJECTORY = "test_config.json: criteria.tool_trajectory_avg_score"
ADK_TOO = "fix it, as ADK refuses it too"


@pytest.mark.parametrize(("config", "wanted"), [
    ([1], f"test_config.json: expected a map with `criteria` (ADK's eval config), found a list; {ADK_TOO}"),
    ({"criteria": 1.0},
     f"test_config.json: criteria: expected a map of metric names to thresholds, found 1.0; {ADK_TOO}"),
    ({"criteria": {"tool_trajectory_avg_score": 1.5}},
     f"{TRAJECTORY}: expected a threshold from 0 to 1, found 1.5; fix it in test_config.json"),
    ({"criteria": {"tool_trajectory_avg_score": "1"}},
     f'{TRAJECTORY}: expected a threshold from 0 to 1, found "1"; fix it in test_config.json'),
    ({"criteria": {"tool_trajectory_avg_score": {"match_type": "IN_ORDER"}}},
     f"{TRAJECTORY}.threshold: expected a threshold from 0 to 1, found none; fix it in test_config.json"),
    ({"criteria": {"tool_trajectory_avg_score": {"threshold": 1, "match_type": "ORDERED"}}},
     f'{TRAJECTORY}.match_type: expected EXACT, IN_ORDER or ANY_ORDER, found "ORDERED"; {ADK_TOO}'),
    ({"criteria": {"tool_trajectory_avg_score": {"threshold": 1, "match_type": 3}}},
     f"{TRAJECTORY}.match_type: expected EXACT, IN_ORDER or ANY_ORDER, found 3; {ADK_TOO}"),
    ({"criteria": {"tool_trajectory_avg_score": {"threshold": 1, "ignore_args": "yes"}}},
     f'{TRAJECTORY}.ignore_args: expected true or false, found "yes"; {ADK_TOO}'),
])
def test_a_config_adk_would_refuse_is_refused(tmp_path: Path, config: object, wanted: str) -> None:
    """A config ADK would refuse stops the import with the key path, what was found and the fix."""
    with_config(tmp_path, config)
    assert refused(tmp_path, "simple.test.json") == f"trajrun: error: {wanted}\n"


def test_a_config_that_is_not_json_is_refused_with_its_line(tmp_path: Path) -> None:
    """A ``test_config.json`` that does not parse is named with the line and column."""
    shutil.copy(SIMPLE, tmp_path / "simple.test.json")
    (tmp_path / "test_config.json").write_text('{"criteria": {\n  "tool_trajectory_avg_score": 1,\n}', encoding="utf-8")
    assert refused(tmp_path, "simple.test.json") == (
        "trajrun: error: test_config.json: invalid JSON at line 3, column 1: Expecting property name enclosed in double "
        "quotes, found '}'; check the file is valid JSON (a trailing comma or a missing quote is the usual cause)\n")


# -- case names ------------------------------------------------------------------------------------------------


def test_case_names_that_are_paths(tmp_path: Path) -> None:
    """Absolute POSIX and Windows paths become their last part, unique; a relative id is a name, kept whole."""
    ids = ["C:\\Users\\dev\\evals\\home.test.json", "/srv/evals/home.test.json/", "evals/home.test.json", "/"]
    cases = [{"eval_id": i, "conversation": [{"user_content": {"parts": [{"text": "hi"}]}}]} for i in ids]
    (tmp_path / "home.evalset.json").write_text(json.dumps({"eval_cases": cases}), encoding="utf-8")
    _, report = imported(tmp_path, "home.evalset.json", "-o", ".")
    loaded = trajrun.load_suite(tmp_path / "home.suite.yaml")
    assert [c.name for c in loaded.cases] == ["home.test.json", "home.test.json (2)", "evals/home.test.json",
                                              "case 4"]
    assert report[1] == ("trajrun: home.evalset.json: not carried over: the folders of eval ids that are absolute "
                         "file paths (each case is named by the path's last part) (3 cases: home.test.json, "
                         "home.test.json (2), case 4)")


# -- trajrun show ----------------------------------------------------------------------------------------------


def shown(*args: str) -> str:
    """``trajrun show ARGS`` from the repository root: its table."""
    out = invoke_in(Path(__file__).parent.parent, "show", *args)
    assert out.exit_code == 0, out.stderr
    return out.stdout


def test_show_reads_an_eval_set_case_one_call_a_turn() -> None:
    """One case of an ``EvalSet``: its ``tool_uses`` one turn each, as ADK's EXACT compares their order."""
    assert shown(str(TRAVEL), "--select", "$.eval_cases[0]") == """\
#  turn  tool               args                                result
0  0     transfer_to_agent  {"agent_name":"inspiration_agent"}  -
1  1     place_agent        {"request":"Americas"}              -
2  3     poi_agent          {"request":"Machu Picchu"}          -
3  4     map_tool           {"key":"poi"}                       -

format: gemini   calls: 4   turns: 6
usage: not recorded
answer: Machu Picchu is an Inca citadel high in the Andes.
"""


def test_show_reads_the_older_list_of_queries() -> None:
    """The whole ``*.test.json`` list is one run: each query, its expected calls a turn each, then the reference."""
    assert shown(str(SIMPLE)) == """\
#  turn  tool                         args                                           result
0  1     get_product_recommendations  {"plant_type":"Petunias","customer_id":"123"}  -
1  2     check_product_availability   {"product_id":"soil-456","store_id":"pickup"}  -

format: gemini   calls: 2   turns: 4
usage: not recorded
answer: Petunias need well-draining soil; our Bloom Booster Potting…
"""


def test_show_reads_one_case_of_the_oldest_layout() -> None:
    """A ``{name, data}`` case picked with ``--select '$[1]'`` (no reference: no answer)."""
    assert shown(str(OLDEST), "--select", "$[1]") == """\
#  turn  tool               args                                    result
0  0     transfer_to_agent  {"agent_name":"comparison_root_agent"}  -

format: gemini   calls: 1   turns: 1
usage: not recorded
answer: -
"""


def test_an_oldest_layout_list_of_several_cases_asks_for_one() -> None:
    """Two ``{name, data}`` cases are not one run: the gemini reader says where the first case is."""
    doc = json.loads(OLDEST.read_text(encoding="utf-8"))
    with pytest.raises(SourceError) as info:
        read_trajectory(doc, "gemini", origin="eval_data1.evalset.json")
    assert str(info.value) == ("eval_data1.evalset.json: expected a gemini document, found a list of 2 items: an eval "
                               "set with 2 cases; select one case (the first is at [0]); check the format, or use "
                               "format: auto")


def test_tool_uses_order_is_checked_by_strict() -> None:
    """Read as a run, one invocation's ``tool_uses`` are in separate turns, so ``strict`` refuses them swapped (they
    used to be one turn, whose calls may come in any order)."""
    run = read_trajectory(json.loads(TRAVEL.read_text(encoding="utf-8"))["eval_cases"][1])
    assert [(c.name, c.turn) for c in run.calls] == [("transfer_to_agent", 0), ("place_agent", 1)]
    in_order = (trajrun.Step("transfer_to_agent"), trajrun.Step("place_agent"))
    assert trajrun.evaluate(trajrun.Expectation(steps=in_order, mode="strict"), run).passed
    swapped = trajrun.Expectation(steps=in_order[::-1], mode="strict")
    assert not trajrun.evaluate(swapped, run).passed


def test_an_imported_suite_judges_a_run_as_adks_match_type_does(tmp_path: Path) -> None:
    """Imported with its IN_ORDER config, the suite passes a run with another call between the expected ones (ADK's
    IN_ORDER scores it 1.0) and fails the same calls swapped."""
    shutil.copy(SIMPLE, tmp_path / "simple.test.json")
    shutil.copy(SIMPLE.parent / "test_config.json", tmp_path / "test_config.json")
    imported(tmp_path, "simple.test.json", "--source", "run.json", "-o", "suites")
    recommend = {"name": "get_product_recommendations", "args": {"plant_type": "Petunias", "customer_id": "123"}}
    lookup = {"name": "lookup_store", "args": {"city": "Las Vegas"}}
    available = {"name": "check_product_availability", "args": {"product_id": "soil-456", "store_id": "pickup"}}
    outcomes = []
    for calls in ([recommend, lookup, available], [available, lookup, recommend]):
        run = {"tool_calls": [dict(call, turn=turn) for turn, call in enumerate(calls)]}
        (tmp_path / "run.json").write_text(json.dumps(run), encoding="utf-8")
        outcomes += [c.outcome for c in trajrun.run_paths([tmp_path / "suites"]).cases]
    assert outcomes == ["passed", "failed"]
