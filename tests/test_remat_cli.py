"""`--capacity` on the command line: malformed budgets, budgets no schedule can meet,
programs rewritten with recomputation (TVMScript and ONNX) and replayed bit for bit."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from optplan.cli import main

ROOT = Path(__file__).resolve().parents[1]
CNN = str(ROOT / "examples" / "cnn_train.py")


def test_a_malformed_budget_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("plan", "compare", "run", "show", "reorder", "lower"):
        assert main([command, CNN, "--capacity", "12 apples"]) == 2
    assert "--capacity" in capsys.readouterr().err


def test_a_budget_below_an_ops_inputs_and_outputs_is_exit_1_with_the_reason(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["reorder", CNN, "--capacity", "16KiB", "--time-limit", "5"]) == 1
    out = capsys.readouterr().out
    assert (
        "no schedule fits 16384 bytes: at least" in out
        and "needs its inputs and outputs at once" in out
    )
    assert main(["run", CNN, "--capacity", "16KiB", "--time-limit", "5"]) == 1


def test_a_fixed_order_that_does_not_fit_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", CNN, "--capacity", "40KiB", "--time-limit", "5"]) == 1
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1
    assert "57344 bytes are live at point" in out[0] and "recompute fits it" in out[0]
    assert "optplan fit " in out[0] and "--capacity 40960" in out[0]
    assert main(["plan", CNN, "--capacity", "56KiB", "--json"]) == 0


def test_reorder_writes_a_recomputing_program_that_replays(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "fit.py"
    assert main(["reorder", CNN, "--capacity", "40KiB", "--time-limit", "10", "-o", str(out)]) == 0
    text = out.read_text()
    assert "_rc2" in text
    assert main(["run", str(out), "--capacity", "40KiB"]) == 0
    assert main(["run", CNN, "--capacity", "40KiB", "--time-limit", "10"]) == 0
    assert "bit-for-bit equal" in capsys.readouterr().out


def _peers_graph(folder: Path) -> Path:
    """Five ops in a peer's node-link JSON: a (100 bytes) is read by b and, last, by e."""
    nodes = [
        {"id": v, "name": n, "cost_ram": s, "cost_cpu": c}
        for v, (n, s, c) in enumerate(
            [("a", 100, 5), ("b", 100, 3), ("c", 10, 1), ("d", 100, 1), ("e", 10, 1)]
        )
    ]
    links = [
        {"source": u, "target": v} for u, v in [(0, 1), (1, 2), (2, 3), (0, 4), (3, 4), (1, 3)]
    ]
    path = folder / "g.json"
    path.write_text(json.dumps({"nodes": nodes, "links": links}))
    return path


def test_a_peers_graph_is_scheduled_with_real_offsets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _peers_graph(tmp_path)
    schedule = tmp_path / "schedule.json"
    assert (
        main(["reorder", str(path), "--capacity", "250", "--time-limit", "5", "-o", str(schedule)])
        == 0
    )
    record = json.loads(schedule.read_text())
    assert record["arena_bytes"] <= 250 and record["steps"].count("a") == 2
    assert main(["plan", str(path), "--capacity", "250"]) == 1
    assert "does not fit --capacity 250" in capsys.readouterr().out


