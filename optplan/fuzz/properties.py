"""The properties every plan of a `Problem` must have, judged without trusting the planner.

For a plan that a target returns for a problem, in order:

1. It did not crash (an exception is a failure named `crash`).
2. A plan validates (`optplan.problem.plan.validate`: offsets, alignment, pins, aliases, arena,
   capacity, no live overlap); each kind of violation is its own property.
3. Its arena is at least the live-bytes lower bound (`optplan.problem.lower_bound`).
4. A claimed OPTIMAL is not beaten: not by greedy, and on problems of at most
   `BRUTE_CLASSES` alias classes not by an exhaustive search (`optplan.fuzz.brute`).
5. A claimed INFEASIBLE is not refuted: no valid plan within the capacity exists among
   greedy's, the brute force's and the witness layout every drawn problem has
   (`optplan.strategies.roomy_offsets`).

Any witness used in 4 and 5 is itself validated first, so a wrong reference never
accuses a right planner.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from optplan.fuzz.brute import BRUTE_CLASSES, brute_force
from optplan.fuzz.failure import Failure
from optplan.fuzz.memories import judge_memories
from optplan.problem import Problem, alias_classes, lower_bound, one_arena
from optplan.problem.core import Objective
from optplan.problem.plan import Plan, Status, traffic, validate


def judge_plan(problem: Problem, plan: Plan) -> Failure | None:
    """The first property that `plan` violates, or None, by what the problem's plans are
    judged by (`Problem.objective`): the arena (2-5 above) or the traffic
    (`optplan.fuzz.memories`)."""
    return JUDGES[problem.objective](problem, plan)


def judge_arena(problem: Problem, plan: Plan) -> Failure | None:
    """The first property (2-5) that a plan judged by its arena violates, or None."""
    if plan.status.has_plan:
        faults = validate(problem, plan)
        if faults:
            return Failure(faults[0].kind, str(faults[0]))
        bound = lower_bound(problem)
        if plan.arena < bound:
            return Failure("below-bound", f"arena {plan.arena} is below the lower bound {bound}")
    if plan.status is Status.OPTIMAL:
        better = _best_witness(problem, plan.arena - 1)
        if better is not None:
            return Failure(
                "beaten-optimum",
                f"{plan.planner} claims {plan.arena} bytes is optimal, "
                f"but {better.planner} finds a valid plan of {better.arena}",
            )
    if plan.status is Status.INFEASIBLE:
        capacity = problem.memories[0].capacity
        witness = _best_witness(problem, capacity)
        if witness is not None:
            return Failure(
                "false-infeasible",
                f"{plan.planner} claims nothing fits in capacity {capacity}, "
                f"but {witness.planner} finds a valid plan of {witness.arena}",
            )
    return None


# The properties by what a problem's plans are judged by.
JUDGES: dict[Objective, Callable[[Problem, Plan], Failure | None]] = {
    "arena": judge_arena,
    "traffic": judge_memories,
}


def _best_witness(problem: Problem, at_most: int | None) -> Plan | None:
    """The smallest valid reference plan whose arena is at most `at_most`, if any."""
    from optplan.planners import get_planner
    from optplan.strategies.problems import roomy_offsets

    open_problem = Problem(problem.buffers, problem.aliases)
    candidates = [get_planner("greedy")(open_problem)]
    if len(alias_classes(problem)) <= BRUTE_CLASSES:
        candidates.append(brute_force(open_problem))
    offsets, arena = roomy_offsets(problem)
    candidates.append(Plan(offsets, arena, Status.FEASIBLE, "the stacked layout", 0))
    limit = problem.memories[0].capacity if at_most is None else at_most
    best = None
    for plan in candidates:
        fits = limit is None or plan.arena <= limit
        better = best is None or plan.arena < best.arena
        if plan.status.has_plan and fits and better and _valid(problem, limit, plan):
            best = plan
    return best


def _valid(problem: Problem, capacity: int | None, plan: Plan) -> bool:
    return not validate(problem_within(problem, capacity), plan)


def problem_within(problem: Problem, capacity: int | None) -> Problem:
    return Problem(problem.buffers, problem.aliases, memories=one_arena(capacity))


def plan_from_offsets(problem: Problem, offsets: dict[str, int], planner: str) -> Plan:
    """A plan for offsets given without one, which keeps every buffer in the first memory
    all its life (`outcome.residences_of`): the arena is where the highest buffer ends,
    and where plans are judged by traffic it claims the traffic of that residency."""
    ends = [offsets[b.id] + b.size for b in problem.buffers if b.id in offsets]
    arena = max([0, *ends])
    plan = Plan(dict(offsets), arena, Status.FEASIBLE, planner, lower_bound(problem))
    if problem.objective == "traffic":
        return replace(plan, traffic=traffic(problem, plan))
    return plan
