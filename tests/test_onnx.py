"""ONNX models in: the Program, its Problem, plans of it, and replays of it.

The models are built here with onnx.helper (a conv-bn-relu residual block, an MLP of Gemms,
an attention block, a split-and-concat), so nothing binary is committed. Every plan ends
with `validate`; every replay is compared with the reference run byte for byte; where
onnxruntime is installed, the reference run is compared with it too.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnx")
import onnx
from onnx import TensorProto, helper, numpy_helper

from optplan.analysis.liveness import build_memory
from optplan.errors import InputError
from optplan.frontends import load
from optplan.frontends.onnx import OnnxModel, read_onnx
from optplan.ir import Call, TensorType, TupleGetItem, TupleType
from optplan.planners import get_planner
from optplan.problem.plan import validate

try:
    from optplan.runtime import replay as executor
except ImportError:  # the executor is optional for the loading and planning tests
    executor = None  # type: ignore[assignment]

needs_executor = pytest.mark.skipif(
    executor is None, reason="optplan.runtime.replay is not available"
)

FLOAT = TensorProto.FLOAT
RNG_SEED = 7

# ---------------------------------------------------------------------------- model builders


class Weights:
    """Initializers drawn from one seeded generator, named in order."""

    def __init__(self) -> None:
        self.rng = np.random.default_rng(RNG_SEED)
        self.tensors: list[TensorProto] = []

    def add(self, name: str, shape: tuple[int, ...], scale: float = 0.2) -> str:
        array = (self.rng.standard_normal(shape) * scale).astype(np.float32)
        self.tensors.append(numpy_helper.from_array(array, name))
        return name

    def positive(self, name: str, shape: tuple[int, ...]) -> str:
        array = self.rng.uniform(0.5, 1.5, shape).astype(np.float32)
        self.tensors.append(numpy_helper.from_array(array, name))
        return name

    def ints(self, name: str, values: list[int]) -> str:
        self.tensors.append(numpy_helper.from_array(np.array(values, dtype=np.int64), name))
        return name


def _model(nodes, inputs, outputs, weights: Weights, opset: int = 17) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "test", inputs, outputs, weights.tensors)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _tensor(name: str, shape: Sequence[int | str]) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, FLOAT, shape)


def conv_bn_relu_block() -> onnx.ModelProto:
    """x -> conv-bn-relu -> conv-bn -> + x -> relu: ResNet's basic block."""
    w, channels = Weights(), 8
    nodes = []

    def conv_bn(src: str, tag: str) -> str:
        w.add(f"{tag}.w", (channels, channels, 3, 3))
        conv = helper.make_node("Conv", [src, f"{tag}.w"], [f"{tag}.conv"], pads=[1, 1, 1, 1])
        nodes.append(conv)
        for part in ("scale", "bias", "mean"):
            w.add(f"{tag}.{part}", (channels,))
        w.positive(f"{tag}.var", (channels,))
        bn_inputs = [f"{tag}.conv", *(f"{tag}.{p}" for p in ("scale", "bias", "mean", "var"))]
        nodes.append(helper.make_node("BatchNormalization", bn_inputs, [f"{tag}.bn"], epsilon=1e-5))
        return f"{tag}.bn"

    first = conv_bn("x", "layer1")
    nodes.append(helper.make_node("Relu", [first], ["relu1"]))
    second = conv_bn("relu1", "layer2")
    nodes.append(helper.make_node("Add", [second, "x"], ["sum"]))
    nodes.append(helper.make_node("Relu", ["sum"], ["y"]))
    shape = [1, channels, 12, 12]
    return _model(nodes, [_tensor("x", shape)], [_tensor("y", shape)], w)


