"""The child process of a ``python:`` source: import ``module:function``, call it, send back its
return value as JSON.

``live.call_python`` runs this file as a script. It imports only the standard library, so it starts
fast, and it takes its own folder off ``sys.path`` so that trajrun's reader modules (``openai.py``,
``anthropic.py``, …) cannot shadow the agent's packages. The request (a pickle of target, args and
import path) comes on stdin; the one reply (JSON, ``{"value": …}`` or ``{"error": "…"}``) goes to
the original stdout, kept for it alone: whatever the agent prints joins stderr, whose tail the
parent shows when the call fails. The lifeline (see ``live``) comes as an open fd named on the
command line: a watcher forked first kills the process group when trajrun ends.
"""

from __future__ import annotations

import faulthandler
import importlib
import json
import os
import pickle
import signal
import sys
import types

TYPE_CHECKING = False
# not imported at run time: every call of a python source pays this module's start-up
if TYPE_CHECKING:
    from typing import Any, Callable

_SCALARS = (str, int, float, bool, type(None))
_PLAIN = (
    "return only dicts, lists, strings, numbers, booleans and None (a set as a list, a date as an "
    "ISO string)"
)
PR_SET_PDEATHSIG = 1
"""prctl's option (linux/prctl.h): the signal this process gets when the thread that started it
ends."""


class _CannotImport(Exception):
    """The target's module or function could not be imported."""


def main() -> None:
    """Read the request, call the target, write the reply."""
    watcher = _watch(int(sys.argv[1]))
    die_with_parent()
    try:
        reply = os.fdopen(os.dup(1), "w", encoding="utf-8")
        # the agent's prints, and its own children's, go to stderr: the reply channel stays clean
        os.dup2(2, 1)
        # a crash in native code writes the Python stack to stderr, for the parent to show
        faulthandler.enable()
        request = pickle.load(sys.stdin.buffer)
        here = os.path.dirname(os.path.abspath(__file__))
        own = [entry for entry in sys.path if os.path.abspath(entry) != here]
        sys.path[:] = list(dict.fromkeys([*request["path"], *own]))
        outcome = _call(request["target"], request["args"], request["looked"])
        # the run is captured elsewhere (capture: otlp)
        if request.get("drop") and "value" in outcome:
            outcome = {"value": None}
        reply.write(_encode(outcome))
        reply.close()
    finally:
        _unwatch(watcher)


def _watch(lifeline: int) -> int:
    """Fork a watcher that stays in this process group and kills it when the lifeline reads end of
    file: trajrun, the only holder of its write end, has ended, however it ended. The watcher holds
    nothing else open (not the pipes the parent reads, which would keep it waiting). Returns its
    pid."""
    watcher = os.fork()
    if watcher:
        os.close(lifeline)  # the agent and what it starts never see it
        return watcher
    try:
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        while os.read(lifeline, 512):  # trajrun writes nothing: only end of file gets through
            pass
        os.killpg(0, signal.SIGKILL)
    finally:
        os._exit(0)


def _unwatch(watcher: int) -> None:
    """End and reap the watcher: orphaned, it would be left to an init that may never reap it."""
    try:
        # still running, so the pid is still the watcher's
        if os.waitpid(watcher, os.WNOHANG) == (0, 0):
            os.kill(watcher, signal.SIGKILL)
            os.waitpid(watcher, 0)
    except ChildProcessError:  # the agent reaped it (it waited for any child)
        pass


