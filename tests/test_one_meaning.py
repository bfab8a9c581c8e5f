"""One memory is the special case of several: a plain problem's plan read as residences.

- The driver gives a problem judged by its arena the planner's own packing, as before,
  and the general path (residency, then each memory packed) gives the same offsets.
- A plan that lists no residences means one residence per buffer in the first memory
  (`residences_of`, `bytes_used`), and the judge gives it the same verdict read either way.
"""

from __future__ import annotations

import dataclasses
import time

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from optplan import Buffer, Interval, Problem, drive, one_arena
from optplan.planners import get_planner
from optplan.planners.common import make_form
from optplan.problem.outcome import Residence, bytes_used, residences_of
from optplan.problem.plan import Plan, Status, traffic, validate
from optplan.strategies import problems

QUICK = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PACKERS = ("naive", "greedy", "spill")
OVERLAP = Problem((Buffer("a", 8, (Interval(0, 2),)), Buffer("b", 8, (Interval(1, 3),))))


def _as_residences(problem: Problem, plan: Plan) -> Plan:
    """The same plan with its residences listed and its traffic claimed."""
    listed = dataclasses.replace(plan, residences=residences_of(problem, plan))
    return dataclasses.replace(listed, traffic=traffic(problem, listed))


@QUICK
@given(problems(8, capacities=True), st.sampled_from(PACKERS))
def test_the_driver_packs_a_plain_problem_as_the_planner_always_has(
    problem: Problem, name: str
) -> None:
    planner = get_planner(name)
    plan = drive(problem, planner)
    before = planner.arena(make_form(problem), time.perf_counter())  # type: ignore[attr-defined]
    assert (plan.offsets, plan.arena, plan.status) == (before.offsets, before.arena, before.status)
    assert validate(problem, plan) == []
    assert plan.residences == () and plan.traffic is None


@QUICK
@given(problems(8, capacities=True), st.sampled_from(PACKERS))
def test_the_general_path_gives_a_plain_problem_the_same_offsets(
    problem: Problem, name: str
) -> None:
    planner = get_planner(name)
    arena = drive(problem, planner)
    general = planner.memories(problem, time.perf_counter())  # type: ignore[attr-defined]
    assert general.status.has_plan == arena.status.has_plan
    if arena.status.has_plan:
        assert (general.offsets, general.arena) == (arena.offsets, arena.arena)
        assert validate(problem, general) == []
        assert general.residences == residences_of(problem, arena)


@QUICK
@given(problems(8, capacities=True), st.data())
@example(OVERLAP, None)
def test_the_judge_reads_offsets_as_residences_in_the_first_memory(
    problem: Problem, data: st.DataObject | None
) -> None:
    plan = get_planner("greedy")(problem)
    if not plan.status.has_plan:
        return
    if data is not None and problem.buffers:
        moved = data.draw(st.sampled_from([b.id for b in problem.buffers]))
        offset = data.draw(st.integers(0, plan.arena + 8))
        offsets = {**plan.offsets, moved: offset}
        top = max(o + problem.buffer(b).size for b, o in offsets.items())
        plan = dataclasses.replace(plan, offsets=offsets, arena=top)
    elif problem is OVERLAP:
        plan = dataclasses.replace(plan, offsets={"a": 0, "b": 4}, arena=12)
    listed = _as_residences(problem, plan)
    assert bool(validate(problem, plan)) == bool(validate(problem, listed))
    assert len(listed.residences) == len(problem.buffers)
    assert bytes_used(problem, plan) == {"main": plan.arena}
    assert bytes_used(problem, listed) == bytes_used(problem, plan)


def test_a_plan_of_offsets_is_one_residence_per_buffer() -> None:
    plan = Plan({"a": 0, "b": 8}, 16, Status.FEASIBLE, "given", 16)
    assert residences_of(OVERLAP, plan) == (
        Residence("a", "main", 0, (Interval(0, 2),)),
        Residence("b", "main", 8, (Interval(1, 3),)),
    )
    assert validate(OVERLAP, plan) == [] == validate(OVERLAP, _as_residences(OVERLAP, plan))
    bounded = dataclasses.replace(OVERLAP, memories=one_arena(15))
    assert [v.kind for v in validate(bounded, plan)] == ["capacity"]
    assert validate(bounded, _as_residences(bounded, plan))
