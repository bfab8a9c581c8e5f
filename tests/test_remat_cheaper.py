"""Making a packed schedule cheaper (`anytime.cheaper`: ruin and recreate within its live
bytes, and where the cheaper schedule does not pack, the packing rounds from it): every
schedule it gives runs every op in a valid order, keeps the ops that cannot run twice to
one run, is within the budget in live bytes, costs no more than the schedule it started
from, and its plan is judged valid by `validate` within the budget less the bytes live
across; under a clock counted in work it gives the same schedule on a second call.
Drawn on the awkward graphs (two buffers or none per op, views, sizes and costs of 0,
bytes live across, odd alignments, ops that cannot run twice), at budgets from the
proven memory bound to the program order's peak."""

from __future__ import annotations

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from optplan.budget import Budget, now, running
from optplan.problem import Problem, one_arena
from optplan.problem.plan import validate
from optplan.schedule.graph import Graph, problem_of
from optplan.schedule.remat.anytime import Call, Found, cheaper, fit, heuristics
from optplan.schedule.remat.bounds import is_valid_steps
from optplan.schedule.remat.heuristic import RANKS, extra_cost, profile_of
from optplan.schedule.remat.packing import Nearest
from optplan.schedule.remat.restarts import freeing_orders
from tests.test_remat_awkward import awkward_graphs, budget_between


def assert_packed(
    graph: Graph, allowed: tuple[bool, ...], found: Found, budget: int, alignment: int
) -> None:
    """`found` runs every op in a valid order, keeps the ops that cannot run twice to one
    run, is within the budget in live bytes, costs what it says, and its plan is judged
    valid by `validate` within the budget less the bytes live across."""
    assert is_valid_steps(graph, found.steps, allowed)
    assert int(profile_of(graph, found.steps).max(initial=0)) <= budget
    assert found.extra == extra_cost(graph, found.steps)
    problem = problem_of(graph, found.steps, alignment)
    room = one_arena(budget - graph.base_bytes)
    assert validate(Problem(problem.buffers, problem.aliases, memories=room), found.plan) == []


def _cheaper(call: Call, alignment: int) -> tuple[Found | None, Found | None]:
    """Under a clock of 2 units of work: the schedule `fit` packs from the program order
    (before it is made cheaper: `cheaper` is called on it again here), and `cheaper`'s."""
    graph = call.graph
    with running(Budget(2.0, 60.0).clock()):
        found = fit(call, tuple(range(graph.ops)), now() + 1.0, RANKS[:1])
        if found is None:
            return None, None
        return found, cheaper(call, found, now() + 1.0)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(awkward_graphs(max_ops=8), st.sampled_from((1, 8, 64)), st.floats(0.0, 1.0))
def test_a_cheaper_schedule_is_valid_packed_no_dearer_and_the_same_again(
    drawn: tuple[Graph, tuple[bool, ...]], alignment: int, scale: float
) -> None:
    graph, allowed = drawn
    budget = budget_between(graph, allowed, scale, alignment)

    def call() -> Call:
        return Call(graph, budget, alignment, list(allowed), Nearest(graph, alignment, budget))

    start, found = _cheaper(call(), alignment)
    event("packed" if found is not None else "nothing")
    if start is None or found is None:
        return
    event("cheaper" if found.extra < start.extra else "as dear")
    assert_packed(graph, allowed, found, budget, alignment)
    assert found.extra <= start.extra
    again = _cheaper(call(), alignment)[1]
    assert again is not None and again.steps == found.steps


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(awkward_graphs(max_ops=8), st.sampled_from((1, 8, 64)), st.floats(0.0, 1.0))
def test_the_heuristics_schedule_after_the_start_orders_is_valid_packed_and_the_same_again(
    drawn: tuple[Graph, tuple[bool, ...]], alignment: int, scale: float
) -> None:
    """Step 3 from the start orders, each passed over where its schedule at the budget
    already costs as much as the best, the time they leave given to ruin and recreate
    from the best: valid, within the budget, packed, and the same on a second call."""
    graph, allowed = drawn
    program = tuple(range(graph.ops))
    budget = budget_between(graph, allowed, scale, alignment)
    orders = [program, next(freeing_orders(graph), program)]

    def run() -> Found | None:
        call = Call(graph, budget, alignment, list(allowed), Nearest(graph, alignment, budget))
        with running(Budget(2.0, 60.0).clock()):
            return heuristics(
                call, [o for o in orders if is_valid_steps(graph, o, allowed)], now() + 1.0
            )

    found = run()
    event("packed" if found is not None else "nothing")
    if found is None:
        return
    assert_packed(graph, allowed, found, budget, alignment)
    again = run()
    assert again is not None and again.steps == found.steps
