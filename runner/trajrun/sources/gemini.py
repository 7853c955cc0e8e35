"""Gemini ``contents``/``parts`` (camelCase and snake_case) and Google ADK sessions, event lists and eval sets.

Everything is first flattened to ``(content, usage)`` pairs in history order, then read one way:
a ``model`` content is a turn, ``functionCall`` parts are calls, ``functionResponse`` parts results.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..trajectory import Trajectory, Usage
from .builder import Builder, NotThisFormat, make_usage

FORMAT = "gemini"
_INPUTS = ("promptTokenCount", "toolUsePromptTokenCount", "prompt_token_count", "tool_use_prompt_token_count")
_OUTPUTS = ("candidatesTokenCount", "thoughtsTokenCount", "candidates_token_count", "thoughts_token_count")
_Entry = tuple[dict[str, Any], Any]


def read(doc: Any, *, auto: bool = False, details: bool = True) -> Trajectory:
    """Read a Gemini or ADK document; detection (``auto``) needs at least one content."""
    entries = list(_entries(doc))
    if auto and not entries:
        raise NotThisFormat("no contents with 'parts'")
    builder = Builder(details)
    for content, usage in entries:
        _content(builder, content, usage)
    return builder.finish(FORMAT)


def refuses_list(items: list[Any]) -> bool:
    """Whether ``read(items, auto=True)`` surely refuses a list: empty, or item 0 neither a content nor an event.
    Detection skips the reader when True."""
    if not items:
        return True
    head = items[0]
    if not isinstance(head, dict):
        return True
    content = head.get("content")
    event = isinstance(content, dict) and isinstance(content.get("parts"), list)
    return not (isinstance(head.get("parts"), list) or event or "author" in head)


def _entries(doc: Any) -> Iterator[_Entry]:
    """The ``(content, raw usage)`` pairs of any supported Gemini or ADK shape."""
    if isinstance(doc, list):
        return _items(doc)
    if not isinstance(doc, dict):
        raise NotThisFormat("not a list or a mapping")
    for key in ("contents", "events"):
        if isinstance(doc.get(key), list):
            return _items(doc[key])
    if isinstance(doc.get("candidates"), list):
        return _response(doc)
    cases = _get(doc, "eval_cases", "evalCases")
    if isinstance(cases, list):
        if len(cases) != 1:
            raise NotThisFormat(f"an eval set with {len(cases)} cases; select one case")
        return _conversation(cases[0].get("conversation") if isinstance(cases[0], dict) else None)
    if isinstance(doc.get("conversation"), list):
        return _conversation(doc["conversation"])
    if isinstance(doc.get("parts"), list) or isinstance(doc.get("content"), dict):
        return _items([doc])
    raise NotThisFormat("no 'contents', 'events', 'candidates' or 'parts'")


def _items(items: list[Any]) -> Iterator[_Entry]:
    """Contents (``{role, parts}``) or ADK events (``{author, content, usageMetadata}``) in order."""
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise NotThisFormat(f"item {i} is not a mapping")
        if isinstance(item.get("parts"), list):
            yield item, None
        elif isinstance(item.get("content"), dict) and isinstance(item["content"].get("parts"), list):
            yield item["content"], _get(item, "usageMetadata", "usage_metadata")
        elif "author" not in item:
            raise NotThisFormat(f"item {i} has neither 'parts' nor an event 'content'")


def _response(doc: dict[str, Any]) -> Iterator[_Entry]:
    """A whole ``generateContent`` response: the first candidate's content with the response usage."""
    candidates = doc["candidates"]
    content = candidates[0].get("content") if candidates and isinstance(candidates[0], dict) else None
    if not isinstance(content, dict):
        raise NotThisFormat("'candidates' has no first candidate with a 'content'")
    yield content, _get(doc, "usageMetadata", "usage_metadata")


def _conversation(invocations: Any) -> Iterator[_Entry]:
    """An ADK eval case's invocations: user content, intermediate events or tool uses, final response."""
    if not isinstance(invocations, list):
        raise NotThisFormat("an eval case without a 'conversation' list")
    for inv in invocations:
        user = _get(inv, "userContent", "user_content")
        if isinstance(user, dict):
            yield user, None
        data = _get(inv, "intermediateData", "intermediate_data") or {}
        pending = yield from _intermediate(data)
        final = _get(inv, "finalResponse", "final_response")
        if isinstance(final, dict):
            yield final, pending


def _intermediate(data: dict[str, Any]) -> Iterator[_Entry]:
    """Intermediate events (new shape) or legacy ``tool_uses``; returns usage left for the final response."""
    pending = None
    for event in _list(data, "invocationEvents", "invocation_events"):
        if not isinstance(event, dict):
            raise NotThisFormat("an invocation event is not a mapping")
        usage = _get(event, "usageMetadata", "usage_metadata")
        if isinstance(event.get("content"), dict):
            yield event["content"], usage
        elif usage is not None:
            pending = usage
    uses = _list(data, "toolUses", "tool_uses")
    if uses:
        yield {"role": "model", "parts": [{"functionCall": use} for use in uses]}, None
    responses = _list(data, "toolResponses", "tool_responses")
    if responses:
        yield {"role": "user", "parts": [{"functionResponse": r} for r in responses]}, None
    return pending


def _content(builder: Builder, content: dict[str, Any], raw_usage: Any) -> None:
    """Read one content: a ``model`` one is a turn; its call parts are calls, response parts results."""
    parts = content.get("parts") or ()
    if any(not isinstance(part, dict) for part in parts):
        raise NotThisFormat("a content has a part that is not a mapping")
    if content.get("role") == "model":
        text = "".join(p["text"] for p in parts if isinstance(p.get("text"), str) and not p.get("thought"))
        builder.turn(text, _usage(raw_usage))
    for part in parts:
        call = _get(part, "functionCall", "function_call")
        if call is not None:
            _check_mapping(call, "functionCall")
            builder.call(call.get("name"), call.get("args"), call.get("id"))
            continue
        response = _get(part, "functionResponse", "function_response")
        if response is not None:
            _check_mapping(response, "functionResponse")
            builder.result(response.get("response"), response.get("id"), response.get("name"))


def _check_mapping(value: Any, what: str) -> None:
    """A ``functionCall`` or ``functionResponse`` is a mapping; anything else is not Gemini."""
    if not isinstance(value, dict):
        raise NotThisFormat(f"a part has a {what} that is not a mapping")


def _usage(raw: Any) -> Usage | None:
    """``usageMetadata`` in either spelling: input counts tool-use prompts, output counts thoughts."""
    return make_usage(raw, _INPUTS, _OUTPUTS)


def _list(mapping: Any, camel: str, snake: str) -> list[Any]:
    """A list field under either spelling (empty when missing or empty); any other value is not Gemini."""
    value = _get(mapping, camel, snake) or []
    if not isinstance(value, list):
        raise NotThisFormat(f"intermediate data has '{camel}' that is not a list")
    return value


def _get(mapping: Any, camel: str, snake: str) -> Any:
    """A field under its camelCase or snake_case name."""
    if not isinstance(mapping, dict):
        return None
    value = mapping.get(camel)
    return mapping.get(snake) if value is None else value
