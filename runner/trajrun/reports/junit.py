"""JUnit XML report: a pure ``render`` to an Element tree valid under junit-10.xsd, and an atomic ``write``."""

from __future__ import annotations

import os
import socket
import xml.etree.ElementTree as ET
from datetime import datetime

from ..run.results import CaseResult, RunResult, SuiteResult
from ..files import atomic_write
from .junit_records import record_outcomes
from .text import judge_text, one_line, seconds, xml_safe

UNNAMED = "(unnamed)"
LOAD_CASE = "(load)"
LOAD_MESSAGE = "suite could not be loaded"
SYSTEM_OUT = ("failed", "all", "none")
"""Which cases carry their actual steps in ``<system-out>``: ``failed`` (failed, erred, xpassed), every one, none."""
MESSAGE_WIDTH = 300
"""Past this many characters a ``message`` attribute is cut (with ``…``); the body holds the whole text."""
_SHOWN = {"failed": frozenset({"failed", "error", "xpassed"}), "all": None, "none": frozenset()}


def render(run: RunResult, *, file_line: bool = False, hostname: str | None = None,
           system_out: str = "failed", each: str = "case") -> ET.Element:
    """The whole report as ``<testsuites>``: one ``<testsuite>`` per suite file, load failures included.

    ``file_line`` adds ``file`` and a 1-based ``line`` to every testcase for annotation tools
    (GitLab, action-junit-report); it breaks junit-10.xsd, so it is opt-in. ``system_out`` (one of
    ``SYSTEM_OUT``) says which cases carry their actual steps: by default only those that did not
    pass, since nobody reads a passing case's run and it made most of a large report. ``each="record"`` makes a
    bulk case one testcase per record (when its per-record lines were written).
    """
    host = hostname if hostname is not None else socket.gethostname()
    root = ET.Element("testsuites", {"name": "trajrun"})
    seen: set[tuple[str, str]] = set()
    shown = _SHOWN[system_out]
    suites = [_suite(s, host, seen, file_line, shown, each) for s in run.suites]
    totals = {key: sum(int(s.get(key, "0")) for s in suites) for key in ("tests", "failures", "errors")}
    root.attrib.update({key: str(value) for key, value in totals.items()})
    root.set("time", seconds(run.duration))
    root.extend(suites)
    return root


def write(run: RunResult, path: str | os.PathLike[str], *, file_line: bool = False, system_out: str = "failed",
          each: str = "case") -> None:
    """Render ``run`` and write it to ``path`` atomically, as UTF-8 with an XML declaration."""
    tree = ET.ElementTree(render(run, file_line=file_line, system_out=system_out, each=each))
    ET.indent(tree)
    atomic_write(path, lambda handle: tree.write(handle, encoding="utf-8", xml_declaration=True))


def _suite(suite: SuiteResult, host: str, seen: set[tuple[str, str]], file_line: bool,
           shown: frozenset[str] | None, each: str = "case") -> ET.Element:
    """One ``<testsuite>`` with its counts, properties and testcases."""
    if suite.load_errors:
        cases = [_load_case(suite, seen, file_line)]
        counts = {"tests": 1, "failures": 0, "errors": 1, "skipped": 0}
    else:
        cases = [_case(c, seen, file_line, shown) for c in suite.cases]
        counts = _suite_counts(suite.cases)
        if each == "record" and any(c.bulk is not None and c.bulk.records_file for c in suite.cases):
            cases = [e for c in suite.cases for e in _per_record(c, seen, file_line, shown)]
            counts = _element_counts(cases)
    element = ET.Element("testsuite", {"name": xml_safe(one_line(_suite_name(suite))) or UNNAMED})
    element.attrib.update({key: str(value) for key, value in counts.items()})
    element.set("time", seconds(suite.duration or sum(c.duration for c in suite.cases)))
    element.set("timestamp", _timestamp(suite.timestamp))
    element.set("hostname", xml_safe(one_line(host)) or "localhost")
    element.append(_properties(suite))
    element.extend(cases)
    return element


def _suite_name(suite: SuiteResult) -> str:
    """The suite's name; a suite that could not be loaded is named by its file."""
    return suite.file if suite.load_errors else suite.name or suite.file


def _suite_counts(cases: tuple[CaseResult, ...]) -> dict[str, int]:
    """JUnit's counts: xpassed is a failure, xfailed a skip, and ``tests`` counts every testcase."""
    outcomes = [c.outcome for c in cases]
    return {
        "tests": len(outcomes),
        "failures": outcomes.count("failed") + outcomes.count("xpassed"),
        "errors": outcomes.count("error"),
        "skipped": outcomes.count("skipped") + outcomes.count("xfailed"),
    }


