"""A long block sequence read one item at a time, so that a suite of 100,000 cases never exists
whole as YAML nodes.

A document whose last top-level key is a block sequence (``cases:`` then ``- `` items) splits
into its head, the text before the first item (a document of its own, where that key is null),
and one slice of lines per item, from one dash at the items' indentation to the next. Each slice
is parsed by libyaml alone, its marks shifted to the file's lines. A slice cannot end inside
something a later line continues: a quoted scalar or a flow collection left open does not parse,
plain and block scalars end at a line indented no deeper than the dash, and an alias to an anchor
of another item names nothing. Anything of the kind raises ``Unsplittable``: read the file whole,
which gives the same data or the exact error.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import yaml
from yaml.nodes import SequenceNode

from .yaml_core import Loaded, Marks, NodeBuilder, Path, YamlProblem, compose, load_text, unshared


class Unsplittable(Exception):
    """The document cannot be read item by item; read it whole (``load_text``) instead."""


_BLANK_LINES = re.compile(r"(?:[ \t]*(?:#[^\n]*)?\n)*")
_FIRST_ITEM = re.compile(r"^( *)-(?: |$)", re.M)


@dataclass(slots=True)
class Split:
    """A document cut at its last top-level key's items: the head, then where each item starts."""

    text: str
    head: Loaded
    starts: list[int]
    lines: list[int]
    expanded: int = 0
    """Nodes reached through aliases so far, over every item: the limit is the whole document's."""

    def items(self, key: str) -> Iterator[tuple[int, Loaded]]:
        """Each item as its own ``Loaded``, at key path ``(key, index)``, its marks falling back to
        the head's."""
        ends = [*self.starts[1:], len(self.text)]
        for index, (start, end, line) in enumerate(zip(self.starts, ends, self.lines, strict=True)):
            yield index, self._item(self.text[start:end], (key, index), line)

    def _item(self, piece: str, path: Path, line: int) -> Loaded:
        """One item's slice parsed alone; any problem at all is ``Unsplittable`` (the whole file
        says it exactly)."""
        try:
            root = compose(piece)
            if not isinstance(root, SequenceNode) or len(root.value) != 1:
                raise Unsplittable(f"the item at line {line + 1} is not one sequence item")
            builder = NodeBuilder(
                Marks(root.value[0], path, line, self.head.marks), unshared(piece)
            )
            builder.expanded = self.expanded
            data = builder.build(root.value[0], path)
        except (yaml.YAMLError, YamlProblem, RecursionError) as exc:
            raise Unsplittable(str(exc)) from None
        if builder.duplicates:
            raise Unsplittable("duplicate keys")
        self.expanded = builder.expanded
        return Loaded(data, builder.marks, [])


def split_last_sequence(text: str, key: str) -> Split | None:
    """``text`` cut at the items of ``key``, when it is the document's last top-level key and a
    block sequence written as most files are; None when the file is laid out otherwise (read it
    whole).

    Raises ``Unsplittable`` when the head does not parse cleanly.
    """
    written = [m.end() for m in re.finditer(rf"^{re.escape(key)}:[ \t]*(?:#[^\n]*)?$", text, re.M)]
    if len(written) != 1 or written[0] >= len(text):
        return None
    body = written[0] + 1
    first = _FIRST_ITEM.search(text, body)
    if first is None or not _BLANK_LINES.fullmatch(text, body, first.start()):
        return None
    dash = re.escape(first.group(1)) + "-(?: |$)"
    # after the key, every line is an item's first line, deeper than the dash, blank or a comment
    stray = re.compile(rf"^(?!{dash}| {{{len(first.group(1)) + 1},}}|[ \t]*(?:#.*)?$)", re.M)
    if stray.search(text, first.start()):
        return None
    starts = [m.start() for m in re.compile(f"^{dash}", re.M).finditer(text, first.start())]
    return Split(text, _head(text[: first.start()], key, first), starts, _lines(text, starts))


def _head(text: str, key: str, first: re.Match[str]) -> Loaded:
    """The text before the first item as a document whose last key is ``key`` (null), its mark moved
    to the first item."""
    try:
        head = load_text(text)
    except YamlProblem as exc:
        raise Unsplittable(exc.message) from None
    if (
        head.duplicates
        or not isinstance(head.data, dict)
        or list(head.data)[-1:] != [key]
        or head.data[key] is not None
    ):
        raise Unsplittable(f"the head does not end with an empty `{key}:`")
    # where the whole file's parse puts the sequence: its first dash
    head.marks.pinned[(key,)] = yaml.Mark(
        "", first.start(), text.count("\n"), len(first.group(1)), None, 0
    )
    return head


def _lines(text: str, starts: list[int]) -> list[int]:
    """The 0-based line of each offset in ``starts`` (ascending), counting newlines between
    neighbours only."""
    lines, line, last = [], 0, 0
    for start in starts:
        line += text.count("\n", last, start)
        lines.append(line)
        last = start
    return lines
