"""A lower bound on the extra compute of every schedule within a budget (any order of
first runs, any op run any number of times): the covering bound.

Take op v's first run, at step t. Every op's first run keeps the graph's order, so
v's ancestors ran before t and its descendants run after. Let b be a buffer made by an
ancestor m of v (or live in) that a descendant r of v reads, or that is live out. If
no instance of b is held at t, the instance r reads at its first run (or the last one,
held to the end for a live-out buffer) is made after t, by m, whose first run was
before t: m runs twice. A buffer live in, or made by an op that may not run again, is
held at t; so are v's reads and new buffers. So, with x[m] = 1 where m runs again:

    sum over such b with x[maker(b)] = 1 of size(b)  >=  base + held(v) - budget   (v)

where held(v) is the bytes of all of them and v's reads and new buffers (a step holds
at least the bytes of its instances, and an arena at least that). Each run again costs
cost(m), so the extra compute is at least the least sum of cost(m) x[m] over binary x
meeting (v) for every op v. Steps:

1. Per op, the droppable bytes per maker and the demand (v), from the graph's
   ancestor and descendant sets (`graph.closure`); ops whose demand is not positive
   give no row. A coefficient above the demand is cut to it (valid for binary x).
2. A row no choice of x meets proves that no schedule fits; the bound says nothing
   more (the memory bound speaks for it): 0.
3. The covering problem is solved by CP-SAT, one worker, a fixed seed, stopped on
   `work` (its deterministic time; seconds only as an outer guard): its proven
   objective bound (the optimum where it ends) is the bound.

It covers every schedule `rematerialise` may return and every one `exhaustive`
searches: any order of first runs and any recomputation, at any alignment.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ortools.sat.python import cp_model

from optplan.schedule.graph import Graph, closure


@dataclass(frozen=True, slots=True)
class Covering:
    """The bound on the extra compute (`cost`), how many rows (ops whose demand is
    positive) gave it, whether CP-SAT proved it optimal for the covering problem, and
    whether some row cannot be met (no schedule fits the budget)."""

    cost: int
    rows: int
    optimal: bool
    unmet: bool


def rows(
    graph: Graph, budget: int, recomputable: Sequence[bool] | None = None
) -> tuple[list[tuple[dict[int, int], int]], bool]:
    """Step 1 and 2: per op with a positive demand, bytes per maker that may be dropped
    (cut to the demand) and the demand; and whether some row cannot be met."""
    ancestors = closure(graph.preds)
    descendants = closure(graph.succs())
    readers = graph.readers()
    creator = {b: v for v, bufs in enumerate(graph.creates) for b in bufs}
    out: list[tuple[dict[int, int], int]] = []
    for v in range(graph.ops):
        own = set(graph.reads[v]) | set(graph.creates[v])
        held = sum(graph.sizes[b] for b in own)
        drop: dict[int, int] = {}
        for b, size in enumerate(graph.sizes):
            if b in own or size == 0:
                continue
            maker = creator.get(b)
            if maker is not None and maker not in ancestors[v]:
                continue
            if b not in graph.live_out and not any(r in descendants[v] for r in readers[b]):
                continue
            held += size
            if maker is not None and (recomputable is None or recomputable[maker]):
                drop[maker] = drop.get(maker, 0) + size
        demand = graph.base_bytes + held - budget
        if demand <= 0:
            continue
        if sum(drop.values()) < demand:
            return [], True
        out.append(({m: min(w, demand) for m, w in drop.items()}, demand))
    return out, False


def covering_bound(
    graph: Graph,
    budget: int,
    recomputable: Sequence[bool] | None = None,
    work: float = 2.0,
    seconds: float = 30.0,
) -> Covering:
    """The bound of the module docstring; `work` is CP-SAT's deterministic time."""
    got, unmet = rows(graph, budget, recomputable)
    if unmet or not got:
        return Covering(0, len(got), not unmet, unmet)
    costs = graph.costs or (1,) * graph.ops
    model = cp_model.CpModel()
    makers = sorted({m for drop, _ in got for m in drop})
    x = {m: model.new_bool_var(f"again[{m}]") for m in makers}
    for drop, demand in got:
        model.add(sum(w * x[m] for m, w in drop.items()) >= demand)
    model.minimize(sum(costs[m] * x[m] for m in makers))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = 0
    solver.parameters.max_deterministic_time = work
    solver.parameters.max_time_in_seconds = seconds
    status = solver.solve(model)
    if status == cp_model.OPTIMAL:
        return Covering(round(solver.objective_value), len(got), True, False)
    if status == cp_model.FEASIBLE or status == cp_model.UNKNOWN:
        bound = solver.best_objective_bound
        return Covering(max(0, math.ceil(bound - 1e-6)), len(got), False, False)
    return Covering(0, len(got), False, status == cp_model.INFEASIBLE)
