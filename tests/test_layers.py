"""The package's layers: every import (at module level, inside a function, or under
``if TYPE_CHECKING:``) points down, and no module imports itself back through others.

core (collector, errors, files, limits, trajectory, yaml_core, yaml_items) → sources →
match → suites → importers → run → reports → entry (cli, cli_run, cli_shared, cli_config,
cli_watch, pytest_plugin, __main__, the package's __init__).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import trajrun

PACKAGE = Path(trajrun.__file__).parent
LAYERS = ("core", "sources", "match", "suites", "importers", "run", "reports", "entry")
CORE = ("trajrun.collector", "trajrun.errors", "trajrun.files", "trajrun.limits", "trajrun.trajectory",
        "trajrun.yaml_core", "trajrun.yaml_items")
ENTRY = ("trajrun", "trajrun.__main__", "trajrun.cli", "trajrun.cli_run", "trajrun.cli_shared",
         "trajrun.pytest_plugin", "trajrun.cli_config", "trajrun.cli_watch")


def _name(path: Path) -> str:
    """The dotted module name of a file in the package."""
    parts = ["trajrun", *path.relative_to(PACKAGE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def layer(module: str) -> int:
    """The layer index of a module of the package."""
    if module in CORE:
        return 0
    if module in ENTRY:
        return LAYERS.index("entry")
    return LAYERS.index(module.split(".")[1])


def _target(module: str, node: ast.ImportFrom, alias: ast.alias) -> str:
    """The package module an import names (a submodule when the imported name is one)."""
    if node.level:
        base = module.split(".")
        if MODULES[module].name != "__init__.py":
            base = base[:-1]
        base = base[: len(base) - node.level + 1]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    return f"{target}.{alias.name}" if f"{target}.{alias.name}" in MODULES else target


def imports(module: str) -> set[str]:
    """Every package module that ``module`` imports, anywhere in the file: ``if TYPE_CHECKING:``
    blocks too: a typing-only import ties two modules together for a reader and a type checker."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(MODULES[module].read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            found.update(_target(module, node, alias) for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {t for t in found if t in MODULES and t != module}


def test_every_module_belongs_to_a_layer() -> None:
    """A new top-level module must be placed in a layer on purpose."""
    for module in MODULES:
        assert 0 <= layer(module) < len(LAYERS), module


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_point_down(module: str) -> None:
    """No module imports from a layer above its own."""
    upward = sorted(t for t in imports(module) if layer(t) > layer(module))
    assert not upward, f"{module} ({LAYERS[layer(module)]}) imports upward: {upward}"


def test_no_import_cycles() -> None:
    """The module graph (function-level and typing-only imports included) has no cycle."""
    graph = {m: imports(m) for m in MODULES}
    state: dict[str, int] = {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycle = stack[stack.index(nxt):] + [nxt] if nxt in stack else [node, nxt]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt, [*stack, nxt])
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])


def test_function_level_imports_say_why() -> None:
    """An import inside a function is there to defer a heavy or optional import, and says so."""
    for module, path in MODULES.items():
        lines = path.read_text(encoding="utf-8").splitlines()
        for node in ast.walk(ast.parse("\n".join(lines))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for inner in ast.walk(node):
                    if isinstance(inner, (ast.Import, ast.ImportFrom)):
                        # the comment may sit on any line of an import wrapped over several
                        text = "\n".join(lines[inner.lineno - 1 : inner.end_lineno])
                        assert "# deferred" in text, f"{module}:{inner.lineno}: {text.strip()}"


def test_the_fixture_detects_an_upward_import(tmp_path: Path) -> None:
    """The checker itself: a match module importing from suites is flagged."""
    MODULES["trajrun.match.fake"] = tmp_path / "fake.py"
    try:
        (tmp_path / "fake.py").write_text("def f():\n    from ..suites.load import load_suite\n")
        assert imports("trajrun.match.fake") == {"trajrun.suites.load"}
        assert layer("trajrun.suites.load") > layer("trajrun.match.fake")
    finally:
        del MODULES["trajrun.match.fake"]


def test_the_fixture_sees_typing_only_imports(tmp_path: Path) -> None:
    """The checker itself: an import under ``if TYPE_CHECKING:`` counts, so a typing-only cycle is
    one too."""
    MODULES["trajrun.sources.fake"] = tmp_path / "fake.py"
    try:
        (tmp_path / "fake.py").write_text("from typing import TYPE_CHECKING\n\n"
                                          "if TYPE_CHECKING:\n    from .documents import Path\n")
        assert imports("trajrun.sources.fake") == {"trajrun.sources.documents"}
    finally:
        del MODULES["trajrun.sources.fake"]
