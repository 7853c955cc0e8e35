"""The one YAML dialect trajrun reads: YAML 1.2 core schema, safe against tags, bombs and deep
nesting.

Suites, golden files, YAML sources and live command output all load through here, so ``on``,
``yes`` and unquoted dates are strings and ``010`` is the integer 10 wherever they are written.

PyYAML's parser (libyaml's when available) produces events; composition and construction are
done here so that depth, alias expansion and tags are checked before anything is built. The
result is plain JSON-like data plus ``Marks``: 1-based positions of every key and value by key path.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, Union

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.parser import Parser as _EventParser
from yaml.reader import Reader
from yaml.scanner import Scanner

from .collector import collector_paused


class PyParser(Reader, Scanner, _EventParser):
    """PyYAML's pure-Python event parser, used when libyaml is missing."""

    def __init__(self, stream: str) -> None:
        Reader.__init__(self, stream)
        Scanner.__init__(self)
        _EventParser.__init__(self)


_CParser: Any = None
"""libyaml's parser and composer; ``None`` when PyYAML was built without libyaml."""
try:
    from yaml._yaml import CParser

    _CParser = CParser
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    pass

parser_class: Any = _CParser or PyParser
"""The event parser: libyaml's (what ``CSafeLoader`` parses with) when available."""


PathKey = Union[str, int]
Path = tuple[PathKey, ...]

MAX_DEPTH = 200
MAX_ALIAS_NODES = 100_000

_NULL = re.compile(r"^(?:~|null|Null|NULL|)\Z")
_BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)\Z")
_INT = re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)\Z")
_FLOAT = re.compile(
    r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))\Z"
)
_CORE = "tag:yaml.org,2002:"
_TOO_DEEP = f"nesting too deep: trajrun reads at most {MAX_DEPTH} levels of lists and maps"
_SCALAR_TAGS = {_CORE + t for t in ("str", "int", "float", "bool", "null")}
_STR = _CORE + "str"
_SEQ, _MAP = _CORE + "seq", _CORE + "map"


@dataclass(frozen=True, slots=True)
class Pos:
    """A 1-based line and column in the file."""

    line: int
    column: int


@dataclass(slots=True)
class Marks:
    """Where every value (and every mapping key) of a loaded document was written, found by key
    path.

    Positions are looked up in the node tree libyaml composed when they are asked for (a case's
    location, an error), not recorded for every value as it is built: most values are never asked
    about, and recording each one's path was a large part of loading a suite. ``value`` and
    ``key`` give 1-based positions.
    """

    root: Node | None = None
    prefix: Path = ()
    """The key path of ``root`` in the whole document: an item of a file parsed piece by piece
    (``yaml_items``)."""
    line_offset: int = 0
    """Added to every line: the marks of a piece of the file parsed on its own."""
    base: Marks | None = None
    """The marks of the rest of the document, for paths outside ``prefix``."""
    pinned: dict[Path, Any] = field(default_factory=dict)
    """Marks set by hand, standing for the paths under them too: where a piece's items start in the
    whole file."""
    _found: dict[Path, tuple[Any, Any, bool]] = field(default_factory=dict, init=False, repr=False)
    """Walks already done (a suite asks for every step's position, under the same few parents)."""

    def value(self, path: Path) -> Pos:
        """The position of the value at ``path``, or of its nearest written ancestor."""
        if self.base is not None and path[: len(self.prefix)] != self.prefix:
            return self.base.value(path)
        mark = self._pinned(path) if self.pinned else None
        if mark is None:
            node = self._find(path[len(self.prefix) :])[0]
            if node is None:
                return Pos(1, 1)
            mark = node.start_mark
        return Pos(mark.line + 1 + self.line_offset, mark.column + 1)

    def key(self, path: Path) -> Pos:
        """The position of the key that ends ``path`` (the value's when there is no key)."""
        if self.base is not None and path[: len(self.prefix)] != self.prefix:
            return self.base.key(path)
        key = self._find(path[len(self.prefix) :])[1]
        if key is None:
            return self.value(path)
        return Pos(key.start_mark.line + 1 + self.line_offset, key.start_mark.column + 1)

    def items(self, path: Path) -> list[tuple[int, int]] | None:
        """The line and column of each item of the list written at ``path``, found at once (every
        step of a case); None when no list is written there."""
        if self.base is not None and path[: len(self.prefix)] != self.prefix:
            return self.base.items(path)
        node, _, reached = self._find(path[len(self.prefix) :])
        if not reached or not isinstance(node, SequenceNode) or self._pinned(path) is not None:
            return None
        offset = self.line_offset + 1
        return [(mark.line + offset, mark.column + 1) for mark in map(_START, node.value)]

    def _pinned(self, path: Path) -> Any:
        """The mark pinned at ``path`` or at its nearest pinned ancestor, if any."""
        return next(
            (
                self.pinned[path[:cut]]
                for cut in range(len(path), -1, -1)
                if path[:cut] in self.pinned
            ),
            None,
        )

    def _find(self, path: Path) -> tuple[Any, Any, bool]:
        """The node at ``path`` (from ``root``), the key node naming it (None for an item), and
        whether it was reached; when it was not, the nearest ancestor's node."""
        found = self._found.get(path)
        if found is None:
            if not path:
                found = (self.root, None, self.root is not None)
            else:
                parent, _, reached = self._find(path[:-1])
                child = _child_node(parent, path[-1]) if reached else None
                found = (child[1], child[0], True) if child is not None else (parent, None, False)
            self._found[path] = found
        return found


