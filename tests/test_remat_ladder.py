"""The tightening of `fit` (`anytime._tightened`), on a ladder (each rung's schedule
recreated, close rungs, the tabu rank at each) and off it (the first schedule recreated
with a local ruin, `anytime._dear`): every schedule it packs runs
every op in a valid order, keeps the ops that cannot run twice to one run, is within
the budget in live bytes, costs what it says, and its plan is judged valid by `validate`
within the budget less the bytes live across; the first schedule it met that did not
pack is within its target; under a clock counted in work it gives the same again,
packed or not.
Drawn on the awkward graphs, at odd alignments (which make packings overflow where
live bytes fit) and budgets from the proven memory bound to the program order's peak."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from optplan.budget import Budget, now, running
from optplan.problem.plan import Plan
from optplan.schedule.graph import Graph
from optplan.schedule.remat import anytime
from optplan.schedule.remat.anytime import Call, Found, _tightened
from optplan.schedule.remat.bounds import is_valid_steps
from optplan.schedule.remat.heuristic import RANKS, extra_cost, greedy, profile_of
from optplan.schedule.remat.packing import Nearest, Unpacked, packed, relieve
from tests.test_remat import ROUNDS_CHANGE
from tests.test_remat_awkward import awkward_graphs, budget_between
from tests.test_remat_cheaper import assert_packed


def _tighten(
    graph: Graph, allowed: tuple[bool, ...], budget: int, alignment: int
) -> tuple[Found | None, Unpacked | None]:
    call = Call(graph, budget, alignment, list(allowed), Nearest(graph, alignment, budget))
    with running(Budget(2.0, 60.0).clock()):
        return _tightened(call, tuple(range(graph.ops)), now() + 1.5, RANKS[:1])


@pytest.mark.parametrize("ladder", [True, False])
@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(awkward_graphs(max_ops=8), st.sampled_from((1, 24, 64)), st.floats(0.0, 1.0))
def test_the_tightening_packs_valid_schedules_on_a_ladder_or_off_it_and_the_same_again(
    ladder: bool, drawn: tuple[Graph, tuple[bool, ...]], alignment: int, scale: float
) -> None:
    graph, allowed = drawn
    budget = budget_between(graph, allowed, scale, alignment)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(anytime, "LADDER_EXTRA", float("inf") if ladder else -1.0)
        found, unpacked = _tighten(graph, allowed, budget, alignment)
        again = _tighten(graph, allowed, budget, alignment)
    event("packed" if found else "unpacked" if unpacked else "nothing")
    if unpacked is not None:
        assert is_valid_steps(graph, unpacked.found[0], allowed)
        assert int(profile_of(graph, unpacked.found[0]).max(initial=0)) <= unpacked.target
    assert (again[0] is None) == (found is None)
    assert (again[1] and again[1].found) == (unpacked and unpacked.found)
    if found is None or again[0] is None:
        return
    assert again[0].steps == found.steps
    assert_packed(graph, allowed, found, budget, alignment)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(awkward_graphs(max_ops=8), st.sampled_from((1, 24, 64)), st.floats(0.0, 1.0))
def test_off_the_ladder_fit_packs_wherever_the_rounds_from_the_first_schedule_pack(
    drawn: tuple[Graph, tuple[bool, ...]], alignment: int, scale: float
) -> None:
    """Off the ladder the packing rounds start from the first schedule recreated; where
    they find nothing from it, they go on from the first schedule as met: `fit` answers
    wherever those rounds alone do (on MOCCASIN's 1,000-node graph at 50 % and 60 units,
    the rounds from the schedule recreated in a quarter of the time left found nothing
    where those from the first schedule had found +183.4 %)."""
    graph, allowed = drawn
    budget = budget_between(graph, allowed, scale, alignment)
    order = tuple(range(graph.ops))
    call = Call(graph, budget, alignment, list(allowed), Nearest(graph, alignment, budget))
    with pytest.MonkeyPatch.context() as patch, running(Budget(30.0, 120.0).clock()):
        patch.setattr(anytime, "LADDER_EXTRA", -1.0)
        deadline = now() + 20
        found = anytime.fit(call, order, deadline, RANKS[:1])
        unpacked = _first_unpacked(graph, allowed, budget, alignment, deadline)
        if found is not None or unpacked is None:
            event("fit answered" if found is not None else "nothing to round")
            return
        alone = relieve(graph, unpacked, budget, alignment, list(allowed), deadline)
    event("rounds alone found nothing" if alone is None else "rounds alone packed")
    assert alone is None, "the packing rounds from the first schedule pack; fit found none"


def _first_unpacked(
    graph: Graph, allowed: tuple[bool, ...], budget: int, alignment: int, deadline: float
) -> Unpacked | None:
    """The schedule the cheapest rank meets at the budget from the program order, where
    its packing overflows (None where it is not met or packs)."""
    first = greedy(graph, tuple(range(graph.ops)), budget, list(allowed), deadline, RANKS[0])
    if first is None:
        return None
    _, over, tops = packed(graph, first, budget, alignment, deadline)
    return Unpacked((first, RANKS[0]), tops, budget) if over else None


def _slow_rounds(
    graph: Graph, allowed: tuple[bool, ...], budget: int, alignment: int, again: float
) -> tuple[Unpacked | None, tuple[tuple[int, ...], Plan, np.ndarray] | None]:
    """Under a clock counted in work: the first schedule that overflows
    (`_first_unpacked`), and the packing rounds from it with a local recreate in each."""
    with running(Budget(6.0, 60.0).clock()):
        deadline = now() + 5.0
        unpacked = _first_unpacked(graph, allowed, budget, alignment, deadline)
        if unpacked is None:
            return None, None
        return unpacked, relieve(
            graph, unpacked, budget, alignment, list(allowed), deadline, again=again
        )


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    awkward_graphs(max_ops=8),
    st.sampled_from((1, 8, 24, 64)),
    st.floats(0.0, 1.0),
    st.sampled_from((0.05, 0.3)),
)
@example((ROUNDS_CHANGE, (True,) * ROUNDS_CHANGE.ops), 8, 0.0, 0.3)  # 33 bytes
@example((ROUNDS_CHANGE, (True,) * ROUNDS_CHANGE.ops), 8, 0.0, 0.05)
def test_the_rounds_with_a_local_recreate_pack_valid_schedules_and_the_same_again(
    drawn: tuple[Graph, tuple[bool, ...]], alignment: int, scale: float, again: float
) -> None:
    """The packing rounds off the ladder's second pass (`anytime.ROUND_WORK`): each
    round's schedule recreated by a local ruin, its relief kept. What they pack is
    valid, keeps the ops that cannot run twice to one run, is within the budget in live
    bytes and judged valid by `validate`; under a clock counted in work, the same again."""
    graph, allowed = drawn
    budget = budget_between(graph, allowed, scale, alignment)
    first, found = _slow_rounds(graph, allowed, budget, alignment, again)
    event("nothing to round" if first is None else "packed" if found else "not packed")
    if found is None:
        return
    twice = _slow_rounds(graph, allowed, budget, alignment, again)[1]
    assert twice is not None and twice[0] == found[0] and twice[1].offsets == found[1].offsets
    steps, plan = found[0], found[1]
    assert_packed(
        graph, allowed, Found(steps, plan, extra_cost(graph, steps), "greedy"), budget, alignment
    )
