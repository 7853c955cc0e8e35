"""The checks beside the steps, and evaluate's order and errors."""

from __future__ import annotations

from typing import Any

from trajrun.match.checks import HOLDS, OTHER_CHECKS, Check, Findings, check_budget, checks_for
from trajrun.match.evaluate import evaluate
from trajrun.match.expectation import Budget, CountBound, Expectation, Step
from trajrun.match.matchers import compile_value
from trajrun.match.plan import Plan
from trajrun.match.verdict import CheckFailure
from trajrun.sources import read_trajectory
from trajrun.trajectory import ToolCall, Trajectory, Usage


def run(*names: str, usage: Usage | None = None, answer: str | None = None, nodes: Any = None, turns: int | None = None) -> Trajectory:
    """A run calling the named tools, one turn each."""
    calls = tuple(ToolCall(n, {}, turn=i, position=i) for i, n in enumerate(names))
    return Trajectory(calls, turns=len(names) if turns is None else turns, usage=usage, answer=answer, nodes=nodes, format="anthropic")


def test_never_names_forbidden_calls_and_where() -> None:
    """never: the summary lists forbidden tools called; the detail says where."""
    ev = evaluate(Expectation(never=("refund_all", "delete")), run("search", "refund_all"))
    failure = ev.failures[0]
    assert (failure.check, failure.summary) == ("never", "refund_all")
    assert "turn 1, position 1" in failure.detail


def test_before_needs_both_and_order() -> None:
    """before [a, b]: a call of a in an earlier turn than a call of b; both must occur."""
    assert evaluate(Expectation(before=(("search", "book"),)), run("search", "book")).passed
    ev = evaluate(Expectation(before=(("search", "book"),)), run("book", "search"))
    assert ev.failures[0].summary == "search before book"
    ev = evaluate(Expectation(before=(("search", "book"),)), run("search"))
    assert "book never called" in ev.failures[0].detail


def test_calls_bounds() -> None:
    """calls: min/max bounds per tool; an exact count reads 'expected'."""
    traj = run("search", "search", "search")
    ev = evaluate(Expectation(calls={"search": CountBound(max=2)}), traj)
    assert ev.failures[0].summary == "search called 3 times, max 2"
    ev = evaluate(Expectation(calls={"book": CountBound(min=1)}), traj)
    assert ev.failures[0].summary == "book called 0 times, min 1"
    assert evaluate(Expectation(calls={"search": CountBound(3, 3)}), traj).passed


def test_calls_detail_adds_each_bound_and_count_or_stays_empty() -> None:
    """The detail never repeats the summary: it lists every bounded tool beside its count, or is empty when all failed."""
    traj = run("search", "search", "search", "book")
    bounds = {"search": CountBound(max=2), "book": CountBound(1, 1), "pay": CountBound(0, 3), "ask": CountBound(min=0)}
    failure = evaluate(Expectation(calls=bounds), traj).failures[0]
    assert failure.summary == "search called 3 times, max 2"
    assert failure.detail.splitlines() == [
        "search  at most 2   actual 3  too many",
        "book    exactly 1   actual 1  ok",
        "pay     0 to 3      actual 0  ok",
        "ask     at least 0  actual 0  ok",
    ]
    only = evaluate(Expectation(calls={"search": CountBound(max=2), "book": CountBound(min=2)}), traj)
    assert only.failures[0].detail == ""
    assert only.details() == "calls: search called 3 times, max 2, book called 1 time, min 2"


def test_budget_calls_turns_tokens() -> None:
    """budget: inclusive upper bounds on calls, turns and total tokens."""
    traj = run(*["s"] * 9, usage=Usage(4000, 1500))
    ev = evaluate(Expectation(budget=Budget(calls=8, turns=9, tokens=5000)), traj)
    assert ev.failures[0].summary == "calls 9 > 8, tokens 5500 > 5000"


def test_token_budget_without_usage_is_error_but_other_bounds_checked() -> None:
    """A token budget on a run with no usage cannot be evaluated; calls are still checked."""
    ev = evaluate(Expectation(budget=Budget(calls=1, tokens=10)), run("a", "b"))
    assert ev.errors and "no token usage" in ev.errors[0]
    assert ev.failures[0].summary == "calls 2 > 1"


def test_nodes_mode_per_turn() -> None:
    """nodes: the mode applies turn by turn; turns align by index and must agree in number."""
    nodes = (("__start__", "agent", "tools"), ("agent",))
    assert evaluate(Expectation(nodes=nodes), run(nodes=nodes)).passed
    swapped = (("__start__", "tools", "agent"), ("agent",))
    assert not evaluate(Expectation(nodes=nodes), run(nodes=swapped)).passed
    assert evaluate(Expectation(nodes=nodes, mode="unordered"), run(nodes=swapped)).passed
    assert evaluate(Expectation(nodes=(("agent",), ()), mode="superset"), run(nodes=nodes)).passed
    ev = evaluate(Expectation(nodes=nodes), run(nodes=nodes[:1]))
    assert ev.failures[0].summary == "2 turns expected, 1 found"


def test_nodes_without_graph_is_error() -> None:
    """nodes on a source with no graph steps cannot be evaluated."""
    ev = evaluate(Expectation(nodes=(("agent",),)), run("a"))
    assert ev.errors and "no graph steps" in ev.errors[0]


