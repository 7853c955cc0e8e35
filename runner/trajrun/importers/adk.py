"""Google ADK eval sets (``*.evalset.json``, older ``*.test.json``) as suites.

Each eval case becomes a case whose steps are its expected tool calls (``intermediate_data.tool_uses``, or the
``functionCall`` parts of ``invocation_events``), every invocation's in order, checked ``strict`` with exact
arguments: what ADK's ``tool_trajectory_avg_score`` compares (at its default threshold of 1.0). The user's
messages become the ``queries`` argument of the ``python:`` source. Both spellings of every key are read
(``eval_cases`` and ``evalCases``), as ADK writes either.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..sources import load_document
from ..suites.golden import recorded_step
from .common import Imported, ImportProblem, SourceChoice, suite_stem, unique_name

FINAL_RESPONSE = ("the expected final responses (ADK scores them with response_match_score, a ROUGE-1 text overlap; "
                  "check the answer with `answer:` or a `judge:` rubric)")
INTERMEDIATE = "the expected intermediate agent responses (sub-agents' text; trajrun checks tool calls)"
TOOL_RESULTS = "the recorded tool results (ADK does not score them; add `result:` to a step to check one)"
RUBRICS = "rubrics (write each as a `judge:` rubric)"
FINAL_STATE = "the expected final session state (trajrun checks tool calls, not agent state)"
SCENARIO = "user-simulation scenarios (no fixed conversation, so no expected tool calls): the case is left out"
NAMELESS = "tool calls without a name (left out of the steps)"


def import_adk(path: Path, source: SourceChoice, select: str | None = None, folder: Path | None = None) -> Imported:
    """One eval set file as a suite; ``folder`` is where the suite file will live (file sources are made relative
    to it). Raises ``ImportProblem`` or ``SourceError`` when the file is no eval set."""
    doc = load_document(path, select=select)
    set_id, cases = _eval_cases(doc, path)
    imported = Imported(set_id or suite_stem(path), path, _header(path, set_id, source), {"mode": "strict"})
    taken: set[str] = set()
    for index, case in enumerate(cases):
        _case(imported, case, index, taken, source, folder)
    if not imported.cases:
        raise ImportProblem(f"{path}: no eval case with a conversation to import; "
                            f"{'; '.join(imported.report()) or 'it is empty'}")
    return imported


def _eval_cases(doc: Any, path: Path) -> tuple[str | None, list[Any]]:
    """The eval set's id and its cases; the old list-of-queries format is one case."""
    if isinstance(doc, list) and all(isinstance(i, dict) and "query" in i for i in doc) and doc:
        return None, [{"eval_id": suite_stem(path), "conversation": [_old_invocation(i) for i in doc]}]
    if isinstance(doc, dict) and isinstance(_get(doc, "eval_cases"), list):
        set_id = _get(doc, "eval_set_id") or _get(doc, "name")
        return set_id if isinstance(set_id, str) and set_id else None, _get(doc, "eval_cases")
    hint = ""
    if isinstance(doc, dict):
        inner = [key for key, value in doc.items() if isinstance(_get(value, "eval_cases"), list)]
        hint = f"; the eval set is under {inner[0]!r}: add --select '$.{inner[0]}'" if inner else ""
    raise ImportProblem(f"{path}: not an ADK eval set: expected a map with `eval_cases` (or `evalCases`), or the older "
                        f"list of {{query, expected_tool_use}}{hint}")


def _old_invocation(item: dict[str, Any]) -> dict[str, Any]:
    """One item of the old ``*.test.json`` list as an invocation: ``expected_tool_use`` as tool uses."""
    uses = [{"name": u.get("tool_name"), "args": u.get("tool_input")} for u in item.get("expected_tool_use") or []
            if isinstance(u, dict)]
    content = {"parts": [{"text": item["query"]}]} if isinstance(item.get("query"), str) else None
    final = {"parts": [{"text": item["reference"]}]} if item.get("reference") else None
    return {"user_content": content, "final_response": final,
            "intermediate_data": {"tool_uses": uses,
                                  "intermediate_responses": item.get("expected_intermediate_agent_responses") or []}}


