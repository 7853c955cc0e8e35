"""The hot path's shortcuts give exactly what the general code gives: decoding, call building, compiling, pairing."""

from __future__ import annotations

import itertools
import json
from operator import itemgetter
from typing import Any

import pytest
from hypothesis import event, example, given
from hypothesis import strategies as st
from properties import PROPERTY
from trajrun.errors import SourceError
from trajrun.match.checks import HOLDS, OTHER_CHECKS, Check, Findings
from trajrun.match.callindex import CallIndex
from trajrun.match.compatibility import Candidates
from trajrun.match.evaluate import evaluate
from trajrun.match.expectation import ANY_ARGS, MODES, UNSET, Budget, CountBound, Expectation, Step
from trajrun.match.matchers import compile_value
from trajrun.match.plan import Plan
from trajrun.match.quick import quick_pass
from trajrun.match.values import canon, compare_value, flat_match, is_flat, same_flat
from trajrun.run.bulk_eval import BulkSpec, _Plan, _verdict
from trajrun.sources import FORMATS, read_trajectory
from trajrun.sources.builder import Builder, NotThisFormat, _decode_all, decode_args
from trajrun.sources.detect import _ORDER, _detect, _messages_of, _try_each
from trajrun.sources.registry import MESSAGES as READS_MESSAGES
from trajrun.sources.registry import READERS
from trajrun.sources.records import Record, compile_path
from trajrun.trajectory import ToolCall, Trajectory, Usage

FLAT_VALUES = st.sampled_from([1, 1.0, 2, 0, -0.0, "1", "a", None, True, False, [1], {"k": 1}])
MAPS = st.dictionaries(st.sampled_from(["x", "y", "z"]), FLAT_VALUES, max_size=3)


def test_decode_all_matches_decode_args_item_by_item() -> None:
    """A list mixing objects, padded text, invalid text, lists, numbers, dicts and blanks decodes like decode_args."""
    raws: list[Any] = ['{"a": 1}', ' {"b": 2}', '{"c": 3}  \n', '{"d": ', "[1, 2]", "42", "", None, {"e": 5}, '{"f": 1} x']
    assert _decode_all(raws) == [decode_args(r) for r in raws]
    assert _decode_all(['{"a": 1}', '{"b": [1, {"c": null}]}']) == [{"a": 1}, {"b": [1, {"c": None}]}]


TEXTS = st.one_of(
    MAPS.map(json.dumps),
    st.tuples(MAPS.map(json.dumps), st.sampled_from(["", " ", "\n", "x", "}", ",{}"])).map("".join),
    st.text(alphabet='{}[]":, 1a', max_size=8),
    st.none(),
    MAPS,
)


@PROPERTY
@given(st.lists(TEXTS, max_size=5))
def test_decode_all_agrees_with_decode_args(raws: list[Any]) -> None:
    """Any list of argument values decodes in one pass exactly as item by item."""
    assert _decode_all(raws) == [decode_args(r) for r in raws]


def test_finish_builds_the_same_calls_as_the_constructor() -> None:
    """Calls built from columns equal ToolCall(...) field for field, results and errors included."""
    b = Builder()
    b.turn("thinking")
    b.call("search", '{"q": "Paris"}', "c1")
    b.call("fetch", "not json", "c2")
    b.result([{"type": "text", "text": "o"}, {"type": "text", "text": "k"}], "c1", error=False)
    traj = b.finish("openai")
    assert traj.calls == (
        ToolCall("search", {"q": "Paris"}, "c1", 0, 0, "ok", True, False),
        ToolCall("fetch", "not json", "c2", 0, 1, None, False, None),
    )
    assert all(type(c) is ToolCall for c in traj.calls)


def test_result_before_its_call_pairs_by_order_not_by_a_later_id() -> None:
    """A result whose id names no earlier call takes the first waiting call, as the queues always did."""
    b = Builder()
    b.turn()
    b.call("search", "{}", "a")
    b.result("early", "b", "search")
    b.call("search", "{}", "b")
    b.result("late", "b")
    assert [c.result for c in b.finish("openai").calls] == ["early", "late"]


