"""The properties of a plan of several memories, judged without trusting the planner.

For a plan that a target returns for a problem of several memories (`Problem.objective` "traffic"):

1. A plan validates (`optplan.problem.plan.validate`: residences, copies, capacities of
   every memory, and its traffic recounted); each kind of violation is its own property.
2. The least traffic it claims every plan needs (`traffic_bound`) is not more than a
   reference plan's traffic.
3. A claimed OPTIMAL is not beaten: no reference plan has less traffic.
4. A claimed INFEASIBLE is not refuted: no reference plan exists.

The references: the plans of the naive, greedy and spill planners, each validated first
(so a wrong reference never accuses a right planner), and, on problems of at most
`tiers_brute.BRUTE_PLANS` plans, the least traffic of every plan
(`optplan.fuzz.tiers_brute`, which shares no code with the planners).
"""

from __future__ import annotations

from optplan.fuzz.failure import Failure
from optplan.fuzz.tiers_brute import BRUTE_PLANS, least_traffic, plans_to_weigh
from optplan.problem import Problem
from optplan.problem.plan import Plan, Status, validate

REFERENCES = ("naive", "greedy", "spill")


def judge_memories(problem: Problem, plan: Plan) -> Failure | None:
    """The first property of the module docstring that `plan` violates, or None."""
    if plan.status.has_plan:
        faults = validate(problem, plan)
        if faults:
            return Failure(faults[0].kind, str(faults[0]))
    least = _least_reference(problem)
    if least is None:
        return None
    traffic, by = least
    if plan.traffic_bound > traffic:
        return Failure(
            "bound-above-a-plan",
            f"{plan.planner} proves every plan needs traffic {plan.traffic_bound}, "
            f"but {by} has traffic {traffic}",
        )
    if plan.status is Status.OPTIMAL and plan.traffic is not None and plan.traffic > traffic:
        return Failure(
            "beaten-optimum",
            f"{plan.planner} claims traffic {plan.traffic} is optimal, but {by} has {traffic}",
        )
    if plan.status is Status.INFEASIBLE:
        return Failure(
            "false-infeasible",
            f"{plan.planner} claims no plan fits the memories, but {by} has one (traffic {traffic})",
        )
    return None


def _least_reference(problem: Problem) -> tuple[int, str] | None:
    """The least traffic of a reference plan, and which reference has it; None where no
    reference has a plan."""
    from optplan.planners import get_planner

    found: list[tuple[int, str]] = []
    for name in REFERENCES:
        plan = get_planner(name)(problem)
        if plan.status.has_plan and plan.traffic is not None and not validate(problem, plan):
            found.append((plan.traffic, f"the {name} planner"))
    if plans_to_weigh(problem) <= BRUTE_PLANS:
        least = least_traffic(problem)
        if least is not None:
            found.append((least, "the brute force"))
    return min(found, default=None)
