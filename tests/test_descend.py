"""`greedy.tries.descend`: the search over placement sequences that packs a plan into a
capacity greedy's orders miss, judged by `validate`."""

from __future__ import annotations

import time

from hypothesis import given, settings
from hypothesis import strategies as st

from optplan.planners import get_planner
from optplan.planners.greedy.tries import descend
from optplan.problem import Buffer, Interval, Problem, lower_bound, one_arena
from optplan.problem.plan import Status, validate
from optplan.strategies.problems import awkward_problems, problems


def _descended(problem: Problem, capacity: int | None) -> tuple[int, int]:
    """Greedy's arena and the descended plan's (which the judge accepts)."""
    plain = Problem(problem.buffers, problem.aliases)
    plan = get_planner("greedy")(plain)
    target = Problem(problem.buffers, problem.aliases, memories=one_arena(capacity))
    found = descend(target, plan, time.perf_counter() + 10.0, work=300, seed=1)
    assert not validate(plain, found), validate(plain, found)
    assert found.arena <= plan.arena
    assert found.arena >= lower_bound(plain)
    if found.status is Status.OPTIMAL:
        assert found.arena == lower_bound(plain)
    return plan.arena, found.arena


def test_descend_packs_at_the_live_bytes_where_greedy_does_not() -> None:
    """Five buffers live at 20 bytes at most: greedy's best order packs them in 22; a
    few moves of one in the placement sequence pack them in 20."""
    spans = [(7, 8, 10), (4, 6, 10), (9, 4, 8), (7, 6, 8), (9, 1, 5)]
    problem = Problem(
        tuple(Buffer(f"b{i}", size, (Interval(s, e),)) for i, (size, s, e) in enumerate(spans))
    )
    assert lower_bound(problem) == 20
    assert _descended(problem, 20) == (22, 20)


@settings(max_examples=150, deadline=None)
@given(
    problem=problems(12, min_buffers=0, branches=False, aliases=False, pins=False),
    slack=st.integers(-4, 8),
)
def test_descend_never_raises_the_arena_and_its_plans_are_valid(
    problem: Problem, slack: int
) -> None:
    """Plain problems (odd alignments, zero sizes, empty) at capacities around the live
    bytes, under and over."""
    _descended(problem, max(0, lower_bound(problem) + slack))


@settings(max_examples=80, deadline=None)
@given(problem=awkward_problems(8))
def test_descend_leaves_problems_it_cannot_take_as_they_were(problem: Problem) -> None:
    """Aliases, pins and several intervals a buffer: the plan comes back valid, and
    unchanged where descend cannot read the problem as columns."""
    _descended(problem, problem.memories[0].capacity)
