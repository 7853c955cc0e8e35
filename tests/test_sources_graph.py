"""Graph reader: agentevals GraphTrajectory and the extracted ``{inputs, outputs}`` shape."""

from __future__ import annotations

from pathlib import Path

from trajrun.sources import load_document, load_trajectory, read_trajectory

SAMPLE = Path(__file__).parent / "data" / "samples" / "agentevals" / "extracted_thread_trajectory_two_turns.json"


def test_extracted_thread_trajectory() -> None:
    """Two turns of node names, no calls, the last result's assistant text as the answer."""
    t = load_trajectory(SAMPLE, select="$.extracted")
    assert t.format == "graph"
    assert t.nodes == (("__start__", "agent", "tools", "agent"), ("__start__", "agent"))
    assert (t.calls, t.turns, t.usage, t.answer) == ((), 2, None, "again sunny")


def test_bare_graph_trajectory_with_an_interrupted_last_turn() -> None:
    """A GraphTrajectory whose last result is ``{}`` (interrupted) answers from the earlier turn."""
    outputs = load_document(SAMPLE, select="$.extracted.outputs")
    outputs["results"][1] = {}
    outputs["steps"][1] = ["__start__", "agent", "__interrupt__"]
    t = read_trajectory(outputs)
    assert (t.format, t.turns, t.answer) == ("graph", 2, "Both sunny.")
    assert t.nodes is not None and t.nodes[1][-1] == "__interrupt__"
