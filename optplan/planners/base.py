"""What every planner shares: what it takes, declared once, and the one fork between the
problem of one arena and the problem of several memories.

A planner's options derive from `Declared`, which plans a problem in three steps:
1. `__call__(problem)` builds the form once (`common.make_form`, in `whole`); `plan(form)`
   takes one already built (several planners on one problem share it).
2. A problem judged by its arena (`Problem.objective`: one memory, every buffer there
   all its life) goes to the planner's `arena(form, started)`, its own packing; one
   judged by traffic to its `memories(problem, started)`, where it decides residency and
   packs each memory, each the problem of one arena (`planners.tiers`). This is the one
   place that asks: no planner, report or property forks on the memories itself.
3. What the planner takes it declares, so nothing reads a planner's fields to find out:

    takes_work    it searches, and stops on a `budget.Budget`: its options hold `work`
                  (units) and `time_limit` (seconds, the guard)
    takes_watch   it reports progress to a `watch.Watch` and stops when the watch does
    takes_copies  of several memories, it may copy a tensor between them (`copies`
                  False: each stays in one memory, as banked planners place them)

`configured` gives a planner a budget and a watch where it takes them.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar, TypeVar

from optplan.budget import Budget
from optplan.planners.common import Form, make_form, now
from optplan.planners.watch import Watch
from optplan.problem import Problem
from optplan.problem.plan import Plan


class Declared:
    """The base of every planner's options: what the planner takes (none, by default),
    and the fork of step 2."""

    __slots__ = ()
    takes_work: ClassVar[bool] = False
    takes_watch: ClassVar[bool] = False
    takes_copies: ClassVar[bool] = False

    def __call__(self, problem: Problem) -> Plan:
        started = now()
        if problem.objective == "traffic":
            return self.memories(problem, started)
        return self.whole(problem, started)

    def plan(self, form: Form) -> Plan:
        started = now()
        if form.problem.objective == "traffic":
            return self.memories(form.problem, started)
        return self.arena(form, started)

    def whole(self, problem: Problem, started: float) -> Plan:
        """The plan of one arena from the problem itself: its form, then `arena` (a
        planner that can plan without a form, from columns, says so here)."""
        return self.arena(make_form(problem), started)

    def arena(self, form: Form, started: float) -> Plan:
        """The plan of one arena (`form.problem.objective` "arena"), timed from `started`."""
        raise NotImplementedError

    def memories(self, problem: Problem, started: float) -> Plan:
        """The plan of several memories: residency, copies and each memory's offsets."""
        raise NotImplementedError


P = TypeVar("P", bound=Declared)


def configured(planner: P, budget: Budget | None = None, watch: Watch | None = None) -> P:
    """`planner` with `budget` (its work and guard) and `watch`, where it takes them."""
    changes: dict[str, object] = {}
    if budget is not None and planner.takes_work:
        changes["work"] = budget.work
        changes["time_limit"] = budget.seconds
    if watch is not None and planner.takes_watch:
        changes["watch"] = watch
    return dataclasses.replace(planner, **changes) if changes else planner  # type: ignore[type-var]
