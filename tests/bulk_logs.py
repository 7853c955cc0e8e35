"""Generated production logs for the bulk tests: OpenAI message lists with known violations at known records.

Record ``i`` (from 0) is named ``run-iiiii`` and makes 10 to 30 calls, deterministically:

* every 37th record (``i % 37 == 0``) calls ``refund_all``;
* every 50th record (``i % 50 == 25``) makes 31 calls, over the budget of 30 of ``SUITE``.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

SUITE = """suite: prod
cases:
  - name: policies
    source: {file: "logs/*.jsonl.gz", each: record, id: $.run_id, select: $.messages}
    mode: superset
    args_mode: ignore
    steps: [lookup_customer, send_email]
    never: [refund_all]
    budget: {calls: 30}
"""


def calls_of(i: int) -> list[str]:
    """The tools record ``i`` calls, in order."""
    count = 31 if i % 50 == 25 else 10 + (i * 7) % 21
    middle = (("search", "get_orders", "fetch")[(i + k) % 3] for k in range(count - 2))
    names = ["lookup_customer", *middle, "send_email"]
    if i % 37 == 0:
        names[1] = "refund_all"
    return names


def record(i: int) -> dict[str, Any]:
    """Record ``i``: its id and its OpenAI message list."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "help me"}]
    for k, name in enumerate(calls_of(i)):
        call = {"id": f"c{k}", "type": "function", "function": {"name": name, "arguments": json.dumps({"n": k})}}
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"c{k}", "content": "ok"})
    messages.append({"role": "assistant", "content": "done"})
    return {"run_id": f"run-{i:05d}", "messages": messages}


def line(i: int) -> str:
    """Record ``i`` as one JSONL line."""
    return json.dumps(record(i)) + "\n"


def expected(indices: range) -> dict[str, int]:
    """How many of these records break each policy: ``never (refund_all)`` and ``budget``."""
    return {"never (refund_all)": sum(1 for i in indices if i % 37 == 0),
            "budget": sum(1 for i in indices if i % 50 == 25)}


def write_logs(folder: Path, total: int, files: int = 2) -> list[Path]:
    """``total`` records over ``files`` gzipped JSONL files under ``folder/logs``, and the suite beside them."""
    (folder / "logs").mkdir(parents=True, exist_ok=True)
    paths = []
    for f in range(files):
        path = folder / "logs" / f"2026-11-{f + 1:02d}.jsonl.gz"
        with gzip.open(path, "wt", encoding="utf-8") as out:
            out.writelines(line(i) for i in range(f * total // files, (f + 1) * total // files))
        paths.append(path)
    (folder / "prod.suite.yaml").write_text(SUITE, encoding="utf-8")
    return paths
