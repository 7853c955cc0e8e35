"""Large suite files read and run case by case: the same data, marks, errors and results as loading them whole,
without holding every case."""

from __future__ import annotations

import gc
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from properties import PROPERTY
from trajrun.errors import SuiteErrors
from trajrun.match.expectation import Step
from trajrun.run.execute import SourceCache
from trajrun.run.plans import RunOptions
from trajrun.run.prerun import prerun
from trajrun.run.runner import run_paths
from trajrun.run.validate import validate_paths
from trajrun.suites import load as suite_load
from trajrun.suites.load import SuiteStream, load_suite, open_suite
from trajrun.suites.model import Case
from trajrun.yaml_core import YamlProblem, load_text
from trajrun.yaml_items import Unsplittable, split_last_sequence
from yaml_paths import paths_in

EXAMPLES = Path(__file__).resolve().parent.parent / "suites"
RUN = '[{"role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": "search", "arguments": "{\\"q\\": \\"x\\"}"}}]}]'


@pytest.fixture
def stream_every_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stream files of any size (the threshold is a megabyte)."""
    monkeypatch.setattr(suite_load, "STREAM_BYTES", 0)


def split_or_whole(text: str) -> tuple[str, object]:
    """How the text reads item by item: ("split", (head data, item data, marks)), or why it is read whole."""
    try:
        split = split_last_sequence(text, "cases")
        if split is None:
            return "whole", None
        items = list(split.items("cases"))
    except Unsplittable:
        return "unsplittable", None
    return "split", (split, items)


def assert_same_as_whole(text: str, split: object, items: list) -> None:  # type: ignore[type-arg]
    """The items' data and every mark they hold are the whole document's; the head's keys too."""
    whole = load_text(text)
    assert [loaded.data for _, loaded in items] == whole.data["cases"]
    assert {k: v for k, v in split.head.data.items() if k != "cases"} == {k: v for k, v in whole.data.items() if k != "cases"}
    assert split.head.marks.value(("cases",)) == whole.marks.value(("cases",))
    for index, loaded in items:
        for path in paths_in(loaded.data, ("cases", index)):
            assert loaded.marks.value(path) == whole.marks.value(path), path
            assert loaded.marks.key(path) == whole.marks.key(path), path
        for path in list(paths_in(whole.data, ()))[:20]:  # head paths fall back to the head's marks
            if path[:1] != ("cases",):
                assert loaded.marks.value(path) == whole.marks.value(path), path
                assert loaded.marks.key(path) == whole.marks.key(path), path



def test_example_suites_split_into_the_same_data_and_marks() -> None:
    """Every example suite either splits into exactly what loading it whole gives, or is read whole."""
    split_count = 0
    for path in sorted(EXAMPLES.glob("*.suite.yaml")):
        text = path.read_text(encoding="utf-8")
        how, parts = split_or_whole(text)
        if how == "split":
            assert_same_as_whole(text, *parts)  # type: ignore[misc]
            split_count += 1
    assert split_count >= 10


SAFE_LINES = st.sampled_from([
    ["source: runs/a.json"],
    ["note: plain words", "      continued deeper"],
    ["text: |", "      block line", "", "      after a blank"],
    ["flow: {a: 1,", "      b: [2, 3]}"],
    ["# a comment in the item"],
    ["anchored: &shared {x: 1}", "merged: {<<: *shared, y: 2}"],
    ["tags: [a, b]  # trailing comment"],
    ["empty:"],
])
TRICKY_LINES = st.sampled_from([
    ['quoted: "starts here', '  - and goes on at the dash"'],   # a quoted scalar across a line like an item's
    ["open: [1,", "  - 2]"],
    ["anchored: &shared {x: 1}"],
    ["aliased: *shared"],                                       # to an anchor of another item, or of none
    ["dup: 1", "dup: 2"],
])
ITEM_LINES = st.one_of(SAFE_LINES, SAFE_LINES, SAFE_LINES, TRICKY_LINES)


@st.composite
def suite_texts(draw: st.DrawFn) -> str:
    """A suite whose items mix what a slice could end inside of, at the item's indentation or not."""
    indent = draw(st.sampled_from(["", "  ", "    "]))
    lines = ["suite: generated", "defaults: {mode: strict}", "cases:"]
    for n in range(draw(st.integers(1, 5))):
        lines.append(f"{indent}- name: case {n}")
        for chunk in draw(st.lists(ITEM_LINES, max_size=4)):
            lines += [f"{indent}  {chunk[0]}", *(line.replace("  - ", f"{indent}- ", 1) if line.startswith("  - ")
                                                  else line for line in chunk[1:])]
        if draw(st.booleans()):
            lines.append(draw(st.sampled_from(["", "# between items", "  # indented comment"])))
    if draw(st.integers(0, 4)) == 0:
        lines.append(draw(st.sampled_from(["tags: [after]", "---", "...", "\t- tabbed"])))
    return "\n".join(lines) + "\n"


