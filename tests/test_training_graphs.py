"""Training steps as TVM writes them (`tests/data/training`: a forward function
differentiated by Relax's gradient pass and printed by TVM, `benchmarks/graphs/
relax_training.py`), where the order of the backward ops matters most: reordered within
a work budget, proven optimal, no worse than the program order or any of Inductor's
three orders, and the reordered program, planned, replays bit for bit against the
original's unplanned run."""

from __future__ import annotations

from pathlib import Path

import pytest

from optplan.analysis.liveness import build_memory
from optplan.frontends import load
from optplan.passes.reorder import reorder
from optplan.planners import get_planner
from optplan.problem.plan import validate
from optplan.runtime.replay import compare, make_inputs, planned_run, reference_run
from optplan.schedule import Scheduler

FILES = sorted((Path(__file__).parent / "data" / "training").glob("*.py"))


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_training_steps_reorder_to_a_proven_optimum_and_replay(path: Path) -> None:
    program = load(str(path)).program
    assert program is not None
    result = reorder(program, Scheduler("auto", time_limit=60, work=2_000_000))
    assert result.optimal
    assert result.peak_bytes < result.original_peak_bytes
    for heuristic in ("program", "lpmf", "bfs", "dfs"):
        assert result.peak_bytes <= reorder(program, Scheduler(heuristic)).peak_bytes
    memory = build_memory(result.program, alignment=1)
    plan = get_planner("cpsat", time_limit=10.0)(memory.problem)
    assert validate(memory.problem, plan) == []
    inputs = make_inputs(program)
    assert compare(reference_run(program, inputs), planned_run(result.program, memory, plan, inputs)) is None
