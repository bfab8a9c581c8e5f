"""Creation (`full`, `zeros`, `ones` and their `*_like`) and more tensor ops:
`broadcast_to`, `nn.pad`, `nn.batch_norm`, `nn.dropout` (inference forms), `cumsum`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from optplan.ir import Call, TensorType, TupleType, Type
from optplan.ops.core import (
    Kernel,
    OpDef,
    array,
    broadcast,
    dtype_name,
    element_count,
    fail,
    float_attr,
    int_param,
    ints,
    normal_axis,
    optional_int,
    param,
    register,
    shape_operand,
    shape_value,
    tensor_arg,
)

# ---------------------------------------------------------------------------- creation


def _creation_dtype(call: Call, position: int | None, default: str | None) -> str:
    dtype = param(call, "dtype", position, None) or default
    if dtype is None:
        raise fail(call, f"{call.op} needs a dtype")
    return dtype_name(call, str(dtype))


def _infer_full(call: Call, arg_types: Sequence[Type | None]) -> Type:
    fill = tensor_arg(call, arg_types, 1)
    if fill.shape:
        raise fail(call, f"full: the fill value must be a scalar, not shape {fill.shape}")
    return TensorType(shape_operand(call, 0), _creation_dtype(call, 2, fill.dtype))


def _full_kernel(call: Call, args: Sequence[object]) -> object:
    fill = array(args, 1)
    return np.full(shape_value(args, 0), fill, dtype=_creation_dtype(call, 2, fill.dtype.name))


def _constant_rule(call: Call, arg_types: Sequence[Type | None]) -> Type:
    return TensorType(shape_operand(call, 0), _creation_dtype(call, 1, None))


def _infer_like(call: Call, arg_types: Sequence[Type | None]) -> Type:
    x = tensor_arg(call, arg_types, 0)
    return TensorType(x.shape, _creation_dtype(call, None, x.dtype))


def _infer_full_like(call: Call, arg_types: Sequence[Type | None]) -> Type:
    x = tensor_arg(call, arg_types, 0)
    tensor_arg(call, arg_types, 1)
    return TensorType(x.shape, _creation_dtype(call, None, x.dtype))


def _filled(value: int) -> Kernel:
    def kernel(call: Call, args: Sequence[object]) -> object:
        return np.full(shape_value(args, 0), value, dtype=_creation_dtype(call, 1, None))

    return kernel


def _filled_like(value: int | None) -> Kernel:
    def kernel(call: Call, args: Sequence[object]) -> object:
        x = array(args, 0)
        fill = array(args, 1) if value is None else value
        return np.full(x.shape, fill, dtype=_creation_dtype(call, None, x.dtype.name))

    return kernel


register(OpDef("full", _infer_full, _full_kernel))
register(OpDef("zeros", _constant_rule, _filled(0)))
register(OpDef("ones", _constant_rule, _filled(1)))
register(OpDef("full_like", _infer_full_like, _filled_like(None)))
register(OpDef("zeros_like", _infer_like, _filled_like(0)))
register(OpDef("ones_like", _infer_like, _filled_like(1)))

# ---------------------------------------------------------------------------- more tensor ops


def _infer_broadcast_to(call: Call, arg_types: Sequence[Type | None]) -> Type:
    x = tensor_arg(call, arg_types, 0)
    target = shape_operand(call, 1)
    if broadcast(call, (x.shape, target)) != target:
        raise fail(call, f"broadcast_to of {x.shape} to {target}: shapes do not broadcast")
    return TensorType(target, x.dtype)


def _pad_width(call: Call, ndim: int) -> list[tuple[int, int]]:
    """TVM's `pad_width`: all the befores, then all the afters, one per axis."""
    width = ints(param(call, "pad_width", 1), "pad_width", call)
    if len(width) != 2 * ndim or min(width) < 0:
        raise fail(
            call, f"nn.pad: pad_width needs {2 * ndim} non-negative values, got {list(width)}"
        )
    return list(zip(width[:ndim], width[ndim:]))


