"""``--engine dask`` on a real cluster: a ``dask scheduler`` and a ``dask worker --nworkers 2``
started as their own processes in another folder, as a team would run them. Tasks carry absolute
paths, so relative and absolute globs and a ``file://`` URL give what ``--engine local`` gives,
byte for byte; a file a worker cannot open, workers without trajrun (or with another version), a
scheduler without workers and a worker killed mid-run are each said plainly.

One scheduler and its two workers serve the module; a test that needs more workers starts them,
and stops them before it ends.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from bulk_logs import SUITE, expected, write_logs
from cli_helpers import invoke_in
from trajrun.match.expectation import Expectation
from trajrun.run import dask_engine
from trajrun.run.bulk_eval import BulkSpec
from trajrun.run.bulk_results import Aggregate
from trajrun.sources.records import Partition

pytestmark = pytest.mark.skipif(os.name != "posix", reason="process groups are POSIX")

DASK = str(Path(sys.executable).with_name("dask"))
VERSION = dask_engine.installed()
START = 60.0
"""Seconds a scheduler or worker may take to start (generous: they start in a second or two)."""
REPORTS = ("--records", "{}.jsonl", "--json", "{}.json", "--junit-xml", "{}.xml",
           "--junit-each", "record")
"""Every report of a run, named after its engine."""


def start(folder: Path, *command: str) -> subprocess.Popen[bytes]:
    """A process started in ``folder``, its output logged there, in a process group of its own
    (stopping the group stops what it started)."""
    with open(folder / f"{command[1]}-{time.monotonic_ns()}.log", "wb") as log:
        return subprocess.Popen(command, cwd=folder, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)


def stop_all(groups: list[subprocess.Popen[bytes]]) -> None:
    """Kill the process groups started here, and reap them."""
    for proc in groups:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    for proc in groups:
        proc.wait(30)


def wait_until(condition: Any, seconds: float) -> bool:
    """Poll ``condition`` until it holds or ``seconds`` pass."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def scheduler_file(folder: Path, name: str) -> dict[str, Any]:
    """What a scheduler started with ``--scheduler-file name`` wrote there, once it has."""
    path = folder / name
    assert wait_until(lambda: path.exists() and json.loads(path.read_text() or "{}"), START)
    info: dict[str, Any] = json.loads(path.read_text())
    return info


class Cluster:
    """The module's scheduler, the process groups started for it, and a client that watches it."""

    def __init__(self, folder: Path, client: Any, address: str, dashboard: int,
                 groups: list[subprocess.Popen[bytes]]) -> None:
        self.folder, self.client, self.address = folder, client, address
        self.dashboard, self.groups = dashboard, groups

    def workers(self) -> set[str]:
        """The addresses of the workers the scheduler has now."""
        return set(self.client.nthreads())

    def worker(self, name: str, preload: str) -> subprocess.Popen[bytes]:
        """One more worker named ``name`` (no nanny: killing it kills the worker) that runs
        ``preload`` (Python) as it starts; returned once it has joined."""
        (self.folder / f"{name}.py").write_text(preload)
        before = self.workers()
        proc = start(self.folder, DASK, "worker", self.address, "--no-nanny", "--nthreads", "1",
                     "--host", "127.0.0.1", "--no-dashboard", "--name", name, "--preload",
                     str(self.folder / f"{name}.py"))
        self.groups.append(proc)
        assert wait_until(lambda: len(self.workers() - before) == 1, START)
        return proc

    def address_of(self, name: str) -> str:
        """The address of the worker named ``name``."""
        workers = self.client.scheduler_info()["workers"]
        return next(address for address, info in workers.items() if info.get("name") == name)

    def stop(self, procs: list[subprocess.Popen[bytes]]) -> None:
        """Stop workers this module added; return once the scheduler has its two workers again."""
        stop_all(procs)
        assert wait_until(lambda: len(self.workers()) == 2, START)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A scheduler on 127.0.0.1 (a free port, its dashboard on another) and ``dask worker
    --nworkers 2``, started in a folder of their own: the workers' working folder is not the
    client's."""
    distributed = pytest.importorskip("distributed")
    folder = tmp_path_factory.mktemp("workers")
    groups: list[subprocess.Popen[bytes]] = []
    try:
        groups.append(start(folder, DASK, "scheduler", "--host", "127.0.0.1", "--port", "0",
                            "--dashboard-address", "127.0.0.1:0", "--scheduler-file", "s.json"))
        info = scheduler_file(folder, "s.json")
        address, dashboard = info["address"], info["services"]["dashboard"]
        groups.append(start(folder, DASK, "worker", address, "--nworkers", "2", "--nthreads", "1",
                            "--host", "127.0.0.1", "--no-dashboard"))
        with distributed.Client(address, timeout=START) as client:
            client.wait_for_workers(2, timeout=START)
            yield Cluster(folder, client, address, dashboard, groups)
    finally:
        stop_all(groups)


