"""Property tests: the matcher agrees with a brute-force oracle over all assignments."""

from __future__ import annotations

from typing import Any, Iterator

from hypothesis import given
from hypothesis import strategies as st
from properties import PROPERTY
from trajrun.match.evaluate import evaluate, f1
from trajrun.match.expectation import ANY_ARGS, MODES, Expectation, Step
from trajrun.match.values import compare_value
from trajrun.trajectory import ToolCall, Trajectory

NAMES = ["search", "book", "pay"]
VALUES = [1, 1.0, 2, True, "a", "b", None]
ARGS = st.dictionaries(st.sampled_from(["x", "y"]), st.sampled_from(VALUES), max_size=2)
CALL = st.tuples(st.sampled_from(NAMES[:2]) | st.sampled_from(NAMES), ARGS | st.just("a"))  # "a": undecoded text


@st.composite
def trajectories(draw: Any) -> Trajectory:
    """Up to 6 calls over 2-3 tool names with random non-decreasing turns."""
    calls = draw(st.lists(CALL, max_size=6))
    turns = sorted(draw(st.lists(st.integers(0, 3), min_size=len(calls), max_size=len(calls))))
    out = tuple(ToolCall(n, a, turn=t, position=i) for i, ((n, a), t) in enumerate(zip(calls, turns)))
    return Trajectory(out, turns=len(set(turns)))


STEP = st.tuples(st.sampled_from(NAMES), ARGS | st.just(ANY_ARGS)).map(lambda t: Step(t[0], t[1]))


def compatible(step: Step, call: ToolCall, rule: str) -> bool:
    """The plain definition of a step matching a call."""
    if step.name != call.name:
        return False
    if step.args is ANY_ARGS or rule == "ignore":
        return True
    return compare_value(step.args, call.args, rule) if isinstance(call.args, dict) else False


def assignments(n: int, m: int, ok: list[list[bool]]) -> Iterator[tuple[int | None, ...]]:
    """Every injective partial map from steps to compatible calls."""

    def extend(i: int, used: frozenset[int], acc: tuple[int | None, ...]) -> Iterator[tuple[int | None, ...]]:
        if i == n:
            yield acc
            return
        yield from extend(i + 1, used, acc + (None,))
        for p in range(m):
            if p not in used and ok[i][p]:
                yield from extend(i + 1, used | {p}, acc + (p,))

    return extend(0, frozenset(), ())


def oracle(mode: str, steps: list[Step], traj: Trajectory, rule: str) -> tuple[bool, int]:
    """Whether the mode holds by its definition, and the maximum matching size."""
    n, m = len(steps), len(traj.calls)
    ok = [[compatible(s, c, rule) for c in traj.calls] for s in steps]
    holds, best = False, 0
    for a in assignments(n, m, ok):
        used = [p for p in a if p is not None]
        best = max(best, len(used))
        total = len(used) == n
        rising = all(traj.calls[x].turn <= traj.calls[y].turn for x, y in zip(used, used[1:]))
        holds = holds or {
            "strict": total and n == m and rising,
            "unordered": total and n == m,
            "superset": total,
            "subset": len(used) == m,
            "in_order": total and rising,
        }[mode]
    return holds, best


@PROPERTY
@given(st.lists(STEP, max_size=6), trajectories(), st.sampled_from(["exact", "superset", "subset", "ignore"]))
def test_modes_agree_with_oracle(steps: list[Step], traj: Trajectory, rule: str) -> None:
    """Every mode's verdict and the F1 score equal the brute-force oracle's."""
    for mode in MODES:
        ev = evaluate(Expectation(steps=tuple(steps), mode=mode, args_mode=rule), traj)  # type: ignore[arg-type]
        holds, best = oracle(mode, steps, traj, rule)
        assert ev.passed == holds, mode
        assert abs(ev.score - f1(mode, best, len(steps), len(traj.calls))) < 1e-9, mode


@PROPERTY
@given(st.lists(STEP, max_size=6), trajectories(), st.sampled_from(["exact", "superset", "subset"]))
def test_reported_pairs_are_valid(steps: list[Step], traj: Trajectory, rule: str) -> None:
    """Reported pairs are compatible and one to one; ordered modes keep turns non-decreasing."""
    for mode in MODES:
        report = evaluate(Expectation(steps=tuple(steps), mode=mode, args_mode=rule), traj).steps  # type: ignore[arg-type]
        calls = [c for _, c in report.pairs]
        assert len(set(calls)) == len(calls)
        assert all(compatible(steps[s], traj.calls[c], rule) for s, c in report.pairs)
        if mode in ("strict", "in_order"):
            assert all(traj.calls[x].turn <= traj.calls[y].turn for x, y in zip(calls, calls[1:]))