def test_plain_map_compiles_to_itself() -> None:
    """A map of plain values without '$' keys is returned as is; matcher maps and nested maps still compile."""
    plain = {"q": "Paris", "n": 2, "ok": True, "x": None}
    assert compile_value(plain) is plain
    nested = compile_value({"q": {"$regex": "P"}, "in": {"a": 1}})
    assert nested["q"].test("Paris") and nested["in"] == {"a": 1}
    assert compile_value({"$literal": {"$x": 1}}) == {"$x": 1}


@PROPERTY
@given(MAPS, MAPS)
def test_flat_comparisons_agree_with_the_general_ones(expected: dict[str, Any], actual: dict[str, Any]) -> None:
    """same_flat is canon equality and flat_match is compare_value, whenever the expected map is flat."""
    if is_flat(expected):
        assert same_flat(expected, actual) == (is_flat(actual) and canon(expected) == canon(actual))
        for rule in ("exact", "superset", "subset"):
            assert flat_match(expected, actual, rule) == compare_value(expected, actual, rule)
    else:
        assert not same_flat(expected, actual)


CALLS = st.lists(st.tuples(st.sampled_from(["a", "b"]), MAPS, st.integers(0, 2)), max_size=6)


def _run(calls: list[tuple[str, dict[str, Any], int]]) -> Trajectory:
    """A run from (name, args, turn step) triples, turns never decreasing."""
    turn, out = 0, []
    for i, (name, args, step) in enumerate(calls):
        turn += step % 2
        out.append(ToolCall(name, args, turn=turn, position=i))
    return Trajectory(tuple(out), turns=turn + 1)


def _general(expect: Expectation, traj: Trajectory) -> Any:
    """The steps report with the shortcuts switched off."""
    return evaluate(expect, traj, shortcuts=False).steps


@PROPERTY
@given(CALLS, st.sampled_from(["exact", "superset", "subset"]), st.booleans(), st.booleans())
def test_shortcuts_report_what_the_general_matching_reports(
    calls: list[tuple[str, dict[str, Any], int]], rule: str, project: bool, swap: bool
) -> None:
    """Direct pairing (whole run or turn by turn) gives the same verdict, score and pairs as the full matching."""
    traj = _run(calls)
    steps = [Step(n, {k: v for k, v in a.items() if k == "x"} if project else a) for n, a, _ in calls]
    if swap and len(steps) > 1:
        steps[0], steps[-1] = steps[-1], steps[0]
    for mode in MODES:
        expect = Expectation(steps=tuple(steps), mode=mode, args_mode=rule)  # type: ignore[arg-type]
        fast, slow = evaluate(expect, traj).steps, _general(expect, traj)
        assert (fast.passed, fast.score, fast.pairs, fast.detail) == (slow.passed, slow.score, slow.pairs, slow.detail)


@PROPERTY
@given(st.lists(st.sampled_from(["a", "b", "c"]), max_size=7), st.lists(st.sampled_from(["a", "b", "c", "d"]), max_size=5),
       st.lists(st.integers(0, 2), min_size=7, max_size=7))
def test_steps_by_name_alone_report_what_the_general_matching_reports(
    names: list[str], wanted: list[str], turns: list[int]
) -> None:
    """Bare tool names in an unordered mode, paired name by name, give the general matching's whole report."""
    traj = _run([(name, {}, turn) for name, turn in zip(names, turns)])
    for mode in MODES:
        expect = Expectation(steps=tuple(Step(name) for name in wanted), mode=mode)  # type: ignore[arg-type]
        fast, slow = evaluate(expect, traj).steps, _general(expect, traj)
        assert fast == slow
        assert (fast.expected_steps, fast.actual_calls) == (slow.expected_steps, slow.actual_calls)
        full, verdict = evaluate(expect, traj), evaluate(expect, traj, verdict_only=True)  # a bulk record's view
        assert (verdict.failures, verdict.errors, verdict.score, verdict.message()) == \
            (full.failures, full.errors, full.score, full.message())


KEYED = st.lists(st.tuples(st.sampled_from(["a", "b"]), st.one_of(
    st.dictionaries(st.sampled_from(["x", "y"]), st.sampled_from(["1", "a", "b", "c", "d", 1, None, [1]]), max_size=2),
    st.just("not json")), st.just(0)), max_size=6)


