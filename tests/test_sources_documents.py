"""Loading source documents: JSON, JSONL records, YAML, gzip, JSONPath select, and every bad-input message."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from trajrun.errors import SourceError
from trajrun.sources import apply_select, load_document, load_trajectory
from trajrun.sources.documents import parse_jsonpath

SAMPLES = Path(__file__).parent / "data" / "samples"
RETRY = SAMPLES / "openai_chat" / "pydantic_ai_cassette_tool_retry.json"


def _message(path: Path, **options: object) -> str:
    """The SourceError text load_document raises for ``path``."""
    with pytest.raises(SourceError) as info:
        load_document(path, **options)  # type: ignore[arg-type]
    return str(info.value)


def _jsonl(tmp_path: Path, lines: list[str], name: str = "runs.jsonl") -> Path:
    """Write JSONL lines (gzipped when the name ends in .gz)."""
    path = tmp_path / name
    text = "".join(line + "\n" for line in lines)
    if name.endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)
    return path


def test_missing_file(tmp_path: Path) -> None:
    """A missing file names the path and says where relative paths resolve."""
    path = tmp_path / "runs" / "paris.json"
    assert _message(path) == (
        f"{path}: file not found; expected a .json, .jsonl or .yaml file — check the path "
        "(relative paths resolve against the suite's folder)"
    )


def test_invalid_json_names_line_and_column(tmp_path: Path) -> None:
    """Invalid JSON: the line, the column, what the parser expected and what it found."""
    path = tmp_path / "bad.json"
    path.write_text('{"a": 1,\n  "b" 2}\n')
    assert _message(path) == (
        f"{path}: invalid JSON at line 2, column 7: Expecting ':' delimiter, found '2}}'; check the file is "
        "valid JSON (a trailing comma or a missing quote is the usual cause)"
    )


def test_several_json_documents_suggest_jsonl(tmp_path: Path) -> None:
    """Two JSON documents in a .json file point at the .jsonl suffix."""
    path = tmp_path / "two.json"
    path.write_text('{"a": 1}\n{"b": 2}\n')
    assert _message(path) == (
        f"{path}: invalid JSON at line 2, column 1: Extra data, found '{{\"b\": 2}}'; for one JSON document per "
        "line, name the file .jsonl"
    )


def test_invalid_yaml_names_line_and_column(tmp_path: Path) -> None:
    """Invalid YAML: 1-based line and column, the problem and its context."""
    path = tmp_path / "bad.yaml"
    path.write_text("a: [1, 2\nb: c\n")
    assert _message(path) == (
        f"{path}: invalid YAML at line 2, column 2: while parsing a flow sequence did not find expected ',' or ']'; "
        "check the indentation and quoting there"
    )


def test_yaml_is_loaded_safely(tmp_path: Path) -> None:
    """A python object tag is refused before anything is constructed."""
    path = tmp_path / "evil.yml"
    path.write_text("!!python/object/apply:os.system ['true']\n")
    assert _message(path) == (
        f"{path}: YAML at line 1, column 1: tag !!python/object/apply:os.system is not allowed: trajrun reads plain "
        "YAML values only (strings, numbers, true/false, null, lists, maps); remove the tag"
    )


def test_unsupported_suffix(tmp_path: Path) -> None:
    """A file type trajrun does not read is named, with the ones it does."""
    path = tmp_path / "run.txt"
    path.write_text("[]")
    assert _message(path) == (
        f"{path}: unsupported file type '.txt'; expected .json, .jsonl, .yaml or .yml (optionally .gz) — "
        "rename the file"
    )


def test_folder_named_like_a_file(tmp_path: Path) -> None:
    """A folder named ``x.json`` is said to be a folder, not a missing file."""
    path = tmp_path / "x.json"
    path.mkdir()
    assert _message(path) == (
        f"{path}: a folder, not a file; expected a .json, .jsonl or .yaml file — point the source at a file inside it"
    )


def test_bad_jsonpath_shows_the_parser_message() -> None:
    """An unparsable select names the expression and jsonpath-ng's message."""
    assert _message(RETRY, select="$.interactions[") == (
        f"{RETRY}: invalid JSONPath '$.interactions[' in select: Parse error near the end of string!; expected a "
        "JSONPath such as '$.messages' or '$.runs[0].messages'"
    )


def test_select_matching_nothing() -> None:
    """A select with no match says what the document's top level holds."""
    assert _message(RETRY, select="$.runs[0]") == (
        f"{RETRY}: select '$.runs[0]' matched nothing in a mapping with keys _source, interactions; check the "
        "path, for example with `trajrun show SOURCE --select PATH`"
    )


def test_select_one_match_is_the_node_several_a_list() -> None:
    """One match gives that node; several give the list of them, in document order."""
    assert load_document(RETRY, select="$.interactions[0].response_body.usage.total_tokens") == 64
    assert load_document(RETRY, select="$.interactions[*].response_body.usage.total_tokens") == [64, 104, 126]


def test_select_filter_expression() -> None:
    """The extended parser's filters work, and a compiled path is cached."""
    select = "$.interactions[?(@.response_body.usage.total_tokens > 100)].response_body.id"
    parse_jsonpath.cache_clear()
    for _ in range(3):
        doc = load_document(RETRY, select=select)
    assert doc == ["chatcmpl-C9gCF2OpzQojDQTsp31IsAagNqEC6", "chatcmpl-C9gCGg6DDdUlo7CuS04nK9k6dnkZG"]
    assert parse_jsonpath.cache_info().hits == 2


