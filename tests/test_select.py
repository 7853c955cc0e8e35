"""Case selection: -k / -m expressions and --shard."""

from __future__ import annotations

import pytest
from trajrun.run.selection import ExpressionError, in_shard, keyword_matcher, marker_matcher, parse_shard

IDS = [
    "suites/weather.suite.yaml::paris",
    "suites/weather.suite.yaml::tokyo[units=metric]",
    "suites/support.suite.yaml::refund",
]


def test_keyword_is_case_insensitive_substring() -> None:
    """A -k word matches any case id containing it, ignoring case."""
    keep = keyword_matcher("PARIS")
    assert [i for i in IDS if keep(i)] == [IDS[0]]


def test_keyword_boolean_grammar_with_parentheses() -> None:
    """and / or / not and parentheses combine words like pytest's -k."""
    keep = keyword_matcher("weather and not (paris or support)")
    assert [i for i in IDS if keep(i)] == [IDS[1]]


def test_keyword_word_may_hold_brackets_and_colons() -> None:
    """A word is any run of characters other than whitespace and parentheses."""
    keep = keyword_matcher("tokyo[units=metric]")
    assert [i for i in IDS if keep(i)] == [IDS[1]]


@pytest.mark.parametrize("text", ["", "a and", "(a", "a b", "or a", "a )"])
def test_bad_expression_is_an_error(text: str) -> None:
    """An expression that does not parse raises ExpressionError naming it."""
    with pytest.raises(ExpressionError):
        keyword_matcher(text)


def test_marker_matches_whole_tags() -> None:
    """-m words are whole tags, not substrings, compared case-insensitively."""
    keep = marker_matcher("smoke and not slow")
    assert keep(["Smoke"]) and not keep(["smoke", "slow"]) and not keep(["smokey"])


def test_shards_partition_the_cases() -> None:
    """Shards 1..N together hold every case exactly once."""
    ids = [f"suites/s{i % 7}.suite.yaml::case{i}" for i in range(300)]
    counts = [sum(in_shard(cid, (i, 3)) for i in (1, 2, 3)) for cid in ids]
    assert counts == [1] * len(ids)
    sizes = [sum(in_shard(cid, (i, 3)) for cid in ids) for i in (1, 2, 3)]
    assert min(sizes) > 60


@pytest.mark.parametrize("text", ["0/3", "4/3", "1-3", "a/b", "1/0"])
def test_bad_shard_is_rejected(text: str) -> None:
    """--shard needs I/N with 1 <= I <= N."""
    with pytest.raises(ValueError, match="--shard expects I/N"):
        parse_shard(text)


def test_shard_parses() -> None:
    """2/3 parses to (2, 3)."""
    assert parse_shard("2/3") == (2, 3)
