"""A source file is decoded once per run whatever its ``select``: counted by patching the decoder, never timed."""

from __future__ import annotations

import gzip
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from trajrun.errors import SourceError
from trajrun.run.runner import RunOptions, run_paths
from trajrun.run.validate import validate_paths
from trajrun.sources import documents, load_document, load_trajectory

RUNS = 200
LONG_AGO = time.time() - 3600


@pytest.fixture(autouse=True)
def parses(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The origins of every file decoded, with an empty cache before and after the test."""
    seen: list[str] = []
    decode = documents._read

    def counted(chunks: Any, kind: str, record: int | None, origin: str, limit: int) -> Any:
        seen.append(origin)
        return decode(chunks, kind, record, origin, limit)

    monkeypatch.setattr(documents, "_read", counted)
    documents._DECODED.clear()
    yield seen
    documents._DECODED.clear()


def _write(path: Path, text: str | bytes, when: float = LONG_AGO) -> Path:
    """Write ``path`` and date it ``when`` (settled: an hour ago by default)."""
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    os.utime(path, (when, when))
    return path


def _runs(tool: str = "lookup") -> str:
    """One JSON document of ``RUNS`` runs in trajrun's own format, run N calling ``tool`` with ``{n: N}``."""
    runs = [{"id": f"r{n}", "tool_calls": [{"name": tool, "args": {"n": n}, "turn": 0}]} for n in range(RUNS)]
    return json.dumps({"runs": runs})


def _suite(folder: Path, tool: str = "lookup") -> Path:
    """A suite of ``RUNS`` cases, case N selecting run N of ``runs.json`` and expecting ``tool`` with ``{n: N}``."""
    cases = "".join(f"  - {{name: run {n}, source: {{file: runs.json, select: '$.runs[{n}]'}}, "
                    f"steps: [{{{tool}: {{n: {n}}}}}]}}\n" for n in range(RUNS))  # fmt: skip
    return _write(folder / "runs.suite.yaml", "cases:\n" + cases)


def test_two_hundred_selects_out_of_one_file_parse_it_once(tmp_path: Path, parses: list[str]) -> None:
    """200 cases, each picking its run out of one JSON file: one parse for the run, one more for validate
    (a new process would start empty; here the cache is emptied between them)."""
    runs = _write(tmp_path / "runs.json", _runs())
    suite = _suite(tmp_path)
    result = run_paths([suite], RunOptions(root=tmp_path))
    assert [case.outcome for case in result.cases] == ["passed"] * RUNS
    assert parses == [str(runs)]
    documents._DECODED.clear()
    problems, count = validate_paths([str(suite)], {}, None)
    assert (problems, count) == ([], 1)
    assert parses == [str(runs)] * 2


def test_a_changed_file_is_decoded_again(tmp_path: Path, parses: list[str]) -> None:
    """A new modification time (a rewrite of the same size, dated an hour later) is a new document: the next run
    reads it, and its cases see the new calls."""
    runs = _write(tmp_path / "runs.json", _runs("lookup"))
    suite = _suite(tmp_path, "search")
    first = run_paths([suite], RunOptions(root=tmp_path))
    assert {case.outcome for case in first.cases} == {"failed"}
    _write(runs, _runs("search"), LONG_AGO + 60)
    second = run_paths([suite], RunOptions(root=tmp_path))
    assert [case.outcome for case in second.cases] == ["passed"] * RUNS
    assert parses == [str(runs)] * 2


def test_a_file_changed_just_now_is_decoded_on_each_read(tmp_path: Path, parses: list[str]) -> None:
    """A file modified within the step a file system records times in could change again unseen: not kept."""
    runs = _write(tmp_path / "runs.json", _runs(), time.time())
    assert load_trajectory(runs, select="$.runs[0]").calls[0].args == {"n": 0}
    assert load_trajectory(runs, select="$.runs[1]").calls[0].args == {"n": 1}
    assert parses == [str(runs)] * 2


def test_load_document_hands_out_a_document_of_its_own(tmp_path: Path, parses: list[str]) -> None:
    """``load_document`` (public, and callers may change what it returns) decodes every time and shares
    nothing with the cache ``load_trajectory`` reads through."""
    runs = _write(tmp_path / "runs.json", _runs())
    assert load_trajectory(runs, select="$.runs[0]").calls[0].args == {"n": 0}
    doc = load_document(runs)
    doc["runs"][1]["tool_calls"][0]["args"]["n"] = "changed"
    assert load_trajectory(runs, select="$.runs[1]").calls[0].args == {"n": 1}
    assert load_document(runs, select="$.runs[1].tool_calls[0].args") == {"n": 1}
    assert parses == [str(runs)] * 3


def test_memory_is_bounded_by_size_and_by_count(tmp_path: Path, parses: list[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Past ``DECODED_KEPT_BYTES`` the files used longest ago go, though the one decoded last stays whatever its
    size; past ``DECODED_KEPT_FILES`` too."""
    monkeypatch.setattr(documents, "DECODED_KEPT_BYTES", 10)
    first, second = (_write(tmp_path / f"{name}.json", _runs()) for name in ("first", "second"))
    for path in (first, first, second, second, first):
        load_trajectory(path, select="$.runs[3]")
    assert parses == [str(first), str(second), str(first)]
    assert list(documents._DECODED) == [str(first)]

    monkeypatch.setattr(documents, "DECODED_KEPT_BYTES", 1 << 30)
    monkeypatch.setattr(documents, "DECODED_KEPT_FILES", 2)
    third = _write(tmp_path / "third.json", _runs())
    parses.clear()
    for path in (second, third, second, first, second):  # the third, used longest ago, goes for the first
        load_trajectory(path, select="$.runs[3]")
    assert parses == [str(second), str(third), str(first)]
    assert list(documents._DECODED) == [str(first), str(second)]


def test_gzip_and_jsonl_files_are_kept_too(tmp_path: Path, parses: list[str]) -> None:
    """A gzipped JSON file and a JSONL file read whole are decoded once; ``record: N`` streams its line as before."""
    zipped = _write(tmp_path / "runs.json.gz", gzip.compress(_runs().encode()))
    lines = _write(tmp_path / "runs.jsonl", "".join(json.dumps(run) + "\n" for run in json.loads(_runs())["runs"]))
    for n in (0, 1):
        assert load_trajectory(zipped, select=f"$.runs[{n}]").calls[0].args == {"n": n}
        assert load_trajectory(lines, select=f"$[{n}]").calls[0].args == {"n": n}
        assert load_trajectory(lines, record=n + 1).calls[0].args == {"n": n}
    assert parses == [str(zipped), str(lines), str(lines), str(lines)]


def test_a_kept_file_past_a_lowered_size_limit_is_refused(tmp_path: Path, parses: list[str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The size limit holds for a kept document as for a file read afresh."""
    runs = _write(tmp_path / "runs.json", _runs())
    load_trajectory(runs, select="$.runs[0]")
    monkeypatch.setenv("TRAJRUN_MAX_SOURCE_BYTES", "1000")
    with pytest.raises(SourceError) as info:
        load_trajectory(runs, select="$.runs[1]")
    assert str(info.value) == (f"{runs}: the file holds more than 1,000 bytes, the limit on one source document; "
                               "set TRAJRUN_MAX_SOURCE_BYTES to a larger number of bytes to read it")  # fmt: skip
    assert parses == [str(runs)]
