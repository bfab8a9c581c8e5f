"""Several memories: the problem, the judge, and every planner judged by it and by a
brute force (`optplan.fuzz.tiers_brute`) on random tiny problems."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings

from optplan import Buffer, Interval, Memory, Problem, get_planner, one_arena, validate
from optplan.fuzz.tiers_brute import BRUTE_PLANS, least_traffic, plans_to_weigh
from optplan.planners import PLANNERS
from optplan.problem.plan import Copy, Plan, Residence, Status, traffic
from optplan.strategies.memories import memory_problems

I = Interval
FAST, SLOW = Memory("fast", 16), Memory("slow", cost=10)
# x is written at 0, read at 1 and twice at 5; y lives [2, 4) while x waits.
SPILL = Problem(
    (Buffer("x", 8, (I(0, 6),), reads=(1, 5, 5)), Buffer("y", 16, (I(2, 4),))),
    memories=(FAST, SLOW),
)


def spilled_plan(**changes: object) -> Plan:
    """x written in fast, spilled at 1, prefetched at 5; y in fast: traffic 240, the
    least (x read from slow at 5 costs 296, everything in slow 352)."""
    plan = Plan(
        {"x": 0, "y": 0},
        16,
        Status.FEASIBLE,
        "hand",
        24,
        residences=(
            Residence("x", "fast", 0, (I(0, 2), I(5, 6))),
            Residence("x", "slow", 0, (I(1, 6),)),
            Residence("y", "fast", 0, (I(2, 4),)),
        ),
        copies=(Copy("x", 1, "fast", "slow"), Copy("x", 5, "slow", "fast")),
        traffic=8 + 8 + 2 * 8 + 2 * 8 * 11 + 16 + 16,
    )
    return dataclasses.replace(plan, **changes)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------- the problem


def test_a_capacity_is_a_memorys() -> None:
    buffers = (Buffer("a", 4, (I(0, 2),)),)
    bounded = Problem(buffers, memories=one_arena(12))
    assert bounded.memories == (Memory("main", 12),)
    assert dataclasses.replace(bounded, memories=one_arena(None)) == Problem(buffers)
    assert Problem(buffers).objective == "arena" and SPILL.objective == "traffic"
    with pytest.raises(TypeError):
        Problem(buffers, (), 12)  # type: ignore[misc]
    with pytest.raises(ValueError, match="negative capacity"):
        Problem(buffers, memories=one_arena(-1))


@pytest.mark.parametrize(
    ("buffer", "memories", "message"),
    [
        (Buffer("a", 4, (I(0, 2),), memories=("tcm",)), (FAST, SLOW), "unknown memory 'tcm'"),
        (Buffer("a", 4, (I(0, 2),), reads=(2,)), (FAST, SLOW), "read at point 2, outside"),
        (Buffer("a", 4, (I(0, 2),)), (FAST, FAST), "appears twice"),
        (Buffer("a", 4, (I(0, 2),)), (Memory("f", -1),), "negative capacity"),
        (Buffer("a", 4, (I(0, 2),)), (), "at least one memory"),
    ],
)
def test_malformed_problems_are_refused(
    buffer: Buffer, memories: tuple[Memory, ...], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        Problem((buffer,), memories=memories)


# ---------------------------------------------------------------------------- the judge


def test_a_spill_and_a_prefetch_are_valid() -> None:
    assert validate(SPILL, spilled_plan()) == []
    assert traffic(SPILL, spilled_plan()) == spilled_plan().traffic


@pytest.mark.parametrize(
    ("changes", "kind", "words"),
    [
        (
            {"copies": (Copy("x", 1, "fast", "slow"),)},
            "copy",
            "enters memory 'fast' at point 5 with 0",
        ),
        (
            {"copies": (*spilled_plan().copies, Copy("y", 3, "fast", "slow"))},
            "copy",
            "does not enter",
        ),
        ({"traffic": 1}, "traffic", "claims traffic 1"),
        ({"traffic": None}, "traffic", "claims no traffic"),
        ({"offsets": {"x": 4, "y": 0}}, "offset", "plan's offsets say 4"),
        (
            {
                "residences": (
                    Residence("x", "slow", 0, (I(0, 6),)),
                    Residence("y", "fast", 0, (I(2, 4),)),
                    Residence("x", "fast", 0, (I(0, 1),)),
                )
            },
            "written",
            "2 memories (fast, slow) at its first point",
        ),
        (
            {
                "residences": (
                    Residence("x", "fast", 16, (I(0, 2), I(5, 6))),
                    *spilled_plan().residences[1:],
                ),
                "offsets": {"x": 16, "y": 0},
            },
            "capacity",
            "memory 'fast': its buffers reach byte 24, past its capacity of 16 bytes",
        ),
        (
            {
                "residences": (
                    Residence("x", "fast", 0, (I(0, 3), I(5, 6))),
                    *spilled_plan().residences[1:],
                )
            },
            "overlap",
            "memory 'fast': buffers 'x' and 'y' are live at the same time",
        ),
        ({"residences": spilled_plan().residences[1:]}, "residence", "in no memory at point 0"),
    ],
)
def test_the_judge_names_each_fault(changes: dict[str, object], kind: str, words: str) -> None:
    faults = validate(SPILL, spilled_plan(**changes))
    assert any(f.kind == kind and words in f.message for f in faults), faults


def test_a_plan_of_one_arena_is_judged_as_before() -> None:
    problem = Problem((Buffer("a", 4, (I(0, 2),)), Buffer("b", 4, (I(1, 3),))))
    plan = Plan({"a": 0, "b": 4}, 8, Status.OPTIMAL, "hand", 8)
    assert validate(problem, plan) == [] and plan.traffic is None
    assert traffic(problem, plan) == 4 * 2 + 4 * 2


# ---------------------------------------------------------------------------- planners


def test_cpsat_spills_and_prefetches() -> None:
    plan = get_planner("cpsat", time_limit=10)(SPILL)
    assert validate(SPILL, plan) == []
    assert plan.status == Status.OPTIMAL and plan.traffic == spilled_plan().traffic
    # A spill after x's first read and a prefetch after y is gone (at 4 or 5: one cost).
    assert sorted((c.source, c.target) for c in plan.copies) == [("fast", "slow"), ("slow", "fast")]


def test_a_capacity_no_plan_meets_is_infeasible_naming_the_point() -> None:
    fast_only = Problem(
        (
            Buffer("a", 8, (I(0, 3),), memories=("fast",)),
            Buffer("b", 12, (I(2, 4),), memories=("fast",)),
        ),
        memories=(FAST, SLOW),
    )
    for name in PLANNERS:
        plan = get_planner(name)(fast_only)
        assert plan.status == Status.INFEASIBLE
        assert plan.detail["reason"] == (
            "at point 2, 20 bytes of tensors are live that only fast may hold (16 bytes): b, a"
        )


@pytest.mark.parametrize("name", sorted(PLANNERS))
def test_one_memory_named_is_the_plain_problem(name: str) -> None:
    buffers = (
        Buffer("a", 8, (I(0, 3),), alignment=4),
        Buffer("b", 6, (I(1, 4),)),
        Buffer("c", 8, (I(3, 5),)),
    )
    plain = get_planner(name)(Problem(buffers))
    named = get_planner(name)(Problem(buffers, memories=(Memory("main", None, 1, 5),)))
    assert (plain.offsets, plain.arena, named.traffic) == (named.offsets, named.arena, None)


def test_spill_is_greedy_on_one_arena() -> None:
    buffers = (Buffer("a", 8, (I(0, 3),)), Buffer("b", 6, (I(1, 4),)), Buffer("c", 8, (I(3, 5),)))
    spill, greedy = get_planner("spill")(Problem(buffers)), get_planner("greedy")(Problem(buffers))
    assert (spill.offsets, spill.arena, spill.status) == (
        greedy.offsets,
        greedy.arena,
        greedy.status,
    )


@settings(max_examples=120)
@given(memory_problems())
def test_every_planner_is_valid_and_never_beats_the_brute_force(problem: Problem) -> None:
    least = least_traffic(problem) if plans_to_weigh(problem) <= BRUTE_PLANS else "skip"
    for name in sorted(PLANNERS):
        planner = get_planner(name, time_limit=10) if name == "cpsat" else get_planner(name)
        plan = planner(problem)
        assert validate(problem, plan) == [], (name, plan)
        if least == "skip":
            continue
        if least is None:
            assert not plan.status.has_plan, (name, plan)
            continue
        assert plan.traffic_bound <= least, (name, plan.traffic_bound, least)
        if plan.status == Status.INFEASIBLE:
            pytest.fail(f"{name} claims no plan, but one costs {least}")
        if plan.status.has_plan:
            assert plan.traffic is not None and plan.traffic >= least, (name, plan.traffic, least)
        if plan.status == Status.OPTIMAL:
            assert plan.traffic == least, (name, plan.traffic, least)
        if name == "cpsat":
            assert plan.status == Status.OPTIMAL, plan


@settings(max_examples=40)
@given(memory_problems(max_buffers=4, max_points=4, bounded_last=True))
def test_cpsat_is_never_worse_than_a_heuristic(problem: Problem) -> None:
    plans = {name: get_planner(name)(problem) for name in ("naive", "greedy", "spill")}
    exact = get_planner("cpsat", time_limit=10)(problem)
    assert validate(problem, exact) == []
    for name, plan in plans.items():
        if plan.status.has_plan:
            assert exact.status.has_plan and exact.traffic is not None and plan.traffic is not None
            assert exact.traffic <= plan.traffic, (name, plan.traffic, exact.traffic)


def test_place_gives_each_buffer_one_memory_and_offset() -> None:
    from optplan.planners.placement import place

    placed = place(SPILL)
    assert placed is not None and set(placed) == {"x", "y"}
    # Without copies one of x and y stays in slow: 352 either way, above the spill's 240.
    assert {placed["x"][0], placed["y"][0]} == {"fast", "slow"}
    static = get_planner("cpsat", copies=False)(SPILL)
    assert static.copies == () and static.traffic == 352 and static.status == Status.OPTIMAL


def test_one_arena_too_small_names_the_point_too() -> None:
    buffers = (Buffer("a", 8, (I(0, 3),)), Buffer("b", 12, (I(2, 4),)))
    plan = get_planner("cpsat")(Problem(buffers, memories=one_arena(16)))
    assert plan.status == Status.INFEASIBLE
    assert (
        plan.detail["reason"]
        == "at point 2, 20 bytes of tensors are live, more than the capacity 16: b, a"
    )