def _case(imported: Imported, case: Any, index: int, taken: set[str], source: SourceChoice,
          folder: Path | None) -> None:
    """Add one eval case, noting what it holds that the suite cannot carry."""
    case = case if isinstance(case, dict) else {}
    raw_name = _get(case, "eval_id")
    name = unique_name(raw_name if isinstance(raw_name, str) and raw_name else f"case {index + 1}", taken)
    conversation = case.get("conversation")
    if not isinstance(conversation, list) or not conversation:
        imported.drop(SCENARIO, name)
        return
    queries, steps = [], []
    for invocation in conversation:
        invocation = invocation if isinstance(invocation, dict) else {}
        text = _text(_get(invocation, "user_content"))
        queries.extend([text] if text else [])
        steps.extend(_invocation_steps(imported, invocation, name))
    args: dict[str, Any] = {"queries": queries}
    state = (_get(case, "session_input") or {}).get("state") if isinstance(_get(case, "session_input"), dict) else None
    if isinstance(state, dict) and state:
        args["state"] = state
    if _get(case, "final_session_state"):
        imported.drop(FINAL_STATE, name)
    if case.get("rubrics"):
        imported.drop(RUBRICS, name)
    imported.cases.append({"name": name, "source": source.render(name, args, folder), "steps": steps})


def _invocation_steps(imported: Imported, invocation: dict[str, Any], name: str) -> list[dict[str, Any]]:
    """The expected tool calls of one invocation, as steps; what else it expects is noted as dropped."""
    data = _get(invocation, "intermediate_data")
    data = data if isinstance(data, dict) else {}
    calls = [u for u in _get(data, "tool_uses") or [] if isinstance(u, dict)]
    results = bool(_get(data, "tool_responses"))
    for part in _event_parts(_get(data, "invocation_events")):
        call = _get(part, "function_call")
        calls.extend([call] if isinstance(call, dict) else [])
        results = results or isinstance(_get(part, "function_response"), dict)
    for what, present in ((FINAL_RESPONSE, _text(_get(invocation, "final_response"))),
                          (INTERMEDIATE, _get(data, "intermediate_responses")), (TOOL_RESULTS, results),
                          (RUBRICS, invocation.get("rubrics"))):
        if present and name not in imported.dropped.get(what, ()):
            imported.drop(what, name)
    steps = []
    for call in calls:
        if not isinstance(call.get("name"), str) or not call["name"]:
            if name not in imported.dropped.get(NAMELESS, ()):
                imported.drop(NAMELESS, name)
            continue
        args = call.get("args")
        steps.append(recorded_step(call["name"], args if isinstance(args, (dict, str)) else {}))
    return steps


def _event_parts(events: Any) -> list[dict[str, Any]]:
    """Every part of every event's content, in order."""
    contents = [e.get("content") for e in events or [] if isinstance(e, dict)]
    return [p for c in contents if isinstance(c, dict) for p in c.get("parts") or [] if isinstance(p, dict)]


def _header(path: Path, set_id: str | None, source: SourceChoice) -> list[str]:
    """The comment on top of the suite: where it came from, what the steps mean, what to fill in."""
    lines = [f"Imported by `trajrun import adk` from {path.name}" + (f" (eval set {set_id})." if set_id else "."),
             "Steps: each eval case's expected tool calls, strict with exact arguments, as ADK's",
             "tool_trajectory_avg_score compares them (at threshold 1.0; ADK scores each invocation apart)."]
    if source.file is None:
        lines += [f"Source: `{source.python}` is called with the user's messages as `queries` (and the session",
                  "state as `state`); it runs the agent and returns the session's events. Replace it with your",
                  "function, or with `source: <file>` for a saved run."]
    return lines


def _text(content: Any) -> str:
    """The text parts of an ADK ``Content``, joined."""
    if not isinstance(content, dict):
        return ""
    parts = content.get("parts") or []
    return "".join(p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str))


def _get(mapping: Any, snake: str) -> Any:
    """A field under its snake_case name or its camelCase alias."""
    if not isinstance(mapping, dict):
        return None
    head, *rest = snake.split("_")
    camel = head + "".join(word.title() for word in rest)
    value = mapping.get(snake)
    return mapping.get(camel) if value is None else value

