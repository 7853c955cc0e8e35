"""The steps check: match modes, turns, argument rules, result/error, score and the diff."""

from __future__ import annotations

from typing import Any

import pytest
from trajrun.match.evaluate import evaluate, f1
from trajrun.match.expectation import ANY_ARGS, Expectation, FieldRule, Step, ToolRule
from trajrun.match.matchers import compile_value
from trajrun.sources import read_trajectory
from trajrun.trajectory import ToolCall, Trajectory


def run(*calls: Any, parallel: bool = False) -> Trajectory:
    """A run from (name, args[, turn]) tuples; without turns each call is its own turn."""
    out = []
    for i, call in enumerate(calls):
        name, args = call[0], call[1]
        turn = call[2] if len(call) > 2 else (0 if parallel else i)
        out.append(ToolCall(name, args, id=f"call_{i}", turn=turn, position=i))
    return Trajectory(tuple(out), turns=len({c.turn for c in out}))


def step(name: str, args: Any = ANY_ARGS, **kw: Any) -> Step:
    """A step with compiled arguments."""
    return Step(name, compile_value(args) if args is not ANY_ARGS and not isinstance(args, str) else args, **kw)


def check(steps: list[Step], traj: Trajectory, **kw: Any) -> Any:
    """Evaluate only the steps check."""
    return evaluate(Expectation(steps=tuple(steps), **kw), traj)


PARIS = ("search", {"query": "weather in Paris"})
LYON = ("search", {"query": "weather in Lyon"})
BOOK = ("book", {"city": "Paris"})


def test_strict_passes_same_calls_same_order() -> None:
    """strict: the same calls in the same order pass."""
    assert check([step(*PARIS), step(*BOOK)], run(PARIS, BOOK)).passed


def test_strict_fails_on_order_and_says_so() -> None:
    """strict: swapped calls fail with 'order differs'."""
    ev = check([step(*BOOK), step(*PARIS)], run(PARIS, BOOK))
    assert not ev.passed and ev.failures[0].summary == "order differs"


def test_strict_fails_on_extra_call() -> None:
    """strict: an extra call is unexpected."""
    ev = check([step(*PARIS)], run(PARIS, BOOK))
    assert ev.failures[0].summary == "1 unexpected"
    assert ev.steps.unexpected == (1,)


def test_strict_parallel_calls_any_order_within_turn() -> None:
    """strict: calls of one turn are parallel, so their order does not matter."""
    traj = run(("a", {}, 0), ("b", {}, 0), ("c", {}, 1))
    assert check([step("b"), step("a"), step("c")], traj).passed
    assert not check([step("c"), step("a"), step("b")], traj).passed


def test_strict_parallel_needs_matching_within_turn() -> None:
    """strict: pairing inside a turn is a matching, not first-fit."""
    traj = run(("s", {"q": "a"}, 0), ("s", {"q": "b"}, 0))
    assert check([step("s"), step("s", {"q": "a"})], traj).passed


def test_unordered_same_calls_any_order() -> None:
    """unordered: same calls in any order, same counts."""
    assert check([step(*BOOK), step(*PARIS)], run(PARIS, BOOK), mode="unordered").passed
    assert not check([step(*PARIS)], run(PARIS, PARIS), mode="unordered").passed


def test_superset_allows_extras() -> None:
    """superset: extra calls are listed as unexpected but do not fail."""
    ev = check([step(*BOOK)], run(PARIS, BOOK, LYON), mode="superset")
    assert ev.passed and ev.steps.unexpected == (0, 2)


def test_superset_greedy_trap() -> None:
    """superset finds the maximum matching: [search, search{q: a}] vs [search{q: a}, search{q: b}]."""
    traj = run(("search", {"q": "a"}), ("search", {"q": "b"}))
    assert check([step("search"), step("search", {"q": "a"})], traj, mode="superset").passed


def test_subset_allows_missing_not_unknown_tools() -> None:
    """subset: missing steps pass, a call beyond the expected set fails."""
    assert check([step(*PARIS), step(*BOOK)], run(BOOK), mode="subset").passed
    assert not check([step(*PARIS)], run(PARIS, BOOK), mode="subset").passed


