"""The spill heuristic for several memories: Belady's rule over the cheapest memory.

Tensors come into the fast memory when they are written or read and leave it, spilled to
their backing memory when they were never there, for the one used furthest in the
future (`tiers.belady`); each memory's buffers are then packed by greedy. On the plain
problem of one arena nothing moves, and the plan is greedy's.
"""

from __future__ import annotations

from dataclasses import dataclass

from optplan.planners.base import Declared
from optplan.planners.common import Form
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

    def arena(self, form: Form, started: float) -> Plan:
        """Nothing moves: greedy's plan."""
        return plan_greedy(form, self.packer(), started=started)

    def memories(self, problem: Problem, started: float) -> Plan:
        return plan_heuristics(
            problem, self.name, ["spill"], pack_with(self.packer()), started=started
        )

    def packer(self) -> Greedy:
        return Greedy(self.name, self.orders, self.fits)
