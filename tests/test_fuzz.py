"""Fuzzing: every reader, the suite loader and the report writers on hostile input raise only trajrun's clean errors.

A clean error is a ``TrajrunError`` (``SourceError``, ``SuiteErrors``, ...): the CLI prints it
without a traceback. Anything else (``KeyError``, ``RecursionError``, ``TypeError``...) fails here.

CI runs a small fixed budget (a few dozen examples per test, derandomized, about 5 s in all). For
a longer, random run by hand, set the number of examples per test::

    TRAJRUN_FUZZ_EXAMPLES=5000 .venv/bin/pytest -q tests/test_fuzz.py

Hypothesis prints the smallest failing input; add it to a regular test when you fix the bug.
"""

from __future__ import annotations

import copy
import gzip
import io
import json
import math
import os
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from report_helpers import drive
from trajrun.errors import SourceError, TrajrunError
from trajrun.match.evaluate import evaluate
from trajrun.match.expectation import Expectation, Step
from trajrun.reports import json_report, junit
from trajrun.reports.console import ConsoleReporter
from trajrun.run.results import OUTCOME_ORDER, CaseResult, RunResult, SuiteResult
from trajrun.sources import FORMATS, load_trajectory, read_trajectory
from trajrun.suites.load import CASE_KEYS, TOP_KEYS, load_suite
from trajrun.suites.source_keys import SOURCE_KEYS
from trajrun.trajectory import ToolCall, Trajectory

SAMPLES = sorted((Path(__file__).parent / "data" / "samples").rglob("*.json"))
BY_HAND = os.environ.get("TRAJRUN_FUZZ_EXAMPLES", "").strip()
FUZZ = settings(
    max_examples=int(BY_HAND) if BY_HAND else 20,
    deadline=None,
    derandomize=not BY_HAND,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)


def clean(call: Any, *args: Any, **kwargs: Any) -> Any:
    """Call; a ``TrajrunError`` is a clean refusal (``None``), anything else propagates and fails the test."""
    try:
        return call(*args, **kwargs)
    except TrajrunError:
        return None


