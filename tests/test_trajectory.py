"""The trajectory model: the Elixir-style helpers, usage arithmetic and the show-json shape."""

from __future__ import annotations

from trajrun.trajectory import ToolCall, Trajectory, Usage


def traj() -> Trajectory:
    """search and fetch in parallel in turn 0, then book in turn 2 (turn 1 was text only)."""
    calls = (
        ToolCall("search", {"q": "paris"}, "c1", turn=0, position=0, result="3 hits", has_result=True),
        ToolCall("fetch", {"url": "a"}, "c2", turn=0, position=1),
        ToolCall("book", "{not json", "c3", turn=2, position=2, result="failed", has_result=True, error=True),
    )
    return Trajectory(calls, turns=3, usage=Usage(120, 30), answer="booked", format="openai")


def test_calls_named_keeps_order() -> None:
    """calls_named returns every call of one tool in call order."""
    t = Trajectory((ToolCall("a", {}, position=0), ToolCall("b", {}, position=1), ToolCall("a", {"n": 2}, position=2)))
    assert [c.position for c in t.calls_named("a")] == [0, 2]
    assert t.calls_named("zzz") == ()


def test_calls_in_turn_groups_parallel_calls() -> None:
    """calls_in_turn returns the calls one assistant turn made."""
    assert [c.name for c in traj().calls_in_turn(0)] == ["search", "fetch"]
    assert traj().calls_in_turn(1) == ()


def test_called_before_needs_an_earlier_turn() -> None:
    """called_before holds only across turns: calls in one turn are parallel."""
    t = traj()
    assert t.called_before("search", "book")
    assert not t.called_before("search", "fetch") and not t.called_before("fetch", "search")
    assert not t.called_before("book", "search")
    assert not t.called_before("search", "never_called")


def test_usage_total_and_sum() -> None:
    """total_tokens is input + output; usages add field by field."""
    assert Usage(120, 30).total_tokens == 150
    assert (Usage(1, 2) + Usage(10, 20)).to_dict() == {"input_tokens": 11, "output_tokens": 22, "total_tokens": 33}


def test_records_results_and_errors() -> None:
    """records_results / records_errors tell whether the source keeps results and error flags."""
    assert traj().records_results and traj().records_errors
    bare = Trajectory((ToolCall("a", {}),))
    assert not bare.records_results and not bare.records_errors


def test_to_dict_is_the_contract_shape() -> None:
    """to_dict gives the fixed show-json shape, raw-string args kept, no result as null."""
    data = traj().to_dict()
    assert list(data) == ["format", "tool_calls", "turns", "usage", "answer"]
    assert data["tool_calls"][1] == {"name": "fetch", "args": {"url": "a"}, "id": "c2", "turn": 0, "result": None, "error": None}
    assert data["tool_calls"][2]["args"] == "{not json"
    assert data["usage"] == {"input_tokens": 120, "output_tokens": 30, "total_tokens": 150}


def test_to_dict_adds_nodes_for_graph_runs() -> None:
    """Graph runs carry their nodes per turn in the JSON."""
    t = Trajectory(turns=2, nodes=(("__start__", "agent"), ("tools",)), format="graph")
    assert t.to_dict()["nodes"] == [["__start__", "agent"], ["tools"]]
