"""The value classes are frozen, slotted dataclasses: what a ``-j`` worker sends back (a case's result,
with its trajectory and verdict) survives pickling whole, derived fields included; nothing can be
assigned after the fact; and equal values hash alike."""

from __future__ import annotations

import dataclasses
import pickle
from dataclasses import FrozenInstanceError

import pytest
import trajrun
from trajrun.errors import Location
from trajrun.match.expectation import Step
from trajrun.run.results import CaseResult, Gates, RunResult, SuiteResult, lean

MESSAGES = [
    {"role": "user", "content": "weather in Paris?"},
    {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "search", "arguments": '{"q": "paris"}'}},
        {"id": "c2", "type": "function", "function": {"name": "fetch", "arguments": '{"n": 2}'}},
    ]},
    {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
    {"role": "tool", "tool_call_id": "c2", "content": "18 C"},
    {"role": "assistant", "content": "Sunny, 18 C."},
]  # fmt: skip


def _failed_case() -> CaseResult:
    """A failing case as a worker makes it: a real read, a real verdict with a steps report."""
    traj = trajrun.read_trajectory(MESSAGES)
    expect = trajrun.Expectation(steps=(Step("search", {"q": "london"}), Step("fetch")))
    evaluation = trajrun.evaluate(expect, traj)
    assert evaluation.failures and evaluation.steps is not None
    return CaseResult("s::weather", "s", "weather", "s.suite.yaml", 3, "failed",
                      evaluation=evaluation, trajectory=traj, notes=("note",))  # fmt: skip


def test_a_result_crosses_processes_whole() -> None:
    case = _failed_case()
    assert case.tool_calls == 2  # derived by __post_init__ from the trajectory
    run = RunResult((SuiteResult("s", "s.suite.yaml", (case,)),),
                    gates=Gates("base.json", frozenset({("s", "weather")})))  # fmt: skip
    back = pickle.loads(pickle.dumps(run, pickle.HIGHEST_PROTOCOL))
    assert back == run and back is not run
    got = back.cases[0]
    assert (got.tool_calls, got.usage, got.trajectory) == (2, case.usage, case.trajectory)
    steps = got.evaluation.steps
    assert steps.actual_calls == case.evaluation.steps.actual_calls  # compare=False: checked apart
    assert steps.expected_steps == case.evaluation.steps.expected_steps
    assert [c.name for c in steps.actual_calls] == ["search", "fetch"]
    assert back.suites[0].timestamp == run.suites[0].timestamp
    assert back.gates.mark(got).baseline == "known"


def test_a_lean_result_keeps_what_the_totals_need() -> None:
    case = _failed_case()
    slim = lean(case, frozenset({"passed"}))
    assert slim.trajectory is None and slim.evaluation.steps.actual_calls == ()
    assert (slim.tool_calls, slim.usage) == (2, case.usage)
    assert pickle.loads(pickle.dumps(slim)) == slim


@pytest.mark.parametrize("make", [
    _failed_case,
    lambda: trajrun.read_trajectory(MESSAGES),
    lambda: Location("s.suite.yaml", 3, 5, "cases[0]"),
    lambda: Gates(),
])  # fmt: skip
def test_nothing_is_assigned_after_the_fact(make) -> None:
    value = make()
    name = dataclasses.fields(value)[0].name
    with pytest.raises(FrozenInstanceError):
        setattr(value, name, None)
    with pytest.raises(FrozenInstanceError):
        delattr(value, name)
    with pytest.raises((FrozenInstanceError, TypeError)):  # a name that is no field: TypeError
        value.extra = 1  # (dataclass's __setattr__ of a slotted class calls super() on the old class)
    assert not hasattr(value, "__dict__")


def test_equal_values_hash_alike() -> None:
    first, again = Location("a.yaml", 1, 2, "x"), Location("a.yaml", 1, 2, "x")
    assert first == again and hash(first) == hash(again) and len({first, again}) == 1
    assert Location("a.yaml", 1, 3, "x") != first
    traj = trajrun.read_trajectory(MESSAGES)
    with pytest.raises(TypeError):
        hash(traj)  # its calls hold dicts of arguments: unhashable, as any such dataclass
