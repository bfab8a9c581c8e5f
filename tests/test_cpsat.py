"""CP-SAT's rounds of part solves on their own (the skyline search off), judged by
`validate` and by brute force: at the optimum and one byte below it, with the parts
split or whole."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from optplan.budget import Budget
from optplan.fuzz.brute import brute_force
from optplan.planners import get_planner
from optplan.planners.common import make_form, make_plan, now, top
from optplan.planners.cpsat import CpSat, search_first
from optplan.planners.cpsat import model as cpsat_model
from optplan.planners.cpsat.part import part_top
from optplan.planners.greedy import best_offsets
from optplan.planners.search import Packing, SearchResult
from optplan.planners.search import ask as search_ask
from optplan.problem import Buffer, Interval, Problem, one_arena, read_csv
from optplan.problem.plan import Status, validate
from optplan.strategies import problems, tiny_awkward_problems

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
        problem = replace(problem, memories=one_arena(max(least.arena - (capacity == "below"), 0)))
    planner = get_planner("cpsat", time_limit=LIMIT, search_share=0.0, split=split)
    plan = planner(problem)
    assert validate(problem, plan) == [], plan
    if least.status.has_plan and (
        problem.memories[0].capacity is None or least.arena <= problem.memories[0].capacity
    ):
        assert (plan.status, plan.arena, plan.bound) == (Status.OPTIMAL, least.arena, least.arena)
        assert plan.detail["rounds"] <= plan.detail["parts_solved"]
    else:
        assert (plan.status, plan.offsets) == (Status.INFEASIBLE, {}), plan


@given(problems(max_buffers=8, residues=True, max_size=40))
def test_a_minimisation_in_many_short_solves_keeps_its_bounds(problem: Problem) -> None:
    """Long minimisations run as a chain of short solves (`cpsat_model.SOLVE_CHUNK`), each
    hinted with the best placement so far: with solves of 10 ms, every part's placement is
    valid, no worse than greedy, and every bound proven stays at or below the optimum."""
    form = make_form(replace(problem, memories=one_arena(None)))
    if form.fault is not None:
        return
    greedy, _ = best_offsets(form)
    offsets, bound = list(greedy), 0
    saved = cpsat_model.SOLVE_CHUNK
    try:
        cpsat_model.SOLVE_CHUNK = 0.0  # each solve gets CP-SAT's least time, 10 ms
        for part in form.parts:
            upper = part_top(part, greedy)
            clock = Budget(seconds=0.2).clock()
            between = (form.live_bytes, upper)
            status, placed, found = cpsat_model._minimise(
                part, between, list(greedy), clock.now() + 0.2, CpSat(), clock, None
            )
            assert placed is not None or status is not Status.OPTIMAL
            if placed is not None:
                assert part_top(part, placed) <= upper
                for rect in part:
                    offsets[rect.index] = placed[rect.index]
            bound = max(bound, found)
    finally:
        cpsat_model.SOLVE_CHUNK = saved
    plan = make_plan(
        form, "chain", offsets, started=now(), bound=min(bound, top(form.rects, offsets))
    )
    assert validate(form.problem, plan) == []
    assert bound <= brute_force(replace(problem, memories=one_arena(None))).arena


MINIMALLOC_D = Path(__file__).parents[2] / "shared/data/minimalloc/challenging/D.1048576.csv"


@pytest.mark.skipif(not MINIMALLOC_D.exists(), reason="no shared data")
@pytest.mark.parametrize("budget", [{"work": None, "time_limit": 8.0}, {"work": 8.0}])
def test_the_search_asks_a_capacity_again_only_for_longer(
    monkeypatch: pytest.MonkeyPatch, budget: dict[str, float | None]
) -> None:
    """The search counts its turns in nodes, so asking the bound again for less time than
    the first ask ran walks the same nodes: on MiniMalloc's D (one part, nothing fits at
    the bound) that second ask took the time the bisection needed to reach MiniMalloc's
    peak. The bound is asked once, and the time (or work) goes to bisecting."""
    asked: list[tuple[int, float]] = []

    def spy(packing: Packing, capacity: int, **options: Any) -> SearchResult:
        answer = search_ask(packing, capacity, **options)
        asked.append((capacity, answer.seconds))
        return answer

    monkeypatch.setattr(search_first, "ask", spy)
    problem = read_csv(MINIMALLOC_D)
    plan = get_planner("cpsat", **budget)(problem)
    assert validate(problem, plan) == []
    at_bound = [seconds for capacity, seconds in asked if capacity == plan.lower_bound]
    assert len(at_bound) == 1, asked
