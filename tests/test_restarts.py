"""First-run orders drawn at random (`remat.restarts.freeing_orders`): each a valid order of
the graph, none twice, ending on small graphs; and the case they were made for, TVM's
attention training step at half its peak, rewritten and replayed bit for bit."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optplan.analysis.liveness import build_memory
from optplan.frontends import load
from optplan.passes.recompute import recompute
from optplan.planners import get_planner
from optplan.problem import Problem, lower_bound, one_arena
from optplan.problem.plan import Status, validate
from optplan.runtime.replay import compare, make_inputs, planned_run, reference_run
from optplan.schedule.graph import Graph
from optplan.schedule.remat.restarts import freeing_orders

TRAINING = Path(__file__).resolve().parent / "data" / "training"


@st.composite
def graphs(draw: st.DrawFn) -> Graph:
    """A DAG of up to 7 ops, each making one buffer (sizes include 0), with order edges
    beside the reads."""
    n = draw(st.integers(1, 7))
    reads = [
        tuple(sorted(draw(st.sets(st.integers(0, v - 1), max_size=3)))) if v else ()
        for v in range(n)
    ]
    preds = [
        tuple(sorted(set(r) | draw(st.sets(st.integers(0, v - 1), max_size=2)))) if v else ()
        for v, r in enumerate(reads)
    ]
    sizes = tuple(draw(st.lists(st.integers(0, 9), min_size=n, max_size=n)))
    return Graph(sizes, tuple((v,) for v in range(n)), tuple(reads), tuple(preds))


def _every_order(graph: Graph) -> set[tuple[int, ...]]:
    return {
        order
        for order in itertools.permutations(range(graph.ops))
        if all(order.index(u) < order.index(v) for v in range(graph.ops) for u in graph.preds[v])
    }


@settings(max_examples=60, deadline=None)
@given(graphs())
def test_orders_are_the_graphs_each_once_and_end(graph: Graph) -> None:
    drawn = list(freeing_orders(graph))
    assert len(drawn) == len(set(drawn))
    assert set(drawn) <= _every_order(graph)
    assert drawn  # a graph with an order has one drawn


def test_a_cycle_gives_no_order() -> None:
    graph = Graph((1, 1), ((0,), (1,)), ((1,), (0,)), ((1,), (0,)))
    assert list(freeing_orders(graph)) == []


def test_the_attention_step_at_half_its_peak_is_rewritten_and_replays() -> None:
    """Every heuristic stops at 52.7 % of its peak from the searched orders; from the
    orders drawn, 50 % is met and packs."""
    program = load(str(TRAINING / "attention_train.py")).program
    assert program is not None
    capacity = math.ceil(lower_bound(build_memory(program, alignment=64).problem) * 0.5)
    result = recompute(program, capacity, time_limit=30.0)
    assert result.status.has_plan, result.reason
    memory = build_memory(result.program, alignment=64)
    problem = Problem(memory.problem.buffers, memory.problem.aliases, memories=one_arena(capacity))
    plan = get_planner("cpsat", time_limit=10.0)(problem)
    assert plan.status.has_plan and validate(problem, plan) == []
    inputs = make_inputs(program, seed=0)
    assert (
        compare(reference_run(program, inputs), planned_run(result.program, memory, plan, inputs))
        is None
    )


def test_a_schedule_outside_the_models_spaces_is_not_called_optimal_on_their_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """mlp_train at 80 % of its peak: the exact model's bound in its stage spaces (first
    runs in the searched orders) is above +16.3 % (it proved +16.79 % the least there);
    orders drawn at random do better (+2.80 %). A schedule cheaper than the model's
    bound lies outside its spaces, so the bound says nothing of it: FEASIBLE, with no
    bound above what holds for every schedule. The search of every schedule is kept
    off: here it ends (+0.51 %, optimal over all) in about the time it is given (5,091
    sets of held buffers in 3.7 s of 3.75), so whether it ends moves with the load."""
    from benchmarks.graphs.training import mlp_train
    from optplan.schedule import remat

    monkeypatch.setattr(remat, "EXHAUSTIVE_OPS", 0)
    program = mlp_train()
    capacity = math.ceil(lower_bound(build_memory(program, alignment=64).problem) * 0.8)
    result = recompute(program, capacity, time_limit=30.0)
    assert result.status.has_plan, result.reason
    assert result.extra_percent < 16.3  # from an order drawn at random
    assert result.status is Status.FEASIBLE and result.bound_cost < result.extra_cost
