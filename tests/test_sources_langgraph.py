"""LangGraph reader: checkpoints, get_tuple dumps, state snapshots, legacy JSON checkpoints."""

from __future__ import annotations

from pathlib import Path

import pytest
from trajrun.sources import load_trajectory, read_trajectory
from trajrun.trajectory import Usage

SAMPLES = Path(__file__).parent / "data" / "samples" / "langgraph"


@pytest.mark.parametrize("name", ["checkpoint_tuple_deserialized.json", "get_state_messages_to_dict.json"])
def test_checkpoint_and_state_messages(name: str) -> None:
    """channel_values.messages and values.messages: parallel calls, ToolNode error status, usage."""
    t = load_trajectory(SAMPLES / name)
    assert t.format == "langgraph"
    assert [(c.name, c.args, c.id) for c in t.calls] == [
        ("get_weather", {"city": "Paris"}, "call_P"),
        ("get_weather", {"city": "Atlantis"}, "call_A"),
    ]
    assert [(c.result, c.error) for c in t.calls] == [
        ("Paris: 18C sunny", False),
        ("Error: ValueError('unknown city')\n Please fix your mistakes.", True),
    ]
    assert (t.turns, t.usage, t.answer) == (2, Usage(140, 32), "Paris is sunny; Atlantis is unknown.")


def test_legacy_json_checkpoint_with_lc_constructors() -> None:
    """langgraph-checkpoint 1.0 ``{type: json, payload}``: messages as ``lc`` constructor dicts."""
    t = load_trajectory(SAMPLES / "legacy_json_checkpoint_langgraph_checkpoint_1.0.0.json")
    assert [(c.name, c.args, c.result, c.error) for c in t.calls] == [
        ("get_weather", {"city": "Paris"}, "18C sunny", False)
    ]
    assert (t.turns, t.usage) == (1, Usage(50, 20))


def test_checkpoint_without_messages_is_an_empty_run() -> None:
    """A checkpoint whose channels hold no ``messages`` reads as an empty trajectory."""
    t = read_trajectory({"v": 4, "channel_values": {"__start__": {"question": "hi"}}, "channel_versions": {}})
    assert (t.format, t.calls, t.turns, t.usage) == ("langgraph", (), 0, None)


def test_state_with_openai_style_messages() -> None:
    """A thread state whose messages are plain ``{role, content}`` dicts still reads."""
    state = {"values": {"messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "ping", "arguments": "{}"}}]},
    ]}, "next": []}  # fmt: skip
    t = read_trajectory(state)
    assert (t.format, t.names, t.turns) == ("langgraph", ["ping"], 1)