def _otel_span(*attributes: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    """An OTLP JSON trace of one span with these ``(key, value)`` attributes."""
    pairs = [{"key": key, "value": value} for key, value in attributes]
    span = {"name": "chat", "traceId": "t", "spanId": "a", "attributes": pairs}
    return {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}


# Inputs this fuzzing found that once crashed a reader with a TypeError or AttributeError (a traceback in
# `trajrun run`): each is now read sensibly, or refused with the reader's reason so detection tries the next format.
FOUND_REFUSED = [
    pytest.param([{"type": "ai", "data": {"content": "", "tool_calls": ["x"]}}], "langchain",
                 "an AI message's 'tool_calls' is not a list of mappings", id="langchain-call-not-a-mapping"),
    pytest.param([{"type": "ai", "data": {"content": "", "additional_kwargs": ["x"]}}], "langchain",
                 "an AI message's 'additional_kwargs' is not a mapping", id="langchain-kwargs-not-a-mapping"),
    pytest.param({"messages": [{"role": "assistant", "tool_calls": [["x"]]}], "tool_calls": []}, "trajectory",
                 "a message's 'tool_calls' is not a list of mappings", id="native-elixir-call-not-a-mapping"),
    pytest.param({"messages": [{"role": "tool", "tool_results": "x"}], "tool_calls": []}, "trajectory",
                 "a message's 'tool_results' is not a list of mappings", id="native-elixir-results-not-a-list"),
    pytest.param([{"role": "model", "parts": [{"functionCall": ["x"]}]}], "gemini",
                 "a part has a functionCall that is not a mapping", id="gemini-call-not-a-mapping"),
    pytest.param([{"role": "user", "parts": [{"functionResponse": "x"}]}], "gemini",
                 "a part has a functionResponse that is not a mapping", id="gemini-response-not-a-mapping"),
    pytest.param({"eval_cases": [{"conversation": [{"intermediate_data": {"invocation_events": [None]}}]}]}, "gemini",
                 "an invocation event is not a mapping", id="gemini-event-not-a-mapping"),
    pytest.param({"eval_cases": [{"conversation": [{"intermediate_data": {"tool_uses": 3}}]}]}, "gemini",
                 "intermediate data has 'toolUses' that is not a list", id="gemini-tool-uses-not-a-list"),
    pytest.param({"eval_cases": [["x"]]}, "gemini", "an eval case without a 'conversation' list",
                 id="gemini-eval-case-not-a-mapping"),
    pytest.param(_otel_span(("gen_ai.operation.name", {"arrayValue": {"values": [{"stringValue": "chat"}]}})), "otel",
                 "with no LLM or tool span", id="otel-operation-name-a-list"),
    pytest.param([{"role": "assistant", "content": [{"type": ["text"], "text": "hi"}]}], "anthropic",
                 "message 0 has a content block without 'type'", id="builder-block-type-a-list"),
]
FOUND_READ = [
    pytest.param([{"type": "ai", "data": {"content": "", "tool_calls": [{"name": "a", "args": {}, "id": ["x"]}]}}],
                 "langchain", [("a", {}, ["x"], False)], id="langchain-call-id-a-list"),
    pytest.param(_otel_span(("gen_ai.operation.name", {"stringValue": "chat"}),
                            ("gen_ai.input.messages", {"stringValue": '[{"role": ["x"], "parts": []}]'})),
                 "otel", [], id="otel-role-a-list"),
    pytest.param(_otel_span(("gen_ai.operation.name", {"stringValue": "execute_tool"}),
                            ("gen_ai.tool.name", {"stringValue": "a"}),
                            ("gen_ai.tool.call.id", {"kvlistValue": {"values": []}})),
                 "otel", [("a", "<not captured>", None, False)], id="otel-call-id-a-map"),
    pytest.param([{"role": "model", "parts": [{"functionCall": {"name": "a"}}]},
                  {"role": "user", "parts": [{"functionResponse": {"name": ["a"], "response": 1}}]}],
                 "gemini", [("a", {}, None, False)], id="builder-result-name-a-list"),
    pytest.param([{"type": "ai", "data": {"content": [{"type": ["tool_use"], "name": "a"}]}}], "langchain", [],
                 id="langchain-block-type-a-list"),
]


@pytest.mark.parametrize(("doc", "fmt", "reason"), FOUND_REFUSED)
def test_odd_shapes_fuzzing_found_are_refused_with_a_reason(doc: Any, fmt: str, reason: str) -> None:
    """A shape a reader cannot read is a SourceError with the reader's reason (detection tries the next format)."""
    with pytest.raises(SourceError) as info:
        read_trajectory(doc, fmt)
    assert reason in str(info.value)
    clean(read_trajectory, doc, "auto")


@pytest.mark.parametrize(("doc", "fmt", "calls"), FOUND_READ)
def test_odd_shapes_fuzzing_found_are_read(doc: Any, fmt: str, calls: list[tuple[Any, ...]]) -> None:
    """An odd value where a reader can do without it: an id or tool name that is a list or a map pairs with nothing."""
    traj = read_trajectory(doc, fmt)
    assert [(c.name, c.args, c.id, c.has_result) for c in traj.calls] == calls


# -- JSON shaped like the message formats ------------------------------------------------------

KEYS = {
    "openai": ["role", "content", "tool_calls", "function", "name", "arguments", "id", "type", "tool_call_id",
               "function_call", "choices", "message", "usage", "prompt_tokens", "completion_tokens", "refusal"],
    "openai-responses": ["type", "call_id", "name", "arguments", "output", "id", "status", "role", "content",
                         "input", "usage", "input_tokens", "output_tokens", "text"],
    "anthropic": ["role", "content", "type", "id", "name", "input", "tool_use_id", "is_error", "text", "messages",
                  "usage", "input_tokens", "output_tokens", "server_name", "stop_reason"],
    "gemini": ["role", "parts", "functionCall", "function_call", "functionResponse", "name", "args", "response",
               "id", "contents", "candidates", "content", "events", "author", "usageMetadata", "eval_cases",
               "conversation", "tool_uses", "intermediate_data", "invocation_id", "session", "text"],
    "bedrock": ["role", "content", "toolUse", "toolResult", "toolUseId", "name", "input", "status", "text", "json",
                "output", "message", "messages", "usage", "inputTokens", "outputTokens"],
    "langchain": ["type", "data", "content", "tool_calls", "name", "args", "id", "lc", "kwargs", "additional_kwargs",
                  "tool_call_id", "usage_metadata", "input_tokens", "output_tokens", "status", "invalid_tool_calls"],
    "langgraph": ["channel_values", "values", "messages", "checkpoint", "type", "data", "content", "tool_calls",
                  "name", "args", "id", "v", "ts"],
    "graph": ["steps", "inputs", "outputs", "nodes", "results", "extracted"],
    "trajectory": ["tool_calls", "name", "args", "id", "turn", "result", "has_result", "error", "usage", "answer",
                   "turns", "format", "input_tokens", "output_tokens"],
    "otel": ["resourceSpans", "scopeSpans", "spans", "attributes", "key", "value", "stringValue", "name"],
}
WORDS = ["user", "assistant", "tool", "model", "system", "ai", "human", "function", "tool_use", "tool_result", "text",
         "function_call", "function_call_output", "message", "constructor", "search", "get_forecast", "{}",
         '{"q": 1}', "{not json", "success", "error", "__start__", "agent"]
SCALARS = (st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=True)
           | st.sampled_from(WORDS) | st.text(max_size=12))


