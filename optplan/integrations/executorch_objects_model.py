"""Step 4 of `executorch_objects.pack`: CP-SAT's objects, no two units of one alive at once.

Units come in `order` (largest first). Variables, all named:

    lead[p]      unit p opens an object and is its largest unit: the object costs its size
    join[q,p]    unit q (after p in the order, not meeting p in time) joins p's object

Each unit leads or joins exactly one object; a unit joins only an object that is open;
at each maximal clique of lives (`cliques`) an object holds at most one of the live units
(its leader is never live there with a joiner: such pairs have no variable). Minimise the
sum of the leaders' sizes. The first-fit grouping is the hint, so the answer is never worse.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from optplan.budget import Budget


@dataclass(frozen=True, slots=True)
class Unit:
    """One allocation: live over the half-open `[start, end)`, `size` bytes high."""

    start: int
    end: int
    size: int

    def meets(self, other: Unit) -> bool:
        return self.start < other.end and other.start < self.end


def cliques(units: Sequence[Unit]) -> list[list[int]]:
    """The maximal sets of units alive at one point: at a start after which no unit ends
    before the next start (the live set of any later point up to it holds this one)."""
    points = sorted({u.start for u in units})
    found = []
    for k, point in enumerate(points):
        live = [v for v, u in enumerate(units) if u.start <= point < u.end]
        ends = min(units[v].end for v in live)
        if k + 1 == len(points) or ends <= points[k + 1]:
            found.append(live)
    return found


def improve(
    units: Sequence[Unit], order: Sequence[int], hint: Sequence[int], budget: Budget
) -> tuple[list[int], int, bool]:
    """The best grouping CP-SAT finds within `budget` (else `hint`), the bound it proved
    on the total, and whether it proved that grouping optimal."""
    from ortools.sat.python import cp_model

    model = cp_model.CpModel()
    rank = {u: r for r, u in enumerate(order)}
    lead = {p: model.new_bool_var(f"lead[{p}]") for p in order}
    join: dict[tuple[int, int], cp_model.IntVar] = {}
    for r, q in enumerate(order):
        for p in order[:r]:
            if not units[q].meets(units[p]):
                join[q, p] = model.new_bool_var(f"join[{q},{p}]")
                model.add_implication(join[q, p], lead[p])
    for q in order:
        model.add_exactly_one([lead[q], *(join[q, p] for p in order[: rank[q]] if (q, p) in join)])
    for clique in cliques(units):
        for p in order:
            held = [join[q, p] for q in clique if (q, p) in join]
            if len(held) > 1:
                model.add(sum(held) <= lead[p])
    model.minimize(sum(units[p].size * lead[p] for p in order))
    _hint(model, lead, join, order, hint)
    solver = cp_model.CpSolver()
    clock = budget.clock()
    clock.limit(solver.parameters, clock.left(), workers=1, seed=0)
    status = solver.solve(model)
    clock.solved(solver)
    bound = _ceil(solver.best_objective_bound)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return list(hint), bound, False
    of = [0] * len(units)
    for q in order:
        if solver.value(lead[q]):
            of[q] = q
        else:
            of[q] = next(p for p in order if (q, p) in join and solver.value(join[q, p]))
    return of, bound, status == cp_model.OPTIMAL


def _ceil(value: float) -> int:
    """A proven bound as whole bytes (0 when CP-SAT proved none)."""
    return math.ceil(value) if math.isfinite(value) and value > 0 else 0


def _hint(
    model: Any,
    lead: dict[int, Any],
    join: dict[tuple[int, int], Any],
    order: Sequence[int],
    hint: Sequence[int],
) -> None:
    """The hint: each object's leader is its first unit in `order`."""
    leader: dict[int, int] = {}
    for u in order:
        leader.setdefault(hint[u], u)
    for p, var in lead.items():
        model.add_hint(var, leader[hint[p]] == p)
    for (q, p), var in join.items():
        model.add_hint(var, leader[hint[q]] == p and q != p)
