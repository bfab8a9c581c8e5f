"""Elementwise ops (arithmetic, comparisons, unary maths, activations, `astype`,
`where`), each with a NumPy kernel and, for ufuncs, destination passing; and `matmul`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from optplan.ir import Call, TensorType, Type
from optplan.ops import kernels
from optplan.ops.core import (
    Infer,
    Into,
    OpDef,
    array,
    broadcast,
    dtype_name,
    element_count,
    fail,
    float_attr,
    infer_unary,
    param,
    register,
    same_dtype,
    tensor_arg,
)

# ---------------------------------------------------------------------------- elementwise


def _infer_predicate(call: Call, arg_types: Sequence[Type | None]) -> Type:
    return TensorType(tensor_arg(call, arg_types, 0).shape, "bool")


def _binary_rule(result_dtype: str | None) -> Infer:
    def infer(call: Call, arg_types: Sequence[Type | None]) -> Type:
        a, b = tensor_arg(call, arg_types, 0), tensor_arg(call, arg_types, 1)
        dtype = same_dtype(call, (a, b))
        return TensorType(broadcast(call, (a.shape, b.shape)), result_dtype or dtype)

    return infer


def _elementwise(
    name: str,
    infer: Infer,
    fn: Callable[..., object],
    *,
    inplace: bool = True,
    ufunc: object = None,
) -> None:
    into = _ufunc_into(ufunc) if isinstance(ufunc, np.ufunc) else None
    register(
        OpDef(
            name, infer, lambda call, args: fn(*args), inplace=inplace, elementwise=True, into=into
        )
    )


def _ufunc_into(ufunc: np.ufunc) -> Into:
    """Destination passing for a ufunc whose loop for these operands yields `out`'s dtype
    (so the bytes are those of the plain call); otherwise it declines."""

    def into(call: Call, args: Sequence[object], out: np.ndarray) -> bool:
        arrays = [np.asarray(a) for a in args]
        if any(a.dtype != arrays[0].dtype for a in arrays):
            return False
        try:
            loop = ufunc.resolve_dtypes(tuple(a.dtype for a in arrays) + (None,))
        except TypeError:
            return False
        if loop[-1] != out.dtype:
            return False
        ufunc(*arrays, out=out)
        return True

    return into


_BINARY: dict[str, Callable[..., object]] = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "divide": kernels.divide,
    "floor_divide": np.floor_divide,
    "floor_mod": np.mod,
    "power": np.power,
    "maximum": np.maximum,
    "minimum": np.minimum,
}
_COMPARE: dict[str, Callable[..., object]] = {
    "equal": np.equal,
    "not_equal": np.not_equal,
    "less": np.less,
    "less_equal": np.less_equal,
    "greater": np.greater,
    "greater_equal": np.greater_equal,
    "logical_and": np.logical_and,
    "logical_or": np.logical_or,
}
_UNARY: dict[str, Callable[..., object]] = {
    "negative": np.negative,
    "abs": np.abs,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: (1 / np.sqrt(x)).astype(x.dtype),
    "exp": np.exp,
    "log": np.log,
    "tanh": np.tanh,
    "sin": np.sin,
    "cos": np.cos,
    "floor": np.floor,
    "ceil": np.ceil,
    "round": np.round,
    "sign": np.sign,
    "square": np.square,
    "erf": lambda x: kernels.erf(x).astype(x.dtype),
    "sigmoid": kernels.sigmoid,
    "nn.relu": kernels.relu,
    "nn.gelu": kernels.gelu,
    "nn.gelu_tanh": kernels.gelu_tanh,
    "nn.silu": kernels.silu,
}
_PREDICATES: dict[str, Callable[..., object]] = {
    "isnan": np.isnan,
    "isinf": np.isinf,
    "isfinite": np.isfinite,
}


def _register_elementwise() -> None:
    for name, fn in _BINARY.items():
        # Integer division truncates unlike np.divide, so only float division passes `out`.
        ufunc = np.true_divide if name == "divide" else fn
        _elementwise(name, _binary_rule(None), fn, ufunc=ufunc)
    for name, fn in _COMPARE.items():
        # A bool result has another byte size than its operands: never in place.
        _elementwise(name, _binary_rule("bool"), fn, inplace=False, ufunc=fn)
    for name, fn in _UNARY.items():
        _elementwise(name, infer_unary, kernels.same_dtype(fn), ufunc=fn)
    for name, fn in _PREDICATES.items():
        _elementwise(name, _infer_predicate, fn, inplace=False, ufunc=fn)
    _elementwise("logical_not", infer_unary, np.logical_not)
    register(
        OpDef(
            "nn.leakyrelu",
            infer_unary,
            lambda call, args: _leakyrelu(array(args, 0), float_attr(call, "alpha", 0.01)),
            inplace=True,
            elementwise=True,
        )
    )
    register(OpDef("clip", infer_unary, _clip_kernel, inplace=True, elementwise=True))
    register(OpDef("astype", _infer_astype, _astype_kernel, elementwise=True))
    register(
        OpDef(
            "where",
            _infer_where,
            lambda call, args: np.where(array(args, 0), array(args, 1), array(args, 2)),
            elementwise=True,
        )
    )


def _leakyrelu(x: np.ndarray, alpha: float) -> np.ndarray:
    return np.where(x >= 0, x, x * np.asarray(alpha, x.dtype))


def _clip_kernel(call: Call, args: Sequence[object]) -> object:
    x = array(args, 0)
    bounds = []
    for name, position in (("min", 1), ("max", 2)):
        value = param(call, name, position)
        bounds.append(None if value is None else np.asarray(value, dtype=x.dtype))
    return np.clip(x, bounds[0], bounds[1]).astype(x.dtype)


def _infer_astype(call: Call, arg_types: Sequence[Type | None]) -> Type:
    x = tensor_arg(call, arg_types, 0)
    dtype = param(call, "dtype", 1)
    if not isinstance(dtype, str):
        raise fail(call, f"astype needs a dtype, got {dtype!r}")
    return TensorType(x.shape, dtype_name(call, dtype))


def _astype_kernel(call: Call, args: Sequence[object]) -> object:
    x = array(args, 0)
    return x.astype(dtype_name(call, str(param(call, "dtype", 1))))


def _infer_where(call: Call, arg_types: Sequence[Type | None]) -> Type:
    cond, x, y = (tensor_arg(call, arg_types, i) for i in range(3))
    if cond.dtype != "bool":
        raise fail(call, f"where: the condition is {cond.dtype}, not bool")
    dtype = same_dtype(call, (x, y))
    return TensorType(broadcast(call, (cond.shape, x.shape, y.shape)), dtype)


_register_elementwise()
# ---------------------------------------------------------------------------- matmul


def _infer_matmul(call: Call, arg_types: Sequence[Type | None]) -> Type:
    a, b = tensor_arg(call, arg_types, 0), tensor_arg(call, arg_types, 1)
    if not a.shape or not b.shape:
        raise fail(call, f"matmul of {a.shape} and {b.shape}: operands must not be scalars")
    dtype = same_dtype(call, (a, b))
    # A 1-D operand is a row (left) or a column (right) that is dropped from the result.
    left = a.shape if len(a.shape) > 1 else (1,) + a.shape
    right = b.shape if len(b.shape) > 1 else b.shape + (1,)
    if left[-1] != right[-2]:
        raise fail(call, f"matmul of {a.shape} and {b.shape}: inner dimensions differ")
    batch = broadcast(call, (left[:-2], right[:-2]))
    shape = batch + left[-2:-1] * (len(a.shape) > 1) + right[-1:] * (len(b.shape) > 1)
    out_dtype = call.attr("out_dtype")
    return TensorType(shape, dtype_name(call, str(out_dtype)) if out_dtype else dtype)


def _matmul_kernel(call: Call, args: Sequence[object]) -> object:
    a, b = array(args, 0), array(args, 1)
    # A wider out_dtype is the accumulation type (fp16 inputs, fp32 sums); float16 is
    # computed in float32 and rounded, the same way in every run.
    return kernels.matmul(a, b, str(call.attr("out_dtype") or a.dtype))


def _matmul_flops(call: Call, arg_types: Sequence[Type | None], result: Type) -> int:
    """A multiply and an add per result element and inner index."""
    a = tensor_arg(call, arg_types, 0)
    assert isinstance(result, TensorType)
    return 2 * element_count(result.shape) * a.shape[-1]


register(OpDef("matmul", _infer_matmul, _matmul_kernel, flops=_matmul_flops))