def test_a_peers_graph_says_its_lower_bound_and_gap(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The graph above at 250 bytes: at d's step a's 100 bytes are held for e beside b,
    c and d (310), so a runs again: the covering bound is its cost, 5, and meets the
    answer. The search of every schedule is kept off so that the covering bound speaks;
    the JSON record and the line both carry the bound, its reason and the gap."""
    from optplan.schedule import remat

    monkeypatch.setattr(remat, "EXHAUSTIVE_OPS", 0)
    path = _peers_graph(tmp_path)
    argv = ["reorder", str(path), "--capacity", "250", "--work", "2"]
    assert main([*argv, "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["extra_cost"] == record["lower_bound"] == 5 and record["gap_percent"] == 0
    assert record["status"] == "optimal" and "covering bound" in record["lower_bound_reason"]
    assert main(argv) == 0
    assert "lower bound 5, gap 0.0 %" in capsys.readouterr().out
    assert main(["reorder", str(path), "--capacity", "400", "--work", "2", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["lower_bound"] == 0 and "no run again is forced" in record["lower_bound_reason"]


def _skip_model(onnx: object) -> object:
    from onnx import TensorProto, helper

    shape = [1, 64]
    value = lambda name, dims=shape: helper.make_tensor_value_info(name, TensorProto.FLOAT, dims)
    nodes = [
        helper.make_node("Relu", ["x"], ["a"]),
        helper.make_node("Concat", ["a", "a"], ["b"], axis=1),
        helper.make_node("Tanh", ["b"], ["c"]),
        helper.make_node("Sigmoid", ["c"], ["d"]),
        helper.make_node("ReduceMean", ["d"], ["e"], axes=[1], keepdims=1),
        helper.make_node("Add", ["e", "a"], ["y"]),
    ]
    graph = helper.make_graph(nodes, "skip", [value("x")], [value("y")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def test_an_onnx_model_with_recomputation_runs_in_onnxruntime(tmp_path: Path) -> None:
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    source, fitted = tmp_path / "skip.onnx", tmp_path / "fit.onnx"
    onnx.save(_skip_model(onnx), str(source))
    # a: 256 B, b, c, d: 512 B each; the program order holds a across b, c and d (1280 B).
    assert (
        main(["plan", str(source), "--alignment", "1", "--capacity", "1100", "--time-limit", "5"])
        == 1
    )
    assert (
        main(
            [
                "reorder",
                str(source),
                "--alignment",
                "1",
                "--capacity",
                "1100",
                "--time-limit",
                "10",
                "-o",
                str(fitted),
            ]
        )
        == 0
    )
    model = onnx.load(str(fitted))
    assert [n.op_type for n in model.graph.node].count("Relu") == 2
    x = np.random.default_rng(0).standard_normal((1, 64)).astype(np.float32)
    want = ort.InferenceSession(str(source)).run(None, {"x": x})
    got = ort.InferenceSession(str(fitted)).run(None, {"x": x})
    assert all(np.array_equal(a, b) for a, b in zip(want, got))
    assert (
        main(["run", str(source), "--alignment", "1", "--capacity", "1100", "--time-limit", "10"])
        == 0
    )


def test_what_fits_counts_the_alignment(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # a (5 bytes) is held from its making to e's step; at alignment 8, e's 1-byte output
    # beside a and d needs 8 + 8 + 1 = 17 bytes, though they hold 7: at 12 bytes no
    # order nor recomputation fits, at 17 recomputing a does.
    sizes = [("a", 5), ("b", 5), ("c", 5), ("d", 1), ("e", 1)]
    nodes = [
        {"id": v, "name": name, "cost_ram": size, "cost_cpu": 1}
        for v, (name, size) in enumerate(sizes)
    ]
    links = [{"source": u, "target": v} for u, v in [(0, 1), (1, 2), (2, 3), (3, 4), (0, 4)]]
    path = tmp_path / "g.json"
    path.write_text(json.dumps({"nodes": nodes, "links": links}))
    assert (
        main(["plan", str(path), "--capacity", "12", "--alignment", "8", "--time-limit", "5"]) == 1
    )
    out = capsys.readouterr().out
    assert "15 bytes are live at point 2" in out
    assert (
        "no order nor recomputation can ('e' needs its inputs and outputs at once: 17 bytes at offsets on multiples of 8)"
        in out
    )
    assert (
        main(["reorder", str(path), "--capacity", "16", "--alignment", "8", "--time-limit", "5"])
        == 1
    )
    assert "at least 17 are needed" in capsys.readouterr().out
    assert main(["reorder", str(path), "--capacity", "17", "--alignment", "8", "--work", "5"]) == 0


def test_an_answer_without_a_schedule_says_what_any_costs_at_least() -> None:
    from optplan.cli.budget import _below_words
    from optplan.problem.plan import Status
    from optplan.schedule.remat import MemoryBound, RematSchedule

    unknown = RematSchedule(
        None, Status.UNKNOWN, 0, 0, 0, 200, 0, MemoryBound(10, ""), None, "none", "", 1.0,
        lower_bound=3, lower_reason="covering bound over 2 rows, 1 solves (converged)",
    )  # fmt: skip
    assert _below_words(unknown) == "; no schedule costs less than 3 extra compute (1.500 %)"
    assert _below_words(dataclasses.replace(unknown, lower_bound=0)) == ""
