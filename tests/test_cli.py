"""The ``trajrun`` command: exit codes, last lines, tables and report files.

Most tests invoke the command in process through click's ``CliRunner`` (fast); the real entry point
(``python -m trajrun``) runs as a subprocess where a test needs a process of its own: worker
processes under ``-j``, a kill mid-write, the module entry point itself.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import xmlschema
from junitparser import JUnitXml

from cli_helpers import invoke_in

from trajrun.cli import main

DATA = Path(__file__).parent / "data"
XSD = DATA / "junit-10.xsd"
ANTHROPIC = DATA / "samples" / "anthropic" / "sdk_message_model_dump.json"

WEATHER_RUN = {
    "tool_calls": [
        {"name": "get_forecast", "args": {"city": "Paris"}, "turn": 0},
        {"name": "get_forecast", "args": {"city": "Tokyo"}, "turn": 0},
        {"name": "send_summary", "args": {"to": "ops"}, "turn": 1},
    ],
    "turns": 2,
}


def trajrun_process(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``python -m trajrun ARGS`` in ``cwd`` with colours off, as a real process."""
    full_env = {**os.environ, "NO_COLOR": "1", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "trajrun", *args], cwd=cwd, capture_output=True, text=True, env=full_env, timeout=120
    )


def trajrun(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Invoke ``trajrun ARGS`` in process from ``cwd`` with colours off; the result reads like a finished process."""
    result = invoke_in(cwd, *args, env=env)
    return subprocess.CompletedProcess(["trajrun", *args], result.exit_code, result.stdout, result.stderr)


def last_line(text: str) -> str:
    """The last non-empty line of the output."""
    return text.strip().splitlines()[-1]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A folder with one run file and suites that pass, fail and fail to load."""
    (tmp_path / "suites").mkdir()
    (tmp_path / "suites" / "weather.json").write_text(json.dumps(WEATHER_RUN))
    write_suite(tmp_path / "suites" / "weather.suite.yaml", """
        suite: weather
        tags: [smoke]
        cases:
          - name: parallel forecasts
            source: weather.json
            steps:
              - get_forecast: {city: Tokyo}
              - get_forecast: {city: Paris}
              - send_summary
          - name: wrong city
            source: weather.json
            mode: superset
            steps:
              - get_forecast: {city: Lyon}
    """)
    return tmp_path


def write_suite(path: Path, text: str) -> None:
    """Write a suite file from an indented literal."""
    path.write_text(textwrap.dedent(text).lstrip())


def test_show_table_lists_calls_turns_and_answer(tmp_path: Path) -> None:
    """show prints one aligned row per call, then format, turns and answer."""
    proc = trajrun("show", str(ANTHROPIC), "--select", "$.typical_saved_history", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["#", "turn", "tool", "args", "result"]
    assert lines[1].split()[:3] == ["0", "0", "retrieve_entity_info"]
    assert "format: anthropic   calls: 4   turns: 1" in proc.stdout


def test_show_json_reads_back_as_trajectory_unchanged(tmp_path: Path) -> None:
    """show -o json output, shown again, gives the same JSON (nothing lost)."""
    first = trajrun("show", str(ANTHROPIC), "--select", "$.typical_saved_history", "-o", "json", cwd=tmp_path)
    saved = tmp_path / "run.json"
    saved.write_text(first.stdout)
    again = trajrun("show", str(saved), "-o", "json", cwd=tmp_path)
    assert json.loads(again.stdout) == json.loads(first.stdout)
    assert json.loads(first.stdout)["tool_calls"][0]["id"] == "toolu_0167cfEnoQaPviGdVXA95zcu"


def test_show_yaml_has_the_same_data_as_json(tmp_path: Path) -> None:
    """show -o yaml is the JSON shape as YAML."""
    import yaml

    src = tmp_path / "w.json"
    src.write_text(json.dumps(WEATHER_RUN))
    as_yaml = yaml.safe_load(trajrun("show", str(src), "-o", "yaml", cwd=tmp_path).stdout)
    as_json = json.loads(trajrun("show", str(src), "-o", "json", cwd=tmp_path).stdout)
    assert as_yaml == as_json


def test_record_output_passes_as_a_golden_file(tmp_path: Path) -> None:
    """record prints steps that, saved as a golden file, pass strict + exact against their source."""
    (tmp_path / "w.json").write_text(json.dumps(WEATHER_RUN))
    proc = trajrun("record", "w.json", cwd=tmp_path)
    assert proc.stdout.startswith("- parallel:\n  - get_forecast:")  # two calls in turn 0
    (tmp_path / "golden.yaml").write_text(proc.stdout)
    write_suite(tmp_path / "g.suite.yaml", """
        cases:
          - name: golden
            source: w.json
            golden: golden.yaml
    """)
    run = trajrun("run", "g.suite.yaml", cwd=tmp_path)
    assert run.returncode == 0, run.stdout
    assert last_line(run.stdout).startswith("1 passed in ")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["missing.json"], "missing.json: file not found"),
        (["bad.json"], "bad.json: invalid JSON"),
        (["w.jsonl", "--record", "9"], "w.jsonl"),
        (["w.jsonl", "--select", "$[?("], "w.jsonl"),
        (["w.jsonl", "--format", "opnai"], "did you mean 'openai'?"),
    ],
)
def test_show_bad_input_exits_2_without_traceback(tmp_path: Path, args: list[str], needle: str) -> None:
    """Bad sources are one clear error line on stderr and exit status 2."""
    (tmp_path / "bad.json").write_text('{"tool_calls": [}')
    (tmp_path / "w.jsonl").write_text(json.dumps(WEATHER_RUN) + "\n")
    proc = trajrun("show", *args, cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.startswith("trajrun: error: ") and needle in proc.stderr
    assert "Traceback" not in proc.stderr


def test_run_reports_pass_and_failure_with_table(project: Path) -> None:
    """A failing case exits 1, shows the expected | actual | verdict table and the summary last."""
    proc = trajrun("run", "suites", cwd=project)
    assert proc.returncode == 1
    assert last_line(proc.stdout).startswith("1 passed, 1 failed in ")
    assert "suites/weather.suite.yaml::wrong city" in proc.stdout
    assert "expected" in proc.stdout and "actual" in proc.stdout and "verdict" in proc.stdout
    assert "Lyon" in proc.stdout


def test_run_broken_suite_exits_2_and_others_still_run(project: Path) -> None:
    """A suite that cannot be loaded is reported with file:line:column; the rest still run."""
    write_suite(project / "suites" / "broken.suite.yaml", """
        cases:
          - name: x
            source: weather.json
            mdoe: strict
            steps: [a]
    """)
    proc = trajrun("run", "suites", "--junit-xml", "out.xml", cwd=project)
    assert proc.returncode == 2
    assert "broken.suite.yaml:4:5: cases[0]" in proc.stdout and "did you mean 'mode'" in proc.stdout
    assert "1 passed, 1 failed, 1 error" in last_line(proc.stdout)
    xml = JUnitXml.fromfile(str(project / "out.xml"))
    names = [(case.classname, case.name) for suite in xml for case in suite]
    assert ("broken.suite.yaml", "(load)") in names


def test_run_nothing_selected_exits_5(project: Path) -> None:
    """-k matching no case exits 5."""
    proc = trajrun("run", "suites", "-k", "nosuchcase", cwd=project)
    assert proc.returncode == 5
    assert "2 deselected" in last_line(proc.stdout)


def test_run_k_and_m_select_cases(project: Path) -> None:
    """-k picks by suite::case words, -m by tags."""
    proc = trajrun("run", "suites", "-k", "parallel", "-m", "smoke", cwd=project)
    assert proc.returncode == 0
    assert last_line(proc.stdout).startswith("1 passed, 1 deselected in ")


@pytest.mark.parametrize("args", [["--shard", "4/3"], ["-k", "a and"], ["nosuchdir"]])
def test_run_bad_command_line_exits_2(project: Path, args: list[str]) -> None:
    """A wrong command line is a one-line error and exit 2."""
    proc = trajrun("run", *args, cwd=project)
    assert proc.returncode == 2
    assert proc.stderr.startswith("trajrun: error: ")


def test_junit_report_validates_and_reads_back(project: Path) -> None:
    """The JUnit file validates against junit-10.xsd and junitparser sees one failure."""
    proc = trajrun("run", "suites", "--junit-xml", "reports/junit.xml", cwd=project)
    assert proc.returncode == 1
    report = project / "reports" / "junit.xml"
    xmlschema.XMLSchema(str(XSD)).validate(str(report))
    xml = JUnitXml.fromfile(str(report))
    suite = next(iter(xml))
    assert (suite.name, suite.tests, suite.failures, suite.errors) == ("weather", 2, 1, 0)
    failed = [case for case in suite if case.name == "wrong city"][0]
    assert "steps" in failed.result[0].message
    assert "get_forecast" in (failed.system_out or "")


def test_shards_together_run_every_case_once(tmp_path: Path) -> None:
    """--shard 1/3, 2/3 and 3/3 together run each case exactly once."""
    (tmp_path / "r.json").write_text(json.dumps(WEATHER_RUN))
    cases = "\n".join(f"  - {{name: c{i}, source: r.json, calls: {{get_forecast: 2}}}}" for i in range(30))
    (tmp_path / "s.suite.yaml").write_text(f"cases:\n{cases}\n")
    seen: list[str] = []
    for shard in ("1/3", "2/3", "3/3"):
        proc = trajrun("run", ".", "--shard", shard, "--json", f"{shard[0]}.json", cwd=tmp_path)
        assert proc.returncode in (0, 5)
        report = json.loads((tmp_path / f"{shard[0]}.json").read_text())
        seen += [case["name"] for suite in report["suites"] for case in suite["cases"]]
    assert sorted(seen) == sorted(f"c{i}" for i in range(30))


def test_jobs_give_the_same_results_as_serial(project: Path) -> None:
    """-j 2 and -j 3 report the same outcomes, messages, load errors and order as -j 1."""
    def outcomes(jobs: str) -> tuple[int, list[tuple[str, str, str]], list[list[str]], str]:
        proc = trajrun_process("run", "suites", "-j", jobs, "--json", f"j{jobs}.json", cwd=project)
        report = json.loads((project / f"j{jobs}.json").read_text())
        cases = [(c["id"], c["outcome"], c["message"]) for s in report["suites"] for c in s["cases"]]
        errors = [s["load_errors"] for s in report["suites"]]
        return proc.returncode, cases, errors, last_line(proc.stdout).split(" in ")[0]

    write_suite(project / "suites" / "broken.suite.yaml", "cases: []\n")
    write_suite(project / "suites" / "same_name.suite.yaml", """
        suite: weather
        cases:
          - {name: dup, source: weather.json, never: [x]}
    """)
    serial = outcomes("1")
    assert serial[0] == 2 and any(errors for errors in serial[2])
    assert outcomes("2") == serial
    assert outcomes("3") == serial


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_exitfirst_stops_after_first_failure(project: Path, jobs: str) -> None:
    """-x stops at the first failing case (with -j, later results are dropped) and says how many did not run."""
    write_suite(project / "suites" / "zzz.suite.yaml", """
        cases:
          - {name: later, source: weather.json, never: [x]}
    """)
    proc = trajrun_process("run", "suites", "-x", "-j", jobs, cwd=project)
    assert proc.returncode == 1
    assert last_line(proc.stdout).startswith("1 passed, 1 failed, ")
    assert " not run (stopped at the first failure) in " in last_line(proc.stdout)


def test_update_golden_creates_missing_file(tmp_path: Path) -> None:
    """--update-golden writes a missing golden file, the case passes and the file is reported."""
    (tmp_path / "w.json").write_text(json.dumps(WEATHER_RUN))
    write_suite(tmp_path / "g.suite.yaml", """
        cases:
          - {name: golden, source: w.json, golden: golden/w.yaml}
    """)
    missing = trajrun("run", ".", cwd=tmp_path)
    assert missing.returncode == 1 and "--update-golden" in missing.stdout
    updated = trajrun("run", ".", "--update-golden", cwd=tmp_path)
    assert updated.returncode == 0
    assert "golden file created" in updated.stdout
    assert (tmp_path / "golden" / "w.yaml").read_text().startswith("- parallel:\n  - get_forecast:")


def test_var_reaches_templates(tmp_path: Path) -> None:
    """--var k=v sets a template variable."""
    (tmp_path / "w.json").write_text(json.dumps(WEATHER_RUN))
    write_suite(tmp_path / "v.suite.yaml", """
        cases:
          - {name: var, source: w.json, mode: superset, steps: [{get_forecast: {city: "{{ city }}"}}]}
    """)
    assert trajrun("run", ".", "--var", "city=Tokyo", cwd=tmp_path).returncode == 0
    assert trajrun("run", ".", "--var", "city=Rome", cwd=tmp_path).returncode == 1


def test_validate_clean_and_broken(project: Path) -> None:
    """validate exits 0 on good suites and 2 with file:line:column errors on bad ones."""
    assert trajrun("validate", "suites", cwd=project).returncode == 0
    write_suite(project / "suites" / "bad.suite.yaml", """
        cases:
          - {name: x, source: nowhere.json, steps: [a]}
    """)
    proc = trajrun("validate", "suites", cwd=project)
    assert proc.returncode == 2
    assert "bad.suite.yaml:" in proc.stdout and "nowhere.json" in proc.stdout


def test_schema_prints_json_schema(tmp_path: Path) -> None:
    """schema prints the suite JSON Schema."""
    schema = json.loads(trajrun("schema", cwd=tmp_path).stdout)
    assert "cases" in schema["properties"]


KILLER = """
import os, signal
import xml.etree.ElementTree as ET

indented = []
indent = ET.indent

def indent_then_die(*args, **kwargs):
    # the JUnit writer indents each element as it writes it: die with some of them in the temporary file
    indented.append(1)
    if len(indented) == 3:
        os.kill(os.getpid(), signal.SIGKILL)
    return indent(*args, **kwargs)

ET.indent = indent_then_die
"""


def test_killed_mid_write_keeps_previous_report(project: Path) -> None:
    """A run killed while writing the JUnit file leaves the previous report intact."""
    assert trajrun("run", "suites", "--junit-xml", "junit.xml", cwd=project).returncode == 1
    before = (project / "junit.xml").read_text()
    hook = project / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(KILLER)
    proc = trajrun_process("run", "suites", "--junit-xml", "junit.xml", cwd=project, env={"PYTHONPATH": str(hook)})
    assert proc.returncode == -9
    assert (project / "junit.xml").read_text() == before
    assert sorted(p.name for p in project.iterdir() if p.name.startswith("junit")) == ["junit.xml"]


def test_json_dash_writes_the_report_to_stdout(project: Path) -> None:
    """``--json -`` prints the JSON report alone on stdout (no file named ``-``); the console report goes to stderr."""
    proc = trajrun("run", "suites/weather.suite.yaml", "--json", "-", cwd=project)
    assert proc.returncode == 1
    report = json.loads(proc.stdout)
    assert report["summary"]["failed"] >= 1 and report["suites"][0]["name"] == "weather"
    assert last_line(proc.stderr).startswith(f"{report['summary']['passed']} passed, ")
    assert not (project / "-").exists()


def test_empty_shard_exits_0_and_says_so(project: Path) -> None:
    """A shard that gets none of the selected cases passes (a CI matrix may have more shards than cases);
    selecting nothing at all without --shard still exits 5."""
    proc = trajrun("run", "suites/weather.suite.yaml", "-k", "parallel", "--shard", "50/50", cwd=project)
    assert proc.returncode == 0, proc.stdout
    assert last_line(proc.stdout).startswith("no cases in this shard, 2 deselected in ")
    assert trajrun("run", "suites/weather.suite.yaml", "-k", "nothing_is_called_this", cwd=project).returncode == 5


def test_html_report_and_report_command_write_the_same_page(project: Path) -> None:
    """``run --html`` writes the page; ``report RESULTS.json --html`` renders the same page from the JSON report."""
    proc = trajrun("run", "suites/weather.suite.yaml", "--json", "r.json", "--html", "r.html", cwd=project)
    assert proc.returncode == 1
    page = (project / "r.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "wrong city" in page
    again = trajrun("report", "r.json", "--html", "again.html", cwd=project)
    assert again.returncode == 0, again.stderr
    assert (project / "again.html").read_text(encoding="utf-8") == page
    missing = trajrun("report", "nothing.json", "--html", "x.html", cwd=project)
    assert missing.returncode == 2 and missing.stderr.startswith("trajrun: error: nothing.json: ")


# -- internal errors and -v ----------------------------------------------------------------------

UNDETECTABLE = DATA / "samples" / "langgraph" / "get_state_history_summary.json"


def _reader_bug(*args: object, **kwargs: object) -> None:
    """A reader with a bug."""
    raise TypeError("unhashable type: 'list'")


@pytest.mark.parametrize("command", ["show", "record"])
def test_show_and_record_verbose_say_why_each_format_does_not_fit(tmp_path: Path, command: str) -> None:
    """Without -v, no format fitting is one line; -v adds each format's reason after it."""
    quiet = trajrun(command, str(UNDETECTABLE), cwd=tmp_path)
    assert quiet.returncode == 2 and len(quiet.stderr.splitlines()) == 1
    loud = trajrun(command, str(UNDETECTABLE), "-v", cwd=tmp_path)
    assert loud.returncode == 2
    first, header, *reasons = loud.stderr.splitlines()
    assert first == quiet.stderr.strip() and header == "why each format does not fit:"
    assert reasons[0] == "  otel: item 0 is neither an OTLP document nor a span"
    assert reasons[-1] == "  openai: item 0 has no 'role'" and len(reasons) == 10


@pytest.mark.parametrize("command", ["show", "record"])
def test_show_and_record_internal_error_is_one_line_and_the_traceback_with_v(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """A reader bug is `trajrun: internal error: …` and exit status 3; -v prints the traceback before it."""
    monkeypatch.delenv("TRAJRUN_TRACEBACK", raising=False)
    monkeypatch.setattr("trajrun.sources.load_trajectory", _reader_bug)
    (tmp_path / "w.json").write_text(json.dumps(WEATHER_RUN))
    quiet = trajrun(command, "w.json", cwd=tmp_path)
    assert (quiet.returncode, quiet.stdout) == (3, "")
    assert quiet.stderr == ("trajrun: internal error: TypeError: unhashable type: 'list'; rerun with -v for the "
                            "traceback, and please report it\n")
    loud = trajrun(command, "w.json", "-v", cwd=tmp_path)
    assert loud.returncode == 3 and loud.stderr.startswith("Traceback (most recent call last):")
    assert "in _reader_bug" in loud.stderr
    assert loud.stderr.endswith("trajrun: internal error: TypeError: unhashable type: 'list'; please report it\n")


def test_any_command_turns_an_unexpected_exception_into_exit_3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The entry point's last line of defence: one line and status 3; TRAJRUN_TRACEBACK=1 adds the traceback."""
    monkeypatch.delenv("TRAJRUN_TRACEBACK", raising=False)
    monkeypatch.setattr("trajrun.suites.schema.schema_text", _reader_bug)
    proc = trajrun("schema", cwd=tmp_path)
    assert proc.returncode == 3
    assert proc.stderr == ("trajrun: internal error: TypeError: unhashable type: 'list'; rerun with TRAJRUN_TRACEBACK=1 "
                           "for the traceback, and please report it\n")
    traced = trajrun("schema", cwd=tmp_path, env={"TRAJRUN_TRACEBACK": "1"})
    assert traced.returncode == 3 and traced.stderr.startswith("Traceback (most recent call last):")
    assert traced.stderr.endswith("trajrun: internal error: TypeError: unhashable type: 'list'; please report it\n")


@pytest.mark.parametrize(("raised", "code", "stderr"), [
    (KeyboardInterrupt(), 1, "\nAborted!\n"),
    (SystemExit(7), 7, ""),
])  # fmt: skip
def test_ctrl_c_and_sys_exit_keep_their_behaviour(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 raised: BaseException, code: int, stderr: str) -> None:
    """The last-resort handler catches exceptions only: Ctrl-C is click's ``Aborted!``, ``sys.exit`` its status."""
    def stop() -> None:
        raise raised

    monkeypatch.setattr("trajrun.suites.schema.schema_text", stop)
    proc = trajrun("schema", cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (code, stderr)


def test_click_errors_keep_their_behaviour(tmp_path: Path) -> None:
    """Usage errors stay click's (status 2, its message), in standalone mode and out of it."""
    import click

    proc = trajrun("nosuchcommand", cwd=tmp_path)
    assert proc.returncode == 2 and "No such command 'nosuchcommand'" in proc.stderr
    assert trajrun("--version", cwd=tmp_path).returncode == 0
    with pytest.raises(click.UsageError):
        main.main(["nosuchcommand"], standalone_mode=False)


BROKEN_SCHEMA = """
import trajrun.suites.schema

def schema_text():
    raise RuntimeError("boom")

trajrun.suites.schema.schema_text = schema_text
"""


def test_python_m_trajrun_goes_through_the_last_resort_handler(tmp_path: Path) -> None:
    """``python -m trajrun`` (as the ``trajrun`` script) prints the one line and exits 3, no traceback."""
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(BROKEN_SCHEMA)
    proc = trajrun_process("schema", cwd=tmp_path, env={"PYTHONPATH": str(hook), "TRAJRUN_TRACEBACK": ""})
    assert proc.returncode == 3
    assert proc.stderr == ("trajrun: internal error: RuntimeError: boom; rerun with TRAJRUN_TRACEBACK=1 for the "
                           "traceback, and please report it\n")


def test_validate_reports_a_reader_bug_per_source_and_goes_on(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A reader that crashes is that source's problem in ``validate``'s list; the other files are still checked."""
    import trajrun.run.validate as validate_module

    def crash(*args: object, **kwargs: object) -> None:
        raise RuntimeError("reader bug")

    monkeypatch.setattr(validate_module, "load_trajectory", crash)
    proc = trajrun("validate", "suites", cwd=project)
    assert proc.returncode == 2
    assert proc.stdout.count("source internal error reading suites/weather.json: RuntimeError: reader bug "
                             "(please report it)") == 2  # each case naming the source
    assert last_line(proc.stdout) == "1 suite file checked, 2 problems"


@pytest.mark.parametrize("args, said", [
    (["missing.json"], "relative paths resolve against the current folder"),
    (["run.json", "--record", "2"], "--record needs a .jsonl file, found a .json file; use --select '$[1]'"),
    (["run.json", "--select", "$.nothing"], "check the path, run without --select to see the whole document"),
    (["odd.json"], "name the format with --format, or point --select at the message list (add -v to see why"),
])  # fmt: skip
def test_show_speaks_in_its_own_flags(tmp_path: Path, args: list[str], said: str) -> None:
    """``trajrun show`` errors name its flags and the current folder, not a suite's keys and folder."""
    (tmp_path / "run.json").write_text(json.dumps([{"role": "user", "content": "hi"}]))
    (tmp_path / "odd.json").write_text('{"foo": 1}')
    proc = trajrun("show", *args, cwd=tmp_path)
    assert proc.returncode == 2 and said in proc.stderr
    assert "suite" not in proc.stderr and "select:" not in proc.stderr
