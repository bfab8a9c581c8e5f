"""The recomputation heuristics' compiled kernels against plain definitions: a schedule's
instances and readers as `schedule.graph.instances` and a read-by-read walk give them,
and the distance of one move's profile as the profile of the moved schedule gives it."""

from __future__ import annotations

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from optplan.schedule.graph import Graph, instances
from optplan.schedule.remat.heuristic import _moved, evaluate, profile_of
from optplan.schedule.remat.kernel import distance
from tests.test_remat import graphs


@st.composite
def recomputed(draw: st.DrawFn) -> tuple[Graph, tuple[int, ...]]:
    """A graph and a valid schedule of it: the program order with ops run again at
    random places after their first run (their inputs are made by then)."""
    graph = draw(graphs(max_ops=8))
    steps = list(range(graph.ops))
    for _ in range(draw(st.integers(0, 6))):
        v = draw(st.integers(0, graph.ops - 1))
        steps.insert(draw(st.integers(steps.index(v) + 1, len(steps))), v)
    return graph, tuple(steps)


def latest_before(graph: Graph, steps: tuple[int, ...], b: int, t: int) -> int:
    """The position among buffer b's instances (in the order made) of the one a read at
    step t takes: the last made before t."""
    made = [s for s, v in enumerate(steps) if b in graph.creates[v]]
    return max(i for i, s in enumerate(made) if s < t)


@settings(max_examples=300, deadline=None)
@given(recomputed())
def test_instances_and_readers_are_the_definitions(case: tuple[Graph, tuple[int, ...]]) -> None:
    graph, steps = case
    state = evaluate(graph, steps)
    buffers, spans = instances(graph, steps)
    assert state.buffer.tolist() == buffers
    assert list(zip(state.start.tolist(), state.end.tolist())) == spans
    for k, b in enumerate(buffers):
        ours = [int(i) for i in state.made[state.made_ptr[b] : state.made_ptr[b + 1]]]
        position = ours.index(k)
        readers = [t for t, v in enumerate(steps) if b in graph.reads[v] and latest_before(graph, steps, b, t) == position]
        assert state.readers(k).tolist() == readers
    assert state.first.tolist() == [steps.index(v) for v in range(graph.ops)]


@settings(max_examples=300, deadline=None)
@given(recomputed(), st.data())
def test_a_moves_distance_is_that_of_the_moved_schedule(case: tuple[Graph, tuple[int, ...]], data: st.DataObject) -> None:
    graph, steps = case
    state = evaluate(graph, steps)
    moves = [
        (k, int(t))
        for k in range(len(state.buffer))
        for t in state.readers(k)
        if t > state.start[k] + 1 and int(t) - 1 not in state.readers(k)
    ]
    assume(moves)
    k, r = data.draw(st.sampled_from(moves))
    v = int(np.nonzero([state.buffer[k] in graph.creates[u] for u in range(graph.ops)])[0][0])
    moved = steps[:r] + (v,) + steps[r:]
    target = data.draw(st.integers(0, 40))
    assert _moved(graph, state, k, v, r, target) == distance(profile_of(graph, moved), target)
