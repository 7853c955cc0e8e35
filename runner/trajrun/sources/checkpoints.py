"""LangGraph checkpoint databases: a ``SqliteSaver`` file, its checkpoint decoded here through an
allow-list.

``load_database`` picks a thread (the only one, or the one named), takes its latest checkpoint of
the root graph (or the one named), and returns it as a document the ``langgraph`` reader takes:
``{thread_id, checkpoint_id, metadata, channel_values: {messages: [...]}}``, messages as LangChain's
``message_to_dict`` writes them. The database is opened read-only and never written: with no
``-wal`` file beside it (no writer holds it open) it is opened immutable, so reading leaves no
``-shm`` or ``-wal`` file behind.

A checkpoint is data, never code: LangGraph's serializer imports and calls whatever class a blob
names, so the blob is decoded here and nothing is imported or called. A LangChain message becomes
its ``{type, data}`` dict, a standard-library value (datetime, UUID, set…) its plain payload; any
other constructor entry stays an inert marker, refused if it lies in the messages trajrun reads.
"""

from __future__ import annotations

import json
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import SourceError
from .extras import require_extra

if TYPE_CHECKING:
    import sqlite3

    from .spelling import Spelling

SUFFIXES = (".sqlite", ".sqlite3", ".db")
"""File suffixes read as a LangGraph checkpointer's database."""
SHOWN = 10
"""How many thread or checkpoint ids an error lists."""

MESSAGES = {
    "AIMessage": "ai", "HumanMessage": "human", "SystemMessage": "system", "ChatMessage": "chat",
    "ToolMessage": "tool", "FunctionMessage": "function", "RemoveMessage": "remove",
    "AIMessageChunk": "AIMessageChunk", "HumanMessageChunk": "HumanMessageChunk",
    "SystemMessageChunk": "SystemMessageChunk", "ChatMessageChunk": "ChatMessageChunk",
    "ToolMessageChunk": "ToolMessageChunk", "FunctionMessageChunk": "FunctionMessageChunk",
}  # fmt: skip
"""LangChain's message classes, each with its ``type``: a blob naming one becomes
``{type, data}``."""
PLAIN = frozenset({
    "datetime.datetime", "datetime.date", "datetime.time", "datetime.timedelta",
    "datetime.timezone",
    "uuid.UUID", "decimal.Decimal", "builtins.set", "builtins.frozenset", "collections.deque",
    "zoneinfo.ZoneInfo", "pathlib.Path", "pathlib.PosixPath", "pathlib.WindowsPath",
    "ipaddress.IPv4Address", "ipaddress.IPv4Interface", "ipaddress.IPv4Network",
    "ipaddress.IPv6Address", "ipaddress.IPv6Interface", "ipaddress.IPv6Network",
    "langchain_core.documents.base.Document",
})  # fmt: skip
"""Standard-library values (and LangChain's ``Document``, a tool's usual artifact) that LangGraph's
serializer writes as constructor entries: read as their plain payload."""
KWARGS_EXTS = (2, 4, 5)
"""LangGraph's msgpack extension types whose value is ``(module, name, kwargs, …)``: keyword
arguments, a pydantic v1 model, a pydantic v2 model (a message is one of the last two)."""
DELTA_EXT = 7
"""LangGraph's msgpack extension type wrapping a delta channel's value."""
REFUSED = "trajrun reads only plain data and LangChain messages from a checkpoint — never a call"


@dataclass(frozen=True, slots=True)
class _Unread:
    """An extension entry decoded as nothing: what it is, refused if trajrun reads the place it sits
    in."""

    what: str


