"""The naive planner: no reuse at all, the ceiling every other planner must beat.

Steps:
1. Pinned alias classes stay at their pins.
2. Every other alias class is stacked end to end above the highest pinned byte, in the
   order of `alias_classes`, each lifted to its alignment.

    offset
      |  [ c ]            every class gets bytes of its own for the whole run,
      |[ b     ]          whether or not its lifetime meets the others'
      [ a ]
      +---------------> point

Without pins the arena equals `Problem.naive_bytes`. The plan is OPTIMAL only when that
arena happens to meet the lower bound. With several memories every tensor stays in the
dearest memory it may use that has room, stacked there the same way: the traffic of a
program whose tensors all sit in slow memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from optplan.planners.base import Declared
from optplan.planners.common import Form, Rect, make_form, make_plan, no_plan, now
from optplan.planners.tiers import plan_heuristics
from optplan.problem import Problem
from optplan.problem.plan import Plan, Status


@dataclass(frozen=True, slots=True)
class Naive(Declared):
    """Options of the naive planner (it has none)."""

    name: str = "naive"

    def arena(self, form: Form, started: float) -> Plan:
        return plan_naive(form, self, started=started)

    def memories(self, problem: Problem, started: float) -> Plan:
        """Everything in the dearest memory, with no reuse."""
        return plan_heuristics(problem, self.name, ["dearest"], _pack, started=started)


def plan_naive(form: Form, options: Naive = Naive(), *, started: float | None = None) -> Plan:
    started = now() if started is None else started
    if form.fault is not None:
        return no_plan(
            form, options.name, started=started, status=Status.INFEASIBLE, reason=form.fault
        )
    return make_plan(form, options.name, stack(form.rects), started=started)


def _pack(problem: Problem) -> Plan:
    return plan_naive(make_form(problem))


def stack(rects: Sequence[Rect]) -> list[int]:
    """Offsets laying the unpinned rectangles end to end above every pinned one."""
    cursor = max((r.pin + r.size for r in rects if r.pin is not None), default=0)
    offsets = []
    for rect in rects:
        if rect.pin is not None:
            offsets.append(rect.pin)
            continue
        offset = rect.lift(cursor)
        offsets.append(offset)
        cursor = offset + rect.size
    return offsets