_START = attrgetter("start_mark")


def _child_node(node: Node, step: PathKey) -> tuple[Node | None, Node] | None:
    """The key node (None for an item) and value node at ``step`` under ``node``, as ``NodeBuilder``
    reads them: a mapping's first key of that name, else its ``<<`` merges in order; None when there
    is none."""
    if isinstance(node, SequenceNode):
        if type(step) is int and 0 <= step < len(node.value):
            return None, node.value[step]
        return None
    if not isinstance(node, MappingNode) or not isinstance(step, str):
        return None
    merges = []
    for key, value in node.value:
        if _is_merge(key):
            merges.append(value)
        elif isinstance(key, ScalarNode) and key.value == step:
            return key, value
    for value in merges:
        for source in value.value if isinstance(value, SequenceNode) else [value]:
            found = _child_node(source, step)
            if found is not None:
                return found
    return None


def _is_merge(key: Node) -> bool:
    """Whether a mapping key is the merge key ``<<`` (written plain)."""
    return key.value == "<<" and isinstance(key, ScalarNode) and key.tag == "plain"


class YamlProblem(Exception):
    """A document that cannot be read at all; ``pos`` is where, ``path`` the key path if known."""

    def __init__(self, message: str, pos: Pos, path: Path = ()) -> None:
        super().__init__(message)
        self.message = message
        self.pos = pos
        self.path = path


@dataclass(slots=True)
class Loaded:
    """A loaded document: its data, its marks, and the duplicate-key problems found on the way."""

    data: Any
    marks: Marks
    duplicates: list[YamlProblem]


def _pos(mark: Any) -> Pos:
    """A PyYAML mark (0-based) as a 1-based position."""
    return Pos(mark.line + 1, mark.column + 1)


def resolve_plain(value: str) -> Any:
    """The YAML 1.2 core-schema value of a plain (unquoted) scalar: ``on`` and dates stay strings.

    Raises ``ValueError`` for an integer longer than ``int_digits_limit()`` digits (as JSON sources
    do).
    """
    if (
        value and value[0] not in _NOT_ONLY_STR
    ):  # most plain scalars (names, words) skip the four patterns
        return value
    if (
        value.isdigit() and value.isascii() and len(value) < 19
    ):  # most numbers: a few decimal digits, as _INT reads
        return int(value)
    if _NULL.match(value):
        return None
    if _BOOL.match(value):
        return value.lower() == "true"
    if _INT.match(value):
        return _integer(value)
    if _FLOAT.match(value):
        lower = value.lower()
        if lower.endswith((".inf", ".nan")):
            return float(lower.replace(".", ""))
        return float(value)
    return value


_NOT_ONLY_STR = frozenset("~nNtTfF0123456789+-.")
"""The first characters of every core-schema null, bool, int and float: a plain scalar starting
otherwise is a string."""


def int_digits_limit() -> int:
    """Python's limit on the decimal digits of an int converted from or to text (4,300 by default;
    0: none)."""
    return sys.get_int_max_str_digits() if hasattr(sys, "get_int_max_str_digits") else 0


