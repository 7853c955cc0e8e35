"""Bulk cases (a source with ``each``): every record of generated logs checked, counts asserted exactly.

The logs come from ``bulk_logs``: known records break ``never`` and ``budget``. Unreadable records (a bad
JSON line, a corrupt gzip member) are errors of those records only; byte ranges split a JSONL file
mid-line without losing or repeating a record; ``-j 2`` and a ``memory://`` URL give the same results.
"""

from __future__ import annotations

import gzip
import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import trajrun
from bulk_logs import SUITE, expected, line, record, write_logs
from cli_helpers import invoke_in
from hypothesis import given
from hypothesis import strategies as st
from properties import PROPERTY
from trajrun.errors import SuiteErrors
from trajrun.reports.console import ConsoleReporter
from trajrun.run.bulk import BulkOptions
from trajrun.run.bulk_eval import BulkSpec, evaluate_partition
from trajrun.run.runner import RunOptions, run_paths
from trajrun.sources.records import PartitionReader, partitions
from trajrun.sources.streams import CHUNK, Lost, gunzip_chunks, lines

TOTAL = 600


def run_bulk(folder: Path, **options: object) -> trajrun.CaseResult:
    """Run the folder's suite with these bulk options; its one case's result."""
    jobs = options.pop("jobs", 1)
    result = run_paths([folder / "prod.suite.yaml"], RunOptions(jobs=jobs, root=folder, bulk=BulkOptions(**options)))
    [case] = result.cases
    return case


def read_lines(path: Path) -> list[dict[str, object]]:
    """The ``--records`` lines of a file."""
    return [json.loads(text) for text in path.read_text(encoding="utf-8").splitlines()]


def test_counts_by_check_and_first_failing_records_are_exact(tmp_path: Path) -> None:
    write_logs(tmp_path, TOTAL)
    case = run_bulk(tmp_path)
    counts = expected(range(TOTAL))
    failing = [i for i in range(TOTAL) if i % 37 == 0 or i % 50 == 25]
    summary = case.bulk
    assert case.outcome == "failed" and case.check_type == "records"
    assert (summary.total, summary.failed, summary.error) == (TOTAL, len(failing), 0)
    assert summary.passed == TOTAL - len(failing)
    assert dict(summary.by_check) == counts
    never, budget = counts["never (refund_all)"], counts["budget"]
    assert case.message == f"{len(failing)} of {TOTAL} records failed: never (refund_all) {never}, budget {budget}"
    assert [r.record for r in summary.worst] == [f"run-{i:05d}" for i in failing[:20]]
    assert "run-00025  failed  1 check failed: budget (calls 31 > 30)" in case.details
    assert summary.files == 2


def test_pass_rate_lets_a_few_records_fail(tmp_path: Path) -> None:
    write_logs(tmp_path, TOTAL)
    suite = tmp_path / "prod.suite.yaml"
    suite.write_text(SUITE.replace("    budget: {calls: 30}\n", "    budget: {calls: 30}\n    pass_rate: 0.9\n"))
    case = run_bulk(tmp_path)
    assert case.outcome == "passed" and case.message == ""
    assert case.notes[0].endswith("passed >= pass_rate 0.9")
    suite.write_text(SUITE.replace("    budget: {calls: 30}\n", "    budget: {calls: 30}\n    pass_rate: 0.99\n"))
    case = run_bulk(tmp_path)
    assert case.outcome == "failed" and "(95.17% passed, pass_rate 0.99)" in case.message


def test_two_workers_give_the_records_of_one(tmp_path: Path) -> None:
    write_logs(tmp_path, TOTAL, files=3)
    one = run_bulk(tmp_path, records=tmp_path / "one.jsonl")
    two = run_bulk(tmp_path, jobs=2, records=tmp_path / "two.jsonl")
    assert (tmp_path / "one.jsonl").read_bytes() == (tmp_path / "two.jsonl").read_bytes()
    assert one.bulk.worst == two.bulk.worst and one.message == two.message
    lines = read_lines(tmp_path / "one.jsonl")
    assert [entry["record"] for entry in lines] == [f"run-{i:05d}" for i in range(TOTAL)]
    assert lines[37] == {"case": "prod.suite.yaml::policies", "record": "run-00037", "outcome": "failed",
                         "checks": ["never"], "message": "1 check failed: never (refund_all)", "score": 1.0}


