"""The deep pass of step 3 (`anytime.deep`: the tabu search at targets below the
budget, then the packing rounds at that target): every schedule it gives runs every op
in a valid order, keeps the ops that cannot run twice to one run, is within the budget
in live bytes, and its plan is judged valid by `validate` within the budget less the
bytes live across; its extra compute is the schedule's. Drawn on the awkward graphs
(two buffers or none per op, views, sizes of 0, bytes live across, odd alignments, ops
that cannot run twice), at budgets from the proven memory bound to above the program
order's peak, from the program order and an order drawn at random."""

from __future__ import annotations

import time

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from optplan.problem import Problem
from optplan.problem.plan import validate
from optplan.schedule.graph import Graph, problem_of
from optplan.schedule.remat.anytime import Call, deep
from optplan.schedule.remat.bounds import is_valid_steps, memory_bound
from optplan.schedule.remat.heuristic import TABU, extra_cost, profile_of
from optplan.schedule.remat.packing import Nearest
from optplan.schedule.remat.restarts import freeing_orders
from tests.test_remat_awkward import awkward_graphs


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(awkward_graphs(max_ops=7), st.sampled_from((1, 2, 8, 64)), st.floats(0.0, 1.2))
def test_a_deep_schedule_is_valid_and_fits(drawn: tuple[Graph, tuple[bool, ...]], alignment: int, scale: float) -> None:
    graph, allowed = drawn
    program = tuple(range(graph.ops))
    peak = int(profile_of(graph, program).max(initial=0))
    low = memory_bound(graph, allowed, alignment).bytes
    budget = max(graph.base_bytes, low + int(scale * (peak - low)))
    call = Call(graph, budget, alignment, list(allowed), Nearest(graph, alignment, budget))
    found = deep(call, [program, next(freeing_orders(graph), program)], time.perf_counter() + 20)
    event("packed" if found is not None else "nothing")
    if found is None:
        return
    assert found.method == TABU
    assert is_valid_steps(graph, found.steps, allowed)
    assert int(profile_of(graph, found.steps).max(initial=0)) <= budget
    assert found.extra == extra_cost(graph, found.steps)
    problem = problem_of(graph, found.steps, alignment)
    assert validate(Problem(problem.buffers, problem.aliases, budget - graph.base_bytes), found.plan) == []
