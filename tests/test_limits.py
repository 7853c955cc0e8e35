"""Bounds on hostile input: regexes, templates, parametrize, sources and ``-k`` stop with a clean error, quickly.

Each test here hung, ate gigabytes or raised a traceback before the bounds existed.
"""

from __future__ import annotations

import gzip
import json
import time
import tracemalloc
from pathlib import Path

import pytest
from click.testing import CliRunner
from trajrun.cli import main
from trajrun.errors import CheckError, SourceError, SpecError, SuiteErrors
from trajrun.match import expressions
from trajrun.match.matchers import compile_value
from trajrun.match.values import compare_value
from trajrun.run.runner import RunOptions, run_paths
from trajrun.run.selection import ExpressionError, keyword_matcher, marker_matcher
from trajrun.sources import apply_select, load_document, load_trajectory
from trajrun.suites.load import load_suite
from trajrun.suites.templating import MAX_CASES, expand_parametrize, parse_var, render_string

RUNAWAY = "(a|aa)+$"  # backtracks exponentially even in the regex package
TEXT = "a" * 60 + "b"
OPENAI = [
    {"role": "user", "content": "hi"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "search", "arguments": json.dumps({"q": TEXT})}},
    ]},
    {"role": "tool", "tool_call_id": "c1", "content": "ok"},
    {"role": "assistant", "content": TEXT},
]  # fmt: skip