def logs(folder: Path, pattern: str, total: int = 240, files: int = 3, named: bool = True) -> Path:
    """The bulk logs and suite in ``folder/client``, the suite reading ``pattern``; without
    ``named``, records are named by their file and line."""
    client = folder / "client"
    write_logs(client, total, files)
    suite = SUITE.replace('"logs/*.jsonl.gz"', json.dumps(pattern))
    (client / "prod.suite.yaml").write_text(suite if named else suite.replace(" id: $.run_id,", ""))
    return client


def reports(folder: Path, engine: str) -> dict[str, str]:
    """A run's reports, less what differs between two runs of a suite: timings, the engine."""
    json_report = json.loads((folder / f"{engine}.json").read_text())
    junit = (folder / f"{engine}.xml").read_text()
    found = {"records": (folder / f"{engine}.jsonl").read_text(),
             "json": json.dumps(_untimed(json_report)),
             "junit": re.sub(r' (time|timestamp|hostname)="[^"]*"', "", junit)}
    return {name: text.replace(f"{engine}.jsonl", "RECORDS") for name, text in found.items()}


def _untimed(value: Any) -> Any:
    """A JSON report without its durations, time stamps and the engine's name."""
    if isinstance(value, dict):
        left_out = ("duration", "timestamp", "started", "engine")
        return {k: _untimed(v) for k, v in value.items() if k not in left_out}
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    return value


def run(folder: Path, engine: str, *args: str, env: dict[str, str] | None = None) -> str:
    """``trajrun run`` of the folder's suite with every report, in process; its stderr."""
    written = [arg.format(engine) for arg in REPORTS]
    result = invoke_in(folder, "run", "prod.suite.yaml", "--engine", engine, *written, *args,
                       env=env)
    assert result.exit_code == 1, result.output
    return result.stderr


