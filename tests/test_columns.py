"""Buffers held as columns give the same problem, plans, verdicts and CSV as `Buffer`
objects: the columnar greedy against the rectangle greedy, the bucket loop against
`greedy.place`, the column validator against the reference checks."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from optplan.planners.common import make_form, rectangles, split, split_columns
from optplan.planners.greedy import best_offsets
from optplan.planners.greedy import kernel as greedy_kernel
from optplan.planners.greedy.columns import plan_columns
from optplan.problem import (
    Buffer,
    Interval,
    Problem,
    columns_of,
    lower_bound,
    read_csv,
    write_csv,
)
from optplan.problem import plan as plan_module
from optplan.problem.columns import BufferColumns
from optplan.problem.plan import Plan, Status, validate
from optplan.strategies import problems

needs_numba = pytest.mark.skipif(not greedy_kernel.COMPILED, reason="numba is not installed")
plain = problems(max_buffers=12, max_size=40, aliases=False, max_intervals=1, branches=False)


def as_columns(problem: Problem) -> Problem:
    columns = columns_of(problem)
    assert columns is not None
    return Problem(columns, memories=problem.memories)


def short_lived(count: int, seed: int) -> Problem:
    """About ten live at once, lifetimes short next to the run (the bucket loop's case)."""
    rng = random.Random(seed)
    buffers = []
    for index in range(count):
        start = index // 3 + rng.randrange(0, 5)
        buffers.append(
            Buffer(
                f"b{index}", rng.randrange(0, 300), (Interval(start, start + rng.randrange(1, 40)),)
            )
        )
    return Problem(tuple(buffers))


@given(plain)
def test_the_form_of_columns_is_the_form_of_buffers(problem: Problem) -> None:
    """The planners' form (rectangles, parts, live bytes, pin fault) is built straight
    from the columns, with no `Buffer` object made (at 1,000,000 buffers making them
    took 13 of make_form's 20 s), and equals the form of the same buffers as objects."""
    columnar = as_columns(problem)
    made, expected = make_form(columnar), make_form(problem)
    assert made.rects == expected.rects and made.parts == expected.parts
    assert (made.live_bytes, made.fault) == (expected.live_bytes, expected.fault)
    assert isinstance(columnar.buffers, BufferColumns) and columnar.buffers._built is None


@given(plain)
def test_columns_are_the_same_buffers(problem: Problem) -> None:
    columnar = as_columns(problem)
    assert isinstance(columnar.buffers, BufferColumns)
    assert columnar == problem and hash(columnar) == hash(problem)
    assert list(columnar.buffers) == list(problem.buffers)
    assert columnar.buffers[-1] == problem.buffers[-1]
    assert lower_bound(columnar) == lower_bound(problem)
    assert columnar.naive_bytes == problem.naive_bytes
    for buffer in problem.buffers:
        assert columnar.buffer(buffer.id) == buffer


@given(plain)
def test_csv_of_columns_is_the_csv_of_buffers(problem: Problem) -> None:
    offsets = {b.id: 3 * i for i, b in enumerate(problem.buffers[::2])}
    columnar = as_columns(problem)
    assert write_csv(columnar) == write_csv(problem)
    assert write_csv(columnar, offsets) == write_csv(problem, offsets)


def test_a_csv_is_read_as_columns_and_round_trips() -> None:
    text = "id,lower,upper,size,alignment\na,0,3,4,2\nb,1,4,8,1\n"
    problem = read_csv("p.csv", text=text)
    assert isinstance(problem.buffers, BufferColumns)
    assert write_csv(problem) == text
    assert problem.buffer("b") == Buffer("b", 8, (Interval(1, 4),))


@needs_numba
@given(plain)
def test_columnar_greedy_places_as_the_rectangle_greedy(problem: Problem) -> None:
    plan = plan_columns(problem, ("size", "start", "area"), ("first", "best"), "greedy", 0.0)
    if any(b.offset is not None for b in problem.buffers):
        assert plan is None
        return
    assert plan is not None
    rects = rectangles(problem)
    offsets, detail = best_offsets(make_form(problem), ("size", "start", "area"), ("first", "best"))
    if plan.status.has_plan:
        assert plan.offsets == {r.root: o for r, o in zip(rects, offsets)}
        assert plan.detail["order"] == detail["order"]
        assert validate(problem, plan) == []


@needs_numba
@pytest.mark.parametrize("seed", range(3))
def test_columnar_greedy_splits_as_common_split(seed: int) -> None:
    problem = short_lived(300, seed)
    columns = columns_of(problem)
    assert columns is not None
    expected = [[r.index for r in part] for part in split(rectangles(problem))]
    assert [part.tolist() for part in split_columns(columns)] == expected


@needs_numba
@pytest.mark.parametrize("seed", range(3))
def test_bucket_loop_places_as_the_tree_loop(seed: int) -> None:
    rects = rectangles(short_lived(600, seed))
    tree = greedy_kernel.Compiled.build(rects, kernel="tree")
    buckets = greedy_kernel.Compiled.build(rects, kernel="buckets")
    assert tree is not None and buckets is not None and buckets.buckets
    for order in ("size", "start", "lifetime"):
        sequence = tree.sequence(order)
        for fit in ("first", "best"):
            assert buckets.whole(sequence, fit).tolist() == tree.whole(sequence, fit).tolist()


@st.composite
def plans(draw: st.DrawFn) -> tuple[Problem, Plan]:
    """A problem and offsets that are often valid (roomy) and often not (nudged)."""
    problem = draw(plain)
    offsets, arena = {}, 0
    for buffer in problem.buffers:
        offset = buffer.offset if buffer.offset is not None else arena
        offsets[buffer.id] = offset
        arena = max(arena, offset + buffer.size)
    for buffer in problem.buffers:
        nudge = draw(st.sampled_from((0, 0, 0, -1, 1, -offsets[buffer.id])))
        offsets[buffer.id] += nudge
    if offsets and draw(st.booleans()):
        del offsets[draw(st.sampled_from(sorted(offsets)))]
    arena += draw(st.sampled_from((0, 0, -1, 1)))
    return problem, Plan(offsets, arena, Status.FEASIBLE, "drawn", 0)


@given(plans())
@example(
    (
        Problem((Buffer("a", 4, (Interval(0, 2),)), Buffer("b", 4, (Interval(1, 3),)))),
        Plan({"a": 0, "b": 2}, 6, Status.FEASIBLE, "drawn", 0),
    )
)
def test_the_column_validator_agrees_with_the_reference(drawn: tuple[Problem, Plan]) -> None:
    problem, plan = drawn
    reference = validate(problem, plan)  # below COLUMNS_FROM: the reference checks
    for held in (problem, as_columns(problem)):
        assert plan_module._valid_as_columns(held, plan) == (reference == [])


def test_the_column_validator_sweeps_ends_before_starts() -> None:
    start, stop = np.array([0, 2, 2]), np.array([2, 4, 3])
    low, high = np.array([0, 0, 4]), np.array([8, 4, 8])
    assert plan_module._disjoint_while_live(start, stop, low, high)
    assert not plan_module._disjoint_while_live(start, stop, low, high + np.array([0, 1, 0]))


def test_greedy_past_its_deadline_makes_one_run_a_part() -> None:
    rects = rectangles(short_lived(200, 1))
    offsets, detail = best_offsets(make_form(short_lived(200, 1)), deadline=0.0)
    arenas = detail["arenas"]
    assert isinstance(arenas, dict) and list(arenas) == ["naive", "size/first"]
    plan = Plan(
        {r.root: o for r, o in zip(rects, offsets)},
        max(o + r.size for r, o in zip(rects, offsets)),
        Status.FEASIBLE,
        "greedy",
        0,
    )
    assert validate(short_lived(200, 1), plan) == []
