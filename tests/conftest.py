"""Shared test set-up: pytester for the plugin tests (without unrelated plugins), and the collector's thresholds restored after each test."""

from __future__ import annotations

import gc
import importlib
from collections.abc import Iterator
from pathlib import Path

import pytest
import trajrun

pytest_plugins = ["pytester"]


@pytest.fixture(autouse=True)
def _gc_thresholds() -> Iterator[None]:
    """``trajrun run`` tunes the garbage collector for its own process; in-process CLI tests must not leak that."""
    thresholds = gc.get_threshold()
    yield
    gc.set_threshold(*thresholds)


# Plugins of other packages in the test extra (LangSmith comes with LangGraph): each takes up to a second
# to import in every pytest that pytester starts, and none of them is what the plugin tests test.
OTHER_PLUGINS = "-p no:langsmith_plugin -p no:hypothesispytest -p no:anyio"


@pytest.fixture(scope="session")
def _trajrun_imported() -> None:
    """Every trajrun module, imported once: pytester drops the modules an in-process run imports, and the next run
    would import them again, assertion-rewritten (trajrun is a pytest plugin) and compiled, ~0.3 s a run."""
    root = Path(trajrun.__file__).parent
    for path in root.rglob("*.py"):
        name = ".".join(("trajrun", *path.relative_to(root).with_suffix("").parts)).removesuffix(".__init__")
        if name != "trajrun.__main__":  # it runs the CLI on import
            importlib.import_module(name)


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, _trajrun_imported: None) -> pytest.Pytester:
    """pytester whose inner pytest runs load trajrun's plugin (from its entry point) but not the others'."""
    monkeypatch.setenv("PYTEST_ADDOPTS", OTHER_PLUGINS)
    return pytester
