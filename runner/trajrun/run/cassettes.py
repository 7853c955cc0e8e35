"""Cassettes: a live case's model traffic recorded to a YAML file and replayed from it
(``source: {cassette: …}``).

A live source with a cassette, or with ``capture: wire``, runs its agent through the model proxy
(``sources.proxy``). ``TRAJRUN_CASSETTES`` (``trajrun run --cassettes``) says what happens to the
cassette: ``auto`` (the default) replays it when it exists and records it otherwise, ``record``
always calls the model and rewrites it, ``replay`` never calls the model (a missing cassette is an
error), ``off`` calls the model and leaves the cassette alone. A cassette lies inside the suite's
project (as golden files do); it is written atomically, only after a run whose traffic went through
whole.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, BinaryIO

from ..errors import Location, SourceError, format_path, inline, kind
from ..files import (
    PROJECT_MARKERS,
    FileWriteError,
    atomic_write,
    folder_lock,
    project_root,
    special_kind,
)
from ..limits import MAX_SOURCE_BYTES_VAR, max_source_bytes
from ..sources.proxy import APIS, RECORD, Exchange, ModelProxy, run_through, upstreams
from ..suites.golden import dump_yaml
from ..suites.model import Source
from ..yaml_core import YamlProblem, decode_utf8, load_text

CASSETTES_VAR = "TRAJRUN_CASSETTES"
MODES = ("auto", "record", "replay", "off")
VERSION = 1
_UNSAFE = re.compile(r"[^\w.-]+")
_REQUEST_KEYS, _RESPONSE_KEYS, _EVENT_KEYS = (
    ("api", "method", "path", "body"),
    ("status", "body", "events"),
    ("event", "data"),
)


def cassette_mode() -> str:
    """``TRAJRUN_CASSETTES``: ``auto`` when unset; anything but a mode is an error naming the
    modes."""
    mode = os.environ.get(CASSETTES_VAR, "").strip().lower() or "auto"
    if mode not in MODES:
        raise SourceError(
            f"{CASSETTES_VAR} must be one of {', '.join(MODES)}, found '{inline(mode)}'; "
            "fix or unset it"
        )
    return mode


def model_traffic(
    source: Source,
    folder: Path,
    case: str,
    run: Callable[[Mapping[str, str]], Any],
    origin: str,
    notes: list[str],
) -> tuple[Any, list[Exchange]]:
    """Run the agent (``run`` gets the variables to add to its environment) through the model proxy,
    recording or replaying its cassette as the mode says; what the agent returned, and the run's
    exchanges. A cassette recorded adds a note to ``notes``."""
    mode = cassette_mode() if source.cassette is not None else "off"
    path = (
        cassette_path(source.cassette, case, folder, origin)
        if mode != "off" and source.cassette
        else None
    )
    if mode == "auto" and path is not None:
        mode = "replay" if path.exists() else "record"
    if mode == "off" and source.capture != "wire":
        return run({}), []
    if mode == "replay":
        assert path is not None
        proxy = ModelProxy(origin, replay=(str(path), load_cassette(path, origin)))
    else:
        proxy = ModelProxy(origin, upstream=upstreams(origin))
    value = run_through(run, proxy)
    exchanges = proxy.exchanges
    if mode == "record":
        assert path is not None
        write_cassette(path, exchanges, case, origin)
        count = f"{len(exchanges)} exchange{'s' if len(exchanges) != 1 else ''}"
        notes.append(f"cassette recorded: {path} ({count})")
    return value, exchanges


def cassette_path(template: str, case: str, folder: Path, origin: str) -> Path:
    """The cassette of ``case``: ``template`` with ``{case}`` made a file name, against the suite's
    ``folder``; one that resolves outside the suite's project is an error."""
    name = _UNSAFE.sub("-", case).strip("-.") or "case"
    path = folder / template.replace("{case}", name)
    resolved = path.resolve()
    project = project_root(folder)
    if not resolved.is_relative_to(project):
        raise SourceError(
            f"cassette {path} resolves to {resolved}, outside the suite's project {project} (the "
            f"nearest folder up holding {' or '.join(PROJECT_MARKERS)}, else the suite's "
            "folder); put the cassette inside the project",
            origin,
        )
    return path


def load_cassette(path: Path, origin: str) -> list[Exchange]:
    """The exchanges of a cassette file; a missing, unreadable or malformed one is an error saying
    where and how to fix it."""
    if not path.exists():
        raise SourceError(
            f"cassette {path} does not exist and --cassettes replay records nothing; record it "
            "with `trajrun run --cassettes record` (the agent then calls the model)",
            origin,
        )
    other = special_kind(path)
    if other is not None:
        raise SourceError(f"cassette {path} is {other}, not a file; {RECORD}", origin)
    try:
        size = path.stat().st_size
        if size > max_source_bytes():
            raise SourceError(
                f"cassette {path} is {size:,} bytes, more than {max_source_bytes():,}, the limit "
                f"on one source; set {MAX_SOURCE_BYTES_VAR} to a larger number of bytes",
                origin,
            )
        text = decode_utf8(path.read_bytes())
        loaded = load_text(text)
    except OSError as exc:
        raise SourceError(f"cannot read cassette {path}: {exc.strerror or exc}", origin) from None
    except YamlProblem as exc:
        where = Location(str(path), exc.pos.line, exc.pos.column)
        raise SourceError(f"cassette {where}: {exc.message}; fix it or {RECORD}", origin) from None
    problem = _problem(loaded.data)
    if problem is not None:
        at, what = problem
        pos = loaded.marks.value(at)
        where = Location(str(path), pos.line, pos.column, format_path(at))
        raise SourceError(f"cassette {where}: {what}; fix it or {RECORD}", origin)
    return [dict(exchange) for exchange in loaded.data["exchanges"]]


