"""Google ADK eval sets (``*.evalset.json``, ``*.test.json``, in all three layouts ADK loads) as
suites.

Each eval case becomes a case whose steps are its expected tool calls
(``intermediate_data.tool_uses``, or the ``functionCall`` parts of ``invocation_events``), every
invocation's in order, with exact arguments: what ADK's ``tool_trajectory_avg_score`` compares. The
mode and threshold are ADK's: those of the ``test_config.json`` beside the file, as ADK reads it,
else ADK's defaults (EXACT, 1.0). The user's messages become the ``queries`` argument of the
``python:`` source. Both spellings of every key are read (``eval_cases`` and ``evalCases``), as ADK
writes either.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..sources import load_document
from ..sources.readers.gemini import legacy_cases
from ..suites.golden import recorded_step
from .common import Imported, ImportProblem, SourceChoice, suite_stem, unique_name

FINAL_RESPONSE = (
    "the expected final responses (ADK scores them with response_match_score, a ROUGE-1 text "
    "overlap; check the answer with `answer:` or a `judge:` rubric)"
)
INTERMEDIATE = (
    "the expected intermediate agent responses (sub-agents' text; trajrun checks tool calls)"
)
TOOL_RESULTS = (
    "the recorded tool results (ADK does not score them; add `result:` to a step to check one)"
)
RUBRICS = "rubrics (write each as a `judge:` rubric)"
FINAL_STATE = "the expected final session state (trajrun checks tool calls, not agent state)"
SCENARIO = (
    "user-simulation scenarios (no fixed conversation, so no expected tool calls): "
    "the case is left out"
)
NAMELESS = "tool calls without a name (left out of the steps)"
PATH_IDS = (
    "the folders of eval ids that are absolute file paths "
    "(each case is named by the path's last part)"
)
CONFIG = "test_config.json"
"""The file ADK reads its criteria from, beside the eval data."""
TRAJECTORY = "tool_trajectory_avg_score"
MODES = {"EXACT": "strict", "IN_ORDER": "in_order", "ANY_ORDER": "superset"}
"""ADK's match types (in the order of their enum values) and the trajrun modes that check the
same."""
_ABSOLUTE = re.compile(r"(/|\\\\|[A-Za-z]:[\\/])")
_SEPARATORS = re.compile(r"[\\/]")


@dataclass(frozen=True, slots=True)
class AdkConfig:
    """What ADK's ``test_config.json`` sets for the tool trajectory; ``found`` is False without the
    file, and ``scored`` False when its criteria leave ``tool_trajectory_avg_score`` out (ADK then
    scores no tool call)."""

    found: bool = False
    scored: bool = True
    match_type: str = "EXACT"
    threshold: float = 1.0
    ignore_args: bool = False

    def defaults(self) -> dict[str, Any]:
        """The suite's ``defaults``: the mode, and the threshold and argument rule where ADK's are
        not the strictest."""
        defaults: dict[str, Any] = {"mode": MODES[self.match_type]}
        if self.ignore_args:
            defaults["args_mode"] = "ignore"
        if self.threshold < 1:
            defaults["threshold"] = self.threshold
        return defaults


def import_adk(
    path: Path, source: SourceChoice, select: str | None = None, folder: Path | None = None
) -> Imported:
    """One eval set file as a suite; ``folder`` is where the suite file will live (file sources are
    made relative to it). Raises ``ImportProblem`` or ``SourceError`` when the file is no eval
    set."""
    doc = load_document(path, select=select)
    set_id, cases = _eval_cases(doc, path)
    config = read_config(path.parent / CONFIG)
    imported = Imported(
        set_id or suite_stem(path), path, _header(path, set_id, source, config), config.defaults()
    )
    taken: set[str] = set()
    for index, case in enumerate(cases):
        _case(imported, case, index, taken, source, folder)
    if not imported.cases:
        raise ImportProblem(
            f"{path}: no eval case with a conversation to import; "
            f"{'; '.join(imported.report()) or 'it is empty'}"
        )
    return imported


def _eval_cases(doc: Any, path: Path) -> tuple[str | None, list[Any]]:
    """The eval set's id and its cases, in any of ADK's three layouts; the older list of queries is
    one case, named after the file."""
    old = legacy_cases(doc)
    if old is not None:
        if len(old) == 1 and "eval_id" not in old[0]:
            old[0]["eval_id"] = suite_stem(path)
        return None, old
    if isinstance(doc, dict) and isinstance(_get(doc, "eval_cases"), list):
        set_id = _get(doc, "eval_set_id") or _get(doc, "name")
        return set_id if isinstance(set_id, str) and set_id else None, _get(doc, "eval_cases")
    hint = ""
    if isinstance(doc, dict):
        inner = [key for key, value in doc.items() if isinstance(_get(value, "eval_cases"), list)]
        hint = f"; the eval set is under {inner[0]!r}: add --select '$.{inner[0]}'" if inner else ""
    raise ImportProblem(
        f"{path}: not an ADK eval set: expected a map with `eval_cases` (or `evalCases`), or one "
        f"of the older lists, of {{query, expected_tool_use}} or of {{name, data}}{hint}"
    )


def read_config(path: Path) -> AdkConfig:
    """The trajectory criterion of the ``test_config.json`` at ``path`` (ADK's defaults when there
    is none): its threshold is a number, or a map of ``threshold`` and maybe ``match_type`` and
    ``ignore_args``. Raises ``ImportProblem`` for a value ADK would refuse, or ``SourceError`` when
    the file is not JSON."""
    if not path.is_file():
        return AdkConfig()
    doc = load_document(path)
    if not isinstance(doc, dict):
        raise ImportProblem(
            f"{path}: expected a map with `criteria` (ADK's eval config), found {_found(doc)}; "
            f"fix it, as ADK refuses it too"
        )
    criteria = doc.get("criteria")
    if not isinstance(criteria, dict) and criteria is not None:
        raise ImportProblem(
            f"{path}: criteria: expected a map of metric names to thresholds, found "
            f"{_found(criteria)}; fix it, as ADK refuses it too"
        )
    criterion = (criteria or {}).get(TRAJECTORY)
    if criterion is None:
        return AdkConfig(found=True, scored=False)
    where = f"{path}: criteria.{TRAJECTORY}"
    if not isinstance(criterion, dict):
        return AdkConfig(found=True, threshold=_threshold(criterion, where))
    match_type = _either(criterion, "match_type", "matchType")
    ignore_args = _either(criterion, "ignore_args", "ignoreArgs")
    if not isinstance(ignore_args, bool) and ignore_args is not None:
        raise ImportProblem(
            f"{where}.ignore_args: expected true or false, found {_found(ignore_args)}; fix it, "
            "as ADK refuses it too"
        )
    return AdkConfig(
        found=True,
        threshold=_threshold(criterion.get("threshold"), f"{where}.threshold"),
        match_type="EXACT"
        if match_type is None
        else _match_type(match_type, f"{where}.match_type"),
        ignore_args=bool(ignore_args),
    )


def _threshold(value: Any, where: str) -> float:
    """A threshold from 0 to 1 (ADK's score is a share of invocations)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ImportProblem(
            f"{where}: expected a threshold from 0 to 1, found {_found(value)}; fix it in {CONFIG}"
        )
    return float(value)


