"""The covering bound on extra compute (`remat.lower.covering_bound`) against the search
of every schedule and a brute force over step sequences: it is never above the least
extra compute of any schedule within the budget, on awkward graphs (buffers live in and
out, bytes held across the block, ops that may not run again, sizes and costs of 0);
and as `rematerialise` states it (`lower_bound`, its reason, the gap) beside answers."""

from __future__ import annotations

import math
import time

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from optplan.problem.plan import Status
from optplan.schedule import Scheduler, remat
from optplan.schedule.graph import Graph, peak_bytes
from optplan.schedule.remat import Remat, memory_bound, rematerialise
from optplan.schedule.remat.exhaustive import every_schedule
from optplan.schedule.remat.heuristic import extra_cost
from optplan.schedule.remat.lower import covering_bound, forced
from tests.test_exhaustive import brute_force
from tests.test_remat_awkward import awkward_graphs

# a makes A (5 bytes), b reads A, c reads b's B, d reads A and c's C. At c's step A is
# held for d unless it is made again after: a budget of 6 needs a to run twice.
CHAIN = Graph(
    sizes=(5, 1, 1, 0),
    creates=((0,), (1,), (2,), (3,)),
    reads=((), (0,), (1,), (0, 2)),
    preds=((), (0,), (1,), (0, 2)),
    costs=(3, 4, 1, 1),
)


@st.composite
def tight(draw: st.DrawFn, max_ops: int) -> tuple[Graph, tuple[bool, ...], int]:
    """An awkward graph and a budget between its memory bound and its program order's
    peak, where recomputation is most often forced (a budget drawn from a plain range
    gave a bound above 0 once in 400 graphs)."""
    graph, allowed = draw(awkward_graphs(max_ops=max_ops, order_only=2))
    low = memory_bound(graph, allowed).bytes
    high = max(low, peak_bytes(graph, range(graph.ops)))
    return graph, allowed, draw(st.integers(low, high))


@st.composite
def skips(draw: st.DrawFn, max_ops: int) -> tuple[Graph, tuple[bool, ...], int]:
    """A chain whose ops also read buffers made far back (what forces recomputation),
    each op one buffer of 1-9 bytes and a cost of 0-3, and a budget between the memory
    bound and the program order's peak."""
    n = draw(st.integers(3, max_ops))
    reads = [()] + [
        tuple(sorted({v - 1} | draw(st.sets(st.integers(0, v - 1), max_size=2))))
        for v in range(1, n)
    ]
    graph = Graph(
        sizes=tuple(draw(st.lists(st.integers(1, 9), min_size=n, max_size=n))),
        creates=tuple((v,) for v in range(n)),
        reads=tuple(reads),
        preds=tuple(reads),
        costs=tuple(draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))),
    )
    allowed = tuple(
        draw(st.lists(st.booleans(), min_size=n, max_size=n)) if draw(st.booleans()) else [True] * n
    )
    low = memory_bound(graph, allowed).bytes
    high = max(low, peak_bytes(graph, range(n)))
    return graph, allowed, draw(st.integers(low, high))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.one_of(
        tight(4),
        st.tuples(awkward_graphs(max_ops=4, order_only=2), st.integers(0, 45)).map(
            lambda d: (*d[0], d[1])
        ),
    )
)
@example((CHAIN, (True, True, True, True), 6))
def test_the_covering_bound_is_never_above_the_least_extra_compute(
    drawn: tuple[Graph, tuple[bool, ...], int],
) -> None:
    graph, allowed, budget = drawn
    bound = covering_bound(graph, budget, list(allowed))
    fitting = brute_force(graph, list(allowed), budget)
    assert all(bound.cost <= extra_cost(graph, s) for s in fitting)
    if bound.unmet:
        assert fitting == []  # a row no choice meets proves that nothing fits


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(tight(7), skips(8)))
def test_the_covering_bound_holds_against_the_search_of_every_schedule(
    drawn: tuple[Graph, tuple[bool, ...], int],
) -> None:
    graph, allowed, budget = drawn
    every = every_schedule(graph, budget, list(allowed), time.perf_counter() + 30)
    if every is None or every.steps is None:
        return
    assert peak_bytes(graph, every.steps) <= budget
    assert covering_bound(graph, budget, list(allowed)).cost <= every.cost


