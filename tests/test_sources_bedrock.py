"""Bedrock Converse reader: toolUse/toolResult with status, whole responses, server tools."""

from __future__ import annotations

from pathlib import Path

from trajrun.sources import load_trajectory, read_trajectory
from trajrun.trajectory import Usage

DATA = Path(__file__).parent / "data"
CASSETTE = DATA / "samples" / "bedrock_converse" / "pydantic_ai_cassette_tooluse_error_result.json"


def test_request_history_with_error_status() -> None:
    """The second request's messages: one call whose toolResult has status error."""
    t = load_trajectory(CASSETTE, select="$.interactions[1].request_body")
    assert t.format == "bedrock"
    assert [(c.name, c.args, c.id) for c in t.calls] == [
        ("get_capital", {"country": "France"}, "tooluse_Ze_bgl9CSqu8aJv7XD-_Dw")
    ]
    assert t.calls[0].result == "The country is not supported.\n\nFix the errors and try again."
    assert t.calls[0].error is True
    assert (t.turns, t.usage) == (1, None)


def test_whole_converse_response() -> None:
    """A Converse response: ``output.message`` with the response usage and its text."""
    t = load_trajectory(CASSETTE, select="$.interactions[1].response_body")
    assert (t.calls, t.turns, t.usage) == ((), 1, Usage(531, 76))
    assert t.answer is not None and t.answer.endswith("feel free to ask!")


def test_response_with_a_call_has_no_result() -> None:
    """The first response asks for a call; no result is recorded for it."""
    t = load_trajectory(CASSETTE, select="$.interactions[0].response_body")
    assert (t.names, t.calls[0].has_result, t.calls[0].error, t.usage) == (["get_capital"], False, None, Usage(426, 66))


def test_server_tool_use_with_result_inside_the_assistant_message() -> None:
    """Nova's code interpreter: a server toolUse and its toolResult (a JSON block) in one assistant message."""
    t = load_trajectory(DATA / "sources" / "bedrock_server_tool_use_nova.json")
    assert [(c.name, c.args, c.turn) for c in t.calls] == [
        ("nova_code_interpreter", {"snippet": "print(7 * 6)"}, 0),
        ("get_day", {}, 0),
    ]
    assert [(c.result, c.error) for c in t.calls] == [({"stdOut": "42\n", "exitCode": 0}, False), ("Monday", False)]
    assert (t.turns, t.answer) == (2, "42, and it is Monday.")


def test_cache_tokens_count_as_input() -> None:
    """cacheReadInputTokens and cacheWriteInputTokens add to input tokens."""
    usage = {"inputTokens": 5, "outputTokens": 2, "cacheReadInputTokens": 100, "cacheWriteInputTokens": 20}
    doc = {"output": {"message": {"role": "assistant", "content": [{"text": "hi"}]}}, "usage": usage}
    assert read_trajectory(doc).usage == Usage(125, 2)
