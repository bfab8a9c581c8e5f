"""The validator catches each kind of fault, and only real faults."""

from __future__ import annotations

from optplan.problem import Alias, Buffer, Interval, Problem, one_arena
from optplan.problem.plan import Plan, Status, validate


def _plan(offsets: dict[str, int], arena: int) -> Plan:
    return Plan(offsets, arena, Status.FEASIBLE, "hand", 0)


PROBLEM = Problem(
    (
        Buffer("a", 8, (Interval(0, 2),), alignment=4),
        Buffer("b", 8, (Interval(1, 3),)),
        Buffer("c", 8, (Interval(2, 4),)),
        Buffer("p", 4, (Interval(0, 4),), offset=16),
    )
)


def _kinds(offsets: dict[str, int], arena: int = 20) -> list[str]:
    return [v.kind for v in validate(PROBLEM, _plan(offsets, arena))]


def test_valid_plan_has_no_violation() -> None:
    # a and c touch at point 2 only through half-open ends: they may share bytes.
    assert _kinds({"a": 0, "b": 8, "c": 0, "p": 16}) == []


def test_each_fault_is_named() -> None:
    assert _kinds({"a": 0, "b": 8, "p": 16}) == ["missing"]
    assert _kinds({"a": 2, "b": 8, "c": 0, "p": 16}) == ["alignment", "overlap"]
    assert _kinds({"a": 0, "b": 8, "c": 0, "p": 12}) == ["pinned", "overlap"]
    assert _kinds({"a": 0, "b": 8, "c": 0, "p": 16}, arena=19) == ["arena"]
    assert _kinds({"a": 0, "b": 4, "c": 20, "p": 16}, arena=28) == ["overlap"]
    assert _kinds({"a": -4, "b": 8, "c": 0, "p": 16}) == ["negative"]


def test_overlap_names_both_buffers_and_the_bytes() -> None:
    (fault,) = validate(PROBLEM, _plan({"a": 0, "b": 4, "c": 20, "p": 16}, 28))
    assert fault.buffers == ("a", "b")
    assert "[4, 8)" in fault.message


def test_aliases_may_share_bytes_but_must_keep_their_delta() -> None:
    problem = Problem(
        (Buffer("x", 8, (Interval(0, 3),)), Buffer("v", 4, (Interval(1, 4),))),
        (Alias("x", "v", 4),),
    )
    assert validate(problem, _plan({"x": 0, "v": 4}, 8)) == []
    assert [v.kind for v in validate(problem, _plan({"x": 0, "v": 0}, 8))] == ["alias"]


def test_multi_interval_buffers_only_conflict_where_live() -> None:
    problem = Problem(
        (
            Buffer("then", 8, (Interval(0, 2), Interval(5, 6))),
            Buffer("else", 8, (Interval(2, 5),)),
        )
    )
    assert validate(problem, _plan({"then": 0, "else": 0}, 8)) == []


def test_plan_without_solution_is_not_judged() -> None:
    plan = Plan({}, 0, Status.INFEASIBLE, "hand", 0)
    assert validate(PROBLEM, plan) == []


def test_capacity_is_enforced() -> None:
    problem = Problem(PROBLEM.buffers, memories=one_arena(16))
    faults = validate(problem, _plan({"a": 0, "b": 8, "c": 0, "p": 16}, 20))
    assert "capacity" in [v.kind for v in faults]
