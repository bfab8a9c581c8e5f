"""CP-SAT's rounds of part solves on their own (the skyline search off), judged by
`validate` and by brute force: at the optimum and one byte below it, with the parts
split or whole."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import example, given
from hypothesis import strategies as st

from optplan.fuzz.brute import brute_force
from optplan.plan import Status, validate
from optplan.planners import get_planner
from optplan.problem import Buffer, Interval, Problem
from optplan.strategies import tiny_awkward_problems

LIMIT = 10.0  # seconds; every problem drawn here solves in a small fraction of that

# Two parts (nothing live across point 3); at capacity 6 the first needs 7 bytes.
TWO_PARTS = Problem(
    (
        Buffer("a", 4, (Interval(0, 2),)),
        Buffer("b", 3, (Interval(1, 3),)),
        Buffer("c", 5, (Interval(3, 5),)),
        Buffer("d", 2, (Interval(4, 6),)),
    )
)


@given(tiny_awkward_problems(), st.sampled_from(("drawn", "optimum", "below")), st.booleans())
@example(TWO_PARTS, "below", True)
@example(TWO_PARTS, "optimum", True)
@example(TWO_PARTS, "optimum", False)
def test_rounds_alone_agree_with_brute_force(problem: Problem, capacity: str, split: bool) -> None:
    """OPTIMAL at the brute force's optimum when it fits under the capacity, else
    INFEASIBLE (a part that cannot fit, or a capacity below the live bytes)."""
    least = brute_force(problem)  # the capacity aside
    if least.status.has_plan and capacity != "drawn":
        problem = replace(problem, capacity=max(least.arena - (capacity == "below"), 0))
    planner = get_planner("cpsat", time_limit=LIMIT, search_share=0.0, split=split)
    plan = planner(problem)
    assert validate(problem, plan) == [], plan
    if least.status.has_plan and (problem.capacity is None or least.arena <= problem.capacity):
        assert (plan.status, plan.arena, plan.bound) == (Status.OPTIMAL, least.arena, least.arena)
        assert plan.detail["rounds"] <= plan.detail["parts_solved"]
    else:
        assert (plan.status, plan.offsets) == (Status.INFEASIBLE, {}), plan
