"""trajrun's own trajectory shape and the Elixir LangChain ``Trajectory.to_map`` shape."""

from __future__ import annotations

from pathlib import Path

from trajrun.sources import load_trajectory, read_trajectory
from trajrun.trajectory import ToolCall, Trajectory, Usage

DATA = Path(__file__).parent / "data"
ELIXIR = DATA / "samples" / "elixir_langchain" / "trajectory_to_map_golden.json"


def test_elixir_to_map_uses_messages_for_turns_and_results() -> None:
    """Elixir to_map: calls from the assistant message, results paired by order and name, token usage."""
    t = load_trajectory(ELIXIR)
    assert t.format == "trajectory"
    assert [(c.name, c.args, c.id, c.turn) for c in t.calls] == [
        ("search", {"query": "weather"}, None, 0),
        ("get_forecast", {"city": "Paris"}, None, 0),
    ]
    assert [(c.result, c.error) for c in t.calls] == [
        ("Sunny, 18C", False),
        ("ERROR: forecast service unavailable", True),
    ]
    assert (t.turns, t.usage, t.answer) == (2, Usage(30, 45), "It is sunny and 18C in Paris.")


def test_elixir_empty_trajectory() -> None:
    """The empty to_map (``token_usage: null``) is an empty run with no usage."""
    t = read_trajectory({"messages": [], "tool_calls": [], "token_usage": None, "metadata": {}})
    assert (t.format, t.calls, t.turns, t.usage) == ("trajectory", (), 0, None)


def test_elixir_flat_calls_without_messages_are_a_turn_each() -> None:
    """With no messages, the flat ``tool_calls`` list gives one turn per call."""
    t = read_trajectory({"messages": [], "tool_calls": [{"name": "a", "arguments": None}, {"name": "b"}]})
    assert [(c.name, c.args, c.turn) for c in t.calls] == [("a", {}, 0), ("b", {}, 1)]
    assert t.turns == 2


def test_own_shape_written_by_hand() -> None:
    """Calls without ``turn`` are each their own turn; string args decode or stay raw; result blocks join."""
    t = load_trajectory(DATA / "sources" / "trajectory_own.yaml")
    assert [(c.name, c.args, c.turn) for c in t.calls] == [
        ("search", {"query": "weather in Paris"}, 0),
        ("get_forecast", {"city": "Paris", "days": 3}, 1),
        ("broken", '{"city": ', 2),
    ]
    assert [(c.result, c.has_result, c.error) for c in t.calls] == [
        (None, False, None), ("sunny, 18C", True, False), (None, False, None),
    ]  # fmt: skip
    assert (t.turns, t.usage, t.answer, t.nodes) == (3, None, "Sunny.", None)


def test_round_trip_keeps_raw_args_results_errors_usage_and_nodes() -> None:
    """A trajectory with every field set reads back from its to_dict() equal, field by field."""
    calls = (
        ToolCall("search", {"q": "x", "n": 1.5}, "c1", 0, 0, [{"type": "image"}], True, False),
        ToolCall("search", "not json", "c2", 0, 1, {"rows": [1, 2]}, True, True),
        ToolCall("book", {}, None, 2, 2),
        ToolCall("cancel", {}, "c4", 2, 3, None, True, None),
    )
    original = Trajectory(calls, 3, Usage(120, 30), "booked", (("agent", "tools"), ("agent",), ("agent",)), "langgraph")
    data = original.to_dict()
    assert [("has_result" in c, c["result"]) for c in data["tool_calls"][2:]] == [(False, None), (True, None)]
    again = read_trajectory(data)
    assert again == original
    assert (again.calls[1].args, again.calls[1].error, again.usage) == ("not json", True, Usage(120, 30))
    assert [c.has_result for c in again.calls[2:]] == [False, True]


def test_unknown_format_name_in_the_document_becomes_trajectory() -> None:
    """A ``format`` value naming no known format is not kept."""
    t = read_trajectory({"format": "mystery", "tool_calls": [{"name": "a", "args": {}}]})
    assert t.format == "trajectory"
