"""Templating: rendering strings, --var parsing, defaults merging and parametrize expansion."""

from __future__ import annotations

from pathlib import Path

import pytest
from trajrun.errors import SpecError, SuiteErrors
from trajrun.match.expressions import compile_expression, environment
from trajrun.suites.load import load_suite
from trajrun.suites.templating import (
    case_name,
    expand_parametrize,
    merge_defaults,
    parse_var,
    render_string,
    render_tree,
    variables,
)

NAMES = variables({"city": "Paris", "n": 1}, {"n": 3}, {"days": [1, 2]})


def test_plain_strings_are_returned_untouched() -> None:
    """A string without template markers is not rendered at all (its trailing newline survives)."""
    assert render_string("weather in Paris\n", NAMES) == "weather in Paris\n"


def test_text_template_renders_to_a_string() -> None:
    """Text around an expression makes the result a string, keeping a trailing newline."""
    assert render_string("weather in {{ city }}, {{ n }} days\n", NAMES) == "weather in Paris, 3 days\n"


@pytest.mark.parametrize(("text", "value"), [
    ("{{ n }}", 3),
    ("{{ days }}", [1, 2]),
    ("{{ n > 2 }}", True),
    ("{{ none }}", None),
    ("{{ {'city': city} }}", {"city": "Paris"}),
    ("{{ city | lower }}", "paris"),
])
def test_lone_expression_keeps_native_type(text: str, value: object) -> None:
    """A string that is exactly one `{{ expr }}` keeps the type of the result."""
    assert render_string(text, NAMES) == value


def test_cli_vars_beat_vars_and_parametrize_beats_both() -> None:
    """Later layers win: vars < --var < parametrize; `env` is always there."""
    names = variables({"a": 1, "b": 1, "c": 1}, {"b": 2, "c": 2}, {"c": 3})
    assert (names["a"], names["b"], names["c"]) == (1, 2, 3)
    assert "env" in names


def test_env_reads_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """`env.NAME` is the environment variable; a missing one is an error that names it."""
    monkeypatch.setenv("TRAJRUN_T_KEY", "k-123")
    monkeypatch.delenv("TRAJRUN_T_MISSING", raising=False)
    names = variables({}, {}, {})
    assert render_string("key={{ env.TRAJRUN_T_KEY }}", names) == "key=k-123"
    with pytest.raises(SpecError, match="environment variable TRAJRUN_T_MISSING is not set"):
        render_string("{{ env.TRAJRUN_T_MISSING }}", names)


@pytest.mark.parametrize("text", ["{{ cty }}", "in {{ cty }}", "{{ cty.name }}", "{% if cty %}x{% endif %}"])
def test_undefined_variable_is_an_error_with_a_suggestion(text: str) -> None:
    """An undefined variable, alone, in text, dotted or in a block, is an error suggesting the near name."""
    with pytest.raises(SpecError, match=r"undefined variable 'cty' .*did you mean 'city'\?"):
        render_string(text, NAMES)


def test_syntax_error_is_reported() -> None:
    """A Jinja2 syntax error names the string and the problem."""
    with pytest.raises(SpecError, match=r"template syntax error in 'runs/\{\{ city \}.json'"):
        render_string("runs/{{ city }.json", NAMES)


def test_sandbox_refuses_unsafe_attributes() -> None:
    """The sandbox blocks access to Python internals."""
    with pytest.raises(SpecError):
        render_string("{{ city.__class__.__mro__ }}", NAMES)


def test_render_tree_skips_keys_and_chosen_paths_and_collects_errors() -> None:
    """Keys are never rendered, skipped paths stay as written, and every bad string is reported at its path."""
    errors: list[SpecError] = []
    tree = {"{{ city }}": "{{ city }}", "source": {"messages": ["{{ nope }}"]}, "bad": ["{{ nope }}", "{{ n }}"]}
    out = render_tree(tree, NAMES, lambda p: p == ("source", "messages"), errors)
    assert out == {"{{ city }}": "Paris", "source": {"messages": ["{{ nope }}"]}, "bad": ["{{ nope }}", 3]}
    assert [e.path for e in errors] == [("bad", 0)]


@pytest.mark.parametrize(("text", "expected"), [
    ("n=3", ("n", 3)),
    ("x=on", ("x", "on")),
    ("d=2024-05-01", ("d", "2024-05-01")),
    ("f=1.5", ("f", 1.5)),
    ("b=true", ("b", True)),
    ("z=null", ("z", None)),
    ("s='3'", ("s", "3")),
    ("e=", ("e", "")),
    ("url=http://x/?a=b", ("url", "http://x/?a=b")),
])
def test_parse_var_reads_yaml_core_scalars(text: str, expected: tuple[str, object]) -> None:
    """--var values are YAML 1.2 core scalars: numbers and booleans typed, on and dates strings."""
    assert parse_var(text) == expected


@pytest.mark.parametrize("text", ["novalue", "=3", "two words=1"])
def test_parse_var_rejects_malformed_items(text: str) -> None:
    """Without NAME=VALUE (NAME an identifier) --var is a usage error."""
    with pytest.raises(ValueError, match="--var expects NAME=VALUE"):
        parse_var(text)


