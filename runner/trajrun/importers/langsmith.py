"""LangSmith datasets exported as JSONL (one example a line: ``{inputs, outputs, metadata, id}``) as
suites.

Each example's reference messages (``outputs.messages``, else ``outputs.trajectory``, else
``outputs`` when it is a list; ``--select`` points elsewhere) are read in any format trajrun reads,
and their tool calls become steps with literal arguments, under the match mode and argument rule the
user names: what agentevals' ``create_trajectory_match_evaluator(trajectory_match_mode=…,
tool_args_match_mode=…)`` compares. The example's ``inputs`` become the ``inputs`` argument of the
``python:`` source. A JSONL line that is not JSON is left out and reported (``file:line: why``,
nothing of it quoted), like every other example that cannot be imported.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import SourceError
from ..limits import MAX_SOURCE_BYTES_VAR, max_source_bytes
from ..sources import apply_select, load_document, read_trajectory
from ..sources.documents import document_kind
from ..sources.records import decode_line
from ..sources.streams import Lost, gunzip_chunks, lines, open_binary, raw_chunks
from .common import Imported, ImportProblem, SourceChoice, steps_of_calls, suite_stem, unique_name

REFERENCE_KEYS = ("messages", "trajectory")
NOT_EXAMPLE = "lines that are not example objects ({inputs, outputs}): left out"
NO_REFERENCE = (
    "examples without reference messages (outputs.messages): left out; point --select at them"
)
UNREADABLE = (
    "examples whose reference messages no trajrun format reads: left out (try `trajrun show`)"
)
ANSWER = (
    "the reference's final answer text (trajectory match ignores it too; add `answer:` to check it)"
)
RESULTS = (
    "the reference's tool results "
    "(trajectory match compares calls only; add `result:` to a step to check one)"
)
NAME_WIDTH = 60


def import_langsmith(
    path: Path,
    mode: str,
    args_mode: str,
    source: SourceChoice,
    select: str | None = None,
    folder: Path | None = None,
) -> Imported:
    """One exported dataset as a suite whose cases hold each example's reference steps under
    ``mode``."""
    defaults = {"mode": mode} if args_mode == "exact" else {"mode": mode, "args_mode": args_mode}
    imported = Imported(suite_stem(path), path, _header(path, mode, args_mode, source), defaults)
    taken: set[str] = set()
    for index, (line, example) in enumerate(_examples(path, imported)):
        _example(imported, example, (index, line), taken, (source, select, folder))
    if not imported.cases:
        found = "; ".join(imported.report()) or "it is empty"
        raise ImportProblem(f"{path}: no example with reference messages to import; {found}")
    return imported


def _examples(path: Path, imported: Imported) -> list[tuple[int, Any]]:
    """The export's examples, each with its line (its place in a JSON list); JSONL lines that cannot
    be read are noted in ``imported`` and left out."""
    kind, zipped = document_kind(path) if path.is_file() else ("", False)
    if kind == "jsonl":
        return _jsonl_examples(path, zipped, imported)
    examples = load_document(path)
    if isinstance(examples, dict) and isinstance(examples.get("examples"), list):
        examples = examples["examples"]
    if not isinstance(examples, list):
        raise ImportProblem(
            f"{path}: not a LangSmith dataset export: expected JSONL, one example object a line "
            "(or a JSON list of examples)"
        )
    return list(enumerate(examples, 1))


def _jsonl_examples(path: Path, zipped: bool, imported: Imported) -> list[tuple[int, Any]]:
    """Each line of a JSONL export that is JSON, with its number: a line that is not (bad JSON, a
    corrupt gzip member) is noted in ``imported`` and left out, so one bad line loses none of the
    others."""
    found, limit = [], max_source_bytes()
    try:
        with open_binary(str(path)) as stream:
            chunks = gunzip_chunks(stream) if zipped else raw_chunks(stream)
            for number, (offset, data) in enumerate(lines(chunks, limit), 1):
                if offset > limit:
                    raise SourceError(
                        f"the file holds more than {limit:,} bytes, the limit on one source "
                        f"document; set {MAX_SOURCE_BYTES_VAR} to a larger number of bytes to read "
                        "it",
                        str(path),
                    )
                if isinstance(data, Lost):
                    imported.unreadable.append((number, data.reason))
                elif data and not data.isspace():
                    record = decode_line(number, data)
                    if record.error is None:
                        found.append((number, record.doc))
                    else:
                        imported.unreadable.append((number, record.error))
    except OSError as exc:
        raise SourceError(f"cannot read the file: {exc.strerror or exc}", str(path)) from None
    return found


def _example(
    imported: Imported,
    example: Any,
    place: tuple[int, int],
    taken: set[str],
    options: tuple[SourceChoice, str | None, Path | None],
) -> None:
    """Add one example as a case, or note why it cannot be one; ``place`` is its index and its
    line."""
    source, select, folder = options
    index, line = place
    label = f"line {line}"
    if not isinstance(example, dict):
        imported.drop(NOT_EXAMPLE, label)
        return
    name = unique_name(_name(example, index), taken)
    try:
        reference = (
            apply_select(example, select, str(imported.origin)) if select else _reference(example)
        )
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
    imported.cases.append(
        {
            "name": name,
            "source": source.render(name, args, folder),
            "steps": steps_of_calls(traj.calls),
        }
    )


def _reference(example: dict[str, Any]) -> Any:
    """The reference messages of an example: ``outputs.messages``, ``outputs.trajectory``, or a list
    ``outputs``."""
    outputs = example.get("outputs")
    if isinstance(outputs, list):
        return outputs
    if isinstance(outputs, dict):
        return next(
            (outputs[k] for k in REFERENCE_KEYS if isinstance(outputs.get(k), (list, dict))), None
        )
    return None


def _name(example: dict[str, Any], index: int) -> str:
    """A case name: ``metadata.name``, else the first text input (cut), else the example's id, else
    its line."""
    metadata = example.get("metadata")
    if (
        isinstance(metadata, dict)
        and isinstance(metadata.get("name"), str)
        and metadata["name"].strip()
    ):
        return metadata["name"].strip()
    inputs = example.get("inputs")
    texts = (
        [v for v in inputs.values() if isinstance(v, str) and v.strip()]
        if isinstance(inputs, dict)
        else []
    )
    if texts:
        text = " ".join(texts[0].split())
        return text if len(text) <= NAME_WIDTH else text[: NAME_WIDTH - 1] + "…"
    if isinstance(example.get("id"), str) and example["id"]:
        return example["id"]
    return f"example {index + 1}"


def _header(path: Path, mode: str, args_mode: str, source: SourceChoice) -> list[str]:
    """The comment on top of the suite."""
    lines = [
        f"Imported by `trajrun import langsmith` from {path.name}.",
        f"Steps: each example's reference tool calls, mode {mode}, arguments {args_mode}.",
    ]
    if source.file is None:
        lines += [
            f"Source: `{source.python}` is called with the example's `inputs`; "
            "it runs the agent and returns",
            "its messages. Replace it with your function, "
            "or with `source: <file>` for a saved run.",
        ]
    return lines
