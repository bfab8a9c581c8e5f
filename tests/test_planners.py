"""Every planner, every option combination, judged by `validate` and by brute force
(`optplan.fuzz.brute`, which shares nothing with the planners)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import example, given

from optplan.fuzz.brute import brute_force
from optplan.planners import get_planner
from optplan.planners.greedy import FITS, ORDERS
from optplan.problem import Alias, Buffer, Interval, Problem, lower_bound, one_arena, read_csv
from optplan.problem.plan import Plan, Status, validate
from optplan.strategies import problems

OWN = ("naive", "greedy", "cpsat")  # the planners that honour pins, alignment and capacity
LIMIT = 10.0  # seconds; every problem drawn here solves in a small fraction of that

CONFIGS = [
    ("naive", {}),
    ("greedy", {}),
    *[("greedy", {"orders": (order,), "fits": (fit,)}) for order in ORDERS for fit in FITS],
    ("cpsat", {"time_limit": LIMIT}),
    ("cpsat", {"time_limit": LIMIT, "decide_first": False}),
    ("cpsat", {"time_limit": LIMIT, "split": False}),
    ("cpsat", {"time_limit": LIMIT, "symmetry": False}),
    ("cpsat", {"time_limit": LIMIT, "num_workers": 1}),
]

INPUT_12 = """id,lower,upper,size
b1,0,3,4
b2,3,9,4
b3,0,9,4
b4,9,21,4
b5,0,21,4
"""


def plan_with(name: str, options: dict[str, object], problem: Problem) -> Plan:
    plan = get_planner(name, **options)(problem)
    assert validate(problem, plan) == [], (name, options, plan)
    assert plan.lower_bound == lower_bound(problem)
    assert plan.bound >= plan.lower_bound
    if plan.status.has_plan:
        assert plan.arena >= plan.bound
        assert set(plan.offsets) == {b.id for b in problem.buffers}
    return plan


# ---------------------------------------------------------------------------- properties


@given(problems())
def test_every_planner_gives_a_valid_plan(problem: Problem) -> None:
    for name, options in CONFIGS:
        plan = plan_with(name, options, problem)
        assert plan.status.has_plan, (name, options, plan)


@given(problems())
def test_planners_are_ordered(problem: Problem) -> None:
    naive = plan_with("naive", {}, problem)
    greedy = plan_with("greedy", {}, problem)
    cpsat = plan_with("cpsat", {"time_limit": LIMIT}, problem)
    assert lower_bound(problem) <= cpsat.arena <= greedy.arena <= naive.arena


@given(problems(max_buffers=6))
@example(read_csv("input.12.csv", text=INPUT_12))
def test_cpsat_matches_brute_force(problem: Problem) -> None:
    plan = plan_with("cpsat", {"time_limit": LIMIT}, problem)
    assert plan.status == Status.OPTIMAL
    assert plan.arena == brute_force(problem).arena


@given(problems())
def test_planners_are_deterministic(problem: Problem) -> None:
    for name, options in [("greedy", {}), ("cpsat", {"time_limit": LIMIT})]:
        first = get_planner(name, **options)(problem)
        second = get_planner(name, **options)(problem)
        assert first.offsets == second.offsets


# ---------------------------------------------------------------------------- examples


def test_minimalloc_example_reaches_its_lower_bound() -> None:
    problem = read_csv("input.12.csv", text=INPUT_12)
    plan = plan_with("cpsat", {"time_limit": LIMIT}, problem)
    assert (plan.arena, plan.status) == (12, Status.OPTIMAL)


def _buffer(name: str, size: int, start: int, end: int, **extra: int) -> Buffer:
    return Buffer(name, size, (Interval(start, end),), **extra)


def _problem(rows: list[tuple[str, int, int, int]]) -> Problem:
    return Problem(tuple(_buffer(name, size, start, end) for name, size, start, end in rows))


# Optimum above the live-bytes bound (4 at every point, 5 needed), found by a random search
# over tight traces. In the first, `b` must sit at an edge beside `a` (size 3) and `e` at an
# edge beside `h`; at point 2 four unit buffers fill the arena, and the size-2 buffers `c`
# and `g` before and after cannot then both find two adjacent free bytes.
HARD = [
    _problem(
        [
            ("a", 3, 0, 1),
            ("c", 2, 1, 2),
            ("b", 1, 0, 3),
            ("f", 1, 2, 3),
            ("g", 2, 3, 4),
            ("d", 1, 1, 4),
            ("e", 1, 2, 5),
            ("h", 3, 4, 5),
        ]
    ),
    _problem(
        [
            ("b", 2, 0, 1),
            ("a", 2, 0, 2),
            ("f", 1, 2, 3),
            ("c", 1, 1, 3),
            ("d", 1, 1, 4),
            ("e", 1, 2, 4),
            ("g", 2, 3, 5),
            ("h", 2, 4, 5),
        ]
    ),
    # Alignment: two 3-byte buffers at multiples of 4 need 7 bytes, not 6.
    Problem((_buffer("a", 3, 0, 1, alignment=4), _buffer("b", 3, 0, 1, alignment=4))),
    # A pin in the middle leaves no room below it for a 3-byte buffer.
    Problem((_buffer("p", 2, 0, 2, offset=2), _buffer("q", 3, 0, 2))),
]


@pytest.mark.parametrize("problem", HARD)
def test_optimum_above_the_lower_bound(problem: Problem) -> None:
    optimum = brute_force(problem).arena
    assert optimum > lower_bound(problem)
    plan = plan_with("cpsat", {"time_limit": LIMIT}, problem)
    assert (plan.arena, plan.status, plan.bound) == (optimum, Status.OPTIMAL, optimum)


def test_capacity_at_the_optimum_and_below() -> None:
    base = read_csv("input.12.csv", text=INPUT_12)
    at = Problem(base.buffers, memories=one_arena(12))
    below = Problem(base.buffers, memories=one_arena(11))
    assert plan_with("cpsat", {"time_limit": LIMIT}, at).status == Status.OPTIMAL
    plan = plan_with("cpsat", {"time_limit": LIMIT}, below)
    assert (plan.status, plan.offsets, plan.arena) == (Status.INFEASIBLE, {}, 0)
    for name in ("naive", "greedy"):
        plan = plan_with(name, {}, below)
        assert (plan.status, plan.offsets) == (Status.UNKNOWN, {})


def test_greedy_above_capacity_is_unknown_but_cpsat_fits() -> None:
    lifetime_first = {"orders": ("lifetime",), "fits": ("first",)}
    assert plan_with("greedy", lifetime_first, HARD[0]).arena == 6
    capped = Problem(HARD[0].buffers, memories=one_arena(5))
    assert plan_with("greedy", lifetime_first, capped).status == Status.UNKNOWN
    plan = plan_with("cpsat", {"time_limit": LIMIT}, capped)
    assert (plan.arena, plan.status) == (5, Status.OPTIMAL)


def test_capacity_at_the_lower_bound_below_the_optimum_is_proven_infeasible() -> None:
    capped = Problem(HARD[0].buffers, memories=one_arena(lower_bound(HARD[0])))
    plan = plan_with("cpsat", {"time_limit": LIMIT}, capped)
    assert (plan.status, plan.offsets) == (Status.INFEASIBLE, {})


def test_clashing_pins_are_infeasible() -> None:
    problem = Problem((_buffer("a", 8, 0, 2, offset=0), _buffer("b", 8, 1, 3, offset=4)))
    for name in OWN:
        plan = plan_with(name, {}, problem)
        assert (plan.status, plan.offsets) == (Status.INFEASIBLE, {})


def test_misaligned_pin_is_infeasible() -> None:
    problem = Problem((_buffer("a", 8, 0, 2, alignment=8, offset=4),))
    for name in OWN:
        assert plan_with(name, {}, problem).status == Status.INFEASIBLE


def test_pins_aliases_and_alignment_together() -> None:
    problem = Problem(
        (
            _buffer("x", 16, 0, 4, alignment=8),
            _buffer("v", 8, 1, 3, alignment=4),
            _buffer("p", 4, 2, 5, offset=0),
            _buffer("y", 8, 3, 6, alignment=8),
        ),
        aliases=(Alias(base="x", view="v", delta=4),),
    )
    for name, options in CONFIGS:
        plan = plan_with(name, options, problem)
        assert plan.offsets["v"] == plan.offsets["x"] + 4
        assert plan.offsets["p"] == 0


def test_empty_and_zero_size_problems() -> None:
    for problem in (Problem(()), Problem((_buffer("z", 0, 0, 1),))):
        for name, options in CONFIGS:
            plan = plan_with(name, options, problem)
            assert (plan.arena, plan.status) == (0, Status.OPTIMAL)


def test_unknown_planner_and_option_are_named() -> None:
    with pytest.raises(ValueError, match="'nope'"):
        get_planner("nope")
    with pytest.raises(ValueError, match="'speed'"):
        get_planner("cpsat", speed=3)


MINIMALLOC = Path(__file__).parent.parent.parent / "shared/data/minimalloc/challenging"


@pytest.mark.skipif(not (MINIMALLOC / "C.1048576.csv").exists(), reason="no shared data")
def test_cpsat_never_worse_than_greedy_on_a_hard_instance() -> None:
    problem = read_csv(MINIMALLOC / "C.1048576.csv")
    greedy = plan_with("greedy", {}, problem)
    cpsat = plan_with("cpsat", {"time_limit": 3.0}, problem)
    assert cpsat.arena <= greedy.arena
    assert cpsat.bound >= cpsat.lower_bound
