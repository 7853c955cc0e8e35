"""Inline matchers, compile_value errors and JSON value comparison."""

from __future__ import annotations

import pytest
from trajrun.errors import CheckError, SpecError
from trajrun.match.matchers import compile_value
from trajrun.match.values import Matcher, canon, compare_value


def holds(spec: object, actual: object) -> bool:
    """Compile a matcher spec and test it against one actual value."""
    matcher = compile_value(spec)
    assert isinstance(matcher, Matcher)
    return matcher.test(actual)


def test_plain_values_stay_plain() -> None:
    """Plain JSON values compile to themselves."""
    raw = {"city": "Paris", "days": [1, 2], "opts": {"units": "metric"}, "n": None}
    assert compile_value(raw) == raw


def test_literal_escapes_dollar_keys() -> None:
    """$literal yields its operand uncompiled, even a map of $ keys."""
    assert compile_value({"q": {"$literal": {"$regex": "x"}}}) == {"q": {"$regex": "x"}}


def test_empty_map_is_plain() -> None:
    """An empty map is a plain value, not a matcher."""
    assert compile_value({}) == {}


def test_regex_searches_strings_only() -> None:
    """$regex is re.search on strings; other types never match."""
    assert holds({"$regex": "weather.*Paris"}, "the weather in Paris")
    assert not holds({"$regex": "weather.*Paris"}, "weather in Lyon")
    assert not holds({"$regex": "1"}, 1)


def test_icase_folds_case() -> None:
    """$icase compares case-folded strings."""
    assert holds({"$icase": "PARIS"}, "paris")
    assert not holds({"$icase": "paris"}, "lyon")


def test_bounds_take_numbers_not_booleans() -> None:
    """$gte/$lte hold for numbers in range and never for booleans."""
    assert holds({"$gte": 1, "$lte": 10}, 10)
    assert not holds({"$gte": 1, "$lte": 10}, 11)
    assert not holds({"$gt": 0}, True)
    assert holds({"$lt": 1.5}, 1)


def test_approx_uses_absolute_tolerance() -> None:
    """$approx with $tol accepts values within the tolerance."""
    assert holds({"$approx": 3.14, "$tol": 0.01}, 3.145)
    assert not holds({"$approx": 3.14, "$tol": 0.001}, 3.145)
    assert holds({"$approx": 2}, 2.0)


def test_in_compares_json_equal() -> None:
    """$in matches an equal option; 1 equals 1.0 but not true."""
    assert holds({"$in": ["en", "fr"]}, "fr")
    assert holds({"$in": [1]}, 1.0)
    assert not holds({"$in": [1]}, True)


def test_type_integer_accepts_whole_floats() -> None:
    """$type integer accepts 1.0; number accepts ints; neither accepts booleans."""
    assert holds({"$type": "integer"}, 1.0)
    assert not holds({"$type": "integer"}, 1.5)
    assert holds({"$type": "number"}, 3)
    assert not holds({"$type": "number"}, False)
    assert holds({"$type": ["string", "null"]}, None)


def test_contains_on_strings_lists_objects() -> None:
    """$contains: substring, list element (objects partially), partial object."""
    assert holds({"$contains": "Paris"}, "weather in Paris")
    assert holds({"$contains": {"city": "Paris"}}, [{"city": "Paris", "days": 3}])
    assert holds({"$contains": {"city": "Paris"}}, {"city": "Paris", "days": 3})
    assert holds({"$contains": 2}, [1, 2, 3])
    assert not holds({"$contains": {"city": "Lyon"}}, [{"city": "Paris"}])


def test_not_negates_value_or_matcher() -> None:
    """$not holds when its operand (a value or a matcher) does not."""
    assert holds({"$not": "Lyon"}, "Paris")
    assert not holds({"$not": {"$regex": "^P"}}, "Paris")


def test_any_matches_every_present_value() -> None:
    """$any: true matches any present value."""
    assert holds({"$any": True}, None)