def _integer(value: str) -> int:
    """A core-schema integer (decimal, ``0o``, ``0x``), refused past Python's digit limit however it
    is written.

    Hex and octal have no limit of their own, but such an integer could never be printed in a
    message.
    """
    limit = int_digits_limit()
    number: int | None = None
    if value.startswith(("0o", "0x")):
        number = int(value[2:], 8 if value[1] == "o" else 16)
        digits = _digits(number)
    else:
        digits = len(value.lstrip("+-"))
    if limit and digits > limit:
        raise ValueError(
            f"an integer of {digits:,} digits ({value[:8]}…{value[-8:]}); trajrun reads integers "
            f"of at most {limit:,} digits (Python's limit) — quote it to keep it as a string"
        )
    return int(value) if number is None else number


def _digits(number: int) -> int:
    """About how many decimal digits ``number`` has (exact to within one), without converting it."""
    return int(abs(number).bit_length() * 0.30103) + 1


def is_core_plain_str(value: str) -> bool:
    """Whether ``value`` written plain would read back as this string under YAML 1.2 core."""
    try:
        return isinstance(resolve_plain(value), str)
    except ValueError:  # an integer too long to read: quoted, it stays a string
        return False


def decode_utf8(data: bytes) -> str:
    """The text of a UTF-8 file (a BOM is allowed); raises ``YamlProblem`` at the first bad byte."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise YamlProblem(
            f"file is not UTF-8: byte 0x{data[exc.start]:02x} at offset {exc.start} cannot be "
            "decoded; save the file as UTF-8",
            Pos(line, column),
        ) from None


_ParserBase: Any = _CParser or object


class _CoreNodeParser(_ParserBase):
    """libyaml's parser and composer, tagging plain scalars ``plain`` so the core schema resolves
    them.

    Composition runs in C; aliases stay shared nodes (never expanded here), explicit tags are
    kept as written and checked by ``NodeBuilder``.
    """

    def resolve(self, kind: type, value: Any, implicit: tuple[bool, bool]) -> str:
        """The tag of an untagged node: ``plain`` for plain scalars, else the core type's."""
        if kind is ScalarNode:
            return "plain" if implicit[0] else _STR
        return _SEQ if kind is SequenceNode else _MAP  # called by libyaml's composer for every node

    def descend_resolver(self, parent: Any, index: Any) -> None:
        """Path-dependent resolution is not used."""

    def ascend_resolver(self) -> None:
        """Path-dependent resolution is not used."""


def compose(text: str) -> Node | None:
    """The document's node tree: libyaml's composer on the happy path; the event composer (which
    gives precise messages, and accepts re-defined anchors) when libyaml is missing or objects."""
    if _CParser is not None and parser_class is _CParser:
        try:
            return _CoreNodeParser(text).get_single_node()
        except (yaml.YAMLError, RecursionError):
            pass
    return _Composer(parser_class(text)).document()


def load_text(text: str) -> Loaded:
    """Parse one YAML document from text; raises ``YamlProblem`` for syntax errors and refused
    content."""
    with collector_paused():
        return _load(text)


