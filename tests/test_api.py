"""The public library API in ``trajrun/__init__.py``: every name resolves, importing stays lazy."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import trajrun

ROOT = Path(__file__).resolve().parents[1]
WEATHER = ROOT / "suites" / "weather.suite.yaml"


@pytest.mark.parametrize("name", sorted(set(trajrun.__all__) - {"__version__"}))
def test_every_public_name_resolves(name: str) -> None:
    """Each name in ``__all__`` loads, and is the object its module defines."""
    value = getattr(trajrun, name)
    assert value is not None
    assert name in dir(trajrun)


def test_unknown_name_is_an_attribute_error() -> None:
    """A misspelt name fails like any module attribute, naming it."""
    with pytest.raises(AttributeError, match="evalute"):
        trajrun.evalute  # noqa: B018  # type: ignore[attr-defined]


def test_import_loads_no_submodule() -> None:
    """``import trajrun`` alone imports none of the layers (start-up stays cheap)."""
    code = "import sys, trajrun; print(sorted(m for m in sys.modules if m.startswith('trajrun')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['trajrun']"


def test_run_suite_selects_with_options() -> None:
    """``run_suite`` runs a loaded suite's cases; ``RunOptions`` selects as ``-k`` does."""
    suite = trajrun.load_suite(WEATHER)
    every = trajrun.run_suite(suite, trajrun.RunOptions(root=ROOT))
    assert [c.name for c in every.cases] == [c.name for c in suite.cases]
    some = trajrun.run_suite(suite, trajrun.RunOptions(keyword="parallel", root=ROOT))
    assert 0 < len(some.cases) < len(suite.cases)
    assert all("parallel" in c.name for c in some.cases)


def test_run_returns_what_the_cli_exits_with() -> None:
    """``run_paths`` over a folder gives the run result whose exit code ``trajrun run`` uses."""
    result = trajrun.run_paths([WEATHER], trajrun.RunOptions(root=ROOT))
    assert result.exit_code() == 0
    assert result.counts()["passed"] == len(result.cases) > 0


def test_load_suite_raises_every_error(tmp_path: Path) -> None:
    """Bad input raises ``SuiteErrors`` (a ``TrajrunError``) listing each problem with its location."""
    bad = tmp_path / "bad.suite.yaml"
    bad.write_text("cases:\n  - name: a\n    source: run.json\n    setps: [x]\n    mode: sideways\n", encoding="utf-8")
    with pytest.raises(trajrun.SuiteErrors) as info:
        trajrun.load_suite(bad)
    text = str(info.value)
    assert f"{bad}:4:5: cases[0].setps: unknown key 'setps'" in text
    assert "cases[0].mode: unknown match mode 'sideways'" in text
    assert isinstance(info.value, trajrun.TrajrunError)
