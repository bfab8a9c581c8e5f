"""The skyline search against an exhaustive search on tiny problems, and on hand-built ones.

The brute force here shares nothing with the search: it tries every aligned offset of
every alias class (one rectangle each, as the design packs them) in turn.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from optplan.planners.common import make_form
from optplan.planners.cpsat import SEARCH_MAX_PART
from optplan.planners.search import (
    SearchStatus,
    ask,
    driver,
    granularity,
    lowest,
    minimise,
    parts,
    prepare,
    search,
)
from optplan.planners.search import order as order_search
from optplan.problem import (
    Alias,
    Buffer,
    Interval,
    Problem,
    alias_classes,
    lower_bound,
    read_csv,
)
from optplan.problem.plan import Plan, Status, validate
from optplan.strategies import problems


def brute_force_fits(problem: Problem, capacity: int) -> bool:
    """Whether some aligned offsets of the alias classes fit in `capacity` bytes."""
    classes = [cls for cls in alias_classes(problem) if cls.size > 0]
    classes.sort(key=lambda cls: -cls.size)
    placed: list[tuple[int, int, tuple[Interval, ...]]] = []

    def clashes(low: int, high: int, live: tuple[Interval, ...]) -> bool:
        return any(
            low < other_high
            and other_low < high
            and any(a.overlaps(b) for a in live for b in other)
            for other_low, other_high, other in placed
        )

    def place(k: int) -> bool:
        if k == len(classes):
            return True
        cls = classes[k]
        for offset in range(0, capacity - cls.size + 1, cls.modulus):
            if not clashes(offset, offset + cls.size, cls.live):
                placed.append((offset, offset + cls.size, cls.live))
                if place(k + 1):
                    return True
                placed.pop()
        return False

    return place(0)


def brute_force_peak(problem: Problem) -> int:
    peak = lower_bound(problem)
    while not brute_force_fits(problem, peak):
        peak += 1
    return peak


def assert_valid(problem: Problem, offsets: dict[str, int] | None, capacity: int) -> None:
    assert offsets is not None
    peak = max((offsets[b.id] + b.size for b in problem.buffers), default=0)
    assert peak <= capacity
    assert validate(problem, Plan(offsets, capacity, Status.FEASIBLE, "search", 0)) == []


def buffer(name: str, start: int, end: int, size: int, alignment: int = 1) -> Buffer:
    return Buffer(name, size, (Interval(start, end),), alignment)


tiny = problems(max_buffers=5, pins=False, max_size=6)


@given(tiny)
@example(Problem((buffer("a", 0, 1, 1, 4), buffer("b", 0, 1, 1, 4))))
def test_agrees_with_brute_force(problem: Problem) -> None:
    optimum = brute_force_peak(problem)
    found = search(problem, optimum, time_limit=10)
    assert found.status is SearchStatus.FOUND
    assert_valid(problem, found.offsets, optimum)
    if optimum > 0:
        assert search(problem, optimum - 1, time_limit=10).status is SearchStatus.INFEASIBLE


@given(tiny)
def test_minimise_reaches_the_optimum(problem: Problem) -> None:
    result = minimise(problem, time_limit=10)
    assert result.peak == brute_force_peak(problem)
    assert result.optimal
    assert_valid(problem, result.offsets, result.peak)


def order_search_fits(problem: Problem, capacity: int) -> bool:
    """The order search alone (it otherwise takes turns with the floor search), in each
    of its orders: they must agree, and every packing found must be valid."""
    form = make_form(problem)
    class_offsets = {cls.root: 0 for cls in form.rects}
    for prepared in prepare(form.rects, form.parts).parts:
        codes = set()
        for order in (3, 4, 5):
            runner = order_search.order_runner(prepared.arrays(), capacity, order)
            while runner.step(10_000) == parts._RUNNING:
                pass
            codes.add(runner.code)
            if runner.code == parts._FOUND:
                for cls, offset in zip(prepared.rects, runner.offsets):
                    class_offsets[cls.root] = int(offset)
        assert len(codes) == 1
        if codes == {parts._EXHAUSTED}:
            return False
    offsets = {name: class_offsets[c.root] + delta for c in form.rects for name, delta in c.members}
    assert_valid(problem, offsets, capacity)
    return True


@given(tiny)
@example(Problem((buffer("a", 0, 2, 2), buffer("b", 1, 3, 3), buffer("c", 4, 6, 5))))
def test_order_search_agrees_with_brute_force(problem: Problem) -> None:
    optimum = brute_force_peak(problem)
    assert order_search_fits(problem, optimum)
    if optimum > 0:
        assert not order_search_fits(problem, optimum - 1)


def staircase() -> Problem:
    """A perfect packing: four steps whose pieces only fit one way at 8 bytes.

    bytes 8 +---------------+
            |  d    |   e   |
          5 |-------+---+---|
            |   c   | f |   |
          2 |---+---+---| g |
            | a |   b   |   |
          0 +---+-------+---+  time 0..4
    """
    return Problem(
        (
            buffer("a", 0, 1, 2),
            buffer("b", 1, 3, 2),
            buffer("c", 0, 2, 3),
            buffer("f", 2, 3, 3),
            buffer("g", 3, 4, 5),
            buffer("d", 0, 2, 3),
            buffer("e", 2, 4, 3),
        )
    )


def test_finds_a_perfect_packing() -> None:
    problem = staircase()
    assert lower_bound(problem) == 8
    result = minimise(problem, time_limit=10)
    assert result.optimal and result.peak == 8
    assert_valid(problem, result.offsets, 8)


def test_proves_infeasible_below_the_optimum() -> None:
    # Pairwise live together: they must stack, so 2 + 3 + 4 bytes.
    problem = Problem((buffer("a", 0, 3, 2), buffer("b", 1, 4, 3), buffer("c", 2, 5, 4)))
    assert search(problem, 8, time_limit=10).status is SearchStatus.INFEASIBLE
    assert search(problem, 9, time_limit=10).status is SearchStatus.FOUND


def test_proves_an_optimum_above_the_lower_bound() -> None:
    # Alignment 4 puts the second byte at offset 4: live bytes say 2, the optimum is 5.
    problem = Problem((buffer("a", 0, 2, 1, 4), buffer("b", 1, 3, 1, 4)))
    assert lower_bound(problem) == 2
    for capacity in (2, 3, 4):
        assert search(problem, capacity, time_limit=10).status is SearchStatus.INFEASIBLE
    result = minimise(problem, time_limit=10)
    assert (result.peak, result.bound) == (5, 5)
    assert_valid(problem, result.offsets, 5)


def test_aliases_pack_as_one_rectangle() -> None:
    problem = Problem(
        (buffer("x", 0, 2, 4), buffer("view", 1, 3, 2), buffer("y", 2, 4, 4)),
        (Alias("x", "view", 2),),
    )
    result = minimise(problem, time_limit=10)
    assert result.peak == brute_force_peak(problem)
    offsets = result.offsets
    assert offsets is not None and offsets["view"] == offsets["x"] + 2
    assert_valid(problem, offsets, result.peak)


def test_zero_sized_and_empty_problems() -> None:
    problem = Problem((buffer("z", 0, 3, 0), buffer("a", 1, 2, 3)))
    assert search(problem, 3, time_limit=5).offsets == {"z": 0, "a": 0}
    assert search(Problem(()), 0, time_limit=5).status is SearchStatus.FOUND


def test_pins_are_refused() -> None:
    problem = Problem((Buffer("p", 4, (Interval(0, 1),), offset=8),))
    with pytest.raises(ValueError, match="pinned"):
        search(problem, 16, time_limit=1)


def test_views_off_their_alignment_are_refused() -> None:
    """A view 4 bytes into its base with alignment 8 needs the class at 4 mod 8; the
    search only places classes at multiples of their alignment, so it must refuse (it
    once returned such placements, and `validate` rejected them)."""
    problem = Problem(
        (Buffer("base", 16, (Interval(0, 2),)), Buffer("view", 8, (Interval(1, 3),), 8)),
        (Alias("base", "view", 4),),
    )
    with pytest.raises(ValueError, match="alias class 'base'"):
        minimise(problem, time_limit=1)


@given(tiny)
def test_a_packing_asked_again_answers_as_a_fresh_one(problem: Problem) -> None:
    """The arrays built once serve every capacity: asking one packing at several
    capacities gives what packings built afresh for each capacity give."""
    form = make_form(problem)
    kept = prepare(form.rects, form.parts)
    peak = lowest(kept, time_limit=10).peak
    for capacity in (peak, max(peak - 1, 0), peak + 3):
        again = ask(kept, capacity, time_limit=10)
        fresh = ask(prepare(form.rects, form.parts), capacity, time_limit=10)
        assert (again.status, again.placement, again.nodes) == (
            fresh.status,
            fresh.placement,
            fresh.nodes,
        )
        if again.offsets is not None:
            assert_valid(problem, again.offsets, capacity)


def test_is_deterministic() -> None:
    problem = staircase()
    for seed in (0, 3):
        runs = [search(problem, 8, time_limit=10, seed=seed).offsets for _ in range(3)]
        assert runs[0] is not None and runs.count(runs[0]) == 3


@given(st.integers(1, 4), st.integers(1, 4))
def test_granularity_divides_every_size(a: int, b: int) -> None:
    problem = Problem((buffer("a", 0, 1, 4 * a), buffer("b", 0, 1, 4 * b)))
    step = granularity(make_form(problem).rects)
    assert step % 4 == 0 and (4 * a) % step == 0 and (4 * b) % step == 0


MINIMALLOC_K = (
    Path(__file__).parent.parent.parent / "shared/data/minimalloc/challenging/K.1048576.csv"
)


@pytest.mark.skipif(not MINIMALLOC_K.exists(), reason="no shared data")
def test_minimalloc_k_fits_at_its_lower_bound() -> None:
    # The floor search alone finds nothing here in 60 s; the order search, taking
    # turns with it, answers in about 210,000 nodes (15,000 of them its own).
    problem = read_csv(MINIMALLOC_K)
    result = search(problem, 1048576, time_limit=60)
    assert result.status is SearchStatus.FOUND
    assert_valid(problem, result.offsets, 1048576)


RESNET50 = Path(__file__).parent.parent.parent / "shared/data/idealloc/resnet50.csv"


@pytest.mark.skipif(not RESNET50.exists(), reason="no shared data")
def test_resnet50_fits_at_its_lower_bound() -> None:
    # One part of 1,042 rectangles: the floor search alone explores 40,000 nodes in 50 s
    # and finds nothing; the order search answers within 3,100 nodes.
    problem = read_csv(RESNET50)
    capacity = lower_bound(problem)
    result = search(problem, capacity, time_limit=60)
    assert result.status is SearchStatus.FOUND and result.nodes < 10_000
    assert_valid(problem, result.offsets, capacity)


@pytest.mark.parametrize("rectangles", [1, 1024, 1042, SEARCH_MAX_PART])
def test_every_part_cpsat_hands_over_gets_both_searches(rectangles: int) -> None:
    """cpsat sends the search parts of up to SEARCH_MAX_PART rectangles; the order search,
    which answers where the floor search wanders (MiniMalloc's K, resnet50), takes turns
    on every one of them."""
    kinds = {kind for kind, *_ in driver.configurations(rectangles)}
    assert kinds == {parts._FLOOR_SEARCH, parts._ORDER_SEARCH}


@given(problems(max_buffers=8, aliases=False, pins=False))
def test_reading_the_clock_more_often_changes_no_answer(problem: Problem) -> None:
    """A turn split into one-node chunks gives the same answer as one long kernel call:
    the kernels resume exactly where they stopped."""
    capacity = lower_bound(problem)
    whole = search(problem, capacity, time_limit=10.0)
    saved = driver._CHUNK_SECONDS, driver._FIRST_CHUNK
    try:
        driver._CHUNK_SECONDS, driver._FIRST_CHUNK = 0.0, 1
        chunked = search(problem, capacity, time_limit=10.0)
    finally:
        driver._CHUNK_SECONDS, driver._FIRST_CHUNK = saved
    assert (chunked.status, chunked.offsets, chunked.nodes) == (
        whole.status,
        whole.offsets,
        whole.nodes,
    )


def test_cpsat_never_compiles_inside_its_time_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before the search is compiled here, cpsat starts a compile elsewhere and plans with
    CP-SAT alone, saying so in the plan."""
    from optplan.planners import get_planner, jit

    started: list[str] = []
    monkeypatch.setattr(jit, "ready", lambda module: False)
    monkeypatch.setattr(jit, "compile_in_background", lambda module: started.append(module))
    # No placement meets the lower bound (4 bytes live at every point, 5 needed), so cpsat
    # would hand the problem to the search.
    rows = [("a", 3, 0, 1), ("c", 2, 1, 2), ("b", 1, 0, 3), ("f", 1, 2, 3)]
    rows += [("g", 2, 3, 4), ("d", 1, 1, 4), ("e", 1, 2, 5), ("h", 3, 4, 5)]
    problem = Problem(tuple(Buffer(n, size, (Interval(s, e),)) for n, size, s, e in rows))
    plan = get_planner("cpsat", time_limit=5.0)(problem)
    assert (plan.arena, plan.status) == (5, Status.OPTIMAL)
    assert started == ["optplan.planners.search"]
    assert plan.detail["search"] == "compiling"
    assert validate(problem, plan) == []


def test_a_stopped_search_answers_at_once_and_reports_what_it_found() -> None:
    """`stop` ends the search as its clock would; `heard` hears every probe's best peak
    (never rising) and bound (never falling) once a packing is found."""
    problem = staircase()
    form = make_form(problem)
    packing = prepare(form.rects, form.parts)
    stopped = ask(packing, 7, time_limit=60, stop=lambda: True)  # 8 is the optimum
    assert stopped.status is not SearchStatus.FOUND
    assert stopped.nodes <= driver._FIRST_CHUNK  # one chunk of the first configuration
    heard: list[tuple[int, int]] = []
    result = lowest(
        packing, time_limit=10, upper=20, first_share=0.0, heard=lambda p, b: heard.append((p, b))
    )
    assert result.optimal and heard[-1] == (result.peak, result.bound) == (8, 8)
    assert all(a[0] >= b[0] and a[1] <= b[1] for a, b in itertools.pairwise(heard))
