"""Gemini ``contents``/``parts`` (camelCase and snake_case) and Google ADK sessions, event lists and
eval sets.

Everything is first flattened to ``(content, usage)`` pairs in history order, then read one way: a
``model`` content is a turn, ``functionCall`` parts are calls, ``functionResponse`` parts results.
ADK's two older eval-set layouts are first put in the ``EvalSet`` shape (:func:`legacy_cases`),
which the ADK importer shares.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from typing import Any

from ...trajectory import Trajectory, Usage
from ..builder import Builder, NotThisFormat, make_usage

FORMAT = "gemini"
READS = "messages"
RANK = 60
_INPUTS = (
    "promptTokenCount",
    "toolUsePromptTokenCount",
    "prompt_token_count",
    "tool_use_prompt_token_count",
)
_OUTPUTS = (
    "candidatesTokenCount",
    "thoughtsTokenCount",
    "candidates_token_count",
    "thoughts_token_count",
)
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


def refuses(items: Any) -> bool:
    """Whether ``read(items, auto=True)`` surely refuses a list: empty, or item 0 neither a content
    nor an event. False for anything but a list: it cannot tell cheaply."""
    if not isinstance(items, list):
        return False
    if not items:
        return True
    head = items[0]
    if not isinstance(head, dict):
        return True
    content = head.get("content")
    event = isinstance(content, dict) and isinstance(content.get("parts"), list)
    legacy = "query" in head or isinstance(head.get("data"), list)
    return not (isinstance(head.get("parts"), list) or event or "author" in head or legacy)


def legacy_cases(doc: Any) -> list[dict[str, Any]] | None:
    """ADK's two older eval-set layouts as ``EvalSet`` cases, None when ``doc`` is neither. A
    ``*.test.json`` list of ``{query, expected_tool_use, reference}`` is one case with no
    ``eval_id`` (ADK names it after the file); a list of ``{name, data, initial_session}``, ``data``
    being such a list, is one case per item."""
    if _is_queries(doc) and doc:
        return [{"conversation": [_old_invocation(item) for item in doc]}]
    if isinstance(doc, list) and doc and all(_is_old_case(item) for item in doc):
        return [_old_case(item) for item in doc]
    return None


def _is_queries(items: Any) -> bool:
    """Whether ``items`` is a list of ``{query, …}`` maps (the older layouts' invocations)."""
    return isinstance(items, list) and all(
        isinstance(item, dict) and "query" in item for item in items
    )


def _is_old_case(item: Any) -> bool:
    """Whether ``item`` is a ``{name, data, initial_session}`` case of the oldest layout."""
    return isinstance(item, dict) and _is_queries(item.get("data"))


def _old_case(item: dict[str, Any]) -> dict[str, Any]:
    """One ``{name, data, initial_session}`` case as an eval case, as ADK converts it (the state,
    app and user of ``initial_session`` become ``session_input``)."""
    case: dict[str, Any] = {
        "eval_id": item.get("name"),
        "conversation": [_old_invocation(i) for i in item["data"]],
    }
    session = item.get("initial_session")
    if isinstance(session, dict) and session:
        case["session_input"] = session
    return case


def _old_invocation(item: dict[str, Any]) -> dict[str, Any]:
    """One ``{query, expected_tool_use: [{tool_name, tool_input}], reference}`` item as an
    invocation."""
    uses = [
        {"name": u.get("tool_name"), "args": u.get("tool_input")}
        for u in _seq(item.get("expected_tool_use"))
        if isinstance(u, dict)
    ]
    query, reference = item.get("query"), item.get("reference")
    invocation: dict[str, Any] = {
        "intermediate_data": {
            "tool_uses": uses,
            "intermediate_responses": _seq(item.get("expected_intermediate_agent_responses")),
        }
    }
    if isinstance(query, str):
        invocation["user_content"] = {"role": "user", "parts": [{"text": query}]}
    if isinstance(reference, str) and reference:
        invocation["final_response"] = {"role": "model", "parts": [{"text": reference}]}
    return invocation


def _seq(value: Any) -> list[Any]:
    """``value`` when it is a list, else no items."""
    return value if isinstance(value, list) else []


def _entries(doc: Any) -> Iterator[_Entry]:
    """The ``(content, raw usage)`` pairs of any supported Gemini or ADK shape."""
    if isinstance(doc, list):
        cases = legacy_cases(doc)
        return _items(doc) if cases is None else _one_case(cases, "[0]")
    if not isinstance(doc, dict):
        raise NotThisFormat("not a list or a mapping")
    for key in ("contents", "events"):
        if isinstance(doc.get(key), list):
            return _items(doc[key])
    if isinstance(doc.get("candidates"), list):
        return _response(doc)
    cases = _get(doc, "eval_cases", "evalCases")
    if isinstance(cases, list):
        return _one_case(
            cases, f"{'eval_cases' if isinstance(doc.get('eval_cases'), list) else 'evalCases'}[0]"
        )
    if isinstance(doc.get("conversation"), list):
        return _conversation(doc["conversation"])
    if _is_old_case(doc):
        return _conversation(_old_case(doc)["conversation"])
    if isinstance(doc.get("parts"), list) or isinstance(doc.get("content"), dict):
        return _items([doc])
    raise NotThisFormat("no 'contents', 'events', 'candidates' or 'parts'")


def _one_case(cases: list[Any], first: str) -> Iterator[_Entry]:
    """The conversation of an eval set's only case; ``first`` is where its first case is, for the
    error."""
    if len(cases) != 1:
        raise NotThisFormat(
            f"an eval set with {len(cases)} cases; select one case (the first is at {first})"
        )
    return _conversation(cases[0].get("conversation") if isinstance(cases[0], dict) else None)


def _items(items: list[Any]) -> Iterator[_Entry]:
    """Contents (``{role, parts}``) or ADK events (``{author, content, usageMetadata}``) in
    order."""
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise NotThisFormat(f"item {i} is not a mapping")
        if isinstance(item.get("parts"), list):
            yield item, None
        elif isinstance(item.get("content"), dict) and isinstance(
            item["content"].get("parts"), list
        ):
            yield item["content"], _get(item, "usageMetadata", "usage_metadata")
        elif "author" not in item:
            raise NotThisFormat(f"item {i} has neither 'parts' nor an event 'content'")


def _response(doc: dict[str, Any]) -> Iterator[_Entry]:
    """A whole ``generateContent`` response: the first candidate's content with the response
    usage."""
    candidates = doc["candidates"]
    content = (
        candidates[0].get("content") if candidates and isinstance(candidates[0], dict) else None
    )
    if not isinstance(content, dict):
        raise NotThisFormat("'candidates' has no first candidate with a 'content'")
    yield content, _get(doc, "usageMetadata", "usage_metadata")


def _conversation(invocations: Any) -> Iterator[_Entry]:
    """An ADK eval case's invocations: user content, intermediate events or tool uses, final
    response."""
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


def _intermediate(data: dict[str, Any]) -> Generator[_Entry, None, Any]:
    """Intermediate events (new shape) or legacy ``tool_uses``; returns usage left for the final
    response.

    An event's calls are one turn (one model response asked for them together). ``tool_uses``
    records no such grouping, and ADK's EXACT match compares their order, so each is a turn of its
    own."""
    pending = None
    for event in _list(data, "invocationEvents", "invocation_events"):
        if not isinstance(event, dict):
            raise NotThisFormat("an invocation event is not a mapping")
        usage = _get(event, "usageMetadata", "usage_metadata")
        if isinstance(event.get("content"), dict):
            yield event["content"], usage
        elif usage is not None:
            pending = usage
    for use in _list(data, "toolUses", "tool_uses"):
        yield {"role": "model", "parts": [{"functionCall": use}]}, None
    responses = _list(data, "toolResponses", "tool_responses")
    if responses:
        yield {"role": "user", "parts": [{"functionResponse": r} for r in responses]}, None
    return pending


def _content(builder: Builder, content: dict[str, Any], raw_usage: Any) -> None:
    """Read one content: a ``model`` one is a turn; its call parts are calls, response parts
    results."""
    parts = content.get("parts") or ()
    if any(not isinstance(part, dict) for part in parts):
        raise NotThisFormat("a content has a part that is not a mapping")
    if content.get("role") == "model":
        text = "".join(
            p["text"] for p in parts if isinstance(p.get("text"), str) and not p.get("thought")
        )
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
    """``usageMetadata`` in either spelling: input counts tool-use prompts, output counts
    thoughts."""
    return make_usage(raw, _INPUTS, _OUTPUTS)


def _list(mapping: Any, camel: str, snake: str) -> list[Any]:
    """A list field under either spelling (empty when missing or empty); any other value is not
    Gemini."""
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