def _per_record(case: CaseResult, seen: set[tuple[str, str]], file_line: bool,
                shown: frozenset[str] | None) -> list[ET.Element]:
    """A bulk case's testcases, one per record; any other case's one."""
    if case.bulk is None or not case.bulk.records_file:
        return [_case(case, seen, file_line, shown)]
    elements = []
    for name, tag, message, kind in record_outcomes(case):
        element = _testcase(case.suite, name, seen, 0.0)
        if file_line:
            element.attrib.update({"file": xml_safe(case.file), "line": str(max(case.line, 1))})
        if tag is not None:
            _result(element, tag, message, kind, "")
        elements.append(element)
    return elements


def _element_counts(cases: list[ET.Element]) -> dict[str, int]:
    """JUnit's counts from the testcases themselves (``failure``, ``error``, ``skipped`` children)."""
    tags = [child.tag for case in cases for child in case if child.tag in ("failure", "error", "skipped")]
    return {"tests": len(cases), "failures": tags.count("failure"), "errors": tags.count("error"),
            "skipped": tags.count("skipped")}


def _timestamp(moment: datetime) -> str:
    """``YYYY-MM-DDTHH:MM:SS``: no zone and no fraction, which both common XSDs accept."""
    return moment.strftime("%Y-%m-%dT%H:%M:%S")


def _properties(suite: SuiteResult) -> ET.Element:
    """Suite-level figures: file, case count, tool calls, tokens and mean score where known."""
    figures: dict[str, object] = {"file": suite.file, "cases": len(suite.cases)}
    trajectories = [c.trajectory for c in suite.cases if c.trajectory is not None]
    if trajectories:
        figures["tool_calls"] = sum(len(t.calls) for t in trajectories)
    if suite.usage is not None:
        figures.update(suite.usage.to_dict())
    scores = [c.score for c in suite.cases if c.score is not None]
    if scores:
        figures["mean_score"] = f"{sum(scores) / len(scores):.3f}"
    judged = [v.score for c in suite.cases if c.evaluation and (v := c.evaluation.judge) and v.score is not None]
    if judged:
        figures["judge_mean_score"] = f"{sum(judged) / len(judged):.3f}"
    element = ET.Element("properties")
    for name, value in figures.items():
        ET.SubElement(element, "property", {"name": name, "value": xml_safe(one_line(str(value)))})
    return element


def _unique(classname: str, name: str, seen: set[tuple[str, str]]) -> tuple[str, str]:
    """A non-empty classname and name whose pair no earlier testcase used (GitLab drops duplicates)."""
    classname = xml_safe(one_line(classname)) or UNNAMED
    base = xml_safe(one_line(name)) or UNNAMED
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


def _case(case: CaseResult, seen: set[tuple[str, str]], file_line: bool, shown: frozenset[str] | None) -> ET.Element:
    """One ``<testcase>``: its result element by outcome, the actual steps in ``<system-out>``."""
    element = _testcase(case.suite, case.name, seen, case.duration)
    if file_line:
        element.attrib.update({"file": xml_safe(case.file), "line": str(max(case.line, 1))})
    body = "\n\n".join(p for p in (case.message, case.details) if p) if case.outcome == "error" else case.details
    body = body or case.message
    verdict = case.evaluation.judge if case.evaluation else None
    judged = judge_text(verdict) if verdict is not None and verdict.passed else ""  # a failing one is in the details
    if judged and case.outcome != "passed":
        body = "\n\n".join(p for p in (body, judged) if p)
    if case.notes:
        body = "\n\n".join([body, *case.notes]) if body else "\n".join(case.notes)
    if case.outcome == "failed":
        _result(element, "failure", case.message or "failed", case.check_type or "failure", body)
    elif case.outcome == "error":
        _result(element, "error", case.message or "error", case.check_type or "error", body)
    elif case.outcome == "xpassed":
        _result(element, "failure", xpass_message(case), "xpass", body)
    elif case.outcome in ("skipped", "xfailed"):
        _result(element, "skipped", case.message or case.outcome, None, body)
    elif case.notes or judged:
        ET.SubElement(element, "system-err").text = xml_safe("\n".join([*([judged] if judged else []), *case.notes]))
    steps = case.actual_yaml if shown is None or case.outcome in shown else None  # built only when shown
    if steps:
        ET.SubElement(element, "system-out").text = xml_safe(steps)
    return element


def _result(parent: ET.Element, tag: str, message: str, kind: str | None, body: str) -> None:
    """Append a failure/error/skipped element: one-line ``message`` (cut past ``MESSAGE_WIDTH``, the whole
    line then opening the body), optional ``type``, text body."""
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
