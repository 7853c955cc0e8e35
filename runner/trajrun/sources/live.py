"""Live sources: run a command or call a Python function, each in a child process, and take what it returns as
the document.

Every child runs in a process group of its own with nothing on stdin, so whatever it does (exit, crash,
change directory, print, read stdin, start children that outlive it) stays out of trajrun's process:
at the timeout, or when trajrun is interrupted, the whole group is killed.
"""

from __future__ import annotations

import json
import os
import pickle
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, Mapping

from ..errors import SourceError
from ..frozen import frozen
from ..yaml_core import YamlProblem, load_data
from .documents import parse_json

STDERR_TAIL = 20
KILL_GRACE = 5.0
"""Seconds to collect a killed group's output before giving up on a descendant that left the group."""
CHILD = Path(__file__).with_name("live_child.py")


@frozen
class _Done:
    """A child that ended on its own: its exit status and output."""

    returncode: int
    stdout: bytes
    stderr: bytes


def run_command(command: str, folder: Path, timeout: float, capture: Mapping[str, str] | None = None) -> Any:
    """Run ``command`` through the shell in ``folder``; its stdout (UTF-8 JSON or YAML) is the document.

    With ``capture`` (variables pointing the agent at a receiver, added to its environment) the run is read
    from what the receiver gets, so stdout is not read and None is returned.
    """
    done = _run(command, command, timeout, cwd=folder, env=capture)
    if done.returncode != 0:
        raise SourceError(f"{_ended(done.returncode)}{_tail(done.stderr)}", command)
    return None if capture is not None else _parse_stdout(_text(done.stdout, command), command)


def call_python(target: str, args: Mapping[str, Any], folder: Path, timeout: float,
                capture: Mapping[str, str] | None = None) -> Any:
    """Call ``module:function`` (imported with ``folder`` first on the path) with ``args`` in a child process;
    what it returns (awaited if async) comes back as JSON and is the document (with ``capture``, as for
    ``run_command``, what it returns is dropped and None is returned)."""
    request = pickle.dumps({"target": target, "args": dict(args), "path": [str(folder), *_import_path()],
                            "drop": capture is not None})  # fmt: skip
    done = _run([sys.executable, str(CHILD)], target, timeout, request=request, env=capture)
    reply = _reply(done.stdout)
    if reply is None:
        raise SourceError(f"{_ended(done.returncode)} before returning{_tail(done.stderr)}", target)
    if "error" in reply:
        raise SourceError(reply["error"] + (_tail(done.stderr) if done.stderr.strip() else ""), target)
    return reply["value"]


def _import_path() -> list[str]:
    """This process's ``sys.path`` made absolute, so the child imports what an in-process call would."""
    return [os.path.abspath(entry) for entry in sys.path if isinstance(entry, str)]


def _reply(stdout: bytes) -> dict[str, Any] | None:
    """The child's reply, or None when it ended without a whole one."""
    try:
        reply = json.loads(stdout)
    except (ValueError, RecursionError):
        return None
    return reply if isinstance(reply, dict) else None


def _run(args: str | list[str], origin: str, timeout: float, *, cwd: Path | None = None,
         request: bytes | None = None, env: Mapping[str, str] | None = None) -> _Done:
    """Run a child in a new process group, ``request`` on its stdin (else nothing: reading it gets end of file),
    ``env`` added to its environment; at the timeout, or when trajrun itself is interrupted, kill the whole group."""
    try:
        proc = subprocess.Popen(
            args, shell=isinstance(args, str), cwd=cwd, start_new_session=True,
            env=None if env is None else {**os.environ, **env},
            stdin=subprocess.DEVNULL if request is None else subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
    except OSError as exc:
        raise SourceError(f"could not start: {exc}", origin) from None
    try:
        stdout, stderr = proc.communicate(request, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        raise SourceError(f"timed out after {timeout:g}s{_tail(_leftover_stderr(proc))}", origin) from None
    except BaseException:  # trajrun is interrupted (SIGINT, SIGTERM): leave nothing of the child running
        _kill_group(proc)
        _leftover_stderr(proc)
        raise
    return _Done(proc.returncode, stdout, stderr)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the child's process group: the child and everything it started that did not leave the group."""
    try:
        if hasattr(os, "killpg"):
            os.killpg(proc.pid, signal.SIGKILL)
        else:  # no process groups (Windows): the child only
            proc.kill()
    except OSError:  # the group is already gone
        pass


def _leftover_stderr(proc: subprocess.Popen[bytes]) -> bytes:
    """A killed child's stderr, once it is reaped; empty when a descendant that left the group holds the pipes."""
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
    """The last lines of stderr, indented, for a case error message."""
    lines = stderr.decode("utf-8", "replace").rstrip().splitlines()[-STDERR_TAIL:]
    return "; stderr:\n  " + "\n  ".join(lines) if lines else " (stderr was empty)"


def _text(stdout: bytes, command: str) -> str:
    """A command's stdout as text; anything but UTF-8 is an error, not a guess."""
    try:
        return stdout.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SourceError(
            f"stdout is not UTF-8 text (byte 0x{stdout[exc.start]:02x} at offset {exc.start}); "
            "print the messages as JSON", command
        ) from None


def _parse_stdout(text: str, command: str) -> Any:
    """Decode a command's stdout as JSON, falling back to YAML (trajrun's one dialect, as suites are read).

    JSON past the decoder's limits (nesting too deep, an integer too long) is an error, as in a source file.
    """
    try:
        return json.loads(text)
    except json.JSONDecodeError as json_error:
        try:
            return load_data(text)
        except YamlProblem:
            raise SourceError(
                f"stdout is neither JSON nor YAML ({json_error}); print the messages as JSON", command
            ) from None
    except (RecursionError, ValueError):
        return parse_json(text, command)  # raises the same problem as a SourceError naming its line and column
