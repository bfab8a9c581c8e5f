"""Order and placement in one CP-SAT model (after OLLA, without Gurobi).

1. `pos[v]` in [0, n): the step of op v; all different; `pos[u] < pos[v]` for every edge.
2. Every buffer b made in the block (or held on entry) is live over the steps
   [start, end): start = `pos[creator]` (0 when held on entry); end = one past its last
   reader's step, n when it is live out, start + 1 when nothing reads it.
3. `offset[b]` in [0, top - size]; the (steps x bytes) rectangles of the buffers do not
   overlap (no-overlap-2D), and a cumulative over the same steps with capacity `arena`
   makes the live-bytes bound visible to the solver.
4. Minimise `arena` (plus the bytes live across the block). The search is hinted with
   the incumbent order.

The order is read off `pos`; its peak is recomputed by `peak_bytes`. The model's own
bound is on the joint arena, which is never below the best order's peak, so it is
reported as the arena's bound only.
"""

from __future__ import annotations

from collections.abc import Sequence

from ortools.sat.python import cp_model

from optplan.planners.cpsat.model import integer_bound
from optplan.schedule.graph import Graph, peak_bytes


def cpsat_schedule(
    graph: Graph, incumbent: Sequence[int], *, time_limit: float = 10.0
) -> tuple[tuple[int, ...], int, int, bool]:
    """(order, joint arena found, bound on the joint arena, proven optimal arena)."""
    n = graph.ops
    if n == 0:
        return (), peak_bytes(graph, ()), peak_bytes(graph, ()), True
    model = cp_model.CpModel()
    pos = [
        model.new_int_var(0, n - 1, f"pos[{graph.labels[v] if graph.labels else v}]")
        for v in range(n)
    ]
    model.add_all_different(pos)
    for v, preds in enumerate(graph.preds):
        for u in set(preds):
            model.add(pos[u] < pos[v])
    top = sum(graph.sizes)
    arena = model.new_int_var(0, top, "arena")
    spans, rows, tops, demands = _rectangles(model, graph, pos, top)
    if not spans:
        # No bytes to place: every valid order is optimal (and CP-SAT 9.15 fails on empty
        # no-overlap and cumulative constraints).
        return tuple(incumbent), graph.base_bytes, graph.base_bytes, True
    model.add_no_overlap_2d(spans, rows)
    model.add_cumulative(spans, demands, arena)
    for row_top in tops:
        model.add(arena >= row_top)
    model.minimize(arena)
    _hint(model, graph, pos, incumbent)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = time_limit
    solver.parameters.num_workers = 2
    try:
        status = solver.solve(model)
    except IndexError:
        # CP-SAT 9.15 fails inside its presolve on some hinted models (a graph with one
        # unread byte drew it); the same model without the hint solves.
        model.clear_hints()
        status = solver.solve(model)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        order = tuple(incumbent)
        return order, -1, integer_bound(solver.best_objective_bound) + graph.base_bytes, False
    order = tuple(sorted(range(n), key=lambda v: solver.value(pos[v])))
    found = int(solver.value(arena)) + graph.base_bytes
    bound = integer_bound(solver.best_objective_bound) + graph.base_bytes
    return order, found, bound, status == cp_model.OPTIMAL


def _rectangles(
    model: cp_model.CpModel, graph: Graph, pos: list[cp_model.IntVar], top: int
) -> tuple[
    list[cp_model.IntervalVar], list[cp_model.IntervalVar], list[cp_model.LinearExpr], list[int]
]:
    n = graph.ops
    readers = graph.readers()
    creator = {b: v for v, bufs in enumerate(graph.creates) for b in bufs}
    spans, rows, ends, demands = [], [], [], []
    for b, size in enumerate(graph.sizes):
        if size == 0 or (b not in creator and b not in graph.live_in):
            continue
        name = graph.names[b] if graph.names else str(b)
        start = pos[creator[b]] if b in creator else model.new_constant(0)
        end = model.new_int_var(1, n, f"end[{name}]")
        if b in graph.live_out:
            model.add(end == n)
        elif readers[b]:
            model.add_max_equality(end, [pos[r] + 1 for r in readers[b]])
        else:
            model.add(end == start + 1)
        length = model.new_int_var(1, n, f"length[{name}]")
        spans.append(model.new_interval_var(start, length, end, f"steps[{name}]"))
        offset = model.new_int_var(0, top - size, f"offset[{name}]")
        rows.append(model.new_fixed_size_interval_var(offset, size, f"bytes[{name}]"))
        ends.append(offset + size)
        demands.append(size)
    return spans, rows, ends, demands


def _hint(
    model: cp_model.CpModel, graph: Graph, pos: list[cp_model.IntVar], order: Sequence[int]
) -> None:
    for step, v in enumerate(order):
        model.add_hint(pos[v], step)
