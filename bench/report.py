"""Print the README's tables (Markdown) from bench/out/*.json, with targets and whether they are met."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import MODES, OUT, versions  # noqa: E402


def _load(name: str) -> dict | None:
    path = OUT / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


def _ok(met: bool) -> str:
    return "met" if met else "**missed**"


def match_tables(data: dict) -> list[str]:
    """Per mode and argument rule: CPU seconds of each tool, agentevals/trajrun ratios (target 30x), and the floor."""
    head = "| agentevals ÷ trajrun | openevals ÷ trajrun | target ≥ 30× | floor | agentevals ÷ floor |"
    rule = "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |"
    lines = ["| args | mode | trajrun 1000×200 | agentevals | openevals " + head, rule]
    big = ["| args | mode | trajrun 1×1000 | agentevals | openevals " + head, rule]
    rows = {(r["args"], r["mode"], r["tool"]): r for r in data["rows"]}
    for args in ("exact", "partial"):
        for mode in MODES:
            t, a, o, f = (rows[(args, mode, tool)] for tool in ("trajrun", "agentevals", "openevals", "floor"))
            for table, key, unit, scale in ((lines, "cpu_s_per_1000x200", "s", 1), (big, "cpu_s_1000_calls", "ms", 1000)):
                ra, ro = a[key] / t[key], o[key] / t[key]
                verdicts = "".join("" if r[f"verdict_{'200' if table is lines else '1000'}"] else " (says False)" for r in (a,))
                table.append(f"| {args} | {mode} | {t[key] * scale:.2f} {unit} | {a[key] * scale:.2f} {unit}{verdicts} | "
                             f"{o[key] * scale:.2f} {unit} | {ra:.1f}× | {ro:.1f}× | {_ok(ra >= 30)} | "
                             f"{f[key] * scale:.2f} {unit} | {a[key] / f[key]:.1f}× |")
    return lines + [""] + big


def scaling_table(data: dict) -> list[str]:
    """CPU ms per match by size, for every mode, workload and tool."""
    sizes = sorted({r["n"] for r in data["rows"]})
    lines = ["| workload | mode | tool | " + " | ".join(f"{n:,}" for n in sizes) + " | 10,000 < 1 s |",
             "| --- | --- | --- | " + " | ".join("---:" for _ in sizes) + " | --- |"]
    keys = sorted({(r["kind"], r["mode"], r["tool"]) for r in data["rows"]}, key=lambda k: (k[0] != "typical", k[1], k[2] != "trajrun", k[2]))
    for kind, mode, tool in keys:
        cells, last = [], None
        for n in sizes:
            r = next((r for r in data["rows"] if (r["kind"], r["mode"], r["tool"], r["n"]) == (kind, mode, tool, n)), None)
            cells.append("—" if r is None else ("timed out" if r.get("cpu_s") is None else f"{r['cpu_s'] * 1000:,.1f} ms"))
            last = r
        target = _ok(last is not None and last.get("cpu_s") is not None and last["cpu_s"] < 1) if tool == "trajrun" else ""
        lines.append(f"| {kind} | {mode} | {tool} | " + " | ".join(cells) + f" | {target} |")
    return lines


def main() -> None:
    """Print every table whose data exists."""
    print("| package | version |\n| --- | --- |")
    for name, version in versions().items():
        print(f"| {name} | {version} |")
    for name, render in (("match", match_tables), ("scaling", scaling_table)):
        data = _load(name)
        if data:
            print(f"\n### {name}\n")
            print("\n".join(render(data)))
    correctness = _load("correctness")
    if correctness:
        print("\n### correctness\n\n| args | mode | inputs | agentevals ≠ trajrun | trajrun right there | openevals ≠ trajrun | trajrun right there | trajrun ≠ oracle | agentevals ≠ oracle | openevals ≠ oracle |")
        print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for r in correctness["rows"]:
            print(f"| {r['args']} | {r['mode']} | {r['inputs']} | {r['agentevals_disagrees']} | {r['trajrun_right_where_agentevals_disagrees']} | "
                  f"{r['openevals_disagrees']} | {r['trajrun_right_where_openevals_disagrees']} | {r['trajrun_wrong']} | {r['agentevals_wrong']} | {r['openevals_wrong']} |")
        print(f"\ngreedy trap: {correctness['greedy_trap']}")
    for name in ("startup", "memory", "e2e-wide", "e2e-deep", "big"):
        data = _load(name)
        if data:
            print(f"\n### {name}\n\n```\n{json.dumps(data, indent=1)[:3000]}\n```")


if __name__ == "__main__":
    main()