def gemm_mlp() -> onnx.ModelProto:
    """A batch of vectors through Gemm-Relu-Gemm-Relu-Gemm; the batch is symbolic."""
    w, widths = Weights(), [32, 64, 48, 10]
    nodes, src = [], "input.1"
    for i, (fan_in, fan_out) in enumerate(itertools.pairwise(widths)):
        w.add(f"fc{i}.weight", (fan_out, fan_in))
        w.add(f"fc{i}.bias", (fan_out,))
        out = f"/fc{i}/Gemm_output_0"
        gemm_inputs = [src, f"fc{i}.weight", f"fc{i}.bias"]
        nodes.append(helper.make_node("Gemm", gemm_inputs, [out], transB=1))
        src = out
        if i < len(widths) - 2:
            nodes.append(helper.make_node("Relu", [out], [f"/relu{i}/Relu_output_0"]))
            src = f"/relu{i}/Relu_output_0"
    nodes.append(helper.make_node("Identity", [src], ["logits"]))
    return _model(nodes, [_tensor("input.1", ["batch", 32])], [_tensor("logits", ["batch", 10])], w)


def attention_block() -> onnx.ModelProto:
    """Single-layer multi-head self-attention with a residual connection."""
    w, seq, dim, heads = Weights(), 16, 32, 4
    head_dim = dim // heads
    w.ints("heads_shape", [1, seq, heads, head_dim])
    w.ints("model_shape", [1, seq, dim])
    scale = numpy_helper.from_array(np.array(head_dim**-0.5, dtype=np.float32), "scale")
    w.tensors.append(scale)
    nodes = []
    for name in ("q", "k", "v"):
        w.add(f"w{name}", (dim, dim))
        nodes += [
            helper.make_node("MatMul", ["x", f"w{name}"], [f"{name}_proj"]),
            helper.make_node("Reshape", [f"{name}_proj", "heads_shape"], [f"{name}_heads"]),
        ]
    nodes += [
        helper.make_node("Transpose", ["q_heads"], ["q_t"], perm=[0, 2, 1, 3]),
        helper.make_node("Transpose", ["k_heads"], ["k_t"], perm=[0, 2, 3, 1]),
        helper.make_node("Transpose", ["v_heads"], ["v_t"], perm=[0, 2, 1, 3]),
        helper.make_node("MatMul", ["q_t", "k_t"], ["scores"]),
        helper.make_node("Mul", ["scores", "scale"], ["scaled"]),
        helper.make_node("Softmax", ["scaled"], ["probs"], axis=-1),
        helper.make_node("MatMul", ["probs", "v_t"], ["context"]),
        helper.make_node("Transpose", ["context"], ["context_t"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["context_t", "model_shape"], ["merged"]),
        helper.make_node("MatMul", ["merged", w.add("wo", (dim, dim))], ["out_proj"]),
        helper.make_node("Add", ["out_proj", "x"], ["y"]),
    ]
    shape = [1, seq, dim]
    return _model(nodes, [_tensor("x", shape)], [_tensor("y", shape)], w)


def split_concat() -> onnx.ModelProto:
    """Split into three, a different op on each part, Concat back, and two outputs."""
    w = Weights()
    nodes = [
        helper.make_node("Split", ["x", w.ints("parts", [4, 4, 4])], ["a", "b", "c"], axis=1),
        helper.make_node("Relu", ["a"], ["a1"]),
        helper.make_node("Sigmoid", ["b"], ["b1"]),
        helper.make_node("Tanh", ["c"], ["c1"]),
        helper.make_node("Concat", ["c1", "a1", "b1"], ["joined"], axis=1),
        helper.make_node("Unsqueeze", ["joined", w.ints("axes", [0])], ["lifted"]),
        helper.make_node("Squeeze", ["lifted", "axes"], ["flat"]),
        helper.make_node("Mul", ["flat", "flat"], ["y"]),
        helper.make_node("ReduceSum", ["y", "axes"], ["total"], keepdims=1),
    ]
    outputs = [_tensor("y", [2, 12, 5]), _tensor("total", [1, 12, 5])]
    return _model(nodes, [_tensor("x", [2, 12, 5])], outputs, w)


def function_ops() -> onnx.ModelProto:
    """Gelu, which ONNX defines as a function of its input type, and HardSwish and Mish,
    which it defines by bodies of other ops."""
    nodes = [
        helper.make_node("Gelu", ["x"], ["g"], approximate="tanh"),
        helper.make_node("HardSwish", ["g"], ["h"]),
        helper.make_node("Mish", ["h"], ["y"]),
    ]
    shape = [2, 6, 4, 4]
    return _model(nodes, [_tensor("x", shape)], [_tensor("y", shape)], Weights(), opset=20)


MODELS: dict[str, tuple[Callable[[], onnx.ModelProto], dict[str, int]]] = {
    "conv_bn_relu": (conv_bn_relu_block, {}),
    "gemm_mlp": (gemm_mlp, {"batch": 4}),
    "attention": (attention_block, {}),
    "split_concat": (split_concat, {}),
    "function_ops": (function_ops, {}),
}


def _save(model: onnx.ModelProto, directory: Path, name: str) -> str:
    onnx.checker.check_model(model)
    path = directory / f"{name}.onnx"
    onnx.save(model, str(path))
    return str(path)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("onnx")
    for name, (build, _) in MODELS.items():
        _save(build(), directory, name)
    return directory


def _read(model_dir: Path, name: str) -> tuple[str, OnnxModel]:
    path = str(model_dir / f"{name}.onnx")
    return path, read_onnx(path, MODELS[name][1])


# ---------------------------------------------------------------------------- the program


@pytest.mark.parametrize("name", sorted(MODELS))
def test_inputs_then_weights_as_parameters(model_dir: Path, name: str) -> None:
    path, model = _read(model_dir, name)
    fn = model.program.main
    graph = onnx.load(path).graph
    assert fn.num_input == len(graph.input)
    weight_names = [p.var.name for p in fn.params[fn.num_input :]]
    assert sorted(weight_names) == sorted(model.weights)
    for param in fn.params[fn.num_input :]:
        assert isinstance(param.type, TensorType)
        assert model.weights[param.var.name].shape == param.type.shape


@pytest.mark.parametrize("name", sorted(MODELS))
def test_weights_and_inputs_are_never_planned(model_dir: Path, name: str) -> None:
    _, model = _read(model_dir, name)
    problem = build_memory(model.program).problem
    planned = {b.id for b in problem.buffers}
    assert planned and not planned & {p.var.name for p in model.program.main.params}


def test_weights_saved_as_external_data(tmp_path: Path) -> None:
    """Large models keep their weights in a file beside the model; both are found."""
    model = gemm_mlp()
    expected = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    path = tmp_path / "external.onnx"
    onnx.save_model(model, str(path), save_as_external_data=True, location="external.data",
                    size_threshold=0)  # fmt: skip
    assert (tmp_path / "external.data").is_file()
    model = read_onnx(str(path), {"batch": 3})
    program, weights = model.program, model.weights
    assert sorted(weights) == sorted(p.var.name for p in program.main.params[1:])
    np.testing.assert_array_equal(weights["fc0_weight"], expected["fc0.weight"])


def test_names_become_unique_identifiers(model_dir: Path) -> None:
    _, model = _read(model_dir, "gemm_mlp")
    assert model.names["input.1"] == "input_1"
    assert model.names["/fc0/Gemm_output_0"] == "_fc0_Gemm_output_0"
    assert all(n.isidentifier() for n in model.names.values())
    assert len(set(model.names.values())) == len(model.names)


def test_symbolic_dimension_fixed_from_dims(model_dir: Path) -> None:
    path, _ = _read(model_dir, "gemm_mlp")
    small = read_onnx(path, {"batch": 2}, with_weights=False).program
    large = read_onnx(path, {"batch": 16}, with_weights=False).program
    assert small.main.params[0].type == TensorType((2, 32), "float32")
    assert large.main.ret_type == TensorType((16, 10), "float32")


def test_views_share_their_source_buffer(model_dir: Path) -> None:
    _, model = _read(model_dir, "attention")
    memory = build_memory(model.program)
    planned = {b.id for b in memory.problem.buffers}
    for view, source in (("q_heads", "q_proj"), ("merged", "context_t")):
        assert view not in planned
        assert memory.placements[view] == memory.placements[source]


def test_split_binds_a_tuple_and_its_items(model_dir: Path) -> None:
    _, model = _read(model_dir, "split_concat")
    bindings = {b.var.name: b for b in model.program.main.body.blocks[0].bindings}
    split = bindings["split"]
    assert isinstance(split.value, Call) and split.value.op == "onnx.Split"
    assert isinstance(split.type, TupleType) and len(split.type.fields) == 3
    items = [bindings[n].value for n in ("a", "b", "c")]
    assert items == [TupleGetItem(split.var, i) for i in range(3)]
    assert split.value.attr("out_ty") == split.type


def test_attributes_are_sorted_plain_values(model_dir: Path) -> None:
    _, model = _read(model_dir, "conv_bn_relu")
    conv = model.program.main.body.blocks[0].bindings[0].value
    assert isinstance(conv, Call) and conv.op == "onnx.Conv"
    assert [k for k, _ in conv.attrs] == sorted(k for k, _ in conv.attrs)
    assert conv.attr("pads") == (1, 1, 1, 1)
    assert conv.attr("onnx_opset") == 17


@needs_executor
def test_optional_inputs_tensor_attributes_and_constants(tmp_path: Path) -> None:
    """Clip without `min`, ConstantOfShape's tensor attribute, a Constant node's value."""
    w = Weights()
    value = helper.make_tensor("value", FLOAT, [1], [0.25])
    nodes = [
        helper.make_node("Constant", [], ["top"], value=helper.make_tensor("v", FLOAT, [], [0.5])),
        helper.make_node("Clip", ["x", "", "top"], ["clipped"]),
        helper.make_node("ConstantOfShape", [w.ints("shape", [3, 4])], ["quarter"], value=value),
        helper.make_node("Add", ["clipped", "quarter"], ["y"]),
    ]
    path = _save(_model(nodes, [_tensor("x", [3, 4])], [_tensor("y", [3, 4])], w), tmp_path, "m")
    model = read_onnx(path, {})
    fn = model.program.main
    assert [p.var.name for p in fn.params] == ["x", "shape", "top"]
    assert float(model.weights["top"]) == 0.5
    calls = {b.var.name: b.value for b in fn.body.blocks[0].bindings}
    assert calls["clipped"].attr("onnx_inputs") == (0, 2)  # type: ignore[union-attr]
    assert calls["quarter"].attr("value")[1] == (0.25,)  # type: ignore[index, union-attr]
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    expected = np.minimum(x, 0.5) + 0.25
    np.testing.assert_array_equal(_reference_outputs(model, {"x": x})[0], expected)


def test_op_table_entries() -> None:
    """Every standard op is registered; views are the five reshaping ops; an op that
    onnx.reference cannot run has no kernel, so the replay uses the mixing kernel."""
    from optplan.ops import lookup

    views = {n for n in ("Reshape", "Squeeze", "Unsqueeze", "Flatten", "Identity", "Transpose")
             if lookup(f"onnx.{n}").view}  # type: ignore[union-attr]  # fmt: skip
    assert views == {"Reshape", "Squeeze", "Unsqueeze", "Flatten", "Identity"}
    assert lookup("onnx.Conv").kernel is not None  # type: ignore[union-attr]
    assert lookup("onnx.GlobalLpPool").kernel is None  # type: ignore[union-attr]
    relu, matmul = lookup("onnx.Relu"), lookup("onnx.MatMul")
    assert relu is not None and matmul is not None and relu.inplace and not matmul.inplace


# ---------------------------------------------------------------------------- plans


PLANNERS = [("greedy", {}), ("cpsat", {"time_limit": 5})]


@pytest.mark.parametrize("planner,options", PLANNERS, ids=[p for p, _ in PLANNERS])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_plans_are_valid(model_dir: Path, name: str, planner: str, options: dict) -> None:
    path = str(model_dir / f"{name}.onnx")
    loaded = load(path, dims=MODELS[name][1])
    plan = get_planner(planner, **options)(loaded.problem)
    assert plan.status.has_plan
    assert validate(loaded.problem, plan) == []
    assert plan.arena >= plan.lower_bound


# ---------------------------------------------------------------------------- replay


def _inputs(model: OnnxModel) -> dict[str, np.ndarray]:
    return {**executor.make_inputs(model.program, seed=3), **model.weights}


def _reference_outputs(model: OnnxModel, inputs: dict[str, np.ndarray]) -> tuple[np.ndarray, ...]:
    run = executor.reference_run(model.program, {**_inputs(model), **inputs})
    assert run.failure is None, run.failure
    return run.outputs


@needs_executor
@pytest.mark.parametrize("planner,options", PLANNERS, ids=[p for p, _ in PLANNERS])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_planned_replay_is_bit_for_bit(
    model_dir: Path, name: str, planner: str, options: dict
) -> None:
    _, model = _read(model_dir, name)
    memory = build_memory(model.program)
    plan = get_planner(planner, **options)(memory.problem)
    assert validate(memory.problem, plan) == []
    inputs = _inputs(model)
    reference = executor.reference_run(model.program, inputs)
    replay = executor.planned_run(model.program, memory, plan, inputs)
    assert reference.failure is None and replay.failure is None
    assert executor.compare(reference, replay) is None


@needs_executor
def test_replay_catches_an_overlapping_plan(model_dir: Path) -> None:
    """Everything at offset 0: the poisoned, shared bytes must change some value."""
    _, model = _read(model_dir, "conv_bn_relu")
    memory = build_memory(model.program)
    plan = get_planner("greedy")(memory.problem)
    broken = replace(plan, offsets={name: 0 for name in plan.offsets}, planner="zero")
    assert validate(memory.problem, broken) != []
    inputs = _inputs(model)
    reference = executor.reference_run(model.program, inputs)
    replay = executor.planned_run(model.program, memory, broken, inputs)
    assert replay.failure is not None or executor.compare(reference, replay) is not None


@needs_executor
def test_kernels_are_deterministic(model_dir: Path) -> None:
    _, model = _read(model_dir, "attention")
    inputs = _inputs(model)
    first = executor.reference_run(model.program, inputs).outputs
    second = executor.reference_run(model.program, inputs).outputs
    assert [a.tobytes() for a in first] == [b.tobytes() for b in second]


# ---------------------------------------------------------------------------- onnxruntime


@needs_executor
@pytest.mark.parametrize("name", sorted(MODELS))
def test_reference_run_matches_onnxruntime(model_dir: Path, name: str) -> None:
    ort = pytest.importorskip("onnxruntime")
    path, model = _read(model_dir, name)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    inputs = _inputs(model)
    feeds = {
        onnx_name: inputs[model.names[onnx_name]]
        for onnx_name in (i.name for i in session.get_inputs())
    }
    expected = session.run(None, feeds)
    actual = executor.reference_run(model.program, inputs).outputs
    assert len(actual) == len(expected)
    for got, want in zip(actual, expected):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------------------- errors


def test_unknown_dimension_names_tensor_and_fix(model_dir: Path) -> None:
    path = str(model_dir / "gemm_mlp.onnx")
    with pytest.raises(InputError) as caught:
        read_onnx(path, {}, with_weights=False)
    assert str(caught.value) == (
        f"{path}: tensor 'input.1' has unknown dimension 'batch'; fix it with --dim batch=VALUE, "
        "or plan at a bound with --bound batch=VALUE"
    )


def test_dimension_that_no_input_has(model_dir: Path) -> None:
    with pytest.raises(InputError, match="no graph input has a dimension named 'seq'"):
        read_onnx(str(model_dir / "gemm_mlp.onnx"), {"batch": 2, "seq": 8})


def test_broken_file_is_one_input_error(tmp_path: Path) -> None:
    path = tmp_path / "broken.onnx"
    path.write_bytes(np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8).tobytes())
    with pytest.raises(InputError) as caught:
        read_onnx(str(path), {})
    message = str(caught.value)
    assert message.startswith(f"{path}: ") and "\n" not in message


