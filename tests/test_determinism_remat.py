"""Recomputation counted in work gives the same schedule and offsets whatever the clock
says: the budget's readings (`optplan.budget`) jump a thousand seconds at every look,
and the answer must be byte for byte that of the real clock.

Only the budget's own clock jumps here: the order searches inside keep their own work
count and read the real time for their guard alone.
"""

from __future__ import annotations

import itertools
import math
import sys
import time
import types
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from optplan import budget as budget_module
from optplan.schedule.graph import Graph, peak_bytes
from optplan.schedule.remat import Remat, RematSchedule, rematerialise
from tests.loaded import calm_and_loaded, records
from tests.test_remat_awkward import awkward_graphs

ROOT = Path(__file__).resolve().parents[1]


def _jumping_time() -> types.SimpleNamespace:
    readings = itertools.count()
    return types.SimpleNamespace(perf_counter=lambda: time.monotonic() + 1000.0 * next(readings))


def _answer(result: RematSchedule) -> tuple[object, ...]:
    offsets = None if result.plan is None else sorted(result.plan.offsets.items())
    return (
        result.status,
        result.steps,
        result.extra_cost,
        result.bound_cost,
        result.lower_bound,
        result.lower_reason,
        offsets,
    )


def _twice(graph: Graph, options: Remat, recomputable: tuple[bool, ...] | None = None) -> None:
    calm = rematerialise(graph, options, recomputable)
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(budget_module, "time", _jumping_time())
        loaded = rematerialise(graph, options, recomputable)
    assert not calm.cut and not loaded.cut
    assert _answer(loaded) == _answer(calm)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(awkward_graphs(), st.floats(0.3, 1.1), st.sampled_from((1, 3, 8)))
def test_schedules_counted_in_work_do_not_move_with_the_clock(
    case: tuple[Graph, tuple[bool, ...]], share: float, alignment: int
) -> None:
    graph, recomputable = case
    budget = math.floor(peak_bytes(graph, tuple(range(graph.ops))) * share)
    options = Remat(budget, time_limit=math.inf, work=0.3, alignment=alignment)
    _twice(graph, options, recomputable)


def _layered(tmp_path: Path, nodes: int, seed: int) -> Path:
    sys.path.insert(0, str(ROOT))
    from benchmarks.graphs.layered import write_layered

    return write_layered(tmp_path / f"layered_{nodes}_{seed}.json", nodes, seed)


def test_a_250_node_graph_at_70_percent_twice(tmp_path: Path) -> None:
    from optplan.frontends.graphs import read_graph

    graph = read_graph(_layered(tmp_path, 250, seed=3)).graph
    budget = int(0.7 * peak_bytes(graph, range(graph.ops)))
    _twice(graph, Remat(budget, time_limit=math.inf, work=2.0))


def test_the_covering_bound_counted_in_work_does_not_move_with_the_clock(
    tmp_path: Path,
) -> None:
    """A 100-node layered graph at 70 %: the covering bound is above 0 there (its CP-SAT
    solves, GLOP's iterations and flows all counted in work), and the same twice."""
    from optplan.frontends.graphs import read_graph

    graph = read_graph(_layered(tmp_path, 100, seed=1)).graph
    budget = int(0.7 * peak_bytes(graph, range(graph.ops)))
    options = Remat(budget, time_limit=math.inf, work=2.0)
    assert rematerialise(graph, options).lower_bound > 0
    _twice(graph, options)


def test_reorder_capacity_prints_the_same_schedule_twice(tmp_path: Path) -> None:
    """Two processes, one beside a busy one: the same JSON but for the seconds."""
    from optplan.frontends.graphs import read_graph

    path = _layered(tmp_path, 120, seed=4)
    graph = read_graph(path).graph
    capacity = int(0.7 * peak_bytes(graph, range(graph.ops)))
    command = [sys.executable, "-m", "optplan", "reorder", str(path), "--capacity", str(capacity)]
    command += ["--work", "2", "--json"]
    calm, loaded = calm_and_loaded(command)
    assert loaded.returncode == calm.returncode, loaded.stderr
    first, second = records(calm, loaded)
    assert first == second
