"""Shared bench helpers: OpenAI-format trajectories, trajrun's matcher on message lists, the peers, timing."""

from __future__ import annotations

import importlib
import json
import os
import platform
import random
import statistics
import time
from itertools import repeat
from json.scanner import make_scanner
from pathlib import Path
from typing import Any, Callable

from trajrun import Expectation, evaluate, read_trajectory, steps_of

BENCH = Path(__file__).resolve().parent
DATA = BENCH / "data"
OUT = BENCH / "out"
MODES = ("strict", "unordered", "subset", "superset")
ARGS = {"exact": "exact", "partial": "superset"}
_SCAN = make_scanner(json.JSONDecoder())
TOOLS = ("search", "get_forecast", "book_flight", "send_email", "lookup_user", "create_event", "translate", "calc")
Call = tuple[str, dict[str, Any]]


def random_calls(n: int, rng: random.Random, tools: tuple[str, ...] = TOOLS) -> list[Call]:
    """``n`` tool calls over ``tools``, each with a query, a limit and a page."""
    return [
        (rng.choice(tools), {"query": f"q{rng.randrange(10**6)}", "limit": rng.randrange(1, 50), "page": rng.randrange(5)})
        for _ in range(n)
    ]


def partial(calls: list[Call]) -> list[Call]:
    """The same calls keeping only the ``query`` key: an expectation for partial (``superset``) arguments."""
    return [(name, {"query": args["query"]}) for name, args in calls]


def to_messages(calls: list[Call], per_turn: int = 1, tag: str = "c") -> list[dict[str, Any]]:
    """OpenAI Chat Completions messages: ``per_turn`` calls per assistant message, each answered by a tool message.

    Arguments are JSON strings, as the API sends them.
    """
    msgs: list[dict[str, Any]] = [{"role": "user", "content": "plan my trip"}]
    for start in range(0, len(calls), per_turn):
        chunk = list(enumerate(calls[start : start + per_turn], start))
        msgs.append({
            "role": "assistant", "content": "",
            "tool_calls": [{"id": f"{tag}{i}", "type": "function",
                            "function": {"name": name, "arguments": json.dumps(args)}} for i, (name, args) in chunk],
        })
        msgs.extend({"role": "tool", "tool_call_id": f"{tag}{i}", "content": "ok"} for i, _ in chunk)
    msgs.append({"role": "assistant", "content": "done"})
    return msgs


def trajrun_match(mode: str, args_mode: str, outputs: list[Any], reference: list[Any]) -> bool:
    """trajrun on two message lists, like the peers: read both, expect the reference's calls (literally), match."""
    steps = steps_of(read_trajectory(reference).calls)
    expect = Expectation(steps=steps, mode=mode, args_mode=args_mode)  # type: ignore[arg-type]
    return evaluate(expect, read_trajectory(outputs)).passed


def floor_match(outputs: list[Any], reference: list[Any]) -> bool:
    """The least any pure-Python matcher of two OpenAI message lists does: not a matcher, a cost reference.

    Walks both lists taking each call's name and ``json.loads`` of its arguments (through the C
    scanner, as trajrun does), then compares the calls in order, the reference's keys only. No
    results, turns, ids, format detection, argument rules or modes.
    """
    (names, got), (ref_names, want) = _names_and_args(outputs), _names_and_args(reference)
    return names == ref_names and all(all(a.get(k) == v for k, v in w.items()) for a, w in zip(got, want))


def _names_and_args(messages: list[Any]) -> tuple[list[str], list[Any]]:
    """Every tool call's name and decoded arguments, in order."""
    names, raws = [], []
    for message in messages:
        if message["role"] == "assistant":
            for call in message.get("tool_calls") or ():
                names.append(call["function"]["name"])
                raws.append(call["function"]["arguments"])
    return names, [value for value, _ in map(_SCAN, raws, repeat(0))]


PEERS = ("agentevals", "openevals")


def matcher(tool: str, mode: str, args_mode: str) -> Callable[[list[Any], list[Any]], bool]:
    """One tool as ``f(outputs, reference) -> bool``, importing only that tool: trajrun, floor or a peer.

    A peer is its ``create_trajectory_match_evaluator(trajectory_match_mode=…, tool_args_match_mode=…)``.
    """
    if tool == "trajrun":
        return lambda o, r: trajrun_match(mode, args_mode, o, r)
    if tool == "floor":
        return floor_match
    os.environ.setdefault("LANGSMITH_TRACING", "false")
    create = importlib.import_module(f"{tool}.trajectory.match").create_trajectory_match_evaluator
    evaluator = create(trajectory_match_mode=mode, tool_args_match_mode=args_mode)
    return lambda o, r: bool(evaluator(outputs=o, reference_outputs=r)["score"])


def peer_evaluators(mode: str, args_mode: str) -> dict[str, Callable[[list[Any], list[Any]], bool]]:
    """agentevals' and openevals' evaluators (see ``matcher``)."""
    return {peer: matcher(peer, mode, args_mode) for peer in PEERS}


def all_matchers(mode: str, args_mode: str) -> dict[str, Callable[[list[Any], list[Any]], bool]]:
    """trajrun first, then the peers, each as ``f(outputs, reference) -> bool``."""
    return {tool: matcher(tool, mode, args_mode) for tool in ("trajrun", *PEERS)}


def timed(func: Callable[[], Any]) -> tuple[float, float]:
    """CPU seconds (this process) and wall seconds of one call."""
    cpu, wall = time.process_time(), time.perf_counter()
    func()
    return time.process_time() - cpu, time.perf_counter() - wall


def median_of(func: Callable[[], Any], runs: int) -> tuple[float, float]:
    """Median CPU and median wall seconds over ``runs`` calls (CPU time resists a busy machine)."""
    samples = [timed(func) for _ in range(runs)]
    return statistics.median(s[0] for s in samples), statistics.median(s[1] for s in samples)


def compile_trajrun() -> None:
    """Write trajrun's bytecode, as installing a wheel does: a checkout installed in editable mode under
    PYTHONDONTWRITEBYTECODE would otherwise compile every module at every start of a timed process."""
    import compileall

    import trajrun

    compileall.compile_dir(Path(trajrun.__file__).parent, quiet=1)


def versions() -> dict[str, str]:
    """Python and package versions for the README."""
    from importlib.metadata import version

    found = {"python": platform.python_version()}
    for pkg in ("trajrun", "agentevals", "openevals", "langchain-core", "pyyaml", "matplotlib"):
        try:
            found[pkg] = version(pkg)
        except Exception:  # noqa: BLE001 - a missing package is reported as such
            found[pkg] = "not installed"
    return found


def save(name: str, data: Any) -> Path:
    """Write a result as JSON under bench/out/."""
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{name}.json"
    path.write_text(json.dumps(data, indent=2))
    return path
