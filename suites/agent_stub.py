"""A scripted stand-in for a weather agent, so the live-source suite runs offline and deterministically.

`python3 agent_stub.py --city Lyon` prints the run as trajrun's own trajectory JSON (a `command:` source);
`run(city=..., flaky_every=...)` returns the run as OpenAI chat messages (a `python:` source).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from typing import Any

CITIES = {"Paris": (48.8566, 2.3522), "Lyon": (45.764, 4.8357), "Oslo": (59.9139, 10.7522)}
_runs: Counter[str] = Counter()


def _tool_call(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """One OpenAI tool call, arguments as a JSON string like the API sends them."""
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def run(city: str = "Paris", flaky_every: int = 0) -> list[dict[str, Any]]:
    """The agent's chat history; every `flaky_every`-th run for a city skips the forecast (a flaky model)."""
    _runs[city] += 1
    lat, lon = CITIES[city]
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": f"Weather in {city} tomorrow?"},
        {"role": "assistant", "content": None, "tool_calls": [_tool_call("call_geo1", "geocode", {"city": city})]},
        {"role": "tool", "tool_call_id": "call_geo1", "content": json.dumps({"lat": lat, "lon": lon})},
    ]
    if flaky_every and _runs[city] % flaky_every == 0:
        return [*messages, {"role": "assistant", "content": f"It is usually mild in {city} this time of year."}]
    forecast = _tool_call("call_fc1", "get_forecast", {"lat": lat, "lon": lon, "days": 1})
    return [
        *messages,
        {"role": "assistant", "content": None, "tool_calls": [forecast]},
        {"role": "tool", "tool_call_id": "call_fc1", "content": "light rain, 16C"},
        {"role": "assistant", "content": f"Tomorrow in {city}: light rain, around 16C."},
    ]


def trajectory(city: str) -> dict[str, Any]:
    """The same run as trajrun's own trajectory document, with token usage."""
    lat, lon = CITIES[city]
    calls = [
        {"name": "geocode", "args": {"city": city}, "id": "call_geo1", "turn": 0, "result": {"lat": lat, "lon": lon}},
        {"name": "get_forecast", "args": {"lat": lat, "lon": lon, "days": 1}, "id": "call_fc1", "turn": 1,
         "result": "light rain, 16C"},
    ]
    usage = {"input_tokens": 388, "output_tokens": 61, "total_tokens": 449}
    return {"tool_calls": calls, "turns": 3, "usage": usage, "answer": f"Tomorrow in {city}: light rain, around 16C."}


def main(argv: list[str] | None = None) -> int:
    """Print one run as JSON on stdout; an unknown city fails like a crashed agent would."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--city", default="Paris")
    city = parser.parse_args(argv).city
    if city not in CITIES:
        print(f"agent_stub: no coordinates for {city!r}", file=sys.stderr)
        return 1
    json.dump(trajectory(city), sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
