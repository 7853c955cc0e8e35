"""The JSON Schema of suite files: valid suites pass it, and it rejects what a schema can express."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from trajrun.suites.schema import schema_text
from trajrun.yaml_core import YamlProblem, decode_utf8, load_text

ROOT = Path(__file__).parent.parent
SCHEMA_FILE = ROOT / "runner" / "trajrun" / "suites" / "suite.schema.json"
INVALID = Path(__file__).parent / "data" / "invalid"
VALID = Path(__file__).parent / "data" / "valid"

UNREADABLE = {
    # refused by the YAML layer itself: there is no document for a schema to look at
    "alias_bomb", "deep_nesting", "merge_not_map", "multiple_documents", "not_utf8", "python_object_tag",
    "tabs", "undefined_alias", "unknown_tag", "yaml_syntax",
    "bad_int_tag", "deep_block_nesting", "huge_hex_integer", "huge_integer", "huge_integer_tagged",
}
LOADER_ONLY = {
    # readable YAML that only the loader rejects: templates, matchers, defaults-dependent rules, names
    "asserts_nothing",  # steps could come from defaults
    "bad_jsonpath",  # JSONPath syntax
    "duplicate_keys",  # a YAML-level rule; the parsed map keeps one key
    "duplicate_names_parametrize",  # names exist only after expansion
    "jinja_syntax", "undefined_env", "undefined_variable",  # templates
    "mixed_dollar_keys", "unknown_matcher", "two_bad_matchers",  # expected arguments are free-form for the schema
    "parallel_in_superset",  # the mode could come from defaults
    "quoted_step",  # any string is a tool name to the schema
    # matcher operands, regex syntax and bombs, parametrize limits, JSONPath syntax: the schema sees free-form values
    "approx_operands", "compare_operands", "expr_deep_nesting", "expr_operands", "in_type_absent_any",
    "literal_beside_others", "matcher_in_answer_and_result", "nested_matcher_errors", "regex_not_string",
    "regex_only_in_regex_package", "regex_syntax", "regex_unroll_bomb", "parametrize_too_many",
    "parametrize_undefined_in_name", "source_select_bad_path",
    # templates and their limits
    "template_big_integer",
    "template_center_bomb",
    "template_deep_parentheses",
    "template_doubling",
    "template_failing_expression",
    "template_filter_unknown",
    "template_format_width",
    "template_in_suite_name",
    "template_lipsum_bomb",
    "template_list_repeat_bomb",
    "template_native_wrong_type",
    "template_nested_loops",
    "template_output_too_large",
    "template_power_bomb",
    "template_range_too_big",
    "template_repeat_bomb",
    "template_replace_bomb",
    "template_undefined_in_tags",
    "no_source",  # the source could come from defaults
    "repeat_file_source", "threshold_without_steps",  # depend on merged defaults
}


def _validator() -> jsonschema.Draft7Validator:
    return jsonschema.Draft7Validator(json.loads(SCHEMA_FILE.read_text(encoding="utf-8")))


def _document(path: Path) -> object:
    return load_text(decode_utf8(path.read_bytes())).data


def test_schema_is_a_valid_draft7_schema() -> None:
    """The packaged schema is itself valid JSON Schema (draft-07, which editors support best)."""
    jsonschema.Draft7Validator.check_schema(json.loads(SCHEMA_FILE.read_text(encoding="utf-8")))


def test_specs_schema_is_a_relative_symlink_to_the_package_file() -> None:
    """specs/suite.schema.json is a relative symlink to the canonical file in the package."""
    link = ROOT / "specs" / "suite.schema.json"
    assert link.is_symlink() and not Path(link.readlink()).is_absolute()
    assert link.resolve() == SCHEMA_FILE.resolve()


def test_schema_text_is_the_packaged_file() -> None:
    """`trajrun schema` prints exactly the packaged file."""
    assert schema_text() == SCHEMA_FILE.read_text(encoding="utf-8")


@pytest.mark.parametrize("path", sorted(VALID.glob("*.yaml")), ids=lambda p: p.stem)
def test_valid_suites_pass_the_schema(path: Path) -> None:
    """Every valid example suite validates."""
    errors = [e.message for e in _validator().iter_errors(_document(path))]
    assert errors == []


def test_every_invalid_file_is_classified() -> None:
    """Each invalid file is either rejected by the schema or listed here as loader-only or unreadable."""
    names = {p.stem for p in INVALID.glob("*.yaml")}
    assert UNREADABLE | LOADER_ONLY <= names


@pytest.mark.parametrize("name", sorted(p.stem for p in INVALID.glob("*.yaml") if p.stem not in UNREADABLE))
def test_schema_rejects_what_it_can_express(name: str) -> None:
    """Invalid files the schema can express are rejected; loader-only ones pass it (so the list stays honest)."""
    errors = list(_validator().iter_errors(_document(INVALID / f"{name}.yaml")))
    if name in LOADER_ONLY:
        assert errors == [], f"{name} is now caught by the schema: remove it from LOADER_ONLY"
    else:
        assert errors, f"the schema accepts {name}.yaml"


@pytest.mark.parametrize("name", sorted(UNREADABLE))
def test_unreadable_files_are_refused_before_any_schema(name: str) -> None:
    """The files listed as unreadable really fail in the YAML layer."""
    with pytest.raises(YamlProblem):
        _document(INVALID / f"{name}.yaml")


def test_templates_are_accepted_where_enums_and_numbers_go() -> None:
    """A template string is allowed for modes, counts and shares, since it is rendered before checking."""
    doc = {"cases": [{"name": "t", "source": "r.json", "mode": "{{ mode }}", "repeat": "{{ n }}",
                      "threshold": "{{ t }}", "steps": [{"name": "a", "args_mode": "{{ rule }}"}]}]}
    assert list(_validator().iter_errors(doc)) == []
