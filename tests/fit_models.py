"""Models the tests of `optplan fit` build themselves, as a user would bring them: a CNN
in TVMScript, and an encoder, a decoder step with a KV cache and a small U-Net built
with onnx.helper. Each writer saves its model under `directory` and returns the path.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

CNN = """\
# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 1, 32, 16), dtype="float32"), w1: R.Tensor((16, 1, 3, 3), dtype="float32"), w2: R.Tensor((16, 16, 3, 3), dtype="float32"), fc: R.Tensor((16, 12), dtype="float32")) -> R.Tensor((1, 12), dtype="float32"):
        R.func_attr({"num_input": 1})
        with R.dataflow():
            c1: R.Tensor((1, 16, 32, 16), dtype="float32") = R.nn.conv2d(x, w1, strides=[1, 1], padding=[1, 1, 1, 1], dilation=[1, 1], groups=1, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype=None)
            r1: R.Tensor((1, 16, 32, 16), dtype="float32") = R.nn.relu(c1)
            c2: R.Tensor((1, 16, 32, 16), dtype="float32") = R.nn.conv2d(r1, w2, strides=[1, 1], padding=[1, 1, 1, 1], dilation=[1, 1], groups=1, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype=None)
            r2: R.Tensor((1, 16, 32, 16), dtype="float32") = R.nn.relu(c2)
            s: R.Tensor((1, 16, 32, 16), dtype="float32") = R.add(r2, r1)
            pooled: R.Tensor((1, 16), dtype="float32") = R.mean(s, axis=[2, 3], keepdims=False)
            gv: R.Tensor((1, 12), dtype="float32") = R.matmul(pooled, fc, out_dtype=None)
            R.output(gv)
        return gv
"""

FLOAT = TensorProto.FLOAT


class _Weights:
    def __init__(self) -> None:
        self.tensors: list[onnx.TensorProto] = []
        self.rng = np.random.default_rng(0)

    def add(self, name: str, shape: tuple[int, ...]) -> str:
        array = (self.rng.standard_normal(shape) * 0.1).astype(np.float32)
        self.tensors.append(numpy_helper.from_array(array, name))
        return name

    def ints(self, name: str, values: list[int]) -> str:
        self.tensors.append(numpy_helper.from_array(np.array(values, dtype=np.int64), name))
        return name


def _save(directory: Path, name: str, nodes: list, inputs: list, outputs: list, w: _Weights) -> str:  # type: ignore[type-arg]
    graph = helper.make_graph(nodes, name, inputs, outputs, w.tensors)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path = directory / f"{name}.onnx"
    onnx.save(model, str(path))
    return str(path)


def _tensor(name: str, shape: list[int]) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, FLOAT, shape)


def write_cnn(directory: Path) -> str:
    path = directory / "kws_cnn.py"
    path.write_text(CNN)
    return str(path)


def _attention(nodes: list, w: _Weights, x: str, tag: str, seq: int, dim: int) -> str:  # type: ignore[type-arg]
    """One head of self-attention over x (seq x dim), then a ReLU feed-forward, both with
    residuals; the name of the block's output."""
    for name in ("q", "k", "v"):
        w.add(f"{tag}w{name}", (dim, dim))
        nodes.append(helper.make_node("MatMul", [x, f"{tag}w{name}"], [f"{tag}{name}"]))
    nodes += [
        helper.make_node("Transpose", [f"{tag}k"], [f"{tag}kt"], perm=[1, 0]),
        helper.make_node("MatMul", [f"{tag}q", f"{tag}kt"], [f"{tag}scores"]),
        helper.make_node("Softmax", [f"{tag}scores"], [f"{tag}probs"], axis=-1),
        helper.make_node("MatMul", [f"{tag}probs", f"{tag}v"], [f"{tag}ctx"]),
        helper.make_node("Add", [f"{tag}ctx", x], [f"{tag}res1"]),
    ]
    w.add(f"{tag}up", (dim, 4 * dim))
    w.add(f"{tag}down", (4 * dim, dim))
    nodes += [
        helper.make_node("MatMul", [f"{tag}res1", f"{tag}up"], [f"{tag}h"]),
        helper.make_node("Relu", [f"{tag}h"], [f"{tag}hr"]),
        helper.make_node("MatMul", [f"{tag}hr", f"{tag}down"], [f"{tag}ffn"]),
        helper.make_node("Add", [f"{tag}ffn", f"{tag}res1"], [f"{tag}out"]),
    ]
    return f"{tag}out"


