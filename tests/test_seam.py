"""The Problem seam: planners, the problem and the plan never import the IR side.

Everything left of `Problem` (IR, frontends, analyses, passes, executors) may import the
planners; nothing under `optplan/planners/`, nor `problem.py` or `plan.py`, may import it
back. That keeps planners testable on bare CSV problems and usable without any IR.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "optplan"
PLANNER_SIDE = sorted(
    [PACKAGE / "problem.py", PACKAGE / "plan.py", *(PACKAGE / "planners").glob("*.py")]
)
ALLOWED = ("optplan.problem", "optplan.plan", "optplan.planners", "optplan.errors")


def _imports(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
    return names


@pytest.mark.parametrize("path", PLANNER_SIDE, ids=lambda p: p.name)
def test_planner_side_imports_nothing_of_the_ir(path: Path) -> None:
    ours = [name for name in _imports(path) if name == "optplan" or name.startswith("optplan.")]
    strays = [name for name in ours if not name.startswith(ALLOWED)]
    assert strays == [], f"{path.name} crosses the Problem seam: {strays}"
