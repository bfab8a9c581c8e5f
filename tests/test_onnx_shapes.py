"""Static shapes of ONNX models that compute their own shapes (TorchScript exports).

A model built here the way torch's TorchScript exporter builds masks and position ids:
`Shape -> Gather -> Unsqueeze -> Concat -> Equal -> Where -> Expand` (the Where picking
between a Concat and a ConstantOfShape, as TorchScript writes an Expand target),
`Range`, `Slice`, `Cast`, `Squeeze` and arithmetic over the input shape, which
`onnx.shape_inference` leaves symbolic. For any static input shape (hypothesis), every
tensor gets a static type equal to the shape onnxruntime (or, without it, the reference
run) computes, and the planned replay is bit for bit. Data-dependent ops are refused by name.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper

from optplan.analysis.liveness import build_memory
from optplan.errors import InputError
from optplan.frontends.onnx import read_onnx
from optplan.planners import get_planner
from optplan.problem.plan import validate
from optplan.runtime import replay as executor


def _const(name: str, values: list[int]) -> onnx.TensorProto:
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def mask_model(shape: list[int | str]) -> onnx.ModelProto:
    """x: (batch, seq) float -> an additive causal-like mask expanded to (batch, 1, seq, seq)
    plus position ids, all sized from Shape(x)."""
    n = helper.make_node
    nodes = [
        n("Shape", ["x"], ["shape"]),
        n("Gather", ["shape", "one"], ["seq"], axis=0),
        n("Gather", ["shape", "zero"], ["batch"], axis=0),
        n("Unsqueeze", ["seq", "axes0"], ["seq_1d"]),
        n("Unsqueeze", ["batch", "axes0"], ["batch_1d"]),
        n("Concat", ["seq_1d", "seq_1d"], ["square"], axis=0),
        n(
            "ConstantOfShape",
            ["square"],
            ["ones"],
            value=helper.make_tensor("v", TensorProto.FLOAT, [1], [1.0]),
        ),
        n("Cast", ["ones"], ["ones_i"], to=TensorProto.INT64),
        n("Equal", ["ones_i", "one"], ["eq"]),
        n("Where", ["eq", "minus", "zero_f"], ["mask2d"]),
        n("Mul", ["seq", "two"], ["seq2"]),
        n("Sub", ["seq2", "seq"], ["seq_again"]),
        n("Range", ["zero", "seq_again", "one"], ["positions"]),
        n("Unsqueeze", ["positions", "axes0"], ["positions_2d"]),
        n("Concat", ["batch_1d", "one_1d", "seq_1d", "seq_1d"], ["target"], axis=0),
        # TorchScript's Expand target: -1 entries replaced by 1 through Where, which
        # onnx.shape_inference does not evaluate.
        n(
            "ConstantOfShape",
            ["four_1d"],
            ["ones4"],
            value=helper.make_tensor("v", TensorProto.INT64, [1], [1]),
        ),
        n("Mul", ["ones4", "minus_one"], ["neg4"]),
        n("Equal", ["target", "neg4"], ["is_neg"]),
        n("Where", ["is_neg", "ones4", "target"], ["target_ones"]),
        n("Expand", ["mask2d", "target_ones"], ["mask4d"]),
        n("Slice", ["shape", "one_1d", "two_1d"], ["tail"]),
        n("Squeeze", ["tail", "axes0"], ["tail_scalar"]),
        n("Reshape", ["x", "flat"], ["x_flat"]),
        n("Cast", ["positions_2d"], ["positions_f"], to=TensorProto.FLOAT),
        n("Add", ["x", "positions_f"], ["x_pos"]),
        n("Relu", ["mask4d"], ["mask_out"]),
        # Shape with a negative start, and Size: (-1, seq) and a flat view of x.
        n("Shape", ["x"], ["last"], start=-1),
        n("Concat", ["flat", "last"], ["by_rows"], axis=0),
        n("Reshape", ["x", "by_rows"], ["x_rows"]),
        n("Size", ["x"], ["count"]),
        n("Reshape", ["count", "flat"], ["count_1d"]),
        n("ConstantOfShape", ["count_1d"], ["zeros"]),
        n("Add", ["x_flat", "zeros"], ["x_flat_zero"]),
    ]
    inits = [
        numpy_helper.from_array(np.array(0, np.int64), "zero"),
        numpy_helper.from_array(np.array(1, np.int64), "one"),
        numpy_helper.from_array(np.array(2, np.int64), "two"),
        _const("axes0", [0]),
        _const("one_1d", [1]),
        _const("two_1d", [2]),
        _const("flat", [-1]),
        _const("four_1d", [4]),
        numpy_helper.from_array(np.array(-1, np.int64), "minus_one"),
        numpy_helper.from_array(np.array(-1e4, np.float32), "minus"),
        numpy_helper.from_array(np.array(0.0, np.float32), "zero_f"),
    ]
    graph = helper.make_graph(
        nodes,
        "masks",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [
            helper.make_tensor_value_info("mask_out", TensorProto.FLOAT, ["b", 1, "s", "t"]),
            helper.make_tensor_value_info("x_pos", TensorProto.FLOAT, ["b", "s"]),
            helper.make_tensor_value_info("x_flat", TensorProto.FLOAT, ["bs"]),
            helper.make_tensor_value_info("tail_scalar", TensorProto.INT64, []),
            helper.make_tensor_value_info("x_rows", TensorProto.FLOAT, ["r", "c"]),
            helper.make_tensor_value_info("x_flat_zero", TensorProto.FLOAT, ["bs"]),
        ],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _save(model: onnx.ModelProto, tmp_path: Path, name: str = "m") -> str:
    path = tmp_path / f"{name}.onnx"
    onnx.save(model, path)
    return str(path)


def _outputs(path: str, x: np.ndarray) -> list[np.ndarray]:
    try:
        import onnxruntime as ort
    except ImportError:
        model = read_onnx(path, {"batch": x.shape[0], "seq": x.shape[1]})
        return list(executor.reference_run(model.program, {"x": x, **model.weights}).outputs)
    return ort.InferenceSession(path).run(None, {"x": x})


def test_shape_inference_alone_leaves_the_mask_symbolic(tmp_path: Path) -> None:
    """The premise: onnx.shape_inference does not propagate this chain."""
    inferred = onnx.shape_inference.infer_shapes(mask_model([2, 5]), data_prop=True)
    types = {v.name: v.type.tensor_type for v in inferred.graph.value_info}
    dims = types["mask4d"].shape.dim if "mask4d" in types else []
    assert not dims or not all(d.HasField("dim_value") for d in dims)


@given(st.integers(1, 3), st.integers(1, 12))
@settings(max_examples=12, deadline=None)
def test_every_tensor_gets_the_shape_the_runtime_computes(
    tmp_path_factory: pytest.TempPathFactory, batch: int, seq: int
) -> None:
    tmp_path = tmp_path_factory.mktemp("shapes")
    path = _save(mask_model([batch, seq]), tmp_path)
    model = read_onnx(path, {})
    out_types = model.program.main.ret_type.fields  # type: ignore[union-attr]
    x = np.arange(batch * seq, dtype=np.float32).reshape(batch, seq)
    expected = _outputs(path, x)
    assert [t.shape for t in out_types] == [e.shape for e in expected]
    memory = build_memory(model.program)
    plan = get_planner("greedy")(memory.problem)
    assert validate(memory.problem, plan) == []
    inputs = {"x": x, **model.weights}
    reference = executor.reference_run(model.program, inputs)
    replay = executor.planned_run(model.program, memory, plan, inputs)
    assert reference.failure is None and executor.compare(reference, replay) is None
    for got, want in zip(reference.outputs, expected):
        assert got.tobytes() == np.asarray(want).tobytes()


def test_dim_fixes_a_symbolic_input_and_the_chain_follows(tmp_path: Path) -> None:
    path = _save(mask_model(["batch", "seq"]), tmp_path)
    with pytest.raises(InputError, match="--dim batch=VALUE"):
        read_onnx(path, {})
    model = read_onnx(path, {"batch": 2, "seq": 7})
    assert model.program.main.ret_type.fields[0].shape == (2, 1, 7, 7)  # type: ignore[union-attr]


def _nonzero_model(declare: bool) -> onnx.ModelProto:
    nodes = [
        helper.make_node("NonZero", ["x"], ["where"]),
        helper.make_node("Cast", ["where"], ["y"], to=TensorProto.FLOAT),
    ]
    graph = helper.make_graph(
        nodes,
        "nonzero",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["r", "c"])],
    )
    if declare:
        graph.value_info.append(helper.make_tensor_value_info("where", TensorProto.INT64, [1, 4]))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_a_data_dependent_op_is_refused_by_name(tmp_path: Path) -> None:
    path = _save(_nonzero_model(declare=False), tmp_path)
    with pytest.raises(InputError, match=r"\(NonZero\): the shape of its output 'where' depends"):
        read_onnx(path, {})


def test_the_model_s_own_value_info_fills_the_gaps(tmp_path: Path) -> None:
    """A static value_info is the model's word on a shape inference cannot reach."""
    path = _save(_nonzero_model(declare=True), tmp_path)
    model = read_onnx(path, {})
    assert model.program.main.ret_type.shape == (1, 4)  # type: ignore[union-attr]


