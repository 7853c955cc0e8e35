"""OpenAI Chat Completions reader: histories, whole completions, legacy function calls, argument encodings."""

from __future__ import annotations

from pathlib import Path

import pytest
from trajrun.errors import SourceError
from trajrun.sources import load_trajectory, read_trajectory
from trajrun.trajectory import Usage

DATA = Path(__file__).parent / "data"
RETRY = DATA / "samples" / "openai_chat" / "pydantic_ai_cassette_tool_retry.json"
SDK = DATA / "samples" / "openai_chat" / "sdk_chat_completion_model_dump.json"
GEMINI_THEN_OPENAI = DATA / "samples" / "gemini" / "pydantic_ai_cassette_gemini2_then_openai.json"


def test_history_from_cassette_request_pairs_results_by_id() -> None:
    """The retry cassette's last request: two sequential calls, each paired with its tool message."""
    t = load_trajectory(RETRY, select="$.interactions[2].request_body")
    assert t.format == "openai"
    assert [(c.name, c.args, c.id, c.turn) for c in t.calls] == [
        ("get_weather_in_city", {"city": "CDMX"}, "call_fFAB8MNL3tUdfNIIdsIJTo0H", 0),
        ("get_weather_in_city", {"city": "Mexico City"}, "call_hLYHO5lK5lmiukTZv6VQzz3x", 1),
    ]
    assert [c.result for c in t.calls] == ["Did you mean Mexico City?\n\nFix the errors and try again.", "sunny"]
    assert [c.error for c in t.calls] == [None, None]
    assert (t.turns, t.usage, t.answer) == (2, None, None)


def test_whole_completion_reads_choice_message_and_usage() -> None:
    """A completion response is one assistant turn with the response's usage."""
    t = load_trajectory(RETRY, select="$.interactions[2].response_body")
    assert (t.calls, t.turns) == ((), 1)
    assert t.usage == Usage(116, 10)
    assert t.answer == "The weather in Mexico City is currently sunny."


def test_parallel_calls_keep_their_order() -> None:
    """Two tool_calls on one message stay in order, both in turn 0, with the completion usage."""
    t = load_trajectory(SDK, select="$.completion_model_dump_json")
    assert [(c.name, c.args, c.turn, c.position) for c in t.calls] == [
        ("delete_file", {"path": ".env"}, 0, 0),
        ("create_file", {"path": "test.txt"}, 0, 1),
    ]
    assert t.usage == Usage(71, 46)


def test_null_function_call_is_not_a_call() -> None:
    """model_dump() writes ``function_call: null``; it must not add a legacy call."""
    t = load_trajectory(SDK, select="$.message_model_dump")
    assert t.names == ["delete_file", "create_file"]


def test_single_message_without_content_is_a_one_message_history() -> None:
    """model_dump(exclude_none=True) drops ``content``; the message still reads as one turn."""
    t = load_trajectory(SDK, select="$.message_model_dump_exclude_none")
    assert (t.turns, t.names) == (1, ["delete_file", "create_file"])


def test_saved_history_results() -> None:
    """The typical saved history pairs both ``ok`` results by tool_call_id."""
    t = load_trajectory(SDK, select="$.typical_saved_history")
    assert [(c.id, c.result, c.has_result) for c in t.calls] == [
        ("call_jYdIdRZHxZTn5bWCq5jlMrJi", "ok", True),
        ("call_TmlTVWQbzrXCZ4jNsCVNbNqu", "ok", True),
    ]


def test_history_with_synthesized_ids_and_text_turns() -> None:
    """A history re-sent to OpenAI after Gemini: text-only assistant messages count as turns and answer."""
    t = load_trajectory(GEMINI_THEN_OPENAI, select="$.interactions[3].request_body")
    assert [(c.args, c.id, c.turn, c.result) for c in t.calls] == [
        ({"country": "France"}, "pyd_ai_504f8147f83f44f3a5f14d87bfd01bda", 0, "Paris"),
        ({"country": "England"}, "call_SkEQ3ZGSJC8m6AvaIGNuuKdm", 2, "London"),
    ]
    assert (t.turns, t.answer) == (3, "The capital of France is Paris.\n")


def test_legacy_function_call_pairs_by_order_and_name() -> None:
    """gpt-4-0613 ``function_call`` + role=function: no ids, results paired by order and name."""
    t = load_trajectory(DATA / "sources" / "openai_legacy_function_call.json")
    assert [(c.args, c.id, c.turn) for c in t.calls] == [
        ({"location": "Boston, MA"}, None, 0),
        ({"location": "Boston, MA", "unit": "fahrenheit"}, None, 1),
    ]
    assert [c.result for c in t.calls] == [
        '{"temperature": "22", "unit": "celsius", "description": "Sunny"}',
        '{"temperature": "72"}',
    ]
    assert (t.turns, t.answer) == (3, "It is sunny in Boston, 22 degrees Celsius.")


def test_argument_encodings_and_custom_calls() -> None:
    """Dict args as is, "" and "{}" as {}, invalid JSON and JSON lists raw, custom input raw."""
    t = load_trajectory(DATA / "sources" / "openai_argument_encodings.json")
    assert [(c.name, c.args) for c in t.calls] == [
        ("weather", {"city": "Moscow"}),
        ("now", {}),
        ("now", {}),
        ("search", '{"q": "paris'),
        ("batch", "[1, 2]"),
        ("apply_patch", "*** Begin Patch\n*** End Patch"),
    ]


def test_results_out_of_order_pair_by_id_and_text_parts_join() -> None:
    """Results arriving in another order still pair by id; text parts join with no separator."""
    t = load_trajectory(DATA / "sources" / "openai_argument_encodings.json")
    results = {c.id: c.result for c in t.calls if c.has_result}
    assert results == {"call_dict": "-3C", "call_custom": "patch applied"}


def test_empty_list_is_an_empty_trajectory() -> None:
    """``[]`` reads as a run with no calls, no turns and no usage."""
    t = read_trajectory([])
    assert (t.calls, t.turns, t.usage, t.answer, t.format) == ((), 0, None, None, "openai")


def test_malformed_tool_calls_are_a_clear_source_error() -> None:
    """``tool_calls`` that is not a list, or holds a non-mapping, names the message instead of crashing."""
    for calls, reason in ((5, "item 0 has 'tool_calls' that is not a list"), ([7], "a 'tool_calls' entry is not a mapping")):
        with pytest.raises(SourceError, match=reason):
            read_trajectory([{"role": "assistant", "content": "", "tool_calls": calls}], "openai")


def test_mapping_subclasses_and_tuples_from_python_sources_read() -> None:
    """A live Python source may hand back OrderedDicts and tuples; they read like dicts and lists."""
    from collections import OrderedDict

    call = OrderedDict(id="a", type="function", function=OrderedDict(name="search", arguments='{"q": "x"}'))
    messages = [OrderedDict(role="assistant", content="", tool_calls=(call,)), OrderedDict(role="tool", tool_call_id="a", content="r")]
    t = read_trajectory(messages)
    assert (t.format, [(c.name, c.args, c.result) for c in t.calls]) == ("openai", [("search", {"q": "x"}, "r")])
