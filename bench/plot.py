"""Draw bench/scaling.png from bench/out/scaling.json: CPU time per match against calls, per mode, log-log."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import BENCH, OUT  # noqa: E402

COLORS = {"trajrun": "tab:blue", "agentevals": "tab:red", "openevals": "tab:orange"}
STYLES = {"typical": "-", "worst": "--"}
PANELS = ("strict", "unordered", "subset", "superset", "in_order")


def main() -> None:
    """One panel per mode; solid = typical, dashed = worst case; timed-out peers end their line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = json.loads((OUT / "scaling.json").read_text())
    fig, axes = plt.subplots(1, len(PANELS), figsize=(4 * len(PANELS), 3.8), sharey=True)
    for ax, mode in zip(axes, PANELS):
        for tool, color in COLORS.items():
            for kind, style in STYLES.items():
                points = [(r["n"], r["cpu_s"]) for r in data["rows"]
                          if r["mode"] == mode and r["tool"] == tool and r["kind"] == kind and r.get("cpu_s")]
                if points:
                    xs, ys = zip(*points)
                    ax.plot(xs, ys, style, color=color, marker="o", ms=3, label=f"{tool} ({kind})")
        ax.axhline(1.0, color="grey", lw=0.8, ls=":")
        ax.set(xscale="log", yscale="log", title=mode, xlabel="tool calls per trajectory")
        ax.grid(True, which="major", alpha=0.3)
    axes[0].set_ylabel("CPU seconds per match (extraction included)")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=6, fontsize=8, frameon=False)
    fig.suptitle("Matching time vs trajectory length (dotted line: 1 s target for trajrun at 10,000 calls)")
    fig.tight_layout(rect=(0, 0.08, 1, 0.95))
    fig.savefig(BENCH / "scaling.png", dpi=110)
    print(BENCH / "scaling.png")


if __name__ == "__main__":
    main()
