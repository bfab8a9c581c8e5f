"""Peers' computation graphs (networkx node-link JSON, as Checkmate and MOCCASIN write
them): read into a `schedule.Graph` whose peak is the graphs' own, judged against a
direct computation of that definition on the JSON itself."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optplan.cli import main
from optplan.errors import InputError
from optplan.frontends import load
from optplan.frontends.graphs import read_graph
from optplan.problem import lower_bound
from optplan.schedule.graph import is_valid_order, peak_bytes, problem_of


@st.composite
def node_link(draw: st.DrawFn) -> dict[str, object]:
    """A random DAG as node-link JSON: Checkmate's keys, or the random layered graphs'
    (`out_cost`, `duration`, links keyed `0`/`1`, an explicit `order`)."""
    n = draw(st.integers(1, 9))
    layered = draw(st.booleans())
    order = draw(st.permutations(range(n))) if layered else list(range(n))
    edges = {
        (order[i], order[j])
        for j in range(n)
        for i in draw(st.sets(st.integers(0, max(j - 1, 0)), max_size=3))
        if i < j
    }
    sizes = draw(st.lists(st.integers(0, 1000), min_size=n, max_size=n))
    if layered:
        nodes = [
            {"name": v, "out_cost": sizes[v], "duration": 1, "param_cost": 0} for v in range(n)
        ]
        links = [{"0": u, "1": v} for u, v in sorted(edges)]
        graph: dict[str, object] = {"name": "layered", "order": order}
    else:
        nodes = [{"id": v, "name": f"n{v}", "cost_ram": sizes[v], "cost_cpu": 3} for v in range(n)]
        links = [{"source": u, "target": v} for u, v in sorted(edges)]
        graph = {"name": "checkmate"}
    return {"directed": True, "multigraph": False, "graph": graph, "nodes": nodes, "links": links}


def direct_peak(data: dict[str, object]) -> int:
    """The definition, on the JSON: at the step of node v, v's output and every earlier
    output that a node at this step or later reads."""
    nodes = data["nodes"]
    assert isinstance(nodes, list)
    key = "id" if "id" in nodes[0] else "name"
    size = {n[key]: n.get("cost_ram", n.get("out_cost")) for n in nodes}
    links = data["links"]
    assert isinstance(links, list)
    pairs = [(e.get("source", e.get("0")), e.get("target", e.get("1"))) for e in links]
    graph = data["graph"]
    assert isinstance(graph, dict)
    order = graph.get("order", [n[key] for n in nodes])
    step = {v: t for t, v in enumerate(order)}
    peak = 0
    for t, v in enumerate(order):
        held = [u for u in order[:t] if any(a == u and step[b] >= t for a, b in pairs)]
        peak = max(peak, size[v] + sum(size[u] for u in held))
    return peak


@settings(max_examples=200)
@given(node_link())
def test_program_order_peak_is_the_graphs_own(
    tmp_path_factory: pytest.TempPathFactory, data: dict[str, object]
) -> None:
    path = tmp_path_factory.mktemp("graphs") / "g.json"
    path.write_text(json.dumps(data))
    peer = read_graph(path)
    program = tuple(range(peer.graph.ops))
    assert is_valid_order(peer.graph, program)
    assert peak_bytes(peer.graph, program) == direct_peak(data)
    assert lower_bound(problem_of(peer.graph, program)) == direct_peak(data)
    loaded = load(str(path))
    assert loaded.graph == peer.graph
    assert lower_bound(loaded.problem) == direct_peak(data)


def write(tmp_path: Path, data: object) -> str:
    path = tmp_path / "g.json"
    path.write_text(json.dumps(data))
    return str(path)


@pytest.mark.parametrize(
    ("data", "fault"),
    [
        ([1, 2], "node-link JSON"),
        ({"nodes": [{"id": 0}], "links": []}, "no size"),
        ({"nodes": [{"id": 0, "cost_ram": -1}], "links": []}, "non-negative"),
        ({"nodes": [{"id": 0, "cost_ram": 1}, {"id": 0, "cost_ram": 1}], "links": []}, "same id"),
        (
            {"nodes": [{"id": 0, "cost_ram": 1}], "links": [{"source": 0, "target": 7}]},
            "unknown node",
        ),
        (
            {
                "nodes": [{"id": 0, "cost_ram": 1}, {"id": 1, "cost_ram": 1}],
                "links": [{"source": 1, "target": 0}],
            },
            "against the program order",
        ),
        (
            {"graph": {"order": [0, 0]}, "nodes": [{"id": 0, "cost_ram": 1}], "links": []},
            "every node once",
        ),
    ],
)
def test_bad_graphs_are_one_line_naming_the_file(tmp_path: Path, data: object, fault: str) -> None:
    path = write(tmp_path, data)
    with pytest.raises(InputError, match=fault) as error:
        read_graph(path)
    assert path in str(error.value)


def test_plan_reads_a_graph_from_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = {
        "nodes": [
            {"id": v, "name": f"n{v}", "cost_ram": 10 * (v + 1), "cost_cpu": 1} for v in range(3)
        ],
        "links": [
            {"source": 0, "target": 1},
            {"source": 1, "target": 2},
            {"source": 0, "target": 2},
        ],
    }
    path = write(tmp_path, data)
    assert main(["plan", path, "--planner", "greedy", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["lower_bound_bytes"] == 10 + 20 + 30  # n0 is read at n2's step
    assert main(["plan", str(tmp_path / "missing.json")]) == 2
    (tmp_path / "bad.json").write_text("{")
    assert main(["plan", str(tmp_path / "bad.json")]) == 2
    assert "not JSON" in capsys.readouterr().err
