"""Schedulers on random graphs: valid orders, the peaks they claim, and the exact search
against all topological orders."""

from __future__ import annotations

import dataclasses
import itertools

from hypothesis import example, given, settings
from hypothesis import strategies as st

from optplan.schedule import SCHEDULERS, Graph, Scheduler, lower_bound, peak_bytes
from optplan.schedule.graph import is_valid_order, step_bytes
from optplan.schedule.improve import window_graph
from optplan.schedule.split import exact_split, windows


@st.composite
def graphs(draw: st.DrawFn, max_ops: int = 8) -> Graph:
    """A DAG of ops in program order: each op reads some earlier buffers (or buffers held
    on entry), makes zero to two buffers, and depends on the makers of what it reads."""
    n = draw(st.integers(0, max_ops))
    sizes: list[int] = []
    live_in = [sizes.append(draw(st.integers(0, 64))) or i for i in range(draw(st.integers(0, 2)))]
    creator: dict[int, int] = {}
    creates, reads, preds = [], [], []
    for v in range(n):
        available = list(range(len(sizes)))
        read = (
            draw(st.lists(st.sampled_from(available), unique=True, max_size=3)) if available else []
        )
        made = []
        for _ in range(draw(st.integers(0, 2))):
            creator[len(sizes)] = v
            made.append(len(sizes))
            sizes.append(draw(st.integers(0, 100)))
        extra = draw(st.lists(st.integers(0, v - 1), max_size=1)) if v else []
        creates.append(tuple(made))
        reads.append(tuple(read))
        preds.append(tuple(sorted({creator[b] for b in read if b in creator} | set(extra))))
    # Held on entry but never read would be base bytes, not live_in.
    read_any = {b for r in reads for b in r}
    live_in = [b for b in live_in if b in read_any]
    base = sum(sizes[b] for b in range(len(sizes)) if b not in creator and b not in live_in)
    sizes = [0 if (b not in creator and b not in live_in) else s for b, s in enumerate(sizes)]
    live_out = frozenset(
        b for b in range(len(sizes)) if draw(st.booleans()) and (b in creator or b in live_in)
    )
    return Graph(
        tuple(sizes), tuple(creates), tuple(reads), tuple(preds), tuple(live_in), live_out, base
    )


def topological_orders(graph: Graph) -> list[tuple[int, ...]]:
    return [o for o in itertools.permutations(range(graph.ops)) if is_valid_order(graph, o)]


CHAIN_AND_BRANCH = Graph(
    sizes=(10, 100, 1, 1),
    creates=((0,), (1,), (2,), (3,)),
    reads=((), (), (1,), (0, 2)),
    preds=((), (), (1,), (0, 2)),
)


@settings(max_examples=150, deadline=None)
@given(graphs())
@example(CHAIN_AND_BRANCH)
def test_exact_agrees_with_brute_force(graph: Graph) -> None:
    best = min(
        (peak_bytes(graph, o) for o in topological_orders(graph)), default=peak_bytes(graph, ())
    )
    result = Scheduler("exact")(graph)
    assert result.peak_bytes == best
    assert result.optimal
    assert lower_bound(graph) <= best


# Only empty buffers: CP-SAT 9.15 fails on a model with nothing to place.
ONLY_EMPTY = Graph(
    sizes=(0, 0),
    creates=((0,), (1,), (), (), (), (), ()),
    reads=((), (0,), (1,), (), (0, 1), (), ()),
    preds=((), (0,), (1,), (), (0, 1), (1,), (1,)),
    live_in=(),
    live_out=frozenset(),
    base_bytes=0,
    names=(),
    labels=(),
)


# One unread byte: CP-SAT 9.15 fails inside presolve when the model carries a hint.
ONE_UNREAD_BYTE = dataclasses.replace(
    ONLY_EMPTY, sizes=(0, 0, 1), creates=((0,), (1,), (2,), (), (), (), ())
)


@settings(max_examples=80, deadline=None)
@given(graphs(max_ops=12))
@example(ONLY_EMPTY)
@example(ONE_UNREAD_BYTE)
def test_every_scheduler_returns_a_valid_order_no_worse_than_program_order(graph: Graph) -> None:
    baseline = peak_bytes(graph, range(graph.ops))
    bound = lower_bound(graph)
    for name in SCHEDULERS:
        result = Scheduler(name, time_limit=2.0)(graph)
        assert is_valid_order(graph, result.order), name
        assert result.peak_bytes == peak_bytes(graph, result.order)
        assert bound <= result.peak_bytes
        if name not in ("lpmf", "bfs", "dfs"):
            assert result.peak_bytes <= baseline, name


@settings(max_examples=80, deadline=None)
@given(graphs(max_ops=10), st.data())
def test_a_window_costs_what_its_steps_cost_in_the_whole_order(
    graph: Graph, data: st.DataObject
) -> None:
    order = Scheduler("bfs")(graph).order
    lo = data.draw(st.integers(0, graph.ops))
    hi = data.draw(st.integers(lo, graph.ops))
    sub, ops = window_graph(graph, order, lo, hi)
    assert ops == list(order[lo:hi])
    assert step_bytes(sub, range(sub.ops)) == step_bytes(graph, order)[lo:hi]


def test_the_big_branch_first_halves_the_peak() -> None:
    # Written order makes the 10-byte tensor, then the 100-byte one: both are held while
    # the 1-byte op reads the 100; running the 100-byte branch first frees it sooner.
    graph = CHAIN_AND_BRANCH
    assert peak_bytes(graph, (0, 1, 2, 3)) == 111
    result = Scheduler("exact")(graph)
    assert result.order == (1, 2, 0, 3)
    assert result.peak_bytes == 101


# Eight ops at most: the brute force below walks up to 8! orders; at ten, a drawn
# antichain costs 10! and one example minutes.
@settings(max_examples=80, deadline=None)
@given(graphs(max_ops=8))
def test_split_windows_end_at_cuts_and_the_split_search_is_exact(graph: Graph) -> None:
    parts = windows(graph)
    assert [lo for lo, _ in parts] == [0, *(hi for _, hi in parts[:-1])] or graph.ops == 0
    assert not parts or parts[-1][1] == graph.ops
    best = min(
        (peak_bytes(graph, o) for o in topological_orders(graph)), default=peak_bytes(graph, ())
    )
    found = exact_split(graph, range(graph.ops), time_limit=5.0, max_states=100_000)
    assert is_valid_order(graph, found.order) and found.peak == peak_bytes(graph, found.order)
    assert found.proven and found.peak == best and found.bound == best


def test_a_chain_of_cells_splits_at_every_join() -> None:
    # Two diamonds a -> (b, c) -> d -> (e, f) -> g: a, d and g are cuts.
    graph = Graph(
        sizes=(1,) * 7,
        creates=tuple((v,) for v in range(7)),
        reads=((), (0,), (0,), (1, 2), (3,), (3,), (4, 5)),
        preds=((), (0,), (0,), (1, 2), (3,), (3,), (4, 5)),
    )
    assert windows(graph) == [(0, 1), (1, 4), (4, 7)]