@pytest.fixture
def quick_regex(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 0.1 s regex limit, so a runaway pattern stops fast."""
    monkeypatch.setenv("TRAJRUN_REGEX_TIMEOUT", "0.1")


class Timer:
    """Wall time of a block, to assert a bound is hit quickly."""

    def __enter__(self) -> Timer:
        self.started = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self.started


def _suite(tmp_path: Path, body: str, source: object = OPENAI) -> Path:
    """A suite file beside a ``run.json`` source holding ``source``."""
    (tmp_path / "run.json").write_text(json.dumps(source), encoding="utf-8")
    path = tmp_path / "t.suite.yaml"
    path.write_text(body, encoding="utf-8")
    return path


# -- regular expressions ---------------------------------------------------------------------


def test_nested_repeat_regex_no_longer_hangs(quick_regex: None) -> None:
    """`(a+)+$` answers at once where Python's re takes 2^40 steps, and stops at the limit on a long string."""
    matcher = compile_value({"$regex": "(a+)+$"})
    with Timer() as timer:
        assert not matcher.test("a" * 40 + "b")
    assert timer.seconds < 1
    with Timer() as timer, pytest.raises(CheckError, match="ran longer than the 0.1 s limit on a string of 20,001"):
        matcher.test("a" * 20_000 + "b")
    assert timer.seconds < 2


def test_runaway_regex_is_a_check_error_naming_pattern_and_limit(quick_regex: None) -> None:
    """A pattern still slow for the regex engine stops at the limit with a CheckError, not a hang."""
    matcher = compile_value({"$regex": RUNAWAY})
    with Timer() as timer, pytest.raises(CheckError) as info:
        matcher.test(TEXT)
    assert timer.seconds < 2
    limit = "ran longer than the 0.1 s limit on a string of 61 characters;"
    assert str(info.value).startswith(f"$regex {RUNAWAY!r} {limit}")
    assert "TRAJRUN_REGEX_TIMEOUT" in str(info.value)


def test_runaway_regex_in_a_suite_is_an_error_of_that_case(tmp_path: Path, quick_regex: None) -> None:
    """In a run, the runaway match makes its case an error (steps and answer alike); other cases still run."""
    path = _suite(tmp_path, f"""
cases:
  - name: runaway args
    source: run.json
    steps: [{{search: {{q: {{$regex: '{RUNAWAY}'}}}}}}]
  - name: runaway answer
    source: run.json
    answer: {{$regex: '{RUNAWAY}'}}
  - name: fine
    source: run.json
    steps: [{{search: {{q: {{$regex: 'a+b'}}}}}}]
""")
    result = run_paths([path], RunOptions(root=tmp_path))
    outcomes = {c.name: (c.outcome, c.message) for c in result.cases}
    assert outcomes["fine"][0] == "passed"
    for name in ("runaway args", "runaway answer"):
        outcome, message = outcomes[name]
        assert outcome == "error" and f"$regex {RUNAWAY!r} ran longer than the 0.1 s limit" in message


def test_regex_that_unrolls_too_far_is_refused_at_load() -> None:
    """Counted repeats that the regex engine would unroll to a million items are a SpecError, not a slow compile."""
    with Timer() as timer, pytest.raises(SpecError, match=r"unroll to about 1,00\d,\d+ items, above the limit of 100,"):
        compile_value({"$regex": "(?:a{1000}){1000}"})
    assert timer.seconds < 1
    assert compile_value({"$regex": "a{3}(b{2}){5}"}).test("aaabbbbbbbbbb")


def test_regex_keeps_python_syntax_and_messages() -> None:
    """Patterns are still checked by Python's re: its error text, its syntax (no regex-only escapes)."""
    with pytest.raises(SpecError, match="missing \\), unterminated subpattern"):
        compile_value({"$regex": "("})
    with pytest.raises(SpecError, match="bad escape"):
        compile_value({"$regex": r"\p{L}"})
    assert compile_value({"$regex": r"(?P<w>\w+) (?P=w)"}).test("hello hello")


def test_malformed_regex_timeout_variable_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bad TRAJRUN_REGEX_TIMEOUT is an error naming the variable, not a crash or a silent default."""
    monkeypatch.setenv("TRAJRUN_REGEX_TIMEOUT", "soon")
    with pytest.raises(SourceError, match="TRAJRUN_REGEX_TIMEOUT must be a number of seconds above 0, found 'soon'"):
        compile_value({"$regex": "a"}).test("a")


def test_select_regex_filter_is_bounded(quick_regex: None) -> None:
    """`=~` inside a JSONPath filter runs under the same limit; the error names the select and the pattern."""
    doc = {"items": [{"name": TEXT}, {"name": "x"}]}
    assert apply_select(doc, "$.items[?(@.name =~ 'x')].name", "doc") == "x"
    with Timer() as timer, pytest.raises(SourceError) as info:
        apply_select(doc, f"$.items[?(@.name =~ '{RUNAWAY}')]", "doc")
    assert timer.seconds < 2
    assert str(info.value).startswith(f"doc: select \"$.items[?(@.name =~ '{RUNAWAY}')]\" stopped: regex {RUNAWAY!r} "
                                      "ran longer than the 0.1 s limit")


def test_select_sub_is_bounded_and_skips_non_strings(quick_regex: None) -> None:
    """`sub(/re/, x)` runs under the limit too, and a number is no longer a TypeError."""
    doc = {"a": TEXT, "n": 3}
    assert apply_select(doc, "$.a.`sub(/b$/, c)`", "doc") == "a" * 60 + "c"
    with pytest.raises(SourceError, match="matched nothing"):
        apply_select(doc, "$.n.`sub(/3/, c)`", "doc")
    with pytest.raises(SourceError, match=r"stopped: regex '\(a\|aa\)\+c' ran longer"):
        apply_select(doc, "$.a.`sub(/(a|aa)+c/, d)`", "doc")


def test_field_jsonpath_regex_is_bounded(tmp_path: Path, quick_regex: None) -> None:
    """`=~` in a tool rule's JSONPath field runs under the same limit as in select: that case errs, the others run."""
    path = _suite(tmp_path, f"""
cases:
  - name: runaway field
    source: run.json
    tools: {{search: {{fields: {{"$.items[?(@.q =~ '{RUNAWAY}')].q": exact}}}}}}
    steps: [{{search: {{items: [{{q: x}}]}}}}]
  - name: fine field
    source: run.json
    tools: {{search: {{fields: {{"$.items[?(@.q =~ 'a+b')].q": ignore}}}}}}
    steps: [{{search: {{items: [{{q: x}}]}}}}]
""", {"tool_calls": [{"name": "search", "args": {"items": [{"q": TEXT}]}}]})
    with Timer() as timer:
        result = run_paths([path], RunOptions(root=tmp_path))
    assert timer.seconds < 5
    outcomes = {c.name: (c.outcome, c.message) for c in result.cases}
    assert outcomes["runaway field"] == ("error", f"steps: field \"$.items[?(@.q =~ '{RUNAWAY}')].q\" stopped: regex "
                                         f"{RUNAWAY!r} ran longer than the 0.1 s limit on a string of 61 characters; "
                                         "nested repeats like (a+)+ backtrack exponentially — simplify the pattern, "
                                         "or raise TRAJRUN_REGEX_TIMEOUT")
    assert outcomes["fine field"] == ("passed", "")  # the field the filter finds is ignored: only it differs


def test_bad_filter_regex_in_a_jsonpath_is_a_load_error(tmp_path: Path) -> None:
    """A `=~` pattern that does not compile, in a field JSONPath or a select, is reported at load with its key path."""
    path = _suite(tmp_path, """
cases:
  - name: bad regex
    source: {file: run.json, select: "$[?(@.role =~ '[')]"}
    tools: {search: {fields: {"$.a[?(@.b =~ '(')]": exact}}}
    steps: [search]
""")
    with pytest.raises(SuiteErrors) as info:
        load_suite(path)
    assert [str(error) for error in info.value.errors] == [
        f"{path}:4:38: cases[0].source.select: invalid JSONPath \"$[?(@.role =~ '[')]\": regex '[' does not compile: "
        "unterminated character set at position 0",
        f"{path}:5:31: cases[0].tools.search.fields[\"$.a[?(@.b =~ '(')]\"]: invalid JSONPath \"$.a[?(@.b =~ '(')]\": "
        "regex '(' does not compile: missing ), unterminated subpattern at position 0",
    ]


def test_select_bad_filter_regex_is_a_source_error() -> None:
    """A filter regex that does not compile is reported with the select, not as a traceback at match time."""
    with pytest.raises(SourceError, match=r"invalid JSONPath .* in select: regex '\(' does not compile"):
        apply_select({"a": [1]}, "$.a[?(@.x =~ '(')]", "doc")


def test_select_sorting_mixed_types_is_a_clean_error() -> None:
    """Sorting strings and numbers together names the select and the problem."""
    doc = {"items": [{"name": "b"}, {"name": 3}]}
    with pytest.raises(SourceError, match=r"select '\$.items\[/name\]' cannot be applied to a mapping with keys items: "
                                          "TypeError: '<' not supported"):
        apply_select(doc, "$.items[/name]", "doc")


def test_select_repeat_is_capped_like_a_source(monkeypatch: pytest.MonkeyPatch) -> None:
    """`*` on a string in a filter cannot build more than TRAJRUN_MAX_SOURCE_BYTES."""
    monkeypatch.setenv("TRAJRUN_MAX_SOURCE_BYTES", "1000")
    assert apply_select({"a": "xy"}, "$.a * 3", "doc") == "xyxyxy"
    with pytest.raises(SourceError, match="repeating a value of 2 characters or items 1,000 times is above the limit"):
        apply_select({"a": "xy"}, "$.a * 1000", "doc")


# -- templates and $expr ---------------------------------------------------------------------

BOMBS = [
    ("{{ 10 ** (10 ** 9) }}", "this power would have about 1,000,000,000 digits; templates compute integers of"),
    ("{{ (10 ** 3000) * (10 ** 3000) }}", "this product would have about 6,000 digits"),
    ("{{ lipsum(10**6) }}", "lipsum(1000000, max=100) would write up to 100,000,000 words; templates may use at most"),
    ("{{ lipsum(1, max=10**9) }}", "would write up to 1,000,000,000 words"),
    ("{{ 'a' * 10**9 }}", "repeating a value 1,000,000,000 times would hold about 1,000,000,000 characters or items, "
                          "past the limit of 1,000,000"),
    ("{{ [1, 2] * 10**9 }}", "repeating a value 1,000,000,000 times"),
    ("{{ range(10**10) | list }}", "range(10000000000) would give more than 100,000 numbers"),
    ("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
     "more than 100,000 loop iterations, calls and operations"),
    ("{% set ns = namespace(a='x') %}{% for i in range(64) %}{% set ns.a = ns.a ~ ns.a %}{% endfor %}",
     "this ~ join would hold about 1,048,576 characters"),
    ("{% set ns = namespace(a='x') %}{% for i in range(64) %}{% set ns.a = ns.a + ns.a %}{% endfor %}",
     "this sum would hold about 1,048,576 characters"),
    ("{% for i in range(100000) %}{{ 'y' * 100 }}{% endfor %}", "the rendered text would hold about 1,000,100"),
    ("{{ 'a' | center(10**9) }}", "'center' would hold about 1,000,000,000"),
    ("{{ 'a'.ljust(10**9) }}", "'ljust' would hold about 1,000,000,000"),
    ("{{ '{:>1000000000}'.format(1) }}", "this formatted string would hold about 1,000,000,0"),
    ("{{ '{:{}}'.format(1, 10**9) }}", "this formatted string would hold about 1,000,000,0"),
    ("{{ '%1000000000d' % 1 }}", "this formatted string would hold about 1,000,000,0"),
    ("{{ '%*d' | format(10**9, 1) }}", "this formatted string would hold about 1,000,000,0"),
    ("{{ 'x' | replace('', 'y' * 1000) | replace('', 'y' * 1000) }}", "'replace' would hold about 2,004,001"),
    ("{{ (['a' * 100] * 1000) | join('b' * 1000) }}", "'join' would hold about 1,099,000"),
    ("{{ range(1000) | map('string') | join('b' * 10000) }}", "'join' would hold about 9,992,890"),
    ("{{ ['a' * 100000] * 100 }}", "the result would hold about 1,000,122"),
    ("{{ (['a' * 100000] * 100) | string }}", "the input of 'string' would hold about 1,000,122"),
    ("{{ dict.fromkeys(range(100000), 'x' * 100) | tojson }}", "the input of 'tojson' would hold about"),
    ("{{ 'ab' | indent(10**9) }}", "'indent' would hold about 1,000,000,002"),
    ("{{ [1] | batch(10**9, 'x') | list }}", "'batch' would hold about 1,000,000,000"),
    ("{{ 'a b' | wordwrap(1, wrapstring='x' * 1000000) }}", "'wordwrap' would hold about"),
    ("{{ {'a': 1} | tojson(indent=10**9) }}", "'tojson' would hold about"),
    ("{{ ('ab' * 100).translate({97: 'x' * 100000}) }}", "'translate' would hold about 20,000,000"),
]


@pytest.mark.parametrize(("template", "message"), BOMBS, ids=[b[0][:40] for b in BOMBS])
def test_template_bomb_is_a_spec_error(template: str, message: str) -> None:
    """Each bomb stops quickly with a SpecError that names the bound, never a hang or a MemoryError."""
    with Timer() as timer, pytest.raises(SpecError) as info:
        render_string(template, {})
    assert timer.seconds < 2
    assert info.value.message.startswith("template ") and " stopped: " in info.value.message
    assert message in info.value.message


def test_template_time_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Work that no other bound catches (2^60 macro calls) stops at the time limit."""
    monkeypatch.setattr(expressions, "TIME_LIMIT", 0.3)
    monkeypatch.setattr(expressions, "MAX_STEPS", 10**9)
    macro = "{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(60) }}"
    with Timer() as timer, pytest.raises(SpecError, match="stopped: ran longer than 0.3 s; simplify it"):
        render_string(macro, {})
    assert timer.seconds < 2


def test_ordinary_templates_still_render() -> None:
    """Loops, loop variables, recursion, formatting, filters and native values work as before."""
    names = {"city": "Paris", "cities": ["Paris", "Tokyo"], "n": 3}
    text = "{{ cities | join(', ') }} x{{ n * 2 }} {{ '%s-%02d' % (city, n) }}"
    assert render_string(text, names) == "Paris, Tokyo x6 Paris-03"
    loop = "{% for c in cities %}{{ loop.index }}/{{ loop.length }}:{{ c }};{% else %}-{% endfor %}"
    assert render_string(loop, names) == "1/2:Paris;2/2:Tokyo;"
    assert render_string("{% for c in cities if c != 'Paris' recursive %}{{ c | upper }}{% endfor %}", names) == "TOKYO"
    assert render_string("{{ '{}:{x}'.format(1, x=2) }} {{ 'ab' * 2 }} {{ 2 ** 10 }}", names) == "1:2 abab 1024"
    assert render_string("{{ range(3) | list }}", names) == [0, 1, 2]
    assert render_string("{{ lipsum(2, html=False, min=3, max=5) | wordcount < 20 }}", names) is True


def test_large_variables_may_be_formatted_but_not_multiplied() -> None:
    """A variable above the 1,000,000 limit may be written out; doubling it twice is still refused."""
    big = {"log": "x" * 1_500_000}
    assert len(render_string("<{{ log }}>", big)) == 1_500_002
    assert render_string("{{ log | upper | length }}", big) == 1_500_000
    with pytest.raises(SpecError, match="past the limit of 7,000,0"):
        render_string("{{ log ~ log ~ log ~ log ~ log }}", big)


def test_expr_bomb_is_a_check_error() -> None:
    """A $expr that goes past a bound cannot be judged: a CheckError naming the bound."""
    matcher = compile_value({"$expr": "(value * 10 ** 9) | length > 0"})
    with pytest.raises(CheckError, match=r"^\$expr .* stopped on \"ab\": repeating a value 1,000,000,000 times"):
        matcher.test("ab")
    assert compile_value({"$expr": "value | tojson | length > 10"}).test({"k": "v" * 2_000_000})


def test_expr_nested_too_deeply_is_a_load_error() -> None:
    """A $expr nesting thousands of parentheses is refused when compiled, not with a RecursionError."""
    with pytest.raises(SpecError, match="does not parse: it nests too deeply to compile; split it up"):
        compile_value({"$expr": "(" * 3000 + "value" + ")" * 3000})


def test_deeply_nested_template_is_a_spec_error() -> None:
    """Thousands of parentheses, or a macro calling itself, are a SpecError (long templates are abbreviated)."""
    with pytest.raises(SpecError, match=r"^template '\{\{ \(\(\(.*…'.*' \(6,007 characters\) nests or recurses too"):
        render_string("{{ " + "(" * 3000 + "1" + ")" * 3000 + " }}", {})
    with pytest.raises(SpecError, match="nests or recurses too deeply"):
        render_string("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", {})


# -- parametrize -----------------------------------------------------------------------------


def test_parametrize_product_is_counted_before_building() -> None:
    """4 variables of 100 values (10^8 cases) are refused at once, naming the count and the limit."""
    spec = {name: list(range(100)) for name in "abcd"}
    with Timer() as timer, pytest.raises(SpecError) as info:
        expand_parametrize(spec)
    assert timer.seconds < 0.5
    assert info.value.message == ("parametrize would make 100,000,000 cases (100 × 100 × 100 × 100), above the limit "
                                  "of 100,000; split it into several cases or suite files")
    assert len(expand_parametrize({"a": list(range(1000)), "b": list(range(100))})) == MAX_CASES


def test_parametrize_list_is_counted_too() -> None:
    """A list of more than 100,000 variable sets is refused the same way."""
    with pytest.raises(SpecError, match=r"would make 100,001 cases \(100,001 entries\)"):
        expand_parametrize([{"a": 1}] * (MAX_CASES + 1))


def test_cases_of_one_suite_file_are_counted_before_building(tmp_path: Path) -> None:
    """Parametrized cases each under the limit, together over it: one load error with the count, nothing built."""
    grid = "{a: [%s], b: [%s]}" % (", ".join(map(str, range(200))), ", ".join(map(str, range(200))))
    cases = "".join(f"  - {{name: c{i}, source: run.json, steps: [search], parametrize: {grid}}}\n" for i in range(3))
    path = _suite(tmp_path, "cases:\n" + cases)
    with Timer() as timer, pytest.raises(SuiteErrors) as info:
        load_suite(path)
    assert timer.seconds < 1
    assert [str(error) for error in info.value.errors] == [
        f"{path}:2:3: cases: parametrize would make 120,000 cases in this file, above the limit of 100,000 per "
        "suite file (cases written out are not counted); split the parametrized cases into several suite files"
    ]
    fits = _suite(tmp_path, "cases:\n" + cases.replace("range", "").replace(grid, "{a: [1, 2], b: [3, 4]}"))
    assert len(load_suite(fits).cases) == 12


# -- sources ---------------------------------------------------------------------------------


def test_deep_json_source_is_a_depth_error_naming_the_file(tmp_path: Path) -> None:
    """10,000 `[` raise no RecursionError: a SourceError names the file, line and column."""
    path = tmp_path / "deep.json"
    path.write_text("[" * 10_000 + "]" * 10_000)
    with pytest.raises(SourceError) as info:
        load_document(path)
    assert str(info.value) == (f"{path}: invalid JSON at line 1, column 501: lists and maps nest more than 500 levels "
                               "deep there, too deep to decode; flatten the document")
    record = tmp_path / "deep.jsonl"
    record.write_text('{"a": 1}\n' + "{\"a\": " * 5_000 + "1" + "}" * 5_000 + "\n")
    with pytest.raises(SourceError, match="invalid JSON at line 2, column 3001: lists and maps nest more than 500"):
        load_document(record, record=2)


def test_deep_json_source_makes_a_case_error_and_the_run_goes_on(tmp_path: Path) -> None:
    """In a run, the deep source is an error of its case; the run finishes."""
    path = _suite(tmp_path, "cases: [{name: deep, source: run.json, steps: [search]}]\n", source=None)
    (tmp_path / "run.json").write_text("[" * 10_000)
    result = run_paths([path], RunOptions(root=tmp_path))
    assert [(c.outcome, "too deep to decode" in c.message) for c in result.cases] == [("error", True)]


def _gzip_bomb(path: Path, megabytes: int) -> Path:
    """A small .json.gz that inflates to ``megabytes`` MB of spaces inside a list."""
    with gzip.open(path, "wb", compresslevel=9) as out:
        out.write(b"[")
        for _ in range(megabytes):
            out.write(b" " * (1 << 20))
        out.write(b"]")
    return path


def test_gzip_bomb_stops_at_the_size_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Decompression stops at TRAJRUN_MAX_SOURCE_BYTES with an error saying how to raise it."""
    bomb = _gzip_bomb(tmp_path / "bomb.json.gz", 64)
    assert bomb.stat().st_size < 200_000
    monkeypatch.setenv("TRAJRUN_MAX_SOURCE_BYTES", str(1 << 20))
    with Timer() as timer, pytest.raises(SourceError) as info:
        load_document(bomb)
    assert timer.seconds < 2
    assert str(info.value) == (f"{bomb}: the file decompresses to more than 1,048,576 bytes, the limit on one source "
                               "document; set TRAJRUN_MAX_SOURCE_BYTES to a larger number of bytes to read it")
    monkeypatch.setenv("TRAJRUN_MAX_SOURCE_BYTES", str(100 << 20))
    assert load_document(bomb) == []


def test_size_limit_applies_per_line_when_streaming_a_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With `record: N` only that line counts (a long log still streams); reading all lines counts them all."""
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(json.dumps({"n": i, "pad": "x" * 100}) for i in range(50)) + "\n")
    monkeypatch.setenv("TRAJRUN_MAX_SOURCE_BYTES", "1000")
    assert load_document(path, record=50)["n"] == 49
    with pytest.raises(SourceError, match="the file holds more than 1,000 bytes"):
        load_document(path)
    path.write_text('{"n": 1}\n' + json.dumps({"pad": "x" * 5000}) + "\n")
    assert load_document(path, record=1) == {"n": 1}
    with pytest.raises(SourceError, match="line 2 holds more than 1,000 bytes, the limit on one source document"):
        load_document(path, record=2)


@pytest.mark.parametrize("name", ["run.json", "run.json.gz"])
def test_a_small_source_is_read_without_a_buffer_of_the_whole_limit(tmp_path: Path, name: str) -> None:
    """Reading asked for `limit + 1` bytes at once, which allocated 1 GiB for every source file, however small."""
    text = json.dumps([{"role": "user", "content": "x" * 5000}])
    path = tmp_path / name
    path.write_bytes(gzip.compress(text.encode()) if name.endswith(".gz") else text.encode())
    tracemalloc.start()
    try:
        assert load_document(path) == json.loads(text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20


@pytest.mark.parametrize("name", ["run.json", "run.json.gz"])
def test_a_source_of_exactly_the_limit_reads_and_one_byte_more_does_not(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """The limit counts bytes read (decompressed for gzip): equal passes, one past is the size error."""
    monkeypatch.setenv("TRAJRUN_MAX_SOURCE_BYTES", "3000000")
    for size, fits in ((3_000_000, True), (3_000_001, False)):
        text = "[" + " " * (size - 2) + "]"
        path = tmp_path / name
        path.write_bytes(gzip.compress(text.encode()) if name.endswith(".gz") else text.encode())
        if fits:
            assert load_document(path) == []
        else:
            with pytest.raises(SourceError, match="more than 3,000,000 bytes"):
                load_document(path)


def test_malformed_size_limit_variable_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """TRAJRUN_MAX_SOURCE_BYTES must be a whole number above 0."""
    path = tmp_path / "a.json"
    path.write_text("[]")
    for bad in ("1e9", "-5", "lots"):
        monkeypatch.setenv("TRAJRUN_MAX_SOURCE_BYTES", bad)
        with pytest.raises(SourceError, match=f"must be a whole number of bytes above 0, found '{bad}'; fix or unset"):
            load_document(path)


def test_corrupt_deflate_stream_is_a_clean_error(tmp_path: Path) -> None:
    """A flipped byte in the compressed data is a SourceError (zlib.error was a traceback)."""
    data = bytearray(gzip.compress(json.dumps({"a": list(range(500))}).encode()))
    data[30] ^= 0xFF
    path = tmp_path / "bad.json.gz"
    path.write_bytes(bytes(data))
    with pytest.raises(SourceError, match=r"cannot read the file: (Error -3 while decompressing|CRC check failed).*"
                                          "expected gzip-compressed UTF-8 text"):
        load_document(path)


@pytest.mark.parametrize(("name", "text", "where"), [
    ("big.json", '{"a": [1, ' + "7" * 5000 + "]}", "invalid JSON at line 1, column 11"),
    ("big.jsonl", '{"a": 1}\n{"a": -' + "7" * 5000 + "}\n", "invalid JSON at line 2, column 7"),
    ("big.yaml", "a:\n  - 1\n  - " + "7" * 5000 + "\n", "YAML at line 3, column 5"),
])
def test_huge_integers_are_refused_alike_in_json_and_yaml(tmp_path: Path, name: str, text: str, where: str) -> None:
    """An integer past Python's 4,300-digit limit is refused with its position, the same words in JSON and YAML."""
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(SourceError) as info:
        load_document(path, record=2 if name.endswith("jsonl") else None)
    assert str(info.value) == (f"{path}: {where}: an integer of 5,000 digits (77777777…77777777); trajrun reads "
                               "integers of at most 4,300 digits (Python's limit) — quote it to keep it as a string")


def test_huge_hex_integer_and_var_are_refused(tmp_path: Path) -> None:
    """Hex integers are bounded by their decimal size; --var refuses a huge integer with a ValueError."""
    path = tmp_path / "hex.yaml"
    path.write_text("a: 0x" + "f" * 4000 + "\n")
    with pytest.raises(SourceError, match="an integer of 4,817 digits"):
        load_document(path)
    with pytest.raises(ValueError, match="an integer of 5,000 digits"):
        parse_var("n=" + "1" * 5000)
    assert parse_var("n='" + "1" * 5000 + "'") == ("n", "1" * 5000)


def test_huge_integer_in_a_source_is_a_case_error(tmp_path: Path) -> None:
    """Through load_trajectory (and so a run) the huge integer is a SourceError, never a ValueError traceback."""
    path = tmp_path / "run.json"
    path.write_text('[{"role": "user", "content": "hi", "n": ' + "9" * 5000 + "}]")
    with pytest.raises(SourceError, match="an integer of 5,000 digits"):
        load_trajectory(path)


# -- -k and -m -------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["(" * 10_000 + "a" + ")" * 10_000, "not " * 10_000 + "a",
                                  "(not " * 60 + "a" + ")" * 60])
