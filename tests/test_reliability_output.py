"""Under hostile names and data, trajrun's output keeps its own lines: no suite or source can start a line of the
console (nor a GitHub workflow command), the job summary renders no tag, link or image it supplied, and a lone
surrogate in a bulk record's id is written as escapes, never a crash.

Each attack goes through the real command line, in a process, with the output read as bytes and cut into lines
as GitHub's runner cuts them (``\\r``, ``\\n``) and as Python does (``\\x85``, ``\\u2028`` too).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml

# Each break is followed by text GitHub's runner would act on: stop-commands, the legacy ``##[`` form, add-mask,
# a workflow command after blanks (the runner trims them), and a plain marker after Python-only line breaks.
PAYLOAD = "x\n::stop-commands::pwn\r##[error]legacy\n::add-mask::m\u2028INJECTED\x85  ::warning::w"
SHOWN = r"x\n::stop-commands::pwn\r##\[error]legacy\n::add-mask::m\u2028INJECTED\x85  ::warning::w"
"""The payload as the console prints it: escaped to one line, the legacy marker broken by a backslash."""
BACKSLASH_R = r"\r"
ESCAPED = r"x\n::stop-commands::pwn\r##[error]legacy\n::add-mask::m\u2028INJECTED\x85  ::warning::w"
"""The payload escaped to one line, as it sits in an annotation's message."""
INJECTED = ("::stop-commands", "::add-mask", "::warning", "INJECTED", "pwn", "legacy", "m\u2028", "  ::")
OWN_ANNOTATION = re.compile(r"^::error file=[^,:\r\n]*,line=\d+,title=[^:\r\n]*::")
AGENT = f"import sys\nsys.stderr.write({PAYLOAD!r})\nsys.exit(3)\n"
RUN = {"tool_calls": [{"name": PAYLOAD, "args": {"q": PAYLOAD}, "result": PAYLOAD},
                      {"name": "search", "args": {"q": "paris"}, "result": PAYLOAD}], "answer": PAYLOAD}  # fmt: skip


STEPS = [{"search": {"q": "tokyo"}}, PAYLOAD + "2"]


def _suite() -> dict[str, Any]:
    """A suite whose names, steps, tools and reasons all hold the payload: 5 fail, 3 err, 1 is skipped."""
    return {"suite": "S" + PAYLOAD, "cases": [
        {"name": "steps " + PAYLOAD, "source": "run.json", "golden": "steps.yaml"},
        {"name": "never", "source": "run.json", "never": [PAYLOAD]},
        {"name": "before", "source": "run.json", "before": [["search", PAYLOAD]]},
        {"name": "calls", "source": "run.json", "calls": {PAYLOAD: 2, "search": 1}},
        {"name": "answer", "source": "run.json", "answer": "no"},
        {"name": "skip", "skip": PAYLOAD, "source": "run.json", "steps": ["search"]},
        {"name": "cmd", "source": {"command": f'"{sys.executable}" agent.py'}, "steps": ["search"]},
        {"name": "latency", "source": "run.json", "latency": {PAYLOAD: {"max_ms": 1}}},
        {"name": "missing", "source": "missing" + PAYLOAD + ".json", "steps": ["search"]},
    ]}  # fmt: skip


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    """A project whose suite, run, agent and a second suite's file name (which does not load) carry the payload."""
    (tmp_path / "run.json").write_text(json.dumps(RUN), encoding="utf-8")
    (tmp_path / "agent.py").write_text(AGENT, encoding="utf-8")
    (tmp_path / "a.suite.yaml").write_text(json.dumps(_suite()), encoding="utf-8")  # JSON is YAML
    # a suite refuses such a tool name in its steps (a load error); a golden file holds names as recorded
    (tmp_path / "steps.yaml").write_text(json.dumps(STEPS), encoding="utf-8")
    bad = tmp_path / ("bad" + PAYLOAD.replace("\r", "") + ".suite.yaml")
    bad.write_text(json.dumps({"cases": [{"name": "c", PAYLOAD: 1}]}), encoding="utf-8")
    return tmp_path


