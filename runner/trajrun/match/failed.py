"""Failed calls: a source's ``error_when`` marks them where the format records no error flag,
and a case's ``failed_calls: ignore`` leaves them out of the checks that count calls.

A failed write that the agent retried (the tool said ``Error: payment method not found`` and
nothing changed) is then no call at all to steps, calls, never and budget, so a suite can ask
for exactly the writes that succeeded.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..errors import CheckError, inline
from ..trajectory import ToolCall, Trajectory
from .matchers import result_as_compared
from .values import compare_value
from .verdict import Evaluation

FAILED_CALLS = ("count", "ignore")
"""What a case's ``failed_calls`` may say: count failed calls (the default), or leave them out."""
NAMED_MOST = 5
"""How many left-out calls the note names (it counts them all)."""
_IGNORE = (
    "did you mean 'ignore' (leave calls marked as errors out of steps, calls, never and budget)?"
)
_COUNT = "did you mean 'count' (failed calls count like any other call; the default)?"
FAILED_CALLS_MEANINGS = {
    **dict.fromkeys(("skip", "exclude", "drop", "omit", "leave_out", "ignored"), _IGNORE),
    **dict.fromkeys(("include", "keep", "counted", "all"), _COUNT),
}
"""Other words for the two, by meaning (``errors.did_you_mean``)."""


def mark_errors(traj: Trajectory, rule: Any) -> Trajectory:
    """The run with each recorded result tested against ``rule`` (a value or inline matcher,
    compared as a step's ``result`` is): a result it matches is an error, as is one the format
    flagged; a call without a recorded result keeps its flag. Raises ``CheckError`` when the rule
    cannot be judged (a regex past its time limit)."""
    calls: list[ToolCall] = []
    for call in traj.calls:
        if call.has_result:
            try:
                failed = compare_value(rule, result_as_compared(rule, call.result), "exact")
            except CheckError as exc:
                raise CheckError(f"source: error_when: {exc}") from None
            call = call._replace(error=failed or bool(call.error))
        calls.append(call)
    return dataclasses.replace(traj, calls=tuple(calls))


def failed_calls(traj: Trajectory) -> tuple[ToolCall, ...]:
    """The calls marked as errors, in order."""
    return tuple(call for call in traj.calls if call.error)


def without_failed(traj: Trajectory) -> Trajectory:
    """The run without its failed calls; the others keep their turns and positions."""
    return dataclasses.replace(traj, calls=tuple(call for call in traj.calls if not call.error))


def unflagged(traj: Trajectory) -> str | None:
    """Why ``failed_calls: ignore`` cannot tell the failed calls of this run (no call carries an
    error flag), or None."""
    if not traj.calls or traj.records_errors:
        return None
    return (
        f"failed_calls: ignore cannot tell which calls failed: format '{traj.format}' records "
        "no per-call error flag; add error_when to the source (such as "
        "`error_when: {$regex: '^Error'}`)"
    )


def left_out_note(traj: Trajectory, ignoring: Evaluation, counting: Evaluation) -> str | None:
    """The note on the failed calls ``failed_calls: ignore`` left out, when that changed a check's
    verdict (``ignoring`` and ``counting``: the evaluations without and with them); else None."""
    now = {failure.check for failure in ignoring.failures}
    before = {failure.check for failure in counting.failures}
    if now == before:
        return None
    left = failed_calls(traj)
    named = (f"{inline(call.name)} at position {call.position}" for call in left[:NAMED_MOST])
    more = len(left) - NAMED_MOST
    calls = ", ".join(named) + (f" and {more} more" if more > 0 else "")
    would_fail = [failure.check for failure in counting.failures if failure.check not in now]
    would_pass = [failure.check for failure in ignoring.failures if failure.check not in before]
    changes = [f"{_listed(would_fail)} would fail"] if would_fail else []
    changes += [f"{_listed(would_pass)} would pass"] if would_pass else []
    count = f"{len(left)} failed call{'s' if len(left) != 1 else ''}"
    return (
        f"failed_calls: ignore left out {count}: {calls} "
        f"(counting {'them' if len(left) != 1 else 'it'}, {' and '.join(changes)})"
    )


def _listed(names: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