def _infer_pad(call: Call, arg_types: Sequence[Type | None]) -> Type:
    x = tensor_arg(call, arg_types, 0)
    mode = call.attr("pad_mode", "constant")
    if mode not in ("constant", "edge", "reflect"):
        raise fail(call, f"nn.pad: pad_mode {mode!r} is not supported")
    shape = tuple(d + b + a for d, (b, a) in zip(x.shape, _pad_width(call, len(x.shape))))
    return TensorType(shape, x.dtype)


def _pad_kernel(call: Call, args: Sequence[object]) -> object:
    x = array(args, 0)
    width = _pad_width(call, x.ndim)
    mode = call.attr("pad_mode", "constant")
    if mode == "edge":
        return np.pad(x, width, mode="edge")
    if mode == "reflect":
        return np.pad(x, width, mode="reflect")
    # The fill is an attribute, a literal, or (in newer printings) a scalar tensor operand.
    value = (
        args[2]
        if len(args) > 2 and isinstance(args[2], np.ndarray)
        else param(call, "pad_value", 2, 0)
    )
    return np.pad(x, width, constant_values=np.asarray(value, dtype=x.dtype))


def _infer_batch_norm(call: Call, arg_types: Sequence[Type | None]) -> Type:
    x = tensor_arg(call, arg_types, 0)
    axis = normal_axis(call, int_param(call, "axis", default=1), len(x.shape))
    stats = [tensor_arg(call, arg_types, i) for i in range(1, 5)]
    for name, stat in zip(("gamma", "beta", "moving_mean", "moving_var"), stats):
        if stat.shape != (x.shape[axis],):
            raise fail(
                call,
                f"nn.batch_norm of {x.shape}: {name} has shape {stat.shape}, expected ({x.shape[axis]},)",
            )
    return TupleType((x, stats[2], stats[3]))


def _batch_norm_kernel(call: Call, args: Sequence[object]) -> object:
    """Inference form: normalise by the moving statistics, which pass through."""
    x, gamma, beta, mean, var = (np.asarray(a) for a in args[:5])
    axis = normal_axis(call, int_param(call, "axis", default=1), x.ndim)
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]
    epsilon = float_attr(call, "epsilon", 1e-5)
    out = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + np.asarray(epsilon, x.dtype))
    if call.attr("scale", True):
        out = out * gamma.reshape(shape)
    if call.attr("center", True):
        out = out + beta.reshape(shape)
    return (out.astype(x.dtype), mean.copy(), var.copy())


def _infer_dropout(call: Call, arg_types: Sequence[Type | None]) -> Type:
    x = tensor_arg(call, arg_types, 0)
    return TupleType((x, x))


def _infer_cumsum(call: Call, arg_types: Sequence[Type | None]) -> Type:
    x = tensor_arg(call, arg_types, 0)
    axis = optional_int(call, "axis", 1)
    dtype = dtype_name(call, str(call.attr("dtype") or x.dtype))
    if axis is None:
        return TensorType((element_count(x.shape),), dtype)
    normal_axis(call, axis, len(x.shape))
    return TensorType(x.shape, dtype)


def _cumsum_kernel(call: Call, args: Sequence[object]) -> object:
    x = array(args, 0)
    axis = optional_int(call, "axis", 1)
    dtype = str(call.attr("dtype") or x.dtype)
    # With no axis, TVM sums over the flattened tensor.
    flat = x.reshape(-1) if axis is None else x
    total = np.cumsum(flat, axis=0 if axis is None else axis, dtype=dtype)
    if call.attr("exclusive", False):
        total = total - flat.astype(dtype)
    return total


register(
    OpDef(
        "broadcast_to",
        _infer_broadcast_to,
        lambda call, args: np.array(np.broadcast_to(array(args, 0), shape_value(args, 1))),
    )
)
register(OpDef("nn.pad", _infer_pad, _pad_kernel))
register(OpDef("nn.batch_norm", _infer_batch_norm, _batch_norm_kernel))
# Inference: dropout passes its input through and keeps every element (the mask is ones).
register(
    OpDef(
        "nn.dropout", _infer_dropout, lambda call, args: (np.array(args[0]), np.ones_like(args[0]))
    )
)
register(OpDef("cumsum", _infer_cumsum, _cumsum_kernel))