def trajrun(*args: str, cwd: Path, env: dict[str, str] | None = None) -> tuple[int, bytes, bytes]:
    """``python -m trajrun ARGS`` as a process, outside GitHub Actions unless ``env`` says so; status and bytes."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "TRAJRUN_"))}
    done = subprocess.run([sys.executable, "-m", "trajrun", *args], cwd=cwd, capture_output=True, timeout=120,
                          env={**base, "NO_COLOR": "1", **(env or {})}, check=False)  # fmt: skip
    return done.returncode, done.stdout, done.stderr


def lines_of(data: bytes) -> list[str]:
    """The output as UTF-8 (strict: it must be valid), cut at every line break GitHub's runner or Python knows."""
    return data.decode("utf-8").splitlines()


def assert_clean(data: bytes, annotations: int = 0) -> list[str]:
    """No line starts with injected text or holds ``##[``; exactly ``annotations`` lines are trajrun's own
    ``::error`` annotations, and no other line starts with ``::``. Returns the lines."""
    lines = lines_of(data)
    own = [line for line in lines if OWN_ANNOTATION.match(line)]
    assert len(own) == annotations, own
    for line in lines:
        if line in own:
            assert "\r" not in line and "\n" not in line
            continue
        start = line.lstrip()
        assert not start.startswith("::"), line
        assert "##[" not in line, line
        assert not start.startswith(INJECTED), line
    return lines


@pytest.mark.parametrize("verbosity", [[], ["-v"], ["-q"]], ids=["letters", "verbose", "quiet"])
def test_run_prints_no_line_a_suite_or_a_source_chose(hostile: Path, verbosity: list[str]) -> None:
    """Under GitHub Actions, progress, load errors, failures and the short summary keep each name on its line;
    the only ``::`` lines are the 10 annotations (5 failed, 3 erred, 2 load errors)."""
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(hostile / "summary.md")}
    status, out, err = trajrun("run", ".", *verbosity, cwd=hostile, env=env)
    assert status == 2  # a suite could not be loaded
    lines = assert_clean(out, annotations=10)
    assert_clean(err)
    if not verbosity:
        assert lines[1] == f"bad{SHOWN.replace(BACKSLASH_R, '')}.suite.yaml E [100%]"
    if verbosity != ["-q"]:
        text = "\n".join(lines)
        assert f"\nnever: {SHOWN}\n{SHOWN} called at turn 0, position 0\n" in text
        assert f"\n{SHOWN}  exactly 2  actual 1  too few\n" in text
        assert f"\nactual:   \"{SHOWN}\"\n" in text
    assert f"FAILED a.suite.yaml::never - 1 check failed: never ({SHOWN})" in lines
    tail = (r"stderr:\n  | x\n  | ::stop-commands::pwn\n  | ##\[error]legacy\n  | ::add-mask::m\n  | INJECTED"
            r"\n  |   ::warning::w")
    assert f'ERROR a.suite.yaml::cmd - source: "{sys.executable}" agent.py: exited with status 3; {tail}' in lines
    if verbosity != ["-q"]:  # the failure block shows the stderr tail line by line, each behind trajrun's "  | "
        assert "  | ::stop-commands::pwn" in lines and "  |   ::warning::w" in lines


def test_json_report_on_stdout_keeps_strings_escaped(hostile: Path) -> None:
    """``--json -``: stdout is the JSON report alone, no line of it a workflow command (``##[`` and the line
    separators written as ``\\u`` escapes), and it reads back with the names unchanged."""
    status, out, err = trajrun("run", ".", "--json", "-", cwd=hostile, env={"GITHUB_ACTIONS": "true"})
    assert status == 2
    assert_clean(out)
    assert_clean(err, annotations=10)
    assert b"##\\u005berror]legacy" in out and b"\\u2028INJECTED\\u0085" in out
    [suite] = [s for s in json.loads(out)["suites"] if s["file"] == "a.suite.yaml"]
    assert suite["name"] == "S" + PAYLOAD and suite["cases"][0]["name"] == "steps " + PAYLOAD


