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
2. A row no choice of x meets proves that no schedule fits (`unmet`; `rematerialise`
   answers INFEASIBLE).
3. The covering problem is solved by CP-SAT, one worker, a fixed seed, stopped on its
   deterministic time (half of each round's part of `work`): its proven objective
   bound (the optimum where it ends) is the bound; where CP-SAT stops first, the linear
   relaxation by GLOP (one model, its new rows added each round), rounded up.
4. Rows from cuts (`_Cuts`): the ops run before v's first run are some set D closed
   under the order, and what D made that is read outside D is held at v's step unless
   its maker runs again after it; that run reads the maker's inputs after the step,
   so each of them is held there too, or dropped in turn. With the choice of step 3, a
   maximum flow per op finds the least held over every D; where it exceeds the budget,
   the flow gives a row that cuts the choice off, and step 3 runs again, up to
   `rounds` solves.

Every step counts its work on the running clock (`optplan.budget`): step 1 its pairs
of an op and a buffer, step 3 CP-SAT's deterministic time, GLOP's iterations and the
coefficients written, step 4 the arcs of each flow; the rounds stop where `work` is
spent, and the bound is then the last solve's (still a bound). Under a clock counted
in work the bound is the same on any machine.

Beside it, the order search's bound (`forced`): where it proves every order's peak
above the budget, no schedule that runs each op once fits, so some op runs again, at
least the cheapest that may. The rows miss that where each op's step alone has a cut
within the budget but no one order meets every step's (`ORDERS` in
tests/test_remat_lower.py); an answer states the larger of the two (`covered`).

It covers every schedule `rematerialise` may return and every one `exhaustive`
searches: any order of first runs and any recomputation, at any alignment.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from ortools.graph.python import max_flow  # type: ignore[import-untyped, import-not-found, unused-ignore]
from ortools.linear_solver import pywraplp  # type: ignore[import-untyped, import-not-found, unused-ignore]
from ortools.sat.python import cp_model
from ortools.sat.python.cp_model import LinearExpr

from optplan.budget import active, limit_solver, now, solver_done, spend
from optplan.schedule.graph import Graph, closure

# Work (units of `optplan.budget`, about a second of one core each) of the steps: a pair
# of an op and a buffer in the rows of step 1, a coefficient written into a covering
# model, a simplex iteration per row of GLOP's, an arc of a maximum flow solved (on
# MOCCASIN's 1,000-node graph at 50-80 %: the flows 3-4.6 s, GLOP 0.4-0.9 s a bound).
PAIR_WORK = 4e-7
COEFFICIENT_WORK = 2e-6
PIVOT_WORK = 5e-7
ARC_WORK = 7e-8
# CP-SAT's covering models take about this many times a no-overlap-2D part's seconds
# per deterministic second (`optplan.budget.CPSAT_WORK_PER_SECOND`): 1.9 s of one core
# (MOCCASIN's 500-node graph at 50-70 %, 24 deterministic seconds in 45 s).
COVER_SCALE = 0.16


@dataclass(frozen=True, slots=True)
class Covering:
    """The bound on the extra compute (`cost`), how many rows (ops whose demand is
    positive, and cuts) gave it, whether CP-SAT proved it optimal for the covering
    problem, whether some row cannot be met (no schedule fits the budget), the solves
    done, and whether the rounds ended with no cut left to add (`converged`)."""

    cost: int
    rows: int
    optimal: bool
    unmet: bool
    solves: int = 0
    converged: bool = False


@dataclass(frozen=True, slots=True)
class Lower:
    """What an answer says of the least extra compute over every schedule: a bound
    (`cost`), how it was got or why it is 0 (`reason`), and whether it proves that no
    schedule fits (`unmet`)."""

    cost: int
    reason: str
    unmet: bool = False


