"""Anthropic Messages reader: histories, whole Message responses, server and MCP tools, error flags."""

from __future__ import annotations

from pathlib import Path

import pytest
from trajrun.sources import load_trajectory, read_trajectory
from trajrun.trajectory import Usage

DATA = Path(__file__).parent / "data"
SDK = DATA / "samples" / "anthropic" / "sdk_message_model_dump.json"
FAMILY = [("retrieve_entity_info", {"name": n}) for n in ("Alice", "Bob", "Charlie", "Daisy")]


@pytest.mark.parametrize("select", ["$.message_model_dump", "$.message_model_dump_exclude_none"])
def test_whole_message_response(select: str) -> None:
    """A Message (with or without the SDK's null keys): four parallel calls in order, usage, text."""
    t = load_trajectory(SDK, select=select)
    assert t.format == "anthropic"
    assert [(c.name, c.args) for c in t.calls] == FAMILY
    assert [c.id for c in t.calls][:2] == ["toolu_0167cfEnoQaPviGdVXA95zcu", "toolu_01EEe2V5HD1Ac4rKiUR4HD2T"]
    assert {c.turn for c in t.calls} == {0}
    assert (t.turns, t.usage) == (1, Usage(423, 202))
    assert t.answer is not None and t.answer.startswith("I'll help you find out who is the youngest")


def test_saved_history_results_default_to_no_error() -> None:
    """tool_result blocks without ``is_error`` pair by id with error False."""
    t = load_trajectory(SDK, select="$.typical_saved_history")
    assert [(c.result, c.error) for c in t.calls] == [("ok", False)] * 4
    assert (t.turns, t.usage) == (1, None)


def test_server_and_mcp_tools_are_calls() -> None:
    """server_tool_use and mcp_tool_use are calls; an ``*_error`` server result and is_error flag failures."""
    t = load_trajectory(DATA / "sources" / "anthropic_server_tools.json")
    assert [(c.name, c.args, c.error) for c in t.calls] == [
        ("web_search", {"query": "trajrun release"}, True),
        ("get_ticket", {"key": "TR-1"}, False),
    ]
    assert t.calls[1].result == "TR-1: open"
    assert (t.turns, t.answer) == (2, "Search failed; TR-1 is open.")


def test_is_error_true_and_cache_tokens_count_as_input() -> None:
    """is_error true flags the call; cache writes and reads are part of input tokens."""
    doc = [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "run", "input": {}}],
         "usage": {"input_tokens": 10, "cache_creation_input_tokens": 5, "cache_read_input_tokens": 7,
                   "output_tokens": 3}},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "is_error": True,
                                      "content": [{"type": "text", "text": "boom"}]}]},
    ]  # fmt: skip
    t = read_trajectory(doc)
    assert (t.calls[0].result, t.calls[0].error) == ("boom", True)
    assert t.usage == Usage(22, 3)


def test_text_only_history_read_explicitly() -> None:
    """With ``format: anthropic`` a history of plain strings is read (no tool block needed)."""
    t = read_trajectory([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}], "anthropic")
    assert (t.format, t.turns, t.answer, t.calls) == ("anthropic", 1, "hello", ())
