"""The rooms of ``trac_tasks`` (docs/architecture.md#trac_tasks-rooms): every module in one room, no import cycle
between modules (imports inside functions included), and a package import that imports no room."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import trac_tasks

PACKAGE_DIR = Path(trac_tasks.__file__).parent
ROOMS = ("harness", "generation", "engines", "data")


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(path): path for path in sorted(PACKAGE_DIR.rglob("*.py"))}


def _imported_modules(path: Path) -> set[str]:
    """Every ``trac_tasks`` module ``path`` imports, at module level or inside functions."""
    imported: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names if alias.name.startswith("trac_tasks")}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("trac_tasks"):
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                imported.add(submodule if submodule in MODULES else node.module)
    return imported


def test_every_module_lives_in_a_room():
    flat = [name for name in MODULES if name.count(".") == 1 and name.split(".")[1] not in ROOMS]
    assert flat == []
    assert {name.split(".")[1] for name in MODULES if name != "trac_tasks"} == set(ROOMS)


def _first_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of ``graph`` (a list of nodes whose last repeats an earlier one), or None when it has none."""
    state: dict[str, str] = {}

    def visit(name: str, trail: list[str]) -> list[str] | None:
        state[name] = "open"
        for successor in sorted(graph.get(name, ())):
            if state.get(successor) == "open":
                return [*trail, name, successor]
            if successor not in state and (cycle := visit(successor, [*trail, name])):
                return cycle
        state[name] = "done"
        return None

    return next((cycle for name in sorted(graph) if name not in state and (cycle := visit(name, []))), None)


def test_no_import_cycle_between_modules():
    # a package __init__ is imported on the way to its modules; the cycles that matter are between modules
    graph = {
        name: {m for m in _imported_modules(path) if m in MODULES and m != name and not name.startswith(m + ".")}
        for name, path in MODULES.items()
    }
    assert _first_cycle(graph) is None


def test_the_cycle_check_finds_cycles_through_imports_inside_functions(tmp_path):
    """The check is not vacuous: an import inside a function is an edge, and a two- or three-module cycle is found."""
    lazy = tmp_path / "lazy.py"
    lazy.write_text("def f():\n    from trac_tasks.engines.vllm_backend import VllmTracRunner\n")
    assert _imported_modules(lazy) == {"trac_tasks.engines.vllm_backend"}
    assert _first_cycle({"a": {"b"}, "b": {"a"}}) == ["a", "b", "a"]
    assert _first_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert _first_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


@pytest.mark.subprocess
def test_importing_the_package_imports_no_room():
    """``trac_tasks`` is imported at interpreter start: it must stay cheap."""
    code = (
        "import sys, trac_tasks; "
        "print(sorted(m for m in sys.modules if m.startswith('trac_tasks.') and m != 'trac_tasks.harness.autoload' "
        "and m != 'trac_tasks.harness'))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
