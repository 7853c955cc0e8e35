"""A checkpoint database is data, never code: a blob naming ``os.system``, ``builtins.open`` or any class but a
LangChain message is refused with the name, and nothing is imported or called, by ``trajrun show``, ``validate``,
``run`` and a bulk run alike; genuine checkpoints read as before."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import sqlite3
import subprocess
import sys
from contextlib import closing
from datetime import datetime
from pathlib import Path
from typing import Any
from uuid import UUID

import ormsgpack
import pytest
from trajrun.errors import SourceError
from trajrun.sources import load_trajectory
from trajrun.sources.documents import load_document

DATA = Path(__file__).parent / "data"
LEGACY = DATA / "samples" / "langgraph" / "legacy_json_checkpoint_langgraph_checkpoint_1.0.0.json"
REFUSED = "refused: trajrun reads only plain data and LangChain messages from a checkpoint — never a call"


@pytest.fixture(scope="module")
def genuine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database a real StateGraph wrote: one thread, Oslo's forecast asked for and answered."""
    sys.path.insert(0, str(DATA / "agents"))
    from checkpoint_graph import write_database  # deferred: importing LangGraph takes a second or two

    path = tmp_path_factory.mktemp("genuine") / "oslo.sqlite"
    write_database(path, {"only": ["Oslo"]})
    return path


def crafted(genuine: Path, path: Path, blob: bytes | str, serialized: str = "msgpack") -> Path:
    """A copy of the genuine database whose latest checkpoint holds ``blob``, serialized as ``serialized``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(genuine, path)
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("UPDATE checkpoints SET type = ?, checkpoint = ? WHERE checkpoint_id = "
                     "(SELECT MAX(checkpoint_id) FROM checkpoints)", (serialized, blob))  # fmt: skip
        conn.commit()
    return path


def latest(path: Path) -> dict[Any, Any]:
    """The latest checkpoint of a database, its extension entries kept as ``ormsgpack.Ext`` to pack again."""
    with closing(sqlite3.connect(path)) as conn:
        (blob,) = conn.execute("SELECT checkpoint FROM checkpoints ORDER BY checkpoint_id DESC LIMIT 1").fetchone()
    checkpoint: dict[Any, Any] = ormsgpack.unpackb(blob, ext_hook=ormsgpack.Ext, option=ormsgpack.OPT_NON_STR_KEYS)
    return checkpoint


def ext(code: int, *entry: Any) -> ormsgpack.Ext:
    """A msgpack extension entry the way LangGraph's serializer writes one: ``(module, name, value, …)``."""
    return ormsgpack.Ext(code, ormsgpack.packb(list(entry)))


def messages_blob(*messages: Any) -> bytes:
    """A checkpoint whose ``messages`` channel holds ``messages``."""
    return ormsgpack.packb({"v": 4, "id": "x", "channel_values": {"messages": list(messages)}})


def attacks(marker: Path) -> list[tuple[ormsgpack.Ext, str]]:
    """Each constructor form LangGraph's permissive serializer calls, set to create ``marker``; with its name."""
    return [
        (ext(0, "os", "system", f"touch {marker}"), "os.system"),
        (ext(1, "builtins", "open", [str(marker), "w"]), "builtins.open"),
        (ext(2, "subprocess", "Popen", {"args": ["touch", str(marker)]}), "subprocess.Popen"),
        (ext(3, "os", "system", f"touch {marker}", "__call__"), "os.system"),
        (ext(5, "subprocess", "run", {"args": ["touch", str(marker)]}, "model_validate_json"), "subprocess.run"),
    ]