def write_encoder(directory: Path) -> str:
    seq, dim, w, nodes = 64, 64, _Weights(), []
    out = _attention(nodes, w, "x", "l0_", seq, dim)
    nodes.append(helper.make_node("Identity", [out], ["y"]))
    return _save(
        directory, "tiny_encoder", nodes, [_tensor("x", [seq, dim])], [_tensor("y", [seq, dim])], w
    )


def write_decoder(directory: Path) -> str:
    """A decoding step of 16 tokens: their keys appended to the cache of keys, held
    transposed (Concat on axis 1), their values to the cache of values; the queries
    against every cached key; the new caches returned beside the output (so not planned)."""
    new, past, dim, w, nodes = 16, 112, 64, _Weights(), []
    for name in ("q", "k", "v"):
        w.add(f"w{name}", (dim, dim))
        nodes.append(helper.make_node("MatMul", ["x", f"w{name}"], [name]))
    w.add("up", (dim, 4 * dim))
    w.add("down", (4 * dim, dim))
    nodes += [
        helper.make_node("Transpose", ["k"], ["kt"], perm=[1, 0]),
        helper.make_node("Concat", ["past_kt", "kt"], ["present_kt"], axis=1),
        helper.make_node("Concat", ["past_v", "v"], ["present_v"], axis=0),
        helper.make_node("MatMul", ["q", "present_kt"], ["scores"]),
        helper.make_node("Softmax", ["scores"], ["probs"], axis=-1),
        helper.make_node("MatMul", ["probs", "present_v"], ["ctx"]),
        helper.make_node("Add", ["ctx", "x"], ["res"]),
        helper.make_node("MatMul", ["res", "up"], ["h"]),
        helper.make_node("Relu", ["h"], ["hr"]),
        helper.make_node("MatMul", ["hr", "down"], ["ffn"]),
        helper.make_node("Add", ["ffn", "res"], ["y"]),
    ]
    inputs = [
        _tensor("x", [new, dim]),
        _tensor("past_kt", [dim, past]),
        _tensor("past_v", [past, dim]),
    ]
    outputs = [
        _tensor("y", [new, dim]),
        _tensor("present_kt", [dim, past + new]),
        _tensor("present_v", [past + new, dim]),
    ]
    return _save(directory, "kv_decoder", nodes, inputs, outputs, w)


def write_unet(directory: Path) -> str:
    """Two levels: conv, pool, a wide conv, upsample, concat with the skip, conv."""
    w, nodes, c = _Weights(), [], 8
    w.add("e1", (c, 1, 3, 3))
    w.add("m1", (8 * c, c, 3, 3))
    w.add("m2", (c, 8 * c, 1, 1))
    w.add("d1", (c, 2 * c, 3, 3))
    w.add("out", (1, c, 1, 1))
    w.tensors.append(numpy_helper.from_array(np.array([1, 1, 2, 2], dtype=np.float32), "scales"))
    nodes += [
        helper.make_node("Conv", ["x", "e1"], ["enc"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["enc"], ["enc_r"]),
        helper.make_node("MaxPool", ["enc_r"], ["pool"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["pool", "m1"], ["mid"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["mid"], ["mid_r"]),
        helper.make_node("Conv", ["mid_r", "m2"], ["mid_o"]),
        helper.make_node("Resize", ["mid_o", "", "scales"], ["up"], mode="nearest"),
        helper.make_node("Concat", ["up", "enc_r"], ["cat"], axis=1),
        helper.make_node("Conv", ["cat", "d1"], ["dec"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["dec"], ["dec_r"]),
        helper.make_node("Conv", ["dec_r", "out"], ["y"]),
    ]
    inputs, outputs = [_tensor("x", [1, 1, 32, 32])], [_tensor("y", [1, 1, 32, 32])]
    return _save(directory, "unet", nodes, inputs, outputs, w)