def test_answer_matcher_and_value() -> None:
    """answer: a matcher or a value for the final text; the detail shows both."""
    traj = run(answer="It is rainy in Paris.")
    assert evaluate(Expectation(answer=compile_value({"$regex": "rainy"})), traj).passed
    ev = evaluate(Expectation(answer=compile_value({"$regex": "sunny"})), traj)
    assert ev.failures[0].summary == "answer differs"
    assert "regex 'sunny'" in ev.failures[0].detail and "rainy in Paris" in ev.failures[0].detail


def test_answer_without_text_is_error() -> None:
    """answer on a run with no assistant text cannot be evaluated."""
    ev = evaluate(Expectation(answer="x"), run("a"))
    assert ev.errors and "no assistant message" in ev.errors[0]


def test_failures_in_check_order_and_message() -> None:
    """Every check is evaluated; failures come in check order and the message names them."""
    expect = Expectation(steps=(Step("search"),), never=("refund_all",), budget=Budget(calls=1))
    ev = evaluate(expect, run("refund_all", "book"))
    assert [f.check for f in ev.failures] == ["steps", "never", "budget"]
    assert ev.message().startswith("3 checks failed: steps (")


SETS_ONE_CHECK = [Expectation(never=("a",)), Expectation(before=(("c", "a"),)), Expectation(calls={"a": CountBound(max=0)}),
                  Expectation(budget=Budget(calls=1)), Expectation(latency={"a": 5.0}), Expectation(nodes=(("x",),)),
                  Expectation(answer="x")]


def test_checks_for_skips_only_checks_that_hold_on_every_run() -> None:
    """The checks an expectation sets are found in check order; evaluating with only them or with every check is
    the same on a run that fails, or cannot evaluate, each of them."""
    assert checks_for(Expectation()) == ()
    for check, expect in zip(OTHER_CHECKS, SETS_ONE_CHECK):
        assert checks_for(expect) == (check,)
        traj = run("a", "b", "a", answer="y")
        with_all = evaluate(expect, traj, plan=Plan(expect, OTHER_CHECKS))
        assert evaluate(expect, traj) == with_all and (with_all.failures or with_all.errors)
    both = Expectation(never=("a",), answer="x")
    assert checks_for(both) == (OTHER_CHECKS[0], OTHER_CHECKS[-1])


def test_checks_return_their_findings() -> None:
    """A check returns what it found, failures and sentences for what cannot be evaluated together, and
    ``HOLDS`` when it holds; nothing is appended to an argument."""
    expect = Expectation(budget=Budget(calls=1, tokens=10))
    found = check_budget(expect, run("a", "b"))
    assert [(f.check, f.summary) for f in found.failures] == [("budget", "calls 2 > 1")]
    assert found.errors == ("budget: tokens: 10 cannot be checked: the anthropic source records no token usage "
                            "(or some turn lacks it); remove the token bound or use a source that records usage",)
    assert not found.holds
    assert check_budget(Expectation(budget=Budget(calls=2)), run("a", "b")) == HOLDS == Findings()
    assert HOLDS.holds


def _lean_and_full(expect: Expectation, messages: list[Any]) -> tuple[Any, Any]:
    """``expect``'s verdict on messages read without calls' details, and read with them."""
    lean, full = (evaluate(expect, read_trajectory(messages, details=details)) for details in (False, True))
    return (lean.failures, lean.errors, lean.score), (full.failures, full.errors, full.score)


def test_every_check_that_says_it_reads_no_details_gives_the_same_verdict_on_a_lean_read() -> None:
    """Each check beside the steps declares whether it reads calls' arguments, results or error flags; one that
    says it does not gives the same findings on a run read without them. The list covers every check."""
    assert [checks_for(expect) for expect in SETS_ONE_CHECK] == [(check,) for check in OTHER_CHECKS]
    call = {"role": "assistant", "content": "", "tool_calls": [{"id": "c0", "function": {"name": "a",
                                                                                          "arguments": '{"q": 1}'}}]}
    messages = [{"role": "user", "content": "go"}, call, {"role": "tool", "tool_call_id": "c0", "content": "ok"},
                call, {"role": "assistant", "content": "y"}]
    for expect in SETS_ONE_CHECK:
        assert not Plan(expect).reads_details
        lean, full = _lean_and_full(expect, messages)
        assert lean == full and (full[0] or full[1]), expect


def test_a_check_that_does_not_say_what_it_reads_makes_the_plan_read_details() -> None:
    """A new check that reads calls' arguments needs no one to remember the lean read: unless it declares that
    it reads none, a plan that runs it reads details; steps with arguments, results or error flags and
    ``failed_calls: ignore`` read them too."""

    def wants_q(expect: Expectation, traj: Trajectory) -> Findings:
        return HOLDS if all(isinstance(c.args, dict) and "q" in c.args for c in traj.calls) else \
            Findings((CheckFailure("q", "no q"),))

    new = Check("q", wants_q, lambda expect: True)
    assert Plan(Expectation(), (new,)).reads_details
    assert not Plan(Expectation(), (new._replace(reads_details=lambda expect: False),)).reads_details
    assert not Plan(Expectation(steps=(Step("a"),), never=("b",))).reads_details
    assert Plan(Expectation(steps=(Step("a"),), failed_calls="ignore")).reads_details
    for step in (Step("a", {"q": 1}), Step("a", result="ok"), Step("a", error=False)):
        assert Plan(Expectation(steps=(step,))).reads_details
    assert evaluate(Expectation(), run("a"), plan=Plan(Expectation(), (new,))).failures[0].summary == "no q"
