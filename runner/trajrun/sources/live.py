"""Live sources: run a command or call a Python function, each in a child process, and take what it
returns as the document.

Every child runs in a process group of its own with nothing on stdin, so whatever it does (exit,
crash, change directory, print, read stdin, start children that outlive it) stays out of trajrun's
process: when it ends, at the timeout, or when trajrun is interrupted, the whole group is killed.
However trajrun itself ends (``kill -9``, an OOM kill), the group dies with it: a watcher process in
the group holds the read end of a pipe (the *lifeline*) whose write end only trajrun holds, and
kills the group at end of file; on Linux the child also asks the kernel to kill it when its parent
ends.
"""

from __future__ import annotations

import json
import os
import pickle
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from ..errors import SourceError
from ..files import project_root
from ..yaml_core import YamlProblem, load_data
from .documents import parse_json

STDERR_TAIL = 20
KILL_GRACE = 5.0
"""Seconds to collect a killed group's output before giving up on a descendant that left the
group."""
CHILD = Path(__file__).with_name("live_child.py")
SHELL = "/bin/sh"
WATCHED = (
    "exec 3<&0 </dev/null; (read -r _ <&3; kill -9 0) >/dev/null 2>&1 & exec 3<&-; "
    '/bin/sh -c "$1"; status=$?; kill -9 $! 2>/dev/null; wait $! 2>/dev/null; exit $status'
)
"""How a command runs: the lifeline comes on stdin and moves to fd 3 of a background watcher, which
reads it and at end of file kills the group. The command runs as ``sh -c`` would run it, with
nothing on stdin; when it ends, the watcher is ended and reaped here (an orphan would be left to an
init that may never reap it)."""


@dataclass(frozen=True, slots=True)
class _Done:
    """A child that ended on its own: its exit status and output."""

    returncode: int
    stdout: bytes
    stderr: bytes


def run_command(
    command: str,
    folder: Path,
    timeout: float,
    capture: Mapping[str, str] | None = None,
    env: Mapping[str, str] | None = None,
) -> Any:
    """Run ``command`` through the shell in ``folder``; its stdout (UTF-8 JSON or YAML) is the
    document.

    With ``capture`` (variables pointing the agent at a receiver, added to its environment) the run
    is read from what the receiver gets, so stdout is not read and None is returned. ``env`` (the
    model proxy's variables) is added to its environment too, its stdout still read.
    """
    done = _run(
        lambda _: [SHELL, "-c", WATCHED, "sh", command],
        command,
        timeout,
        cwd=folder,
        env=_joined(env, capture),
    )
    if done.returncode != 0:
        raise SourceError(f"{_ended(done.returncode)}{_tail(done.stderr)}", command)
    return None if capture is not None else _parse_stdout(_text(done.stdout, command), command)


def call_python(
    target: str,
    args: Mapping[str, Any],
    folder: Path,
    timeout: float,
    capture: Mapping[str, str] | None = None,
    env: Mapping[str, str] | None = None,
) -> Any:
    """Call ``module:function`` (imported as ``import_folders`` says) with ``args`` in a child
    process; what it returns (awaited if async) comes back as JSON and is the document (with
    ``capture`` and ``env``, as for ``run_command``: with ``capture`` what it returns is dropped and
    None is returned)."""
    folders = import_folders(folder)
    request = pickle.dumps(
        {
            "target": target,
            "args": dict(args),
            "drop": capture is not None,
            "path": [str(path) for path in folders] + _import_path(),
            "looked": _looked(folders),
        }
    )
    done = _run(
        lambda lifeline: [sys.executable, str(CHILD), str(lifeline)],
        target,
        timeout,
        request=request,
        env=_joined(env, capture),
    )
    reply = _reply(done.stdout)
    if reply is None:
        raise SourceError(f"{_ended(done.returncode)} before returning{_tail(done.stderr)}", target)
    if "error" in reply:
        raise SourceError(
            reply["error"] + (_tail(done.stderr) if done.stderr.strip() else ""), target
        )
    return reply["value"]


def _joined(
    env: Mapping[str, str] | None, capture: Mapping[str, str] | None
) -> Mapping[str, str] | None:
    """The variables added to a child's environment: ``env`` and ``capture`` together; None when
    neither is given."""
    if env is None:
        return capture
    return {**env, **(capture or {})}


def import_folders(folder: Path) -> dict[Path, list[str]]:
    """Where a ``python:`` source of a suite in ``folder`` is imported from, in order, with what
    each folder is: the suite's folder, the project root (as for golden files), the working
    directory. The same under ``trajrun run`` and pytest, wherever either puts its own folders on
    ``sys.path``."""
    folders: dict[Path, list[str]] = {}
    for path, role in (
        (folder.absolute(), "the suite's folder"),
        (project_root(folder), "the project root"),
        (Path.cwd(), "the working directory"),
    ):
        folders.setdefault(path, []).append(role)
    return folders


