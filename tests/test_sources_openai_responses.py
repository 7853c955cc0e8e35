"""OpenAI Responses API reader: items, call_id pairing, assistant-side runs as turns, built-in calls."""

from __future__ import annotations

from pathlib import Path

from trajrun.sources import load_trajectory, read_trajectory
from trajrun.trajectory import Usage

DATA = Path(__file__).parent / "data"
SDK = DATA / "samples" / "openai_responses" / "sdk_responses_model_dump.json"


def test_input_list_pairs_outputs_by_call_id() -> None:
    """The replayed input list: two parallel function calls in one turn, each with its output."""
    t = load_trajectory(SDK, select="$.typical_input_list")
    assert t.format == "openai-responses"
    assert [(c.name, c.args, c.id, c.turn) for c in t.calls] == [
        ("get_location", {"loc_name": "Londos"}, "call_LWVp74L5HaH2KNvgVz9PJsrj", 0),
        ("get_location", {"loc_name": "London"}, "call_YnRAWeTyxI91m5uNa5bxXwVO", 0),
    ]
    assert [c.result for c in t.calls] == ['{"lat": 51, "lng": 0}', '{"lat": 51, "lng": 0}']
    assert [c.error for c in t.calls] == [None, None]
    assert (t.turns, t.usage) == (1, None)


def test_output_items_with_sdk_extra_keys() -> None:
    """model_dump() output items (async_, caller, namespace) read as calls without results."""
    t = load_trajectory(SDK, select="$.response_output_model_dump")
    assert t.names == ["get_location", "get_location"]
    assert not t.records_results


def test_whole_response_usage_of_zero_is_usage() -> None:
    """A response reporting all-zero usage has usage 0/0, not "no usage"."""
    t = load_trajectory(DATA / "sources" / "openai_responses_response.json")
    assert t.usage == Usage(0, 0)
    assert t.turns == 1


def test_builtin_calls_and_turn_runs() -> None:
    """Built-in ``*_call`` items are calls; a run of assistant-side items is one turn."""
    t = load_trajectory(DATA / "sources" / "openai_responses_builtin_calls.json")
    assert [(c.name, c.args, c.id, c.turn) for c in t.calls] == [
        ("web_search", {"type": "search", "query": "trajrun"}, "ws_1", 0),
        ("read_doc", {"page": 2}, "mcp_1", 0),
        ("apply_patch", "*** Begin Patch", "call_patch", 0),
        ("get_weather", {"city": "Paris"}, "call_w", 1),
    ]
    assert [c.result for c in t.calls] == [None, "page two", "done", "sunny"]
    assert (t.turns, t.answer) == (3, "All done: sunny.")


def test_request_body_input_is_read() -> None:
    """A request body ``{model, input: [...]}`` reads its input items."""
    items = [
        {"role": "user", "content": "hi"},
        {"type": "function_call", "call_id": "c1", "name": "ping", "arguments": "{}"},
    ]
    t = read_trajectory({"model": "gpt-4o", "input": items})
    assert (t.format, t.names, t.calls[0].args) == ("openai-responses", ["ping"], {})


def test_easy_messages_alone_are_not_detected_as_responses() -> None:
    """A list of only ``{role, content}`` messages has no typed item: it reads as openai."""
    t = read_trajectory([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}])
    assert (t.format, t.turns, t.answer) == ("openai", 1, "hello")