def test_apply_select_on_inline_messages() -> None:
    """apply_select works on a document already in memory, naming its origin on failure."""
    doc = {"runs": [{"id": "r42", "messages": [{"role": "user", "content": "hi"}]}]}
    assert apply_select(doc, '$.runs[?(@.id == "r42")].messages', "inline") == [{"role": "user", "content": "hi"}]
    with pytest.raises(SourceError, match=r"^inline: select '\$.x' matched nothing in a mapping with keys runs;"):
        apply_select(doc, "$.x", "inline")


def test_jsonl_without_record_is_the_list_of_records(tmp_path: Path) -> None:
    """Every non-blank line is a record."""
    path = _jsonl(tmp_path, ['{"n": 1}', "", '{"n": 2}'])
    assert load_document(path) == [{"n": 1}, {"n": 2}]


def test_jsonl_record_then_select(tmp_path: Path) -> None:
    """``record`` picks the physical line first; ``select`` applies to that record."""
    path = _jsonl(tmp_path, ['{"messages": [1]}', '{"messages": [2, 3]}'])
    assert load_document(path, record=2, select="$.messages") == [2, 3]


def test_record_past_the_end(tmp_path: Path) -> None:
    """A record beyond the last line says how many records the file has."""
    path = _jsonl(tmp_path, ['{"n": 1}', '{"n": 2}', '{"n": 3}'])
    assert _message(path, record=7) == f"{path}: record 7 is past the end: the file has 3 records (one per line)"


def test_record_on_a_blank_line(tmp_path: Path) -> None:
    """A blank physical line is no record."""
    path = _jsonl(tmp_path, ['{"n": 1}', "", '{"n": 2}'])
    assert _message(path, record=2) == f"{path}: record 2 is a blank line; expected a JSON record on that line"


def test_record_needs_jsonl() -> None:
    """``record`` on a .json file points at select instead."""
    assert _message(RETRY, record=3) == (
        f"{RETRY}: 'record:' needs a .jsonl file, found a .json file; use select: '$[2]' to pick an item of a list"
    )


def test_record_is_read_line_by_line(tmp_path: Path) -> None:
    """A record near the start of a multi-MB file reads although the file's tail is not JSON."""
    record = json.dumps([{"role": "assistant", "content": "x" * 1000}])
    path = _jsonl(tmp_path, [record] * 3 + ["{not json" + " " * 4_000_000])
    assert path.stat().st_size > 4_000_000
    assert load_trajectory(path, record=2).answer == "x" * 1000
    assert _message(path, record=4).startswith(f"{path}: invalid JSON at line 4, column 2: Expecting property name")


def test_gzip_jsonl_record(tmp_path: Path) -> None:
    """``.jsonl.gz`` decompresses on the fly, record by record."""
    path = _jsonl(tmp_path, ['{"n": 1}', '{"n": 2}'], name="runs.jsonl.gz")
    assert load_document(path, record=2) == {"n": 2}


def test_gzip_json(tmp_path: Path) -> None:
    """``.json.gz`` reads like the plain file."""
    path = tmp_path / "run.json.gz"
    path.write_bytes(gzip.compress(RETRY.read_bytes()))
    assert load_document(path, select="$.interactions[0].response_body.id") == "chatcmpl-C9gCExiXILzHBQ4ZuERdiURkHUZZM"


def test_gzip_suffix_on_plain_bytes(tmp_path: Path) -> None:
    """A .gz file that is not gzip says it expected gzip-compressed text."""
    path = tmp_path / "run.json.gz"
    path.write_text("[]")
    assert _message(path) == (
        f"{path}: cannot read the file: Not a gzipped file (b'[]'); expected gzip-compressed UTF-8 text"
    )


def test_plain_json_read_at_its_size_keeps_the_limit_and_the_encoding(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A plain .json file is read in one call: past TRAJRUN_MAX_SOURCE_BYTES and not UTF-8 still say so."""
    path = tmp_path / "run.json"
    path.write_text(json.dumps([{"role": "user", "content": "x" * 2000}]))
    monkeypatch.setenv("TRAJRUN_MAX_SOURCE_BYTES", "1000")
    assert "the file holds more than 1,000 bytes" in _message(path)
    monkeypatch.setenv("TRAJRUN_MAX_SOURCE_BYTES", "3000")
    assert load_document(path)[0]["content"] == "x" * 2000
    path.write_bytes(b'[{"content": "caf\xe9"}]')
    assert _message(path).endswith("expected UTF-8 text")
    assert "cannot read the file: 'utf-8' codec can't decode byte 0xe9" in _message(path)


@pytest.mark.skipif(not Path("/proc/self/cmdline").is_file(), reason="needs Linux's /proc")
def test_json_file_that_reports_no_size_is_read_whole(tmp_path: Path) -> None:
    """A file whose size says 0 but holds bytes (a /proc file behind a .json name) is read to its end, not as empty."""
    link = tmp_path / "proc.json"
    link.symlink_to("/proc/self/cmdline")
    message = _message(link)
    assert "invalid JSON at line 1, column 1" in message and "found the end of the text" not in message


def test_yaml_document(tmp_path: Path) -> None:
    """A YAML source reads as its data."""
    path = tmp_path / "run.yaml"
    path.write_text("- role: assistant\n  content: hello\n")
    assert load_document(path) == [{"role": "assistant", "content": "hello"}]
