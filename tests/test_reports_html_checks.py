"""The HTML report shows every failed check, not only the steps: each check's expected and actual in the
case's main view, a call `never` forbids marked as forbidden, and the calls of a broken `before` marked.

Runs real suites on real files, then opens the page in Debian's ``chromium`` through Playwright for Python
(no browser download); skips, saying why, when either is missing.
"""

from __future__ import annotations

import json
import shutil
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import trajrun
from trajrun.reports import html, json_report

EVIL = "<img src=x onerror=alert(1)>"
RUN = {"tool_calls": [
    {"name": "search", "args": {"q": "TP433"}, "turn": 0},
    {"name": "delete_all", "args": {}, "turn": 1},
    {"name": "book", "args": {"flight": "TP433"}, "turn": 2},
    {"name": EVIL, "args": {"x": "</pre><script>alert(2)</script>"}, "turn": 3},
], "answer": "Booked TP999 </pre><b>bold</b>"}
SUITE = """
cases:
  - name: answers and order
    source: run.json
    mode: superset
    steps: [search]
    never: [delete_all]
    before: [[book, search]]
    answer: Booked TP433
  - name: no steps check
    source: run.json
    never: ["<img src=x onerror=alert(1)>"]
    before: [["<img src=x onerror=alert(1)>", search]]
"""
Opener = Callable[[dict[str, Any]], Any]


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The JSON report of SUITE run on RUN, as ``trajrun run --json`` writes it."""
    folder = tmp_path_factory.mktemp("checks")
    (folder / "run.json").write_text(json.dumps(RUN), encoding="utf-8")
    (folder / "c.suite.yaml").write_text(textwrap.dedent(SUITE), encoding="utf-8")
    return json_report.render(trajrun.run_paths([str(folder / "c.suite.yaml")]))


def case(data: dict[str, Any], name: str) -> dict[str, Any]:
    """The case called ``name``."""
    return next(c for s in data["suites"] for c in s["cases"] if c["name"] == name)


def test_the_json_report_carries_each_checks_detail(report: dict[str, Any]) -> None:
    """``checks[]`` holds each failed check's detail: the expected and actual the page shows."""
    assert case(report, "answers and order")["checks"] == [
        {"check": "never", "summary": "delete_all", "detail": "delete_all called at turn 1, position 1"},
        {"check": "before", "summary": "book before search",
         "detail": "book before search: first book at turn 2, last search at turn 0"},
        {"check": "answer", "summary": "answer differs",
         "detail": 'expected: "Booked TP433"\nactual:   "Booked TP999 </pre><b>bold</b>"'},
    ]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless system Chromium for the module, driven by Playwright."""
    reason = "playwright is not installed: pip install -e '.[test]'"
    sync_api = pytest.importorskip("playwright.sync_api", reason=reason)
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.skip("no chromium on PATH: apt-get install -y chromium (Playwright's own browser download is not used)")
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=path)
        yield chromium
        chromium.close()


@pytest.fixture
def open_page(browser: Any, tmp_path: Path) -> Iterator[Opener]:
    """Open a report's page from a file; the test fails on a console error or warning (a CSP violation, a
    script error), an uncaught exception, a dialog (an injected ``alert``) or any request but the file."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    problems: list[str] = []
    page.on("console", lambda msg: msg.type in ("error", "warning") and problems.append(f"console: {msg.text}"))
    page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    page.on("dialog", lambda dialog: (problems.append(f"dialog: {dialog.message}"), dialog.dismiss()))
    page.on("request", lambda req: req.url.startswith(("file:", "data:")) or problems.append(f"request {req.url}"))

    def load(data: dict[str, Any]) -> Any:
        path = tmp_path / "report.html"
        html.write(data, path)
        page.goto(path.as_uri())
        assert page.evaluate("document.documentElement.hasAttribute('data-ready')")
        return page

    yield load
    page.close()
    assert not problems


