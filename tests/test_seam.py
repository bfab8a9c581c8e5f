"""The Problem seam: planners, the problem and the plan never import the IR side.

Everything left of `Problem` (IR, frontends, analyses, passes, executors) may import the
planners; nothing under `optplan/planners/` or `optplan/problem/` may import it back. That keeps planners testable on bare CSV problems and usable without any IR.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "optplan"
PLANNER_SIDE = sorted([*(PACKAGE / "problem").rglob("*.py"), *(PACKAGE / "planners").rglob("*.py")])
ALLOWED = ("optplan.problem", "optplan.planners", "optplan.errors", "optplan.budget")


def _imports(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
    return names


@pytest.mark.parametrize("path", PLANNER_SIDE, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_planner_side_imports_nothing_of_the_ir(path: Path) -> None:
    ours = [name for name in _imports(path) if name == "optplan" or name.startswith("optplan.")]
    strays = [name for name in ours if not name.startswith(ALLOWED)]
    assert strays == [], f"{path.relative_to(PACKAGE)} crosses the Problem seam: {strays}"
