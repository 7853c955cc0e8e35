"""JUnit XML report: a pure ``render`` to an Element tree valid under
junit-10.xsd, and an atomic ``write``."""

from __future__ import annotations

import itertools
import os
import platform
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from datetime import datetime
from typing import BinaryIO

from ..files import atomic_write
from ..run.results import CaseResult, RunResult, SuiteResult
from .junit_records import record_outcomes
from .text import judge_text, one_line, seconds, xml_safe

UNNAMED = "(unnamed)"
LOAD_CASE = "(load)"
LOAD_MESSAGE = "suite could not be loaded"
SYSTEM_OUT = ("failed", "all", "none")
"""Which cases carry their actual steps in ``<system-out>``: ``failed`` (failed,
erred, xpassed), every one, none."""
MESSAGE_WIDTH = 300
"""Past this many characters a ``message`` attribute is cut (with ``…``);
the body holds the whole text."""
SHOWN = {"failed": frozenset({"failed", "error", "xpassed"}), "all": None, "none": frozenset()}
"""The outcomes each ``SYSTEM_OUT`` choice shows (``None``: every one)."""


def render(
    run: RunResult,
    *,
    file_line: bool = False,
    hostname: str | None = None,
    system_out: str = "failed",
    each: str = "case",
) -> ET.Element:
    """The whole report as ``<testsuites>``: one ``<testsuite>`` per
    suite file, load failures included.

    ``file_line`` adds ``file`` and a 1-based ``line`` to every testcase for annotation
    tools (GitLab, action-junit-report); it breaks junit-10.xsd, so it is opt-in.
    ``system_out`` (one of ``SYSTEM_OUT``) says which cases carry their actual steps: by
    default only those that did not pass, since nobody reads a passing case's run and it
    made most of a large report. ``each="record"`` makes a bulk case one testcase per record
    (when its per-record lines were written).
    """
    root, parts = _parts(run, hostname, file_line, system_out, each)
    for element, cases in parts:
        element.extend(cases)
        root.append(element)
    return root


def write(
    run: RunResult,
    path: str | os.PathLike[str],
    *,
    file_line: bool = False,
    system_out: str = "failed",
    each: str = "case",
) -> None:
    """Write the report of ``render`` to ``path`` atomically, as UTF-8
    with an XML declaration, indented.

    The testcases are written one at a time and dropped, so a bulk case reported one
    testcase per record (a million of them) never holds them all; the bytes are those
    of ``render``'s tree, indented.
    """
    root, parts = _parts(run, None, file_line, system_out, each)
    atomic_write(path, lambda handle: _stream(handle, root, parts))


Parts = Iterator[tuple[ET.Element, Iterator[ET.Element]]]


def _parts(
    run: RunResult, hostname: str | None, file_line: bool, system_out: str, each: str
) -> tuple[ET.Element, Parts]:
    """The ``<testsuites>`` element with its totals, and each ``<testsuite>`` (counts and
    properties, no testcases yet) with an iterator of its testcases, built as they are read."""
    # platform.node() is socket.gethostname() without importing socket (start-up time; click
    # loads platform anyway)
    host = hostname if hostname is not None else platform.node()
    seen: set[tuple[str, str]] = set()
    shown = SHOWN[system_out]
    counts = [_counts(s, each) for s in run.suites]
    root = ET.Element("testsuites", {"name": "trajrun"})
    root.attrib.update(
        {key: str(sum(c[key] for c in counts)) for key in ("tests", "failures", "errors")}
    )
    root.set("time", seconds(run.duration))
    parts = (
        (_suite(s, host, c), _testcases(s, seen, file_line, shown, each))
        for s, c in zip(run.suites, counts, strict=True)
    )
    return root, parts


def _stream(handle: BinaryIO, root: ET.Element, parts: Parts) -> None:
    """Write what ``ET.indent`` and ``ElementTree.write`` would of the whole tree, one element at a
    time: each child is written after the newline and indentation that ``indent`` puts before it."""

    def put(text: str) -> None:
        handle.write(text.encode("utf-8", "xmlcharrefreplace"))  # the errors ElementTree.write uses

    put("<?xml version='1.0' encoding='utf-8'?>\n")
    first = next(parts, None)
    if first is None:
        put(ET.tostring(root, encoding="unicode"))
        return
    put(_open_tag(root))
    for element, cases in itertools.chain([first], parts):
        put("\n  " + _open_tag(element))
        for child in itertools.chain(element, cases):
            ET.indent(child, space="  ", level=2)
            child.tail = None
            put("\n    " + ET.tostring(child, encoding="unicode"))
        put("\n  </testsuite>")
    put("\n</testsuites>")


def _open_tag(element: ET.Element) -> str:
    """``<tag attributes>`` as ElementTree writes it."""
    bare = ET.Element(element.tag, element.attrib)
    bare.text = "\x00"  # cut at a character no attribute can hold (xml_safe removes it)
    return ET.tostring(bare, encoding="unicode").split("\x00", 1)[0]


