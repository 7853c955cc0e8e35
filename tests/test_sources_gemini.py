"""Gemini and Google ADK reader: contents/parts in both spellings, responses, sessions, events, eval sets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from trajrun.errors import SourceError
from trajrun.sources import load_document, load_trajectory, read_trajectory
from trajrun.trajectory import Usage

DATA = Path(__file__).parent / "data"
CASSETTE = DATA / "samples" / "gemini" / "pydantic_ai_cassette_gemini2_then_openai.json"
SDK = DATA / "samples" / "gemini" / "sdk_google_genai_content_dump.json"
ADK = DATA / "samples" / "google_adk"


def test_calls_without_ids_pair_by_order_and_name() -> None:
    """gemini-2.0 sends no functionCall id: the functionResponse pairs by name; response kept as an object."""
    t = load_trajectory(CASSETTE, select="$.interactions[1].request_body")
    assert t.format == "gemini"
    assert [(c.name, c.args, c.id) for c in t.calls] == [("get_capital", {"country": "France"}, None)]
    assert (t.calls[0].result, t.calls[0].error) == ({"return_value": "Paris"}, None)
    assert (t.turns, t.usage) == (1, None)


def test_generate_content_response_usage() -> None:
    """A whole generateContent response: the first candidate's content, usageMetadata as usage."""
    t = load_trajectory(CASSETTE, select="$.interactions[1].response_body")
    assert (t.turns, t.usage, t.answer) == (1, Usage(35, 8), "The capital of France is Paris.\n")


@pytest.mark.parametrize("select", ["$.content_model_dump_json_mode_exclude_none", "$.content_model_dump_by_alias"])
def test_snake_and_camel_case_contents_read_alike(select: str) -> None:
    """``function_call`` (model_dump) and ``functionCall`` (by_alias) give the same call with its id."""
    t = load_trajectory(SDK, select=select)
    assert [(c.name, c.args, c.id) for c in t.calls] == [
        ("search_tools", {"queries": ["exchange rate", "currency conversion"]}, "yot5i3fn")
    ]


def test_snake_case_usage_counts_thoughts_as_output() -> None:
    """usage_metadata in snake_case: output is candidates plus thoughts."""
    dump = load_document(SDK)
    response = {"candidates": [{"content": dump["content_model_dump_json_mode_exclude_none"]}],
                "usage_metadata": dump["usage_metadata"]}  # fmt: skip
    assert read_trajectory(response).usage == Usage(220, 66)


ADK_CALLS = [
    ("get_weather", {"city": "Paris"}, {"status": "success", "report": "Paris: 18C sunny"}),
    ("get_weather", {"city": "Atlantis"}, {"status": "error", "error_message": "unknown city"}),
]


@pytest.mark.parametrize(
    ("name", "select"),
    [
        ("events_snake_case.json", None),
        ("events_snake_case.json", "$.events"),
        ("session_by_alias_camelCase.json", "$.session"),
        ("generated.evalset.json", "$.evalset"),
    ],
)
def test_adk_session_events_and_evalset(name: str, select: str | None) -> None:
    """ADK sessions, event lists and generated eval sets: two parallel calls, results, two turns, usage."""
    t = load_trajectory(ADK / name, select=select)
    assert t.format == "gemini"
    assert [(c.name, c.args, c.result) for c in t.calls] == ADK_CALLS
    assert {c.turn for c in t.calls} == {0}
    assert [c.id is not None and c.id.startswith("adk-") for c in t.calls] == [True, True]
    assert (t.turns, t.usage, t.answer) == (2, Usage(120, 21), "Paris is sunny; Atlantis unknown.")


def test_legacy_evalset_tool_uses() -> None:
    """A 2025 eval set with ``intermediate_data.tool_uses``: the calls, then the final response turn."""
    t = load_trajectory(DATA / "sources" / "adk_legacy_tool_uses.evalset.json")
    assert [(c.name, c.args) for c in t.calls] == [
        ("set_device_info", {"location": "Bedroom", "device_id": "device_2", "status": "OFF"})
    ]
    assert (t.turns, t.usage, t.answer) == (2, None, "I have set the device_2 status to off.")


def test_evalset_with_several_cases_asks_for_a_select() -> None:
    """An eval set holding two cases cannot be one run: the error says to select one."""
    evalset = load_document(ADK / "generated.evalset.json", select="$.evalset")
    evalset["eval_cases"] = evalset["eval_cases"] * 2
    with pytest.raises(SourceError) as info:
        read_trajectory(json.loads(json.dumps(evalset)), "gemini", origin="sets.json")
    assert str(info.value) == (
        "sets.json: expected a gemini document, found a mapping with keys eval_set_id, eval_cases, "
        "creation_timestamp: an eval set with 2 cases; select one case (the first is at eval_cases[0]); check the "
        "format, or use format: auto"
    )
