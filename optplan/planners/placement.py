"""Each buffer's memory and offset: the static placement an integration writes back.

A runtime that gives every tensor one memory id and one offset for the whole run (a
banked plan, ExecuTorch's `mem_id`s) cannot copy tensors between memories. `place` plans
a problem of several memories that way, for the least traffic (cpsat with `copies`
off), and `placement` reads any plan of copies-free residences back as buffer ->
(memory, offset).
"""

from __future__ import annotations

from optplan.planners.cpsat import CpSat
from optplan.problem import Problem
from optplan.problem.outcome import residences_of
from optplan.problem.plan import Plan, validate


def placement(problem: Problem, plan: Plan) -> dict[str, tuple[str, int]]:
    """Buffer -> (memory, offset) of a plan that moves nothing (a plan of one arena puts
    every buffer in the problem's one memory). Raises ValueError for a plan with copies."""
    if plan.copies:
        raise ValueError(f"the plan of {plan.planner!r} copies buffers between memories")
    return {r.buffer: (r.memory, r.offset) for r in residences_of(problem, plan)}


def place(problem: Problem, *, time_limit: float = 10.0) -> dict[str, tuple[str, int]] | None:
    """Buffer -> (memory, offset), every buffer in one memory all its life, for the
    least traffic found in `time_limit` seconds; None when no placement fits the
    capacities. The placement is checked by `validate` before it is returned."""
    plan = CpSat(time_limit=time_limit, copies=False)(problem)
    if not plan.status.has_plan:
        return None
    faults = validate(problem, plan)
    assert not faults, faults
    return placement(problem, plan)