def shaped(fmt: str) -> st.SearchStrategy[Any]:
    """JSON values whose maps mostly use ``fmt``'s keys (every format's, for one not listed here), nested a few
    levels."""
    keys = st.sampled_from(KEYS.get(fmt) or sorted(set().union(*KEYS.values()))) | st.text(max_size=6)
    return st.recursive(
        SCALARS,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=6),
        max_leaves=40,
    )


@FUZZ
@given(st.sampled_from(FORMATS).flatmap(lambda fmt: st.tuples(st.just(fmt), shaped(fmt))))
def test_readers_on_shaped_json(case: tuple[str, Any]) -> None:
    """Each reader, and detection, on random JSON in its format's words: a trajectory or a SourceError."""
    fmt, doc = case
    clean(read_trajectory, doc, fmt)
    clean(read_trajectory, doc, "auto")


def _paths(doc: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key path in ``doc`` (the root included)."""
    found = [path]
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for key, value in items:
        found.extend(_paths(value, (*path, key)))
    return found


def _mutate(doc: Any, path: tuple[Any, ...], how: str, value: Any) -> Any:
    """``doc`` with the node at ``path`` replaced, dropped, wrapped in a list, or turned into its text."""
    if not path:
        return {"replace": value, "wrap": [doc], "text": json.dumps(doc)}.get(how, value)
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    last = path[-1]
    if how == "drop":
        del parent[last]
    elif how == "wrap":
        parent[last] = [parent[last]]
    elif how == "text":
        parent[last] = json.dumps(parent[last])
    else:
        parent[last] = value
    return doc


@st.composite
def mutated_samples(draw: Any) -> Any:
    """A real sample with a few random nodes replaced, dropped, wrapped or stringified."""
    doc = copy.deepcopy(_sample(draw(st.sampled_from(SAMPLES))))
    for _ in range(draw(st.integers(1, 4))):
        path = draw(st.sampled_from(_paths(doc)))
        how = draw(st.sampled_from(["replace", "drop", "wrap", "text"]))
        doc = _mutate(doc, path, how, draw(shaped(draw(st.sampled_from(FORMATS)))))
    return doc


_LOADED: dict[Path, Any] = {}


def _sample(path: Path) -> Any:
    """A sample's JSON, read once."""
    if path not in _LOADED:
        _LOADED[path] = json.loads(path.read_text(encoding="utf-8"))
    return _LOADED[path]


@FUZZ
@given(mutated_samples(), st.sampled_from(("auto", *FORMATS)))
def test_readers_on_mutated_samples(doc: Any, fmt: str) -> None:
    """Real samples, damaged: every reader gives a trajectory or a SourceError, and its inner documents too."""
    clean(read_trajectory, doc, fmt)
    for inner in (doc.values() if isinstance(doc, dict) else ()):
        clean(read_trajectory, inner, "auto")


@st.composite
def damaged_files(draw: Any) -> tuple[str, bytes]:
    """A sample's bytes with random bytes overwritten and a random cut, as .json, .jsonl, .yaml or gzipped."""
    data = bytearray(draw(st.sampled_from(SAMPLES)).read_bytes())
    for _ in range(draw(st.integers(0, 6))):
        data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
    data = data[: draw(st.integers(0, len(data)))]
    suffix = draw(st.sampled_from([".json", ".jsonl", ".yaml", ".json.gz", ".jsonl.gz"]))
    if suffix.endswith(".gz"):
        packed = bytearray(gzip.compress(bytes(data)))
        if draw(st.booleans()) and len(packed) > 20:
            packed[draw(st.integers(10, len(packed) - 1))] ^= draw(st.integers(1, 255))
        data = packed
    return suffix, bytes(data)


def _corrupt_gzip() -> bytes:
    """A gzip file whose deflate stream has one flipped byte."""
    data = bytearray(gzip.compress(json.dumps({"a": list(range(500))}).encode()))
    data[30] ^= 0xFF
    return bytes(data)


@FUZZ
@given(damaged_files(), st.sampled_from(FORMATS), st.none() | st.sampled_from(["$.messages", "$..content", "$[0]"]),
       st.none() | st.integers(1, 3))
@example(file=(".json", b"[" * 10_000), fmt="openai", select=None, record=None)
@example(file=(".jsonl", b'{"a": 1}\n{"a": ' + b"7" * 5_000 + b"}\n"), fmt="openai", select=None, record=2)
@example(file=(".yaml", b"a: 0x" + b"f" * 5_000 + b"\n"), fmt="openai", select=None, record=None)
@example(file=(".json.gz", _corrupt_gzip()), fmt="openai", select=None, record=None)
@example(file=(".json", b'[{"a": "b"}, {"a": 1}]'), fmt="openai", select="$[/a]", record=None)
def test_load_trajectory_on_damaged_files(tmp_path_factory: Any, file: tuple[str, bytes], fmt: str,
                                          select: str | None, record: int | None) -> None:
    """Damaged or truncated files (bad UTF-8, bad gzip, cut JSON) load or give a SourceError naming the file."""
    suffix, data = file
    path = tmp_path_factory.mktemp("fuzz") / f"run{suffix}"
    path.write_bytes(data)
    clean(load_trajectory, path, format=fmt, select=select, record=record if ".jsonl" in suffix else None)


# -- suites --------------------------------------------------------------------------------------

TEMPLATES = ["{{ x }}", "{{ 10 ** 10 ** 9 }}", "{% for i in range(3) %}{{ i }}{% endfor %}", "{{ undefined_var }}",
             "{{ 'a' * 10 }}", "{{", "{% if %}", "{{ env.HOME }}", "{{ lipsum(2) }}", "runs/{{ x }}.json", "a}}b"]
MATCHERS = ["$regex", "$gt", "$in", "$type", "$absent", "$contains", "$expr", "$not", "$literal", "$approx", "$tol",
            "$icase", "$any", "$lt", "$regx"]
SUITE_WORDS = ["strict", "subset", "superset", "unordered", "in_order", "exact", "ignore", "icase", "search",
               "run.json", "runs/a.json", "openai", "auto", "$.messages", "$.a[?(@.b =~ '(')]", "(a+)+$", "x", "1",
               *TEMPLATES]


def suite_values() -> st.SearchStrategy[Any]:
    """Values a suite might hold: words, templates, numbers (huge ones too), matcher maps, nested a little."""
    scalars = (st.none() | st.booleans() | st.integers(-5, 10) | st.integers(-(10**30), 10**30) | st.floats()
               | st.sampled_from(SUITE_WORDS) | st.text(max_size=10))
    known = [*CASE_KEYS, *SOURCE_KEYS, *MATCHERS, "min", "max", "calls", "tokens", "fields"]
    keys = st.sampled_from(known) | st.text(max_size=5)
    return st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=4),
                        max_leaves=25)


