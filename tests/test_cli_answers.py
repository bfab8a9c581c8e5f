"""What a script reads in `--json`: one name per node in every schedule, however the
graph labels its nodes, and a `reason` on every answer that is not a plan (infeasible,
unknown, cut by a limit), with one memory and with several."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from optplan.cli import main
from optplan.cli.records import plan_record
from optplan.frontends import load
from optplan.problem.outcome import Plan, Status

ROOT = Path(__file__).resolve().parents[1]
CNN = str(ROOT / "examples" / "cnn_train.py")
# Two buffers of one byte each, aligned to 64: live together they need 65 bytes, though
# only 2 are live, so a capacity between is proven infeasible by the exact planner.
ALIGNED = "id,lower,upper,size,alignment\na,0,2,1,64\nb,0,2,1,64\n"


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


def _json(capsys: pytest.CaptureFixture[str], argv: list[str], status: int) -> object:
    assert main([*argv, "--json"]) == status
    return json.loads(capsys.readouterr().out)


def test_one_memory_infeasible_and_unknown_carry_reasons(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    csv = tmp_path / "aligned.csv"
    csv.write_text(ALIGNED)
    infeasible = _json(capsys, ["plan", str(csv), "--capacity", "10", "--time-limit", "10"], 1)
    assert infeasible["status"] == "infeasible" and infeasible["reason"]  # type: ignore[index]
    unknown = _json(capsys, ["plan", CNN, "--capacity", "60KiB", "--planner", "naive"], 1)
    assert unknown["status"] == "unknown" and "exceeds" in unknown["reason"]  # type: ignore[index]
    rows = _json(capsys, ["compare", CNN, "--capacity", "60KiB", "--time-limit", "5"], 0)
    assert isinstance(rows, list)
    for row in rows:
        assert (row["status"] in ("optimal", "feasible")) != bool(row.get("reason")), row
    assert main(["compare", CNN, "--capacity", "60KiB", "--time-limit", "5"]) == 0
    assert "naive: unknown: arena 112128 exceeds capacity 61440" in capsys.readouterr().out


def test_a_fixed_order_below_the_capacity_carries_a_reason_in_compare(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rows = _json(capsys, ["compare", CNN, "--capacity", "40KiB", "--time-limit", "5"], 1)
    assert isinstance(rows, list) and rows
    assert all(r["status"] == "infeasible" and "does not fit" in r["reason"] for r in rows)


def test_several_memories_infeasible_and_unknown_carry_reasons(
    capsys: pytest.CaptureFixture[str],
) -> None:
    small = ["--memory", "fast=8KiB", "--memory", "slow=20KiB", "--time-limit", "5"]
    infeasible = _json(capsys, ["plan", CNN, *small], 1)
    assert infeasible["status"] == "infeasible" and "live" in infeasible["reason"]  # type: ignore[index]
    tight = ["--memory", "fast=32KiB", "--memory", "slow=40KiB", "--time-limit", "5"]
    rows = _json(capsys, ["compare", CNN, *tight], 0)
    assert isinstance(rows, list)
    assert any(r["status"] == "unknown" for r in rows)
    for row in rows:
        assert (row["status"] in ("optimal", "feasible")) != bool(row.get("reason")), row
    assert main(["compare", CNN, *tight]) == 0
    assert "naive: unknown: no residency" in capsys.readouterr().out


def test_a_plan_cut_by_a_limit_or_ctrl_c_says_so() -> None:
    loaded = load(CNN)
    args = argparse.Namespace(alignment=64, plan_outputs=False, inplace=False, reorder=None)
    for detail, words in (({}, "time limit"), ({"interrupted": True}, "interrupted")):
        plan = Plan({}, 0, Status.UNKNOWN, "cpsat", 1, 1.0, 1, detail)
        assert words in str(plan_record(loaded, plan, args)["reason"])
    plan = Plan({}, 0, Status.INFEASIBLE, "cpsat", 1, 1.0, 1, {})
    assert plan_record(loaded, plan, args)["reason"]


def test_recomputation_that_finds_nothing_answers_in_json(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["reorder", CNN, "--capacity", "16KiB", "--time-limit", "5"]
    record = _json(capsys, argv, 1)
    assert record["status"] == "infeasible"  # type: ignore[index]
    assert "no schedule fits 16384 bytes" in record["reason"]  # type: ignore[index]