def test_merge_defaults_merges_maps_one_level_and_replaces_the_rest() -> None:
    """tools/calls/budget merge key by key; mode is replaced; origins say where each value came from."""
    defaults = {"mode": "superset", "tools": {"a": "ignore", "b": "exact"}, "budget": {"calls": 8}}
    merged, origins = merge_defaults(defaults, {"mode": "strict", "tools": {"b": "subset"}})
    assert merged == {"mode": "strict", "tools": {"a": "ignore", "b": "subset"}, "budget": {"calls": 8}}
    assert origins[("tools", "a")] == ("defaults", "tools", "a")
    assert origins[("tools",)] == ("case", "tools")
    assert origins[("budget",)] == ("defaults", "budget")


def test_merge_defaults_steps_and_golden_share_a_slot() -> None:
    """A case's golden drops the defaults' steps (and the other way round)."""
    merged, _ = merge_defaults({"steps": ["a"], "mode": "strict"}, {"golden": "g.yaml"})
    assert merged == {"mode": "strict", "golden": "g.yaml"}


def test_merge_defaults_adds_tags() -> None:
    """Tags add up: the defaults' first, then the case's."""
    merged, origins = merge_defaults({"tags": ["a"]}, {"tags": ["b"]})
    assert merged["tags"] == ["a", "b"]
    assert origins[("tags", 1)] == ("case", "tags", 0)


def test_parametrize_map_is_a_cartesian_product_in_written_order() -> None:
    """A map of lists expands to every combination, first key slowest, keys in written order."""
    sets = expand_parametrize({"city": ["Paris", "Tokyo"], "days": [1, 2]})
    assert [case_name("w", s) for s in sets] == [
        "w[city=Paris,days=1]", "w[city=Paris,days=2]", "w[city=Tokyo,days=1]", "w[city=Tokyo,days=2]"]


def test_parametrize_list_of_maps_keeps_each_maps_keys() -> None:
    """A list of maps gives one case per map, named by its own keys; values print as YAML writes them."""
    sets = expand_parametrize([{"city": "Paris"}, {"city": "Nice", "strict": True, "n": None}])
    assert [case_name("w", s) for s in sets] == ["w[city=Paris]", "w[city=Nice,strict=true,n=null]"]


@pytest.mark.parametrize("spec", [{}, [], {"city": []}, {"city": "Paris"}, ["Paris"], "Paris"])
def test_malformed_parametrize_is_a_spec_error(spec: object) -> None:
    """Empty or mis-shaped parametrize values are refused (never silently zero cases)."""
    with pytest.raises(SpecError, match="parametrize"):
        expand_parametrize(spec)


def test_shared_environment_and_expressions_are_unchanged() -> None:
    """environment() is the sandboxed StrictUndefined env and compile_expression() still evaluates `value`."""
    from jinja2 import StrictUndefined
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = environment()
    assert isinstance(env, ImmutableSandboxedEnvironment) and env.undefined is StrictUndefined
    assert compile_expression("value | length < 5")(value="abc") is True


PARAMETRIZED = """\
suite: plain{comment}
defaults: {{mode: unordered}}
cases:
  - name: forecast
    source: runs/paris.json
    parametrize: {{city: [Paris, Tokyo], days: [1, 3]}}
    steps:
      - get_forecast: {{city: Paris, days: {{$gte: 1}}}}
    calls: {{get_forecast: 1}}
"""


def test_a_file_without_templates_builds_each_parametrized_case_once_with_the_same_result(tmp_path: Path) -> None:
    """Without ``{{``/``{%``/``{#`` anywhere in the file, the expansions of a case differ only in their names:
    trajrun builds the case once; the same file with a template marker in a comment takes the general path."""
    (tmp_path / "plain.suite.yaml").write_text(PARAMETRIZED.format(comment=""))
    (tmp_path / "general.suite.yaml").write_text(PARAMETRIZED.format(comment="  # {{ nothing rendered }}"))
    plain, general = load_suite(tmp_path / "plain.suite.yaml"), load_suite(tmp_path / "general.suite.yaml")
    assert [c.name for c in plain.cases] == ["forecast[city=Paris,days=1]", "forecast[city=Paris,days=3]",
                                             "forecast[city=Tokyo,days=1]", "forecast[city=Tokyo,days=3]"]
    shown = lambda suite: [(c.name, repr(c.expect).replace(str(suite.path), "FILE")) for c in suite.cases]
    assert shown(plain) == shown(general)
    assert {c.expect is plain.cases[0].expect for c in plain.cases} == {True}  # built once
    assert {c.expect is general.cases[0].expect for c in general.cases[1:]} == {False}  # built per expansion


def test_a_problem_of_a_case_built_once_is_reported_once_under_its_written_name(tmp_path: Path) -> None:
    """The expansions of a template-free case share its problems: one message naming the case as written,
    not one per expansion."""
    path = tmp_path / "broken.suite.yaml"
    path.write_text(PARAMETRIZED.format(comment="").replace("    source: runs/paris.json\n", "").replace(
        "mode: unordered", "mode: unorderd"))
    with pytest.raises(SuiteErrors) as info:
        load_suite(path)
    assert [str(e) for e in info.value.errors] == [
        f"{path}:2:18: defaults.mode: unknown match mode 'unorderd' — did you mean 'unordered'?",
        f"{path}:4:5: cases[0]: case 'forecast' has no source: add `source:` (a file path, or a map with file, "
        "messages, command or python), or set one in defaults",
    ]