def test_byte_ranges_split_mid_line_without_losing_or_repeating_a_record(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_text("".join(line(i) for i in range(200)) + "\n\n", encoding="utf-8")  # blank lines at the end
    parts = partitions([str(path)], "record", split=1_000)
    assert len(parts) > 20 and parts[1].start == 1_000
    assert path.read_bytes()[999:1_001].count(b"\n") == 0, "the split must land mid-line for this test"
    spec = BulkSpec(trajrun.Expectation(never=("refund_all",)), select="$.messages", id="$.run_id")
    seen = [r.id for part in parts for r in evaluate_partition(spec, part)[0]]
    assert seen == [f"run-{i:05d}" for i in range(0, 200, 37)]
    readers = [PartitionReader(part, "record") for part in parts]
    keys = [[r.key for r in reader] for reader in readers]
    assert sum(len(k) for k in keys) == 200 and sum(reader.lines for reader in readers) == 202


def test_split_file_names_records_by_their_line_in_the_file(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "a.jsonl").write_text("".join(line(i) for i in range(120)), encoding="utf-8")
    (tmp_path / "prod.suite.yaml").write_text(SUITE.replace("*.jsonl.gz", "*.jsonl").replace(" id: $.run_id,", ""))
    whole = run_bulk(tmp_path, records=tmp_path / "whole.jsonl")
    split = run_bulk(tmp_path, jobs=2, split=777, records=tmp_path / "split.jsonl")
    assert (tmp_path / "whole.jsonl").read_bytes() == (tmp_path / "split.jsonl").read_bytes()
    log = tmp_path / "logs" / "a.jsonl"
    assert [r.record for r in split.bulk.worst][:3] == [f"{log}:1", f"{log}:26", f"{log}:38"]
    assert whole.message == split.message


def corrupt_member(data: bytes) -> bytes:
    """A gzip member with bytes in the middle of its deflate stream flipped."""
    middle = len(data) // 2
    return data[:middle] + bytes(b ^ 0x5A for b in data[middle : middle + 64]) + data[middle + 64 :]


def test_corrupt_gzip_member_and_bad_json_line_are_errors_of_their_records(tmp_path: Path) -> None:
    first = "".join(line(i) for i in range(10)).splitlines(keepends=True)
    first[4] = '{"run_id": "run-00004", "messages": [\n'
    members = [gzip.compress("".join(first).encode()),
               corrupt_member(gzip.compress("".join(line(i) for i in range(10, 20)).encode())),
               gzip.compress("".join(line(i) for i in range(20, 30)).encode())]
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "a.jsonl.gz").write_bytes(b"".join(members))
    (tmp_path / "prod.suite.yaml").write_text(SUITE)
    case = run_bulk(tmp_path, records=tmp_path / "records.jsonl")
    errors = [entry for entry in read_lines(tmp_path / "records.jsonl") if entry["outcome"] == "error"]
    assert errors[0]["record"] == f"{tmp_path / 'logs' / 'a.jsonl.gz'}:5"
    assert errors[0]["message"].startswith("source: invalid JSON at column")
    assert any("not valid gzip" in e["message"] and "reading resumed" in e["message"] for e in errors[1:])
    ids = [entry["record"] for entry in read_lines(tmp_path / "records.jsonl")]
    assert [f"run-{i:05d}" for i in range(20, 30)] == [i for i in ids if i.startswith("run-000") and i >= "run-00020"]
    summary = case.bulk  # 9 readable records in the first member, none of the second, 10 of the third
    assert (case.outcome, summary.total, summary.passed, summary.failed, summary.error) == ("failed", 21, 17, 2, 2)
    assert case.message.endswith("; 2 erred")


