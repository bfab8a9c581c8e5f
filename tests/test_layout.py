"""The layout stays readable: no import circle between modules or between the parts
(the packages under `optplan/`), modules of at most 500 lines, functions of at most 60.

Every import counts, a deferred one inside a function or one for type checking too: a
circle drawn only at run time is still a circle to a reader. `from optplan.a import b`
is an import of the module `optplan.a.b` where that file exists, else of `optplan.a`.

The parts stand in floors, each importing only those below it:

    cli
    fitting, fuzz, strategies, integrations
    frontends
    runtime
    passes
    analysis, schedule
    planners
    ops, problem
    ir, errors, budget
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "optplan"
MODULE_LINES = 500
FUNCTION_LINES = 60
# numba kernels stay whole: a call between compiled functions costs a frame on the search's
# hottest loop, and the kernel reads as one algorithm (each has its steps in its docstring).
LONG_KERNELS = {
    "planners/search/floor.py:_expand",
    "planners/search/floor.py:_run",
    "schedule/remat/kernel.py:move_keys",
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _imported(path: Path) -> set[str]:
    """The optplan modules `path` imports, anywhere in the file."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            subs = [f"{node.module}.{alias.name}" for alias in node.names]
            names = [s for s in subs if s in MODULES] or [node.module]
        else:
            continue
        found.update(n for n in names if n in MODULES and n != _module_name(path))
    return found


GRAPH = {name: _imported(path) for name, path in MODULES.items()}


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """One circle of `graph`, or [] when it has none (depth-first, colours)."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return []

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return []


def _part(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "optplan"


def test_no_module_imports_itself_through_others() -> None:
    assert _cycle(GRAPH) == []


def test_the_parts_stand_in_floors() -> None:
    # The package's face (optplan/__init__, optplan.tvm, optplan.executorch) hands on names
    # from every floor, so it is left out.
    faces = {"optplan", "optplan.tvm", "optplan.executorch", "optplan.torch", "optplan.__main__"}
    parts: dict[str, set[str]] = {}
    for module, imported in GRAPH.items():
        if module in faces:
            continue
        parts.setdefault(_part(module), set()).update(
            _part(m) for m in imported if m not in faces and _part(m) != _part(module)
        )
    assert _cycle(parts) == []


@pytest.mark.parametrize("name", sorted(MODULES))
def test_modules_stay_small(name: str) -> None:
    lines = len(MODULES[name].read_text().splitlines())
    assert lines <= MODULE_LINES, f"{name} has {lines} lines; split it by what its parts do"


def test_functions_fit_on_a_screen() -> None:
    long = []
    for path in MODULES.values():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                where = f"{path.relative_to(PACKAGE)}:{node.name}"
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > FUNCTION_LINES and where not in LONG_KERNELS:
                    long.append(f"{where} ({length} lines)")
    assert long == []