def test_in_order_subsequence_with_extras() -> None:
    """in_order: steps occur as a subsequence; extras between are fine; order matters."""
    traj = run(PARIS, LYON, BOOK)
    assert check([step(*PARIS), step(*BOOK)], traj, mode="in_order").passed
    ev = check([step(*BOOK), step(*PARIS)], traj, mode="in_order")
    assert not ev.passed and ev.failures[0].summary == "order differs"


def test_in_order_parallel_calls() -> None:
    """in_order: steps may pair with parallel calls of one turn in any order."""
    traj = run(("x", {}, 0), ("b", {}, 1), ("a", {}, 1), ("c", {}, 2))
    assert check([step("a"), step("b"), step("c")], traj, mode="in_order").passed
    assert not check([step("c"), step("a")], traj, mode="in_order").passed


def test_step_written_twice_needs_two_calls() -> None:
    """Each step consumes a distinct call."""
    ev = check([step("search"), step("search")], run(PARIS), mode="superset")
    assert not ev.passed and ev.steps.missing == (1,)


def test_exact_rule_rejects_extra_key() -> None:
    """exact: an extra actual key fails."""
    assert not check([step("s", {"q": 1})], run(("s", {"q": 1, "p": 2}))).passed


def test_superset_rule_allows_extra_key() -> None:
    """superset args: extra actual keys are allowed, nested too."""
    traj = run(("s", {"q": {"a": 1, "b": 2}, "p": 2}))
    assert check([step("s", {"q": {"a": 1}})], traj, args_mode="superset").passed


def test_subset_rule_allows_missing_key() -> None:
    """subset args: a missing expected key is fine; an unknown actual key is not."""
    assert check([step("s", {"q": 1, "p": 2})], run(("s", {"q": 1})), args_mode="subset").passed
    assert not check([step("s", {"q": 1})], run(("s", {"q": 1, "z": 0})), args_mode="subset").passed


def test_ignore_rule_skips_matchers_too() -> None:
    """ignore: nothing is compared, matchers included."""
    assert check([step("s", {"q": {"$regex": "^zzz"}})], run(("s", {"q": "a"})), args_mode="ignore").passed


def test_rule_precedence_step_over_tool_over_case() -> None:
    """The step's args_mode beats the tool's, which beats the case's."""
    traj = run(("s", {"q": 1, "extra": 2}))
    tools = {"s": ToolRule(args_mode="exact")}
    assert not check([step("s", {"q": 1})], traj, args_mode="superset", tools=tools).passed
    assert check([step("s", {"q": 1}, args_mode="superset")], traj, tools=tools).passed


def test_numbers_by_value_in_matching() -> None:
    """1 matches 1.0 but not true, through the hashed exact path."""
    assert check([step("s", {"n": 1})], run(("s", {"n": 1.0}))).passed
    assert not check([step("s", {"n": 1})], run(("s", {"n": True}))).passed


def test_raw_string_args_compare_as_strings() -> None:
    """Undecodable arguments compare as the raw string."""
    assert check([step("s", '{"q": ')], run(("s", '{"q": '))).passed
    assert not check([step("s", {"q": 1})], run(("s", '{"q": '))).passed


def test_field_comparators() -> None:
    """fields: icase, approx and ignore apply to the keys they name; the rule decides the rest."""
    fields = {"title": FieldRule("icase"), "amount": FieldRule("approx", 0.01), "created_at": FieldRule("ignore")}
    tools = {"ev": ToolRule(fields=fields)}
    exp = step("ev", {"title": "Team Sync", "amount": 10.0})
    good = run(("ev", {"title": "team sync", "amount": 10.005, "created_at": "2024-05-01"}))
    bad = run(("ev", {"title": "team sync", "amount": 10.5, "created_at": "x"}))
    assert check([exp], good, tools=tools).passed
    assert not check([exp], bad, tools=tools).passed


def test_approx_field_diff_shows_the_tolerance() -> None:
    """A field compared with ``{approx: tol}`` that differs shows the tolerance it was allowed, plain or as a JSONPath."""
    tools = {"pay": ToolRule(fields={"amount": FieldRule("approx", 0.01), "$.lines[*].price": FieldRule("approx", 0.5)})}
    exp = step("pay", {"amount": 3.14, "lines": [{"price": 10}]})
    detail = check([exp], run(("pay", {"amount": 3.2, "lines": [{"price": 11}]})), tools=tools).failures[0].detail
    assert "  $.amount: expected 3.14 ± 0.01, got 3.2" in detail.splitlines()
    assert "  $.lines[0].price: expected 10 ± 0.5, got 11" in detail.splitlines()


