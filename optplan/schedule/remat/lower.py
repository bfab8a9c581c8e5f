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
4. Rows from cuts (`_Cuts`): the ops run before v's first run are some set D closed
   under the order, and what D made that is read outside D is held at v's step unless
   its maker runs again. With the choice of step 3, a maximum flow per op finds the
   least held over every D; where it exceeds the budget, the flow gives a row that cuts
   the choice off, and step 3 runs again, up to `rounds` solves.

It covers every schedule `rematerialise` may return and every one `exhaustive`
searches: any order of first runs and any recomputation, at any alignment.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

from ortools.graph.python import max_flow  # type: ignore[import-untyped, import-not-found, unused-ignore]
from ortools.linear_solver import pywraplp  # type: ignore[import-untyped, import-not-found, unused-ignore]
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


Row = tuple[dict[int, int], int]


def covering_bound(
    graph: Graph,
    budget: int,
    recomputable: Sequence[bool] | None = None,
    work: float = 2.0,
    rounds: int = 6,
    seconds: float = 60.0,
) -> Covering:
    """The bound of the module docstring: `work` is CP-SAT's deterministic time per
    solve, `rounds` the solves at most (each but the last followed by one cut per op),
    `seconds` an outer guard."""
    deadline = time.perf_counter() + seconds
    got, unmet = rows(graph, budget, recomputable)
    if unmet:
        return Covering(0, len(got), False, True)
    cuts = _Cuts(graph, budget, recomputable)
    best = Covering(0, len(got), False, False)
    for round_ in range(rounds):
        left = deadline - time.perf_counter()
        if left <= 0:
            break
        cost, optimal, again = _solve(graph, got, work, left)
        if again is None:  # the rows admit no choice: nothing fits the budget
            return Covering(0, len(got), False, True)
        best = Covering(max(best.cost, cost), len(got), optimal, False)
        if round_ == rounds - 1:
            break
        new = [row for v in range(graph.ops) if (row := cuts.violated(v, again)) is not None]
        if not new:
            break
        if any(sum(drop.values()) < demand for drop, demand in new):
            return Covering(0, len(got), False, True)
        got.extend(new)
    return best


def _solve(
    graph: Graph, got: list[Row], work: float, seconds: float
) -> tuple[int, bool, set[int] | None]:
    """The covering problem over `got`: its proven bound, whether optimal, and the makers
    run again in the best choice found (None where there is none)."""
    if not got:
        return 0, True, set()
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
    if status == cp_model.INFEASIBLE:
        return 0, False, None
    bound = max(0, math.ceil(solver.best_objective_bound - 1e-6))
    if status != cp_model.OPTIMAL:
        bound = max(bound, _relaxed(got, costs))
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return bound, False, set()
    return bound, status == cp_model.OPTIMAL, {m for m in makers if solver.value(x[m])}


def _relaxed(got: list[Row], costs: Sequence[int]) -> int:
    """The covering problem's linear relaxation by GLOP (where CP-SAT stopped before its
    own bound got there), rounded up: costs are integers."""
    solver = pywraplp.Solver.CreateSolver("GLOP")
    makers = sorted({m for drop, _ in got for m in drop})
    x = {m: solver.NumVar(0.0, 1.0, f"again[{m}]") for m in makers}
    for drop, demand in got:
        solver.Add(sum(w / demand * x[m] for m, w in drop.items()) >= 1.0)
    solver.Minimize(sum(costs[m] * x[m] for m in makers))
    if solver.Solve() != pywraplp.Solver.OPTIMAL:
        return 0
    # The dual bound would be exact; a little slack keeps rounding from overshooting.
    return max(0, math.ceil(solver.Objective().Value() - 1e-6 * (1 + sum(costs))))


class _Cuts:
    """Step 4: per op v, a maximum flow in the network of `schedule.bounds.cut_bounds`
    (its minimum cut is the least held at v's step over every set D of ops run before
    it), in which a buffer whose maker runs again costs nothing (it may be made again
    after v). Where the flow is above the room, the choice is cut off by the row its
    flow gives: a flow less what passes through the buffers dropped is still a flow,
    so every choice whose schedule fits needs the flow through its dropped buffers to
    reach the flow's excess over the room (max-flow min-cut duality)."""

    def __init__(self, graph: Graph, budget: int, recomputable: Sequence[bool] | None) -> None:
        self.graph, self.budget = graph, budget
        self.creator = {b: v for v, bufs in enumerate(graph.creates) for b in bufs}
        self.fixed = {
            b
            for b in range(len(graph.sizes))
            if b not in self.creator
            or (recomputable is not None and not recomputable[self.creator[b]])
        }
        n = graph.ops
        self.source, self.sink = n + len(graph.sizes), n + len(graph.sizes) + 1
        self.infinite = sum(graph.sizes) + 1
        self.flow = max_flow.SimpleMaxFlow()
        self.arc: dict[int, int] = {}
        for b, readers in enumerate(graph.readers()):
            maker = self.creator.get(b)
            self.arc[b] = self.flow.add_arc_with_capacity(
                self.source if maker is None else maker, n + b, graph.sizes[b]
            )
            for r in readers:
                self.flow.add_arc_with_capacity(n + b, r, self.infinite)
                if maker is not None:
                    self.flow.add_arc_with_capacity(r, maker, self.infinite)
            if b in graph.live_out:
                self.flow.add_arc_with_capacity(n + b, self.sink, self.infinite)
        for v, preds in enumerate(graph.preds):
            for u in preds:
                self.flow.add_arc_with_capacity(v, u, self.infinite)
        self.tie_in = [self.flow.add_arc_with_capacity(self.source, v, 0) for v in range(n)]
        self.tie_out = [self.flow.add_arc_with_capacity(v, self.sink, 0) for v in range(n)]

    def violated(self, v: int, again: set[int]) -> Row | None:
        """The row of v's flow where `again` leaves v's step above the room, else None."""
        graph = self.graph
        room = self.budget - graph.base_bytes - sum(graph.sizes[b] for b in set(graph.creates[v]))
        droppable = {b for b in self.arc if b not in self.fixed and b not in graph.reads[v]}
        for b, arc in self.arc.items():
            dropped = b in droppable and self.creator[b] in again
            self.flow.set_arc_capacity(arc, 0 if dropped else graph.sizes[b])
        for u in graph.preds[v]:
            self.flow.set_arc_capacity(self.tie_in[u], self.infinite)
        self.flow.set_arc_capacity(self.tie_out[v], self.infinite)
        self.flow.solve(self.source, self.sink)
        value = self.flow.optimal_flow()
        through: dict[int, int] = {}
        for b in droppable:
            if self.flow.flow(self.arc[b]):
                m = self.creator[b]
                through[m] = through.get(m, 0) + self.flow.flow(self.arc[b])
        for u in graph.preds[v]:
            self.flow.set_arc_capacity(self.tie_in[u], 0)
        self.flow.set_arc_capacity(self.tie_out[v], 0)
        demand = value - room
        if demand <= 0 or value >= self.infinite:
            return None
        return {m: min(w, demand) for m, w in through.items()}, demand
