"""The key-order bound (`schedule.keyorder`) against the brute force over sets of ops: it
never passes the least peak of any order, it is that least peak when every op is a key
op, and one key op gives that op's min-cut bound."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from optplan.schedule.bounds import cut_bounds
from optplan.schedule.graph import Graph, peak_bytes, step_bytes
from optplan.schedule.keyorder import key_ops, key_order_bound
from optplan.schedule.tables import tables
from tests.test_order_search import optimum_by_sets
from tests.test_schedule import graphs

SIDE_BRANCH = Graph(
    sizes=(1, 10, 5, 1, 5),
    creates=tuple((v,) for v in range(5)),
    reads=((), (0,), (1,), (0,), (2, 3)),
    preds=((), (0,), (1,), (0,), (2, 3)),
)
NO_CAP = 1 << 62


@settings(max_examples=150, deadline=None)
@given(graphs(max_ops=8), st.data(), st.sampled_from([1, 10, 1000, NO_CAP]))
@example(SIDE_BRANCH, None, NO_CAP)
def test_the_key_order_bound_never_passes_the_optimum(
    graph: Graph, data: st.DataObject | None, work: int
) -> None:
    keys = list(range(graph.ops))
    if data is not None:
        keys = data.draw(st.lists(st.sampled_from(keys), unique=True) if keys else st.just([]))
    best = optimum_by_sets(graph)
    found = key_order_bound(tables(graph), keys, cap=NO_CAP, work=work)
    assert found.bound <= best
    capped = key_order_bound(tables(graph), keys, cap=best - 1, work=work)
    assert capped.bound <= best - 1


@settings(max_examples=100, deadline=None)
@given(graphs(max_ops=8))
@example(SIDE_BRANCH)
def test_every_op_a_key_op_gives_the_optimum(graph: Graph) -> None:
    found = key_order_bound(tables(graph), range(graph.ops), cap=NO_CAP, work=NO_CAP)
    assert found.complete
    if graph.ops:
        assert found.bound == optimum_by_sets(graph)


@settings(max_examples=100, deadline=None)
@given(graphs(max_ops=8), st.data())
def test_one_key_op_gives_its_min_cut_bound(graph: Graph, data: st.DataObject) -> None:
    if graph.ops == 0:
        return
    v = data.draw(st.integers(0, graph.ops - 1))
    t = tables(graph)
    per_op = cut_bounds(t, budget=NO_CAP, deadline=1e18).per_op
    found = key_order_bound(t, [v], cap=NO_CAP, work=NO_CAP)
    assert found.bound >= per_op[v]  # the cut bound may skip v: then per_op[v] is static


@settings(max_examples=100, deadline=None)
@given(graphs(max_ops=10), st.integers(1, 12))
def test_key_ops_are_distinct_ops_of_the_graph(graph: Graph, count: int) -> None:
    order = list(range(graph.ops))
    steps = step_bytes(graph, order)
    per_op = cut_bounds(tables(graph), budget=NO_CAP, deadline=1e18).per_op
    keys = key_ops(per_op, steps, order, count)
    assert len(keys) == len(set(keys)) == min(count, graph.ops)
    assert set(keys) <= set(order)
    found = key_order_bound(tables(graph), keys, cap=NO_CAP, work=NO_CAP)
    assert found.bound <= peak_bytes(graph, order)
