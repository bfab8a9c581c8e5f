"""One meaning for alias classes, and no wrong answer from any planner.

An alias class is one allocation: its rectangle (from its lowest member offset to its
highest member end) is reserved while any member is live. `validate`, `lower_bound`, the
brute force and every planner must agree on that; a planner's OPTIMAL must equal the
brute force, its INFEASIBLE must be true, and no plan `validate` accepts is below either.
"""

from __future__ import annotations

import time

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from optplan.fuzz.brute import brute_force
from optplan.planners import PLANNERS, get_planner
from optplan.problem import Alias, Buffer, Interval, Problem, alias_classes, lower_bound, one_arena
from optplan.problem.plan import Plan, Status, validate
from optplan.strategies import tiny_awkward_problems as awkward_problems

LIMIT = 10.0


def _buffer(name: str, size: int, start: int, end: int, **extra: int) -> Buffer:
    return Buffer(name, size, (Interval(start, end),), **extra)


# Issue reproducers, each a case the planners or the validator once got wrong.
RESIDUE = Problem(  # v at delta 3 with alignment 8: the class offset must be 5 mod 8
    (
        _buffer("a", 16, 0, 3),
        _buffer("v", 8, 0, 3, alignment=8),
        _buffer("c", 13, 1, 2),
        _buffer("d", 7, 0, 2),
        _buffer("e", 9, 2, 3),
    ),
    (Alias("a", "v", 3),),
)
CONTRADICTING_PINS = Problem(  # v = a + 2, yet a is pinned at 0 and v at 4
    (_buffer("a", 16, 0, 3, offset=0), _buffer("v", 8, 0, 3, offset=4)), (Alias("a", "v", 2),)
)
TOKENS_PIN = Problem(  # a pinned at 16 cannot fit a capacity of 8; b needs a multiple of 3
    (_buffer("a", 8, 0, 2, offset=16), _buffer("b", 8, 0, 2, alignment=3)), memories=one_arena(8)
)
FLOAT_BOUND = Problem(  # CP-SAT proves 42 optimal but reports its bound as 41.999...
    (
        _buffer("b0", 0, 0, 1),
        _buffer("b1", 2, 0, 1, alignment=8),
        _buffer("b2", 7, 0, 1, offset=16),
        _buffer("b3", 0, 0, 1, alignment=3),
    ),
    (Alias("b0", "b1", 1), Alias("b0", "b3", 0)),
)
PAST_THE_BASE = Problem(  # the view sits past its base's end and outlives it
    (_buffer("a", 10, 0, 1), _buffer("v", 10, 1, 3), _buffer("c", 10, 1, 3)), (Alias("a", "v", 10),)
)


def _optimum(problem: Problem) -> int | None:
    """The least arena of any placement, capacity aside; None when there is none."""
    plan = brute_force(problem)
    return plan.arena if plan.status.has_plan else None


def _judged(name: str, problem: Problem) -> Plan:
    options = {"time_limit": LIMIT} if name == "cpsat" else {}
    plan = get_planner(name, **options)(problem)
    assert validate(problem, plan) == [], (name, plan)
    if plan.status.has_plan:
        assert plan.arena >= lower_bound(problem), (name, plan)
        assert problem.memories[0].capacity is None or plan.arena <= problem.memories[0].capacity
    return plan


@given(awkward_problems())
@example(RESIDUE)
@example(CONTRADICTING_PINS)
@example(TOKENS_PIN)
@example(PAST_THE_BASE)
@example(FLOAT_BOUND)
def test_statuses_agree_with_brute_force(problem: Problem) -> None:
    optimum = _optimum(problem)
    fits = optimum is not None and (
        problem.memories[0].capacity is None or optimum <= problem.memories[0].capacity
    )
    for name in PLANNERS:
        plan = _judged(name, problem)
        if plan.status == Status.INFEASIBLE:
            assert not fits, (name, optimum, plan)
        if plan.status == Status.OPTIMAL:
            assert plan.arena == optimum, (name, optimum, plan)
        if plan.status.has_plan:
            assert optimum is not None and plan.arena >= optimum, (name, optimum, plan)
    cpsat = _judged("cpsat", problem)
    assert cpsat.status == (Status.OPTIMAL if fits else Status.INFEASIBLE), (optimum, cpsat)
    assert cpsat.bound <= (optimum if fits else cpsat.bound)
    if fits and problem.memories[0].capacity is None:
        greedy, naive = _judged("greedy", problem), _judged("naive", problem)
        assert lower_bound(problem) <= cpsat.arena <= greedy.arena <= naive.arena


