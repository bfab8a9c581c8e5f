"""`.tflite` models: the frontend, the offline plan written into the model, bad input.

The models under tests/data/tflite were made by TFLite's own converter
(`benchmarks/tflm_models.py`): six int8 models as users have them, and a float WHILE loop
of three subgraphs. Running them in TFLite Micro is tests/test_tflm.py.
"""

from __future__ import annotations

import struct
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from optplan.cli import main
from optplan.errors import InputError
from optplan.frontends import load
from optplan.frontends.tflite import tensor_names
from optplan.frontends.tflite_format import parse_model
from optplan.integrations.tflm import (
    InvalidPlan,
    check_offline_plan,
    offline_offsets,
    planned_model,
    read_offline_plan,
    with_offline_plan,
)
from optplan.planners import get_planner
from optplan.problem import lower_bound
from optplan.problem.plan import Plan, Status, validate
from optplan.runtime import replay

DATA = Path(__file__).parent / "data" / "tflite"
MODELS = ("ds_cnn", "mobilenet_v1_025", "resnet8", "autoencoder", "mobilenet_v2_035", "transformer")
SMALL = DATA / "ds_cnn.tflite"


@pytest.mark.parametrize("name", MODELS)
def test_cpsat_plans_each_model_at_its_lower_bound_and_the_replay_is_exact(name: str) -> None:
    loaded = load(str(DATA / f"{name}.tflite"))
    plan = get_planner("cpsat", time_limit=30)(loaded.problem)
    assert validate(loaded.problem, plan) == []
    assert plan.status is Status.OPTIMAL and plan.arena == lower_bound(loaded.problem)
    assert loaded.program is not None and loaded.memory is not None
    inputs = {**replay.make_inputs(loaded.program), **loaded.weights}
    reference = replay.reference_run(loaded.program, inputs)
    planned = replay.planned_run(loaded.program, loaded.memory, plan, inputs)
    assert replay.compare(reference, planned) is None


def test_the_problem_is_the_arena_tflite_micro_plans() -> None:
    loaded = load(str(SMALL))
    model = parse_model(SMALL.read_bytes())
    graph = model.subgraphs[0]
    names = tensor_names(graph)
    buffers = {b.id: b for b in loaded.problem.buffers}
    # Constants are the model's; the input, every operator's output and the output are
    # in the arena, at 16-byte sizes and offsets.
    arena = {names[i] for op in graph.operators for i in op.outputs} | {names[graph.inputs[0]]}
    assert set(buffers) == arena
    assert all(b.size % 16 == 0 and b.alignment == 16 for b in buffers.values())
    # The input is live from the first point, the output to the last, as in TFLite Micro.
    last = max(b.end for b in buffers.values())
    assert buffers[names[graph.inputs[0]]].start == 0
    assert buffers[names[graph.outputs[0]]].end == last
    # Weights are the buffers' bytes, read-only.
    conv = graph.operators[0]
    weight = graph.tensors[conv.inputs[1]]
    value = loaded.weights[names[weight.index]]
    assert value.tobytes() == model.buffers[weight.buffer] and not value.flags.writeable


@pytest.mark.parametrize("name", MODELS)
def test_the_planned_model_keeps_every_byte_and_field_and_carries_the_plan(
    name: str, tmp_path: Path
) -> None:
    loaded = load(str(DATA / f"{name}.tflite"))
    plan = get_planner("greedy")(loaded.problem)
    old = (DATA / f"{name}.tflite").read_bytes()
    new = planned_model(loaded, plan)
    shift = len(new) - len(old)
    assert shift % 16 == 0 and new[8 + shift :] == old[8:] and new[4:8] == b"TFL3"
    before, after = parse_model(old), parse_model(new)
    assert after.subgraphs == before.subgraphs
    assert (after.version, after.description) == (before.version, before.description)
    assert after.buffers[:-1] == before.buffers
    assert after.metadata[:-1] == before.metadata
    assert after.metadata[-1] == ("OfflineMemoryAllocation", len(before.buffers))
    graph = before.subgraphs[0]
    offsets = read_offline_plan(after)
    assert offsets == offline_offsets(loaded, plan, tensor_names(graph))
    assert offsets is not None and len(offsets) == len(graph.tensors)
    target = tmp_path / f"{name}.planned.tflite"
    target.write_bytes(new)
    check = check_offline_plan(str(target))
    assert check is not None and check.valid
    assert check.head_bytes == plan.arena and check.left == 0