def test_a_shape_computed_from_data_is_refused_naming_the_node(tmp_path: Path) -> None:
    """Reshape to a shape read from a data input: not foldable."""
    nodes = [helper.make_node("Reshape", ["x", "s"], ["y"])]
    graph = helper.make_graph(
        nodes,
        "reshape",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [4]),
            helper.make_tensor_value_info("s", TensorProto.INT64, [2]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["r", "c"])],
    )
    path = _save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path)
    with pytest.raises(
        InputError, match=r"\(Reshape\): .* computed from 's', which depends on data"
    ):
        read_onnx(path, {})


def test_onnxruntime_symbolic_inference_is_a_fallback_when_installed() -> None:
    pytest.importorskip("onnxruntime")
    pytest.importorskip("sympy")
    from optplan.frontends.onnx_shapes import _symbolic

    nodes = [helper.make_node("Relu", ["x"], ["h"]), helper.make_node("Neg", ["h"], ["y"])]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["a", "b"])],
    )
    found = _symbolic(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    assert found["h"] == (TensorProto.FLOAT, (2, 3))


def test_a_topk_whose_k_is_computed_from_data_is_refused(tmp_path: Path) -> None:
    nodes = [
        helper.make_node("ReduceMax", ["x"], ["top"], keepdims=1),
        helper.make_node("Cast", ["top"], ["k"], to=TensorProto.INT64),
        helper.make_node("TopK", ["x", "k"], ["values", "indices"]),
    ]
    graph = helper.make_graph(
        nodes,
        "topk",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("values", TensorProto.FLOAT, ["k"])],
    )
    path = _save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path)
    with pytest.raises(InputError, match=r"\(TopK\): the shape of its output 'values' depends"):
        read_onnx(path, {})
    # With a constant k the same op plans.
    graph.node[1].CopyFrom(helper.make_node("Constant", [], ["k"], value_ints=[2]))
    path = _save(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path, "c"
    )
    assert read_onnx(path, {}).program.main.ret_type.shape == (2,)  # type: ignore[union-attr]