def test_field_jsonpath_nested() -> None:
    """A JSONPath field key names a nested field; filters work."""
    tools = {"ev": ToolRule(args_mode="superset", fields={"$.location.city": FieldRule("icase")})}
    assert check([step("ev", {"location": {"city": "PARIS"}})], run(("ev", {"location": {"city": "paris"}})), tools=tools).passed
    tools = {"ev": ToolRule(fields={"$.items[?(@.id == 2)].n": FieldRule("ignore")})}
    exp = step("ev", {"items": [{"id": 1, "n": 1}, {"id": 2, "n": 0}]})
    assert check([exp], run(("ev", {"items": [{"id": 1, "n": 1}, {"id": 2, "n": 9}]})), tools=tools).passed


def test_field_list_compares_only_named_fields() -> None:
    """A field list compares only its fields; absent on both sides is equal, on one side not."""
    tools = {"fly": ToolRule(fields={"origin": FieldRule(), "dest": FieldRule()}, only_fields=True)}
    exp = step("fly", {"origin": "CDG", "when": "today"})
    assert check([exp], run(("fly", {"origin": "CDG", "when": "later"})), tools=tools).passed
    assert not check([exp], run(("fly", {"origin": "CDG", "dest": "JFK"})), tools=tools).passed


def test_compare_callable_replaces_rule(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """compare: module:function decides alone; a raising callable is a case error with its last line."""
    (tmp_path / "evals_cmp.py").write_text(
        "def same(e, a):\n    return e['q'].lower() == a['q'].lower()\n\ndef boom(e, a):\n    raise ValueError('bad args')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    traj = run(("s", {"q": "PARIS", "x": 1}))
    assert check([step("s", {"q": "paris"})], traj, tools={"s": ToolRule(compare="evals_cmp:same")}).passed
    ev = check([step("s", {"q": "paris"})], traj, tools={"s": ToolRule(compare="evals_cmp:boom")})
    assert ev.errors and "ValueError: bad args" in ev.errors[0]


def test_result_and_error_take_part_in_pairing() -> None:
    """A step with result/error matches only a call whose result and flag satisfy them."""
    calls = (
        ToolCall("book", {}, turn=0, position=0, result="failed", has_result=True, error=True),
        ToolCall("book", {}, turn=0, position=1, result="confirmed #12", has_result=True, error=False),
    )
    traj = Trajectory(calls, turns=1)
    assert check([step("book", result=compile_value({"$regex": "confirmed"}), error=False)], traj, mode="superset").passed
    assert not check([step("book", result="ok")], traj, mode="superset").passed


def test_result_without_recorded_results_is_error() -> None:
    """`result` on a run that records no results cannot be evaluated."""
    ev = check([step("s", result="x")], run(("s", {})))
    assert ev.errors and "no tool results" in ev.errors[0] and not ev.failures


def test_error_without_flags_is_error() -> None:
    """`error` on a format with no error flag cannot be evaluated."""
    ev = check([step("s", error=False)], run(("s", {})))
    assert ev.errors and "error flag" in ev.errors[0]


def test_expr_non_boolean_in_steps_is_error() -> None:
    """An $expr giving a non-boolean makes the steps check an error."""
    ev = check([step("s", {"q": {"$expr": "value | length"}})], run(("s", {"q": "abc"})))
    assert ev.errors and "not a boolean" in ev.errors[0]


@pytest.mark.parametrize(
    ("mode", "matched", "n_exp", "n_act", "score"),
    [("strict", 1, 2, 2, 0.5), ("superset", 1, 2, 4, 2 / 3), ("subset", 1, 4, 2, 2 / 3), ("unordered", 0, 0, 0, 1.0), ("in_order", 0, 1, 0, 0.0)],
)
def test_f1_formula(mode: str, matched: int, n_exp: int, n_act: int, score: float) -> None:
    """F1 of a matching; superset/in_order count precision 1, subset recall 1, empty sides 1."""
    assert f1(mode, matched, n_exp, n_act) == pytest.approx(score)


def test_score_and_threshold() -> None:
    """With threshold the steps pass when the score reaches it, order not checked."""
    traj = run(PARIS, BOOK, ("pay", {}))
    steps = [step(*BOOK), step(*PARIS), step("refund")]
    ev = check(steps, traj, threshold=0.6)
    assert ev.score == pytest.approx(2 / 3) and ev.passed
    ev = check(steps, traj, threshold=0.7)
    assert not ev.passed and ev.failures[0].summary.startswith("score 0.67 < 0.7")


def test_no_steps_no_score() -> None:
    """Without steps the score is None."""
    assert evaluate(Expectation(never=("x",)), run(PARIS)).score is None


def test_diff_table_and_nearest_fields() -> None:
    """The failure detail is an aligned table, then the nearest call's differing fields."""
    ev = check([step(*PARIS), step(*BOOK)], run(LYON, BOOK, ("pay", {})))
    detail = ev.failures[0].detail
    header = detail.splitlines()[0].split()
    assert header == ["#", "expected", "actual", "verdict"]
    assert "args differ" in detail and "UNEXPECTED" in detail
    assert "  $.query: expected 'weather in Paris', got 'weather in Lyon'" in detail.splitlines()
    assert ev.failures[0].summary == "1 unexpected, 1 arg differs"


def test_in_order_table_puts_a_missing_step_where_the_run_should_have_made_it() -> None:
    """in_order: a missing step follows the step before it and precedes the call of the step after it, even when the
    step before it sits beside an earlier, out-of-order nearest call; rows stay in run order."""
    steps = [step("lookup"), step("search", {"q": "paris"}), step("fetch"), step("write")]
    traj = run(("search", {"q": "lyon"}), ("lookup", {}), ("notify", {}), ("write", {}))
    report = check(steps, traj, mode="in_order").steps
    assert report.pairs == ((0, 1), (3, 3))
    table = report.detail.split("\n\n")[0].splitlines()[1:]
    assert [line.split()[0] for line in table] == ["1", "0", "2", "[2]", "3"]
    assert table[2].split() == ["2", "fetch", "MISSING"]


def test_diff_truncates_long_args() -> None:
    """Long argument maps are cut with an ellipsis."""
    long = ("s", {"text": "x" * 200})
    ev = check([step("s", {"text": "y"})], run(long))
    row = ev.failures[0].detail.splitlines()[1]
    assert "…" in row and len(row) < 200


def test_missing_tool_suggests_near_name() -> None:
    """A step whose tool was never called names the nearest called tool."""
    ev = check([step("book")], run(("book_flight", {})))
    assert "did you mean book_flight?" in ev.failures[0].detail


def test_report_to_dict_is_json_safe() -> None:
    """StepsReport.to_dict() serialises to JSON, matchers rendered as text."""
    import json

    ev = check([step("s", {"q": {"$regex": "a"}}), step("t")], run(("s", {"q": "b"})))
    data = ev.steps.to_dict()
    json.dumps(data)
    assert [m["step"] for m in data["missing"]] == [0, 1] and data["unexpected"][0]["call"] == 0


def test_ten_thousand_identical_partial_steps() -> None:
    """A large single-tool run with partial arguments in reversed order still matches correctly."""
    calls = [("search", {"q": f"q{i}", "page": 1}) for i in range(2000)]
    steps = [step("search", {"q": f"q{i}"}) for i in reversed(range(2000))]
    assert check(steps, run(*calls), mode="unordered", args_mode="superset").passed
    assert check(steps, run(*calls, parallel=True), mode="strict", args_mode="superset").passed


def test_steps_of_a_reference_run_take_arguments_literally() -> None:
    """A reference run's calls become steps whose `$`-keyed maps are data, not matchers; the run matches itself."""
    from trajrun.match.expectation import steps_of
    from trajrun.sources import read_trajectory

    messages = [
        {"role": "user", "content": "find it"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "query", "arguments": '{"filter": {"$gt": 3}}'}},
            {"id": "b", "type": "function", "function": {"name": "fetch", "arguments": "not json"}},
        ]},
    ]  # fmt: skip
    reference = read_trajectory(messages)
    steps = steps_of(reference.calls)
    assert steps == (Step("query", {"filter": {"$gt": 3}}), Step("fetch", "not json"))
    assert evaluate(Expectation(steps=steps), reference).passed
    other = run(("query", {"filter": 4}), ("fetch", "not json"))
    assert not evaluate(Expectation(steps=steps, mode="unordered"), other).passed


