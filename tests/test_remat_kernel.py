"""The recomputation heuristics' compiled kernels against plain definitions: a schedule's
instances and readers as `schedule.graph.instances` and a read-by-read walk give them,
and the distance of one move's profile as the profile of the moved schedule gives it."""

from __future__ import annotations

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from optplan.schedule.graph import Graph, instances
from optplan.schedule.remat.heuristic import _State, evaluate, profile_of
from optplan.schedule.remat.kernel import Flat, chain_key, distance, move_keys
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
        readers = [
            t
            for t, v in enumerate(steps)
            if b in graph.reads[v] and latest_before(graph, steps, b, t) == position
        ]
        assert state.readers(k).tolist() == readers
    assert state.first.tolist() == [steps.index(v) for v in range(graph.ops)]


def moves_at(
    graph: Graph, state: _State, p: int, target: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`move_keys` at step p of `state`, every op allowed to run again."""
    flat = Flat(graph)
    return move_keys(  # type: ignore[no-any-return]
        p,
        state.profile,
        state.crossing,
        state.relief,
        state.buffer,
        state.start,
        state.end,
        state.read_ptr,
        state.read_steps,
        state.made_ptr,
        state.made,
        flat.creator,
        np.ones(graph.ops, dtype=np.bool_),
        flat.sizes,
        flat.reads_ptr,
        flat.reads_idx,
        flat.creates_ptr,
        flat.creates_idx,
        target,
    )


@settings(max_examples=300, deadline=None)
@given(recomputed(), st.data())
def test_a_moves_distance_is_that_of_the_moved_schedule(
    case: tuple[Graph, tuple[int, ...]], data: st.DataObject
) -> None:
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
    # At step r - 1, k is held, not read, and read next at r: one of the moves there.
    keys, ks, rs = moves_at(graph, state, r - 1, target)
    assert k in ks.tolist()
    at = ks.tolist().index(k)
    assert int(rs[at]) == r
    assert tuple(keys[at].tolist()) == distance(profile_of(graph, moved), target)


@st.composite
def chained(draw: st.DrawFn) -> tuple[Graph, tuple[int, ...], int, list[int], np.ndarray]:
    """A graph with buffers live in and live out, ops that make two buffers and bytes
    held throughout; a valid schedule of it with ops run again; a step r; a chain of
    distinct ops whose reads are made before r or earlier in the chain; a relief."""
    live_in = draw(st.integers(0, 2))
    made, creates, reads, preds = live_in, [], [], []
    for v in range(draw(st.integers(1, 7))):
        chosen = sorted(draw(st.sets(st.integers(0, made - 1), max_size=3))) if made else []
        reads.append(tuple(chosen))
        count = draw(st.integers(1, 2))
        creates.append(tuple(range(made, made + count)))
        made += count
        preds.append(tuple(sorted({u for u in range(v) for b in chosen if b in creates[u]})))
    sizes = tuple(draw(st.lists(st.integers(0, 9), min_size=made, max_size=made)))
    # A buffer live in that nothing reads is held to the end (else it is base bytes).
    unread = {b for b in range(live_in) if all(b not in r for r in reads)}
    live_out = frozenset(draw(st.sets(st.integers(live_in, made - 1), max_size=2))) | unread
    graph = Graph(
        sizes,
        tuple(creates),
        tuple(reads),
        tuple(preds),
        tuple(range(live_in)),
        live_out,
        draw(st.integers(0, 5)),
    )
    steps = list(range(graph.ops))
    for _ in range(draw(st.integers(0, 5))):
        v = draw(st.integers(0, graph.ops - 1))
        steps.insert(draw(st.integers(steps.index(v) + 1, len(steps))), v)
    r = draw(st.integers(1, len(steps) - 1)) if len(steps) > 1 else 0
    have = set(graph.live_in) | {b for v in steps[:r] for b in graph.creates[v]}
    chain: list[int] = []
    for v in draw(st.permutations(range(graph.ops))):
        if set(graph.reads[v]) <= have and draw(st.booleans()):
            chain.append(v)
            have |= set(graph.creates[v])
    assume(chain and r > 0)
    relief = np.array(
        draw(st.lists(st.integers(0, 4), min_size=len(steps), max_size=len(steps))), dtype=np.int64
    )
    return graph, tuple(steps), r, chain, relief


@settings(max_examples=400, deadline=None)
@given(chained(), st.integers(0, 60))
def test_a_chains_distance_is_that_of_the_schedule_with_it(
    case: tuple[Graph, tuple[int, ...], int, list[int], np.ndarray], target: int
) -> None:
    graph, steps, r, chain, relief = case
    flat = Flat(graph)
    state = evaluate(graph, steps, flat, relief)
    key = chain_key(
        np.array(chain, dtype=np.int64),
        r,
        state.profile,
        state.crossing,
        state.relief,
        state.buffer,
        state.start,
        state.end,
        state.read_ptr,
        state.read_steps,
        state.made_ptr,
        state.made,
        flat.sizes,
        flat.reads_ptr,
        flat.reads_idx,
        flat.creates_ptr,
        flat.creates_idx,
        flat.live_out,
        target,
    )
    moved = steps[:r] + tuple(chain) + steps[r:]
    inserted = np.concatenate((relief[:r], np.full(len(chain), relief[r]), relief[r:]))
    assert tuple(int(x) for x in key) == distance(profile_of(graph, moved) + inserted, target)


@settings(max_examples=300, deadline=None)
@given(recomputed(), st.data())
def test_every_moves_distance_at_a_step_is_that_of_its_moved_schedule(
    case: tuple[Graph, tuple[int, ...]], data: st.DataObject
) -> None:
    """All the moves at a step at once (each key read from the profile's prefix and
    suffix keys and the span the move changes), against each moved schedule."""
    graph, steps = case
    state = evaluate(graph, steps)
    p = data.draw(st.integers(0, len(steps) - 1))
    target = data.draw(st.integers(0, 40))
    keys, ks, rs = moves_at(graph, state, p, target)
    flat = Flat(graph)
    for key, k, r in zip(keys.tolist(), ks.tolist(), rs.tolist()):
        v = int(flat.creator[state.buffer[k]])
        moved = steps[:r] + (v,) + steps[r:]
        assert tuple(key) == distance(profile_of(graph, moved), target)
