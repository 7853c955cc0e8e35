"""LangSmith datasets exported as JSONL (one example a line: ``{inputs, outputs, metadata, id}``) as suites.

Each example's reference messages (``outputs.messages``, else ``outputs.trajectory``, else ``outputs`` when it is a
list; ``--select`` points elsewhere) are read in any format trajrun reads, and their tool calls become steps with
literal arguments, under the match mode and argument rule the user names: what agentevals'
``create_trajectory_match_evaluator(trajectory_match_mode=…, tool_args_match_mode=…)`` compares. The example's
``inputs`` become the ``inputs`` argument of the ``python:`` source.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import SourceError
from ..sources import apply_select, load_document, read_trajectory
from .common import Imported, ImportProblem, SourceChoice, steps_of_calls, suite_stem, unique_name

REFERENCE_KEYS = ("messages", "trajectory")
NOT_EXAMPLE = "lines that are not example objects ({inputs, outputs}): left out"
NO_REFERENCE = "examples without reference messages (outputs.messages): left out; point --select at them"
UNREADABLE = "examples whose reference messages no trajrun format reads: left out (try `trajrun show`)"
ANSWER = "the reference's final answer text (trajectory match ignores it too; add `answer:` to check it)"
RESULTS = "the reference's tool results (trajectory match compares calls only; add `result:` to a step to check one)"
NAME_WIDTH = 60


def import_langsmith(path: Path, mode: str, args_mode: str, source: SourceChoice, select: str | None = None,
                     folder: Path | None = None) -> Imported:
    """One exported dataset as a suite whose cases hold each example's reference steps under ``mode``."""
    examples = load_document(path)
    if isinstance(examples, dict) and isinstance(examples.get("examples"), list):
        examples = examples["examples"]
    if not isinstance(examples, list):
        raise ImportProblem(f"{path}: not a LangSmith dataset export: expected JSONL, one example object a line "
                            "(or a JSON list of examples)")
    defaults = {"mode": mode} if args_mode == "exact" else {"mode": mode, "args_mode": args_mode}
    imported = Imported(suite_stem(path), path, _header(path, mode, args_mode, source), defaults)
    taken: set[str] = set()
    for index, example in enumerate(examples):
        _example(imported, example, index, taken, (source, select, folder))
    if not imported.cases:
        found = imported.report() or "it is empty"
        raise ImportProblem(f"{path}: no example with reference messages to import; {found}")
    return imported


def _example(imported: Imported, example: Any, index: int, taken: set[str],
             options: tuple[SourceChoice, str | None, Path | None]) -> None:
    """Add one example as a case, or note why it cannot be one."""
    source, select, folder = options
    label = f"line {index + 1}"
    if not isinstance(example, dict):
        imported.drop(NOT_EXAMPLE, label)
        return
    name = unique_name(_name(example, index), taken)
    try:
        reference = apply_select(example, select, str(imported.origin)) if select else _reference(example)
    except SourceError:
        reference = None
    if reference is None:
        imported.drop(NO_REFERENCE, name)
        return
    try:
        traj = read_trajectory(reference, origin=f"{imported.origin} {label}")
    except SourceError:
        imported.drop(UNREADABLE, name)
        return
    if traj.answer:
        imported.drop(ANSWER, name)
    if traj.records_results:
        imported.drop(RESULTS, name)
    inputs = example.get("inputs")
    args = {"inputs": inputs} if isinstance(inputs, dict) and inputs else {}
    imported.cases.append({"name": name, "source": source.render(name, args, folder),
                           "steps": steps_of_calls(traj.calls)})


def _reference(example: dict[str, Any]) -> Any:
    """The reference messages of an example: ``outputs.messages``, ``outputs.trajectory``, or a list ``outputs``."""
    outputs = example.get("outputs")
    if isinstance(outputs, list):
        return outputs
    if isinstance(outputs, dict):
        return next((outputs[k] for k in REFERENCE_KEYS if isinstance(outputs.get(k), (list, dict))), None)
    return None


def _name(example: dict[str, Any], index: int) -> str:
    """A case name: ``metadata.name``, else the first text input (cut), else the example's id, else its line."""
    metadata = example.get("metadata")
    if isinstance(metadata, dict) and isinstance(metadata.get("name"), str) and metadata["name"].strip():
        return metadata["name"].strip()
    inputs = example.get("inputs")
    texts = [v for v in inputs.values() if isinstance(v, str) and v.strip()] if isinstance(inputs, dict) else []
    if texts:
        text = " ".join(texts[0].split())
        return text if len(text) <= NAME_WIDTH else text[: NAME_WIDTH - 1] + "…"
    if isinstance(example.get("id"), str) and example["id"]:
        return example["id"]
    return f"example {index + 1}"


def _header(path: Path, mode: str, args_mode: str, source: SourceChoice) -> list[str]:
    """The comment on top of the suite."""
    lines = [f"Imported by `trajrun import langsmith` from {path.name}.",
             f"Steps: each example's reference tool calls, mode {mode}, arguments {args_mode}."]
    if source.file is None:
        lines += [f"Source: `{source.python}` is called with the example's `inputs`; it runs the agent and returns",
                  "its messages. Replace it with your function, or with `source: <file>` for a saved run."]
    return lines
