"""LangGraph checkpoint databases: read with LangGraph's own SqliteSaver from a database a real StateGraph wrote."""

from __future__ import annotations

import sqlite3
import sys
from contextlib import closing
from pathlib import Path

import pytest
from click.testing import CliRunner
from trajrun.cli import main
from trajrun.errors import SourceError
from trajrun.sources import extras, load_trajectory
from trajrun.sources.spelling import SHOW

AGENTS = Path(__file__).parent / "data" / "agents"


def write_database(path: Path, *threads: dict[str, list[str]]) -> None:
    """Run the checkpointing StateGraph in tests/data/agents; imported here so only the worker running these pays
    for importing LangGraph (1.7 s)."""
    sys.path.insert(0, str(AGENTS))
    from checkpoint_graph import write_database as write  # deferred: see the docstring

    write(path, *threads)


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database with two threads, written by a StateGraph with a ToolNode and a scripted model."""
    path = tmp_path_factory.mktemp("checkpoints") / "trips.sqlite"
    write_database(path)
    return path


def _message(path: Path, **options: object) -> str:
    with pytest.raises(SourceError) as info:
        load_trajectory(path, **options)  # type: ignore[arg-type]
    return str(info.value)


def test_a_thread_reads_as_its_latest_checkpoint(database: Path) -> None:
    """The latest checkpoint's messages: both parallel calls in turn 0 with their results, usage, the answer."""
    traj = load_trajectory(database, thread="trip-paris-tokyo")
    assert traj.format == "langgraph"
    assert [(c.name, c.args, c.turn, c.result) for c in traj.calls] == [
        ("get_forecast", {"city": "Paris", "days": 1}, 0, "sunny, 24°C"),
        ("get_forecast", {"city": "Tokyo", "days": 1}, 0, "light rain, 19°C"),
    ]
    assert (traj.turns, traj.usage.total_tokens if traj.usage else None) == (2, 173)
    assert traj.answer == "Paris: sunny, 24°C; Tokyo: light rain, 19°C"


def test_a_checkpoint_id_picks_an_earlier_state(database: Path) -> None:
    """``checkpoint: ID`` reads that checkpoint: right after the model asked, the calls have no results yet."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    with closing(sqlite3.connect(database)) as conn:
        saved = list(SqliteSaver(conn).list({"configurable": {"thread_id": "trip-oslo"}}))
    asked = next(t for t in saved if t.metadata.get("step") == 1).config["configurable"]["checkpoint_id"]
    traj = load_trajectory(database, thread="trip-oslo", checkpoint=asked)
    assert [(c.name, c.has_result) for c in traj.calls] == [("get_forecast", False)]
    assert traj.answer is None


def test_several_threads_without_a_thread_are_listed(database: Path) -> None:
    """A run is one thread: the error lists them and says how to pick one, in the suite's or show's words."""
    listed = "threads: trip-oslo (5 checkpoints), trip-paris-tokyo (5 checkpoints)"
    assert _message(database) == (f"{database}: the database holds 2 threads and a run is one; pick one with "
                                  f"thread: ID; {listed}")  # fmt: skip
    assert "pick one with --thread ID" in _message(database, spelling=SHOW)
    assert _message(database, thread="trip-rome") == f"{database}: no thread 'trip-rome' in the database; {listed}"


def test_one_thread_is_taken_without_naming_it(tmp_path: Path) -> None:
    """With a single thread, ``thread`` may be left out; an id the thread lacks lists its latest checkpoints."""
    path = tmp_path / "one.db"
    write_database(path, {"only": ["Oslo"]})
    assert load_trajectory(path).names == ["get_forecast"]
    message = _message(path, checkpoint="nope")
    assert message.startswith(f"{path}: no checkpoint 'nope' in thread 'only'; its latest checkpoints, newest first: ")
    assert message.rsplit(": ", 1)[1].count(", ") == 4  # all 5 checkpoints of the thread


def test_reading_never_writes(database: Path) -> None:
    """The database is opened read-only: no byte changes and no -wal or -shm file is left beside it."""
    before = database.read_bytes()
    load_trajectory(database, thread="trip-oslo")
    assert database.read_bytes() == before
    assert sorted(p.name for p in database.parent.iterdir()) == ["trips.sqlite"]


def test_a_database_still_being_written_is_read_through_its_wal(tmp_path: Path) -> None:
    """While a writer holds the database open, its latest checkpoints (still in the -wal file) are read."""
    path = tmp_path / "live.sqlite"
    write_database(path, {"first": ["Paris"]})
    with closing(sqlite3.connect(path)) as writer:
        writer.execute("SELECT COUNT(*) FROM checkpoints").fetchone()
        write_database(path, {"second": ["Tokyo"]})
        assert path.with_name("live.sqlite-wal").exists()
        assert load_trajectory(path, thread="second").calls[0].args == {"city": "Tokyo", "days": 1}


def test_other_sqlite_files_are_refused_with_the_reason(tmp_path: Path) -> None:
    """A SQLite file without LangGraph's tables, and a file that is no database, each say what they are."""
    other = tmp_path / "app.db"
    with closing(sqlite3.connect(other)) as conn:
        conn.execute("CREATE TABLE users (id INTEGER)")
    assert _message(other) == (f"{other}: not a LangGraph checkpoint database: no 'checkpoints' table (tables: users); "
                               "point the source at the file a SqliteSaver writes")  # fmt: skip
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"not a database at all" * 100)
    assert _message(junk) == (f"{junk}: cannot read the database: file is not a database; expected a SQLite file "
                              "written by LangGraph's SqliteSaver")  # fmt: skip
    assert _message(tmp_path / "missing.sqlite").endswith("file not found; expected a LangGraph checkpoint database "
                                                          "— check the path (relative paths resolve against the "
                                                          "suite's folder)")  # fmt: skip


