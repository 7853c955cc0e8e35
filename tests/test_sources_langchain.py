"""LangChain reader: messages_to_dict, dumpd and model_dump, every place an AI message keeps calls."""

from __future__ import annotations

from pathlib import Path

import pytest
from trajrun.sources import load_trajectory, read_trajectory
from trajrun.trajectory import Usage

DATA = Path(__file__).parent / "data"
SAMPLES = DATA / "samples" / "langchain"


@pytest.mark.parametrize("name", ["messages_to_dict.json", "dumpd_lc_serialization.json", "model_dump.json"])
def test_three_serialisations_read_alike(name: str) -> None:
    """Parallel calls, the invalid call with raw args, results, error status, per-message usage."""
    t = load_trajectory(SAMPLES / name)
    assert t.format == "langchain"
    assert [(c.name, c.args, c.id, c.turn) for c in t.calls] == [
        ("get_weather", {"city": "Paris"}, "call_AAA", 0),
        ("get_weather", {"city": "Berlin"}, "call_BBB", 0),
        ("get_time", '{"tz": ', "call_CCC", 0),
    ]
    assert [(c.result, c.error) for c in t.calls] == [("18C sunny", False), ("Error: timeout", True), (None, None)]
    assert (t.turns, t.usage, t.answer) == (2, Usage(212, 55), "Paris is 18C and sunny; Berlin lookup failed.")


def test_content_blocks_and_legacy_function_call() -> None:
    """tool_use blocks de-duplicate against tool_calls; v1 tool_call blocks and function_call are calls."""
    t = load_trajectory(DATA / "sources" / "langchain_content_blocks.json")
    assert [(c.name, c.args, c.id, c.turn) for c in t.calls] == [
        ("get_weather", {"city": "Paris"}, "toolu_01A", 0),
        ("get_time", {"tz": "CET"}, "call_T", 1),
        ("get_date", {"fmt": "iso"}, None, 2),
    ]
    assert [(c.result, c.error) for c in t.calls] == [("18C", False), (None, None), ("2026-11-30", None)]
    assert (t.turns, t.answer) == (4, "It is 18C at 10:00 on 2026-11-30.")


def test_a_turn_without_usage_metadata_leaves_usage_unknown() -> None:
    """Some AI messages lack usage_metadata, so the run's usage is None (a token budget cannot be checked)."""
    assert load_trajectory(DATA / "sources" / "langchain_content_blocks.json").usage is None


def test_old_message_with_only_additional_kwargs_tool_calls() -> None:
    """A pre-0.1 AI message holding only ``additional_kwargs.tool_calls`` still yields its calls."""
    doc = {"type": "ai", "data": {"content": "", "additional_kwargs": {"tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": "{\"k\": 1}"}}]}}}
    t = read_trajectory(doc)
    assert (t.format, [(c.name, c.args, c.id) for c in t.calls]) == ("langchain", [("lookup", {"k": 1}, "call_1")])
