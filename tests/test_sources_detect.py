"""Format detection and explicit formats: order, the ``messages`` mapping rule, and the error messages."""

from __future__ import annotations

from pathlib import Path

import pytest
from trajrun.errors import SourceError
from trajrun.sources import load_trajectory, read_trajectory

SAMPLES = Path(__file__).parent / "data" / "samples"


def _error(doc: object, fmt: str = "auto") -> str:
    """The SourceError text read_trajectory raises."""
    with pytest.raises(SourceError) as info:
        read_trajectory(doc, fmt, origin="run.json")
    return str(info.value)


def test_undetectable_document_lists_every_format_tried() -> None:
    """A LangGraph state-history summary is no run: each format says why it does not fit."""
    path = SAMPLES / "langgraph" / "get_state_history_summary.json"
    with pytest.raises(SourceError) as info:
        load_trajectory(path)
    assert str(info.value) == (
        f"{path}: cannot tell the format of a list of 5 items; tried:\n"
        "  otel: item 0 is neither an OTLP document nor a span\n"
        "  graph: no 'steps' list of node-name lists\n"
        "  langgraph: not a mapping\n"
        "  trajectory: no top-level 'tool_calls' list\n"
        "  anthropic: message 0 has role None, expected 'user' or 'assistant'\n"
        "  gemini: item 0 has neither 'parts' nor an event 'content'\n"
        "  bedrock: message 0 is not a {role: user|assistant, content: [blocks]} message\n"
        "  openai-responses: no typed items (function_call, message, …)\n"
        "  langchain: item 0 is not a LangChain message (type None)\n"
        "  openai: item 0 has no 'role'\n"
        "name the format with 'format:', or point 'select:' at the message list"
    )


def test_undetectable_scalar() -> None:
    """A bare string is described as such."""
    assert _error("hello").startswith("run.json: cannot tell the format of a string ('hello'); tried:\n  otel: ")


def test_unknown_format_suggests_the_nearest() -> None:
    """A misspelt format name gets a did-you-mean."""
    assert _error([], "opnai") == "run.json: unknown format 'opnai'; did you mean 'openai'?"


def test_unknown_format_without_a_near_name_lists_all() -> None:
    """With nothing close, the message lists every format."""
    assert _error([], "xyz") == (
        "run.json: unknown format 'xyz'; use one of: auto, otel, graph, langgraph, trajectory, anthropic, gemini, "
        "bedrock, openai-responses, langchain, openai"
    )


def test_explicit_format_that_does_not_fit() -> None:
    """An explicit format the document does not fit says what was found and why."""
    assert _error([{"role": "user", "content": "hi"}], "langchain") == (
        "run.json: expected a langchain document, found a list of 1 item: item 0 is not a LangChain message "
        "(type None); check the format, or use format: auto"
    )


def test_mapping_with_messages_is_read_as_that_list() -> None:
    """A request body ``{model, messages}`` reads as its messages, auto or explicit."""
    body = {"model": "gpt-4o", "messages": [
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ping", "arguments": "{}"}}]},
    ]}  # fmt: skip
    assert read_trajectory(body).names == ["ping"]
    assert read_trajectory(body, "openai").names == ["ping"]


def test_trajectory_is_tried_before_the_messages_rule() -> None:
    """The Elixir shape has ``messages`` too but is read as a trajectory, with its token usage."""
    usage = {"input": 1, "output": 2}
    doc = {"messages": [{"role": "assistant", "content": "hi"}], "tool_calls": [], "token_usage": usage}
    t = read_trajectory(doc)
    assert (t.format, t.usage is not None, t.answer) == ("trajectory", True, "hi")


def test_single_message_is_a_one_message_history() -> None:
    """One assistant message object reads as a one-turn run."""
    t = read_trajectory({"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "go", "input": {}}]})
    assert (t.format, t.turns, t.names) == ("anthropic", 1, ["go"])


def test_message_dict_with_tool_calls_is_no_trajectory() -> None:
    """A flat LangChain AI message has ``tool_calls`` too, yet reads as langchain, not trajectory."""
    calls = [{"name": "go", "args": {"x": 1}, "id": "c", "type": "tool_call"}]
    msg = {"type": "ai", "content": "", "tool_calls": calls}
    t = read_trajectory(msg)
    assert (t.format, t.calls[0].args) == ("langchain", {"x": 1})


def test_chat_list_with_a_broken_call_names_why_responses_does_not_fit() -> None:
    """Responses detection stops at the first Chat Completions message instead of scanning for a typed item."""
    chat = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "a", "function": {"name": 3, "arguments": "{}"}}]},
    ]
    assert "  openai-responses: item 1 is a Chat Completions message ('tool_calls' or role 'tool')\n" in _error(chat)
    assert "  openai: tool call 0 has no string name\n" in _error(chat)