def _load(text: str) -> Loaded:
    """``load_text`` with the collector paused."""
    try:
        root = compose(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        message = " ".join(p for p in (exc.context, exc.problem) if p)
        if "maximum nesting depth" in message:
            message = _TOO_DEEP
        raise YamlProblem(f"invalid YAML: {message}", _pos(mark) if mark else Pos(1, 1)) from None
    except yaml.reader.ReaderError as exc:
        head = text.encode("utf-8")[: exc.position].decode("utf-8", "replace")
        pos = Pos(head.count("\n") + 1, len(head) - (head.rfind("\n") + 1) + 1)
        raise YamlProblem(
            f"invalid YAML: {exc.reason} (character {exc.character!r})", pos
        ) from None
    builder = NodeBuilder(Marks(root), unshared(text))
    data = builder.build(root, ()) if root is not None else None
    return Loaded(data, builder.marks, builder.duplicates)


def load_data(text: str) -> Any:
    """The data of one YAML document (no marks kept for the caller); a duplicate key is a
    ``YamlProblem`` too."""
    loaded = load_text(text)
    if loaded.duplicates:
        raise loaded.duplicates[0]
    return loaded.data


class _Composer:
    """Events to nodes, refusing unknown tags and nesting deeper than ``MAX_DEPTH`` as it goes."""

    def __init__(self, parser: Any) -> None:
        self.parser = parser
        self.anchors: dict[str, Node] = {}

    def document(self) -> Node | None:
        """The single document of the stream (``None`` for an empty file)."""
        self.parser.get_event()  # StreamStart
        if self.parser.check_event(yaml.StreamEndEvent):
            return None
        self.parser.get_event()  # DocumentStart
        node = self.node(0, ())
        self.parser.get_event()  # DocumentEnd
        if not self.parser.check_event(yaml.StreamEndEvent):
            raise YamlProblem(
                "expected one YAML document, found several (remove the `---` separator)",
                _pos(self.parser.peek_event().start_mark),
            )
        return node

    def node(self, depth: int, path: Path) -> Node:
        """Compose one node, its children included; ``path`` is its key path, for messages."""
        event = self.parser.get_event()
        if depth > MAX_DEPTH:
            raise YamlProblem(_TOO_DEEP, _pos(event.start_mark))
        if isinstance(event, yaml.AliasEvent):
            if event.anchor not in self.anchors:
                raise YamlProblem(
                    f"alias *{event.anchor} names no anchor defined before it",
                    _pos(event.start_mark),
                    path,
                )
            return self.anchors[event.anchor]
        node = self._start(event, path)
        if event.anchor is not None:
            self.anchors[event.anchor] = node
        if isinstance(node, SequenceNode):
            while not self.parser.check_event(yaml.SequenceEndEvent):
                node.value.append(self.node(depth + 1, (*path, len(node.value))))
            node.end_mark = self.parser.get_event().end_mark
        elif isinstance(node, MappingNode):
            while not self.parser.check_event(yaml.MappingEndEvent):
                key = self.node(depth + 1, path)
                node.value.append((key, self.node(depth + 1, (*path, str(key.value)))))
            node.end_mark = self.parser.get_event().end_mark
        return node

    def _start(self, event: Any, path: Path) -> Node:
        """The node an event opens, with its tag checked against the core schema."""
        tag = event.tag if event.tag not in (None, "!") else None
        if isinstance(event, yaml.ScalarEvent):
            if tag is None:
                tag = "plain" if event.implicit[0] else _CORE + "str"
            elif tag not in _SCALAR_TAGS:
                raise _refused(tag, event.start_mark, path)
            # types-PyYAML: a node takes libyaml's marks as well as PyYAML's
            return ScalarNode(tag, event.value, event.start_mark, event.end_mark, event.style)  # type: ignore[arg-type]
        kind = "seq" if isinstance(event, yaml.SequenceStartEvent) else "map"
        if tag not in (None, _CORE + kind):
            raise _refused(tag, event.start_mark, path)
        cls = SequenceNode if kind == "seq" else MappingNode
        return cls(_CORE + kind, [], event.start_mark, None, event.flow_style)


def _refused(tag: str, mark: Any, path: Path) -> YamlProblem:
    """The error for a tag outside the core schema (the tagged value is never constructed)."""
    return YamlProblem(
        f"tag {tag.replace(_CORE, '!!')} is not allowed: trajrun reads plain YAML values only "
        "(strings, numbers, true/false, null, lists, maps); remove the tag",
        _pos(mark),
        path,
    )


_ALLOWED_TAGS = {
    ScalarNode: {"plain", *_SCALAR_TAGS},
    SequenceNode: {_CORE + "seq"},
    MappingNode: {_CORE + "map"},
}


def unshared(text: str) -> bool:
    """Whether a document's text holds no anchor and no tag (nor a ``&`` or ``!`` anywhere, even
    quoted)."""
    return "&" not in text and "!" not in text


class NodeBuilder:
    """Nodes to plain data, counting nodes reached through aliases; ``marks`` finds where each was
    written."""

    def __init__(self, marks: Marks, unshared: bool = False) -> None:
        self.marks = marks
        self.unshared = unshared
        """No anchor and no explicit tag in the text: no node is reached twice and every tag is a
        core one, so collections skip the bookkeeping (a sixth of building a suite)."""
        self.duplicates: list[YamlProblem] = []
        self.seen: set[int] = set()
        self.active: set[int] = set()
        self.expanded = 0

    def build(self, node: Node, path: Path, via_alias: bool = False) -> Any:
        """The value of ``node`` placed at ``path``."""
        if id(node) in self.seen:
            via_alias = True
        self.seen.add(id(node))
        if via_alias:
            self.expanded += 1
            if self.expanded > MAX_ALIAS_NODES:
                raise YamlProblem(
                    f"aliases expand to more than {MAX_ALIAS_NODES:,} nodes; "
                    "refusing to expand them",
                    _pos(node.start_mark),
                    path,
                )
        if len(path) > MAX_DEPTH:
            raise YamlProblem(_TOO_DEEP, _pos(node.start_mark), path)
        if node.tag not in _ALLOWED_TAGS[type(node)]:
            raise _refused(node.tag, node.start_mark, path)
        if isinstance(node, ScalarNode):
            try:
                return _scalar(node)
            except ValueError as exc:
                raise YamlProblem(str(exc), _pos(node.start_mark), path) from None
        if id(node) in self.active:
            raise YamlProblem(
                "an alias refers to the collection that contains it", _pos(node.start_mark), path
            )
        self.active.add(id(node))
        try:
            return self._collection(node, path, via_alias)
        finally:
            self.active.discard(id(node))

    def _collection(self, node: Node, path: Path, via_alias: bool) -> Any:
        """A sequence or mapping, its items built."""
        if isinstance(node, SequenceNode):
            return [self._child(item, path, i, via_alias) for i, item in enumerate(node.value)]
        return self._mapping(node, path, via_alias)

    def _child(self, node: Node, path: Path, step: PathKey, via_alias: bool) -> Any:
        """``build`` of the item or value at ``step`` of the collection at ``path``, with plain and
        quoted scalars (most nodes of a suite) done inline, without making their key path.

        A scalar is not tracked as seen: an alias to one adds a single value, so only collections
        can make aliases expand past ``MAX_ALIAS_NODES``.
        """
        if type(node) is ScalarNode and not via_alias and len(path) < MAX_DEPTH:
            tag = node.tag
            if tag == _STR:  # quoted (JSON-style arguments are), or tagged !!str
                return node.value
            if tag == "plain":
                try:
                    return resolve_plain(node.value)
                except ValueError:  # an integer past the digit limit: build reports it where it is
                    pass
        elif self.unshared and len(path) < MAX_DEPTH and type(node) is not ScalarNode:
            return self._collection(node, (*path, step), False)
        return self.build(node, (*path, step), via_alias)

    def _mapping(self, node: Node, path: Path, via_alias: bool) -> dict[str, Any]:
        """A mapping: own keys first (duplicates reported), then ``<<`` merges for keys not yet
        set."""
        out: dict[str, Any] = {}
        merges: list[tuple[Node, Node]] = []
        for key_node, value_node in node.value:
            if _is_merge(key_node):
                merges.append((key_node, value_node))
                continue
            if type(key_node) is not ScalarNode:
                raise YamlProblem(
                    "a mapping key must be a plain value, not a list or a map",
                    _pos(key_node.start_mark),
                    path,
                )
            key = key_node.value  # the text written, since JSON keys are strings
            if key in out:
                self._duplicate(key_node, (*path, key))
                continue
            out[key] = self._child(value_node, path, key, via_alias)
        for key_node, value_node in merges:
            self._merge(out, key_node, value_node, path, via_alias)
        return out

    def _duplicate(self, key_node: Node, path: Path) -> None:
        """Report a key written a second time in one mapping (the first is kept)."""
        first = self.marks.key(path)
        self.duplicates.append(
            YamlProblem(
                f"duplicate key '{path[-1]}' (first written at line {first.line}); "
                "remove one of them",
                _pos(key_node.start_mark),
                path,
            )
        )

    def _merge(
        self, out: dict[str, Any], key_node: Node, value_node: Node, path: Path, via_alias: bool
    ) -> None:
        """Apply one ``<<: *anchor`` (or a list of them): earlier sources win, own keys always
        win."""
        sources = value_node.value if isinstance(value_node, SequenceNode) else [value_node]
        for source in sources:
            if not isinstance(source, MappingNode):
                raise YamlProblem(
                    "`<<` merges a map or a list of maps (usually `<<: *anchor`)",
                    _pos(key_node.start_mark),
                    path,
                )
            reported = len(self.duplicates)
            merged = self._mapping(source, path, True)
            del self.duplicates[reported:]
            for key, value in merged.items():
                out.setdefault(key, value)


_TAG_TYPES: dict[str, Any] = {
    "int": int,
    "float": (int, float),
    "bool": bool,
    "null": type(None),
}
"""The Python types (as ``isinstance`` takes them) a value under each explicit core scalar tag may
have."""


def _scalar(node: ScalarNode) -> Any:
    """A scalar's value under the core schema, honouring an explicit core tag; ``ValueError`` when
    it cannot be."""
    if node.tag == "plain":
        return resolve_plain(node.value)
    kind = node.tag[len(_CORE) :]
    if kind == "str":
        return node.value
    value = resolve_plain(node.value)
    if isinstance(value, bool) and kind != "bool" or not isinstance(value, _TAG_TYPES[kind]):
        raise ValueError(f"'{node.value}' is not a valid !!{kind}")
    return float(value) if kind == "float" else value
