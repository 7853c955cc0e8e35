"""Under hostile input trajrun writes only where asked and only files, keeps its reports true, and never
prints a traceback: report targets, golden paths and updates, sentinels across processes, NaN, empty
``--shard``, and lone surrogates or control characters in what a run recorded."""

from __future__ import annotations

import contextlib
import copy
import errno
import json
import math
import os
import pickle
import re
import stat
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml  # imported here once also for pytester's inline runs, as test_pytest_plugin.py explains
from click.testing import CliRunner
from trajrun import cli
from trajrun.errors import SuiteErrors, TrajrunError
from trajrun.match.expectation import ANY_ARGS, UNSET
from trajrun.reports import json_report
from trajrun.files import FileWriteError, atomic_write
from trajrun.run.results import CaseResult, RunResult, SuiteResult
from trajrun.run.runner import RunOptions, run_paths
from trajrun.run.selection import parse_shard
from trajrun.sources import load_trajectory
from trajrun.suites.golden import dump_steps, load_golden, write_golden
from trajrun.suites.load import load_suite
from trajrun.trajectory import ToolCall, Trajectory

RUN = {"tool_calls": [{"name": "search", "args": {"q": "paris"}}, {"name": "get_forecast", "args": {"city": "Paris"}}]}
FAILING_SUITE = """\
suite: weather
cases:
  - name: wrong steps
    source: run.json
    steps:
      - search: {q: tokyo}
      - other
      - get_forecast
  - name: right steps
    source: run.json
    steps: [search, get_forecast]
"""
GOLDEN_SUITE = """\
suite: recorded
cases:
  - name: paris
    source: run.json
    golden: {golden}
"""
# A tool name, arguments and a result no encoder or terminal should get raw: lone surrogates, ESC, NUL, BEL.
HOSTILE_JSON = ('{"tool_calls": [{"name": "get\\ud800\\u001b[2J", "args": {"q": "\\udfff\\u0000x", "n": 1},'
                ' "result": "\\u001b]0;owned\\u0007\\ud83d"}]}')


def write_project(folder: Path, suite: str, name: str = "s.suite.yaml") -> Path:
    """A folder holding ``run.json`` and one suite file; returns the suite's path."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "run.json").write_text(json.dumps(RUN), encoding="utf-8")
    path = folder / name
    path.write_text(suite, encoding="utf-8")
    return path


def listing(folder: Path) -> list[str]:
    """The names in a folder, sorted (temporary files show up here)."""
    return sorted(p.name for p in folder.iterdir())


def invoke(monkeypatch: pytest.MonkeyPatch, *args: str) -> Any:
    """``trajrun ARGS`` in process (conftest restores the collector's thresholds the run tunes)."""
    return CliRunner().invoke(cli.main, list(args), env={"NO_COLOR": "1"})


@pytest.fixture(autouse=True)
def no_golden_root(monkeypatch: pytest.MonkeyPatch) -> None:
    """No `$TRAJRUN_GOLDEN_ROOT` (the CLI's variable for `--golden-root`) from the environment during a test."""
    monkeypatch.delenv("TRAJRUN_GOLDEN_ROOT", raising=False)


def no_space(*_: Any, **__: Any) -> None:
    """Stands in for a write on a full disk."""
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs, nearly filled; skipped where mounting is not permitted (not root, a container)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    try:
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], capture_output=True)
    except OSError:
        pytest.skip("no mount command here")
    if done.returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        (mount / "filler").write_bytes(b"x" * 48 * 1024)
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


# 1. Reports are written only where asked, and only over regular files.


def special_target(tmp_path: Path, kind: str) -> Path:
    """A path at which a report must not be written: a FIFO, a folder, or symlinks to one."""
    if kind == "fifo":
        os.mkfifo(tmp_path / "fifo")
        return tmp_path / "fifo"
    if kind == "folder":
        (tmp_path / "folder").mkdir()
        return tmp_path / "folder"
    (tmp_path / "link").symlink_to(special_target(tmp_path, kind.removeprefix("link to ")))
    return tmp_path / "link"


@pytest.mark.parametrize("kind", ["fifo", "folder", "link to fifo", "link to folder"])
def test_report_refuses_to_replace_what_is_not_a_regular_file(tmp_path: Path, kind: str) -> None:
    """A FIFO, a folder, or a symlink to one stays as it was; the error names the path; no temp file is left."""
    target = special_target(tmp_path, kind)
    before = listing(tmp_path)
    refused = f"^cannot write {re.escape(str(target))}.* only replaces a regular file"
    with pytest.raises(FileWriteError, match=refused):
        atomic_write(target, lambda handle: handle.write(b"<testsuites/>"))
    assert listing(tmp_path) == before
    assert target.is_symlink() == kind.startswith("link")
    assert stat.S_ISFIFO(target.stat().st_mode) or target.is_dir()


