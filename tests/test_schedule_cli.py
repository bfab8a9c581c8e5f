"""`--reorder` on the command line, and `optplan reorder`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from optplan.cli import main
from optplan.frontends import load
from optplan.passes.reorder import reorder

# Written order holds s while the wide g is made and summed; run g's branch first and
# the peak drops.
BRANCHES = """
@R.function
def main(x: R.Tensor((64,), "float32")) -> R.Tensor((64,), "float32"):
    with R.dataflow():
        s = R.exp(x)
        g = R.call_tir(widen, (x,), out_sinfo=R.Tensor((1024,), "float32"))
        h = R.sum(g, axis=None, keepdims=False)
        d = R.add(s, h)
        R.output(d)
    return d
"""


@pytest.fixture
def program(tmp_path: Path) -> str:
    path = tmp_path / "branches.py"
    path.write_text(BRANCHES)
    return str(path)


def test_reorder_writes_a_program_that_parses_with_a_lower_peak(
    program: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "reordered.py"
    assert main(["reorder", program, "--reorder", "exact", "-o", str(out), "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["peak_bytes"] < record["program_order_peak_bytes"]
    assert record["optimal"]
    again = reorder(load(str(out)).program)
    assert again.original_peak_bytes == record["peak_bytes"]
    names = [b.var.name for b in load(str(out)).program.main.body.blocks[0].bindings]
    assert names.index("g") < names.index("s")


def test_plan_and_compare_with_reorder(program: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", program, "--alignment", "1", "--json"]) == 0
    before = json.loads(capsys.readouterr().out)
    assert main(["plan", program, "--alignment", "1", "--reorder", "--json"]) == 0
    after = json.loads(capsys.readouterr().out)
    assert after["reorder"] == "auto" and before["reorder"] is None
    assert after["arena_bytes"] < before["arena_bytes"]
    assert (
        main(["compare", program, "--planners", "greedy,cpsat", "--reorder", "heuristic", "--json"])
        == 0
    )
    records = json.loads(capsys.readouterr().out)
    assert [(r["planner"], r["reorder"]) for r in records] == [
        ("greedy", None), ("cpsat", None), ("greedy", "heuristic"), ("cpsat", "heuristic"),
    ]  # fmt: skip


@pytest.mark.parametrize("scheduler", ["auto", "program", "exact", "cpsat", "heuristic"])
def test_run_replays_the_reordered_program_against_the_original(
    program: str, scheduler: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", program, "--reorder", scheduler, "--time-limit", "5"]) == 0
    out = capsys.readouterr().out
    assert "bit-for-bit equal" in out and f"reordered by {scheduler}" in out


def test_lower_and_show_take_reorder(
    program: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["lower", program, "--reorder"]) == 0
    assert "alloc_tensor" in capsys.readouterr().out
    pytest.importorskip("matplotlib")
    picture = tmp_path / "arena.png"
    assert main(["show", program, "--reorder", "-o", str(picture)]) == 0
    assert picture.is_file()


def test_a_csv_problem_has_no_order_to_change(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "p.csv"
    path.write_text("id,lower,upper,size\nb1,0,3,4\n")
    assert main(["plan", str(path), "--reorder"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no operator order" in err


def test_an_onnx_model_is_written_back_in_the_new_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    small = helper.make_tensor_value_info("x", TensorProto.FLOAT, [64])
    nodes = [
        helper.make_node("Exp", ["x"], ["s"]),
        helper.make_node("Tile", ["x", "reps"], ["g"]),
        helper.make_node("ReduceSum", ["g"], ["h"], keepdims=1),
        helper.make_node("Add", ["s", "h"], ["d"]),
    ]
    reps = helper.make_tensor("reps", TensorProto.INT64, [1], [16])
    graph = helper.make_graph(
        nodes,
        "branches",
        [small],
        [helper.make_tensor_value_info("d", TensorProto.FLOAT, [64])],
        [reps],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    source, target = tmp_path / "m.onnx", tmp_path / "r.onnx"
    onnx.save(model, str(source))
    assert main(["reorder", str(source), "--reorder", "exact", "-o", str(target)]) == 0
    assert "written to" in capsys.readouterr().out
    order = [n.output[0] for n in onnx.load(str(target)).graph.node]
    assert order.index("g") < order.index("s")
    assert main(["run", str(target)]) == 0