@PROPERTY
@given(suite_texts())
def test_a_split_never_reads_differently_from_the_whole(text: str) -> None:
    """Item by item gives the whole document's data and marks, or declines: it is never silently different."""
    how, parts = split_or_whole(text)
    if how != "split":
        return
    try:
        whole = load_text(text)
    except YamlProblem as problem:
        pytest.fail(f"the file does not load whole ({problem.message}) but was split:\n{text}")
    assert not whole.duplicates
    assert_same_as_whole(text, *parts)  # type: ignore[misc]


@pytest.mark.parametrize("text", [
    "cases:\n  - name: a\nsuite: after\n",                       # cases is not the last key
    "cases: [{name: a}]\n",                                      # a flow sequence
    "suite: s\r\ncases:\r\n  - name: a\r\n",                      # CRLF line ends
    "cases:\n  - name: a\n---\ncases:\n  - name: b\n",           # a second document
    "cases:\n  - name: a\n\t- name: b\n",                         # a tab where an indent belongs
])
def test_other_layouts_are_read_whole(text: str) -> None:
    """Anything but a block list of cases as the last key is left to the whole-file reader."""
    assert split_last_sequence(text, "cases") is None


@pytest.mark.parametrize("text", [
    "base: 1\ncases:\n  - name: a\n    x: &x {k: 1}\n  - name: b\n    y: *x\n",      # an alias to another item
    'cases:\n  - name: "a\n  - b"\n',                                                # a quoted scalar over a dash line
    "cases:\n  - name: a\n    name: b\n",                                            # a duplicate key
    "cases:\n  - name: !!python/object x\n",                                         # a refused tag
])
def test_an_item_that_does_not_stand_alone_is_unsplittable(text: str) -> None:
    """The whole file then says exactly what it holds (or what is wrong with it)."""
    split = split_last_sequence(text, "cases")
    assert split is not None
    with pytest.raises(Unsplittable):
        list(split.items("cases"))


def test_example_suites_stream_the_cases_they_load(monkeypatch: pytest.MonkeyPatch) -> None:
    """The header and every case, built one at a time, equal the suite loaded whole."""
    streamed = 0
    for path in sorted(EXAMPLES.glob("*.suite.yaml")):
        monkeypatch.setattr(suite_load, "STREAM_BYTES", 1 << 20)
        whole = load_suite(path)
        monkeypatch.setattr(suite_load, "STREAM_BYTES", 0)
        assert repr(load_suite(path)) == repr(whole)  # a large file is loaded from its stream
        stream = open_suite(path)
        if not isinstance(stream, SuiteStream):
            continue
        try:
            cases = tuple(stream.cases)
        except Unsplittable:
            continue
        assert repr(cases) == repr(whole.cases)  # compiled matchers compare by identity, their reprs by what they match
        assert stream.suite == whole.__class__(whole.name, whole.path, whole.description, whole.tags, (), whole.loc,
                                               whole.judge_defaults)
        streamed += 1
    assert streamed >= 10


def write_runs(folder: Path) -> None:
    """One run the cases below read: a single search call."""
    (folder / "runs").mkdir(parents=True, exist_ok=True)
    (folder / "runs" / "a.json").write_text(RUN)


def case_lines(n: int, extra: str = "", tool: str = "search") -> str:
    """One case reading runs/a.json that expects one call."""
    return f"  - name: case {n}\n    source: runs/a.json\n    steps: [{tool}]\n{extra}"


def test_errors_of_a_streamed_file_are_those_of_the_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every error, in file order, with the same locations; raised once the last case is read."""
    write_runs(tmp_path)
    path = tmp_path / "bad.suite.yaml"
    path.write_text("suite: bad\ndefaults: {mode: stricter}\ncases:\n" + case_lines(0) + case_lines(0)
                    + case_lines(2, "    setps: [x]\n") + case_lines(3, "    budget: {calls: -1}\n"))
    with pytest.raises(SuiteErrors) as whole:
        load_suite(path)
    monkeypatch.setattr(suite_load, "STREAM_BYTES", 0)
    stream = open_suite(path)
    assert isinstance(stream, SuiteStream)
    with pytest.raises(SuiteErrors) as streamed:
        list(stream.cases)
    assert [str(e) for e in streamed.value.errors] == [str(e) for e in whole.value.errors]
    assert len(whole.value.errors) >= 4


def outcomes(paths: list[Path], **options: object) -> tuple[object, ...]:
    """What a run reports: every case's id, outcome, message and body, load errors, the summary and exit code."""
    result = run_paths(paths, RunOptions(root=paths[0].parent if paths[0].is_file() else paths[0], **options))  # type: ignore[arg-type]
    cases = [(c.case_id, c.outcome, c.message, c.details, c.line) for c in result.cases]
    errors = [s.load_errors for s in result.suites]
    summary = result.summary_line().rsplit(" in ", 1)[0]
    return cases, errors, summary, result.exit_code(), result.not_run, result.deselected


