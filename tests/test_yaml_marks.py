"""Positions by key path (``Marks``), found by walking the composed nodes when asked, are where each value
and key was written: checked against recording every node's position as it is built, as loading once did."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from properties import PROPERTY
from yaml.nodes import MappingNode, Node, SequenceNode
from trajrun.yaml_core import Marks, NodeBuilder, Pos, compose, load_text
from yaml_paths import paths_in

SHARED = [
    "base: &b {mode: strict, tags: [a, b]}\ncases:\n  - <<: *b\n    name: one\n  - {<<: *b, mode: subset}\n",
    "a: &x [1, {k: v}]\nb: *x\nc: {<<: [{p: 1}, {p: 2, q: 3}], q: own}\n",
    "a: 1\nb: {x: 1, x: 2}\na: 3\n",
    "k: !!str 010\nl: [!!int '7', &s text, *s]\n",
]
KEYS = st.sampled_from(["a", "b", "name", "steps", "x y", "$op", "1"])
SCALARS = st.one_of(st.integers(-10**6, 10**6), st.booleans(), st.none(), st.text("abc :-#'\"\\é", max_size=6))
DATA = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4),
                    max_leaves=25)


def recorded(root: Node) -> tuple[dict[tuple[Any, ...], Any], dict[tuple[Any, ...], Any]]:
    """Every value's and key's mark by path, the first to reach a path kept: own keys before ``<<`` merges."""
    values: dict[tuple[Any, ...], Any] = {}
    keys: dict[tuple[Any, ...], Any] = {}

    def visit(node: Node, path: tuple[Any, ...]) -> None:
        values.setdefault(path, node.start_mark)
        if isinstance(node, SequenceNode):
            for i, item in enumerate(node.value):
                visit(item, (*path, i))
        elif isinstance(node, MappingNode):
            mapping(node, path)

    def mapping(node: MappingNode, path: tuple[Any, ...]) -> None:
        merges = [value for key, value in node.value if key.value == "<<"]
        for key, value in node.value:
            if key.value != "<<" and (*path, key.value) not in keys:
                keys[(*path, key.value)] = key.start_mark
                visit(value, (*path, key.value))
        for value in merges:
            for source in value.value if isinstance(value, SequenceNode) else [value]:
                mapping(source, path)

    visit(root, ())
    return values, keys


def assert_marks_as_recorded(text: str) -> None:
    """Each path of the loaded data is found where recording put it; a path past the data falls back to its parent."""
    loaded = load_text(text)
    values, keys = recorded(compose(text))
    for path in paths_in(loaded.data):
        mark = values[path]
        assert loaded.marks.value(path) == Pos(mark.line + 1, mark.column + 1), path
        key = keys.get(path, mark)
        assert loaded.marks.key(path) == Pos(key.line + 1, key.column + 1), path
        assert loaded.marks.value((*path, "absent", 0)) == loaded.marks.value(path)


@pytest.mark.parametrize("text", SHARED)
def test_marks_of_anchors_merges_and_duplicates_are_where_they_were_written(text: str) -> None:
    assert_marks_as_recorded(text)


@PROPERTY
@given(DATA, st.booleans())
def test_marks_of_any_document_are_where_they_were_written(data: Any, flow: bool) -> None:
    assert_marks_as_recorded(yaml.safe_dump({"top": data}, default_flow_style=flow, allow_unicode=True))


def test_a_duplicate_key_names_the_line_of_the_first() -> None:
    """The duplicate's message finds the first key by walking the nodes, as every other position is found."""
    problem = load_text("a: 1\nb:\n  x: 1\n  y: 2\n  x: 3\n").duplicates[0]
    assert problem.message.startswith("duplicate key 'x' (first written at line 3)")
    assert (problem.pos.line, problem.path) == (5, ("b", "x"))


@PROPERTY
@given(DATA, st.booleans())
def test_building_without_alias_bookkeeping_gives_the_same_data(data: Any, flow: bool) -> None:
    """A text without ``&`` and ``!`` cannot share a node or tag one: both builders give the same data."""
    text = yaml.safe_dump({"top": data}, default_flow_style=flow, allow_unicode=True)
    root = compose(text)
    careful, unshared = NodeBuilder(Marks(root)), NodeBuilder(Marks(root), unshared=True)
    assert unshared.build(root, ()) == careful.build(root, ()) == load_text(text).data
    assert [p.message for p in unshared.duplicates] == [p.message for p in careful.duplicates]


def test_items_gives_each_item_where_it_was_written() -> None:
    """``Marks.items``: a list's item positions at once (every step of a case); None where no list is written."""
    marks = load_text("steps:\n  - a\n  -   b: 1\n  - [c]\nname: x\n").marks
    assert marks.items(("steps",)) == [(2, 5), (3, 7), (4, 5)]
    assert marks.items(("name",)) is None and marks.items(("absent",)) is None


def test_a_pinned_mark_stands_for_the_paths_under_it() -> None:
    """The head of a file read item by item pins where its items start: a path under it is there too."""
    marks = load_text("suite: s\ncases:\n").marks
    marks.pinned[("cases",)] = yaml.Mark("", 0, 2, 2, None, None)
    assert marks.value(("cases",)) == marks.value(("cases", 7, "name")) == Pos(3, 3)
    assert marks.key(("cases",)) == Pos(2, 1) and marks.items(("cases",)) is None
