"""The memory bounds with offsets on multiples of an alignment: buffers held at once need
their sizes rounded up, but for the highest; judged by a brute force over schedules, each
packed by the exact search."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from optplan.planners.search.driver import minimise
from optplan.problem.plan import Status
from optplan.schedule.graph import Graph, problem_of
from optplan.schedule.remat import Remat, memory_bound, rematerialise
from optplan.schedule.remat.bounds import aligned_bytes, traced
from tests.test_remat import graphs, schedules


def test_the_bound_counts_the_alignment() -> None:
    # Two buffers of 5 bytes held together: 10 bytes, but offsets on a multiple of 8 put
    # the second at 8 at the least, so no arena is below 13.
    graph = Graph((5, 5), ((0,), (1,)), ((), (0,)), ((), (0,)), costs=(1, 1))
    result = rematerialise(graph, Remat(12, time_limit=2, alignment=8))
    assert result.status is Status.INFEASIBLE
    assert result.reason == (
        "no schedule fits 12 bytes: at least 13 are needed "
        "(op 1 needs its inputs and outputs at once: 13 bytes at offsets on multiples of 8)"
    )
    assert rematerialise(graph, Remat(13, time_limit=2, alignment=8)).status is Status.OPTIMAL


def test_aligned_bytes() -> None:
    assert aligned_bytes([], 8) == 0
    assert aligned_bytes([5], 8) == 5
    assert aligned_bytes([5, 5], 8) == 13
    assert aligned_bytes([1, 7, 16], 8) == 8 + 16 + 1  # the 1-byte buffer goes highest
    assert aligned_bytes([3, 5, 7], 1) == 15


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs(max_ops=4), st.sampled_from((1, 3, 8)))
def test_aligned_bounds_are_never_beaten_by_a_brute_force(graph: Graph, alignment: int) -> None:
    """No schedule of the brute force (one run again at most) packs below the memory
    bound, and the traced bound proves no budget short that one of them packs within."""
    least = None
    for steps in schedules(graph, 1):
        packing = minimise(problem_of(graph, steps, alignment), time_limit=5.0)
        assert packing.offsets is not None
        arena = graph.base_bytes + packing.peak
        least = arena if least is None else min(least, arena)
    assert least is not None
    assert memory_bound(graph, alignment=alignment).bytes <= least
    assert traced(graph, least, alignment=alignment) is None