def _problem(data: Any) -> tuple[tuple[str | int, ...], str] | None:
    """Where a loaded cassette is malformed and how, or None."""
    if (
        not isinstance(data, dict)
        or data.get("version") != VERSION
        or not isinstance(data.get("exchanges"), list)
    ):
        return (
            (),
            f"a cassette is a map with version: {VERSION} and exchanges (a list), "
            f"found {kind(data)}",
        )
    for i, exchange in enumerate(data["exchanges"]):
        at: tuple[str | int, ...] = ("exchanges", i)
        if not isinstance(exchange, dict) or set(exchange) != {"request", "response"}:
            return at, f"an exchange is a map with request and response, found {kind(exchange)}"
        problem = _request_problem(exchange["request"], (*at, "request")) or _response_problem(
            exchange["response"], (*at, "response")
        )
        if problem is not None:
            return problem
    return None


def _request_problem(
    request: Any, at: tuple[str | int, ...]
) -> tuple[tuple[str | int, ...], str] | None:
    """What is wrong with a recorded request, if anything."""
    if not isinstance(request, dict) or set(request) != set(_REQUEST_KEYS):
        return at, f"a request is a map with {', '.join(_REQUEST_KEYS)}, found {_keys(request)}"
    if request["api"] not in APIS:
        return (*at, "api"), f"api must be {' or '.join(APIS)}, found {kind(request['api'])}"
    if not isinstance(request["method"], str) or not request["method"].isalpha():
        return (
            *at,
            "method",
        ), f"method must be an HTTP method such as POST, found {kind(request['method'])}"
    if not isinstance(request["path"], str) or not request["path"].startswith("/"):
        return (*at, "path"), f"path must start with /, found {kind(request['path'])}"
    return None


def _response_problem(
    response: Any, at: tuple[str | int, ...]
) -> tuple[tuple[str | int, ...], str] | None:
    """What is wrong with a recorded response, if anything."""
    if (
        not isinstance(response, dict)
        or "status" not in response
        or len(set(response) & {"body", "events"}) != 1
        or not set(response) <= set(_RESPONSE_KEYS)
    ):
        return (
            at,
            f"a response is a map with status and either body or events, found {_keys(response)}",
        )
    status = response["status"]
    if type(status) is not int or not 100 <= status <= 599:
        return (
            *at,
            "status",
        ), f"status must be an HTTP status from 100 to 599, found {kind(status)}"
    events = response.get("events", [])
    if not isinstance(events, list):
        return (*at, "events"), f"events must be a list, found {kind(events)}"
    for i, event in enumerate(events):
        if not isinstance(event, dict) or "data" not in event or not set(event) <= set(_EVENT_KEYS):
            return (
                *at,
                "events",
                i,
            ), f"an event is a map with data (and maybe event), found {_keys(event)}"
        if not isinstance(event["data"], (str, dict, list)) or not isinstance(
            event.get("event", ""), str
        ):
            return (
                *at,
                "events",
                i,
            ), "an event's data is text, a map or a list, and its event a name"
    return None


def _keys(value: Any) -> str:
    """A map's keys for a message (``keys api, body``), or the kind of anything else."""
    return (
        f"keys {', '.join(map(str, value))}" if isinstance(value, dict) and value else kind(value)
    )


def write_cassette(path: Path, exchanges: list[Exchange], case: str, origin: str) -> None:
    """Write the cassette of ``case`` atomically (one writer at a time per folder; a failure keeps
    the old file)."""
    text = (
        f"# The model traffic of case '{inline(case)}', recorded by trajrun. "
        "`trajrun run` replays it;\n"
        "# `trajrun run --cassettes record` records it again. "
        "No header, so no key, is ever written.\n"
        f"{dump_yaml({'version': VERSION, 'exchanges': exchanges})}"
    )
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with folder_lock(path.parent):
            atomic_write(path, lambda handle: _write(handle, text), "cassette")
    except OSError as exc:
        raise SourceError(
            f"cannot write cassette {path}: {exc.strerror or exc}; the old file is unchanged",
            origin,
        ) from None
    except FileWriteError as exc:
        raise SourceError(str(exc), origin) from None


def _write(handle: BinaryIO, text: str) -> None:
    """``text`` into a file opened for writing, as UTF-8."""
    handle.write(text.encode("utf-8"))