def load_database(
    path: Path,
    kind: tuple[str, bool],
    thread: str | None,
    checkpoint: str | None,
    spelling: Spelling,
) -> dict[str, Any]:
    """The messages of one checkpoint of one thread, as a ``langgraph`` document; ``kind`` is the
    file's kind and whether it is gzipped (``thread`` or ``checkpoint`` on a file that is no
    database is an error)."""
    origin = str(path)
    if kind[0] != "sqlite":
        raise SourceError(
            f"{spelling.name('thread')} and {spelling.name('checkpoint')} pick a checkpoint in a "
            f"LangGraph database ({', '.join(SUFFIXES)}); found a .{kind[0]} file — remove them",
            origin,
        )
    if kind[1]:
        raise SourceError("a gzipped database cannot be read in place; decompress it first", origin)
    require_extra("langgraph", "reading a LangGraph checkpoint database", origin)
    with closing(_connect(path, origin, spelling)) as conn:
        thread = _thread(_threads(conn, origin), thread, origin, spelling)
        row = _row(conn, thread, checkpoint, origin)
        if row is None:
            raise SourceError(_no_checkpoint(conn, thread, checkpoint), origin)
    checkpoint_id, serialized, blob, metadata = row
    return {
        "thread_id": thread,
        "checkpoint_id": checkpoint_id,
        "metadata": _metadata(metadata, origin),
        "channel_values": _channel_values(_decode(serialized, blob, origin), origin),
    }


def _connect(path: Path, origin: str, spelling: Spelling) -> sqlite3.Connection:
    """A read-only connection: immutable when no writer has the database open (no ``-wal`` file
    beside it)."""
    import sqlite3  # deferred: only database sources pay for it (every read imports this module)

    if not path.is_file():
        raise SourceError(
            "file not found; expected a LangGraph checkpoint database — check the path (relative "
            f"paths resolve against {spelling.folder})",
            origin,
        )
    live = path.with_name(path.name + "-wal").exists()
    uri = path.resolve().as_uri() + ("?mode=ro" if live else "?mode=ro&immutable=1")
    return sqlite3.connect(uri, uri=True, check_same_thread=False)