def test_report_refuses_a_device_node(tmp_path: Path) -> None:
    """As root, `--junit-xml /dev/null` used to swap the device for a file: a device node is refused."""
    node = tmp_path / "null"
    try:
        os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except (PermissionError, AttributeError):
        pytest.skip("creating a device node needs root")
    with pytest.raises(FileWriteError, match="character device"):
        atomic_write(node, lambda handle: handle.write(b"{}"))
    assert stat.S_ISCHR(node.stat().st_mode) and listing(tmp_path) == ["null"]


def test_report_through_a_symlink_replaces_the_file_it_names(tmp_path: Path) -> None:
    """A symlink to a regular file is followed: the link stays, the file behind it gets the report."""
    (tmp_path / "real.xml").write_text("old")
    (tmp_path / "link.xml").symlink_to("real.xml")
    atomic_write(tmp_path / "link.xml", lambda handle: handle.write(b"new"))
    assert (tmp_path / "link.xml").is_symlink() and (tmp_path / "real.xml").read_text() == "new"
    assert listing(tmp_path) == ["link.xml", "real.xml"]


def test_report_on_a_full_disk_keeps_the_old_report(tmp_path: Path) -> None:
    """A write that runs out of space is a clear error; the previous report and the folder are unchanged."""
    report = tmp_path / "report.json"
    report.write_text("previous")

    def dump(handle: Any) -> None:
        handle.write(b"half a rep")
        no_space()

    with pytest.raises(FileWriteError) as info:
        atomic_write(report, dump)
    assert str(info.value).startswith(f"cannot write report {report}: No space left on device; free some space")
    assert report.read_text() == "previous" and listing(tmp_path) == ["report.json"]


def test_report_on_a_real_full_disk_keeps_the_old_report(tiny_disk: Path) -> None:
    """The same on a nearly full tmpfs: ENOSPC from the kernel, the temp file removed, the old report kept."""
    report = tiny_disk / "report.xml"
    report.write_text("previous")
    with pytest.raises(FileWriteError, match="No space left on device"):
        atomic_write(report, lambda handle: handle.write(b"x" * 64 * 1024))
    assert report.read_text() == "previous" and listing(tiny_disk) == ["filler", "report.xml"]