@PROPERTY
@given(KEYED, st.sampled_from(["x", "y"]), st.sampled_from(["1", "a", "b"]))
def test_unique_index_finds_the_calls_the_scan_finds(calls: list[tuple[str, Any, int]], key: str, value: str) -> None:
    """A step's calls holding a string value: the index of unique values (or its fallback) gives the tool's scan."""
    index = CallIndex(_run(calls).calls)
    for name in ("a", "b"):
        scanned = [pos for pos in index.positions(name) if isinstance(index.calls[pos].args, dict)
                   and index.calls[pos].args.get(key, None) == value]
        assert index.with_value(name, key, value, False) == scanned


def test_accepts_agrees_with_candidate_lists() -> None:
    """The direct test of one step against one call equals membership in the step's class's candidates."""
    traj = _run([("a", {"x": 1, "y": "p"}, 0), ("a", {"x": 1.0}, 1), ("b", {"x": True}, 0), ("a", {"x": [1]}, 1)])
    steps = (Step("a", {"x": 1}), Step("a", {"x": 1, "y": "p"}), Step("b", {"x": 1}), Step("a", {"x": [1]}))
    for rule in ("exact", "superset", "subset", "ignore"):
        cand = Candidates(Plan(Expectation(steps=steps, args_mode=rule)), CallIndex(traj.calls))  # type: ignore[arg-type]
        for i in range(len(steps)):
            assert [cand.accepts(i, p) for p in range(4)] == [cand.matches(i, p) for p in range(4)], (rule, i)