def test_unknown_op_fails_at_load(tmp_path: Path) -> None:
    nodes = [helper.make_node("NoSuchOp", ["x"], ["y"])]
    model = _model(nodes, [_tensor("x", [2])], [_tensor("y", [2])], Weights())
    path = tmp_path / "unknown.onnx"
    onnx.save(model, str(path))  # unchecked on purpose
    with pytest.raises(InputError) as caught:
        load(str(path))
    assert (
        str(caught.value) == f"{path}: node 'y' (NoSuchOp): the onnx package does not know this op"
    )


def test_command_line_reports_bad_models_with_status_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from optplan.cli import main

    path = tmp_path / "broken.onnx"
    path.write_bytes(b"\x08\x07 not a model")
    assert main(["plan", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and str(path) in err


@needs_executor
@pytest.mark.parametrize("vocab", [1, 3, 5])
def test_onnx_gather_indices_and_sqrt_operands_get_the_op_facts(tmp_path: Path, vocab: int) -> None:
    """Drawn inputs follow the op table for ONNX ops as for Relax's: Gather's indices stay
    inside the axis they index, and what reaches a Sqrt through an Add is positive."""
    weights = Weights()
    table = weights.add("table", (vocab, 4))
    nodes = [
        helper.make_node("Gather", [table, "ids"], ["rows"], axis=0),
        helper.make_node("Add", ["x", "x"], ["twice"]),
        helper.make_node("Sqrt", ["twice"], ["root"]),
        helper.make_node("Mul", ["rows", "root"], ["out"]),
    ]
    inputs = [helper.make_tensor_value_info("ids", TensorProto.INT64, [16]), _tensor("x", [16, 4])]
    model = _model(nodes, inputs, [_tensor("out", [16, 4])], weights)
    path = tmp_path / "gather.onnx"
    onnx.save(model, str(path))
    loaded = load(str(path))
    assert loaded.program is not None and loaded.memory is not None
    drawn = executor.make_inputs(loaded.program)
    assert drawn["ids"].min() >= 0 and drawn["ids"].max() < vocab
    assert drawn["x"].min() > 0
    run_inputs = {**drawn, **loaded.weights}
    reference = executor.reference_run(loaded.program, run_inputs)
    assert reference.failure is None and not np.isnan(reference.outputs[0]).any()
    plan = get_planner("greedy")(loaded.problem)
    planned = executor.planned_run(loaded.program, loaded.memory, plan, run_inputs)
    assert executor.compare(reference, planned) is None


@needs_executor
def test_an_onnx_model_made_in_place_replays(capsys: pytest.CaptureFixture[str]) -> None:
    """`use_inplace_calls` marks ONNX nodes with optplan's own `inplace_indices`, which is
    no attribute of the ONNX op: the node's kernel must not be handed it."""
    from optplan.cli import main

    path = Path(__file__).resolve().parent / "data" / "zoo" / "bert_script.onnx"
    if not path.is_file():
        pytest.skip("tests/data/zoo holds no models")
    assert main(["run", str(path), "--inplace", "--planner", "greedy"]) == 0
    assert "bit-for-bit" in capsys.readouterr().out
