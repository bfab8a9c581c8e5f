"""The spill heuristic for several memories: Belady's rule over the cheapest memory.

Tensors come into the fast memory when they are written or read and leave it, spilled to
their backing memory when they were never there, for the one used furthest in the
future (`tiers.belady`); each memory's buffers are then packed by greedy. On the plain
problem of one arena nothing moves, and the plan is greedy's.
"""

from __future__ import annotations

from dataclasses import dataclass

from optplan.planners.base import Declared
from optplan.planners.common import Form, make_form, now
from optplan.planners.greedy import Greedy, plan_greedy
from optplan.planners.greedy.planner import pack_with
from optplan.planners.greedy.runs import FITS, ORDERS
from optplan.planners.tiers import plan_heuristics
from optplan.problem import Problem
from optplan.problem.plan import Plan


@dataclass(frozen=True, slots=True)
class Spill(Declared):
    """Options: the greedy orders and fits that pack each memory."""

    name: str = "spill"
    orders: tuple[str, ...] = ORDERS
    fits: tuple[str, ...] = FITS

    def __call__(self, problem: Problem) -> Plan:
        started = now()
        return plan_spill(make_form(problem), self, started=started)

    def plan(self, form: Form) -> Plan:
        return plan_spill(form, self)


def plan_spill(form: Form, options: Spill = Spill(), *, started: float | None = None) -> Plan:
    started = now() if started is None else started
    packer = Greedy(options.name, options.orders, options.fits)
    if form.problem.plain:
        return plan_greedy(form, packer, started=started)
    return plan_heuristics(
        form.problem, options.name, ["spill"], pack_with(packer), started=started
    )