def test_the_covering_bound_is_above_zero_where_a_run_again_is_forced() -> None:
    assert covering_bound(CHAIN, 7).cost == 0  # every step of the program order fits
    assert covering_bound(CHAIN, 6).cost == 3  # a runs again: a, b, c, a, d
    every = every_schedule(CHAIN, 6, [True] * 4, time.perf_counter() + 30)
    assert every is not None and every.cost == 3
    assert covering_bound(CHAIN, 5).unmet  # d's own step holds 6: nothing fits


# a makes A, m reads it and makes B, k (after m) makes K, j reads K, d reads B and J.
# At 8 bytes B cannot be held at j's step (3 + 5 + 1): m runs again after it, and its
# run again reads A, which cannot be held there either: a runs again too.
INPUTS = Graph(
    sizes=(3, 3, 5, 1, 1),
    creates=((0,), (1,), (2,), (3,), (4,)),
    reads=((), (0,), (), (2,), (1, 3)),
    preds=((), (0,), (1,), (2,), (1, 3)),
    costs=(1, 1, 1, 1, 1),
)


def test_a_run_again_counts_the_inputs_it_reads() -> None:
    """Dropping B at j's step costs m's run again and A held or made again for it: the
    bound counts both runs (the least of every schedule: a, m, k, j, a, m, d)."""
    every = every_schedule(INPUTS, 8, [True] * 5, time.perf_counter() + 30)
    assert every is not None and every.cost == 2
    assert covering_bound(INPUTS, 8).cost == 2


# a makes A (9 bytes), b reads it and makes B (5), c makes C (2), d reads A and C and
# makes D (6), e reads B, C and D. At every op's step some set of ops run before it holds
# at most 21 bytes, so no one step forces a run again; yet every order peaks at 22: at
# 21 some op runs again, and the least is c's (a, c, d, b, c, e: cost 1).
ORDERS = Graph(
    sizes=(9, 5, 2, 6, 7),
    creates=((0,), (1,), (2,), (3,), (4,)),
    reads=((), (0,), (), (0, 2), (1, 2, 3)),
    preds=((), (0,), (), (0, 2), (1, 2, 3)),
    costs=(2, 3, 1, 3, 3),
)


def test_a_budget_below_every_orders_peak_forces_the_cheapest_run_again() -> None:
    assert Scheduler("exact", time_limit=5.0)(ORDERS).peak_bytes == 22
    assert covering_bound(ORDERS, 21).rows == 0
    every = every_schedule(ORDERS, 21, [True] * 5, time.perf_counter() + 30)
    assert every is not None and every.cost == 1
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(remat, "EXHAUSTIVE_OPS", 0)
        result = rematerialise(ORDERS, Remat(21, time_limit=math.inf, work=1.0))
    assert result.lower_bound == result.extra_cost == 1
    assert result.status is Status.OPTIMAL
    assert "every order holds more than the budget" in result.lower_reason
    fixed = forced(ORDERS, 21, [True, True, False, True, True], 22)
    assert fixed is not None and fixed.cost == 2  # c may not run again: a is the cheapest
    assert forced(ORDERS, 22, None, 22) is None  # an order may fit: nothing is forced