@st.composite
def plans(draw: st.DrawFn, sizes: dict[str, int]) -> dict[str, int]:
    """Offsets for every buffer: stacked in a drawn order with drawn gaps (valid, since
    nothing is shared), then perhaps one buffer moved onto another, or off 16."""
    names = draw(st.permutations(sorted(sizes)))
    offsets, top = {}, 0
    for name in names:
        top += 16 * draw(st.integers(0, 3))
        offsets[name] = top
        top += sizes[name]
    fault = draw(st.sampled_from(["none", "overlap", "misaligned"]))
    if fault == "overlap" and len(names) > 1:
        offsets[names[-1]] = offsets[names[0]]
    elif fault == "misaligned":
        offsets[names[-1]] += draw(st.integers(1, 15))
    return offsets


SMALL_LOADED = load(str(SMALL))


@given(plans({b.id: b.size for b in SMALL_LOADED.problem.buffers}))
def test_a_random_plan_is_written_exactly_when_it_is_valid(offsets: dict[str, int]) -> None:
    loaded = SMALL_LOADED
    arena = max(offsets[b.id] + b.size for b in loaded.problem.buffers)
    plan = Plan(offsets, arena, Status.FEASIBLE, "drawn", lower_bound(loaded.problem))
    faults = validate(loaded.problem, plan)  # the judge, independent of the writer
    if faults:
        with pytest.raises(InvalidPlan):
            planned_model(loaded, plan)
        return
    written = parse_model(planned_model(loaded, plan))
    names = tensor_names(written.subgraphs[0])
    assert read_offline_plan(written) == offline_offsets(loaded, plan, names)


@given(st.lists(st.integers(-(2**31), 2**31 - 1), min_size=0, max_size=200))
def test_any_offsets_are_read_back_as_written(offsets: list[int]) -> None:
    old = SMALL.read_bytes()
    new = parse_model(with_offline_plan(old, offsets))
    words = new.metadata_bytes("OfflineMemoryAllocation") or b""
    assert struct.unpack_from(f"<{3 + len(offsets)}i", words) == (1, 1, len(offsets), *offsets)
    assert new.subgraphs == parse_model(old).subgraphs


def test_writing_a_plan_again_replaces_the_old_one() -> None:
    old = SMALL.read_bytes()
    count = len(parse_model(old).subgraphs[0].tensors)
    once = with_offline_plan(old, [16] * count)
    twice = parse_model(with_offline_plan(once, [-1] * count))
    assert [name for name, _ in twice.metadata].count("OfflineMemoryAllocation") == 1
    assert read_offline_plan(twice) == (-1,) * count


def test_an_overlapping_offline_plan_is_found_by_check(tmp_path: Path) -> None:
    loaded = SMALL_LOADED
    plan = get_planner("greedy")(loaded.problem)
    names = tensor_names(parse_model(SMALL.read_bytes()).subgraphs[0])
    offsets = [min(0, o) for o in offline_offsets(loaded, plan, names)]
    path = tmp_path / "overlapping.tflite"
    path.write_bytes(with_offline_plan(SMALL.read_bytes(), offsets))
    report = check_offline_plan(str(path))
    assert report is not None and not report.valid
    assert main(["check", str(path)]) == 1


# ---------------------------------------------------------------------------- bad input


def _one_line_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