def _suite(suite: SuiteResult, host: str, counts: dict[str, int]) -> ET.Element:
    """One ``<testsuite>`` with its counts and properties (its
    testcases come from ``_testcases``)."""
    element = ET.Element("testsuite", {"name": xml_safe(one_line(_suite_name(suite))) or UNNAMED})
    element.attrib.update({key: str(value) for key, value in counts.items()})
    element.set("time", seconds(suite.duration or sum(c.duration for c in suite.cases)))
    element.set("timestamp", _timestamp(suite.timestamp))
    element.set("hostname", xml_safe(one_line(host)) or "localhost")
    element.append(_properties(suite))
    return element


def _testcases(
    suite: SuiteResult,
    seen: set[tuple[str, str]],
    file_line: bool,
    shown: frozenset[str] | None,
    each: str,
) -> Iterator[ET.Element]:
    """A suite's testcases in order: its ``(load)`` case, or one per case (per
    record for ``each="record"``)."""
    if suite.load_errors:
        yield _load_case(suite, seen, file_line)
        return
    for case in suite.cases:
        if each == "record" and _has_records(case):
            yield from _per_record(case, seen, file_line)
        else:
            yield _case(case, seen, file_line, shown)


def _counts(suite: SuiteResult, each: str) -> dict[str, int]:
    """JUnit's counts for a suite: xpassed is a failure, xfailed a skip, ``tests`` counts every
    testcase; with ``each="record"`` a bulk case counts its records (from its summary: the
    testcases are not built yet)."""
    if suite.load_errors:
        return {"tests": 1, "failures": 0, "errors": 1, "skipped": 0}
    outcomes = [c.outcome for c in suite.cases if not (each == "record" and _has_records(c))]
    records = [c.bulk for c in suite.cases if each == "record" and _has_records(c)]
    return {
        "tests": len(outcomes) + sum(b.total for b in records),
        "failures": outcomes.count("failed")
        + outcomes.count("xpassed")
        + sum(b.failed for b in records),
        "errors": outcomes.count("error") + sum(b.error for b in records),
        "skipped": outcomes.count("skipped") + outcomes.count("xfailed"),
    }


def _has_records(case: CaseResult) -> bool:
    """Whether a case is a bulk case whose per-record lines were written."""
    return case.bulk is not None and bool(case.bulk.records_file)


def _suite_name(suite: SuiteResult) -> str:
    """The suite's name; a suite that could not be loaded is named by its file."""
    return suite.file if suite.load_errors else suite.name or suite.file


def _per_record(
    case: CaseResult, seen: set[tuple[str, str]], file_line: bool
) -> Iterator[ET.Element]:
    """A bulk case's testcases, one per record, read from its
    per-record lines as they are written."""
    for name, tag, message, kind in record_outcomes(case):
        element = _testcase(case.suite, name, seen, 0.0)
        if file_line:
            element.attrib.update({"file": xml_safe(case.file), "line": str(max(case.line, 1))})
        if tag is not None:
            _result(element, tag, message, kind, "")
        yield element


def _timestamp(moment: datetime) -> str:
    """``YYYY-MM-DDTHH:MM:SS``: no zone and no fraction, which both common XSDs accept."""
    return moment.strftime("%Y-%m-%dT%H:%M:%S")


def _properties(suite: SuiteResult) -> ET.Element:
    """Suite-level figures: file, case count, tool calls, tokens and mean score where known; with
    ``--baseline``, a ``baseline_new`` or ``baseline_known`` property naming each failed case
    (testcases have no properties in junit-10.xsd)."""
    figures: dict[str, object] = {"file": suite.file, "cases": len(suite.cases)}
    calls = [c.tool_calls for c in suite.cases if c.tool_calls is not None]
    if calls:
        figures["tool_calls"] = sum(calls)
    if suite.usage is not None:
        figures.update(suite.usage.to_dict())
    scores = [c.score for c in suite.cases if c.score is not None]
    if scores:
        figures["mean_score"] = f"{sum(scores) / len(scores):.3f}"
    judged = [
        v.score
        for c in suite.cases
        if c.evaluation and (v := c.evaluation.judge) and v.score is not None
    ]
    if judged:
        figures["judge_mean_score"] = f"{sum(judged) / len(judged):.3f}"
    element = ET.Element("properties")
    marked = [(f"baseline_{c.baseline}", c.name) for c in suite.cases if c.baseline]
    marked += _repeat_properties(suite)
    for name, value in [*figures.items(), *marked]:
        ET.SubElement(element, "property", {"name": name, "value": xml_safe(one_line(str(value)))})
    return element


def _repeat_properties(suite: SuiteResult) -> list[tuple[str, str]]:
    """With ``repeat``, a ``repeat`` property per case (``name: .F.F 2/4 runs passed, …``), then a
    ``flaky`` property naming each case whose runs disagree."""
    props: list[tuple[str, str]] = []
    flaky: list[tuple[str, str]] = []
    for case in suite.cases:
        if (repeats := case.repeats) is not None:
            props.append(("repeat", f"{case.name}: {repeats.letters} {repeats.summary()}"))
            flaky += [("flaky", case.name)] if repeats.flaky else []
    return props + flaky