@st.composite
def suite_trees(draw: Any) -> dict[str, Any]:
    """A suite: top-level keys (mostly known), cases with mostly known keys and random values."""
    case = st.dictionaries(st.sampled_from(CASE_KEYS) | st.text(max_size=5), suite_values(), max_size=7)
    cases = draw(st.lists(case, max_size=3) | suite_values())
    top = draw(st.dictionaries(st.sampled_from(TOP_KEYS) | st.text(max_size=5), suite_values(), max_size=4))
    if draw(st.booleans()):
        top["cases"] = cases
    return top


@FUZZ
@given(suite_trees())
@example(tree={"cases": [{"name": "bomb", "source": "r.json", "steps": [{"search": {"q": "{{ 10 ** (10 ** 9) }}"}}]}]})
@example(tree={"cases": [{"name": "grid", "source": "r.json", "steps": ["search"],
                          "parametrize": {key: list(range(100)) for key in "abcd"}}]})
@example(tree={"cases": [{"name": "re", "source": "r.json", "answer": {"$regex": "(?:a{1000}){1000}"}}]})
def test_suite_loader_on_random_trees(tmp_path_factory: Any, tree: dict[str, Any]) -> None:
    """Random suites written as YAML load, or raise SuiteErrors listing problems; never anything else."""
    path = tmp_path_factory.mktemp("suite") / "t.suite.yaml"
    path.write_text(yaml.safe_dump(tree, allow_unicode=True), encoding="utf-8")
    clean(load_suite, path, {"x": "1"})