def test_a_budget_below_every_orders_peak_with_nothing_that_may_run_again_fits_nothing() -> None:
    """With no op allowed to run again every schedule is an order, and every order of
    ORDERS peaks at 22: at 21 nothing fits, which the order search's bound proves."""
    allowed = [False] * 5
    assert brute_force(ORDERS, allowed, 21) == []
    proof = forced(ORDERS, 21, allowed, 22)
    assert proof is not None and proof.unmet
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(remat, "EXHAUSTIVE_OPS", 0)
        result = rematerialise(ORDERS, Remat(21, time_limit=math.inf, work=1.0), allowed)
    assert result.status is Status.INFEASIBLE and result.steps is None
    assert "every order holds more than the budget" in result.reason


@st.composite
def below_orders(draw: st.DrawFn, max_ops: int) -> tuple[Graph, tuple[bool, ...], int]:
    """A graph of `tight` or `skips` at a budget below the best order's peak (the exact
    order search's, on graphs this small), where some op must run again: elsewhere an
    order fits and the bound is 0 by its first test."""
    graph, allowed, _ = draw(st.one_of(tight(max_ops), skips(max_ops)))
    low = memory_bound(graph, allowed).bytes
    best = Scheduler("exact", time_limit=5.0)(graph).peak_bytes
    return graph, allowed, draw(st.integers(low, max(low, best - 1)))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(tight(4), skips(5), below_orders(5)))
@example((CHAIN, (True, True, True, True), 6))
def test_the_answers_lower_bound_is_at_most_the_least_and_its_gap_is_the_answers(
    drawn: tuple[Graph, tuple[bool, ...], int],
) -> None:
    """`rematerialise`'s `lower_bound`, from the covering bound on its share of the work
    (the search of every schedule kept off, so that the covering bound is what speaks),
    is never above the least extra compute the brute force finds, nor above the
    answer's; the gap is the answer's own, and nothing fits where it says so."""
    graph, allowed, budget = drawn
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(remat, "EXHAUSTIVE_OPS", 0)
        result = rematerialise(graph, Remat(budget, time_limit=math.inf, work=0.3), allowed)
    fitting = brute_force(graph, list(allowed), budget)
    if fitting:
        assert result.status is not Status.INFEASIBLE, result.reason
        assert result.lower_bound <= min(extra_cost(graph, s) for s in fitting)
    if result.steps is None:
        return
    assert result.lower_bound <= result.bound_cost <= result.extra_cost
    if result.extra_cost:
        expected = 100 * (result.extra_cost - result.lower_bound) / result.extra_cost
        assert result.gap_percent == pytest.approx(expected)
    else:
        assert result.lower_bound == 0 and result.gap_percent == 0
    assert result.lower_reason  # how the bound was got, or why it is 0


def test_the_answer_says_why_its_bound_is_what_it_is() -> None:
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(remat, "EXHAUSTIVE_OPS", 0)
        fits = rematerialise(CHAIN, Remat(7, time_limit=math.inf, work=1.0))
        forced = rematerialise(CHAIN, Remat(6, time_limit=math.inf, work=1.0))
    assert fits.extra_cost == fits.lower_bound == 0
    assert "no run again is forced" in fits.lower_reason
    assert forced.status is Status.OPTIMAL  # the covering bound meets the answer: a again
    assert forced.extra_cost == forced.lower_bound == 3 and forced.gap_percent == 0
    assert "covering bound" in forced.lower_reason
    searched = rematerialise(CHAIN, Remat(6, time_limit=math.inf, work=1.0))
    assert searched.lower_bound == 3 and "search" in searched.lower_reason


def test_a_bound_whose_rows_cannot_be_met_proves_that_nothing_fits() -> None:
    """At 6 bytes with a unable to run again, a's 5 bytes are held at c's step beside
    B and C: the covering rows cannot be met (the memory bound says so too)."""
    allowed = [False, True, True, True]
    assert covering_bound(CHAIN, 6, allowed).unmet
    assert brute_force(CHAIN, allowed, 6) == []
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(remat, "EXHAUSTIVE_OPS", 0)
        result = rematerialise(CHAIN, Remat(6, time_limit=math.inf, work=1.0), allowed)
    assert result.status is Status.INFEASIBLE and result.steps is None
