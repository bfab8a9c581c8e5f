"""The op table's registry: which Relax ops `import optplan.ops` registers, in which order,
and the names other modules import from `optplan.ops`.

Anything that walks `OPS` sees the ops in registration order, so splitting the table into
modules must keep that order. ONNX ops (`optplan.frontends.onnx`) are registered after these,
when that module is imported, so the Relax ops are always the registry's first entries.
"""

from __future__ import annotations

import optplan.ops
from optplan.ops import OPS

RELAX_OPS = [
    "add", "subtract", "multiply", "divide", "floor_divide", "floor_mod", "power", "maximum",
    "minimum", "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
    "logical_and", "logical_or", "negative", "abs", "sqrt", "rsqrt", "exp", "log", "tanh",
    "sin", "cos", "floor", "ceil", "round", "sign", "square", "erf", "sigmoid", "nn.relu",
    "nn.gelu", "nn.gelu_tanh", "nn.silu", "isnan", "isinf", "isfinite", "logical_not",
    "nn.leakyrelu", "clip", "astype", "where", "matmul", "reshape", "match_cast",
    "expand_dims", "squeeze", "flatten", "permute_dims", "sum", "mean", "max", "min", "prod",
    "variance", "std", "argmax", "argmin", "nn.softmax", "nn.log_softmax", "nn.layer_norm",
    "nn.rms_norm", "nn.conv2d", "nn.conv2d_transpose", "nn.max_pool2d", "nn.avg_pool2d",
    "nn.adaptive_avg_pool2d", "concat", "split", "take", "strided_slice", "repeat", "tile",
    "triu", "tril", "full", "zeros", "ones", "full_like", "zeros_like", "ones_like",
    "broadcast_to", "nn.pad", "nn.batch_norm", "nn.dropout", "cumsum", "call_tir",
    "call_kernel", "call_tir_inplace", "builtin.alloc_tensor", "memory.alloc_storage",
    "memory.alloc_tensor", "memory.kill_tensor", "memory.kill_storage", "vm.kill_object",
    "call_packed", "call_builtin_with_ctx", "tensor_to_shape",
]  # fmt: skip

# Every name a module of optplan, its tests or its benchmarks imports from `optplan.ops`.
IMPORTED = (
    "OPS", "OpDef", "Runs", "evaluate", "fail", "has_effect", "inplace_outputs", "lookup",
    "overwritten_args", "register",
)  # fmt: skip


def test_relax_ops_are_registered_in_their_order() -> None:
    assert list(OPS)[: len(RELAX_OPS)] == RELAX_OPS


def test_replay_facts_are_set_after_registration() -> None:
    assert all(OPS[name].needs_positive for name in ("sqrt", "rsqrt", "log"))
    keeps_sign = ("add", "multiply", "astype", "reshape", "expand_dims", "squeeze", "flatten")
    assert all(OPS[name].keeps_sign for name in keeps_sign)


def test_the_package_exports_what_importers_use() -> None:
    for name in IMPORTED + tuple(optplan.ops.__all__):
        assert hasattr(optplan.ops, name), name