@FUZZ
@given(st.binary(max_size=300) | st.text(max_size=300).map(str.encode))
@example(data=b"cases: [{name: a, source: r.json, steps: [{s: {n: " + b"9" * 5_000 + b"}}]}]\n")
@example(data=b"cases: [{name: a, source: r.json, steps: [{s: {n: 0x" + b"f" * 5_000 + b"}}]}]\n")
def test_suite_loader_on_random_bytes(tmp_path_factory: Any, data: bytes) -> None:
    """Arbitrary bytes as a suite file: SuiteErrors (not UTF-8, bad YAML, not a suite) or a suite."""
    path = tmp_path_factory.mktemp("suite") / "t.suite.yaml"
    path.write_bytes(data)
    clean(load_suite, path)


# -- reports -------------------------------------------------------------------------------------

ANY_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=30)  # surrogates and controls too
JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True) | ANY_TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(ANY_TEXT, inner, max_size=3),
    max_leaves=12,
)
CALLS = st.lists(st.tuples(ANY_TEXT, st.dictionaries(ANY_TEXT, JSONISH, max_size=3) | ANY_TEXT, JSONISH), max_size=4)


@st.composite
def case_results(draw: Any) -> CaseResult:
    """A case result holding arbitrary Unicode everywhere, with a real evaluation of random steps on random calls."""
    calls = draw(CALLS)
    traj = Trajectory(tuple(ToolCall(name, args, turn=i, position=i, result=result, has_result=True)
                            for i, (name, args, result) in enumerate(calls)), turns=len(calls))
    steps = tuple(Step(name, args) for name, args, _ in draw(CALLS))
    evaluation = evaluate(Expectation(steps=steps, mode=draw(st.sampled_from(["strict", "unordered"]))), traj)
    return CaseResult(
        case_id=draw(ANY_TEXT), suite=draw(ANY_TEXT), name=draw(ANY_TEXT), file=draw(ANY_TEXT),
        line=draw(st.integers(0, 10**6)), outcome=draw(st.sampled_from(OUTCOME_ORDER)),
        duration=draw(st.floats(0, 1e6)), message=draw(ANY_TEXT) or evaluation.message(),
        details=evaluation.details() + draw(ANY_TEXT), check_type=draw(st.none() | ANY_TEXT),
        score=draw(st.none() | st.floats(allow_nan=True)), evaluation=evaluation, trajectory=traj,
        notes=tuple(draw(st.lists(ANY_TEXT, max_size=2))),
    )


@st.composite
def run_results(draw: Any) -> RunResult:
    """Suites of such cases, some that could not be loaded."""
    suites = [SuiteResult(draw(ANY_TEXT), draw(ANY_TEXT), cases=tuple(draw(st.lists(case_results(), max_size=3))),
                          load_errors=tuple(draw(st.lists(ANY_TEXT, max_size=2))))
              for _ in range(draw(st.integers(0, 3)))]
    return RunResult(tuple(suites), duration=draw(st.floats(0, 1e6)), deselected=draw(st.integers(0, 5)))


@FUZZ
@given(run_results(), st.integers(-1, 2), st.booleans())
def test_report_writers_on_arbitrary_unicode(tmp_path_factory: Any, run: RunResult, verbosity: int,
                                             color: bool) -> None:
    """Console, JUnit and JSON reports take any text; the files they write parse back."""
    stream = io.StringIO()
    reporter = ConsoleReporter(stream, verbosity=verbosity, color=color)
    clean(drive, reporter, run)
    folder = tmp_path_factory.mktemp("reports")
    if clean(junit.write, run, folder / "r.xml") is None and (folder / "r.xml").exists():
        ET.parse(folder / "r.xml")
    if clean(json_report.write, run, folder / "r.json") is None and (folder / "r.json").exists():
        data = json.loads((folder / "r.json").read_text(encoding="utf-8"))
        assert all(not isinstance(v, float) or math.isfinite(v) for v in _leaves(data))


def _leaves(data: Any) -> list[Any]:
    """Every scalar in parsed JSON."""
    if isinstance(data, dict):
        return [leaf for value in data.values() for leaf in _leaves(value)]
    if isinstance(data, list):
        return [leaf for value in data for leaf in _leaves(value)]
    return [data]
