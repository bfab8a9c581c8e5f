"""Ruin and recreate (`remat.recreate`): from a schedule the peak heuristic met within a
target, every schedule it gives runs every op in a valid order, keeps the ops that may
not run again to one run, holds at most the target at every step by the independent
count (`schedule.graph.step_bytes`), costs no more extra compute than the schedule it
started from, and is the same on a second call; with the ruin drawn anywhere or local
(runs again next to each other). Drawn on the awkward graphs (two
buffers or none per op, views, sizes and costs of 0, bytes live across, ops that may
not run again), at targets from the proven memory bound to the program order's peak."""

from __future__ import annotations

import time

import numpy as np
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from optplan.schedule.graph import Graph, step_bytes
from optplan.schedule.remat.bounds import is_valid_steps
from optplan.schedule.remat.heuristic import RANKS, extra_cost, greedy, relieved
from optplan.schedule.remat.recreate import recreate, relieved_again
from tests.test_remat_awkward import awkward_graphs, budget_between


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    awkward_graphs(max_ops=8),
    st.floats(0.0, 1.0),
    st.sampled_from(RANKS),
    st.integers(0, 3),
    st.booleans(),
)
def test_a_recreated_schedule_is_valid_within_the_target_and_no_dearer(
    drawn: tuple[Graph, tuple[bool, ...]], scale: float, rank: str, seed: int, local: bool
) -> None:
    graph, allowed = drawn
    program = tuple(range(graph.ops))
    target = budget_between(graph, allowed, scale)
    start = greedy(graph, program, target, allowed, time.perf_counter() + 10, rank)
    event("met" if start is not None else "not met")
    if start is None:
        return

    def recreated() -> tuple[int, ...]:
        deadline = time.perf_counter() + 10
        return recreate(graph, start, target, allowed, deadline, 30, seed, local)

    found = recreated()
    assert is_valid_steps(graph, found, allowed)
    assert max(step_bytes(graph, found), default=graph.base_bytes) <= target
    assert extra_cost(graph, found) <= extra_cost(graph, start)
    event("cheaper" if extra_cost(graph, found) < extra_cost(graph, start) else "as dear")
    assert recreated() == found


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(awkward_graphs(max_ops=8), st.floats(0.0, 1.0), st.booleans(), st.data())
def test_a_recreated_schedule_keeps_each_steps_relief(
    drawn: tuple[Graph, tuple[bool, ...]], scale: float, local: bool, data: st.DataObject
) -> None:
    """With the target lowered at some steps (the packing rounds' relief), every step of
    the schedule it gives holds at most the target less its relief, by the independent
    count, and it is valid and no dearer."""
    graph, allowed = drawn
    program = tuple(range(graph.ops))
    target = budget_between(graph, allowed, scale)
    drawn_relief = data.draw(st.lists(st.integers(0, 6), min_size=graph.ops, max_size=graph.ops))
    relief = np.array(drawn_relief, dtype=np.int64)
    start = relieved(graph, program, target, allowed, time.perf_counter() + 10, "cost", relief)
    event("met" if start is not None else "not met")
    if start is None:
        return
    deadline = time.perf_counter() + 10
    steps, each = relieved_again(graph, start, target, allowed, deadline, 30, 0, local)
    assert is_valid_steps(graph, steps, allowed)
    assert len(each) == len(steps)
    held = step_bytes(graph, steps)
    assert all(h + int(r) <= target for h, r in zip(held, each.tolist()))
    assert extra_cost(graph, steps) <= extra_cost(graph, start[0])
