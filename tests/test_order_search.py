"""The order search at scale: the per-op bounds, the beam, the `auto` pipeline against a
brute force over sets of ops, and the same order twice under a work budget."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optplan.frontends.graphs import read_graph
from optplan.schedule import Scheduler
from optplan.schedule.beam import beam
from optplan.schedule.bounds import cut_bounds, static_bounds
from optplan.schedule.graph import Graph, is_valid_order, op_bounds, peak_bytes, step_bytes
from optplan.schedule.tables import ancestor_masks, descendant_masks, tables
from tests.loaded import calm_and_loaded, records
from tests.test_schedule import graphs, topological_orders

ROOT = Path(__file__).resolve().parents[1]


def optimum_by_sets(graph: Graph) -> int:
    """The least peak over all valid orders, by plain dynamic programming over every set
    of ops run (no pruning, no estimate): best[S] = the least peak of an order of S,
    held(S) computed from the definition each time. Shares no code with the searches."""
    n = graph.ops
    readers = graph.readers()
    made_by = {b: v for v, bufs in enumerate(graph.creates) for b in bufs}

    def held(ran: frozenset[int]) -> int:
        total = graph.base_bytes
        for b, size in enumerate(graph.sizes):
            present = b in graph.live_in or made_by.get(b, -1) in ran
            waiting = b in graph.live_out or any(r not in ran for r in readers[b])
            total += size if present and waiting else 0
        return total

    if n == 0:
        return held(frozenset())
    best: dict[frozenset[int], int] = {frozenset(): 0}
    for size in range(n):
        for ran, cost in [(s, c) for s, c in best.items() if len(s) == size]:
            now = held(ran)
            for v in range(n):
                if v not in ran and set(graph.preds[v]) <= ran:
                    step = now + sum(graph.sizes[b] for b in graph.creates[v])
                    after = ran | {v}
                    best[after] = min(best.get(after, 1 << 62), max(cost, step))
    return best[frozenset(range(n))]


@settings(max_examples=100, deadline=None)
@given(graphs(max_ops=10))
def test_static_bounds_are_op_bounds(graph: Graph) -> None:
    t = tables(graph)
    assert list(static_bounds(t, ancestor_masks(t), descendant_masks(t))) == op_bounds(graph)


@settings(max_examples=100, deadline=None)
@given(graphs(max_ops=7))
def test_every_cut_bound_holds_at_its_op_in_every_order(graph: Graph) -> None:
    bounds = cut_bounds(tables(graph), budget=1 << 40, deadline=1e18)
    assert bounds.complete
    least = [1 << 62] * graph.ops  # the least step of each op over all orders
    for order in topological_orders(graph):
        for step, v in zip(step_bytes(graph, order), order):
            least[v] = min(least[v], step)
    statics = op_bounds(graph)
    for v in range(graph.ops):
        assert statics[v] <= bounds.per_op[v] <= least[v]
    assert bounds.best <= optimum_by_sets(graph)


@settings(max_examples=100, deadline=None)
@given(graphs(max_ops=10), st.sampled_from([1, 2, 8, 64]), st.booleans())
def test_the_beam_returns_valid_orders_with_the_peak_it_claims(
    graph: Graph, width: int, forward: bool
) -> None:
    order, peak, _ = beam(tables(graph), width, forward, 1 << 62, 1e18)
    assert order is not None
    assert is_valid_order(graph, order)
    assert peak == peak_bytes(graph, order)
    assert peak >= optimum_by_sets(graph)


@settings(max_examples=100, deadline=None)
@given(graphs(max_ops=10), st.sampled_from([None, 1, 1000, 10**6]))
def test_auto_agrees_with_the_brute_force(graph: Graph, work: int | None) -> None:
    best = optimum_by_sets(graph)
    result = Scheduler("auto", time_limit=20.0, work=work)(graph)
    assert is_valid_order(graph, result.order)
    assert result.peak_bytes == peak_bytes(graph, result.order)
    assert result.bound_bytes <= best <= result.peak_bytes
    assert result.peak_bytes <= peak_bytes(graph, range(graph.ops))
    if work is None or work >= 10**6:
        assert result.optimal and result.peak_bytes == best


def test_a_side_branch_is_held_one_way_or_the_other() -> None:
    # a -> b (10) -> c (5) -> e, and a -> d -> e. While c runs, either d has not run and
    # a's byte waits for it, or it has and its own byte waits for e: one byte more than
    # any single path forces (the static bound, 15), and the min cut sees it.
    graph = Graph(
        sizes=(1, 10, 5, 1, 5),
        creates=tuple((v,) for v in range(5)),
        reads=((), (0,), (1,), (0,), (2, 3)),
        preds=((), (0,), (1,), (0,), (2, 3)),
    )
    t = tables(graph)
    assert max(static_bounds(t, ancestor_masks(t), descendant_masks(t))) == 15
    assert cut_bounds(t, budget=1 << 40, deadline=1e18).best == optimum_by_sets(graph) == 16


def _layered(tmp_path: Path, nodes: int, seed: int) -> str:
    sys.path.insert(0, str(ROOT))
    from benchmarks.graphs.layered import write_layered

    return str(write_layered(tmp_path / f"layered_{nodes}_{seed}.json", nodes, seed))


def test_the_same_order_twice_under_a_work_budget_in_two_processes(tmp_path: Path) -> None:
    """A 500-op graph reordered twice, once beside a busy process: the same order."""
    path = _layered(tmp_path, 500, seed=3)
    command = [sys.executable, "-m", "optplan", "reorder", path, "--work", "1", "--json"]
    calm, loaded = calm_and_loaded(command)
    assert calm.returncode == loaded.returncode == 0, loaded.stderr
    first, second = records(calm, loaded)
    assert first == second
    assert first["peak_bytes"] <= first["program_order_peak_bytes"]


def test_reorder_a_graph_from_the_command_line_and_read_the_order_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from optplan.cli import main

    path = _layered(tmp_path, 60, seed=5)
    out = tmp_path / "reordered.json"
    assert main(["reorder", path, "--work", "0.2", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["peak_bytes"] <= record["program_order_peak_bytes"]
    assert record["bound_bytes"] <= record["peak_bytes"]
    assert main(["reorder", path, "--work", "0.2", "-o", str(out)]) == 0
    assert f"written to {out}" in capsys.readouterr().out
    again = read_graph(out)
    assert list(again.nodes) == record["order"]
    assert peak_bytes(again.graph, range(again.graph.ops)) == record["peak_bytes"]
    assert main(["plan", path, "--reorder", "--work", "0.2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["lower_bound_bytes"] == record["peak_bytes"]
    assert main(["reorder", path, "-o", str(tmp_path / "x.py")]) == 2
    assert main(["plan", path, "--work", "0"]) == 2