def _threads(conn: sqlite3.Connection, origin: str) -> dict[str, int]:
    """Each thread id of the database with its number of root-graph checkpoints, in id order."""
    import sqlite3  # deferred: as in _connect

    try:
        tables = {
            row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
        if "checkpoints" not in tables:
            shown = ", ".join(sorted(tables)[:SHOWN]) or "none"
            raise SourceError(
                f"not a LangGraph checkpoint database: no 'checkpoints' table (tables: {shown}); "
                "point the source at the file a SqliteSaver writes",
                origin,
            )
        rows = conn.execute("SELECT thread_id, COUNT(*) FROM checkpoints WHERE checkpoint_ns = '' "
                            "GROUP BY thread_id ORDER BY thread_id").fetchall()  # fmt: skip
    except sqlite3.DatabaseError as exc:
        raise _unreadable(exc, origin) from None
    return {str(thread): count for thread, count in rows}


def _unreadable(exc: Exception, origin: str) -> SourceError:
    """The error for a file SQLite cannot read as LangGraph's tables."""
    return SourceError(
        f"cannot read the database: {exc}; expected a SQLite file written by LangGraph's "
        "SqliteSaver",
        origin,
    )


def _thread(threads: dict[str, int], wanted: str | None, origin: str, spelling: Spelling) -> str:
    """The thread to read: the one named, else the only one; several without a name is an error
    listing them."""
    if wanted is not None:
        if wanted not in threads:
            raise SourceError(f"no thread {wanted!r} in the database; {_listed(threads)}", origin)
        return wanted
    if len(threads) == 1:
        return next(iter(threads))
    if not threads:
        raise SourceError(
            "the database holds no checkpoints; run the graph with this checkpointer first", origin
        )
    raise SourceError(f"the database holds {len(threads)} threads and a run is one; pick one with "
                      f"{spelling.given('thread', 'ID')}; {_listed(threads)}", origin)  # fmt: skip


def _listed(threads: dict[str, int]) -> str:
    """``threads: a (3 checkpoints), b (1 checkpoint)``, the first few."""
    items = [
        f"{thread} ({count} checkpoint{'s' if count != 1 else ''})"
        for thread, count in threads.items()
    ]
    more = f", … ({len(items) - SHOWN} more)" if len(items) > SHOWN else ""
    return f"threads: {', '.join(items[:SHOWN])}{more}" if items else "it holds no threads"


def _row(
    conn: sqlite3.Connection, thread: str, checkpoint: str | None, origin: str
) -> tuple[Any, ...] | None:
    """``(checkpoint_id, type, checkpoint, metadata)`` of the checkpoint named, else the thread's
    latest; the columns and order LangGraph's ``SqliteSaver.get_tuple`` reads."""
    import sqlite3  # deferred: as in _connect

    query = ("SELECT checkpoint_id, type, checkpoint, metadata FROM checkpoints "
             "WHERE thread_id = ? AND checkpoint_ns = ''")  # fmt: skip
    try:
        if checkpoint is None:
            return conn.execute(
                f"{query} ORDER BY checkpoint_id DESC LIMIT 1", (thread,)
            ).fetchone()
        return conn.execute(f"{query} AND checkpoint_id = ?", (thread, checkpoint)).fetchone()
    except sqlite3.DatabaseError as exc:
        raise _unreadable(exc, origin) from None


def _no_checkpoint(conn: sqlite3.Connection, thread: str, checkpoint: str | None) -> str:
    """The error for a checkpoint id the thread does not have, listing its latest ones."""
    rows = conn.execute(
        "SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' "
        "ORDER BY checkpoint_id DESC LIMIT ?",
        (thread, SHOWN),
    ).fetchall()
    latest = ", ".join(row[0] for row in rows)
    return (
        f"no checkpoint {checkpoint!r} in thread {thread!r}; its latest checkpoints, newest first: "
        f"{latest}"
    )


def _metadata(metadata: Any, origin: str) -> Any:
    """The checkpoint's metadata: JSON text (``lc`` constructors in it stay plain mappings)."""
    if metadata is None:
        return {}
    try:
        return json.loads(metadata)
    except (ValueError, TypeError, RecursionError) as exc:
        raise SourceError(
            f"cannot read the checkpoint's metadata: {exc}; expected the JSON a SqliteSaver writes",
            origin,
        ) from None


def _decode(serialized: Any, blob: Any, origin: str) -> dict[Any, Any]:
    """The checkpoint blob as plain data: ``msgpack`` through the allow-list, legacy ``json`` as
    JSON (no reviver)."""
    if serialized not in ("msgpack", "json"):
        raise SourceError(
            f"the checkpoint is serialized as {serialized!r}; trajrun reads the 'msgpack' and "
            "'json' checkpoints LangGraph writes, never 'pickle'",
            origin,
        )
    if not isinstance(blob, (bytes, str)):
        raise SourceError(
            f"the checkpoint holds {_kind(blob)}, expected the bytes a SqliteSaver writes", origin
        )
    try:
        if serialized == "json":
            value = json.loads(blob)
        else:
            import ormsgpack  # deferred: comes with the langgraph extra

            data = blob.encode() if isinstance(blob, str) else blob
            value = ormsgpack.unpackb(data, ext_hook=_extension, option=ormsgpack.OPT_NON_STR_KEYS)
    except (ValueError, TypeError, RecursionError) as exc:
        raise SourceError(
            f"cannot decode the checkpoint ({serialized}): {exc}; expected a checkpoint as "
            "LangGraph's SqliteSaver writes it",
            origin,
        ) from None
    return _map(value, "the checkpoint", "a map holding 'channel_values'", origin)


def _extension(code: int, data: bytes) -> Any:
    """ormsgpack's hook for one extension entry: a message as ``{type, data}``, a standard-library
    value as its payload, anything else ``_Unread``; nothing is imported or called."""
    import ormsgpack  # deferred: as in _decode

    try:
        value = ormsgpack.unpackb(data, ext_hook=_extension, option=ormsgpack.OPT_NON_STR_KEYS)
    except (ValueError, RecursionError):
        return _Unread(f"a msgpack extension (type {code}) that does not decode")
    if code == DELTA_EXT:
        return value
    if not (
        isinstance(value, list)
        and len(value) >= 3
        and isinstance(value[0], str)
        and isinstance(value[1], str)
    ):
        return _Unread(f"a msgpack extension (type {code}) that is no LangGraph constructor entry")
    module, name, payload = value[:3]
    if (
        code in KWARGS_EXTS
        and name in MESSAGES
        and isinstance(payload, dict)
        and _message_module(module)
    ):
        return {"type": MESSAGES[name], "data": payload}
    if f"{module}.{name}" in PLAIN or module == "pathlib._local" and f"pathlib.{name}" in PLAIN:
        return payload
    return _Unread(f"a constructor of {module}.{name}")


def _message_module(module: str) -> bool:
    """Whether ``module`` is where LangChain defines its messages (``langchain_core.messages`` or a
    submodule), or their ``lc`` namespace."""
    return module in ("langchain_core.messages", "langchain.schema.messages") or module.startswith(
        "langchain_core.messages."
    )


def _channel_values(checkpoint: dict[Any, Any], origin: str) -> dict[str, Any]:
    """The ``messages`` channel, each message checked: ``_Unread`` anywhere in one, or an ``lc``
    constructor of anything but a message, is refused."""
    values = checkpoint.get("channel_values")
    if values is None:
        return {}
    values = _map(values, "the checkpoint's channel_values", "a map of channel names", origin)
    messages = values.get("messages")
    if messages is None:
        return {}
    if isinstance(messages, list):
        where = "the checkpoint's channel_values.messages"
        messages = [_message(item, f"{where}[{i}]", origin) for i, item in enumerate(messages)]
    else:
        _check(messages, "the checkpoint's channel_values.messages", origin)
    return {"messages": messages}


def _message(item: Any, where: str, origin: str) -> Any:
    """One message: an ``lc`` constructor of a LangChain message as ``{type, data}``, of anything
    else refused."""
    if isinstance(item, dict) and item.get("type") == "constructor" and item.get("lc") in (1, 2):
        path = item.get("id")
        if not (isinstance(path, list) and path and all(isinstance(p, str) for p in path)):
            raise SourceError(
                f"{where} is an 'lc' constructor without a valid 'id', refused: {REFUSED}", origin
            )
        if path[-1] not in MESSAGES or not _message_module(".".join(path[:-1])):
            raise SourceError(
                f"{where} is an 'lc' constructor of {'.'.join(path)}, refused: {REFUSED}", origin
            )
        item = {"type": MESSAGES[path[-1]], "data": item.get("kwargs")}
    _check(item, where, origin)
    return item


def _check(value: Any, where: str, origin: str) -> None:
    """Refuse ``value`` if an ``_Unread`` entry lies anywhere in it (walked without recursion)."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            stack.extend(node)
            stack.extend(node.values())
        elif isinstance(node, (list, tuple)):
            stack.extend(node)
        elif isinstance(node, _Unread):
            raise _refused(node, where, origin)


def _map(value: Any, where: str, expected: str, origin: str) -> dict[Any, Any]:
    """``value`` if it is a map; else the error saying what it is (an ``_Unread`` entry is
    refused)."""
    if isinstance(value, dict):
        return value
    if isinstance(value, _Unread):
        raise _refused(value, where, origin)
    raise SourceError(f"{where} is {_kind(value)}, expected {expected}", origin)


def _refused(entry: _Unread, where: str, origin: str) -> SourceError:
    """The error for an entry trajrun would have had to call to read."""
    return SourceError(f"{where} holds {entry.what}, refused: {REFUSED}", origin)


def _kind(value: Any) -> str:
    """What a decoded value is, in a word, quoting none of it."""
    if value is None:
        return "null"
    for kind, name in ((bool, "a boolean"), (int, "a number"), (float, "a number"),
                       (str, "a string"), (bytes, "binary data"), (list, "a list"),
                       (dict, "a map")):  # fmt: skip
        if isinstance(value, kind):
            return name
    return type(value).__name__