def die_with_parent() -> None:
    """On Linux, have the kernel SIGKILL this process when the thread that started it ends
    (``PR_SET_PDEATHSIG``): the parent's end is then the child's, even by ``kill -9``, with no
    handler of either to run. Elsewhere, or where prctl cannot be reached, nothing is done: the
    lifeline's watcher ends the group all the same."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes  # deferred: only Linux needs it

        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, ctypes.c_ulong(signal.SIGKILL))
    except (OSError, AttributeError):
        pass


def _load(target: str, looked: str) -> Callable[..., Any]:
    """Import ``module:function``; ``looked`` says where the module was looked for, should it not be
    found."""
    module_name, _, attr = target.partition(":")
    try:
        return getattr(importlib.import_module(module_name), attr)
    except ModuleNotFoundError as exc:
        problem = f"cannot import {target!r}: {exc}"
        # the target's module, not one it imports
        if exc.name and (module_name + ".").startswith(exc.name + "."):
            problem += (
                f"; looked in {looked}, then sys.path: put the module in one of those folders, or "
                "install it"
            )
        raise _CannotImport(problem) from None
    except (ImportError, AttributeError) as exc:
        raise _CannotImport(f"cannot import {target!r}: {exc}") from None


def _call(target: str, args: dict[str, Any], looked: str) -> dict[str, Any]:
    """``{"value": what the target returned}`` (awaited if a coroutine), or
    ``{"error": why there is none}``."""
    try:
        value = _load(target, looked)(**args)
        if isinstance(value, types.CoroutineType):
            import asyncio  # deferred: only async agents pay for it

            value = asyncio.run(value)
    except _CannotImport as exc:
        return {"error": str(exc)}
    except SystemExit as exc:
        return {"error": f"called sys.exit({exc.code!r}) instead of returning the messages"}
    # the agent may raise anything, KeyboardInterrupt included
    except BaseException as exc:  # noqa: BLE001
        import traceback  # deferred: only a failing call pays for it

        frames = exc.__traceback__
        # from the agent's frame on
        traceback.print_exception(type(exc), exc, frames.tb_next if frames else None)
        return {"error": f"raised {traceback.format_exception_only(type(exc), exc)[-1].strip()}"}
    return {"value": value}


def _encode(outcome: dict[str, Any]) -> str:
    """The reply as JSON text; a value JSON cannot hold becomes an error saying where it is."""
    try:
        return json.dumps(outcome)
    except (TypeError, ValueError, RecursionError):
        problem = _problem(outcome["value"])
        return json.dumps({"error": f"returned something JSON cannot hold: {problem}; {_PLAIN}"})


def _problem(value: Any) -> str:
    """Where the first value JSON cannot hold sits and what it is, e.g.
    ``$.tool_calls[0].args.tags is of type set``."""
    stack: list[tuple[Any, str, tuple[int, ...]]] = [(value, "$", ())]
    while stack:
        item, where, above = stack.pop()
        if isinstance(item, (dict, list, tuple)):
            if id(item) in above:
                return f"{where} refers back to a container that holds it (a circular reference)"
            children = _children(item, where)
            if isinstance(children, str):
                return children
            stack.extend((child, path, (*above, id(item))) for child, path in reversed(children))
        elif not isinstance(item, _SCALARS):
            return f"{where} is of type {_type_name(item)}"
        elif isinstance(item, int) and _too_long(item):
            return (
                f"{where} is an int too long to write in decimal (more than "
                f"{sys.get_int_max_str_digits()} digits)"
            )
    return "it is nested too deeply"


def _children(
    item: dict[Any, Any] | list[Any] | tuple[Any, ...], where: str
) -> list[tuple[Any, str]] | str:
    """A container's items with their paths, or the problem with one of its keys."""
    if not isinstance(item, dict):
        return [(child, f"{where}[{i}]") for i, child in enumerate(item)]
    children = []
    for key, child in item.items():
        if not isinstance(key, _SCALARS):
            return f"{where} has a key of type {_type_name(key)}"
        shown = f".{key}" if isinstance(key, str) and key.isidentifier() else f"[{key!r}]"
        children.append((child, where + shown))
    return children


def _too_long(number: int) -> bool:
    """Whether an int has more digits than Python will convert to text."""
    try:
        str(number)
    except ValueError:
        return True
    return False


def _type_name(value: Any) -> str:
    """A value's type as the user would write it: ``set``, ``datetime.date``."""
    kind = type(value)
    return (
        kind.__qualname__
        if kind.__module__ == "builtins"
        else f"{kind.__module__}.{kind.__qualname__}"
    )


if __name__ == "__main__":
    main()