def _runs(case: CaseResult) -> str:
    """``repeat .F.F: 2/4 runs passed, …`` for a case with ``repeat`` that did not pass or is flaky;
    else empty."""
    repeats = case.repeats
    shown = repeats is not None and (case.outcome != "passed" or repeats.flaky)
    return repeats.line() if repeats is not None and shown else ""


def testcase_names(suite: str, case: str) -> tuple[str, str]:
    """A testcase's ``classname`` and ``name``: the suite's name and the case's, one line each,
    never empty (a suite file that cannot be loaded: its file name and ``LOAD_CASE``).

    The one rule of ``trajrun run --junit-xml`` and of the plugin under ``pytest --junitxml``, so
    CI keeps a case's history when a project switches between them.
    """
    return xml_safe(one_line(suite)) or UNNAMED, xml_safe(one_line(case)) or UNNAMED


def _unique(classname: str, name: str, seen: set[tuple[str, str]]) -> tuple[str, str]:
    """A non-empty classname and name whose pair no earlier testcase
    used (GitLab drops duplicates)."""
    classname, base = testcase_names(classname, name)
    name, n = base, 1
    while (classname, name) in seen:
        n += 1
        name = f"{base} ({n})"
    seen.add((classname, name))
    return classname, name


def _testcase(classname: str, name: str, seen: set[tuple[str, str]], duration: float) -> ET.Element:
    """A bare ``<testcase>`` with unique, non-empty identity and its time."""
    classname, name = _unique(classname, name, seen)
    return ET.Element("testcase", {"classname": classname, "name": name, "time": seconds(duration)})


def _load_case(suite: SuiteResult, seen: set[tuple[str, str]], file_line: bool) -> ET.Element:
    """The ``(load)`` testcase standing for a suite file that could not be loaded."""
    element = _testcase(suite.name or suite.file, LOAD_CASE, seen, 0.0)
    if file_line:
        element.attrib.update({"file": xml_safe(suite.file), "line": "1"})
    _result(element, "error", LOAD_MESSAGE, "load", "\n".join(suite.load_errors))
    return element


def _case(
    case: CaseResult, seen: set[tuple[str, str]], file_line: bool, shown: frozenset[str] | None
) -> ET.Element:
    """One ``<testcase>``: its result element by outcome, the actual steps in ``<system-out>``."""
    element = _testcase(case.suite, case.name, seen, case.duration)
    if file_line:
        element.attrib.update({"file": xml_safe(case.file), "line": str(max(case.line, 1))})
    body = (
        "\n\n".join(p for p in (case.message, case.details) if p)
        if case.outcome == "error"
        else case.details
    )
    body = body or case.message
    verdict = case.evaluation.judge if case.evaluation else None
    judged = (
        judge_text(verdict) if verdict is not None and verdict.passed else ""
    )  # a failing one is in the details
    if judged and case.outcome != "passed":
        body = "\n\n".join(p for p in (body, judged) if p)
    if case.notes:
        body = "\n\n".join([body, *case.notes]) if body else "\n".join(case.notes)
    runs = _runs(case)
    if runs and case.outcome != "passed":  # a passing flaky case says so in <system-err>
        body = f"{runs}\n\n{body}" if body else runs
    if case.outcome == "failed":
        _result(element, "failure", case.message or "failed", case.check_type or "failure", body)
    elif case.outcome == "error":
        _result(element, "error", case.message or "error", case.check_type or "error", body)
    elif case.outcome == "xpassed":
        _result(element, "failure", xpass_message(case), "xpass", body)
    elif case.outcome in ("skipped", "xfailed"):
        _result(element, "skipped", case.message or case.outcome, None, body)
    elif case.notes or judged or runs:
        ET.SubElement(element, "system-err").text = xml_safe(
            "\n".join([*([runs] if runs else []), *([judged] if judged else []), *case.notes])
        )
    steps = (
        case.actual_yaml if shown is None or case.outcome in shown else None
    )  # built only when shown
    if steps:
        ET.SubElement(element, "system-out").text = xml_safe(steps)
    return element


def _result(parent: ET.Element, tag: str, message: str, kind: str | None, body: str) -> None:
    """Append a failure/error/skipped element: one-line ``message`` (cut past ``MESSAGE_WIDTH``, the
    whole line then opening the body), optional ``type``, text body."""
    line = one_line(message)
    if len(line) > MESSAGE_WIDTH:
        body = f"{line}\n\n{body}" if body else line
        line = line[: MESSAGE_WIDTH - 1] + "…"
    element = ET.SubElement(parent, tag, {"message": xml_safe(line)})
    if kind:
        element.set("type", xml_safe(one_line(kind)))
    if body:
        element.text = xml_safe(body)


def xpass_message(case: CaseResult) -> str:
    """``XPASS(strict): reason`` for a case marked xfail that passed, whatever the runner wrote."""
    message = one_line(case.message)
    if message.startswith("XPASS"):
        return message
    return f"XPASS(strict): {message}" if message else "XPASS(strict)"
