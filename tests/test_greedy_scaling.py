"""The compiled greedy loop places every rectangle exactly where the plain-Python one does.

`greedy.runs.place` is the reference: for every order and fit, `greedy_kernel.Compiled` must
give the same sequence and the same offsets, on small drawn problems (pins, alignments,
classes live over two intervals) and on a dense one where a hundred rectangles are live at
once and lifetimes span many buckets.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given

from optplan.planners import get_planner
from optplan.planners.common import Rect, make_form, rectangles, split
from optplan.planners.greedy import FITS, ORDERS, best_offsets
from optplan.planners.greedy import kernel as greedy_kernel
from optplan.planners.greedy import planner as greedy
from optplan.planners.greedy import runs as greedy_runs
from optplan.planners.greedy.runs import Interpreted, _Grid, place
from optplan.problem import Buffer, Interval, Problem
from optplan.problem.plan import validate
from optplan.strategies import problems

pytestmark = pytest.mark.skipif(not greedy_kernel.COMPILED, reason="numba is not installed")


def assert_same_placements(rects: list[Rect]) -> None:
    for part in split(rects):
        compiled = greedy_kernel.Compiled.build(part)
        assert compiled is not None
        interpreted = Interpreted.build(part)
        grid = _Grid.build(part)
        for order in ORDERS:
            sequence = interpreted.sequence(order)
            fast_sequence = compiled.sequence(order)
            assert isinstance(fast_sequence, bytes)
            assert list(sequence) == np.frombuffer(fast_sequence, np.int64).tolist(), order
            for fit in FITS:
                expected = place(part, sequence, fit, grid)
                assert compiled.whole(fast_sequence, fit).tolist() == expected, (order, fit)
                assert compiled.top(expected) == interpreted.top(expected)


def dense(count: int, seed: int) -> Problem:
    """MiniMalloc-like: many overlapping buffers of mixed lengths (some very long)."""
    rng = random.Random(seed)
    buffers = []
    for index in range(count):
        start = rng.randrange(0, count // 2)
        length = rng.choice((1, 2, 3, 5, 8, 40, count // 3))
        size = rng.randrange(1, 64) * rng.choice((1, 16, 256))
        alignment = rng.choice((1, 1, 2, 8))
        buffers.append(Buffer(f"b{index}", size, (Interval(start, start + length),), alignment))
    return Problem(tuple(buffers))


@given(problems(max_buffers=12, max_size=40))
def test_compiled_matches_python_on_drawn_problems(problem: Problem) -> None:
    assert_same_placements(rectangles(problem))


@pytest.mark.parametrize("seed", range(3))
def test_compiled_matches_python_on_dense_problems(seed: int) -> None:
    assert_same_placements(rectangles(dense(600, seed)))


def test_best_offsets_are_the_same_without_numba(monkeypatch: pytest.MonkeyPatch) -> None:
    form = make_form(dense(400, 7))
    monkeypatch.setattr(greedy, "COMPILED_FROM", 1)  # compiled even for 400 buffers
    compiled = best_offsets(form)
    monkeypatch.setattr(greedy_kernel, "COMPILED", False)
    assert best_offsets(form) == compiled


@pytest.mark.parametrize("bits", [62, 64])
def test_numbers_beyond_int64_use_the_python_loop(bits: int) -> None:
    huge = Problem(
        (
            Buffer("a", 1 << bits, (Interval(0, 2),)),
            Buffer("b", 1 << bits, (Interval(1, 3),)),
        )
    )
    assert greedy_kernel.Compiled.build(rectangles(huge)) is None
    plan = get_planner("greedy")(huge)
    assert validate(huge, plan) == []
    assert plan.arena == 2 << bits


def test_large_parts_make_only_the_large_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    form = make_form(dense(300, 3))
    monkeypatch.setattr(greedy_runs, "LARGE_PART", 10)
    _, detail = best_offsets(form)
    arenas = detail["arenas"]
    assert isinstance(arenas, dict)
    assert set(arenas) <= {"naive"} | {f"{o}/{f}" for o, f in greedy_runs.LARGE_RUNS}
    monkeypatch.setattr(greedy_runs, "HUGE_PART", 10)
    _, detail = best_offsets(form)
    assert set(detail["arenas"]) <= {"naive", "size/first"}  # type: ignore[arg-type]
    assert greedy_runs._runs(300, 0.0, ("start",), ("best",)) == [("start", "best")]


def test_crowded_parts_make_fewer_runs() -> None:
    # The listed intervals a run reads cut the runs as the rectangles do.
    every = [(order, fit) for order in ORDERS for fit in FITS]
    assert greedy_runs._runs(1000, 100.0, ORDERS, FITS) == every
    reads = greedy_runs.LARGE_READS / 1000 + 1
    assert greedy_runs._runs(1000, reads, ORDERS, FITS) == list(greedy_runs.LARGE_RUNS)
    reads = greedy_runs.HUGE_READS / 1000 + 1
    assert greedy_runs._runs(1000, reads, ORDERS, FITS) == list(greedy_runs.LARGE_RUNS[:1])


def recomputed(count: int, seed: int) -> Problem:
    """Shaped like a schedule with recomputation: lifetimes of 1-3 steps, and every
    twentieth across an eighth to a quarter of the run."""
    rng = random.Random(seed)
    buffers = []
    for index in range(count):
        start = rng.randrange(count)
        length = rng.randrange(count // 8, count // 4) if index % 20 == 0 else rng.randrange(1, 4)
        buffers.append(
            Buffer(f"b{index}", rng.randrange(1, 100), (Interval(start, start + length),))
        )
    return Problem(tuple(buffers))


def test_lifetimes_across_many_buckets_take_the_tree() -> None:
    # A query here reads about 400 listed intervals, few enough for buckets, but merges
    # them from about 200 buckets: all of greedy's runs took 1.4 s with buckets and
    # 0.14 s with the tree. Short lifetimes alone (the generated CSVs) still take buckets.
    (part,) = split(rectangles(recomputed(3000, 1)))
    compiled = greedy_kernel.Compiled.build(part)
    assert compiled is not None and not compiled.buckets
    short = [
        rect for rect in rectangles(dense(600, 0)) if rect.live[0].end - rect.live[0].start < 10
    ]
    compiled = greedy_kernel.Compiled.build(short)
    assert compiled is not None and compiled.buckets