def covered(
    graph: Graph,
    budget: int,
    recomputable: Sequence[bool] | None,
    order: tuple[int, int],
    work: float,
) -> Lower:
    """The covering bound in `work` units of the running clock, as an answer states it,
    or the order search's where that is higher (`forced`); none where an order fits
    the budget (no row can then be above 0: the order's every step holds what the rows
    count). `order`: the best order's peak and a proven bound on every order's."""
    order_peak, order_bound = order
    if order_peak <= budget:
        return Lower(
            0, f"an order holds at most {order_peak} bytes at every step: no run again is forced"
        )
    once = forced(graph, budget, recomputable, order_bound)
    if once is not None and once.unmet:
        return once  # nothing fits: the covering bound's work would add nothing
    cover = covering_bound(graph, budget, recomputable, work)
    if cover.unmet:
        return Lower(0, "some op's step holds more than the budget whatever runs again", True)
    if once is not None and once.cost > cover.cost:
        return once
    if not cover.converged and not cover.cost:
        return Lower(
            0,
            f"{cover.solves} solves over {cover.rows} rows in its share of the work "
            f"({work:.1f}) proved no more than 0",
        )
    if not cover.rows:
        return Lower(
            0,
            "at every op's step some set of ops run before it holds at most the budget "
            "(a minimum cut) with nothing made again: no one step forces a run again",
        )
    ended = "converged" if cover.converged else "more rounds may raise it"
    return Lower(
        cover.cost,
        f"covering bound over {cover.rows} rows, {cover.solves} solves ({ended})",
    )


def forced(
    graph: Graph, budget: int, recomputable: Sequence[bool] | None, order_bound: int
) -> Lower | None:
    """Where the order search proved every order's peak above the budget, a schedule
    that runs each op once does not fit: some op runs again, at least the cheapest that
    may and makes a buffer (a run that makes nothing only holds what it reads longer, so
    the least schedule has none). Where no such op may run again, nothing fits (`unmet`).
    None where the bound is within the budget."""
    if order_bound <= budget:
        return None
    proved = (
        "every order holds more than the budget at some step "
        f"(the order search proved {order_bound} bytes)"
    )
    allowed = list(recomputable) if recomputable is not None else [True] * graph.ops
    every = graph.costs or (1,) * graph.ops
    costs = [every[v] for v in range(graph.ops) if allowed[v] and graph.creates[v]]
    if not costs:
        return Lower(0, f"{proved} and no op that makes a buffer may run again", True)
    cheapest = min(costs)
    return Lower(cheapest, f"{proved}: some op runs again, the cheapest that may costs {cheapest}")


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
    work: float = 12.0,
    rounds: int = 6,
) -> Covering:
    """The bound of the module docstring within `work` units of the running clock
    (`optplan.budget.now`: its work, or seconds outside a counted run), `rounds` the
    solves at most (each but the last followed by one flow per op)."""
    end = now() + work
    got, unmet = rows(graph, budget, recomputable)
    spend(graph.ops * len(graph.sizes) * PAIR_WORK)
    if unmet:
        return Covering(0, len(got), False, True)
    cuts = _Cuts(graph, budget, recomputable)
    relaxation = _Relaxation(graph.costs or (1,) * graph.ops)
    best = Covering(0, len(got), False, False)
    for round_ in range(rounds):
        left = end - now()
        if left <= 0:
            break
        cost, optimal, again = _solve(graph, got, left / (2 * (rounds - round_)), relaxation)
        if again is None:  # the rows admit no choice: nothing fits the budget
            return Covering(0, len(got), False, True, round_ + 1)
        best = Covering(max(best.cost, cost), len(got), optimal, False, round_ + 1)
        if round_ == rounds - 1:
            break
        new = cuts.rows(again, end)
        if new is None:  # the work ran out among the flows
            break
        if not new:
            return replace(best, converged=True)
        if any(sum(drop.values()) < demand for drop, demand in new):
            return Covering(0, len(got), False, True, round_ + 1)
        got.extend(new)
    return best


def _solve(
    graph: Graph, got: list[Row], units: float, relaxation: _Relaxation
) -> tuple[int, bool, set[int] | None]:
    """The covering problem over `got` in `units` of the clock: its proven bound, whether
    optimal, and the makers run again in the best choice found (None where there is
    none)."""
    if not got:
        return 0, True, set()
    costs = graph.costs or (1,) * graph.ops
    model = cp_model.CpModel()
    makers = sorted({m for drop, _ in got for m in drop})
    x = {m: model.new_bool_var(f"again[{m}]") for m in makers}
    for drop, demand in got:
        model.add(LinearExpr.weighted_sum([x[m] for m in drop], list(drop.values())) >= demand)
    model.minimize(LinearExpr.weighted_sum([x[m] for m in makers], [costs[m] for m in makers]))
    spend(sum(len(drop) for drop, _ in got) * COEFFICIENT_WORK)
    solver = cp_model.CpSolver()
    clock = active()
    # `limit_solver` divides the units by the scale in both modes; in seconds the solve
    # takes the units as they are.
    counted = clock is not None and clock.counted
    limit_solver(
        solver.parameters, units if counted else units * COVER_SCALE, workers=1, scale=COVER_SCALE
    )
    status = solver.solve(model)
    solver_done(solver, COVER_SCALE)
    if status == cp_model.INFEASIBLE:
        return 0, False, None
    bound = max(0, math.ceil(solver.best_objective_bound - 1e-6))
    if status != cp_model.OPTIMAL:
        bound = max(bound, relaxation.bound(got, units))
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return bound, False, set()
    return bound, status == cp_model.OPTIMAL, {m for m in makers if solver.value(x[m])}


