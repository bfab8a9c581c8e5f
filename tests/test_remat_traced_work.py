"""The traced bound's work (`schedule.remat.bounds.traced`): each set it weighs counts
by the buffers in it, so that a trace of large sets counts what it takes and stops at
its deadline in work, and counting changes no proof."""

from __future__ import annotations

import math
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.remat import in_order
from benchmarks.reorder_heldout import write_graph
from optplan.budget import Budget, now, running
from optplan.schedule.graph import Graph, peak_bytes
from optplan.schedule.remat.bounds import HELD_WORK, traced
from tests.test_remat import graphs


def test_a_trace_of_large_sets_counts_the_buffers_it_weighs(tmp_path: Path) -> None:
    # A held-out layered graph of 500 ops at half its order's peak: the trace weighs
    # 1,000 sets of up to some hundred buffers (about 3 s of one core) and proves nothing.
    write_graph(tmp_path, 500, 6)
    (path,) = tmp_path.glob("*.json")
    graph, _ = in_order(path)
    budget = math.ceil(peak_bytes(graph, tuple(range(graph.ops))) * 0.5)
    clock = Budget(work=1e9).clock()
    with running(clock):
        assert traced(graph, budget) is None
    assert clock.spent >= 1.0
    stopped = Budget(work=1e9).clock()
    with running(stopped):
        assert traced(graph, budget, deadline=now() + 0.25) is None
    assert 0.25 <= stopped.spent <= 0.25 + HELD_WORK * graph.ops * len(graph.sizes)


@settings(max_examples=150, deadline=None)
@given(graphs(max_ops=6), st.integers(0, 40), st.floats(0.0, 1e-4))
def test_counting_the_trace_changes_no_proof(graph: Graph, budget: int, units: float) -> None:
    free = traced(graph, budget)
    clock = Budget(work=1e9).clock()
    with running(clock):
        assert traced(graph, budget) == free
    stopped = Budget(work=1e9).clock()
    with running(stopped):
        early = traced(graph, budget, deadline=now() + units)
    assert early is None or early == free
    # It stops within one set of the deadline: a set weighs each maker's step.
    assert stopped.spent <= units + HELD_WORK * graph.ops * (len(graph.sizes) + graph.ops)