def trajrun(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python -m trajrun ARGS`` as a real process."""
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-m", "trajrun", *args], cwd=cwd, capture_output=True, text=True, env=env,
                          timeout=120)  # fmt: skip


def _message(path: Path) -> str:
    """The source error reading ``path`` gives."""
    with pytest.raises(SourceError) as info:
        load_trajectory(path)
    return str(info.value)


def test_every_constructor_form_is_refused_by_name_and_nothing_runs(genuine: Path, tmp_path: Path) -> None:
    """Single-argument, positional, keyword, method and pydantic entries: each names its class, none is called."""
    marker = tmp_path / "called"
    for i, (entry, name) in enumerate(attacks(marker)):
        path = crafted(genuine, tmp_path / f"attack{i}.sqlite", messages_blob(entry))
        assert _message(path) == (f"{path}: the checkpoint's channel_values.messages[0] holds a constructor of "
                                  f"{name}, {REFUSED}")  # fmt: skip
    assert not marker.exists()


def test_show_refuses_a_crafted_database(genuine: Path, tmp_path: Path) -> None:
    """`trajrun show` prints the refusal and exits 2 (the source cannot be read); nothing was called."""
    marker = tmp_path / "called"
    path = crafted(genuine, tmp_path / "evil.sqlite", messages_blob(attacks(marker)[0][0]))
    shown = trajrun("show", str(path), cwd=tmp_path)
    assert (shown.returncode, shown.stdout) == (2, "")
    assert shown.stderr == (f"trajrun: error: {path}: the checkpoint's channel_values.messages[0] holds a constructor "
                            f"of os.system, {REFUSED}\n")  # fmt: skip
    assert not marker.exists()


def test_validate_and_run_refuse_a_crafted_database(genuine: Path, tmp_path: Path) -> None:
    """`trajrun validate` reports the file source as a problem (exit 2); `trajrun run` makes the case an error
    (exit 1); neither calls what the blob names."""
    marker = tmp_path / "called"
    crafted(genuine, tmp_path / "runs" / "evil.sqlite", messages_blob(attacks(marker)[1][0]))
    (tmp_path / "evil.suite.yaml").write_text("cases:\n  - name: forecast\n    source: runs/evil.sqlite\n"
                                              "    steps: [get_forecast]\n", encoding="utf-8")  # fmt: skip
    refusal = f"runs/evil.sqlite: the checkpoint's channel_values.messages[0] holds a constructor of builtins.open, " \
              f"{REFUSED}"  # fmt: skip
    validated = trajrun("validate", ".", cwd=tmp_path)
    assert validated.returncode == 2
    assert validated.stdout.splitlines() == [f"evil.suite.yaml:3:13: cases[0].source: source {refusal}",
                                             "1 suite file checked, 1 problem"]  # fmt: skip
    ran = trajrun("run", ".", cwd=tmp_path)
    assert ran.returncode == 1
    assert f"ERROR evil.suite.yaml::forecast - source: {refusal}" in ran.stdout.splitlines()
    assert not marker.exists()


def test_a_bulk_run_reads_no_database(genuine: Path, tmp_path: Path) -> None:
    """A database matched by a bulk glob is an error of that record that says how to read it; it is never decoded."""
    marker = tmp_path / "called"
    crafted(genuine, tmp_path / "runs" / "evil.sqlite", messages_blob(attacks(marker)[0][0]))
    (tmp_path / "bulk.suite.yaml").write_text("cases:\n  - name: each run\n"
                                              "    source: {file: 'runs/*.sqlite', each: file}\n"
                                              "    steps: [get_forecast]\n", encoding="utf-8")  # fmt: skip
    ran = trajrun("run", ".", cwd=tmp_path)
    assert ran.returncode == 1
    reason = "source: a LangGraph checkpoint database is not read in bulk; read it in a case without each (thread: " \
             "picks the thread)"  # fmt: skip
    assert f"ERROR bulk.suite.yaml::each run - every record erred (1); first: {reason}" in ran.stdout.splitlines()
    assert not marker.exists()


def test_a_refused_entry_is_named_wherever_it_sits_in_what_is_read(genuine: Path, tmp_path: Path) -> None:
    """Inside a genuine message's fields, as the checkpoint itself, or as its channel_values: refused, named."""
    marker = tmp_path / "called"
    system = attacks(marker)[0][0]
    checkpoint = latest(genuine)
    question = {"content": "Weather in Oslo?", "type": "human", "additional_kwargs": {"note": [system]}}
    checkpoint["channel_values"]["messages"][0] = ext(5, "langchain_core.messages.human", "HumanMessage", question,
                                                      "model_validate_json")  # fmt: skip
    inside = crafted(genuine, tmp_path / "inside.sqlite", ormsgpack.packb(checkpoint))
    assert _message(inside) == (f"{inside}: the checkpoint's channel_values.messages[0] holds a constructor of "
                                f"os.system, {REFUSED}")  # fmt: skip
    whole = crafted(genuine, tmp_path / "whole.sqlite", ormsgpack.packb(system))
    assert _message(whole) == f"{whole}: the checkpoint holds a constructor of os.system, {REFUSED}"
    channels = crafted(genuine, tmp_path / "channels.sqlite", ormsgpack.packb({"channel_values": system}))
    assert _message(channels) == (f"{channels}: the checkpoint's channel_values holds a constructor of os.system, "
                                  f"{REFUSED}")  # fmt: skip
    assert not marker.exists()


def test_an_entry_in_a_channel_trajrun_does_not_read_is_never_called(genuine: Path, tmp_path: Path) -> None:
    """A graph's own state types (or a crafted entry) in another channel stay undecoded: the messages still read."""
    marker = tmp_path / "called"
    checkpoint = latest(genuine)
    checkpoint["channel_values"]["plan"] = attacks(marker)[1][0]
    path = crafted(genuine, tmp_path / "other.sqlite", ormsgpack.packb(checkpoint))
    assert [(c.name, c.args, c.result) for c in load_trajectory(path).calls] == [
        ("get_forecast", {"city": "Oslo", "days": 1}, "cloudy, 12°C")]
    assert not marker.exists()


def test_standard_library_values_in_a_message_read_as_plain_data(genuine: Path, tmp_path: Path) -> None:
    """LangGraph's own serializer writes datetimes, UUIDs and sets in a message as constructor entries: they read
    as their plain values, and the message as ``message_to_dict`` writes it."""
    from langchain_core.messages import AIMessage
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    message = AIMessage("", tool_calls=[{"name": "get_forecast", "args": {"city": "Rome"}, "id": "c1"}],
                        response_metadata={"at": datetime(2026, 1, 2, 3, 4), "run": UUID(int=7), "tags": {"a"}})
    serialized, blob = JsonPlusSerializer().dumps_typed({"channel_values": {"messages": [message]}})
    path = crafted(genuine, tmp_path / "plain.sqlite", blob, serialized)
    assert load_trajectory(path).calls[0].args == {"city": "Rome"}
    doc = load_document(path, select="$.channel_values.messages[0]")
    assert doc["type"] == "ai"
    assert doc["data"]["response_metadata"] == {"at": "2026-01-02T03:04:00", "run": "0" * 31 + "7", "tags": ["a"]}


def test_a_legacy_json_checkpoint_reads_its_messages_and_refuses_other_constructors(genuine: Path,
                                                                                       tmp_path: Path) -> None:
    """A ``json`` checkpoint (langgraph-checkpoint 1.0) is parsed as JSON with no reviver: its ``lc`` messages
    read; an ``lc`` constructor of anything else, in either ``lc`` version, is refused by name."""
    payload = json.loads(LEGACY.read_text(encoding="utf-8"))["payload"]
    legacy = crafted(genuine, tmp_path / "legacy.sqlite", json.dumps(payload).encode(), "json")
    assert [(c.name, c.args) for c in load_trajectory(legacy).calls] == [("get_weather", {"city": "Paris"})]
    marker = tmp_path / "called"
    for version, path, kwargs in ((1, ["os", "system"], {"command": f"touch {marker}"}),
                                  (2, ["builtins", "open"], {"file": str(marker), "mode": "w"})):  # fmt: skip
        payload["channel_values"]["messages"][1] = {"lc": version, "type": "constructor", "id": path, "kwargs": kwargs}
        evil = crafted(genuine, tmp_path / f"lc{version}.sqlite", json.dumps(payload).encode(), "json")
        assert _message(evil) == (f"{evil}: the checkpoint's channel_values.messages[1] is an 'lc' constructor of "
                                  f"{'.'.join(path)}, {REFUSED}")  # fmt: skip
    assert not marker.exists()


def test_a_checkpoint_that_is_no_map_or_no_msgpack_is_a_clear_error(genuine: Path, tmp_path: Path) -> None:
    """A msgpack list, a pickle (never unpickled), bytes that are no msgpack and a null blob each say what they are."""
    marker = tmp_path / "called"
    listed = crafted(genuine, tmp_path / "list.sqlite", ormsgpack.packb([1, 2]))
    assert _message(listed) == f"{listed}: the checkpoint is a list, expected a map holding 'channel_values'"
    pickled = crafted(genuine, tmp_path / "pickle.sqlite", pickle.dumps(Touch(str(marker))), "pickle")
    assert _message(pickled) == (f"{pickled}: the checkpoint is serialized as 'pickle'; trajrun reads the 'msgpack' "
                                 "and 'json' checkpoints LangGraph writes, never 'pickle'")  # fmt: skip
    broken = crafted(genuine, tmp_path / "broken.sqlite", b"\xc1")
    assert _message(broken).startswith(f"{broken}: cannot decode the checkpoint (msgpack): ")
    assert _message(broken).endswith("; expected a checkpoint as LangGraph's SqliteSaver writes it")
    with closing(sqlite3.connect(broken)) as conn:
        conn.execute("UPDATE checkpoints SET checkpoint = NULL")
        conn.commit()
    assert _message(broken) == f"{broken}: the checkpoint holds null, expected the bytes a SqliteSaver writes"
    assert not marker.exists()


def test_extensions_nested_past_the_stack_are_refused(genuine: Path, tmp_path: Path) -> None:
    """5,000 extension entries one inside the other: a clear refusal, no RecursionError."""
    blob = ormsgpack.packb({"channel_values": {}})
    for _ in range(5000):
        blob = ormsgpack.packb(ormsgpack.Ext(7, blob))
    path = crafted(genuine, tmp_path / "deep.sqlite", blob)
    assert _message(path) == (f"{path}: the checkpoint holds a msgpack extension (type 7) that does not decode, "
                              f"{REFUSED}")  # fmt: skip


class Touch:
    """Unpickling it would create its file."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, ...]:
        return (open, (self.path, "w"))
