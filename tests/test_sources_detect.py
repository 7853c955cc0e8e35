"""Format detection and explicit formats: order, the ``messages`` mapping rule, and the error messages."""

from __future__ import annotations

from pathlib import Path

import pytest
from trajrun.errors import SourceError
from trajrun.sources import FORMATS, load_trajectory, read_trajectory

SAMPLES = Path(__file__).parent / "data" / "samples"


def _error(doc: object, fmt: str = "auto") -> str:
    """The SourceError text read_trajectory raises."""
    with pytest.raises(SourceError) as info:
        read_trajectory(doc, fmt, origin="run.json")
    return str(info.value)


def _source_error(doc: object, fmt: str = "auto") -> SourceError:
    """The SourceError read_trajectory raises."""
    with pytest.raises(SourceError) as info:
        read_trajectory(doc, fmt, origin="run.json")
    return info.value


def test_undetectable_document_is_one_line_and_keeps_every_reason() -> None:
    """A LangGraph state-history summary is no run: one line names the fixes, each format's reason is on the error."""
    path = SAMPLES / "langgraph" / "get_state_history_summary.json"
    with pytest.raises(SourceError) as info:
        load_trajectory(path)
    assert str(info.value) == (
        f"{path}: cannot tell the format of a list of 5 items: none of {', '.join(FORMATS)} fits; name the format "
        "with 'format:', or point 'select:' "
        f"at the message list (run `trajrun show {path} -v` to see why each format does not fit)"
    )
    assert [reason.split(":")[0] for reason in info.value.reasons] == list(FORMATS)
    expected = (
        "otel: item 0 is neither an OTLP document nor a span",
        "graph: no 'steps' list of node-name lists",
        "langgraph: not a mapping",
        "trajectory: no top-level 'tool_calls' list",
        "anthropic: message 0 has role None, expected 'user' or 'assistant'",
        "gemini: item 0 has neither 'parts' nor an event 'content'",
        "bedrock: message 0 is not a {role: user|assistant, content: [blocks]} message",
        "openai-responses: no typed items (function_call, message, …)",
        "langchain: item 0 is not a LangChain message (type None)",
        "openai: item 0 has no 'role'",
    )
    assert tuple(reason for reason in info.value.reasons if reason in expected) == expected


def test_undetectable_scalar() -> None:
    """A bare string is described as such; a document not read from a file says to save it to see the reasons."""
    error = _source_error("hello")
    assert str(error).startswith("run.json: cannot tell the format of a string ('hello'): none of otel, ")
    assert str(error).endswith("(save the document to a file and run `trajrun show FILE -v` to see why each format "
                               "does not fit)")  # fmt: skip
    assert "\n" not in str(error) and len(error.reasons) == 10


def test_undetectable_jsonl_read_whole_says_to_pick_a_record(tmp_path: Path) -> None:
    """A .jsonl file without ``record`` is the list of its lines: the message says so and how to pick one run."""
    path = tmp_path / "runs.jsonl"
    path.write_text('{"run": 1}\n{"run": 2}\n', encoding="utf-8")
    with pytest.raises(SourceError) as info:
        load_trajectory(path)
    assert "fits; a .jsonl file is read as the list of its lines; pick one run with record: N, name the format" in str(
        info.value)  # fmt: skip
    with pytest.raises(SourceError) as info:
        load_trajectory(path, record=2)
    assert "a .jsonl file" not in str(info.value)
    assert f"(run `trajrun show {path} --record 2 -v` to see why" in str(info.value)


def test_unknown_format_suggests_the_nearest() -> None:
    """A misspelt format name gets a did-you-mean."""
    assert _error([], "opnai") == "run.json: unknown format 'opnai'; did you mean 'openai'?"


def test_unknown_format_without_a_near_name_lists_all() -> None:
    """With nothing close, the message lists every format."""
    assert _error([], "xyz") == f"run.json: unknown format 'xyz'; use one of: auto, {', '.join(FORMATS)}"


def test_explicit_format_that_does_not_fit() -> None:
    """An explicit format the document does not fit says what was found and why."""
    assert _error([{"role": "user", "content": "hi"}], "langchain") == (
        "run.json: expected a langchain document, found a list of 1 item: item 0 is not a LangChain message "
        "(type None); check the format, or use format: auto"
    )


@pytest.mark.parametrize(("fmt", "article"), [
    ("anthropic", "an"), ("openai", "an"), ("openai-responses", "an"), ("otel", "an"), ("gemini", "a"),
    ("langchain", "a"), ("trajectory", "a"), ("bedrock", "a"),
])  # fmt: skip
def test_explicit_format_takes_the_right_article(fmt: str, article: str) -> None:
    """``an anthropic document``, ``a gemini document``: the article fits the format's name."""
    assert _error("hello", fmt).startswith(f"run.json: expected {article} {fmt} document, found a string")


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
    reasons = _source_error(chat).reasons
    assert "openai-responses: item 1 is a Chat Completions message ('tool_calls' or role 'tool')" in reasons
    assert "openai: tool call 0 has no string name" in reasons