def test_each_failed_check_shows_expected_and_actual_in_the_main_view(open_page: Opener, report: Any) -> None:
    """The answer's expected and actual, the never hit and the broken order are shown open, beside the
    summary, while the full console text stays folded."""
    page = open_page(report)
    body = page.locator("#cases > .case", has_text="answers and order").locator(".body")
    answer = body.locator("li[data-check=answer]")
    assert answer.locator("b").inner_text() == "answer"
    shown = answer.locator("pre.detail").inner_text()
    assert shown == 'expected: "Booked TP433"\nactual:   "Booked TP999 </pre><b>bold</b>"'
    assert answer.locator("pre.detail").is_visible()
    never = body.locator("li[data-check=never] pre.detail")
    assert never.inner_text() == "delete_all called at turn 1, position 1"
    before = body.locator("li[data-check=before] pre.detail")
    assert before.inner_text() == "book before search: first book at turn 2, last search at turn 0"
    assert body.locator("details.text").evaluate("d => d.open") is False
    assert page.locator("b", has_text="bold").count() == 0  # the answer is text, not markup


def test_a_call_never_forbids_is_red_and_labelled(open_page: Opener, report: Any) -> None:
    """Under superset a forbidden call is no grey `extra`: its verdict reads `forbidden`, in the colour of a
    failure, with a `forbidden by never` tag; the other extra call stays `extra`."""
    page = open_page(report)
    table = page.locator("#cases > .case", has_text="answers and order").locator("table.timeline")
    verdicts = table.locator("tbody tr[data-verdict]").evaluate_all("rows => rows.map(r => r.dataset.verdict)")
    assert verdicts == ["ok", "forbidden", "extra", "extra"]
    row = table.locator("tr[data-verdict=forbidden]")
    assert row.locator(".verdict .v").inner_text() == "forbidden"
    assert row.locator("td.exp").inner_text() == "never forbids this tool"
    assert row.locator("td.act .tag[data-check=never]").inner_text() == "forbidden by never"
    failed = page.evaluate("getComputedStyle(document.documentElement).getPropertyValue('--failed').trim()")
    colour = row.locator(".verdict .v").evaluate("v => getComputedStyle(v).backgroundColor")
    assert (failed, colour) == ("#cf222e", "rgb(207, 34, 46)")


def test_the_calls_of_a_broken_before_are_marked(open_page: Opener, report: Any) -> None:
    """`before: [[book, search]]` broken: the latest search and the earliest book each carry the order."""
    page = open_page(report)
    table = page.locator("#cases > .case", has_text="answers and order").locator("table.timeline")
    tags = table.locator("td.act").evaluate_all(
        "cells => cells.map(c => [c.querySelector('.callname').textContent,"
        " [...c.querySelectorAll('.tag[data-check=before]')].map(t => t.textContent)])")
    assert tags == [["search", ["before: book must come before search"]], ["delete_all", []],
                    ["book", ["before: book must come before search"]], [EVIL, []]]


def test_markers_without_a_steps_check_and_payloads_stay_text(open_page: Opener, report: Any) -> None:
    """With no steps check the table gains a verdict column for the forbidden call and the console text
    stays folded; a tool name holding markup is drawn as text in the table, the tags and the check
    details, and no script of it runs."""
    page = open_page(report)
    section = page.locator("#cases > .case", has_text="no steps check")
    table = section.locator("table.timeline")
    verdicts = table.locator("tbody tr[data-verdict]").evaluate_all("rows => rows.map(r => r.dataset.verdict)")
    assert verdicts == ["", "", "", "forbidden"]
    evil_row = table.locator("tr[data-verdict=forbidden] td.act")
    assert evil_row.locator(".callname").inner_text() == EVIL
    tags = evil_row.locator(".tag").all_inner_texts()
    assert tags == ["forbidden by never", f"before: {EVIL} must come before search"]
    assert section.locator("li[data-check=never] pre.detail").inner_text() == f"{EVIL} called at turn 3, position 3"
    assert section.locator("details.text").evaluate("d => d.open") is False  # the list above says it all
    assert page.locator("img").count() == 0 and page.locator("script").count() == 2
