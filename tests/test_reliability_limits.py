"""Limits under hostile input: a gzip-bomb source holds no more than the size limit, arguments nested past the
depth limit are a source error (never a RecursionError), NaN leaves ``show -o json`` as a string, and cases written
out in a suite file are not counted against the limit on ``parametrize``."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path
from typing import Any

import pytest
from trajrun.errors import SourceError, SuiteErrors
from trajrun.run.runner import RunOptions, run_paths
from trajrun.sources import load_document, load_trajectory
from trajrun.suites.load import MAX_SUITE_CASES, STREAM_BYTES, load_suite

from cli_helpers import invoke_in

PY = sys.executable
LIMIT = 64 << 20
MIB = 1 << 20
HEAD, TAIL = b'{"messages": [', b"]}"


# -- gzip bombs --------------------------------------------------------------------------------


def _bomb(path: Path, spaces: int, tail: bytes = TAIL) -> Path:
    """A gzip file of ``HEAD``, ``spaces`` spaces and ``tail``: a few hundred kilobytes however many spaces."""
    pack = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = b" " * MIB
    with path.open("wb") as out:
        out.write(pack.compress(HEAD))
        for _ in range(spaces // MIB):
            out.write(pack.compress(block))
        out.write(pack.compress(tail) + pack.flush())
    return path


@pytest.fixture(scope="module")
def bombs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Bombs above the 64 MiB limit (200 MiB inflated) and below it (60 MiB), as JSON and JSONL, and a tiny file."""
    folder = tmp_path_factory.mktemp("bombs")
    for size, name in ((200 * MIB, "above"), (60 * MIB, "below")):
        _bomb(folder / f"{name}.json.gz", size)
        _bomb(folder / f"{name}.jsonl.gz", size, TAIL + b"\n")
    (folder / "tiny.json").write_text('{"messages": []}')
    return folder


def _show_peak(folder: Path, *args: str) -> tuple[int, str, int]:
    """``trajrun show ARGS`` under a 64 MiB source limit, in a process of its own: exit status, stderr and the
    peak resident memory of trajrun in bytes."""
    measure = textwrap.dedent("""
        import json, resource, subprocess, sys
        done = subprocess.run(sys.argv[1:], capture_output=True, text=True, timeout=120)
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
        print(json.dumps({"code": done.returncode, "stderr": done.stderr, "peak": peak}))
    """)  # fmt: skip
    done = subprocess.run([PY, "-c", measure, PY, "-m", "trajrun", "show", *args], cwd=folder,
                          env={**os.environ, "NO_COLOR": "1", "TRAJRUN_MAX_SOURCE_BYTES": str(LIMIT)},
                          capture_output=True, text=True, timeout=180)  # fmt: skip
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    return shown["code"], shown["stderr"], shown["peak"]


def _too_large(what: str) -> str:
    """The error ``trajrun show`` prints for a source past the 64 MiB limit."""
    return (f"trajrun: error: {what} more than 67,108,864 bytes, the limit on one source document; set "
            "TRAJRUN_MAX_SOURCE_BYTES to a larger number of bytes to read it\n")  # fmt: skip


@pytest.mark.parametrize(("args", "code", "error"), [
    (("above.json.gz",), 2, _too_large("above.json.gz: the file decompresses to")),
    (("above.jsonl.gz",), 2, _too_large("above.jsonl.gz: the file decompresses to")),
    (("above.jsonl.gz", "--record", "1"), 2, _too_large("above.jsonl.gz: line 1 holds")),
    (("below.json.gz",), 0, ""),
    (("below.jsonl.gz", "--record", "1"), 0, ""),
])  # fmt: skip
def test_gzip_bomb_source_holds_at_most_the_limit(bombs: Path, args: tuple[str, ...], code: int, error: str) -> None:
    """A source inflating past the limit is refused, and one just under it read, each holding about the limit once
    (inflated bytes, their text and a joined copy held together took twice the limit, three times for a line)."""
    _, _, baseline = _show_peak(bombs, "tiny.json")
    status, stderr, peak = _show_peak(bombs, *args)
    assert (status, stderr) == (code, error)
    assert peak < baseline + 1.4 * LIMIT, f"{(peak - baseline) / MIB:.0f} MiB over a plain show"


