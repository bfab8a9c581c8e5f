"""The problem strategies are valid by construction: every drawn problem has a plan.

The witness is `roomy_offsets` (pinned classes at their pins, the rest stacked above),
judged by the independent validator; a capacity is either roomy (the witness fits) or
below the live-bytes lower bound (nothing fits).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from optplan.analysis.types import infer_types
from optplan.frontends.script import parse, print_program
from optplan.problem import Alias, Buffer, Interval, Problem, lower_bound
from optplan.problem.plan import Plan, Status, validate
from optplan.strategies import awkward_problems, fuzz_problems, problems, roomy_offsets
from optplan.strategies.problems import first_offset
from optplan.strategies.relax import RelaxCase, relax_cases


@given(awkward_problems())
def test_awkward_problems_have_a_plan_or_a_capacity_below_the_bound(problem: Problem) -> None:
    offsets, arena = roomy_offsets(problem)
    plan = Plan(offsets, arena, Status.FEASIBLE, "witness", lower_bound(problem))
    if problem.memories[0].capacity is None or problem.memories[0].capacity >= arena:
        assert validate(problem, plan) == []
    else:
        assert problem.memories[0].capacity < lower_bound(problem) or lower_bound(problem) == 0
        unbounded = Problem(problem.buffers, problem.aliases)
        assert validate(unbounded, plan) == []


@settings(max_examples=30)
@given(fuzz_problems())
def test_fuzz_problems_are_valid(problem: Problem) -> None:
    offsets, arena = roomy_offsets(problem)
    assert (
        validate(
            Problem(problem.buffers, problem.aliases),
            Plan(offsets, arena, Status.FEASIBLE, "witness", 0),
        )
        == []
    )


@given(problems(branches=False, aliases=False, pins=False, alignments=False))
def test_options_off_draw_plain_problems(problem: Problem) -> None:
    assert not problem.aliases and problem.memories[0].capacity is None
    assert all(len(b.live) == 1 and b.alignment == 1 and b.offset is None for b in problem.buffers)


def test_residue_class_is_placed_where_both_alignments_hold() -> None:
    # A view of a 1-aligned base at delta 1 with alignment 4: the base goes to 3 mod 4.
    live = (Interval(0, 2),)
    problem = Problem((Buffer("a", 8, live), Buffer("v", 4, live, 4)), (Alias("a", "v", 1),))
    offsets, arena = roomy_offsets(problem)
    assert offsets == {"a": 3, "v": 4} and arena == 11
    assert validate(problem, Plan(offsets, arena, Status.FEASIBLE, "witness", 0)) == []


@given(
    st.lists(st.tuples(st.sampled_from((1, 2, 3, 4, 8, 12)), st.integers(0, 3)), max_size=4),
    st.integers(0, 40),
    st.integers(0, 30),
)
def test_first_offset_is_the_lowest(drawn: list[tuple[int, int]], root: int, at_least: int) -> None:
    # Deltas that some root (`root`) satisfies, so the members are compatible.
    members = [(a, (-root) % a + k * a) for a, k in drawn]
    offset = first_offset(at_least, members)
    fits = [x for x in range(at_least, at_least + 100) if all((x + d) % a == 0 for a, d in members)]
    assert offset == fits[0]


@settings(max_examples=30)
@given(relax_cases())
def test_relax_cases_are_well_typed_and_print_back(case: RelaxCase) -> None:
    typed = infer_types(case.program)
    assert parse(print_program(case.program)) == case.program
    names = {p.var.name for p in typed.main.params}
    assert set(case.weights) <= names and 1 <= case.bindings