def test_cli_refuses_a_fifo_report_before_running(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`trajrun run --junit-xml FIFO` exits 2 at once with the reason, without a traceback or a hang."""
    suite = write_project(tmp_path, FAILING_SUITE)
    os.mkfifo(tmp_path / "pipe")
    out = invoke(monkeypatch, "run", str(suite), "--junit-xml", str(tmp_path / "pipe"))
    assert out.exit_code == 2 and isinstance(out.exception, SystemExit)
    assert f"trajrun: error: cannot write {tmp_path / 'pipe'}: it is a FIFO (named pipe)" in out.stderr
    assert out.stdout == "" and stat.S_ISFIFO((tmp_path / "pipe").stat().st_mode)


def test_cli_report_write_error_keeps_the_other_report_and_console(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A JUnit report that cannot be written is `trajrun: error: --junit-xml: ...`, exit 2; the JSON report
    and the console output are complete, the previous JUnit file untouched."""
    suite = write_project(tmp_path, FAILING_SUITE)
    (tmp_path / "junit.xml").write_text("previous")
    monkeypatch.setattr("xml.etree.ElementTree.ElementTree.write", no_space)
    out = invoke(monkeypatch, "run", str(suite), "--junit-xml", str(tmp_path / "junit.xml"),
                 "--json", str(tmp_path / "report.json"))
    assert out.exit_code == 2 and isinstance(out.exception, SystemExit), out.output
    assert out.stderr.startswith(f"trajrun: error: --junit-xml: cannot write report {tmp_path / 'junit.xml'}: No space left")
    assert out.stdout.rstrip().splitlines()[-1].startswith("1 passed, 1 failed in ")
    assert json.loads((tmp_path / "report.json").read_text())["summary"]["failed"] == 1
    assert (tmp_path / "junit.xml").read_text() == "previous"
    assert listing(tmp_path) == ["junit.xml", "report.json", "run.json", "s.suite.yaml"]


# 2. Golden files stay inside the suite's project, and are replaced atomically, one writer at a time.


@pytest.mark.parametrize("golden", ["../../escaped.yaml", "/tmp/trajrun-escaped-golden.yaml", "out/x.yaml"])
def test_golden_outside_the_project_is_a_load_error(tmp_path: Path, golden: str) -> None:
    """`golden: ../../x.yaml`, an absolute path or a symlink out of the project fails at the `golden` key."""
    project = tmp_path / "a" / "b" / "project"
    suite = write_project(project / "suites", GOLDEN_SUITE.format(golden=golden))
    (project / "pyproject.toml").write_text("")
    (project / "suites" / "out").symlink_to(tmp_path)
    with pytest.raises(SuiteErrors) as info:
        load_suite(suite)
    message = str(info.value)
    assert message.startswith(f"{suite}:5:13: cases[0].golden: golden file ")
    assert f"outside the suite's project {project.resolve()}" in message and "--golden-root DIR" in message


def test_golden_inside_the_project_may_leave_the_suite_folder(tmp_path: Path) -> None:
    """The project is the nearest folder up with pyproject.toml or .git; without one, the suite's folder."""
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    suite = write_project(tmp_path / "repo" / "suites", GOLDEN_SUITE.format(golden="../golden/paris.yaml"))
    assert load_suite(suite).cases[0].golden == tmp_path / "repo" / "suites" / "../golden/paris.yaml"
    loose = write_project(tmp_path / "loose" / "suites", GOLDEN_SUITE.format(golden="../golden/paris.yaml"))
    with pytest.raises(SuiteErrors, match=f"outside the suite's project {re.escape(str(loose.parent.resolve()))} "):
        load_suite(loose)


def test_golden_root_widens_the_allowed_folders(tmp_path: Path) -> None:
    """`golden_root` allows one more folder."""
    suite = write_project(tmp_path / "project", GOLDEN_SUITE.format(golden="../shared/paris.yaml"))
    assert load_suite(suite, golden_root=tmp_path / "shared").cases[0].golden is not None
    with pytest.raises(SuiteErrors, match=r"else the suite's folder\) and outside --golden-root .*elsewhere; move"):
        load_suite(suite, golden_root=tmp_path / "elsewhere")


def test_cli_golden_root_option(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`trajrun run --update-golden` refuses a golden file outside the project unless `--golden-root` allows it."""
    suite = write_project(tmp_path / "project", GOLDEN_SUITE.format(golden="../shared/paris.yaml"))
    refused = invoke(monkeypatch, "run", str(suite), "--update-golden")
    assert refused.exit_code == 2 and "outside the suite's project" in refused.stdout
    assert not (tmp_path / "shared").exists()
    allowed = invoke(monkeypatch, "run", str(suite), "--update-golden", "--golden-root", str(tmp_path / "shared"))
    assert allowed.exit_code == 0, allowed.output
    assert (tmp_path / "shared" / "paris.yaml").read_text().startswith("- search:\n")


def test_pytest_plugin_golden_root_option(pytester: pytest.Pytester) -> None:
    """`--trajrun-golden-root` does for the pytest plugin what `--golden-root` does for the CLI."""
    pytester.makeini("[pytest]\ntrajrun_collect = true\naddopts = -p no:hypothesispytest\n")
    write_project(pytester.path / "project", GOLDEN_SUITE.format(golden="../shared/paris.yaml"), "g.suite.yaml")
    pytester.runpytest("project").assert_outcomes(errors=1)
    shared = str(pytester.path / "shared")
    pytester.runpytest("project", "--trajrun-update-golden", "--trajrun-golden-root", shared).assert_outcomes(passed=1)
    assert (pytester.path / "shared" / "paris.yaml").exists()


def test_golden_update_failure_keeps_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A golden file that cannot be rewritten (a full disk) is a case error naming it; the old file stays whole."""
    suite = write_project(tmp_path, GOLDEN_SUITE.format(golden="golden/paris.yaml"))
    (tmp_path / "golden").mkdir()
    (tmp_path / "golden" / "paris.yaml").write_text("- search: {q: tokyo}\n")
    monkeypatch.setattr(os, "fsync", no_space)
    case = run_paths([suite], RunOptions(update_golden=True, root=tmp_path)).cases[0]
    assert case.outcome == "error"
    assert case.message.startswith(f"cannot write golden file {tmp_path / 'golden' / 'paris.yaml'}: No space left")
    assert "any previous file there is unchanged" in case.message
    assert (tmp_path / "golden" / "paris.yaml").read_text() == "- search: {q: tokyo}\n"
    assert listing(tmp_path / "golden") == ["paris.yaml"]


def test_golden_update_on_a_real_full_disk_keeps_the_old_file(tiny_disk: Path) -> None:
    """The same on a nearly full tmpfs."""
    golden = tiny_disk / "paris.yaml"
    golden.write_text("- search: {q: tokyo}\n")
    with pytest.raises(TrajrunError, match=f"cannot write golden file {golden}: No space left on device"):
        write_golden(golden, "- search: {q: " + "x" * 64 * 1024 + "}\n")
    assert golden.read_text() == "- search: {q: tokyo}\n" and listing(tiny_disk) == ["filler", "paris.yaml"]


def test_golden_writers_take_turns(tmp_path: Path) -> None:
    """While someone else holds the folder's lock, a golden update waits, then writes the whole file."""
    fcntl = pytest.importorskip("fcntl")  # POSIX only, like the lock under test

    golden = tmp_path / "paris.yaml"
    golden.write_text("- old\n")
    fd = os.open(tmp_path, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    writer = threading.Thread(target=write_golden, args=(golden, "- new\n"))
    writer.start()
    time.sleep(0.2)
    assert writer.is_alive() and golden.read_text() == "- old\n"
    os.close(fd)
    writer.join(5)
    assert not writer.is_alive() and golden.read_text() == "- new\n" and listing(tmp_path) == ["paris.yaml"]


def test_golden_readers_never_see_half_a_file(tmp_path: Path) -> None:
    """Two writers rewrite a large golden file over and over; every read gets one whole version."""
    golden = tmp_path / "big.yaml"
    versions = [dump_steps(Trajectory(tuple(ToolCall(f"tool_{w}", {"i": i, "pad": "x" * 200}) for i in range(300))))
                for w in "ab"]
    golden.write_text(versions[0])
    stop = threading.Event()

    def rewrite(text: str) -> None:
        while not stop.is_set():
            write_golden(golden, text)

    writers = [threading.Thread(target=rewrite, args=(text,)) for text in versions]
    for writer in writers:
        writer.start()
    try:
        seen = {golden.read_text() for _ in range(200)}
    finally:
        stop.set()
        for writer in writers:
            writer.join()
    assert seen <= set(versions)
    assert listing(tmp_path) == ["big.yaml"]


def test_golden_fifo_is_an_error_not_a_hang(tmp_path: Path) -> None:
    """A golden path naming a FIFO is reported; reading it would block forever."""
    os.mkfifo(tmp_path / "paris.yaml")
    outcome: list[BaseException] = []

    def read() -> None:
        try:
            load_golden(tmp_path / "paris.yaml")
        except SuiteErrors as exc:
            outcome.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(5)
    if reader.is_alive():  # unblock the reader so the test process can end cleanly
        with contextlib.suppress(OSError):
            os.close(os.open(tmp_path / "paris.yaml", os.O_WRONLY | os.O_NONBLOCK))
    assert outcome and "it is a FIFO (named pipe), not a regular file" in str(outcome[0])


# 3. Reports stay true.


@pytest.mark.parametrize("sentinel", [ANY_ARGS, UNSET])
def test_sentinels_survive_pickling_and_copying(sentinel: Any) -> None:
    """A sentinel sent to or from a worker process is the same object, so `is ANY_ARGS` still holds."""
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        assert pickle.loads(pickle.dumps(sentinel, protocol)) is sentinel
    assert copy.deepcopy(sentinel) is sentinel


def test_json_report_is_the_same_with_workers(tmp_path: Path) -> None:
    """`-j 2` gives the JSON report `-j 1` gives (durations aside): a step without args reads `other`."""
    suite = write_project(tmp_path, FAILING_SUITE)

    def report(jobs: int) -> dict[str, Any]:
        data = json_report.render(run_paths([suite], RunOptions(jobs=jobs, root=tmp_path)))
        data["summary"]["duration"] = 0
        for case in data["suites"][0]["cases"]:
            case["duration"] = 0
        return data

    serial = report(1)
    assert [m["expected"] for m in serial["suites"][0]["cases"][0]["missing"]] == ['search {"q":"tokyo"}', "other"]
    assert report(2) == serial


def test_json_report_writes_non_finite_numbers_as_strings(tmp_path: Path) -> None:
    """NaN and infinities in arguments are written as "NaN", "Infinity", "-Infinity": the file is strict JSON."""
    args = {"nan": math.nan, "inf": math.inf, "ninf": -math.inf, "list": [math.nan, 1.5]}
    traj = Trajectory((ToolCall("measure", args),))
    case = CaseResult("s::c", "s", "c", "s.suite.yaml", 3, "passed", trajectory=traj)
    json_report.write(RunResult((SuiteResult("s", "s.suite.yaml", (case,)),)), tmp_path / "report.json")

    def refuse(name: str) -> None:
        raise AssertionError(f"bare {name} in the report")

    data = json.loads((tmp_path / "report.json").read_text(), parse_constant=refuse)
    written = data["suites"][0]["cases"][0]["trajectory"]["tool_calls"][0]["args"]
    assert written == {"nan": "NaN", "inf": "Infinity", "ninf": "-Infinity", "list": ["NaN", 1.5]}


@pytest.mark.parametrize("text", ["", "  "])
def test_empty_shard_is_a_usage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    """`--shard ''` (an unset `$SHARD`) exits 2 with the fix instead of quietly running every case."""
    with pytest.raises(ValueError, match="--shard is empty"):
        parse_shard(text)
    suite = write_project(tmp_path, FAILING_SUITE)
    out = invoke(monkeypatch, "run", str(suite), "--shard", text)
    assert out.exit_code == 2 and out.stderr.startswith("trajrun: error: --shard is empty") and out.stdout == ""


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    """A recorded run whose tool name, arguments and result hold lone surrogates and control characters."""
    (tmp_path / "hostile.json").write_text(HOSTILE_JSON, encoding="utf-8")
    return tmp_path / "hostile.json"


@pytest.mark.parametrize("args", [["show"], ["show", "-o", "yaml"], ["show", "-o", "json"], ["record"]])
def test_text_commands_survive_surrogates_and_controls(hostile: Path, monkeypatch: pytest.MonkeyPatch,
                                                       args: list[str]) -> None:
    """`show` (each view) and `record` print escapes instead of raising UnicodeEncodeError or emitting ESC."""
    out = invoke(monkeypatch, *args, str(hostile))
    assert out.exit_code == 0 and out.exception is None, out.output
    assert "\x1b" not in out.stdout and "\x00" not in out.stdout and "\x07" not in out.stdout
    assert "\\ud800" in out.stdout.lower()


def test_show_json_and_record_read_back_unchanged(hostile: Path, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The escapes are lossless: `show -o json` reads back as the same run, `record` as the same steps."""
    original = load_trajectory(hostile)
    (tmp_path / "shown.json").write_text(invoke(monkeypatch, "show", "-o", "json", str(hostile)).stdout)
    assert load_trajectory(tmp_path / "shown.json").calls == original.calls
    # PyYAML's own parser reads the escapes back; libyaml, which trajrun's reader uses, refuses lone surrogates
    [step] = yaml.load(invoke(monkeypatch, "record", str(hostile)).stdout, Loader=yaml.SafeLoader)
    # a name with a bracket is written in the long form (a suite refuses it as a short-form key)
    assert step == {"name": original.calls[0].name, "args": original.calls[0].args}


def test_run_survives_surrogates_and_controls(hostile: Path, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A failing case on that run (with a NaN too) prints its table escaped, and both reports are written."""
    hostile.write_text(HOSTILE_JSON.replace('"n": 1', '"n": NaN'), encoding="utf-8")
    suite = write_project(tmp_path, "cases:\n  - name: c\n    source: hostile.json\n    steps: [other]\n"
                                    "  - name: p\n    source: hostile.json\n    never: [other]\n")
    out = invoke(monkeypatch, "run", str(suite), "--junit-xml", str(tmp_path / "j.xml"),
                 "--json", str(tmp_path / "r.json"))
    assert out.exit_code == 1 and isinstance(out.exception, SystemExit), out.output
    assert "get\\ud800\\x1b[2J" in out.stdout and "\x1b" not in out.stdout
    assert out.stdout.rstrip().splitlines()[-1].startswith("1 passed, 1 failed in ")
    assert json.loads((tmp_path / "r.json").read_text())["summary"]["failed"] == 1
    assert (tmp_path / "j.xml").read_bytes().startswith(b"<?xml")


def test_golden_root_from_the_environment_reaches_workers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`$TRAJRUN_GOLDEN_ROOT` is the CLI's spelling of `--golden-root`, and `-j 2` workers honour it too."""
    suite = write_project(tmp_path / "project", GOLDEN_SUITE.format(golden="../shared/paris.yaml"))
    monkeypatch.setenv("TRAJRUN_GOLDEN_ROOT", str(tmp_path / "shared"))
    allowed = invoke(monkeypatch, "run", str(suite), "--update-golden", "-j", "2")
    assert allowed.exit_code == 0, allowed.output
    assert (tmp_path / "shared" / "paris.yaml").exists()