def _one_turn(*names: str) -> Trajectory:
    """A run whose calls (one tool, ``who`` argument) all come from one assistant turn."""
    return Trajectory(tuple(ToolCall("greet", {"who": n}, turn=0, position=i) for i, n in enumerate(names)), turns=1)


def test_strict_diagnosis_among_parallel_calls_names_only_the_missing_step() -> None:
    """Four calls in one turn against [Alice, Eve, Bob, Charlie, Daisy]: one missing step (Eve), nothing else."""
    steps = tuple(Step("greet", {"who": n}) for n in ("Alice", "Eve", "Bob", "Charlie", "Daisy"))
    report = evaluate(Expectation(steps=steps, mode="strict"), _one_turn("Alice", "Bob", "Charlie", "Daisy")).steps
    assert not report.passed and report.summary == "1 missing"
    data = report.to_dict()
    assert [m["expected"] for m in data["missing"]] == ['greet {"who":"Eve"}']
    assert data["unexpected"] == [] and len(data["pairs"]) == 4


def test_parallel_group_passes_in_one_turn_and_fails_across_turns() -> None:
    """A group's calls must share a turn, in any order; split over two turns the report says so."""
    group = (Step("greet", {"who": "Bob"}, group=0), Step("greet", {"who": "Alice"}, group=0))
    together = _one_turn("Alice", "Bob")
    assert evaluate(Expectation(steps=group, mode="strict"), together).passed
    apart = Trajectory((ToolCall("greet", {"who": "Alice"}, turn=0, position=0),
                        ToolCall("greet", {"who": "Bob"}, turn=1, position=1)), turns=2)
    for mode in ("strict", "in_order"):
        ev = evaluate(Expectation(steps=group, mode=mode), apart)  # type: ignore[arg-type]
        assert not ev.passed and ev.steps.summary == "1 in another turn", mode
        assert "apart from the rest of its parallel group" in ev.steps.detail
    plain = tuple(s._replace(group=None) for s in group)
    assert not evaluate(Expectation(steps=plain, mode="strict"), apart).passed  # Bob before Alice: order matters
    assert evaluate(Expectation(steps=plain[::-1], mode="strict"), apart).passed