def test_a_truncated_gzip_file_is_one_error_after_what_it_holds(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    data = gzip.compress("".join(line(i) for i in range(1, 30)).encode())
    (tmp_path / "logs" / "a.jsonl.gz").write_bytes(data[: len(data) * 2 // 3])
    (tmp_path / "prod.suite.yaml").write_text(SUITE)
    case = run_bulk(tmp_path)
    assert case.bulk.error == 1 and "cut short" in case.bulk.worst[-1].message and case.bulk.passed > 5


def test_a_highly_compressed_file_inflates_a_chunk_at_a_time() -> None:
    """Logs compress a hundredfold: a 1 MB compressed read must not become 100 MB in one piece (it held 683 MB
    for 200,000 records); each piece is at most CHUNK bytes and together they are the file, across members."""
    text = "".join(line(i % 50) for i in range(2_000)).encode()
    data = gzip.compress(text) + gzip.compress(text[:5000])
    pieces = list(gunzip_chunks(io.BytesIO(data)))
    assert len(data) < CHUNK < len(text) and max(map(len, pieces)) <= CHUNK
    assert b"".join(pieces) == text + text[:5000]


def reference_lines(data: bytes, limit: int) -> list[tuple[int, bytes | None]]:
    """Every line of ``data`` at its offset, None for one past ``limit`` bytes; no empty last line."""
    found, offset = [], 0
    parts = data.split(b"\n")
    for index, part in enumerate(parts):
        if part or index < len(parts) - 1:
            found.append((offset, part if len(part) <= limit else None))
        offset += len(part) + 1
    return found


@PROPERTY
@given(st.lists(st.sampled_from([b"a", b"bc", b"\n", b"defgh", b"\n\n", b"ijklmnopq"]), max_size=40),
       st.lists(st.integers(1, 12), min_size=1, max_size=8), st.integers(0, 12))
def test_lines_across_any_chunks_are_the_lines_of_the_whole(pieces: list[bytes], sizes: list[int], limit: int) -> None:
    """However the bytes are chunked, the lines (and those past the limit, lost at their offset) are the same."""
    data, chunks, at = b"".join(pieces), [], 0
    while at < len(data):
        size = sizes[len(chunks) % len(sizes)]
        chunks.append(data[at : at + size])
        at += size
    got = [(found.offset, None if isinstance(found.data, Lost) else found.data) for found in lines(iter(chunks), limit)]
    assert got == reference_lines(data, limit)


def test_no_matching_file_and_no_records_are_case_errors(tmp_path: Path) -> None:
    (tmp_path / "prod.suite.yaml").write_text(SUITE)
    case = run_bulk(tmp_path)
    assert case.outcome == "error" and "no file matches" in case.message
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "a.jsonl.gz").write_bytes(gzip.compress(b"\n\n"))
    assert run_bulk(tmp_path).message == "no records: the 1 file matched hold none"


def test_every_record_erring_makes_the_case_an_error(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "a.jsonl.gz").write_bytes(gzip.compress(b'{"run_id": "x"}\n{"run_id": "y"}\n'))
    (tmp_path / "prod.suite.yaml").write_text(SUITE)
    case = run_bulk(tmp_path)
    assert case.outcome == "error" and case.message.startswith("every record erred (2); first: source: select")


def test_each_file_reads_every_file_as_one_run(tmp_path: Path) -> None:
    (tmp_path / "runs").mkdir()
    for i in (0, 1, 37):
        (tmp_path / "runs" / f"r{i}.json").write_text(json.dumps(record(i)["messages"]))
    (tmp_path / "prod.suite.yaml").write_text(
        "cases:\n  - name: every file\n    source: {file: 'runs/*.json', each: file}\n    never: [refund_all]\n")
    case = run_bulk(tmp_path)
    assert (case.bulk.total, case.bulk.failed) == (3, 2)
    assert [r.record for r in case.bulk.worst] == [f"{tmp_path}/runs/r0.json", f"{tmp_path}/runs/r37.json"]


def otel_span(trace: str, span: str, tool: str | None) -> dict[str, object]:
    """A GenAI span of one trace: a tool execution, or an LLM call."""
    attrs = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool} if tool else \
        {"gen_ai.operation.name": "chat"}
    return {"traceId": trace, "spanId": span, "name": tool or "chat", "startTimeUnixNano": str(int(span, 16)),
            "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attrs.items()]}


def test_each_trace_groups_spans_by_trace_id(tmp_path: Path) -> None:
    traces = {"a" * 32: ["search"], "b" * 32: ["search", "refund_all"], "c" * 32: []}
    spans = [otel_span(t, f"{n + 1:016x}", tool) for n, (t, tools) in enumerate(traces.items())
             for tool in (None, *tools)]  # fmt: skip
    export = {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}
    (tmp_path / "traces.json").write_text(json.dumps(export))
    (tmp_path / "prod.suite.yaml").write_text(
        "cases:\n  - name: every trace\n    source: {file: traces.json, each: trace}\n    never: [refund_all]\n")
    case = run_bulk(tmp_path)
    assert (case.bulk.total, case.bulk.passed, case.bulk.failed) == (3, 2, 1)
    assert case.bulk.worst[0].record.endswith(f"traces.json:{'b' * 32}")


def test_memory_url_reads_through_fsspec(tmp_path: Path) -> None:
    fsspec = pytest.importorskip("fsspec")
    fs = fsspec.filesystem("memory")
    fs.pipe("/bulk-test/logs/a.jsonl.gz", gzip.compress("".join(line(i) for i in range(100)).encode()))
    fs.pipe("/bulk-test/logs/b.jsonl.gz", gzip.compress("".join(line(i) for i in range(100, 150)).encode()))
    try:
        url = "memory://bulk-test/logs/*.jsonl.gz"
        (tmp_path / "prod.suite.yaml").write_text(SUITE.replace("logs/*.jsonl.gz", url))
        case = run_bulk(tmp_path)
    finally:
        fs.rm("/bulk-test", recursive=True)
    assert case.bulk.files == 2 and case.bulk.total == 150
    assert dict(case.bulk.by_check) == expected(range(150))


def test_library_evaluates_a_case_over_documents() -> None:
    expect = trajrun.Expectation(never=("refund_all",))
    summary = trajrun.evaluate_bulk(expect, (record(i)["messages"] for i in range(100)))
    assert (summary.total, summary.failed) == (100, 3) and [r.record for r in summary.worst] == ["0", "37", "74"]
    named = trajrun.evaluate_bulk(expect, map(record, range(100)), select="$.messages", id="$.run_id", pass_rate=0.9)
    assert named.ok and named.worst[1].record == "run-00037"


def test_steps_with_args_or_results_compare_them() -> None:
    """Records are read without decoding arguments or pairing results only when no step looks at them."""
    messages = [{"role": "assistant", "tool_calls": [{"id": "c0", "function": {"name": "a", "arguments": '{"q": 1}'}}]},
                {"role": "tool", "tool_call_id": "c0", "content": "ok"}]  # fmt: skip
    for step in (trajrun.Step("a", {"q": 1}), trajrun.Step("a", result="ok")):
        assert trajrun.evaluate_bulk(trajrun.Expectation(steps=(step,)), [messages]).ok


@pytest.mark.parametrize(("source", "extra", "message"), [
    ("{file: 'logs/*.jsonl.gz'}", "", "file is a glob ('logs/*.jsonl.gz'), which names many records"),
    ("{file: 's3://bucket/a.jsonl'}", "", "file is a URL ('s3://bucket/a.jsonl')"),
    ("{file: a.jsonl, id: $.run_id}", "", "id names each record of a bulk source"),
    ("{file: a.jsonl, each: line}", "", "each (what one record is)"),
    ("{file: a.jsonl, each: record, record: 3}", "", "record picks one line, but each reads every record"),
    ("{messages: [], each: record}", "", "each reads every record of files; it applies to a file source only"),
    ("{file: a.jsonl, each: record, id: '$.['}", "", "invalid JSONPath '$.['"),
    ("{file: a.jsonl, each: record}", "    judge: {rubric: ok}\n", "a bulk case (source with each) runs every record"),
], ids=["glob", "url", "id", "each", "record", "messages", "jsonpath", "judge"])
def test_bulk_keys_are_checked_when_loading(tmp_path: Path, source: str, extra: str, message: str) -> None:
    path = tmp_path / "bad.suite.yaml"
    path.write_text(f"cases:\n  - name: c\n    source: {source}\n    never: [x]\n{extra}")
    with pytest.raises(SuiteErrors) as caught:
        trajrun.load_suite(path)
    assert message in str(caught.value)


def test_cli_writes_records_junit_json_and_html(tmp_path: Path) -> None:
    write_logs(tmp_path, 100)
    result = invoke_in(tmp_path, "run", "prod.suite.yaml", "--records", "out/records.jsonl", "--junit-xml", "j.xml",
                       "--json", "r.json", "--html", "r.html")
    assert result.exit_code == 1, result.output
    assert "FAILED prod.suite.yaml::policies - 5 of 100 records failed: never (refund_all) 3, budget 2" in result.output
    assert len(read_lines(tmp_path / "out" / "records.jsonl")) == 100
    failure = ET.parse(tmp_path / "j.xml").find("testsuite/testcase/failure")
    assert failure is not None and failure.get("type") == "records" and "run-00074" in (failure.text or "")
    bulk = json.loads((tmp_path / "r.json").read_text())["suites"][0]["cases"][0]["bulk"]
    assert (bulk["records"], bulk["failed"], bulk["by_check"]) == (100, 5, {"never (refund_all)": 3, "budget": 2})
    assert bulk["worst"][0] == {"record": "run-00000", "outcome": "failed", "checks": ["never"],
                                "message": "1 check failed: never (refund_all)", "score": 1.0}
    assert "bulkEl" in (tmp_path / "r.html").read_text()


def test_junit_each_record_gives_a_testcase_per_record(tmp_path: Path) -> None:
    write_logs(tmp_path, 100)
    result = invoke_in(tmp_path, "run", "prod.suite.yaml", "-q", "--junit-each", "record", "--junit-xml", "j.xml")
    assert result.exit_code == 1
    suite = ET.parse(tmp_path / "j.xml").find("testsuite")
    assert suite is not None and (suite.get("tests"), suite.get("failures")) == ("100", "5")
    names = [case.get("name") for case in suite.iter("testcase")]
    assert names[:2] == ["policies [run-00000]", "policies [run-00001]"]
    assert suite.find("testcase/failure").get("type") == "never"  # type: ignore[union-attr]


def test_validate_reports_a_pattern_that_matches_nothing(tmp_path: Path) -> None:
    (tmp_path / "prod.suite.yaml").write_text(SUITE)
    result = invoke_in(tmp_path, "validate", "prod.suite.yaml")
    assert result.exit_code == 2 and "matches no file" in result.output
    write_logs(tmp_path, 10)
    assert invoke_in(tmp_path, "validate", "prod.suite.yaml").exit_code == 0


def test_scheduler_without_the_dask_engine_is_a_usage_error(tmp_path: Path) -> None:
    result = invoke_in(tmp_path, "run", "--scheduler", "tcp://127.0.0.1:1")
    assert result.exit_code == 2 and "add --engine dask" in result.output


class Terminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def test_console_counts_records_on_a_terminal_and_wipes_the_count() -> None:
    stream = Terminal()
    reporter = ConsoleReporter(stream, color=False)
    reporter.records_progress("prod.suite.yaml::policies", 12_345)
    reporter.records_progress("prod.suite.yaml::policies", 12_346)  # within a tenth of a second: not drawn
    reporter.records_progress("prod.suite.yaml::policies", 20_000, final=True)
    assert stream.getvalue() == "\r [prod.suite.yaml::policies: 12,345 records]\x1b[K\r\x1b[K"
    quiet = io.StringIO()
    ConsoleReporter(quiet).records_progress("x", 1)
    assert quiet.getvalue() == ""


def test_bulk_and_other_cases_keep_their_order_with_two_workers(tmp_path: Path) -> None:
    write_logs(tmp_path, 60)
    single = "  - name: one run\n    source: {messages: [{role: user, content: hi}]}\n    never: [refund_all]\n"
    (tmp_path / "prod.suite.yaml").write_text(SUITE.replace("cases:\n", "cases:\n" + single) + single.replace("one", "two"))
    runs = [run_paths([tmp_path], RunOptions(jobs=jobs, root=tmp_path)) for jobs in (1, 2)]
    seen = [[(c.name, c.outcome, c.message) for c in run.cases] for run in runs]
    assert seen[0] == seen[1]
    assert [name for name, _, _ in seen[0]] == ["one run", "policies", "two run"]
    assert seen[1][1][2] == "3 of 60 records failed: never (refund_all) 2, budget 1"
