"""The skyline search's work: a node counts as one on parts of up to `NODE_INCIDENCES`
rectangle-section incidences and in proportion above, so that a unit of work lasts about
as long on a part of thousands of rectangles as on MiniMalloc's, where it was measured."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from benchmarks.skyline_work import sliding
from optplan.budget import NODE_INCIDENCES, NODES_PER_UNIT, Budget, node_work
from optplan.planners.common import make_form
from optplan.planners.search import SearchStatus, ask, prepare

CHUNK = 64 * 15  # a chunk of nodes per configuration the clock is read after


def test_a_unit_on_a_large_part_walks_fewer_nodes_in_proportion() -> None:
    problem = sliding(400, 100, seed=3)
    form = make_form(problem)
    packing = prepare(form.rects, form.parts, 0)
    (part,) = packing.parts
    incidences = part.incidences
    assert incidences >= 2 * NODE_INCIDENCES
    clock = Budget(work=1.0, seconds=600.0).clock()
    # The live bytes: an exact tiling the search neither finds nor rules out in a unit.
    found = ask(packing, packing.live_bytes, time_limit=1.0, clock=clock)
    assert found.status is SearchStatus.TIMEOUT
    expected = NODES_PER_UNIT * NODE_INCIDENCES / incidences
    assert expected <= found.nodes <= expected + CHUNK
    assert 1.0 <= clock.spent <= 1.0 + CHUNK * node_work(incidences)


@given(st.integers(0, 10**7), st.integers(0, 10**7))
def test_a_node_counts_once_up_to_the_measured_parts_and_in_proportion_above(
    a: int, b: int
) -> None:
    small, large = sorted((a, b))
    assert node_work(small) <= node_work(large)
    if large <= NODE_INCIDENCES:
        assert node_work(large) == 1 / NODES_PER_UNIT
    if small >= NODE_INCIDENCES:
        assert math.isclose(node_work(small) * large, node_work(large) * small)