def _looked(folders: dict[Path, list[str]]) -> str:
    """Where the import looked, for the error when the module is not found:
    ``/p/suites (the suite's folder), /p (the project root and the working directory)``."""
    named = {path: ", ".join(roles[:-1]) + " and " + roles[-1] if len(roles) > 1 else roles[0]
             for path, roles in folders.items()}  # fmt: skip
    return ", ".join(f"{path} ({roles})" for path, roles in named.items())


def _import_path() -> list[str]:
    """This process's ``sys.path`` made absolute: after the folders above, the child finds what
    trajrun finds."""
    return [os.path.abspath(entry) for entry in sys.path if isinstance(entry, str)]


def _reply(stdout: bytes) -> dict[str, Any] | None:
    """The child's reply, or None when it ended without a whole one."""
    try:
        reply = json.loads(stdout)
    except (ValueError, RecursionError):
        return None
    return reply if isinstance(reply, dict) else None


def _run(
    args: Callable[[int], list[str]],
    origin: str,
    timeout: float,
    *,
    cwd: Path | None = None,
    request: bytes | None = None,
    env: Mapping[str, str] | None = None,
) -> _Done:
    """Run a child in a new process group with ``env`` added to its environment, and give it the
    lifeline: on stdin for a command's wrapper, else on an fd of its own, ``request`` going on stdin
    (``args`` makes the command line from the lifeline's fd). When the child ends, at the timeout,
    or when trajrun is interrupted, kill the whole group."""
    lifeline, held = os.pipe()
    try:
        try:
            proc = subprocess.Popen(
                args(lifeline),
                cwd=cwd,
                start_new_session=True,
                env=None if env is None else {**os.environ, **env},
                stdin=lifeline if request is None else subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=() if request is None else (lifeline,),
            )
        except OSError as exc:
            raise SourceError(f"could not start: {exc}", origin) from None
        finally:
            os.close(lifeline)
        return _wait(proc, origin, timeout, request)
    finally:
        os.close(held)


def _wait(
    proc: subprocess.Popen[bytes], origin: str, timeout: float, request: bytes | None
) -> _Done:
    """Send ``request``, collect the output and wait for the child; then kill its group, whatever
    happened."""
    try:
        stdout, stderr = proc.communicate(request, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        raise SourceError(
            f"timed out after {timeout:g}s{_tail(_leftover_stderr(proc))}", origin
        ) from None
    except BaseException:
        # trajrun is interrupted (SIGINT, SIGTERM): leave nothing of the child running
        _kill_group(proc)
        _leftover_stderr(proc)
        raise
    _kill_group(proc)  # what the child left running in its group
    return _Done(proc.returncode, stdout, stderr)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the child's process group: the child and everything it started that did not leave the
    group."""
    try:
        if hasattr(os, "killpg"):
            os.killpg(proc.pid, signal.SIGKILL)
        else:  # no process groups (Windows): the child only
            proc.kill()
    except OSError:  # the group is already gone
        pass


def _leftover_stderr(proc: subprocess.Popen[bytes]) -> bytes:
    """A killed child's stderr, once it is reaped; empty when a descendant that left the group holds
    the pipes."""
    try:
        return proc.communicate(timeout=KILL_GRACE)[1]
    except subprocess.TimeoutExpired:
        for pipe in (proc.stdout, proc.stderr):
            if pipe:
                pipe.close()
        proc.wait()
        return b""


def _ended(returncode: int) -> str:
    """How a child ended, for a case error: ``exited with status 3``, ``was killed by SIGSEGV``."""
    if returncode >= 0:
        return f"exited with status {returncode}"
    try:
        return f"was killed by {signal.Signals(-returncode).name}"
    except ValueError:
        return f"was killed by signal {-returncode}"


def _tail(stderr: bytes) -> str:
    """The last lines of stderr for a case error message, each behind ``  | ``: a line the agent
    printed never starts a line of trajrun's output (where a CI runner would read it as a
    command)."""
    lines = stderr.decode("utf-8", "replace").rstrip().splitlines()[-STDERR_TAIL:]
    return "; stderr:\n  | " + "\n  | ".join(lines) if lines else " (stderr was empty)"


def _text(stdout: bytes, command: str) -> str:
    """A command's stdout as text; anything but UTF-8 is an error, not a guess."""
    try:
        return stdout.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SourceError(
            f"stdout is not UTF-8 text (byte 0x{stdout[exc.start]:02x} at offset {exc.start}); "
            "print the messages as JSON",
            command,
        ) from None


def _parse_stdout(text: str, command: str) -> Any:
    """Decode a command's stdout as JSON, falling back to YAML (trajrun's one dialect, as suites are
    read).

    JSON past the decoder's limits (nesting too deep, an integer too long) is an error, as in a
    source file.
    """
    try:
        return json.loads(text)
    except json.JSONDecodeError as json_error:
        try:
            return load_data(text)
        except YamlProblem:
            raise SourceError(
                f"stdout is neither JSON nor YAML ({json_error}); print the messages as JSON",
                command,
            ) from None
    except (RecursionError, ValueError):
        # raises the same problem as a SourceError naming its line and column
        return parse_json(text, command)