def _match_type(value: Any, where: str) -> str:
    """ADK's match type as it reads one: a name in any case (``in-order`` too) or the enum's
    number."""
    names = list(MODES)
    if isinstance(value, str):
        name = value.strip().upper().replace("-", "_").replace(" ", "_")
        if name in MODES:
            return name
    elif isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(names):
        return names[value]
    raise ImportProblem(
        f"{where}: expected EXACT, IN_ORDER or ANY_ORDER, found {_found(value)}; fix it, as ADK "
        "refuses it too"
    )


def _either(mapping: dict[str, Any], snake: str, camel: str) -> Any:
    """A criterion's field under either spelling (ADK reads both)."""
    return mapping.get(snake) if mapping.get(snake) is not None else mapping.get(camel)


def _found(value: Any) -> str:
    """A found value for a message: short scalars as written, anything else by its type."""
    if value is None:
        return "none"
    if isinstance(value, (str, int, float, bool)):
        text = json.dumps(value, ensure_ascii=False)
        return text if len(text) <= 40 else f"a {type(value).__name__}"
    return (
        "a list"
        if isinstance(value, list)
        else "a map"
        if isinstance(value, dict)
        else f"a {type(value).__name__}"
    )


def _case(
    imported: Imported,
    case: Any,
    index: int,
    taken: set[str],
    source: SourceChoice,
    folder: Path | None,
) -> None:
    """Add one eval case, noting what it holds that the suite cannot carry."""
    case = case if isinstance(case, dict) else {}
    raw_name = _get(case, "eval_id")
    raw_name = raw_name if isinstance(raw_name, str) else ""
    short = _last_part(raw_name)
    name = unique_name(short or f"case {index + 1}", taken)
    if short != raw_name:
        imported.drop(PATH_IDS, name)
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
    state = (
        (_get(case, "session_input") or {}).get("state")
        if isinstance(_get(case, "session_input"), dict)
        else None
    )
    if isinstance(state, dict) and state:
        args["state"] = state
    if _get(case, "final_session_state"):
        imported.drop(FINAL_STATE, name)
    if case.get("rubrics"):
        imported.drop(RUBRICS, name)
    imported.cases.append(
        {"name": name, "source": source.render(name, args, folder), "steps": steps}
    )


