"""The planners' one input form (`common.make_form`), checked against the problem it
comes from by brute force: the alignment facts, the parts, the live bytes, the naive
arena; and the search fed straight from the form's parts."""

from __future__ import annotations

import itertools

from hypothesis import example, given

from optplan.planners import get_planner
from optplan.planners.common import make_form
from optplan.planners.search import ask, prepare
from optplan.problem import Alias, Buffer, Interval, Problem, lower_bound
from optplan.problem.plan import Plan, Status, validate
from optplan.strategies import awkward_problems, problems

# A view 4 bytes into its base at alignment 8: the class must sit at 4 mod 8.
OFF_RESIDUE = Problem(
    (Buffer("base", 16, (Interval(0, 2),)), Buffer("view", 8, (Interval(1, 3),), 8)),
    (Alias("base", "view", 4),),
)


@given(awkward_problems())
@example(OFF_RESIDUE)
def test_offsets_the_form_allows_are_exactly_the_aligned_ones(problem: Problem) -> None:
    """A class offset is allowed (`residue + modulus * k`) exactly when it puts every
    member on a multiple of its own alignment; no offset at all when residue is None."""
    for rect in make_form(problem).rects:
        window = range(2 * rect.modulus + 1)
        aligned = [
            at
            for at in window
            if all(
                (at + delta) % problem.buffer(name).alignment == 0 for name, delta in rect.members
            )
        ]
        assert [at for at in window if rect.allowed(at)] == aligned
        if rect.residue is not None:
            assert rect.lift(0) == aligned[0]


@given(awkward_problems())
def test_parts_split_the_sized_rectangles_where_nothing_is_live_across(problem: Problem) -> None:
    form = make_form(problem)
    assert [r.index for r in form.rects] == list(range(len(form.rects)))
    in_parts = sorted(r.index for part in form.parts for r in part)
    assert in_parts == [r.index for r in form.rects if r.size > 0]
    for a, b in itertools.combinations(form.parts, 2):
        assert not any(x.overlaps_in_time(y) for x in a for y in b)
    for part in form.parts:
        assert [r.index for r in part] == sorted(r.index for r in part)


@given(awkward_problems())
@example(OFF_RESIDUE)  # naive_bytes once stacked it at 0, where no member is aligned
def test_live_bytes_and_naive_arena(problem: Problem) -> None:
    """The form's live bytes are the lower bound; with nothing pinned and every class
    placeable, the naive planner's arena is `naive_bytes`, residues included."""
    form = make_form(problem)
    assert form.live_bytes == lower_bound(problem)
    if form.fault is None and all(r.pin is None for r in form.rects):
        uncapped = Problem(problem.buffers, problem.aliases)
        plan = get_planner("naive")(uncapped)
        assert validate(uncapped, plan) == []
        assert plan.arena == problem.naive_bytes


@given(problems(max_buffers=6, pins=False, max_size=8))
def test_the_search_takes_the_forms_parts(problem: Problem) -> None:
    """At the greedy arena something always fits; the search's placement, one offset per
    rectangle, is valid once expanded to the members."""
    greedy = get_planner("greedy")(problem)
    form = make_form(problem)
    answer = ask(prepare(form.rects, form.parts), greedy.arena, time_limit=10)
    assert answer.placement is not None and answer.offsets is not None
    assert len(answer.placement) == len(form.rects)
    judged = Plan(answer.offsets, greedy.arena, Status.FEASIBLE, "search", form.live_bytes)
    assert validate(problem, judged) == []


@given(awkward_problems())
def test_a_form_shared_by_every_planner_plans_as_each_planner_alone(problem: Problem) -> None:
    """`compare` builds the form once and hands it to every planner: each gives the plan
    it gives when it builds the form itself."""
    form = make_form(problem)
    for name in ("naive", "tokens", "greedy", "cpsat"):
        planner = get_planner(name, time_limit=10.0) if name == "cpsat" else get_planner(name)
        shared, alone = planner.plan(form), planner(problem)
        assert (shared.status, shared.arena, shared.offsets) == (
            alone.status,
            alone.arena,
            alone.offsets,
        )
        assert validate(problem, shared) == []