def test_expr_evaluates_over_value() -> None:
    """$expr evaluates a sandboxed Jinja2 expression over `value`."""
    assert holds({"$expr": "value | length < 5"}, "abc")
    assert not holds({"$expr": "value | length < 2"}, "abc")


def test_expr_non_boolean_is_check_error() -> None:
    """An $expr that gives a non-boolean cannot be judged: CheckError."""
    with pytest.raises(CheckError, match="not a boolean"):
        holds({"$expr": "value | length"}, "abc")


def test_several_operators_must_all_hold() -> None:
    """Several operators in one map combine with and."""
    matcher = compile_value({"$type": "string", "$regex": "^a"})
    assert matcher.test("abc") and not matcher.test("bc")
    assert "and" in matcher.describe()


def test_absent_key_handled_by_object_comparison() -> None:
    """$absent: true passes for a missing key and fails for a present one."""
    expected = compile_value({"q": "x", "cursor": {"$absent": True}})
    assert compare_value(expected, {"q": "x"}, "exact")
    assert not compare_value(expected, {"q": "x", "cursor": None}, "exact")


def test_describe_is_short() -> None:
    """describe() gives the short text used in tables."""
    assert compile_value({"$regex": "weather.*Paris"}).describe() == "regex 'weather.*Paris'"
    assert compile_value({"$approx": 3.14, "$tol": 0.01}).describe() == "approx 3.14 ± 0.01"


@pytest.mark.parametrize(
    ("spec", "path", "words"),
    [
        ({"q": {"$regx": "a"}}, ("q",), "did you mean '$regex'"),
        ({"q": {"$regex": "a", "city": "P"}}, ("q",), "$literal"),
        ({"a": [{"$regex": "("}]}, ("a", 0), "does not compile"),
        ({"n": {"$gt": "1"}}, ("n",), "needs a number"),
        ({"n": {"$gt": True}}, ("n",), "needs a number"),
        ({"n": {"$type": "int"}}, ("n",), "not a JSON Schema type"),
        ({"n": {"$tol": 0.1}}, ("n",), "$approx"),
        ({"s": {"$expr": "value |"}}, ("s",), "does not parse"),
    ],
)
def test_bad_specs_raise_spec_error(spec: object, path: tuple[object, ...], words: str) -> None:
    """Unknown operators, mixed maps and bad operands raise SpecError at their path."""
    with pytest.raises(SpecError) as info:
        compile_value(spec)
    assert info.value.path == path
    assert words in info.value.message


def test_numbers_by_value_booleans_apart() -> None:
    """1 equals 1.0; true equals neither 1 nor 1.0, in comparison and in hash keys."""
    assert compare_value({"n": 1}, {"n": 1.0}, "exact")
    assert not compare_value({"n": 1}, {"n": True}, "exact")
    assert canon({"n": 1}) == canon({"n": 1.0})
    assert canon({"n": 1}) != canon({"n": True})
    assert canon([True]) != canon([1])


def test_null_is_not_absent() -> None:
    """A null value is not the same as a missing key."""
    assert not compare_value({"a": None}, {}, "exact")
    assert not compare_value({}, {"a": None}, "exact")


def test_rules_on_nested_objects_and_lists() -> None:
    """superset/subset recurse into objects; lists compare element by element, same length."""
    exp = {"a": {"b": 1}, "l": [{"x": 1}]}
    act = {"a": {"b": 1, "c": 2}, "l": [{"x": 1, "y": 2}], "z": 0}
    assert compare_value(exp, act, "superset")
    assert not compare_value(exp, act, "exact")
    assert not compare_value({"l": [1]}, {"l": [1, 2]}, "superset")
    assert compare_value({"a": 1, "b": 2}, {"a": 1}, "subset")
    assert not compare_value({"a": 1}, {"a": 1, "b": 2}, "subset")
