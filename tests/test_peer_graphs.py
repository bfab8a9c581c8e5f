"""The peers' graphs (Checkmate's 14, MOCCASIN's random layered ones): every proof the
benchmark reports, re-checked by an independent computation of its lower bound.

The graphs are GPL and stay outside the repository: `$OPTPLAN_PEER_GRAPHS` names a
folder of them (extracted from a fetched copy of MOCCASIN's repository); without it
these tests skip, saying why.

- Checkmate's graphs: the order found is proven by the static bound. The re-check
  computes it from the JSON alone: at node v's step, v's output and the output of every
  ancestor of v that a descendant of v reads are held, in every order.
- The random layered graph of 100 nodes: proven by the exact search. The re-check is a
  plain dynamic program over the sets of nodes run, with no estimate: every set an
  order can reach with all its steps below the peak found, none of them complete.
- The random layered graphs of 250 and 500 nodes: the min-cut bound (250: proven
  optimal by it). The re-check asks CP-SAT, not a max-flow, for the least bytes held
  before the op that sets the bound: the same minimum as a 0-1 program over which
  nodes have run.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from ortools.sat.python import cp_model

from optplan.frontends.graphs import read_graph
from optplan.schedule import Scheduler
from optplan.schedule.bounds import cut_bounds
from optplan.schedule.graph import Graph
from optplan.schedule.tables import tables

FOLDER = Path(os.environ.get("OPTPLAN_PEER_GRAPHS", ""))
FILES = (
    sorted(FOLDER.glob("*.json"))
    if os.environ.get("OPTPLAN_PEER_GRAPHS") and FOLDER.is_dir()
    else []
)
SKIP = pytest.mark.skipif(
    not FILES, reason="the peers' graphs are absent: set OPTPLAN_PEER_GRAPHS to their folder"
)
CHECKMATE = [p for p in FILES if "MLSys" in p.name]
LAYERED = [p for p in FILES if p.name.startswith(("random_layered_n250", "random_layered_n500"))]
SMALL = [p for p in FILES if p.name.startswith("random_layered_n100_")]


def static_bound_from_json(path: Path) -> int:
    """The definition on the JSON: max over nodes v of v's bytes plus every ancestor's
    bytes that a descendant of v (v excluded) reads."""
    data = json.loads(path.read_text())
    key = "id" if "id" in data["nodes"][0] else "name"
    size = {n[key]: n.get("cost_ram", n.get("out_cost")) for n in data["nodes"]}
    succ: dict[object, set[object]] = {v: set() for v in size}
    for link in data["links"]:
        succ[link.get("source", link.get("0"))].add(link.get("target", link.get("1")))
    pred: dict[object, set[object]] = {v: set() for v in size}
    for u, targets in succ.items():
        for w in targets:
            pred[w].add(u)

    def reach(start: object, edges: dict[object, set[object]]) -> set[object]:
        seen: set[object] = set()
        stack = list(edges[start])
        while stack:
            x = stack.pop()
            if x not in seen:
                seen.add(x)
                stack.extend(edges[x])
        return seen

    best = 0
    for v, own in size.items():
        below, above = reach(v, pred), reach(v, succ)
        held = [u for u in below if succ[u] & (above | {v})]
        best = max(best, own + sum(size[u] for u in held))
    return best


def least_held_by_cpsat(graph: Graph, v: int) -> int:
    """min held(D) over sets D closed under predecessors, holding v's ancestors and not
    v, as a 0-1 program (one buffer per node, read by its successors)."""
    model = cp_model.CpModel()
    ran = [model.new_bool_var(f"ran[{u}]") for u in range(graph.ops)]
    held = [model.new_bool_var(f"held[{u}]") for u in range(graph.ops)]
    for w, preds in enumerate(graph.preds):
        for u in preds:
            model.add_implication(ran[w], ran[u])
            model.add(held[u] >= ran[u] - ran[w])
    for u in graph.preds[v]:
        model.add(ran[u] == 1)
    model.add(ran[v] == 0)
    model.minimize(sum(graph.sizes[u] * held[u] for u in range(graph.ops)))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 2
    solver.parameters.max_time_in_seconds = 120
    assert solver.solve(model) == cp_model.OPTIMAL
    return int(solver.objective_value)


@SKIP
@pytest.mark.parametrize("path", CHECKMATE, ids=lambda p: p.stem)
def test_checkmate_graphs_are_proven_and_the_proof_rechecks(path: Path) -> None:
    graph = read_graph(path).graph
    result = Scheduler("auto", time_limit=60)(graph)
    assert result.optimal
    assert result.peak_bytes == static_bound_from_json(path)


def no_order_below(graph: Graph, peak: int) -> bool:
    """Whether no order of `graph` (one buffer per node, read by its successors) peaks
    below `peak`: every set of nodes reachable with all steps below it, none complete."""
    n = graph.ops
    succs = graph.succs()
    pred_mask = [sum(1 << u for u in set(p)) for p in graph.preds]
    succ_mask = [sum(1 << w for w in set(s)) for s in succs]
    seen, stack = {0: 0}, [0]
    while stack:
        ran = stack.pop()
        held = sum(graph.sizes[u] for u in range(n) if ran >> u & 1 and succ_mask[u] & ~ran)
        for v in range(n):
            if ran >> v & 1 or pred_mask[v] & ran != pred_mask[v] or held + graph.sizes[v] >= peak:
                continue
            after = ran | 1 << v
            if after == (1 << n) - 1:
                return False
            if after not in seen:
                seen[after] = 0
                stack.append(after)
    return True


@SKIP
@pytest.mark.parametrize("path", SMALL, ids=lambda p: p.stem)
def test_the_search_proven_optimum_rechecks_by_plain_dynamic_programming(path: Path) -> None:
    graph = read_graph(path).graph
    result = Scheduler("auto", time_limit=60)(graph)
    assert result.optimal
    assert no_order_below(graph, result.peak_bytes)


@SKIP
@pytest.mark.parametrize("path", LAYERED, ids=lambda p: p.stem)
def test_the_cut_bound_rechecks_by_cpsat(path: Path) -> None:
    graph = read_graph(path).graph
    result = Scheduler("auto", time_limit=20)(graph)
    bounds = cut_bounds(tables(graph), budget=1 << 62, deadline=1e18)
    assert result.bound_bytes >= bounds.best
    assert result.peak_bytes <= 1.05 * result.bound_bytes
    v = max(range(graph.ops), key=lambda u: bounds.per_op[u])
    assert least_held_by_cpsat(graph, v) + graph.sizes[v] == bounds.best
    if "n250" in path.name:
        assert result.optimal and result.peak_bytes == bounds.best
