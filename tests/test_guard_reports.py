"""A run counted in work that its guard (seconds) cut says what it spent, in units of
work, and that the guard cut it: never a reading pushed past every deadline."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from optplan.schedule.graph import peak_bytes
from optplan.schedule.remat import Remat, rematerialise

ROOT = Path(__file__).resolve().parents[1]


def test_a_recomputation_cut_by_its_guard_reports_the_work_it_spent(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT))
    from benchmarks.graphs.layered import write_layered
    from optplan.frontends.graphs import read_graph

    graph = read_graph(write_layered(tmp_path / "g.json", 100, 3)).graph
    budget = int(0.98 * peak_bytes(graph, range(graph.ops)))  # nothing found in the guard
    result = rematerialise(graph, Remat(budget, time_limit=0.001, work=5.0))
    assert result.cut and result.plan is None
    spent = re.search(r"found in ([0-9.]+) units of work of the limit of 5.0", result.reason)
    assert spent is not None, result.reason
    assert float(spent.group(1)) <= 5.0
    assert "the guard of 0.001 s ran out" in result.reason
