"""Golden files: the recorded YAML form, reading it back, and the round trip through the matcher."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trajrun
from trajrun.errors import SuiteErrors
from trajrun.match.evaluate import evaluate
from trajrun.match.expectation import ANY_ARGS, Expectation
from trajrun.match.values import Matcher
from trajrun.suites.golden import compact_steps, dump_steps, load_golden
from trajrun.trajectory import ToolCall, Trajectory

TRICKY = ["on", "yes", "1e3", "0o17", "2024-05-01", "~", "null", "12:30", "- dash", "#hash", ""]


def _weather_run() -> Trajectory:
    """A hand-built run with every shape a golden file has to carry, one call a turn (parallel turns and
    error flags are tested in test_newcomer_items.py)."""
    return Trajectory(
        calls=(
            ToolCall("get_forecast", {"city": "Paris", "days": 3}, id="c1", turn=0, position=0),
            ToolCall("search", {"query": "weather in Paris", "limit": 5}, id="c2", turn=1, position=1),
            ToolCall("list_events", {}, id="c3", turn=2, position=2),
            ToolCall("parse_blob", "{not json", id="c4", turn=3, position=3),
            ToolCall("query", {"filter": {"$gt": 3}, "nested": [{"$in": [1]}], "tags": TRICKY}, turn=4, position=4),
            ToolCall("write_note", {"text": "line one\nline two\n", "n": 1.5, "ok": True, "none": None},
                     turn=5, position=5),
        ),
        turns=6,
    )


def test_dump_uses_tool_args_form_in_block_style() -> None:
    """Each call is `- tool: {args}`, block style, keys in call order, empty args as {}."""
    text = dump_steps(_weather_run())
    assert text.startswith(
        "- get_forecast:\n    city: Paris\n    days: 3\n"
        "- search:\n    query: weather in Paris\n    limit: 5\n"
        "- list_events: {}\n"
    )


def test_dump_writes_undecodable_args_as_long_form() -> None:
    """Raw string arguments become a long-form step with `args` the string."""
    assert "- name: parse_blob\n  args: '{not json'\n" in dump_steps(_weather_run())


def test_dump_wraps_dollar_maps_in_literal() -> None:
    """Argument maps with `$` keys are wrapped in $literal, at any depth, so they are data, not matchers."""
    text = dump_steps(_weather_run())
    assert "    filter:\n      $literal:\n        $gt: 3\n" in text
    assert "    - $literal:\n        $in:\n        - 1\n" in text


def test_dump_of_an_empty_run_is_an_empty_list(tmp_path: Path) -> None:
    """A run without calls records `[]`, which reads back as no steps."""
    assert dump_steps(Trajectory()) == "[]\n"
    path = tmp_path / "empty.yaml"
    path.write_text(dump_steps(Trajectory()))
    assert load_golden(path) == ()


def test_dump_is_deterministic() -> None:
    """The same run always gives the same text."""
    assert dump_steps(_weather_run()) == dump_steps(_weather_run())


def test_tricky_strings_read_back_as_strings(tmp_path: Path) -> None:
    """Strings YAML 1.1 or 1.2 would read as something else are quoted, so they stay strings."""
    path = tmp_path / "g.yaml"
    path.write_text(dump_steps(_weather_run()))
    query = load_golden(path)[4]
    assert query.args["tags"] == TRICKY


def test_multiline_text_is_a_literal_block(tmp_path: Path) -> None:
    """Multi-line strings are written as `|` blocks and read back unchanged."""
    text = dump_steps(_weather_run())
    assert "    text: |\n      line one\n      line two\n" in text
    path = tmp_path / "g.yaml"
    path.write_text(text)
    assert load_golden(path)[5].args["text"] == "line one\nline two\n"


@pytest.mark.parametrize("dump", [dump_steps, compact_steps])
def test_recorded_golden_passes_strict_exact_against_its_run(tmp_path: Path, dump: Any) -> None:
    """A golden file recorded from a run (block or one-line form) passes `strict` + `exact` against that run."""
    run = _weather_run()
    path = tmp_path / "weather.golden.yaml"
    path.write_text(dump(run))
    evaluation = evaluate(Expectation(steps=load_golden(path), mode="strict", args_mode="exact"), run)
    assert evaluation.passed, evaluation.details()
    assert evaluation.score == 1.0


def test_a_tool_name_ending_in_a_line_break_is_quoted() -> None:
    """A name is written plain only when all of it is a plain word: ``search\\n`` is quoted, so it reads back whole."""
    run = Trajectory((ToolCall("search\n", {"q": 1}),), 1, None, None, None, "openai")
    assert compact_steps(run) == '- {name: "search\\n", args: {"q": 1}}\n'  # long form: a suite takes no space in a key


def test_hand_written_golden_with_matchers(tmp_path: Path) -> None:
    """A hand-edited golden file may use every step form and inline matchers."""
    path = tmp_path / "g.yaml"
    path.write_text("- get_forecast\n- search: {query: {$regex: Paris}}\n- name: book\n  args_mode: ignore\n")
    steps = load_golden(path)
    assert [s.name for s in steps] == ["get_forecast", "search", "book"]
    assert steps[0].args is ANY_ARGS
    assert isinstance(steps[1].args["query"], Matcher)
    assert steps[2].args_mode == "ignore"


def test_golden_errors_are_located_in_the_golden_file(tmp_path: Path) -> None:
    """Problems in a golden file are reported at its own lines and key paths."""
    path = tmp_path / "g.yaml"
    path.write_text("- search: {q: a}\n- name: book\n  args_mdoe: ignore\n- 3\n")
    with pytest.raises(SuiteErrors) as info:
        load_golden(path)
    assert [str(e) for e in info.value.errors] == [
        f"{path}:3:3: [1].args_mdoe: unknown key 'args_mdoe' in step 'book' — did you mean 'args_mode'?",
        f"{path}:4:3: [2]: a step is a tool name, a {{tool: args}} map or a long form with `name`; found the number 3",
    ]


def test_golden_file_must_be_a_list(tmp_path: Path) -> None:
    """A golden file holding a map (a whole suite, say) is refused with what was expected."""
    path = tmp_path / "g.yaml"
    path.write_text("steps: [search]\n")
    with pytest.raises(SuiteErrors, match="a golden file is a YAML list of steps"):
        load_golden(path)


def test_compact_steps_is_one_line_per_call() -> None:
    """compact_steps writes each call as `- tool: {json}` on one line, raw args in the long form."""
    lines = compact_steps(_weather_run()).splitlines()
    assert len(lines) == 6
    assert lines[0] == '- get_forecast: {"city": "Paris", "days": 3}'
    assert lines[3] == '- {name: parse_blob, args: "{not json"}'
    assert lines[4].startswith('- query: {"filter": {"$literal": {"$gt": 3}}')


@pytest.mark.parametrize("name", ["true", "null", "1e3", "has space", "a:b", "-x"])
def test_compact_steps_quotes_names_yaml_would_misread(tmp_path: Path, name: str) -> None:
    """Tool names YAML would read as another value or split are written quoted and read back."""
    run = Trajectory((ToolCall(name, {"q": 1}),), turns=1)
    path = tmp_path / "g.yaml"
    path.write_text(compact_steps(run))
    assert [step.name for step in load_golden(path)] == [name]


def test_compact_steps_falls_back_for_nan() -> None:
    """A value JSON cannot hold (NaN) makes compact_steps use the block form."""
    run = Trajectory((ToolCall("f", {"x": float("nan")}),), turns=1)
    assert compact_steps(run) == dump_steps(run)


def test_a_name_with_a_space_is_recorded_in_the_long_form_a_suite_accepts(tmp_path: Path) -> None:
    """A suite refuses `- Intermediate Answer: {...}` (a space in a short-form step), so record writes a
    name with a space as `name:`/`args:`, and the steps load and pass as a suite's own steps."""
    run = Trajectory((ToolCall("Intermediate Answer", {"q": "x"}), ToolCall("ok_tool", {}, turn=1)), turns=2)
    assert dump_steps(run) == "- name: Intermediate Answer\n  args:\n    q: x\n- ok_tool: {}\n"
    assert compact_steps(run) == '- {name: "Intermediate Answer", args: {"q": "x"}}\n- ok_tool: {}\n'
    for text in (dump_steps(run), compact_steps(run)):
        steps = "".join(f"      {line}\n" for line in text.splitlines())
        (tmp_path / "a.suite.yaml").write_text(f"cases:\n  - name: a\n    source: r.json\n    steps:\n{steps}")
        [case] = trajrun.load_suite(tmp_path / "a.suite.yaml").cases
        assert evaluate(case.expect, run).passed
