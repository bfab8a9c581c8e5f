"""The covering bound on extra compute (`remat.lower.covering_bound`) against the search
of every schedule and a brute force over step sequences: it is never above the least
extra compute of any schedule within the budget, on awkward graphs (buffers live in and
out, bytes held across the block, ops that may not run again, sizes and costs of 0)."""

from __future__ import annotations

import time

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from optplan.schedule.graph import Graph, peak_bytes
from optplan.schedule.remat.exhaustive import every_schedule
from optplan.schedule.remat.heuristic import extra_cost
from optplan.schedule.remat.lower import covering_bound
from tests.test_exhaustive import brute_force
from tests.test_remat_awkward import awkward_graphs

# a makes A (5 bytes), b reads A, c reads b's B, d reads A and c's C. At c's step A is
# held for d unless it is made again after: a budget of 6 needs a to run twice.
CHAIN = Graph(
    sizes=(5, 1, 1, 0),
    creates=((0,), (1,), (2,), (3,)),
    reads=((), (0,), (1,), (0, 2)),
    preds=((), (0,), (1,), (0, 2)),
    costs=(3, 4, 1, 1),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(awkward_graphs(max_ops=4, order_only=2), st.integers(0, 45))
@example((CHAIN, (True, True, True, True)), 6)
def test_the_covering_bound_is_never_above_the_least_extra_compute(
    drawn: tuple[Graph, tuple[bool, ...]], budget: int
) -> None:
    graph, allowed = drawn
    bound = covering_bound(graph, budget, list(allowed))
    fitting = brute_force(graph, list(allowed), budget)
    assert all(bound.cost <= extra_cost(graph, s) for s in fitting)
    if bound.unmet:
        assert fitting == []  # a row no choice meets proves that nothing fits


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(awkward_graphs(max_ops=7, order_only=2), st.integers(0, 60))
def test_the_covering_bound_holds_against_the_search_of_every_schedule(
    drawn: tuple[Graph, tuple[bool, ...]], budget: int
) -> None:
    graph, allowed = drawn
    every = every_schedule(graph, budget, list(allowed), time.perf_counter() + 30)
    if every is None or every.steps is None:
        return
    assert peak_bytes(graph, every.steps) <= budget
    assert covering_bound(graph, budget, list(allowed)).cost <= every.cost


def test_the_covering_bound_is_above_zero_where_a_run_again_is_forced() -> None:
    assert covering_bound(CHAIN, 7).cost == 0  # every step of the program order fits
    assert covering_bound(CHAIN, 6).cost == 3  # a runs again: a, b, c, a, d
    every = every_schedule(CHAIN, 6, [True] * 4, time.perf_counter() + 30)
    assert every is not None and every.cost == 3
    assert covering_bound(CHAIN, 5).unmet  # d's own step holds 6: nothing fits
