"""Big suites: one suite file of 100,000 cases (10 steps each), written out literally and with ``parametrize``.

Each case reads one of 100 ten-call OpenAI histories (files are read once per run) and expects its
ten calls with partial arguments in ``unordered`` mode. Timed: ``trajrun run FILE -q -j 1 --junit-xml``,
wall and peak RSS of the whole process; the floor decodes the literal suite with yaml's CSafeLoader
(the collector off, its fastest) and every history with its argument strings. A third file, the
literal one with an unknown key in case 99,999, checks that the load error still names its line.
Usage: ``python bench/bench_big.py [--cases 100000] [--runs 1]``.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DATA, OUT, compile_trajrun, partial, random_calls, save, to_messages  # noqa: E402
from proc import run_measured  # noqa: E402

ROOT = DATA / "big"
HISTORIES = 100
FLOOR = """
import gc, json, sys, yaml
from pathlib import Path
gc.disable()
root = Path(sys.argv[1])
yaml.load(open(root / "literal" / "big.suite.yaml"), Loader=yaml.CSafeLoader)
for p in sorted((root / "runs").glob("*.json")):
    for m in json.load(open(p)):
        for c in m.get("tool_calls") or (): json.loads(c["function"]["arguments"])
"""
HEAD = ["suite: {title}", "defaults: {{mode: unordered, args_mode: superset}}", "cases:"]


def _steps(calls: list[tuple[str, dict]]) -> list[str]:
    """The step lines of one case: every call with its ``query`` only."""
    return ["    steps:", *(f"      - {tool}: {json.dumps(args)}" for tool, args in partial(calls))]


def generate(cases: int) -> None:
    """The histories, the literal suite, the parametrized one, and the literal one broken in its last case."""
    shutil.rmtree(ROOT, ignore_errors=True)
    (ROOT / "runs").mkdir(parents=True)
    rng = random.Random(3)
    runs = [random_calls(10, rng) for _ in range(HISTORIES)]
    for k, calls in enumerate(runs):
        (ROOT / "runs" / f"r{k:03}.json").write_text(json.dumps(to_messages(calls, 2, "c")))
    literal = [line.format(title="big literal") for line in HEAD]
    for i in range(cases):
        literal += [f"  - name: case {i}", f"    source: ../runs/r{i % HISTORIES:03}.json", *_steps(runs[i % HISTORIES])]
    per = cases // HISTORIES
    values = ", ".join(map(str, range(per)))
    param = [line.format(title="big parametrized") for line in HEAD]
    for k, calls in enumerate(runs):
        param += [f"  - name: run {k:03}", f"    source: ../runs/r{k:03}.json", f"    parametrize: {{n: [{values}]}}",
                  *_steps(calls)]
    for name, lines in (("literal", literal), ("param", param)):
        (ROOT / name).mkdir()
        (ROOT / name / "big.suite.yaml").write_text("\n".join(lines) + "\n")
    broken = literal[:]
    at = max(i for i, line in enumerate(broken) if line.startswith("  - name: "))
    broken.insert(at + 1, "    mdoe: strict")
    (ROOT / "broken").mkdir()
    (ROOT / "broken" / "big.suite.yaml").write_text("\n".join(broken) + "\n")


def main() -> None:
    """Generate (unless --keep), time the floor and both suites, check the broken one, save bench/out/big.json."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--keep", action="store_true", help="reuse bench/data/big if it exists")
    opts = parser.parse_args()
    if not (opts.keep and ROOT.exists()):
        generate(opts.cases)
    compile_trajrun()
    trajrun = str(Path(sys.executable).with_name("trajrun"))
    cmds = {"floor": [sys.executable, "-c", FLOOR, str(ROOT)]}
    for name in ("literal", "param"):
        cmds[name] = [trajrun, "run", str(ROOT / name), "-q", "-j", "1", "--junit-xml", str(OUT / f"big-{name}.xml")]
    samples: dict[str, list[tuple[float, float, int]]] = {label: [] for label in cmds}
    for round_ in range(opts.runs):
        for label, cmd in cmds.items():
            samples[label].append(run_measured(cmd))
            wall, rss, status = samples[label][-1]
            print(f"round {round_ + 1} {label}: {wall:.1f} s, {rss:.0f} MB, exit {status}", flush=True)
    result = {label: {"wall_s": statistics.median(s[0] for s in runs), "peak_rss_mb": max(s[1] for s in runs),
                      "samples": runs} for label, runs in samples.items()}
    done = subprocess.run([trajrun, "validate", str(ROOT / "broken")], capture_output=True, text=True, check=False)
    line = next(i for i, text in enumerate((ROOT / "broken" / "big.suite.yaml").read_text().splitlines(), 1)
                if text == "    mdoe: strict")
    reported = re.search(rf"big\.suite\.yaml:{line}:\d+: .*mdoe", done.stdout + done.stderr)
    result["broken"] = {"line": line, "reported": bool(reported), "output_tail": (done.stdout + done.stderr)[-400:]}
    print(f"unknown key at line {line:,}: {'reported with its line' if reported else 'NOT reported with its line'}")
    for label in ("literal", "param"):
        ratio = result[label]["wall_s"] / result["floor"]["wall_s"]
        print(f"{label}: {result[label]['wall_s']:.1f} s = {ratio:.2f}x floor, peak {result[label]['peak_rss_mb']:.0f} MB")
    save("big", result)


if __name__ == "__main__":
    main()