class _Relaxation:
    """The covering problem's linear relaxation by GLOP (where CP-SAT stopped before its
    own bound got there), rounded up (costs are integers); one model for every round,
    each adding its new rows. Its work: GLOP's iterations, each `PIVOT_WORK` a row."""

    def __init__(self, costs: Sequence[int]) -> None:
        self.costs = costs
        self.solver = pywraplp.Solver.CreateSolver("GLOP")
        self.solver.Objective().SetMinimization()
        self.x: dict[int, Any] = {}
        self.added = 0

    def bound(self, got: list[Row], units: float) -> int:
        solver = self.solver
        for drop, demand in got[self.added :]:
            row = solver.Constraint(1.0, solver.infinity())
            for m, w in drop.items():
                if m not in self.x:
                    self.x[m] = solver.NumVar(0.0, 1.0, f"again[{m}]")
                    solver.Objective().SetCoefficient(self.x[m], self.costs[m])
                row.SetCoefficient(self.x[m], w / demand)
            spend(len(drop) * COEFFICIENT_WORK)
        self.added = len(got)
        pivots = max(1, int(min(units / (PIVOT_WORK * max(1, len(got))), 1e9)))
        solver.SetSolverSpecificParametersAsString(f"max_number_of_iterations: {pivots}")
        status = solver.Solve()
        spend(solver.iterations() * PIVOT_WORK * len(got))
        if status != pywraplp.Solver.OPTIMAL:
            return 0
        # The dual bound would be exact; a little slack keeps rounding from overshooting.
        value = solver.Objective().Value()
        return max(0, math.ceil(value - 1e-6 * (1 + sum(self.costs))))