@pytest.mark.parametrize("cut", [0, 3, 7, 8, 64, 1000, 40000])
def test_a_truncated_model_is_one_line(
    cut: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "cut.tflite"
    path.write_bytes(SMALL.read_bytes()[:cut])
    out = tmp_path / "out.tflite"
    line = _one_line_exit_2(["plan", str(path), "-o", str(out)], capsys)
    assert "cut.tflite" in line and "not a TensorFlow Lite model" in line
    assert not out.exists()


@given(st.integers(0, 47000), st.binary(min_size=1, max_size=8))
def test_damaged_bytes_give_an_input_error_or_a_model(at: int, junk: bytes) -> None:
    data = bytearray(SMALL.read_bytes())
    data[at : at + len(junk)] = junk
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "damaged.tflite"
        path.write_bytes(bytes(data))
        try:
            load(str(path))
        except InputError as error:
            assert str(error).startswith(str(path))


def test_a_file_that_is_not_tflite_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "text.tflite"
    path.write_text("this is no flatbuffer, just text long enough to be read\n")
    assert "no TFL3 file identifier" in _one_line_exit_2(["plan", str(path)], capsys)


def test_a_model_of_several_subgraphs_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    line = _one_line_exit_2(["plan", str(DATA / "while_loop.tflite")], capsys)
    assert "3 subgraphs" in line


def test_a_planned_model_is_refused_by_plan_and_judged_by_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "ds_cnn.planned.tflite"
    assert main(["plan", str(SMALL), "--planner", "greedy", "-o", str(out)]) == 0
    capsys.readouterr()
    assert "use 'optplan check'" in _one_line_exit_2(["plan", str(out)], capsys)
    assert main(["check", str(out), "--json"]) == 0
    assert "no plan in this model" in _one_line_exit_2(["check", str(SMALL)], capsys)


@pytest.mark.parametrize(
    ("extra", "fault"),
    [
        (["--alignment", "8"], "16 bytes"),
        (["--reorder"], "--reorder"),
        (["--bound", "n=4"], "--bound"),
        (["--inplace"], "in place"),
    ],
)
def test_writing_a_planned_model_refuses_what_tflite_micro_cannot_use(
    extra: list[str], fault: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.tflite"
    assert fault in _one_line_exit_2(["plan", str(SMALL), *extra, "-o", str(out)], capsys)
    assert not out.exists()


def test_a_reordered_tflite_is_not_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "reordered.tflite"
    assert "not written" in _one_line_exit_2(["reorder", str(SMALL), "-o", str(out)], capsys)
    assert not out.exists()


def test_tensors_are_named_by_the_first_part_of_their_tflite_names() -> None:
    graph = parse_model(SMALL.read_bytes()).subgraphs[0]
    names = tensor_names(graph)
    assert len(set(names)) == len(names) and all(n.isidentifier() for n in names)
    for op in graph.operators:
        for index in op.outputs:
            raw = graph.tensors[index].name.split(";")[0]
            assert names[index] == "".join(c if c.isalnum() else "_" for c in raw)


def test_a_planned_tflite_is_written_from_a_tflite_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    problem = tmp_path / "p.csv"
    problem.write_text("id,lower,upper,size\n0,0,2,16\n")
    line = _one_line_exit_2(["plan", str(problem), "-o", str(tmp_path / "x.tflite")], capsys)
    assert "from a .tflite model" in line


def test_a_dtype_numpy_has_not_is_named(tmp_path: Path) -> None:
    data = bytearray(SMALL.read_bytes())
    model = parse_model(bytes(data))
    # Find the input tensor's type byte through the table reader, and make it STRING.
    from optplan.frontends.tflite_format import root

    graph = root(bytes(data)).tables(2)[0]
    tensor = graph.tables(0)[model.subgraphs[0].inputs[0]]
    at = tensor.field_pos(1)
    assert at is not None
    data[at] = 5
    path = tmp_path / "string.tflite"
    path.write_bytes(bytes(data))
    with pytest.raises(InputError, match="type STRING"):
        load(str(path))


def test_weights_are_real_values_and_inputs_are_copied_into_the_arena() -> None:
    loaded = SMALL_LOADED
    assert loaded.program is not None
    fn = loaded.program.main
    first = fn.body.blocks[0].bindings[0]
    assert first.value.op == "tflite.input"  # type: ignore[union-attr]
    assert fn.num_input == 1 and all(
        np.asarray(v).dtype in (np.int8, np.int32) for v in loaded.weights.values()
    )


@pytest.mark.parametrize("name", MODELS)
def test_litert_runs_the_planned_model_as_the_original(name: str) -> None:
    """LiteRT (TFLite's full runtime, which verifies the flatbuffer) reads the planned
    model and computes the same outputs: the plan's metadata changes nothing else."""
    litert = pytest.importorskip(
        "ai_edge_litert.interpreter",
        reason="ai-edge-litert is not installed (pip install -e '.[litert]')",
    )
    path = DATA / f"{name}.tflite"
    loaded = load(str(path))
    planned = planned_model(loaded, get_planner("greedy")(loaded.problem))
    found = []
    for data in (path.read_bytes(), planned):
        interpreter = litert.Interpreter(model_content=data)
        interpreter.allocate_tensors()
        for k, detail in enumerate(interpreter.get_input_details()):
            rng = np.random.default_rng(k)
            value = rng.integers(-128, 128, detail["shape"]).astype(detail["dtype"])
            interpreter.set_tensor(detail["index"], value)
        interpreter.invoke()
        details = interpreter.get_output_details()
        found.append([interpreter.get_tensor(d["index"]).tobytes() for d in details])
    assert found[0] == found[1]
