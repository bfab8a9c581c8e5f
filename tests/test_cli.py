"""The command line as scripts use it: exit statuses, JSON keys, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from optplan.cli import main

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "residual_cnn.py"
QUICK_START = ROOT / "examples" / "transformer_block.py"
SHARED = ROOT.parent / "shared" / "data"
TVM = SHARED / "tvm"

HEADER = (
    "@R.function\n"
    'def main(x: R.Tensor((2,), dtype="float32")) -> R.Tensor((2,), dtype="float32"):\n'
)
CSV = "id,lower,upper,size\nb1,0,3,4\nb2,3,9,4\nb3,0,9,4\nb4,9,21,4\n"


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> object:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_compare_on_the_example_reaches_the_lower_bound(capsys: pytest.CaptureFixture[str]) -> None:
    records = run_json(capsys, "compare", str(EXAMPLE), "--time-limit", "10")
    assert isinstance(records, list)
    by_name = {r["planner"]: r for r in records}
    assert set(by_name) == {"naive", "tokens", "greedy", "cpsat"}
    cpsat = by_name["cpsat"]
    assert cpsat["status"] == "optimal"
    assert cpsat["arena_bytes"] == cpsat["lower_bound_bytes"]
    assert (
        cpsat["arena_bytes"] <= by_name["greedy"]["arena_bytes"] <= by_name["naive"]["arena_bytes"]
    )
    for key in (
        "planner",
        "status",
        "arena_bytes",
        "lower_bound_bytes",
        "naive_bytes",
        "buffers",
        "seconds",
        "offsets",
    ):
        assert key in cpsat


def test_quick_start_example_shows_the_token_rule_above_the_bound(
    capsys: pytest.CaptureFixture[str],
) -> None:
    records = run_json(capsys, "compare", str(QUICK_START), "--time-limit", "10")
    assert isinstance(records, list)
    by_name = {r["planner"]: r for r in records}
    assert by_name["cpsat"]["status"] == "optimal"
    assert by_name["cpsat"]["arena_bytes"] == by_name["cpsat"]["lower_bound_bytes"] == 1179648
    assert by_name["tokens"]["arena_bytes"] == 1441792
    assert main(["run", str(QUICK_START)]) == 0


def test_plan_writes_csv_and_json_only_when_valid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    problem = tmp_path / "p.csv"
    problem.write_text(CSV)
    out = tmp_path / "plan.csv"
    assert main(["plan", str(problem), "--alignment", "1", "-o", str(out)]) == 0
    assert out.read_text().splitlines()[0] == "id,lower,upper,size,offset"
    assert "plan written to" in capsys.readouterr().out
    record = run_json(capsys, "plan", str(problem), "--alignment", "1")
    assert isinstance(record, dict)
    assert record["arena_bytes"] == 8 and record["status"] == "optimal"


def test_alignment_applies_to_csv_problems(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    problem = tmp_path / "p.csv"
    problem.write_text(CSV)
    record = run_json(capsys, "plan", str(problem), "--alignment", "64")
    assert isinstance(record, dict)
    assert all(offset % 64 == 0 for offset in record["offsets"].values())


def test_run_replays_the_example_bit_for_bit(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(EXAMPLE), "--time-limit", "10"]) == 0
    assert "bit-for-bit" in capsys.readouterr().out


def test_run_names_a_tensor_when_a_plan_overlaps(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record = run_json(capsys, "plan", str(EXAMPLE), "--planner", "greedy")
    assert isinstance(record, dict)
    offsets = dict(record["offsets"])
    # Put every tensor at offset 0: tensors live together now share bytes.
    bad = {name: 0 for name in offsets}
    plan = tmp_path / "bad.json"
    plan.write_text(json.dumps({"offsets": bad, "arena_bytes": record["arena_bytes"]}))
    assert main(["run", str(EXAMPLE), "--plan", str(plan)]) == 1
    captured = capsys.readouterr()
    assert "differs" in captured.out
    assert "invalid plan" in captured.err


@pytest.mark.parametrize(
    ("name", "text", "where", "what"),
    [
        ("neg.csv", "id,lower,upper,size\na,0,3,-4\n", "neg.csv:2:4:", "negative size"),
        (
            "syntax.py",
            '@R.function\ndef main(x: R.Tensor((2,), dtype="float32"):\n',
            "syntax.py:2",
            "",
        ),
        (
            "unknown.py",
            HEADER + '    y: R.Tensor((2,), dtype="float32") = R.nn.no_such_op(x)\n    return y\n',
            "unknown.py:3:",
            "no_such_op",
        ),
        (
            "undefined.py",
            HEADER + '    y: R.Tensor((2,), dtype="float32") = R.add(x, lv3)\n    return y\n',
            "undefined.py:3:",
            "'lv3'",
        ),
    ],
)
def test_bad_input_is_one_line_and_status_two(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, text: str, where: str, what: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    assert main(["plan", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert f"{path.parent}/{where}" in err, err
    assert what in err
    assert "Traceback" not in err


def test_missing_file_and_unknown_planner_are_input_errors(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["plan", "no/such/file.py"]) == 2
    assert "no/such/file.py: no such file" in capsys.readouterr().err
    assert main(["plan", str(EXAMPLE), "--planner", "magic"]) == 2
    assert "unknown planner 'magic'" in capsys.readouterr().err


# ---------------------------------------------------------------------------- TVM's own models


def shared(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"shared data not found at {path}")
    return path


@pytest.mark.parametrize(
    ("model", "optimum", "tvm"),
    [
        ("resnet18.2_fused_dataflow.py", 4014080, 4919296),
        ("mlp.2_fused_dataflow.py", 2097152, 2097152),
        ("resnet18.unfused.2_fused_dataflow.py", 6422784, 7432096),
    ],
)
def test_tvm_models_reach_the_proven_optimum(
    capsys: pytest.CaptureFixture[str], model: str, optimum: int, tvm: int
) -> None:
    path = shared(TVM / model)
    records = run_json(
        capsys,
        "compare",
        str(path),
        "--alignment",
        "1",
        "--planners",
        "tokens,cpsat",
        "--time-limit",
        "30",
    )
    assert isinstance(records, list)
    by_name = {r["planner"]: r for r in records}
    assert by_name["cpsat"]["status"] == "optimal"
    assert by_name["cpsat"]["arena_bytes"] == optimum
    assert by_name["tokens"]["arena_bytes"] == tvm


@pytest.mark.parametrize("model", ["mlp.2_fused_dataflow.py", "resnet18.2_fused_dataflow.py"])
def test_tvm_models_replay_bit_for_bit(capsys: pytest.CaptureFixture[str], model: str) -> None:
    path = shared(TVM / model)
    assert main(["run", str(path), "--alignment", "1", "--time-limit", "30"]) == 0
    assert "bit-for-bit" in capsys.readouterr().out


def test_check_reports_tvm_totals_and_catches_a_moved_tensor(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = shared(TVM / "resnet18.4_planned.py")
    assert main(["check", str(path)]) == 0
    out = capsys.readouterr().out
    assert "4919296 bytes" in out and out.strip().endswith("valid")
    # Move the second tensor of the first storage onto the first, which is still live.
    text = path.read_text()
    lines = text.splitlines()
    allocs = [i for i, line in enumerate(lines) if "R.memory.alloc_tensor(storage1," in line]
    moved = lines[allocs[0]].replace(
        "R.memory.alloc_tensor(storage1,", "R.memory.alloc_tensor(storage,"
    )
    lines[allocs[0]] = moved
    bad = tmp_path / "moved.py"
    bad.write_text("\n".join(lines))
    assert main(["check", str(bad)]) == 1
    assert capsys.readouterr().out.strip().endswith("invalid")


def test_planned_programs_are_sent_to_check(capsys: pytest.CaptureFixture[str]) -> None:
    path = shared(TVM / "mlp.4_planned.py")
    assert main(["plan", str(path)]) == 2
    assert "already planned" in capsys.readouterr().err


def test_lower_prints_storages_offsets_and_kills(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lower", str(EXAMPLE), "--planner", "greedy"]) == 0
    text = capsys.readouterr().out
    assert text.count("R.memory.alloc_storage(") == 1
    assert "R.memory.alloc_tensor(storage" in text
    assert "R.memory.kill_tensor(" in text


def test_inplace_merges_buffers_and_still_replays(capsys: pytest.CaptureFixture[str]) -> None:
    plain = run_json(capsys, "plan", str(EXAMPLE), "--planner", "greedy")
    inplace = run_json(capsys, "plan", str(EXAMPLE), "--planner", "greedy", "--inplace")
    assert isinstance(plain, dict) and isinstance(inplace, dict)
    # Every relu and add of the example can take over its dying input; the peak is at a
    # convolution, which cannot run in place, so the arena stays at the lower bound.
    assert inplace["buffers"] == 8 and plain["buffers"] == 16
    assert inplace["arena_bytes"] == plain["arena_bytes"] == plain["lower_bound_bytes"]
    assert main(["run", str(EXAMPLE), "--inplace", "--planner", "greedy"]) == 0


def test_lowered_program_round_trips_through_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "lowered.py"
    assert main(["lower", str(EXAMPLE), "--planner", "greedy", "-o", str(out)]) == 0
    capsys.readouterr()
    assert main(["check", str(out)]) == 0
    assert capsys.readouterr().out.strip().endswith("valid")


def test_onnx_model_runs_with_its_own_weights(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    onnx = pytest.importorskip("onnx", reason="the onnx package is not installed")
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    weight = np.random.default_rng(0).standard_normal((8, 8)).astype(np.float32)
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"]),
        helper.make_node("Relu", ["h"], ["r"]),
        helper.make_node("Split", ["r"], ["a", "b"], axis=1, num_outputs=2),
        helper.make_node("Concat", ["b", "a"], ["c"], axis=1),
        helper.make_node("MatMul", ["c", "w"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])],
        [numpy_helper.from_array(weight, "w")],
    )
    path = tmp_path / "split.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), str(path))
    assert main(["run", str(path)]) == 2
    assert "unknown dimension 'batch'; fix it with --dim batch=VALUE" in capsys.readouterr().err
    assert main(["run", str(path), "--dim", "batch=4"]) == 0
    assert "bit-for-bit" in capsys.readouterr().out
    assert main(["plan", str(path), "--dim", "batch"]) == 2
    assert capsys.readouterr().err.strip() == (
        "optplan: --dim expects NAME=VALUE with a positive integer, got 'batch'"
    )


def test_show_draws_the_arena(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "arena.png"
    assert main(["show", str(EXAMPLE), "--planner", "greedy", "-o", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "greedy optimal, 196608 bytes" in capsys.readouterr().out
    assert not list(tmp_path.glob("*.partial*"))


@pytest.mark.parametrize(
    ("model", "tolerance"),
    [
        ("mlp_b8", []),
        ("gpt2_tiny", []),
        ("bert_tiny", []),
        ("resnet_tiny", []),
        ("unet_tiny", []),
        ("mobilenet_tiny", []),
        # TVM's fp16 matmul accumulates in fp16: agreement is to fp16 precision only.
        ("llama_tiny_fp16", ["--rtol", "1e-2", "--atol", "2e-2"]),
    ],
)
def test_high_level_models_match_tvm_and_replay_bit_for_bit(
    capsys: pytest.CaptureFixture[str], model: str, tolerance: list[str]
) -> None:
    program = shared(TVM / "highlevel" / f"{model}.py")
    values = str(TVM / "highlevel" / f"{model}.npz")
    argv = ["run", str(program), "--inputs", values, "--expect", values, "--planner", "greedy"]
    assert main([*argv, *tolerance]) == 0
    out = capsys.readouterr().out
    assert "outputs match" in out and "bit-for-bit" in out


def test_expect_reports_the_first_output_element_that_differs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import numpy as np

    program = shared(TVM / "highlevel" / "mlp_b8.py")
    values = dict(np.load(TVM / "highlevel" / "mlp_b8.npz"))
    values["output"] = values["output"] + 1.0
    wrong = tmp_path / "wrong.npz"
    np.savez(wrong, **values)
    assert main(["run", str(program), "--inputs", str(wrong), "--expect", str(wrong)]) == 1
    assert "output differs from" in capsys.readouterr().out


def test_inputs_of_the_wrong_shape_are_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import numpy as np

    given = tmp_path / "x.npz"
    np.savez(given, x=np.zeros((2, 2), dtype=np.float32))
    assert main(["run", str(EXAMPLE), "--inputs", str(given)]) == 2
    err = capsys.readouterr().err
    assert f"{given}: input 'x' is (2, 2) float32, but the program declares" in err


# ---------------------------------------------------------------------------- edges of the command line


def _numpy_file(path: Path, **arrays: object) -> Path:
    import numpy as np

    np.savez(path, **arrays)
    return path


EDGES = [
    (["plan", "{csv}", "-o", "{tmp}/missing/dir/plan.json"], "does not exist"),
    (["plan", "{csv}", "-o", "{tmp}"], "is a directory"),
    (["show", "{csv}", "-o", "{tmp}/picture"], ".png or .svg or .pdf"),
    (["show", "{csv}", "--html", "-o", "{tmp}/page.png"], "name it .html"),
    (["plan", "{csv}", "--time-limit", "nan"], "positive number of seconds"),
    (["plan", "{csv}", "--time-limit", "0"], "positive number of seconds"),
    (["plan", "{csv}", "--time-limit", "-3"], "positive number of seconds"),
    (["plan", "{csv}", "--alignment", "0"], "at least 1"),
    (["compare", "{csv}", "--planners", ","], "names no planner"),
    (["compare", "{csv}", "--planners", "greedy,magic"], "unknown planner 'magic'"),
    (["run", "{example}", "--json"], "unrecognized arguments: --json"),
    (["lower", "{example}", "--json"], "unrecognized arguments: --json"),
    (["show", "{example}", "--json", "-o", "{tmp}/a.png"], "unrecognized arguments: --json"),
    (["plan", "{csv}", "--dim", "n=3"], "--dim fixes a dimension"),
    (["plan", "{csv}", "--inplace"], "--inplace acts on a program"),
    (["plan", "{csv}", "--plan-outputs"], "--plan-outputs acts on a program"),
    (["run", "{example}", "--plan", "{negative_arena}"], "not a non-negative integer: -5"),
    (["run", "{example}", "--plan", "{huge_arena}"], "more than this machine's memory"),
    (["run", "{example}", "--inputs", "{not_npz}"], "not an .npz archive"),
    (["run", "{example}", "--inputs", "{stranger}"], "'nope' is no parameter of the program"),
]


@pytest.mark.parametrize(("argv", "what"), EDGES)
def test_edges_are_one_line_status_two_and_write_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], what: str
) -> None:
    inputs = tmp_path / "in"
    inputs.mkdir()
    (inputs / "ok.csv").write_text(CSV)
    (inputs / "neg.json").write_text('{"offsets": {}, "arena_bytes": -5}')
    (inputs / "huge.json").write_text('{"offsets": {}, "arena_bytes": 10000000000000000}')
    (inputs / "x.npz").write_text("hello")
    _numpy_file(inputs / "stranger.npz", nope=[1.0])
    out = tmp_path / "out"
    out.mkdir()
    names = {
        "csv": inputs / "ok.csv",
        "example": EXAMPLE,
        "tmp": out,
        "negative_arena": inputs / "neg.json",
        "huge_arena": inputs / "huge.json",
        "not_npz": inputs / "x.npz",
        "stranger": inputs / "stranger.npz",
    }
    assert main([arg.format(**names) for arg in argv]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert len(err.splitlines()) == 1, err
    assert what in err, err
    assert "Traceback" not in err
    assert list(out.iterdir()) == []


def test_onnx_without_the_onnx_package_names_the_extra(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    model = tmp_path / "model.onnx"
    model.write_bytes(b"\x08\x07")
    monkeypatch.setitem(sys.modules, "onnx", None)  # as if it were not installed
    monkeypatch.delitem(sys.modules, "optplan.frontends.onnx", raising=False)
    assert main(["plan", str(model)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "pip install 'optplan[onnx]'" in err, err


def test_a_failed_write_leaves_no_partial_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    problem = tmp_path / "ok.csv"
    problem.write_text(CSV)
    target = tmp_path / "plan.json"
    target.mkdir()  # plan.json exists as a directory, found only when the plan is written
    (target / "keep").write_text("")
    assert main(["plan", str(problem), "-o", str(target)]) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ok.csv", "plan.json"]


def test_version_and_check_on_an_unplanned_program(capsys: pytest.CaptureFixture[str]) -> None:
    from optplan import __version__

    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"optplan {__version__}"
    assert main(["check", str(EXAMPLE)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no plan in this program" in err, err


def test_compare_measures_every_gap_against_one_bound(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    problem = tmp_path / "p.csv"
    problem.write_text(CSV)
    assert main(["compare", str(problem), "--planners", "naive,cpsat"]) == 0
    out = capsys.readouterr().out
    assert "alignment 1" in out.splitlines()[0]  # a CSV's sizes are exact byte counts
    assert "gaps against the best proven bound 8" in out.splitlines()[0]
    assert "proven bound" in out.splitlines()[1]


def test_show_draws_a_picture_and_a_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    picture, page = tmp_path / "arena.png", tmp_path / "arena.html"
    assert main(["show", str(EXAMPLE), "--planner", "greedy", "-o", str(picture)]) == 0
    assert picture.read_bytes()[:4] == b"\x89PNG"
    assert main(["show", str(EXAMPLE), "--planner", "greedy", "--html", "-o", str(page)]) == 0
    text = page.read_text()
    assert text.startswith("<!DOCTYPE html>") and "<script" not in text
    assert text.count("<rect ") >= 10 and "live [" in text and "lower bound" in text
