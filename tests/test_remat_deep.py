"""The deep pass of step 3 (`anytime.deep`: the tabu search at targets below the
budget, then the packing rounds at that target): every schedule it gives runs every op
in a valid order, keeps the ops that cannot run twice to one run, is within the budget
in live bytes, and its plan is judged valid by `validate` within the budget less the
bytes live across; its extra compute is the schedule's. Drawn on the awkward graphs
(two buffers or none per op, views, sizes of 0, bytes live across, odd alignments, ops
that cannot run twice), at budgets from the proven memory bound to above the program
order's peak, from the program order and an order drawn at random. Where the orders
drawn at random find a schedule before half their time, they end as they did before
the deep pass: `RESTARTS_IDLE` draws after their last cheaper one."""

from __future__ import annotations

import time
from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from optplan.problem import Problem, one_arena
from optplan.problem.plan import validate
from optplan.schedule.graph import Graph, problem_of
from optplan.schedule.remat import anytime
from optplan.schedule.remat.anytime import Call, Found, deep
from optplan.schedule.remat.bounds import is_valid_steps
from optplan.schedule.remat.heuristic import TABU, extra_cost, profile_of
from optplan.schedule.remat.packing import Nearest
from optplan.schedule.remat.restarts import freeing_orders
from tests.test_remat_awkward import awkward_graphs, budget_between


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(awkward_graphs(max_ops=7), st.sampled_from((1, 2, 8, 64)), st.floats(0.0, 1.2))
def test_a_deep_schedule_is_valid_and_fits(
    drawn: tuple[Graph, tuple[bool, ...]], alignment: int, scale: float
) -> None:
    graph, allowed = drawn
    program = tuple(range(graph.ops))
    budget = budget_between(graph, allowed, scale, alignment)
    call = Call(graph, budget, alignment, list(allowed), Nearest(graph, alignment, budget))
    found = deep(call, [program, next(freeing_orders(graph), program)], time.perf_counter() + 20)
    event("packed" if found is not None else "nothing")
    if found is None:
        return
    assert found.method == TABU
    assert is_valid_steps(graph, found.steps, allowed)
    assert int(profile_of(graph, found.steps).max(initial=0)) <= budget
    assert found.extra == extra_cost(graph, found.steps)
    problem = problem_of(graph, found.steps, alignment)
    assert (
        validate(
            Problem(
                problem.buffers, problem.aliases, memories=one_arena(budget - graph.base_bytes)
            ),
            found.plan,
        )
        == []
    )


def _gadgets(count: int) -> Graph:
    """`count` independent blocks of four ops: a makes X, b reads X, c reads b's, d reads
    c's and X. Within 9 bytes a block runs only with X made again before d."""
    sizes, creates, reads = [], [], []
    for k in range(count):
        x, y, z, w = 4 * k, 4 * k + 1, 4 * k + 2, 4 * k + 3
        sizes += [4, 4, 4, 1]
        creates += [(x,), (y,), (z,), (w,)]
        reads += [(), (x,), (y,), (z, x)]
    return Graph(tuple(sizes), tuple(creates), tuple(reads), tuple(reads))


def test_the_draws_stop_once_idle_where_they_found_a_schedule_before_half_their_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where the draws find a schedule before half their time, they end `RESTARTS_IDLE`
    draws after their last cheaper one, with no deep pass and no second round of draws."""
    graph = _gadgets(5)
    drawn: list[int] = []  # per order drawn and fitted, 1 where it gave a cheaper schedule
    best: list[int] = []
    real_fit = anytime.fit

    def fit(
        call: Call, order: tuple[int, ...], deadline: float, ranks: Sequence[str]
    ) -> Found | None:
        found = real_fit(call, order, deadline, ranks)
        cheaper = found is not None and (not best or found.extra < best[-1])
        if found is not None and cheaper:
            best.append(found.extra)
        drawn.append(int(cheaper))
        return found

    monkeypatch.setattr(anytime, "fit", fit)
    call = Call(graph, 9, 1, [True] * graph.ops, Nearest(graph, 1, 9))
    found = anytime.heuristics(call, [], time.perf_counter() + 4 * anytime.DEEP_SECONDS)
    assert found is not None and found.method != TABU
    last = max(k for k, cheaper in enumerate(drawn) if cheaper)
    assert len(drawn) - 1 - last <= anytime.RESTARTS_IDLE