@given(awkward_problems(), st.data())
@example(PAST_THE_BASE, None)
def test_no_accepted_plan_beats_the_bound_or_the_optimum(
    problem: Problem, data: st.DataObject
) -> None:
    """Any placement `validate` accepts is at least `lower_bound` and the brute force."""
    classes = alias_classes(problem)
    if data is None:  # the reproducer: a 20-byte plan once passed for a 30-byte bound
        offsets = {"a": 0, "v": 10, "c": 0}
    else:
        ceiling = problem.naive_bytes + 24
        offsets = {}
        for cls in classes:
            at = data.draw(st.integers(0, ceiling)) if cls.pin is None else cls.pin
            offsets.update({name: at + delta for name, delta in cls.members})
    arena = max((offsets[b.id] + b.size for b in problem.buffers), default=0)
    plan = Plan(offsets, arena, Status.FEASIBLE, "drawn", lower_bound(problem))
    if validate(problem, plan) == []:
        optimum = _optimum(problem)
        assert optimum is not None and lower_bound(problem) <= optimum <= arena


def test_validate_reserves_the_whole_class() -> None:
    """Bytes of a class's rectangle that no member holds at that point are still taken."""
    plan = Plan({"a": 0, "v": 10, "c": 0}, 20, Status.FEASIBLE, "hand", 30)
    assert [v.kind for v in validate(PAST_THE_BASE, plan)] == ["overlap"]
    plan = Plan({"a": 0, "v": 10, "c": 20}, 30, Status.FEASIBLE, "hand", 30)
    assert validate(PAST_THE_BASE, plan) == []


def test_a_view_off_its_alignment_moves_the_class_offset() -> None:
    for name in PLANNERS:
        plan = _judged(name, RESIDUE)
        assert plan.offsets["v"] % 8 == 0 and plan.offsets["v"] == plan.offsets["a"] + 3
    assert _judged("cpsat", RESIDUE).status == Status.OPTIMAL


def test_contradicting_pins_in_one_class_are_infeasible() -> None:
    for name in PLANNERS:
        plan = _judged(name, CONTRADICTING_PINS)
        assert plan.status == Status.INFEASIBLE
        assert "pinned at 0 and 2" in str(plan.detail["reason"])


def test_tokens_honour_pins_capacity_and_alignment() -> None:
    assert _judged("tokens", TOKENS_PIN).status == Status.UNKNOWN
    uncapped = Problem(TOKENS_PIN.buffers)
    plan = _judged("tokens", uncapped)
    assert plan.offsets["a"] == 16 and plan.offsets["b"] % 3 == 0


@pytest.mark.parametrize("name", sorted(PLANNERS))
def test_coprime_alignments_find_their_residue_at_once(name: str) -> None:
    """Alignments 1009, 1013 and 1019 with deltas: the residue below their lcm (about a
    billion) comes from the Chinese remainder theorem, not from trying every value."""
    problem = Problem(
        (
            _buffer("a", 4096, 0, 3, alignment=1009),
            _buffer("v", 64, 1, 2, alignment=1013),
            _buffer("w", 64, 1, 3, alignment=1019),
            _buffer("x", 100, 1, 2),
        ),
        (Alias("a", "v", 7), Alias("a", "w", 1000)),
    )
    started = time.perf_counter()
    plan = _judged(name, problem)
    assert time.perf_counter() - started < LIMIT
    assert plan.status.has_plan
    assert plan.offsets["v"] % 1013 == 0 and plan.offsets["w"] % 1019 == 0


def test_no_residue_is_infeasible() -> None:
    """A view at delta 2 of a base, both aligned to 4: no class offset serves both."""
    problem = Problem(
        (_buffer("a", 8, 0, 2, alignment=4), _buffer("v", 4, 0, 2, alignment=4)),
        (Alias("a", "v", 2),),
    )
    for name in PLANNERS:
        assert _judged(name, problem).status == Status.INFEASIBLE
