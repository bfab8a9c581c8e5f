"""The search of every schedule (`remat.exhaustive.every_schedule`) against a brute force over step
sequences, on small graphs with buffers live in and out, bytes held across the block,
ops that may not run again, sizes and costs of 0."""

from __future__ import annotations

import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from optplan.budget import Budget, now, running
from optplan.problem.plan import Status
from optplan.schedule.graph import Graph, peak_bytes
from optplan.schedule.remat import Remat, is_valid_steps, memory_bound, rematerialise
from optplan.schedule.remat.exhaustive import every_schedule
from optplan.schedule.remat.heuristic import extra_cost
from tests.test_remat import schedules
from tests.test_remat_awkward import awkward_graphs


@st.composite
def cases(draw: st.DrawFn) -> tuple[Graph, list[bool], int]:
    """An awkward graph of up to 4 ops (`test_remat_awkward.awkward_graphs`), which ops
    may run again, and a budget."""
    graph, allowed = draw(awkward_graphs(max_ops=4, order_only=2))
    return graph, list(allowed), draw(st.integers(0, 45))


def brute_force(
    graph: Graph, allowed: list[bool], budget: int, extra: int = 3
) -> list[tuple[int, ...]]:
    """Every valid schedule with at most `extra` runs again whose every step fits (an op
    may take all of them: `extra + 1` runs)."""
    return [
        s
        for s in schedules(graph, extra, allowed, runs=extra + 1)
        if peak_bytes(graph, s) <= budget
    ]


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_the_search_of_every_schedule_is_never_beaten(case: tuple[Graph, list[bool], int]) -> None:
    graph, allowed, budget = case
    result = every_schedule(graph, budget, allowed, time.perf_counter() + 60)
    assert result is not None  # a graph this small is searched to its end
    fitting = brute_force(graph, allowed, budget)
    if result.steps is None:
        assert fitting == []  # its proof that nothing fits holds
        return
    assert is_valid_steps(graph, result.steps, allowed)
    assert peak_bytes(graph, result.steps) <= budget
    assert extra_cost(graph, result.steps) == result.cost
    assert all(result.cost <= extra_cost(graph, steps) for steps in fitting)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_the_memory_bound_holds_for_ops_that_may_not_run_again(
    case: tuple[Graph, list[bool], int],
) -> None:
    """A buffer that cannot be made again (live in, or made by an op that may not run
    again) is held across every op between its making and a later read: the bound that
    counts it is never above a schedule the brute force finds."""
    graph, allowed, _ = case
    bound = memory_bound(graph, allowed).bytes
    assert bound >= memory_bound(graph).bytes
    assert brute_force(graph, allowed, bound - 1) == []


def test_a_buffer_that_cannot_be_made_again_is_held_across_the_ops_between() -> None:
    """a = f() may not run again and is read by d; b = g(a), c = h(b) and d(a, c) run
    between: at c's step a (4 bytes), b and c (5 each) are held, 14 bytes, where every
    op alone needs at most 10."""
    graph = Graph(
        (4, 5, 5, 1), ((0,), (1,), (2,), (3,)), ((), (0,), (1,), (0, 2)), ((), (0,), (1,), (0, 2))
    )
    assert memory_bound(graph).bytes <= 10
    bound = memory_bound(graph, [False, True, True, True])
    assert bound.bytes == 14 and "may not run again" in bound.reason
    result = rematerialise(graph, Remat(13, time_limit=2.0), [False, True, True, True])
    assert result.status is Status.INFEASIBLE and "may not run again" in result.reason


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_recomputation_claims_what_the_search_proves(case: tuple[Graph, list[bool], int]) -> None:
    graph, allowed, budget = case
    result = rematerialise(graph, Remat(budget, time_limit=2.0), allowed)
    fitting = brute_force(graph, allowed, budget)
    if result.status is Status.INFEASIBLE:
        assert fitting == []
    if result.status is Status.OPTIMAL:
        assert all(result.extra_cost <= extra_cost(graph, steps) for steps in fitting)
    if result.steps is not None:
        assert is_valid_steps(graph, result.steps, allowed)
        assert result.bound_cost <= result.extra_cost


def test_a_cnn_training_step_at_half_its_peak_is_answered() -> None:
    """The case that made the search: the CNN training step of `benchmarks/graphs/
    training.py` (21 ops, 18 buffers; the three updates may not run again) at half its
    peak, where the heuristics and the model found nothing in 15 s; its graph as the
    recompute pass builds it."""
    graph = Graph(
        sizes=(8192, 8192, 8192, 2304, 8192, 8192, 2304, 2304, 2304, 2304, 8192, 8192, 8192, 8192, 8192, 8192, 2304, 8192),
        creates=((0,), (1,), (10,), (11,), (12,), (13,), (14,), (15,), (16,), (17,), (2,), (3,), (4,), (5,), (6,), (7,), (), (8,), (), (9,), ()),
        reads=((), (0,), (1,), (10,), (11,), (12,), (13,), (12, 14), (11, 15), (15,), (10, 17), (1, 2), (2,), (0, 4), (5,), (6,), (7,), (3,), (8,), (16,), (9,)),
        preds=((), (0,), (1,), (2,), (3,), (4,), (5,), (4, 6), (3, 7), (7,), (2, 9), (1, 10), (10,), (0, 12), (13,), (14,), (15,), (11,), (17,), (8,), (19,)),
        costs=(294912, 16384, 294912, 16384, 294912, 16384, 16384, 24576, 18688, 18688, 24576, 18688, 18688, 24576, 18688, 4612, 6912, 4612, 6912, 4612, 6912),
    )  # fmt: skip
    allowed = [v not in (16, 18, 20) for v in range(graph.ops)]
    result = every_schedule(graph, 28672, allowed, time.perf_counter() + 30)
    assert result is not None and result.steps is not None
    assert is_valid_steps(graph, result.steps, allowed)
    assert peak_bytes(graph, result.steps) <= 28672
    assert result.cost == extra_cost(graph, result.steps) == 933888
    # The recomputation finds it too, with offsets within the budget.
    found = rematerialise(graph, Remat(28672, time_limit=10.0), allowed)
    assert found.status is Status.OPTIMAL and found.extra_cost == 933888


def _fan(width: int) -> Graph:
    """Op 0 makes x; ops 1..width each read x and make one buffer; the last op reads
    them all: every state of the search has about `width` moves."""
    sizes = [1] * (width + 1)
    creates = [(0,)] + [(k,) for k in range(1, width + 1)] + [()]
    reads = [()] + [(0,)] * width + [tuple(range(1, width + 1))]
    preds = [()] + [(0,)] * width + [tuple(range(1, width + 1))]
    return Graph(tuple(sizes), tuple(creates), tuple(reads), tuple(preds))


def test_the_search_counts_the_work_of_each_move_and_stops_between_them() -> None:
    """Under a clock counted in work, a search whose states have many moves stops on the
    work of its moves, not only on the states it takes: 40 states of 40 moves each are
    more than 0.003 units (they once counted 0.002, the states alone, and ran on)."""
    graph = _fan(40)
    allowed = [True] * graph.ops
    with running(Budget(1.0, 60.0).clock()):
        assert every_schedule(graph, graph.ops + 1, allowed, now() + 0.003, 10**6) is None
    with running(Budget(1.0, 60.0).clock()):
        found = every_schedule(graph, graph.ops + 1, allowed, now() + 1.0, 10**6)
    assert found is not None and found.steps is not None
    assert is_valid_steps(graph, found.steps, allowed)