def test_parallel_group_in_an_unordered_mode_is_a_check_error() -> None:
    """Groups from a golden file or the library in a mode that ignores turns cannot be evaluated."""
    group = (Step("greet", {"who": "Bob"}, group=0), Step("greet", {"who": "Alice"}, group=0))
    ev = evaluate(Expectation(steps=group, mode="superset"), _one_turn("Alice", "Bob"))
    assert ev.errors and "needs mode strict or in_order" in ev.errors[0]


def _weather_result(content: str) -> Trajectory:
    """An OpenAI Chat history whose one tool result is ``content`` (OpenAI stores tool output as a string)."""
    messages = [
        {"role": "user", "content": "where?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "geocode", "arguments": '{"q": "London"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": content},
    ]  # fmt: skip
    return read_trajectory(messages)


@pytest.mark.parametrize("result", [
    {"lat": 51.5, "lon": -0.1},
    {"lat": {"$gt": 51}, "lon": {"$type": "number"}},
    {"$expr": "value.lat > 51"},
    {"$contains": {"lat": 51.5}},
    '{"lat": 51.5, "lon": -0.1}',
    {"$regex": '"lat": 51\\.5'},
])  # fmt: skip
def test_json_text_results_compare_as_the_decoded_value(result: Any) -> None:
    """A tool result that is JSON text is compared as the object; strings and patterns still see the text."""
    traj = _weather_result('{"lat": 51.5, "lon": -0.1}')
    step = Step("geocode", ANY_ARGS, result=compile_value(result))
    ev = evaluate(Expectation(steps=(step,)), traj)
    assert ev.passed, ev.message() + ev.details()


def test_json_text_result_diff_names_the_field() -> None:
    """A decoded result that differs is reported field by field, not as a whole string."""
    step = Step("geocode", ANY_ARGS, result={"lat": 48.9})
    ev = evaluate(Expectation(steps=(step,)), _weather_result('{"lat": 51.5}'))
    assert "result.lat: expected 48.9, got 51.5" in ev.details()
