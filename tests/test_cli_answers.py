"""What a script reads in `--json`: one name per node in every schedule, however the
graph labels its nodes, and a `reason` on every answer that is not a plan (infeasible,
unknown, cut by a limit), with one memory and with several."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from optplan.cli import main

ROOT = Path(__file__).resolve().parents[1]


def _twice_relu(tmp_path: Path) -> Path:
    """Five nodes, two labelled `relu`; 250 bytes force the first relu to run again."""
    nodes = [
        {"id": v, "name": n, "cost_ram": s, "cost_cpu": c}
        for v, (n, s, c) in enumerate(
            [("relu", 100, 5), ("conv", 100, 3), ("relu", 10, 1), ("d", 100, 1), ("e", 10, 1)]
        )
    ]
    links = [
        {"source": u, "target": v} for u, v in [(0, 1), (1, 2), (2, 3), (0, 4), (3, 4), (1, 3)]
    ]
    path = tmp_path / "g.json"
    path.write_text(json.dumps({"nodes": nodes, "links": links}))
    return path


def _computed(steps: list[str]) -> list[str]:
    """The value each step computes: a node's name, `name@k` for its k-th computation."""
    seen: dict[str, int] = {}
    out = []
    for name in steps:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name}@{seen[name]}")
    return out


def test_steps_and_offsets_name_each_node_once_when_labels_repeat(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    graph = _twice_relu(tmp_path)
    written = tmp_path / "schedule.json"
    argv = ["reorder", str(graph), "--capacity", "250", "--time-limit", "5"]
    assert main([*argv, "--json", "-o", str(written)]) == 0
    printed = json.loads(capsys.readouterr().out)
    for record in (printed, json.loads(written.read_text())):
        steps = record["steps"]
        assert len(set(steps)) == 5, steps  # five nodes, five names
        assert sorted(_computed(steps)) == sorted(record["offsets"])
        assert steps.count("relu#0") == 2 and "relu#0@2" in record["offsets"]