def test_whole_jsonl_decodes_each_line_where_it_lies(tmp_path: Path) -> None:
    """A .jsonl read whole: blank and space-padded lines, CRLF, a document spanning lines or followed by another
    are what ``json.loads`` of each line made them, errors naming their line."""
    path = tmp_path / "runs.jsonl"
    path.write_bytes(b'{"a": 1}\r\n\n  \t\n [2, 3] \n"x"\nnull')
    assert load_document(path) == [{"a": 1}, [2, 3], "x", None]
    spans = "invalid JSON at line 2, column 6: Expecting value, found the end of the text; check the file is valid JSON"
    extra = "invalid JSON at line 2, column 10: Extra data, found '{\"b\": 2}'; for one JSON document per line"
    for text, error in ((b'{"a": 1}\n{"b":\n2}\n', spans), (b'1\n{"a": 1} {"b": 2}\n', extra)):
        path.write_bytes(text)
        with pytest.raises(SourceError) as info:
            load_document(path)
        assert str(info.value).startswith(f"{path}: {error}")


def test_record_skips_lines_to_the_one_asked_and_checks_each(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``record: N`` counts lines across chunks, refuses any line before it past the limit, and says how many
    records a shorter file has."""
    path = tmp_path / "runs.jsonl"
    lines = [json.dumps({"n": n, "pad": "x" * (n % 97)}) for n in range(1, 20_001)]
    path.write_text("\n".join(lines) + "\n")
    assert load_document(path, record=1)["n"] == 1
    assert load_document(path, record=12_345)["n"] == 12_345
    assert load_document(path, record=20_000)["n"] == 20_000
    with pytest.raises(SourceError, match="record 20001 is past the end: the file has 20000 records"):
        load_document(path, record=20_001)
    monkeypatch.setenv("TRAJRUN_MAX_SOURCE_BYTES", "100")
    path.write_text("\n".join(["1"] * 5_000 + ["[" + "0," * 60 + "0]"] + ["2"] * 5_000))
    assert load_document(path, record=4_000) == 1
    with pytest.raises(SourceError) as info:
        load_document(path, record=6_000)
    assert str(info.value) == (f"{path}: line 5001 holds more than 100 bytes, the limit on one source document; set "
                               "TRAJRUN_MAX_SOURCE_BYTES to a larger number of bytes to read it")


# -- arguments nested too deep ---------------------------------------------------------------------


def _nested(levels: int) -> Any:
    """A map nested ``levels`` deep (``{"a": {"a": … 1}}``)."""
    value: Any = 1
    for _ in range(levels):
        value = {"a": value}
    return value


def _openai(args: Any, result: Any = "ok") -> list[dict[str, Any]]:
    """A Chat Completions history with one call of ``search`` taking ``args`` (as JSON text) and giving ``result``."""
    call = {"id": "c1", "type": "function", "function": {"name": "search", "arguments": json.dumps(args)}}
    return [{"role": "user", "content": "hi"}, {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": result}]  # fmt: skip


DEEP = ("tool call 0 (search): its arguments nest lists and maps more than 200 levels deep, at {path}… level 201; "
        "trajrun reads at most 200 levels — flatten them in the source")


def test_arguments_nested_900_deep_are_a_source_error_in_show(tmp_path: Path) -> None:
    """900 levels of maps, of lists, in JSON text or as a mapping, in arguments or a result: a clear error naming
    the limit, where it is passed and the fix — no RecursionError."""
    lists = json.loads("[" * 900 + "]" * 900)
    sources = {
        "maps.json": (_openai(_nested(900)), DEEP.format(path="a.a.a.a.a.a")),
        "lists.json": (_openai({"q": lists}), DEEP.format(path="q[0][0][0][0][0]")),
        "anthropic.json": ([{"role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "search", "input": {"q": lists}}]}],  # a mapping, not text
            DEEP.format(path="q[0][0][0][0][0]")),
        "result.json": ({"tool_calls": [{"name": "search", "args": {}, "result": _nested(900)}]},
                        DEEP.format(path="a.a.a.a.a.a").replace("arguments", "result")),
    }  # fmt: skip
    for name, (doc, error) in sources.items():
        (tmp_path / name).write_text(json.dumps(doc))
        for output in ("table", "json", "yaml"):
            shown = invoke_in(tmp_path, "show", name, "-o", output)
            assert (shown.exit_code, shown.stdout, shown.stderr) == (2, "", f"trajrun: error: {name}: {error}\n")


def test_arguments_nested_too_deep_are_a_case_error_in_run_validate_and_bulk(tmp_path: Path) -> None:
    """``run`` makes the case an error (the run goes on), ``validate`` a problem of the source, a bulk case an
    erred record; 200 levels, the limit, are still read and checked."""
    (tmp_path / "deep.json").write_text(json.dumps(_openai(_nested(900))))
    (tmp_path / "limit.json").write_text(json.dumps(_openai(_nested(200), [{"type": "json", "json": _nested(200)}])))
    records = [json.dumps(_openai(_nested(1))), json.dumps(_openai(_nested(900)))]
    (tmp_path / "runs.jsonl").write_text("\n".join(records) + "\n")
    suite = tmp_path / "deep.suite.yaml"
    suite.write_text(textwrap.dedent("""\
        cases:
          - {name: deep, source: deep.json, steps: [{search: {a: 1}}]}
          - {name: limit, source: limit.json, steps: [{search: {a: {a: 1}}}]}
          - {name: limit results, source: limit.json, steps: [{name: search, result: {a: 1}}]}
          - {name: bulk, source: {file: runs.jsonl, each: record}, steps: [{search: {a: 1}}]}
    """))
    result = run_paths([suite], RunOptions(root=tmp_path))
    cases = {case.name: case for case in result.suites[0].cases}
    error = f"source: {tmp_path / 'deep.json'}: {DEEP.format(path='a.a.a.a.a.a')}"
    assert (cases["deep"].outcome, cases["deep"].message) == ("error", error)
    assert (cases["limit"].outcome, cases["limit"].message) == ("failed", "1 check failed: steps (1 arg differs)")
    assert cases["limit results"].message == "1 check failed: steps (1 result differs)"
    bulk = cases["bulk"].bulk
    assert bulk is not None and (bulk.passed, bulk.error) == (1, 1)
    assert [(line.record, line.message) for line in bulk.worst] == [
        (f"{tmp_path / 'runs.jsonl'}:2", f"source: {DEEP.format(path='a.a.a.a.a.a')}")]
    checked = invoke_in(tmp_path, "validate", "deep.suite.yaml")
    assert checked.exit_code == 2
    assert checked.stdout.splitlines()[0] == ("deep.suite.yaml:2:26: cases[0].source: source deep.json: "
                                              + DEEP.format(path="a.a.a.a.a.a"))


# -- NaN and infinities in show -o json --------------------------------------------------------


NAN_SOURCE = ('{"tool_calls": [{"name": "a", "args": {"x": NaN, "y": [Infinity, -Infinity], "NaN": 1.5}, '
              '"result": NaN, "duration_ms": NaN}], "usage": {"input_tokens": NaN, "output_tokens": 1}, '
              '"wall_ms": Infinity}')


def _strict(text: str) -> Any:
    """``text`` as JSON, refusing the bare NaN and infinities Python's decoder takes."""

    def refuse(name: str) -> Any:
        raise AssertionError(f"bare {name} in the output")

    return json.loads(text, parse_constant=refuse)


def test_nan_and_infinities_leave_show_json_as_strings_and_read_back_the_same(tmp_path: Path) -> None:
    """Strict JSON with ``"NaN"``, ``"Infinity"`` and ``"-Infinity"`` where the source had the numbers, as the JSON
    report writes them; a NaN count or time is none; the output read back is shown the same."""
    (tmp_path / "nan.json").write_text(NAN_SOURCE)
    shown = invoke_in(tmp_path, "show", "nan.json", "-o", "json")
    assert (shown.exit_code, shown.stderr) == (0, "")
    data = _strict(shown.stdout)
    call = data["tool_calls"][0]
    assert (call["args"], call["result"]) == ({"x": "NaN", "y": ["Infinity", "-Infinity"], "NaN": 1.5}, "NaN")
    assert "duration_ms" not in call and "wall_ms" not in data
    assert data["usage"] == {"input_tokens": 0, "output_tokens": 1, "total_tokens": 1}
    (tmp_path / "again.json").write_text(shown.stdout)
    again = invoke_in(tmp_path, "show", "again.json", "-o", "json")
    assert (again.exit_code, again.stdout) == (0, shown.stdout)
    assert load_trajectory(tmp_path / "again.json").calls[0].args == call["args"]
    (tmp_path / "t.suite.yaml").write_text("cases: [{name: nan, source: nan.json, steps: [{a: {x: 1}}]}]\n")
    invoke_in(tmp_path, "run", "t.suite.yaml", "--json", "report.json")
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["suites"][0]["cases"][0]["trajectory"]["tool_calls"][0]["args"] == call["args"]


def test_nan_and_huge_numbers_in_usage_count_as_missing(tmp_path: Path) -> None:
    """A NaN, an infinite or a float-overflowing token count or time is no figure, never an internal error."""
    (tmp_path / "usage.json").write_text('{"tool_calls": [{"name": "a", "duration_ms": 1' + "0" * 400 + '}], '
                                         '"usage": {"input_tokens": Infinity, "output_tokens": -Infinity}}')
    traj = load_trajectory(tmp_path / "usage.json")
    assert (traj.usage, traj.calls[0].duration_ms) == (None, None)
    assert not any(isinstance(v, float) and not math.isfinite(v) for v in traj.to_dict()["tool_calls"][0].values())


# -- cases written out are not counted -------------------------------------------------------


def test_literal_cases_past_the_parametrize_limit_load(tmp_path: Path) -> None:
    """100,001 cases written out (a streamed file) all load: the limit is on what parametrize multiplies."""
    (tmp_path / "run.json").write_text(json.dumps(_openai({"q": 1})))
    path = tmp_path / "many.suite.yaml"
    count = MAX_SUITE_CASES + 1
    with path.open("w") as out:
        out.write("defaults: {source: run.json}\ncases:\n")
        out.writelines(f"  - {{name: c{i}, steps: [search]}}\n" for i in range(count))
    cases = load_suite(path).cases
    assert (len(cases), cases[-1].name) == (count, f"c{count - 1}")


def test_parametrize_past_the_limit_is_refused_in_a_streamed_file(tmp_path: Path) -> None:
    """Two parametrized cases of 60,000 each among cases written out, in a file large enough to be streamed:
    refused with the total, the limit and the fix, nothing built."""
    grid = "{a: [%s], b: [%s]}" % (", ".join(map(str, range(300))), ", ".join(map(str, range(200))))
    literal = "".join(f"  - {{name: w{i}, source: run.json, steps: [search]}}\n" for i in range(3))
    cases = "".join(f"  - {{name: p{i}, source: run.json, steps: [search], parametrize: {grid}}}\n" for i in range(2))
    path = tmp_path / "grid.suite.yaml"
    path.write_text(f"description: '{'x' * STREAM_BYTES}'\ncases:\n{literal}{cases}")
    with pytest.raises(SuiteErrors) as info:
        load_suite(path)
    assert [str(error) for error in info.value.errors] == [
        f"{path}:3:3: cases: parametrize would make 120,000 cases in this file, above the limit of 100,000 per suite "
        "file (cases written out are not counted); split the parametrized cases into several suite files"
    ]
