"""Suite loading: every invalid file's exact errors, and the models built from valid ones."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
from trajrun import yaml_core as yamlload
from trajrun.errors import SuiteErrors
from trajrun.match.expectation import ANY_ARGS, UNSET, Budget, CountBound, FieldRule
from trajrun.match.values import Matcher
from trajrun.sources import FORMATS
from trajrun.suites.load import case_problems, load_suite

DATA = Path(__file__).parent / "data"
INVALID = DATA / "invalid"
VALID = DATA / "valid"


def _errors(path: str | Path, variables: dict | None = None) -> str:
    """The loader's report for a file that must not load."""
    with pytest.raises(SuiteErrors) as info:
        load_suite(path, variables)
    return "\n".join(str(e) for e in info.value.errors)


def _write(tmp_path: Path, text: str, name: str = "t.suite.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("name", sorted(p.stem for p in INVALID.glob("*.yaml")))
def test_invalid_suite_reports_exact_errors(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each broken suite reports exactly the errors in its .err file, with file:line:column and key path."""
    monkeypatch.chdir(INVALID)
    monkeypatch.delenv("TRAJRUN_TEST_SURELY_UNSET", raising=False)
    expected = (INVALID / f"{name}.err").read_text(encoding="utf-8").strip()
    assert _errors(f"{name}.yaml") == expected


def test_invalid_folder_is_big_enough_and_paired() -> None:
    """At least 40 broken suites, each with its .err file, none named like a collectable suite."""
    yamls = sorted(INVALID.glob("*.yaml"))
    assert len(yamls) >= 40
    assert all(p.with_suffix(".err").exists() for p in yamls)
    assert not list(INVALID.glob("*.suite.y*ml"))


def test_python_tag_is_never_constructed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A !!python/object/apply tag is refused before anything is built: the command it names never runs."""
    shutil.copy(INVALID / "python_object_tag.yaml", tmp_path / "evil.yaml")
    monkeypatch.chdir(tmp_path)
    assert "tag !!python/object/apply:os.system is not allowed" in _errors("evil.yaml")
    assert not (tmp_path / "pwned.txt").exists()


def test_alias_bomb_is_refused_quickly() -> None:
    """A billion-laughs document is refused after 100,000 expanded nodes, well under a second or two."""
    started = time.perf_counter()
    report = _errors(INVALID / "alias_bomb.yaml")
    assert "aliases expand to more than 100,000 nodes" in report
    assert time.perf_counter() - started < 3


@pytest.mark.parametrize("parser", ["libyaml", "python"])
def test_deep_block_nesting_is_refused_without_recursion_error(
    parser: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """10,000 nested block lists are refused with a message, by both parsers, never a RecursionError."""
    if parser == "python":
        monkeypatch.setattr(yamlload, "parser_class", yamlload.PyParser)
    path = _write(tmp_path, "cases:\n  " + "- " * 10_000 + "x\n")
    assert "nesting too deep: trajrun reads at most 200 levels" in _errors(path)


def test_missing_file_is_one_error(tmp_path: Path) -> None:
    """A file that cannot be read is reported as one error naming the file."""
    report = _errors(tmp_path / "nope.suite.yaml")
    assert report.startswith(str(tmp_path / "nope.suite.yaml"))
    assert "cannot read the file" in report


def test_full_example_loads_every_key() -> None:
    """The example using every key loads with the suite name rendered and parametrized cases expanded."""
    suite = load_suite(VALID / "full.yaml")
    assert suite.name == "weather agent"
    assert suite.description == "Every key of the format, used once."
    assert [c.name for c in suite.cases] == [
        "forecast", "from golden", "inline",
        "live Paris[city=Paris,n=1]", "live Paris[city=Paris,n=2]",
        "live Tokyo[city=Tokyo,n=1]", "live Tokyo[city=Tokyo,n=2]",
        "python[city=Lyon]", "python[city=Nice,limit=9]",
    ]


def test_default_suite_name_is_the_file_name(tmp_path: Path) -> None:
    """Without `suite:`, the name is the file name without .suite.yaml."""
    path = _write(tmp_path, "cases: [{name: a, source: r.json, steps: []}]\n", "weather.suite.yaml")
    assert load_suite(path).name == "weather"


def test_variable_precedence_vars_then_cli_then_parametrize(tmp_path: Path) -> None:
    """`parametrize` beats --var, which beats `vars`."""
    path = _write(tmp_path, """
vars: {a: from-vars, b: from-vars, c: from-vars}
cases:
  - name: p
    parametrize: {c: [from-param]}
    source: r.json
    steps: [{search: {a: "{{ a }}", b: "{{ b }}", c: "{{ c }}"}}]
""")
    step = load_suite(path, {"b": "from-cli", "c": "from-cli"}).cases[0].expect.steps[0]
    assert step.args == {"a": "from-vars", "b": "from-cli", "c": "from-param"}


def test_environment_variables_render(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`env.NAME` reads the process environment."""
    monkeypatch.setenv("TRAJRUN_TEST_MODEL", "gpt-test")
    path = _write(tmp_path, "cases: [{name: e, source: {command: 'agent --model {{ env.TRAJRUN_TEST_MODEL }}'}, "
                            "steps: []}]\n")
    assert load_suite(path).cases[0].source.command == "agent --model gpt-test"


def test_lone_expression_keeps_native_type(tmp_path: Path) -> None:
    """A string that is exactly `{{ expr }}` keeps the value's type; text around it makes a string."""
    path = _write(tmp_path, """
vars: {n: 3, cities: [Paris, Tokyo]}
cases:
  - name: native
    repeat: "{{ n }}"
    source: {python: "agent:run", args: {n: "{{ n }}", label: "n={{ n }}", cities: "{{ cities }}"}}
    steps: []
""")
    case = load_suite(path).cases[0]
    assert case.repeat == 3
    assert case.source.args == {"n": 3, "label": "n=3", "cities": ["Paris", "Tokyo"]}


def test_defaults_merge_one_level_for_tools_calls_budget(tmp_path: Path) -> None:
    """tools, calls and budget merge key by key; other keys are replaced by the case's own."""
    path = _write(tmp_path, """
defaults:
  mode: superset
  source: r.json
  tools: {search: ignore, book: exact}
  calls: {search: 2}
  budget: {calls: 8, turns: 4}
cases:
  - name: m
    mode: strict
    tools: {book: subset}
    calls: {book: {max: 1}}
    budget: {turns: 2}
    steps: []
""")
    expect = load_suite(path).cases[0].expect
    assert expect.mode == "strict"
    assert {k: r.args_mode for k, r in expect.tools.items()} == {"search": "ignore", "book": "subset"}
    assert expect.calls == {"search": CountBound(2, 2), "book": CountBound(None, 1)}
    assert expect.budget == Budget(calls=8, turns=2)


def test_case_golden_replaces_default_steps(tmp_path: Path) -> None:
    """`steps` and `golden` fill one slot: a case's golden replaces the defaults' steps."""
    path = _write(tmp_path, "defaults: {steps: [search], source: r.json}\ncases: [{name: g, golden: g.yaml}]\n")
    case = load_suite(path).cases[0]
    assert case.expect.steps is None
    assert case.golden == tmp_path / "g.yaml"


def test_tags_are_suite_then_defaults_then_own_deduplicated(tmp_path: Path) -> None:
    """A case's tags are the suite's, the defaults' and its own, in that order, without repeats."""
    path = _write(tmp_path, "tags: [smoke, a]\ndefaults: {tags: [b, smoke], source: r.json}\n"
                            "cases: [{name: t, tags: [c, a], steps: []}]\n")
    assert load_suite(path).cases[0].tags == ("smoke", "a", "b", "c")


def test_nested_locations_point_at_the_written_value() -> None:
    """Steps and tool rules carry the line, column and key path where they were written (defaults included)."""
    case = load_suite(VALID / "full.yaml").cases[0]
    step = case.expect.steps[3]
    assert (step.loc.line, step.loc.column, step.loc.path) == (36, 9, "cases[0].steps[3]")
    rule = case.expect.tools["search"]
    assert (rule.loc.line, rule.loc.path) == (13, "defaults.tools.search")
    assert (case.loc.line, case.loc.column) == (20, 5)


def test_error_in_a_default_points_at_the_defaults(tmp_path: Path) -> None:
    """A bad value inherited from defaults is reported once, at the defaults, not per case."""
    path = _write(tmp_path, "defaults:\n  mode: strcit\n  source: r.json\n"
                            "cases:\n  - {name: a, steps: []}\n  - {name: b, steps: []}\n")
    assert _errors(path).splitlines() == [
        f"{path}:2:9: defaults.mode: unknown match mode 'strcit' — did you mean 'strict'?"
    ]


def test_yaml_core_types_keep_on_yes_and_dates_as_strings(tmp_path: Path) -> None:
    """YAML 1.2 core: on/yes/no stay strings, dates stay strings, 1e3 is a number, ~ is null."""
    path = _write(tmp_path, """
cases:
  - name: types
    source: r.json
    steps:
      - book: {a: on, b: yes, c: no, d: 2024-05-01, e: 1e3, f: 0o17, g: ~, h: True, i: 12:30, j: 1_000}
""")
    args = load_suite(path).cases[0].expect.steps[0].args
    assert args == {"a": "on", "b": "yes", "c": "no", "d": "2024-05-01", "e": 1000.0, "f": 15, "g": None,
                    "h": True, "i": "12:30", "j": "1_000"}


def test_merge_keys_are_allowed_and_not_duplicates(tmp_path: Path) -> None:
    """`<<: *anchor` merges a map; the case's own key wins and is no duplicate."""
    path = _write(tmp_path, """
vars:
  base: &base {source: r.json, mode: superset, steps: [search]}
cases:
  - <<: *base
    name: merged
    mode: strict
""")
    case = load_suite(path).cases[0]
    assert case.expect.mode == "strict"
    assert [s.name for s in case.expect.steps] == ["search"]


def test_step_forms(tmp_path: Path) -> None:
    """Bare name, {tool: args}, {tool: null}, raw string args and the long form all build steps."""
    path = _write(tmp_path, """
cases:
  - name: forms
    source: r.json
    steps:
      - get_forecast
      - search: {query: paris}
      - lookup: null
      - parse: "{not json"
      - name: book
        args: {city: Paris}
        args_mode: superset
        result: confirmed
        error: false
      - name: pay
      - name: refund
        args: {}
""")
    steps = load_suite(path).cases[0].expect.steps
    assert [(s.name, s.args) for s in steps[:4]] == [
        ("get_forecast", ANY_ARGS), ("search", {"query": "paris"}), ("lookup", ANY_ARGS), ("parse", "{not json")]
    book = steps[4]
    assert (book.args, book.args_mode, book.result, book.error) == ({"city": "Paris"}, "superset", "confirmed", False)
    assert (steps[5].args, steps[5].result, steps[5].error) == (ANY_ARGS, UNSET, None)
    assert steps[6].args == {}


def test_matchers_are_compiled_into_steps_and_answer(tmp_path: Path) -> None:
    """`$` maps in args, result and answer become Matcher objects; $literal stays data."""
    path = _write(tmp_path, """
cases:
  - name: m
    source: r.json
    steps:
      - name: search
        args: {query: {$regex: 'weather.*Paris'}, raw: {$literal: {$gt: 1}}}
        result: {$contains: sunny}
    answer: {$regex: sunny}
""")
    case = load_suite(path).cases[0]
    step = case.expect.steps[0]
    assert isinstance(step.args["query"], Matcher)
    assert step.args["raw"] == {"$gt": 1}
    assert isinstance(step.result, Matcher)
    assert isinstance(case.expect.answer, Matcher)


def test_tool_rule_forms() -> None:
    """A rule name, a field list, a fields map with JSONPath keys, and compare each build a ToolRule."""
    tools = load_suite(VALID / "full.yaml").cases[0].expect.tools
    assert tools["search"].args_mode == "ignore"
    assert tools["lookup"].only_fields and tools["lookup"].fields == {"id": FieldRule()}
    event = tools["create_event"]
    assert event.args_mode == "superset" and not event.only_fields
    assert event.fields == {"title": FieldRule("icase"), "amount": FieldRule("approx", 0.01),
                            "created_at": FieldRule("ignore"), "$.location.city": FieldRule("icase")}
    assert tools["legacy_tool"].compare == "my_project.evals:same_call"


def test_checks_never_before_calls_budget_nodes_answer() -> None:
    """never, before, calls (int and {min,max}), budget, nodes and a plain answer build their models."""
    cases = load_suite(VALID / "full.yaml").cases
    first = cases[0].expect
    assert first.never == ("refund_all",)
    assert first.before == (("search", "book"),)
    assert first.calls["book"] == CountBound(1, 1)
    assert first.budget == Budget(calls=8, turns=4, tokens=5000)
    assert first.threshold == 0.5
    inline = cases[2].expect
    assert inline.nodes == (("__start__", "agent", "tools"),)
    assert inline.answer == "sunny"


def test_source_forms_resolve_against_the_suite_folder() -> None:
    """String shorthand and file maps resolve against the suite's folder; inline messages are not rendered."""
    cases = load_suite(VALID / "full.yaml").cases
    assert cases[0].source.file == VALID / "runs/paris.json" and not cases[0].source.live
    golden = cases[1].source
    assert (golden.file, golden.format, golden.select, golden.record) == (
        VALID / "runs/all.jsonl", "openai", "$.messages", 3)
    assert cases[2].source.messages == [{"role": "user", "content": "{{ not rendered }}"}]
    command = cases[3].source
    assert (command.command, command.timeout, command.live) == ("python agent.py --q Paris", 120.0, True)
    python = cases[8].source
    assert (python.python, python.args, python.live) == ("my_agent.evals:run", {"question": "Nice", "limit": 9}, True)


def test_skip_xfail_repeat_pass_rate() -> None:
    """skip: true has an empty reason, xfail keeps its reason, repeat and pass_rate are read."""
    cases = load_suite(VALID / "full.yaml").cases
    assert cases[2].skip == "" and cases[0].skip is None
    assert cases[1].xfail == "model picks the wrong tool"
    assert (cases[3].repeat, cases[3].pass_rate) == (3, 0.6)


def test_case_problems_report_missing_files() -> None:
    """case_problems names missing source files and golden files, suggesting --update-golden."""
    problems = [str(p) for case in load_suite(VALID / "full.yaml").cases for p in case_problems(case)]
    assert any("source file" in p and "runs/all.jsonl does not exist" in p for p in problems)
    assert any("golden/paris.yaml does not exist" in p and "--update-golden" in p for p in problems)
    assert not any("paris.json" in p for p in problems)


def test_case_problems_report_a_broken_golden_file(tmp_path: Path) -> None:
    """An existing golden file that does not parse is reported with its own location."""
    (tmp_path / "r.json").write_text("[]")
    (tmp_path / "g.yaml").write_text("- search: {q: {$regx: a}}\n")
    path = _write(tmp_path, "cases: [{name: g, source: r.json, golden: g.yaml}]\n")
    problems = [str(p) for case in load_suite(path).cases for p in case_problems(case)]
    assert problems == [f"{tmp_path / 'g.yaml'}:1:15: [0].search.q: unknown matcher '$regx' — did you mean '$regex'?"]


def test_format_without_a_reader_is_a_load_error(tmp_path: Path) -> None:
    """A format no reader exists for (``xml``) is refused at load time, not when the case runs."""
    path = _write(tmp_path, """
cases:
  - name: traced
    source: {file: trace.json, format: xml}
    steps: [search]
""")
    assert _errors(path).splitlines() == [
        f"{path}:4:40: cases[0].source.format: unknown format 'xml'; expected one of auto, {', '.join(FORMATS)}"
    ]
