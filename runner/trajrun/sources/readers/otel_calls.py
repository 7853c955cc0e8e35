"""One model call counted once: the spans several instrumentations recorded for one call, grouped.

An agent framework and the model client's instrumentation both record a call (Google ADK's
``call_llm`` with OpenLLMetry's ``openai.chat`` inside, and in some setups a ``generate_content``
span between them), so each call would count two or three times as turns and usage. The rules, on
the span tree:

* An LLM span's *enclosing* LLM span is its nearest LLM ancestor with no tool or agent span between
  them (a sub-agent's calls run inside a tool or agent span: they stay calls of their own). An LLM
  span enclosing LLM spans of exactly one call is that call too; one enclosing several calls (a
  wrapper of a multi-step generation) is none, its usage being theirs added up.
* LLM spans with the same ``gen_ai.response.id`` are one call wherever they are; spans whose
  response ids differ are never one call.
* A tool span nested in a tool span of the same name or call id, with no LLM or agent span between,
  is the same execution (a framework's span and an MCP or instrumentation span inside it).

``one_call_each`` gives, for the first span of each call in trace order, the call's spans innermost
first, so the reader takes each value (usage, text, arguments) from the innermost span with it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from .otel_spans import Span

_LLM_BARRIERS = frozenset({"tool", "merged", "agent"})
_TOOL_BARRIERS = frozenset({"llm", "agent"})


class Calls(NamedTuple):
    """Each call's first span (its index) to the call's spans, innermost first; what was merged."""

    spans: dict[int, list[Span]]
    notes: list[str]


class _Groups:
    """Union-find over span indexes; a group keeps the ``gen_ai.response.id`` its spans carry."""

    def __init__(self, response_ids: dict[int, str]) -> None:
        self.parent: dict[int, int] = {}
        self.response_id = dict(response_ids)

    def find(self, index: int) -> int:
        """The group's representative."""
        while self.parent.get(index, index) != index:
            index = self.parent[index]
        return index

    def join(self, a: int, b: int) -> bool:
        """Make ``a`` and ``b`` one group, unless their groups carry different response ids."""
        a, b = self.find(a), self.find(b)
        if a == b:
            return True
        ids = {rid for rid in (self.response_id.get(a), self.response_id.get(b)) if rid is not None}
        if len(ids) > 1:
            return False
        self.parent[b] = a
        if ids:
            self.response_id[a] = ids.pop()
        return True


def one_call_each(
    spans: list[Span], kinds: dict[int, str | None], tool_key: Callable[[Span], tuple[Any, Any]]
) -> Calls:
    """Group ``spans`` (in trace order; ``kinds``: each index's ``llm``, ``tool``, ``merged``,
    ``agent`` or None) into calls; ``tool_key`` gives a tool span's name and call id."""
    by_id = {span.span_id: span for span in spans if span.span_id is not None}
    llms = [span for span in spans if kinds[span.index] == "llm"]
    ids = ((span.index, span.attrs.get("gen_ai.response.id")) for span in llms)
    response_ids = {index: rid for index, rid in ids if isinstance(rid, str) and rid}
    groups = _Groups(response_ids)
    first_with: dict[str, int] = {}
    for index, rid in response_ids.items():
        groups.join(first_with.setdefault(rid, index), index)
    depth, wrappers = _nest_llm_calls(llms, kinds, by_id, groups)
    for span in spans:
        if kinds[span.index] != "tool":
            continue
        outer = _enclosing(span, kinds, by_id, "tool", _TOOL_BARRIERS)
        if outer is not None and _same_tool(span, outer, tool_key):
            groups.join(outer.index, span.index)
            depth[span.index] = depth.get(outer.index, 0) + 1
    members: dict[int, list[Span]] = {}
    for span in spans:
        if kinds[span.index] in ("llm", "tool") and span.index not in wrappers:
            members.setdefault(groups.find(span.index), []).append(span)
    calls, notes = {}, []
    for group in members.values():  # each group's spans in trace order: the first leads
        calls[group[0].index] = sorted(group, key=lambda s: -depth.get(s.index, 0))
        if len(group) > 1:
            notes.append(_merged(calls[group[0].index], kinds))
    notes += [f"span {_named(span)} holds several model calls and counts as them, not as a call "
              "of its own" for span in llms if span.index in wrappers]  # fmt: skip
    return Calls(calls, notes)


def _nest_llm_calls(
    llms: list[Span], kinds: dict[int, str | None], by_id: dict[str, Span], groups: _Groups
) -> tuple[dict[int, int], set[int]]:
    """Join each LLM span to the one call it encloses, innermost first: each span's depth among
    LLM spans, and the wrappers (spans enclosing several calls)."""
    owner = {span.index: _enclosing(span, kinds, by_id, "llm", _LLM_BARRIERS) for span in llms}
    depth: dict[int, int] = {}
    for span in llms:
        chain, outer = [span.index], owner[span.index]
        while outer is not None and outer.index not in depth and outer.index not in chain:
            chain.append(outer.index)
            outer = owner[outer.index]
        base = -1 if outer is None else depth.get(outer.index, 0)
        for step, index in enumerate(reversed(chain), start=1):
            depth.setdefault(index, base + step)
    inside: dict[int, set[int]] = {}
    wrappers: set[int] = set()
    for span in sorted(llms, key=lambda s: -depth[s.index]):
        calls = {groups.find(index) for index in inside.get(span.index, ())}
        if len(calls) > 1:
            wrappers.add(span.index)
        elif calls:
            groups.join(calls.pop(), span.index)
        outer = owner[span.index]
        if outer is not None:
            below = calls if span.index in wrappers else {span.index}
            inside.setdefault(outer.index, set()).update(below)
    return depth, wrappers


def _enclosing(
    span: Span,
    kinds: dict[int, str | None],
    by_id: dict[str, Span],
    kind: str,
    barriers: frozenset[str],
) -> Span | None:
    """The nearest ancestor of ``kind`` with no span of a ``barriers`` kind between, else None."""
    seen = {span.index}
    parent = by_id.get(span.parent_id) if span.parent_id is not None else None
    while parent is not None and parent.index not in seen:
        found = kinds[parent.index]
        if found == kind:
            return parent
        if found in barriers:
            return None
        seen.add(parent.index)
        parent = by_id.get(parent.parent_id) if parent.parent_id is not None else None
    return None


def _same_tool(inner: Span, outer: Span, tool_key: Callable[[Span], tuple[Any, Any]]) -> bool:
    """Whether two nested tool spans record one execution: the same name, or the same call id."""
    (name, call_id), (outer_name, outer_id) = tool_key(inner), tool_key(outer)
    return name == outer_name or (call_id is not None and call_id == outer_id)


def _merged(spans: list[Span], kinds: dict[int, str | None]) -> str:
    """What ``show -v`` says of spans merged into one call."""
    what = "model call" if kinds[spans[0].index] == "llm" else "tool call"
    return f"spans {', '.join(map(_named, spans))} are one {what}"


def _named(span: Span) -> str:
    """A span as a note names it: its name and id."""
    return f"{span.name!r} ({span.span_id})"