def test_example_suites_run_alike_streamed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Every example suite, streamed (live cases waiting for the run), gives the results of the run loading them whole."""
    folder = tmp_path / "suites"
    # all but the two slowest files (agents run as commands, LangGraph): a live case is in the selection test
    shutil.copytree(EXAMPLES, folder, ignore=shutil.ignore_patterns("__pycache__", "live.suite.yaml",
                                                                     "checkpoints.suite.yaml"))
    whole = outcomes([folder])
    monkeypatch.setattr(suite_load, "STREAM_BYTES", 0)
    assert outcomes([folder]) == whole
    assert len(whole[0]) > 30


def test_a_load_error_late_in_a_streamed_file_drops_its_results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The file is one load error, as loaded whole; the next file still runs."""
    write_runs(tmp_path)
    cases = "".join(case_lines(n) for n in range(5))
    (tmp_path / "a.suite.yaml").write_text("suite: late error\ncases:\n" + cases + case_lines(5, "    mdoe: strict\n"))
    (tmp_path / "b.suite.yaml").write_text("suite: fine\ncases:\n" + case_lines(0))
    whole = outcomes([tmp_path])
    monkeypatch.setattr(suite_load, "STREAM_BYTES", 0)
    streamed = outcomes([tmp_path])
    assert streamed == whole
    assert streamed[0] == [("b.suite.yaml::case 0", "passed", "", "", 3)]
    assert "a.suite.yaml:21:5: cases[5].mdoe: unknown key" in streamed[1][0][0]
    assert streamed[3] == 2


@pytest.mark.parametrize("options", [{"exitfirst": True}, {"keyword": "not 3"}, {"marker": "smoke"},
                                     {"shard": (2, 3)}])
def test_selection_and_exitfirst_streamed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, options: dict) -> None:  # type: ignore[type-arg]
    """-k, -m, --shard and -x select and stop as they do on a file loaded whole; a live case waits for the run."""
    write_runs(tmp_path)
    cases = "".join(case_lines(n, "    tags: [smoke]\n" if n % 2 else "", "search" if n != 2 else "fetch")
                    for n in range(8))
    cases += "  - name: live\n    source: {command: \"cat runs/a.json\"}\n    steps: [search]\n" + case_lines(9)
    (tmp_path / "a.suite.yaml").write_text("suite: selected\ncases:\n" + cases)
    (tmp_path / "b.suite.yaml").write_text("suite: after\ncases:\n" + case_lines(0))
    whole = outcomes([tmp_path], **options)
    monkeypatch.setattr(suite_load, "STREAM_BYTES", 0)
    assert outcomes([tmp_path], **options) == whole


def test_a_streamed_file_holds_results_not_cases(tmp_path: Path, stream_every_file: None) -> None:
    """Without the JSON or HTML report, no case of a streamed file outlives its run: only results are kept."""
    write_runs(tmp_path)
    path = tmp_path / "a.suite.yaml"
    path.write_text("suite: held\ncases:\n" + "".join(case_lines(n) for n in range(50)))
    held = prerun(path, RunOptions(keep=frozenset()), tmp_path, SourceCache())
    assert held is not None
    planned, left_out = held
    gc.collect()
    alive = [o for o in gc.get_objects() if isinstance(o, (Case, Step)) and getattr(o.loc, "file", None) == str(path)]
    assert alive == []
    assert len(planned.cases) == 50 and left_out == 0
    assert {result.outcome for _, result in planned.cases} == {"passed"}  # type: ignore[union-attr]
    kept = prerun(path, RunOptions(), tmp_path, SourceCache())  # for the JSON report, the steps stay
    assert kept is not None
    assert all(result.evaluation.steps.expected_steps for _, result in kept[0].cases)  # type: ignore[union-attr]


def test_validate_checks_a_streamed_file_alike(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`trajrun validate` reports what it reports for the file loaded whole: missing sources, or else its load errors."""
    write_runs(tmp_path)
    path = tmp_path / "a.suite.yaml"
    gone = "  - name: gone\n    source: runs/missing.json\n    steps: [search]\n"
    for text in (case_lines(0) + gone + case_lines(2), case_lines(0) + gone + case_lines(2, "    mdoe: strict\n")):
        path.write_text("suite: checked\ncases:\n" + text)
        monkeypatch.setattr(suite_load, "STREAM_BYTES", 1 << 20)
        whole = validate_paths([tmp_path], {})
        monkeypatch.setattr(suite_load, "STREAM_BYTES", 0)
        assert validate_paths([tmp_path], {}) == whole
        assert len(whole[0]) == 1 and ("missing.json does not exist" in whole[0][0] or "mdoe" in whole[0][0])


def test_an_interrupt_while_a_large_file_runs_keeps_what_finished(tmp_path: Path, stream_every_file: None,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C during the third case: the two that finished are in the interrupted run's result."""
    from trajrun.run import prerun as prerun_module
    from trajrun.run.runner import RunInterrupted

    write_runs(tmp_path)
    (tmp_path / "a.suite.yaml").write_text("suite: cut\ncases:\n" + "".join(case_lines(n) for n in range(5)))
    real, calls = prerun_module.run_case, []

    def interrupted_third(*args: object, **kwargs: object) -> object:
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(prerun_module, "run_case", interrupted_third)
    with pytest.raises(RunInterrupted) as info:
        run_paths([tmp_path], RunOptions(root=tmp_path))
    assert [(c.name, c.outcome) for c in info.value.result.cases] == [("case 0", "passed"), ("case 1", "passed")]