def assert_same_as_local(folder: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """The dask run's reports are the local run's; the dask run's stderr."""
    run(folder, "local")
    stderr = run(folder, "dask", *args, env=env)
    assert reports(folder, "dask") == reports(folder, "local")
    return stderr


def bulk_report(folder: Path) -> dict[str, Any]:
    """The ``bulk`` object of the dask run's JSON report."""
    report: dict[str, Any] = json.loads((folder / "dask.json").read_text())
    return report["suites"][0]["cases"][0]["bulk"]  # type: ignore[no-any-return]


def test_a_relative_glob_is_read_by_workers_in_another_folder(tmp_path: Path,
                                                               cluster: Cluster) -> None:
    """The bug: workers resolved the client's relative paths in their own folder, and every record
    erred. The dashboard's link is printed."""
    folder = logs(tmp_path, "logs/*.jsonl.gz")
    stderr = assert_same_as_local(folder, "--scheduler", cluster.address)
    assert bulk_report(folder)["by_check"] == expected(range(240))
    assert len((folder / "dask.jsonl").read_text().splitlines()) == 240
    assert stderr == f"trajrun: Dask dashboard: http://127.0.0.1:{cluster.dashboard}/status\n"


def test_an_absolute_glob_and_the_scheduler_from_the_environment(tmp_path: Path,
                                                                 cluster: Cluster) -> None:
    """``DASK_SCHEDULER_ADDRESS`` stands for ``--scheduler``; records are named by the absolute
    path written."""
    folder = logs(tmp_path, str(tmp_path / "client" / "logs" / "*.jsonl.gz"), named=False)
    assert_same_as_local(folder, env={"DASK_SCHEDULER_ADDRESS": cluster.address})
    first = json.loads((folder / "dask.jsonl").read_text().splitlines()[0])["record"]
    assert first == f"{tmp_path}/client/logs/2026-11-01.jsonl.gz:1"
    assert bulk_report(folder)["by_check"] == expected(range(240))


def test_a_file_url(tmp_path: Path, cluster: Cluster) -> None:
    """A ``file://`` URL goes to the workers as written, and names the records."""
    url = (tmp_path / "client" / "logs").as_uri()
    folder = logs(tmp_path, f"{url}/*.jsonl.gz", named=False)
    assert_same_as_local(folder, "--scheduler", cluster.address)
    first = json.loads((folder / "dask.jsonl").read_text().splitlines()[0])["record"]
    assert first == f"{url}/2026-11-01.jsonl.gz:1"


def test_a_file_a_worker_cannot_open_names_the_worker_the_path_and_the_fix(
        tmp_path: Path, cluster: Cluster) -> None:
    """A partition whose file the worker cannot open (listed by the client, absent where the worker
    looks) is one erred record naming the worker, the absolute path it opened, and the fix."""
    gone = tmp_path / "logs" / "gone.jsonl.gz"
    engine = dask_engine.DaskEngine(cluster.address)
    aggregate = Aggregate("c")
    try:
        part = Partition("logs/gone.jsonl.gz", location=str(gone))
        engine.run(BulkSpec(Expectation(never=("refund_all",))), [part], aggregate)
    finally:
        engine.close()
    [line] = aggregate.summary("record", 1, 1.0, "dask").worst
    found = re.fullmatch(r"source: the Dask worker at (\S+) cannot open (\S+): No such file or "
                         r"directory; every worker reads the files itself: put them on storage "
                         r"every worker mounts at the same path, or name them by an object-store "
                         r"URL \(s3://…, gs://…\)", line.message)
    assert found and found[2] == str(gone), line.message
    assert found[1] in cluster.workers()
    assert (line.record, line.outcome) == ("logs/gone.jsonl.gz", "error")


# a worker that takes a partition and never finishes it
HANG = """
import time
from trajrun.run import dask_engine

def hang(*args, **kwargs):
    time.sleep(600)

dask_engine.evaluate_partition = hang
"""


def test_a_worker_killed_mid_run_has_its_tasks_run_again_and_the_run_says_so(
        tmp_path: Path, cluster: Cluster) -> None:
    """A third worker holds a task; killed (``kill -9``) while it does, its tasks run again on the
    other two, the reports are the local run's, and stderr names the lost worker."""
    folder = logs(tmp_path, "logs/*.jsonl.gz", total=300, files=6)
    run(folder, "local")
    victim = cluster.worker("victim", HANG)
    address = cluster.address_of("victim")
    command = [sys.executable, "-m", "trajrun", "run", "prod.suite.yaml", "--engine", "dask",
               "--scheduler", cluster.address, *(arg.format("dask") for arg in REPORTS)]
    proc = subprocess.Popen(command, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    processing = cluster.client.processing
    try:
        assert wait_until(lambda: any(str(key).startswith("trajrun-")
                                      for key in processing().get(address, ())), START)
        os.killpg(victim.pid, signal.SIGKILL)
        stderr = proc.communicate(timeout=120)[1].decode()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        cluster.stop([victim])
    assert proc.returncode == 1, stderr
    [note] = [line for line in stderr.splitlines() if line.startswith("trajrun: note:")]
    assert re.fullmatch(rf"trajrun: note: Dask worker {re.escape(address)} was lost mid-run; Dask "
                        r"ran its \d+ tasks? again on the other workers", note), stderr
    assert reports(folder, "dask") == reports(folder, "local")


def test_workers_without_trajrun_or_with_another_version_are_one_error(tmp_path: Path,
                                                                       cluster: Cluster) -> None:
    """Checked before any task: one error naming each worker that cannot import trajrun or has
    another version, and the fix; no record is read."""
    folder = logs(tmp_path, "logs/*.jsonl.gz", total=20)
    added = []
    try:
        added.append(cluster.worker("without", 'import sys\nsys.modules["trajrun"] = None\n'))
        added.append(cluster.worker("older", "from trajrun.run import dask_engine\n"
                                             "dask_engine.installed = lambda: '0.0.1'\n"))
        without, older = cluster.address_of("without"), cluster.address_of("older")
        result = invoke_in(folder, "run", "prod.suite.yaml", "--engine", "dask", "--scheduler",
                           cluster.address)
    finally:
        cluster.stop(added)
    problems = {without: f"worker {without} cannot import trajrun (ModuleNotFoundError(\"No "
                         "module named 'trajrun.run'; 'trajrun' is not a package\"))",
                older: f"worker {older} has trajrun 0.0.1"}
    message = (f"the Dask cluster at {cluster.address} cannot run trajrun's tasks: "
               f"{'; '.join(problems[a] for a in sorted(problems))}; install trajrun {VERSION} "
               f"on every worker (pip install 'trajrun[dask]=={VERSION}') and restart them")
    assert result.exit_code == 1
    assert f"ERROR prod.suite.yaml::policies - {message}\n" in result.output, result.output
    assert "records:" not in result.output


def test_a_scheduler_without_workers_is_one_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  cluster: Cluster) -> None:
    """A scheduler no worker has joined: the case errs after a wait, saying how to start one."""
    monkeypatch.setattr(dask_engine, "WORKERS_TIMEOUT", 0.5)
    lonely = start(cluster.folder, DASK, "scheduler", "--host", "127.0.0.1", "--port", "0",
                   "--no-dashboard", "--scheduler-file", "lonely.json")
    try:
        address = scheduler_file(cluster.folder, "lonely.json")["address"]
        folder = logs(tmp_path, "logs/*.jsonl.gz", total=20)
        result = invoke_in(folder, "run", "prod.suite.yaml", "--engine", "dask",
                           env={"DASK_SCHEDULER_ADDRESS": address})
    finally:
        stop_all([lonely])
    message = (f"the Dask scheduler at {address} has no worker after 0.5s; start some where the "
               f"files are: dask worker {address}")
    assert f"ERROR prod.suite.yaml::policies - {message}\n" in result.output, result.output