class _Cuts:
    """Step 4: per op v, a maximum flow in the network of `schedule.bounds.cut_bounds`
    (its minimum cut is the least held at v's step over every set D of ops run before
    it), in which a buffer whose maker runs again costs nothing where the maker's
    inputs are needed after v anyway (it may be made again after v from them), and its
    size where one is not (`_inputs`). Where the flow is above the room, the choice is
    cut off by the row its flow gives: a flow less what passes through the buffers
    another choice drops is still a flow, so every choice whose schedule fits needs the
    flow through the buffers it drops to reach the flow's excess over the room
    (max-flow min-cut duality). Where a dropped buffer is kept instead, the flow
    through its run-again arc goes on from an input to its maker (the maker reads it)
    and into the buffer's own arc, of the same size: nothing is lost. Each flow's work
    is `ARC_WORK` an arc."""

    def __init__(self, graph: Graph, budget: int, recomputable: Sequence[bool] | None) -> None:
        self.graph, self.budget = graph, budget
        buffers = len(graph.sizes)
        creator = {b: v for v, bufs in enumerate(graph.creates) for b in bufs}
        self.maker = np.array([creator.get(b, -1) for b in range(buffers)], dtype=np.int64)
        self.sizes = np.array(graph.sizes, dtype=np.int64)
        allowed = np.array(
            [True] * graph.ops if recomputable is None else list(recomputable), dtype=bool
        )
        # A buffer live in or made by an op that may not run again is always held.
        self.droppable = (self.maker >= 0) & allowed[np.maximum(self.maker, 0)]
        self.flow = max_flow.SimpleMaxFlow()
        self.infinite = int(self.sizes.sum()) + 1
        self.arcs = self._network()
        self.inputs = self._inputs()
        self.tie_in = [self._arc(self.source, v, 0) for v in range(graph.ops)]
        self.tie_out = [self._arc(v, self.sink, 0) for v in range(graph.ops)]

    def _arc(self, tail: int, head: int, capacity: int) -> int:
        return int(self.flow.add_arc_with_capacity(tail, head, capacity))

    def _network(self) -> np.ndarray:
        """Op v is node v, buffer b node ops + b; the arc of each buffer, by buffer."""
        graph, n = self.graph, self.graph.ops
        self.source, self.sink = n + len(graph.sizes), n + len(graph.sizes) + 1
        arcs = []
        for b, readers in enumerate(graph.readers()):
            maker = int(self.maker[b])
            arcs.append(self._arc(self.source if maker < 0 else maker, n + b, graph.sizes[b]))
            for r in readers:
                self._arc(n + b, r, self.infinite)
                if maker >= 0:
                    self._arc(r, maker, self.infinite)
            if b in graph.live_out:
                self._arc(n + b, self.sink, self.infinite)
        for v, preds in enumerate(graph.preds):
            for u in preds:
                self._arc(v, u, self.infinite)
        return np.array(arcs, dtype=np.int32)

    def _inputs(self) -> np.ndarray:
        """A dropped buffer's maker runs again after the step, and reads its inputs then:
        each is held at the step or dropped too. Node `runs + b` stands for b's maker's
        run again; every input's node leads to it, and its arc into b (by buffer, the
        capacity b's size where b is dropped) is cut, b held, where some input is not
        needed after the step otherwise."""
        graph, n = self.graph, self.graph.ops
        runs = n + len(graph.sizes) + 2
        arcs = []
        for b in range(len(graph.sizes)):
            maker = int(self.maker[b])
            arcs.append(self._arc(runs + b, n + b, 0))
            if self.droppable[b]:
                for a in graph.reads[maker]:
                    self._arc(n + a, runs + b, self.infinite)
        return np.array(arcs, dtype=np.int32)

    def rows(self, again: set[int], end: float) -> list[Row] | None:
        """The rows of every op whose step `again` leaves above the room; None where the
        clock reached `end` first."""
        dropped = self.droppable & np.isin(self.maker, sorted(again))
        self.flow.set_arcs_capacity(self.arcs, np.where(dropped, 0, self.sizes))
        self.flow.set_arcs_capacity(self.inputs, np.where(dropped, self.sizes, 0))
        found: list[Row] = []
        for v in range(self.graph.ops):
            if now() >= end:
                return None
            row = self._violated(v, dropped)
            spend(self.flow.num_arcs() * ARC_WORK)
            if row is not None:
                found.append(row)
        return found

    def _violated(self, v: int, dropped: np.ndarray) -> Row | None:
        """The row of v's flow where the choice `dropped` leaves v's step above the room."""
        graph = self.graph
        made = sum(graph.sizes[b] for b in set(graph.creates[v]))
        room = self.budget - graph.base_bytes - made
        reads = np.array(graph.reads[v], dtype=np.int64)
        kept = reads[dropped[reads]] if len(reads) else reads  # v's reads are held
        none = np.zeros(len(kept), dtype=np.int64)
        self.flow.set_arcs_capacity(self.arcs[kept], self.sizes[kept])
        self.flow.set_arcs_capacity(self.inputs[kept], none)
        self._tie(v, self.infinite)
        self.flow.solve(self.source, self.sink)
        value = self.flow.optimal_flow()
        through = np.asarray(self.flow.flows(self.arcs))
        self._tie(v, 0)
        self.flow.set_arcs_capacity(self.arcs[kept], none)
        self.flow.set_arcs_capacity(self.inputs[kept], self.sizes[kept])
        demand = value - room
        if demand <= 0 or value >= self.infinite:
            return None
        mask = (through > 0) & self.droppable
        mask[reads] = False
        per_maker: dict[int, int] = {}
        for m, w in zip(self.maker[mask].tolist(), through[mask].tolist()):
            per_maker[m] = per_maker.get(m, 0) + w
        return {m: min(w, demand) for m, w in per_maker.items()}, demand

    def _tie(self, v: int, capacity: int) -> None:
        """v's predecessors to the source and v to the sink (or untie them, at 0)."""
        for u in self.graph.preds[v]:
            self.flow.set_arc_capacity(self.tie_in[u], capacity)
        self.flow.set_arc_capacity(self.tie_out[v], capacity)
