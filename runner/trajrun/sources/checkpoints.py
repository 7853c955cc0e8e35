"""LangGraph checkpoint databases: a ``SqliteSaver`` file read by LangGraph's own saver, with LangGraph's serializer.

``load_database`` picks a thread (the only one, or the one named), takes its latest checkpoint of the
root graph (or the one named), and returns it as a document the ``langgraph`` reader takes:
``{thread_id, checkpoint_id, metadata, channel_values: {messages: [...]}}``, messages dumped with
LangChain's ``message_to_dict``. The database is opened read-only and never written: with no ``-wal``
file beside it (no writer holds it open) it is opened immutable, so reading leaves no ``-shm`` or
``-wal`` file behind.
"""

from __future__ import annotations

from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import SourceError
from .extras import require_extra

if TYPE_CHECKING:
    import sqlite3

    from .documents import Spelling

SUFFIXES = (".sqlite", ".sqlite3", ".db")
"""File suffixes read as a LangGraph checkpointer's database."""
SHOWN = 10
"""How many thread or checkpoint ids an error lists."""


def load_database(path: Path, kind: tuple[str, bool], thread: str | None, checkpoint: str | None,
                  spelling: Spelling) -> dict[str, Any]:
    """The messages of one checkpoint of one thread, as a ``langgraph`` document; ``kind`` is the file's kind and
    whether it is gzipped (``thread`` or ``checkpoint`` on a file that is no database is an error)."""
    origin = str(path)
    if kind[0] != "sqlite":
        raise SourceError(f"{spelling.name('thread')} and {spelling.name('checkpoint')} pick a checkpoint in a "
                          f"LangGraph database ({', '.join(SUFFIXES)}); found a .{kind[0]} file — remove them",
                          origin)  # fmt: skip
    if kind[1]:
        raise SourceError("a gzipped database cannot be read in place; decompress it first", origin)
    require_extra("langgraph", "reading a LangGraph checkpoint database", origin)
    from langgraph.checkpoint.sqlite import SqliteSaver  # deferred: the optional trajrun[langgraph] extra

    with closing(_connect(path, origin, spelling)) as conn:
        thread = _thread(_threads(conn, origin), thread, origin, spelling)
        config = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
        if checkpoint is not None:
            config["configurable"]["checkpoint_id"] = checkpoint
        try:
            found = SqliteSaver(conn).get_tuple(config)  # type: ignore[arg-type]
        except Exception as exc:  # noqa: BLE001 - LangGraph's serializer raises whatever an unreadable blob provokes
            raise SourceError(f"LangGraph's SqliteSaver cannot read the checkpoint: {type(exc).__name__}: {exc}; "
                              "read the database with the LangGraph version that wrote it", origin) from None
        if found is None:
            raise SourceError(_no_checkpoint(conn, thread, checkpoint), origin)
    return _document(thread, found)


def _connect(path: Path, origin: str, spelling: Spelling) -> sqlite3.Connection:
    """A read-only connection: immutable when no writer has the database open (no ``-wal`` file beside it)."""
    import sqlite3  # deferred: only database sources pay for it (every source read imports this module)

    if not path.is_file():
        raise SourceError("file not found; expected a LangGraph checkpoint database — check the path (relative "
                          f"paths resolve against {spelling.folder})", origin)  # fmt: skip
    live = path.with_name(path.name + "-wal").exists()
    uri = path.resolve().as_uri() + ("?mode=ro" if live else "?mode=ro&immutable=1")
    return sqlite3.connect(uri, uri=True, check_same_thread=False)


def _threads(conn: sqlite3.Connection, origin: str) -> dict[str, int]:
    """Each thread id of the database with its number of root-graph checkpoints, in id order."""
    import sqlite3  # deferred: as in _connect

    try:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "checkpoints" not in tables:
            shown = ", ".join(sorted(tables)[:SHOWN]) or "none"
            raise SourceError(f"not a LangGraph checkpoint database: no 'checkpoints' table (tables: {shown}); "
                              "point the source at the file a SqliteSaver writes", origin)  # fmt: skip
        rows = conn.execute("SELECT thread_id, COUNT(*) FROM checkpoints WHERE checkpoint_ns = '' "
                            "GROUP BY thread_id ORDER BY thread_id").fetchall()  # fmt: skip
    except sqlite3.DatabaseError as exc:
        raise SourceError(f"cannot read the database: {exc}; expected a SQLite file written by LangGraph's "
                          "SqliteSaver", origin) from None  # fmt: skip
    return {str(thread): count for thread, count in rows}


def _thread(threads: dict[str, int], wanted: str | None, origin: str, spelling: Spelling) -> str:
    """The thread to read: the one named, else the only one; several without a name is an error listing them."""
    if wanted is not None:
        if wanted not in threads:
            raise SourceError(f"no thread {wanted!r} in the database; {_listed(threads)}", origin)
        return wanted
    if len(threads) == 1:
        return next(iter(threads))
    if not threads:
        raise SourceError("the database holds no checkpoints; run the graph with this checkpointer first", origin)
    raise SourceError(f"the database holds {len(threads)} threads and a run is one; pick one with "
                      f"{spelling.given('thread', 'ID')}; {_listed(threads)}", origin)  # fmt: skip


def _listed(threads: dict[str, int]) -> str:
    """``threads: a (3 checkpoints), b (1 checkpoint)``, the first few."""
    items = [f"{thread} ({count} checkpoint{'s' if count != 1 else ''})" for thread, count in threads.items()]
    more = f", … ({len(items) - SHOWN} more)" if len(items) > SHOWN else ""
    return f"threads: {', '.join(items[:SHOWN])}{more}" if items else "it holds no threads"


def _no_checkpoint(conn: sqlite3.Connection, thread: str, checkpoint: str | None) -> str:
    """The error for a checkpoint id the thread does not have, listing its latest ones."""
    rows = conn.execute("SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' "
                        "ORDER BY checkpoint_id DESC LIMIT ?", (thread, SHOWN)).fetchall()  # fmt: skip
    latest = ", ".join(row[0] for row in rows)
    return f"no checkpoint {checkpoint!r} in thread {thread!r}; its latest checkpoints, newest first: {latest}"


def _document(thread: str, found: Any) -> dict[str, Any]:
    """The checkpoint as the ``langgraph`` reader takes it; LangChain message objects dumped to dicts."""
    from langchain_core.messages import BaseMessage, message_to_dict  # deferred: comes with the langgraph extra

    values = found.checkpoint.get("channel_values") or {}
    messages = values.get("messages")
    if isinstance(messages, list):
        messages = [message_to_dict(m) if isinstance(m, BaseMessage) else m for m in messages]
    return {
        "thread_id": thread,
        "checkpoint_id": found.config["configurable"]["checkpoint_id"],
        "metadata": found.metadata,
        "channel_values": {} if messages is None else {"messages": messages},
    }
