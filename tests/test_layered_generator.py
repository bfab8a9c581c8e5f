"""The random layered graphs of the held-out order benchmark (`benchmarks/graphs/layered.py`,
`moccasin_like`): valid graphs of the size asked, read by the graph frontend, every node
read by a later one (none held to the end but the last layers'), and the default draw
unchanged by the option."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.graphs.layered import layered_graph, write_layered
from optplan.frontends.graphs import read_graph
from optplan.schedule.graph import is_valid_order


@settings(max_examples=40, deadline=None)
@given(
    st.integers(min_value=3, max_value=120),
    st.sampled_from([0.31, 0.36, 0.43]),
    st.integers(min_value=0, max_value=10**6),
)
def test_moccasin_like_graphs_are_layered_dags_with_every_node_read(
    nodes: int, width: float, seed: int
) -> None:
    data = layered_graph(nodes, width=width, seed=seed, moccasin_like=True)
    links = [(e["0"], e["1"]) for e in data["links"]]  # type: ignore[attr-defined]
    assert len(data["nodes"]) == nodes  # type: ignore[arg-type]
    assert all(u < v for u, v in links)  # drawn layer by layer: file order is an order
    read = {u for u, _ in links}
    assert read == set(range(nodes - 1))  # only the sink has no reader


def test_the_frontend_reads_them_in_their_order(tmp_path: Path) -> None:
    path = write_layered(tmp_path / "g.json", 250, 6, width=0.43, moccasin_like=True)
    graph = read_graph(path).graph
    assert graph.ops == 250
    assert is_valid_order(graph, range(graph.ops))


def test_the_default_draw_is_unchanged_by_the_option() -> None:
    a = json.dumps(layered_graph(300, seed=1))
    b = json.dumps(layered_graph(300, seed=1, moccasin_like=False))
    assert a == b
    assert a != json.dumps(layered_graph(300, seed=1, moccasin_like=True))