def test_deep_selection_expression_is_a_usage_error(text: str) -> None:
    """Thousands of parentheses or `not`s are an ExpressionError, not a RecursionError."""
    with pytest.raises(ExpressionError, match="nests parentheses and 'not' more than 100 levels deep; simplify it"):
        keyword_matcher(text)


def test_long_flat_selection_expression_evaluates() -> None:
    """10,000 words joined by `or` (or `and`) no longer build a 10,000-deep chain of calls."""
    keep = keyword_matcher(" or ".join(f"w{i}" for i in range(10_000)))
    assert keep("suite::w9999") and not keep("suite::other")
    assert marker_matcher(" and ".join(["smoke"] * 10_000))(["smoke"])
    assert keyword_matcher("(" * 100 + "a" + ")" * 100)("a")


def test_deep_k_on_the_command_line_exits_2(tmp_path: Path) -> None:
    """`trajrun run -k '(((...'` is a usage error (exit 2) with the message, no traceback."""
    result = CliRunner().invoke(main, ["run", str(tmp_path), "-k", "(" * 5_000 + "a" + ")" * 5_000])
    assert result.exit_code == 2
    assert "more than 100 levels deep" in result.output
    assert "Traceback" not in result.output


def test_compare_value_with_bounded_regex_is_unchanged() -> None:
    """The regex engine swap keeps search semantics: anywhere in the string, flags inline."""
    assert compare_value(compile_value({"$regex": "(?i)PARIS"}), "to paris", "exact")
    assert not compare_value(compile_value({"$regex": "^paris$"}), "to paris", "exact")