def _invocation_steps(
    imported: Imported, invocation: dict[str, Any], name: str
) -> list[dict[str, Any]]:
    """The expected tool calls of one invocation, as steps; what else it expects is noted as
    dropped."""
    data = _get(invocation, "intermediate_data")
    data = data if isinstance(data, dict) else {}
    calls = [u for u in _get(data, "tool_uses") or [] if isinstance(u, dict)]
    results = bool(_get(data, "tool_responses"))
    for part in _event_parts(_get(data, "invocation_events")):
        call = _get(part, "function_call")
        calls.extend([call] if isinstance(call, dict) else [])
        results = results or isinstance(_get(part, "function_response"), dict)
    for what, present in (
        (FINAL_RESPONSE, _text(_get(invocation, "final_response"))),
        (INTERMEDIATE, _get(data, "intermediate_responses")),
        (TOOL_RESULTS, results),
        (RUBRICS, invocation.get("rubrics")),
    ):
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


def _last_part(eval_id: str) -> str:
    """An eval id that is an absolute path (adk-samples' are paths on their author's machine) cut to
    its last part."""
    if not _ABSOLUTE.match(eval_id):
        return eval_id
    return _SEPARATORS.split(eval_id.rstrip("/\\"))[-1]


def _event_parts(events: Any) -> list[dict[str, Any]]:
    """Every part of every event's content, in order."""
    contents = [e.get("content") for e in events or [] if isinstance(e, dict)]
    return [
        p
        for c in contents
        if isinstance(c, dict)
        for p in c.get("parts") or []
        if isinstance(p, dict)
    ]


def _header(path: Path, set_id: str | None, source: SourceChoice, config: AdkConfig) -> list[str]:
    """The comment on top of the suite: where it came from, what the steps mean and what was taken
    from ADK's config, what to fill in."""
    args = "arguments ignored" if config.ignore_args else "exact arguments"
    lines = [
        f"Imported by `trajrun import adk` from {path.name}"
        + (f" (eval set {set_id})." if set_id else "."),
        f"Steps: each eval case's expected tool calls, {MODES[config.match_type]} with {args}, "
        "as ADK's",
        "tool_trajectory_avg_score compares them ("
        + ("at threshold 1.0; " if not config.found else "")
        + "ADK scores each invocation apart).",
    ]
    lines += _config_lines(config)
    if source.file is None:
        lines += [
            f"Source: `{source.python}` is called with the user's messages as `queries` "
            "(and the session",
            "state as `state`); it runs the agent and returns the session's events. "
            "Replace it with your",
            "function, or with `source: <file>` for a saved run.",
        ]
    return lines


def _config_lines(config: AdkConfig) -> list[str]:
    """What the header says was taken from ``test_config.json`` (nothing when there is none)."""
    if not config.found:
        return []
    if not config.scored:
        return [
            f"From {CONFIG}: its criteria leave out {TRAJECTORY}, so ADK scores no tool call;",
            "the steps are checked strict all the same.",
        ]
    read = [f"{TRAJECTORY} {config.threshold}", f"match type {config.match_type}"]
    ours = [f"mode: {MODES[config.match_type]}"]
    if config.ignore_args:
        read.append("ignore_args")
        ours.append("args_mode: ignore")
    if config.threshold >= 1:
        return [f"From {CONFIG}: {', '.join(read)};", f"so here {', '.join(ours)}."]
    ours.append(f"threshold: {config.threshold}")
    return [
        f"From {CONFIG}: {', '.join(read)};",
        f"so here {', '.join(ours)}.",
        "trajrun's threshold is the F1 score of steps against calls, order not checked; "
        "ADK's is the",
        "share of invocations whose calls match.",
    ]


def _text(content: Any) -> str:
    """The text parts of an ADK ``Content``, joined."""
    if not isinstance(content, dict):
        return ""
    parts = content.get("parts") or []
    return "".join(
        p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)
    )


def _get(mapping: Any, snake: str) -> Any:
    """A field under its snake_case name or its camelCase alias."""
    if not isinstance(mapping, dict):
        return None
    head, *rest = snake.split("_")
    camel = head + "".join(word.title() for word in rest)
    value = mapping.get(snake)
    return mapping.get(camel) if value is None else value