def test_annotations_escape_names_and_messages_by_githubs_rules(hostile: Path) -> None:
    """An annotation's properties escape ``%``, CR, LF, ``:`` and ``,``; its message ``%``, CR and LF."""
    (hostile / "steps.yaml").write_text(json.dumps(["search", PAYLOAD]))
    (hostile / "a.suite.yaml").write_text(json.dumps({"suite": "50% a,b", "cases": [
        {"name": "c:d\r\ne", "source": "run.json", "never": ["search"], "golden": "steps.yaml"}]}))  # fmt: skip
    status, out, _ = trajrun("run", "a.suite.yaml", cwd=hostile, env={"GITHUB_ACTIONS": "true"})
    assert status == 1
    [own] = [line for line in assert_clean(out, annotations=1) if line.startswith("::")]
    head, _, message = own.partition("failed::")
    assert head == "::error file=a.suite.yaml,line=1,title=50%25 a%2Cb %3A%3A c%3Ad\\r\\ne "
    assert message.startswith("2 checks failed: steps (order differs), never (search)%0Asteps: order differs%0A")
    assert message.endswith("%0A%0Anever: search%0Asearch called at turn 1, position 1")
    assert "%0D" not in message and "[0] " + ESCAPED[:40] in message  # the data is one line: ``##[`` is harmless


def test_job_summary_renders_no_tag_link_or_image_a_suite_supplied(tmp_path: Path) -> None:
    """Suite and case names, a tool named in a message and a file path are shown as text: HTML as entities, Markdown
    and autolinks escaped."""
    (tmp_path / "run.json").write_text(json.dumps({"tool_calls": [{"name": "[x](javascript:alert(1))", "args": {}}]}))
    suite = {"suite": "<details><h1>S</h1></table>", "cases": [
        {"name": "![](https://evil.example/x.png) www.evil.example a@evil.example", "source": "run.json",
         "never": ["[x](javascript:alert(1))"]}]}  # fmt: skip
    (tmp_path / "w<b>_*x*.suite.yaml").write_text(json.dumps(suite), encoding="utf-8")
    summary = tmp_path / "summary.md"
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)}
    status, _, _ = trajrun("run", ".", cwd=tmp_path, env=env)
    assert status == 1
    text = summary.read_text(encoding="utf-8")
    row = text.splitlines()[-1]
    assert row == ("| &lt;details&gt;&lt;h1&gt;S&lt;/h1&gt;&lt;/table&gt; :: \\!\\[\\]\\(https\\://evil.example/x.png) "
                   "www\\.evil.example a\\@evil.example (<code>w&lt;b&gt;\\_\\*x\\*.suite.yaml:1</code>) | failed | "
                   "1 check failed: never (\\[x\\]\\(javascript:alert(1))) |")
    for raw in ("<details>", "<h1>", "</table>", "<b>", "![](", "](https:", "](javascript:", "https://", "_*x*"):
        assert raw not in text


def test_show_and_record_keep_a_sources_strings_on_their_lines(hostile: Path) -> None:
    """``show`` (table, YAML, JSON) and ``record`` print no injected line; YAML and JSON read back unchanged."""
    status, out, _ = trajrun("show", "run.json", cwd=hostile)
    assert status == 0
    table = assert_clean(out)
    assert table[1].startswith(f"0  0     {SHOWN}  ")
    assert table[-1].startswith("answer: " + SHOWN[:40]) and table[-1].endswith("…")
    for output, load in (("yaml", yaml.safe_load), ("json", json.loads)):
        status, out, _ = trajrun("show", "run.json", "-o", output, cwd=hostile)
        assert status == 0
        assert_clean(out)
        data = load(out.decode("utf-8"))
        first = data["tool_calls"][0]
        assert (first["name"], first["args"], first["result"], data["answer"]) == (PAYLOAD, {"q": PAYLOAD}, PAYLOAD,
                                                                                   PAYLOAD)  # fmt: skip
    status, out, _ = trajrun("record", "run.json", cwd=hostile)
    assert status == 0
    assert_clean(out)
    assert yaml.safe_load(out.decode("utf-8"))[0] == {"name": PAYLOAD, "args": {"q": PAYLOAD}}  # long form