@PROPERTY
@given(st.lists(STEP, max_size=6), trajectories(), st.sampled_from(["exact", "superset", "subset", "ignore"]))
def test_mode_implications(steps: list[Step], traj: Trajectory, rule: str) -> None:
    """strict implies unordered, which implies superset and subset; strict implies in_order."""
    verdict = {
        mode: evaluate(Expectation(steps=tuple(steps), mode=mode, args_mode=rule), traj).passed  # type: ignore[arg-type]
        for mode in MODES
    }
    assert not verdict["strict"] or (verdict["unordered"] and verdict["in_order"])
    assert not verdict["unordered"] or (verdict["superset"] and verdict["subset"])


@PROPERTY
@given(st.lists(CALL, max_size=6), st.lists(CALL, max_size=6))
def test_superset_mirrors_subset(left: list[tuple[str, dict[str, Any]]], right: list[tuple[str, dict[str, Any]]]) -> None:
    """Under exact arguments superset(a, b) equals subset(b, a)."""

    def as_run(calls: list[tuple[str, dict[str, Any]]]) -> Trajectory:
        return Trajectory(tuple(ToolCall(n, a, turn=i, position=i) for i, (n, a) in enumerate(calls)), turns=len(calls))

    def as_steps(calls: list[tuple[str, dict[str, Any]]]) -> tuple[Step, ...]:
        return tuple(Step(n, a) for n, a in calls)

    sup = evaluate(Expectation(steps=as_steps(left), mode="superset"), as_run(right)).passed
    sub = evaluate(Expectation(steps=as_steps(right), mode="subset"), as_run(left)).passed
    assert sup == sub


def ordered_oracle(steps: list[Step], traj: Trajectory, rule: str) -> int:
    """The most pairs with turns non-decreasing along the steps and each parallel group's calls in one turn."""
    ok = [[compatible(s, c, rule) for c in traj.calls] for s in steps]
    best = 0
    for a in assignments(len(steps), len(traj.calls), ok):
        paired = [(i, p) for i, p in enumerate(a) if p is not None]
        turns = [traj.calls[p].turn for _, p in paired]
        groups: dict[int, set[int]] = {}
        for i, p in paired:
            if steps[i].group is not None:
                groups.setdefault(steps[i].group, set()).add(traj.calls[p].turn)
        if all(x <= y for x, y in zip(turns, turns[1:])) and all(len(t) == 1 for t in groups.values()):
            best = max(best, len(paired))
    return best


@st.composite
def grouped_steps(draw: Any) -> list[Step]:
    """Up to 6 steps, some runs of consecutive steps made parallel groups."""
    steps = draw(st.lists(STEP, max_size=6))
    cuts = draw(st.lists(st.integers(0, 2), min_size=len(steps), max_size=len(steps)))
    out, group, i = [], 0, 0
    while i < len(steps):
        size = 1 if cuts[i] == 0 else min(cuts[i] + 1, len(steps) - i)
        for step in steps[i:i + size]:
            out.append(step._replace(group=group) if size > 1 else step)
        group, i = group + (size > 1), i + size
    return out


@PROPERTY
@given(grouped_steps(), trajectories(), st.sampled_from(["exact", "superset", "subset"]))
def test_ordered_diagnosis_is_the_optimal_alignment(steps: list[Step], traj: Trajectory, rule: str) -> None:
    """strict and in_order report the most pairs any turn-respecting alignment has (with parallel groups
    kept in one turn), so the report lists only the true differences; the verdict follows from it."""
    best = ordered_oracle(steps, traj, rule)
    for mode in ("strict", "in_order"):
        for shortcuts in (True, False):
            ev = evaluate(Expectation(steps=tuple(steps), mode=mode, args_mode=rule), traj, shortcuts=shortcuts)  # type: ignore[arg-type]
            assert len(ev.steps.pairs) == best, (mode, shortcuts)
            holds = best == len(steps) and (mode == "in_order" or best == len(traj.calls))
            assert ev.passed == holds, (mode, shortcuts)