def test_thread_on_another_file_is_an_error(tmp_path: Path) -> None:
    """``thread`` and ``checkpoint`` only pick within a database."""
    path = tmp_path / "run.json"
    path.write_text("[]")
    assert _message(path, thread="t") == (f"{path}: 'thread:' and 'checkpoint:' pick a checkpoint in a LangGraph "
                                          "database (.sqlite, .sqlite3, .db); found a .json file — remove them")


def test_without_the_extra_the_error_names_it(database: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without langgraph-checkpoint-sqlite the error says which extra to install."""
    monkeypatch.setitem(extras.EXTRAS, "langgraph", ("trajrun_no_such_module",))
    assert _message(database, thread="trip-oslo") == (
        f"{database}: reading a LangGraph checkpoint database needs the langgraph extra, which is not installed "
        "(no module trajrun_no_such_module): pip install 'trajrun[langgraph]'"
    )


def test_show_takes_thread_and_checkpoint(database: Path) -> None:
    """`trajrun show FILE --thread ID` prints the thread's run; without --thread it lists the threads."""
    shown = CliRunner().invoke(main, ["show", str(database), "--thread", "trip-oslo"])
    assert shown.exit_code == 0, shown.output
    assert "get_forecast  {\"city\":\"Oslo\",\"days\":1}  cloudy, 12°C" in shown.output
    listed = CliRunner().invoke(main, ["show", str(database)])
    assert listed.exit_code == 2 and "pick one with --thread ID; threads: trip-oslo" in listed.output


def test_cases_read_each_thread(database: Path, tmp_path: Path) -> None:
    """Two cases on one database, one thread each: each reads its own (the source cache keys on the thread)."""
    from trajrun.run.runner import RunOptions, run_paths

    (tmp_path / "db.suite.yaml").write_text(f"""
defaults: {{args_mode: superset}}
cases:
  - name: two cities
    source: {{file: {database}, thread: trip-paris-tokyo}}
    steps: [{{parallel: [{{get_forecast: {{city: Tokyo}}}}, {{get_forecast: {{city: Paris}}}}]}}]
  - name: one city
    source: {{file: {database}, thread: trip-oslo}}
    steps: [{{get_forecast: {{city: Oslo}}}}]
""", encoding="utf-8")
    result = run_paths([tmp_path], RunOptions(root=tmp_path))
    assert [(c.name, c.outcome) for s in result.suites for c in s.cases] == [("two cities", "passed"),
                                                                           ("one city", "passed")]
