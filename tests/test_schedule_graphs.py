"""The benchmark graphs: the exact scheduler proves its order optimal on every graph of up
to 40 ops, beats or ties Inductor's orders, and the reordered program replays bit for bit
against the original program."""

from __future__ import annotations

import pytest

from benchmarks.graphs import GRAPHS
from optplan.analysis.liveness import build_memory
from optplan.passes.reorder import block_graphs, reorder
from optplan.planners import get_planner
from optplan.problem.plan import validate
from optplan.runtime.replay import compare, make_inputs, planned_run, reference_run
from optplan.schedule import Scheduler

SMALL = [name for name in GRAPHS if name not in ("randwire_24", "randwire_48")]


@pytest.mark.parametrize("name", SMALL)
def test_exact_is_proven_optimal_and_replays(name: str) -> None:
    program = GRAPHS[name]()
    (graph,) = block_graphs(program)
    result = reorder(program, Scheduler("exact", time_limit=20))
    if graph.ops <= 40:
        assert result.optimal
    for heuristic in ("program", "lpmf", "bfs", "dfs"):
        assert result.peak_bytes <= reorder(program, Scheduler(heuristic)).peak_bytes
    memory = build_memory(result.program, alignment=1)
    plan = get_planner("cpsat", time_limit=10.0)(memory.problem)
    assert validate(memory.problem, plan) == []
    assert plan.arena == result.peak_bytes
    inputs = make_inputs(program)
    assert (
        compare(reference_run(program, inputs), planned_run(result.program, memory, plan, inputs))
        is None
    )