def test_validate_and_errors_keep_paths_and_keys_on_their_lines(hostile: Path) -> None:
    """``validate`` prints one line per problem and ``show`` a one-line error, whatever the path or key holds."""
    status, out, err = trajrun("validate", ".", cwd=hostile)
    assert status == 2
    lines = assert_clean(out)
    assert_clean(err)
    assert lines[-1] == "2 suite files checked, 3 problems"
    assert lines[0].startswith("a.suite.yaml:1:") and f"source file missing{SHOWN}.json" in lines[0]
    status, out, err = trajrun("show", "missing" + PAYLOAD + ".json", cwd=hostile)
    assert status == 2
    [line] = assert_clean(err)
    assert line.startswith(f"trajrun: error: missing{SHOWN}.json: file not found; ")


def test_pytest_plugin_failure_text_keeps_names_on_their_lines(hostile: Path) -> None:
    """The plugin's failures, errors, skip reasons and short summary escape as ``trajrun run`` does."""
    (hostile / "pytest.ini").write_text("[pytest]\ntrajrun_collect = true\naddopts = -p no:hypothesispytest\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "TRAJRUN_", "PYTEST_"))}
    done = subprocess.run([sys.executable, "-m", "pytest", "-rA", "-p", "no:cacheprovider", "a.suite.yaml"],
                          cwd=hostile, capture_output=True, timeout=120, env={**env, "NO_COLOR": "1"},
                          check=False)  # fmt: skip
    assert done.returncode == 1
    lines = assert_clean(done.stdout)
    assert f"SKIPPED [1] a.suite.yaml: {SHOWN}" in lines
    # pytest cuts a short-summary line at the terminal's width, but not when CI is set: the name is whole either way
    assert any(line.startswith(f"FAILED a.suite.yaml::steps {SHOWN}") for line in lines), lines


def test_records_with_a_lone_surrogate_id_are_written_as_escapes(tmp_path: Path) -> None:
    """A record id holding lone surrogates (and the payload) ends the run with its own status (1: records failed);
    ``--records`` is valid UTF-8 whose ids read back unchanged, JUnit per record parses, the console escapes them."""
    (tmp_path / "logs").mkdir()
    ids = ["ok-1", "\ud800" + PAYLOAD, "bad-\udfff"]
    records = [{"run_id": rid, "messages": [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c0", "type": "function", "function": {"name": "refund_all" if n else "send", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c0", "content": "ok"}]} for n, rid in enumerate(ids)]  # fmt: skip
    (tmp_path / "logs" / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="ascii")
    (tmp_path / "prod.suite.yaml").write_text(
        "suite: prod\ncases:\n  - name: policies\n"
        "    source: {file: 'logs/*.jsonl', each: record, id: $.run_id, select: $.messages}\n"
        "    never: [refund_all]\n", encoding="utf-8")  # fmt: skip
    status, out, err = trajrun("run", ".", "--records", "rec.jsonl", "--junit-xml", "j.xml", "--junit-each", "record",
                               cwd=tmp_path, env={"GITHUB_ACTIONS": "true"})  # fmt: skip
    assert (status, err) == (1, b"")
    lines = assert_clean(out, annotations=1)
    assert f"  \\ud800{SHOWN}  failed  1 check failed: never (refund_all)" in lines
    written = (tmp_path / "rec.jsonl").read_bytes().decode("utf-8")
    assert [json.loads(line)["record"] for line in written.splitlines()] == ids
    names = [case.get("name") for case in ET.parse(tmp_path / "j.xml").iter("testcase")]
    one_line = "#xD800x ::stop-commands::pwn ##[error]legacy ::add-mask::m\u2028INJECTED\x85  ::warning::w"
    assert names == ["policies [ok-1]", f"policies [{one_line}]", "policies [bad-#xDFFF]"]