def test_reversed_ten_thousand_partial_calls_stay_linear() -> None:
    """The bench's worst case (one tool, partial args, reversed) evaluates every mode without quadratic work."""
    calls = [("search", {"query": f"q{i}", "page": i % 5}) for i in range(10_000)]
    messages = [{"role": "user", "content": "go"}]
    for i, (name, args) in enumerate(calls):
        messages.append({"role": "assistant", "tool_calls": [{"id": f"c{i}", "function": {"name": name, "arguments": json.dumps(args)}}]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": "ok"})
    traj = read_trajectory(messages)
    steps = tuple(Step(n, {"query": a["query"]}) for n, a in reversed(calls))
    for mode in ("strict", "unordered", "superset"):
        ev = evaluate(Expectation(steps=steps, mode=mode, args_mode="superset"), traj)  # type: ignore[arg-type]
        assert ev.passed == (mode != "strict")


ITEMS = st.sampled_from([
    {"role": "system", "content": "be brief"}, {"role": "user", "content": "go"}, {"role": "user", "content": []},
    {"role": "user", "content": "go", "name": "ann"}, {"content": "go"}, {"role": "user", "content": {"parts": []}},
    {"role": "assistant", "content": "", "tool_calls": [{"id": "c0", "function": {"name": "s", "arguments": "{}"}}]},
    {"role": "assistant", "content": "done"}, {"role": "assistant", "content": "x", "usage": {"input_tokens": 1}},
    {"role": "assistant", "function_call": {"name": "s", "arguments": "{}"}}, {"role": "tool", "content": "ok"},
    {"role": "tool", "tool_call_id": "c0", "content": [{"type": "text", "text": "ok"}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c0", "content": "ok"}]},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "c0", "name": "s", "input": {}}]},
    {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm"}]},
    {"role": "assistant", "content": [{"toolUse": {"toolUseId": "c0", "name": "s", "input": {}}}]},
    {"role": "model", "parts": [{"functionCall": {"name": "s", "args": {}}}]}, {"author": "agent"},
    {"content": {"parts": [{"text": "hi"}]}},
    {"type": "function_call", "name": "s", "arguments": "{}", "call_id": "c0"},
    {"type": "message", "role": "assistant", "content": "hi"}, {"type": "ai", "content": "", "tool_calls": []},
    {"type": "human", "data": {"content": "hi"}}, {"lc": 1, "type": "constructor", "id": ["AIMessage"], "kwargs": {}},
    {"spanId": "a", "name": "chat"}, {"resourceSpans": []}, {"context": {"span_id": "a"}}, {"type": 3}, {"role": 1},
    {"role": "assistant", "content": 5}, {}, "text", 7, None, ["nested"],
])  # fmt: skip
TOP_KEYS = st.lists(st.sampled_from([
    ("tool_calls", []), ("tool_calls", "x"), ("steps", [["a"]]), ("steps", "x"), ("outputs", {"steps": []}),
    ("spans", [{"spanId": "a"}]), ("spans", []), ("data", [{"span_id": "a", "name": "chat"}]), ("resourceSpans", []),
    ("spanId", "a"), ("values", {"messages": []}), ("values", {}), ("next", []), ("channel_values", {}),
    ("checkpoint", {"channel_values": {}}), ("run_id", "r"),
]), max_size=2).map(dict)  # fmt: skip
DOCS = st.one_of(st.lists(ITEMS, max_size=5), st.builds(lambda top, items: {**top, "messages": items}, TOP_KEYS,
                                                        st.lists(ITEMS, max_size=5)))  # fmt: skip


@PROPERTY
@given(st.one_of(DOCS, ITEMS))
@example([{"role": "user", "content": "go"}, {"type": "message", "role": "assistant", "content": "hi"}])
@example([{"role": "user", "content": "go"}, {"role": "assistant", "content": [{"type": "tool_use", "id": "c",
                                                                               "name": "s", "input": {}}]}])
def test_refusals_are_sure(doc: Any) -> None:
    """A reader's ``refuses`` (of the document, or of its messages for a reader of messages) is True only when its
    ``read`` refuses; detection skipping the readers that refuse agrees with trying each."""
    messages = _messages_of(doc)
    for reader in READERS:
        given = messages if reader.READS == READS_MESSAGES else doc
        if reader.refuses(given):
            with pytest.raises(NotThisFormat):
                reader.read(given, auto=True)
    assert _detected(_detect, doc) == _detected(_try_each, doc)


def _detected(detect: Any, doc: Any) -> Any:
    """A detection's trajectory, or its error's text and reasons."""
    try:
        return detect(doc, "run.json", "fix", "hint")
    except SourceError as exc:
        return str(exc), exc.reasons


def test_refusals_are_listed_in_detection_order() -> None:
    """Detection's shortcut asks every reader, in the order detection tries them."""
    assert [name for name, _, _ in _ORDER] == list(FORMATS)
    assert [refuses for _, _, refuses in _ORDER] == [reader.refuses for reader in READERS]
    assert [reads for _, reads, _ in _ORDER] == [reader.READS == READS_MESSAGES for reader in READERS]


NAMES = st.sampled_from(["a", "b", "c"])
OPENAI_CALLS = st.lists(st.fixed_dictionaries({
    "id": st.sampled_from(["c0", "c1", None]),
    "function": st.fixed_dictionaries({"name": NAMES, "arguments": TEXTS}),
}), min_size=1, max_size=3)  # fmt: skip
MESSAGES = st.lists(st.one_of(
    st.builds(lambda calls: {"role": "assistant", "content": "", "tool_calls": calls}, OPENAI_CALLS),
    st.builds(lambda i, c: {"role": "tool", "tool_call_id": i, "content": c}, st.sampled_from(["c0", "c1"]),
              st.sampled_from(["ok", "no", None])),
    st.just({"role": "assistant", "content": "done"}),
), max_size=6)  # fmt: skip
STEPS = st.lists(NAMES.map(Step), max_size=3)


@PROPERTY
@given(MESSAGES, STEPS, st.sampled_from(MODES), st.lists(NAMES, max_size=1), st.integers(0, 4))
def test_reading_without_details_changes_no_bulk_record(messages: list[Any], steps: list[Step], mode: str, never: list[str],
                                            calls: int) -> None:
    """Checks that never look at arguments or results give every record the same result read without them, and
    with the quick pass."""
    expect = Expectation(steps=tuple(steps), mode=mode, never=tuple(never),  # type: ignore[arg-type]
                         budget=Budget(calls=calls))
    assert not Plan(expect).reads_details
    record = Record(1, {"id": "r", "messages": messages})
    spec = BulkSpec(expect, select="$.messages")
    full = _Plan(compile_path("$.messages"), None, True, Plan(expect, OTHER_CHECKS), None, None)  # no quick pass either
    assert _verdict(spec, record, _Plan.of(spec)) == _verdict(spec, record, full)


def test_arguments_too_deep_and_ids_that_cannot_be_hashed_raise_nothing() -> None:
    """Arguments nested past the recursion limit stay text; a result whose id cannot be hashed (a set, from a Python
    source) pairs by order alone, one whose name cannot be hashed with nothing, as a list or a mapping do. Read with
    details or without (arguments then stay text and nothing pairs)."""
    deep = '{"a": ' + "[" * 5000 + "]" * 5000 + "}"
    call = {"role": "assistant", "tool_calls": [{"id": "c0", "function": {"name": "a", "arguments": "{}"}}]}
    deep_call = {"role": "assistant", "tool_calls": [{"id": "c0", "function": {"name": "a", "arguments": deep}}]}
    odd = {"role": "tool", "tool_call_id": {"c0"}, "content": "ok"}
    assert read_trajectory([deep_call]).calls[0].args == deep
    assert decode_args(deep) == deep
    full = read_trajectory([call, odd]).calls[0]
    assert (full.args, full.result, full.has_result) == ({}, "ok", True)
    for doc in ([deep_call], [call, odd]):
        lean = read_trajectory(doc, details=False).calls[0]
        assert (lean.has_result, lean.result, isinstance(lean.args, str)) == (False, None, True)
    builder = Builder()
    builder.call("a", "{}", ["c0"])
    builder.result("ok", None, ("a", ["y"]))
    assert not builder.finish("openai").calls[0].has_result


def test_only_steps_with_args_result_or_error_read_call_details() -> None:
    """A step with args, a result or an error flag reads calls' details; names and the other checks do not."""
    for step in (Step("b", {"q": 1}), Step("b", result="ok"), Step("b", error=False)):
        assert Plan(Expectation(steps=(Step("a"), step))).reads_details
    checks = Expectation(steps=(Step("a"),), never=("b",), budget=Budget(calls=1), answer="done")
    assert not Plan(checks).reads_details
    assert not Plan(Expectation()).reads_details


def _rarely(strategy: Any, absent: Any) -> Any:
    """``strategy`` one time in four, else the check left out: a run passes a case only if it passes every check."""
    return st.one_of(st.just(absent), st.just(absent), st.just(absent), strategy)


_turn = itemgetter(1)
"""A ``(name, turn)`` call's turn: calls read from a source come in rising turns."""
QUICK_CASES = st.fixed_dictionaries({
    "steps": st.none() | st.lists(st.one_of(NAMES.map(Step), NAMES.map(lambda name: Step(name, {"q": 1}))), max_size=4),
    "mode": st.sampled_from(MODES),
    "never": _rarely(st.lists(NAMES, min_size=1, max_size=2).map(tuple), ()),
    "calls": _rarely(st.dictionaries(NAMES, st.builds(CountBound, st.none() | st.integers(0, 2),
                                                       st.none() | st.integers(0, 3)), min_size=1, max_size=2), {}),
    "budget": _rarely(st.builds(Budget, st.none() | st.integers(0, 6), st.none() | st.integers(0, 4),
                                st.none() | st.integers(0, 30)), None),
    "before": _rarely(st.lists(st.tuples(NAMES, NAMES), min_size=1, max_size=2).map(tuple), ()),
    "answer": _rarely(st.just("done"), UNSET),
    "threshold": _rarely(st.just(0.5), None),
})  # fmt: skip


@PROPERTY
@given(QUICK_CASES, st.lists(st.tuples(NAMES, st.integers(0, 3)), max_size=7).map(lambda calls: sorted(calls, key=_turn)),
       st.none() | st.builds(Usage, st.integers(0, 20), st.integers(0, 20)), st.sampled_from([None, "done", "no"]))
def test_quick_pass_is_the_verdict_of_evaluate(case: dict[str, Any], calls: list[tuple[str, int]], usage: Usage | None,
                                               answer: str | None) -> None:
    """Where the quick test applies (steps that are names alone, or none), it passes exactly the runs ``evaluate``
    passes, with the same score; elsewhere there is none."""
    steps = None if case["steps"] is None else tuple(case["steps"])
    expect = Expectation(**{**case, "steps": steps})
    bare = steps is None or (bool(steps) and all(s.args is ANY_ARGS for s in steps)
                             and expect.mode in ("unordered", "superset", "subset") and expect.threshold is None)
    assert (quick_pass(Plan(expect)) is not None) == bare
    if quick_pass(Plan(expect)) is not None:
        event("quick passes" if _same_verdict(expect, calls, usage, answer) else "quick fails")


RUNS = [list(names) for size in range(5) for names in itertools.product("abc", repeat=size)]
"""Every run of up to four calls of three tools."""
ONE_CHECK = [
    *(Expectation(steps=tuple(map(Step, names)), mode=mode)  # type: ignore[arg-type]
      for names in (*itertools.product("abc", repeat=1), *itertools.product("abc", repeat=2),
                    *itertools.product("ab", repeat=3)) for mode in ("unordered", "superset", "subset")),
    *(Expectation(never=never) for never in (("a",), ("b",), ("a", "b"), ("d",))),
    *(Expectation(calls={"a": CountBound(low, high)}) for low in (None, 0, 1, 2) for high in (None, 0, 1, 2)),
    *(Expectation(budget=Budget(calls=n)) for n in range(5)), *(Expectation(budget=Budget(turns=n)) for n in range(4)),
    *(Expectation(budget=Budget(tokens=n)) for n in (9, 10, 11)),
    *(Expectation(before=((first, then),)) for first in "abd" for then in "abd"),
    Expectation(before=(("a", "b"), ("b", "c"))),
    *(Expectation(answer=answer) for answer in ("done", "no")),
]  # fmt: skip


def test_quick_pass_of_each_check_is_the_verdict_of_evaluate() -> None:
    """Each check the quick test knows, alone, on every run of up to four calls, one a turn without usage and (for
    the checks but steps, which read neither) two a turn with usage: it passes exactly the runs ``evaluate``
    passes."""
    for expect in ONE_CHECK:
        shapes = ((1, None),) if expect.steps else ((1, None), (2, Usage(4, 6)))
        for names, (per_turn, usage) in itertools.product(RUNS, shapes):
            _same_verdict(expect, [(name, i // per_turn) for i, name in enumerate(names)], usage, "done")


def _same_verdict(expect: Expectation, calls: list[tuple[str, int]], usage: Usage | None, answer: str | None) -> bool:
    """The quick test of ``expect`` on a run of ``(name, turn)`` calls gives the verdict of ``evaluate``, and a pass
    its score; returns the verdict."""
    quick = quick_pass(Plan(expect))
    assert quick is not None
    run = tuple(ToolCall(name, {}, turn=turn, position=i) for i, (name, turn) in enumerate(calls))
    traj, (passes, score) = Trajectory(run, max((turn for _, turn in calls), default=0) + 1, usage, answer), quick
    evaluation = evaluate(expect, traj, verdict_only=True)
    assert passes(traj) == evaluation.passed
    assert not passes(traj) or score == evaluation.score
    return evaluation.passed


def test_quick_pass_runs_a_check_it_does_not_know_as_it_is() -> None:
    """A check the quick test cannot tell from names (a new one, or latency, nodes, answer) runs on the run as it is:
    the quick test passes exactly the runs it passes."""

    def one_turn(expect: Expectation, traj: Trajectory) -> Findings:
        return HOLDS if traj.turns == 1 else Findings(errors=("more than one turn",))

    plan = Plan(Expectation(steps=(Step("a"),), mode="superset"), (Check("one turn", one_turn, lambda e: True),))
    quick = quick_pass(plan)
    assert quick is not None
    passes, score = quick
    calls = (ToolCall("a", {}, turn=0, position=0),)
    assert (passes(Trajectory(calls, 1)), passes(Trajectory(calls, 2)), score) == (True, False, 1.0)
    assert evaluate(plan.expect, Trajectory(calls, 2), plan=plan).errors == ("more than one turn",)
