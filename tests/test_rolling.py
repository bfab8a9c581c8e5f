"""Packing a schedule window by window from its end (`remat.rolling`): every plan it
gives is judged by `validate` within the room, with the tight step's instances on the
staircase from 0; with room to spare it always gives one. `rolled`'s schedules are
valid, within the budget in live bytes and packed within it, and `Nearest.met` is the
cheapest schedule offered that is within it. Drawn on the awkward graphs (two buffers
or none per op, views, sizes of 0, bytes live across, odd alignments, ops that cannot
run twice)."""

from __future__ import annotations

import time

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from optplan.planners import get_planner
from optplan.problem import Problem, lower_bound, one_arena
from optplan.problem.plan import validate
from optplan.schedule.graph import Graph, problem_of
from optplan.schedule.remat.bounds import direct_bytes, is_valid_steps, memory_bound
from optplan.schedule.remat.heuristic import TABU, extra_cost, profile_of, relieved
from optplan.schedule.remat.packing import Nearest
from optplan.schedule.remat.rolling import roll, rolled, staircase
from tests.test_remat_awkward import awkward_graphs


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    awkward_graphs(max_ops=7),
    st.sampled_from((1, 2, 8, 64)),
    st.sampled_from(("peak", "ample")),
    st.integers(1, 4),
)
def test_a_rolled_plan_is_valid_and_keeps_the_staircase(
    drawn: tuple[Graph, tuple[bool, ...]], alignment: int, room_kind: str, window: int
) -> None:
    """Windows of 1 to 4 steps, so that a schedule of 7 has several, and merges."""
    graph, _ = drawn
    steps = tuple(range(graph.ops))
    problem = problem_of(graph, steps, alignment)
    tight = max(range(len(steps)), key=lambda t: direct_bytes(graph, steps[t]))
    total = sum(b.size + b.alignment for b in problem.buffers)
    room = lower_bound(problem) if room_kind == "peak" else 1000 * (total + 1)
    plan = roll(problem, tight, room, time.perf_counter() + 20, window)
    if room_kind == "ample":
        assert plan is not None  # every window has room for its instances side by side
    if plan is None:
        return
    assert validate(Problem(problem.buffers, problem.aliases, memories=one_arena(room)), plan) == []
    sized = [b for b in problem.buffers if b.size > 0]
    for name, offset in staircase(sized, tight).items():
        assert plan.offsets[name] == offset


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(awkward_graphs(max_ops=6), st.sampled_from((1, 4, 16)), st.floats(0.6, 1.5))
def test_a_rolled_schedule_is_valid_and_fits(
    drawn: tuple[Graph, tuple[bool, ...]], alignment: int, scale: float
) -> None:
    """From a schedule met at the budget (the tabu rank from the program order, or the
    program order), at budgets from the proven memory bound to above the program
    order's peak: a schedule `rolled` gives runs every op in an order that is valid,
    keeps the ops that cannot run twice to one run, and its plan fits the budget less
    the bytes live across."""
    graph, allowed = drawn
    steps = tuple(range(graph.ops))
    peak, low = (
        int(profile_of(graph, steps).max(initial=0)),
        memory_bound(graph, allowed, alignment).bytes,
    )
    budget = max(graph.base_bytes, low + int((scale - 0.6) / 0.9 * (peak - low)))
    deadline = time.perf_counter() + 20
    met = relieved(
        graph, steps, budget, allowed, deadline, TABU, np.zeros(len(steps), dtype=np.int64)
    )
    got = rolled(
        graph, steps if met is None else met[0], budget, alignment, list(allowed), deadline
    )
    if got is None:
        return
    schedule, plan = got
    assert is_valid_steps(graph, schedule, allowed)
    assert int(profile_of(graph, schedule).max(initial=0)) <= budget
    room = budget - graph.base_bytes
    problem = problem_of(graph, schedule, alignment)
    assert validate(Problem(problem.buffers, problem.aliases, memories=one_arena(room)), plan) == []


@settings(max_examples=40, deadline=None)
@given(
    awkward_graphs(max_ops=6), st.floats(0.5, 1.5), st.lists(st.permutations(range(6)), max_size=4)
)
def test_the_nearest_keeps_the_cheapest_schedule_within_the_budget_in_live_bytes(
    drawn: tuple[Graph, tuple[bool, ...]], scale: float, shuffles: list[list[int]]
) -> None:
    """Schedules offered in turn (the program order, then it with ops run again at the
    front): `met` is the cheapest of those whose live bytes are within the budget."""
    graph, _ = drawn
    base = tuple(range(graph.ops))
    budget = int(scale * int(profile_of(graph, base).max(initial=0)))
    nearest = Nearest(graph, 1, budget)
    offered = [base] + [
        tuple(v for v in shuffle if v < graph.ops and graph.preds[v] == ()) + base
        for shuffle in shuffles
    ]
    greedy = get_planner("greedy")
    for steps in offered:
        nearest.offer(steps, greedy(problem_of(graph, steps)))
    within = [s for s in offered if int(profile_of(graph, s).max(initial=0)) <= budget]
    if not within:
        assert nearest.met is None
        return
    assert nearest.met in within
    assert extra_cost(graph, nearest.met) == min(extra_cost(graph, s) for s in within)
