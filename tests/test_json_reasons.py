"""What `--json` says where a name repeats or where there is no plan.

- A node-link graph whose nodes share a label: `reorder --capacity --json` names every
  step and every instance by the node's unique name (`label#id` where labels repeat),
  so a reader can tell which node a step computes and which is computed again.
- Every answer that is not a plan (infeasible, unknown, cut by the time limit), of one
  memory and of several, carries a `reason`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from optplan.cli import main
from optplan.cli.records import reason_of
from optplan.problem.plan import Plan, Status


def _graph(path: Path) -> Path:
    """relu -> conv -> relu -> conv -> add, the first relu read again by add: at 21
    bytes, the first relu (no inputs, cost 1) must be computed again before add."""
    labels = ["relu", "conv", "relu", "conv", "add"]
    sizes = [10, 10, 10, 10, 1]
    nodes = [
        {"id": v, "name": labels[v], "cost_ram": sizes[v], "cost_cpu": 1 if v == 0 else 5}
        for v in range(5)
    ]
    edges = [(0, 1), (1, 2), (2, 3), (0, 4), (3, 4)]
    links = [{"source": u, "target": v} for u, v in edges]
    data = {"directed": True, "multigraph": False, "graph": {}, "nodes": nodes, "links": links}
    path.write_text(json.dumps(data))
    return path


def test_repeated_labels_get_one_unique_name_in_steps_and_offsets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _graph(tmp_path / "twice.json")
    assert main(["reorder", str(path), "--capacity", "21", "--work", "2", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    steps, offsets = record["steps"], record["offsets"]
    assert steps == ["relu#0", "conv#1", "relu#2", "conv#3", "relu#0", "add"]
    assert {name.split("@")[0] for name in offsets} == set(steps)
    assert "relu#0@2" in offsets  # the second run of the first relu, by its own name


CSV = "id,lower,upper,size\na,0,2,8\nb,1,3,8\nc,1,2,8\n"
PINNED = "id,lower,upper,size,offset\np,0,2,1,1\nb,0,2,2,\n"


@pytest.mark.parametrize(
    ("text", "flags", "status"),
    [
        (PINNED, ["--capacity", "3"], "infeasible"),  # one memory, proven
        (PINNED, ["--capacity", "3", "--planner", "greedy"], "unknown"),  # one memory
        (CSV, ["--memory", "fast=8", "--memory", "slow=8"], "infeasible"),  # several
        (CSV, ["--memory", "fast=8", "--memory", "slow=8", "--planner", "greedy"], "infeasible"),
    ],
)
def test_every_answer_without_a_plan_says_why_in_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, flags: list[str], status: str
) -> None:
    path = tmp_path / "p.csv"
    path.write_text(text)
    assert main(["plan", str(path), "--json", *flags]) == 1
    record = json.loads(capsys.readouterr().out)
    assert record["status"] == status
    assert isinstance(record["reason"], str) and record["reason"]


@pytest.mark.parametrize("status", [Status.INFEASIBLE, Status.UNKNOWN])
def test_a_plan_without_offsets_has_a_reason_even_where_its_planner_gave_none(
    status: Status,
) -> None:
    bare = Plan({}, 0, status, "someone", 0)
    assert reason_of(bare) == (
        "proven: no plan fits the capacities"
        if status is Status.INFEASIBLE
        else "no plan found within the work and time limit given"
    )
    cut = Plan({}, 0, status, "cpsat", 0, detail={"cut": True})
    assert "time limit cut" in reason_of(cut)
    said = Plan({}, 0, status, "cpsat", 0, detail={"reason": "because"})
    assert reason_of(said) == "because"
