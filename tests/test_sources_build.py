"""The shared reader rules: argument decoding, result normalising, pairing, and token usage."""

from __future__ import annotations

from typing import Any

import pytest
from trajrun.sources.builder import Builder, decode_args, make_usage, result_content
from trajrun.trajectory import Usage


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"city": "Paris"}', {"city": "Paris"}),
        ('{\n  "location": "Boston"\n}', {"location": "Boston"}),
        ("", {}),
        (None, {}),
        ({"a": 1}, {"a": 1}),
        ("[1, 2]", "[1, 2]"),
        ("42", "42"),
        ('{"q": ', '{"q": '),
        ("not json", "not json"),
        ([1, 2], "[1, 2]"),
    ],
)
def test_decode_args(raw: Any, expected: Any) -> None:
    """A JSON object string decodes; "" is {}; anything else stays the raw string."""
    assert decode_args(raw) == expected


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("plain", "plain"),
        ([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}], "ab"),
        ([{"text": "bedrock "}, {"text": "text"}], "bedrock text"),
        ([{"json": {"k": 1}}], {"k": 1}),
        ([{"type": "json", "json": [1]}], [1]),
        ({"status": "ok"}, {"status": "ok"}),
        ([{"type": "image", "source": {}}], [{"type": "image", "source": {}}]),
        ([], ""),
    ],
)
def test_result_content(content: Any, expected: Any) -> None:
    """Text blocks join with no separator, one JSON block is its object, anything else as is."""
    assert result_content(content) == expected


def test_pairing_by_id_then_order_and_name() -> None:
    """A result with a known id pairs with that call; one without pairs with the first waiting call of its name."""
    b = Builder()
    b.turn()
    b.call("search", "{}", "c1")
    b.call("search", "{}", None)
    b.call("fetch", "{}", None)
    b.result("fetched", name="fetch")
    b.result("second", call_id="c1")
    b.result("first-waiting", name="search")
    b.result("orphan", name="unknown")
    t = b.finish("openai")
    assert [c.result for c in t.calls] == ["second", "first-waiting", "fetched"]


def test_result_pairs_only_with_calls_made_before_it() -> None:
    """A result naming an id of a later call, or repeating a taken id, falls back to order and name."""
    b = Builder()
    b.turn()
    b.call("search", "{}", "c1")
    b.result("early", call_id="c2", name="search")
    b.result("again", call_id="c1")
    b.call("search", "{}", "c2")
    b.result("late", call_id="c2")
    t = b.finish("openai")
    assert [c.result for c in t.calls] == ["early", "late"]
    assert [c.has_result for c in t.calls] == [True, True]


def test_list_or_mapping_ids_pair_by_order() -> None:
    """An id that is not a JSON scalar cannot key a lookup: the result pairs by order and name instead."""
    b = Builder()
    b.turn()
    b.call("search", "{}", ["c1"])
    b.call("fetch", "{}", {"id": 2})
    b.result("fetched", call_id={"id": 2}, name="fetch")
    b.result("found", call_id=["c1"], name="search")
    t = b.finish("openai")
    assert [c.result for c in t.calls] == ["found", "fetched"]


def test_run_level_usage_wins() -> None:
    """A run-level usage replaces the sum of the turns."""
    b = Builder()
    b.turn(usage=Usage(1, 1))
    assert b.finish("openai", Usage(10, 5)).usage == Usage(10, 5)


def test_turn_usage_is_summed_only_when_every_turn_has_it() -> None:
    """Turns' usage sums; one turn without usage makes the run's usage unknown."""
    full = Builder()
    full.turn(usage=Usage(3, 1))
    full.turn(usage=Usage(4, 2))
    partial = Builder()
    partial.turn(usage=Usage(3, 1))
    partial.turn()
    assert (full.finish("x").usage, partial.finish("x").usage) == (Usage(7, 3), None)


def test_make_usage_zero_is_not_missing() -> None:
    """All-zero counts are usage 0/0; a mapping without the keys is no usage."""
    assert make_usage({"input_tokens": 0, "output_tokens": 0}, ["input_tokens"], ["output_tokens"]) == Usage(0, 0)
    assert make_usage({"other": 1}, ["input_tokens"], ["output_tokens"]) is None


def test_answer_is_the_last_assistant_text() -> None:
    """A later turn without text keeps the earlier answer."""
    b = Builder()
    b.turn("first")
    b.turn(None)
    assert b.finish("x").answer == "first"
