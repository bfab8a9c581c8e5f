"""Reductions over axes (`sum`, `mean`, `max`, ..., `argmax`) and normalisation
(softmax, log-softmax, layer norm, RMS norm).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from optplan.ir import Call, TensorType, Type
from optplan.ops import kernels
from optplan.ops.core import (
    Infer,
    Kernel,
    OpDef,
    array,
    fail,
    float_attr,
    int_param,
    ints,
    normal_axis,
    param,
    register,
    tensor_arg,
)

# ---------------------------------------------------------------------------- reductions


def _reduced_axes(call: Call, ndim: int) -> tuple[int, ...]:
    axis = param(call, "axis", 1)
    if axis is None:
        return tuple(range(ndim))
    return tuple(sorted({normal_axis(call, a, ndim) for a in ints(axis, "axis", call)}))


def _reduction_rule(result_dtype: str | None) -> Infer:
    def infer(call: Call, arg_types: Sequence[Type | None]) -> Type:
        x = tensor_arg(call, arg_types, 0)
        axes = _reduced_axes(call, len(x.shape))
        keep = bool(call.attr("keepdims", False))
        shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape) if keep or i not in axes)
        return TensorType(shape, result_dtype or x.dtype)

    return infer


def _reduction(name: str, fn: Callable[..., np.ndarray], result_dtype: str | None = None) -> None:
    infer = _reduction_rule(result_dtype)

    def kernel(call: Call, args: Sequence[object]) -> object:
        x = array(args, 0)
        axes = _reduced_axes(call, x.ndim)
        out = fn(x, axis=axes, keepdims=bool(call.attr("keepdims", False)))
        return np.asarray(out).astype(result_dtype or x.dtype, copy=False)

    register(OpDef(name, infer, kernel))


def _arg_reduce(fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """argmax/argmin over one axis (or all), as NumPy takes them."""

    def reduce(x: np.ndarray, axis: tuple[int, ...], keepdims: bool) -> np.ndarray:
        if len(axis) == 1:
            return fn(x, axis=axis[0], keepdims=keepdims)
        flat = fn(x.reshape(-1))
        return np.reshape(flat, (1,) * x.ndim) if keepdims else np.asarray(flat)

    return reduce


_reduction("sum", np.sum)
_reduction("mean", np.mean)
_reduction("max", np.max)
_reduction("min", np.min)
_reduction("prod", np.prod)
_reduction("variance", np.var)
_reduction("std", np.std)
_reduction("argmax", _arg_reduce(np.argmax), "int64")
_reduction("argmin", _arg_reduce(np.argmin), "int64")

# ---------------------------------------------------------------------------- normalisation


def _axis_kernel(fn: Callable[[np.ndarray, int], np.ndarray]) -> Kernel:
    def kernel(call: Call, args: Sequence[object]) -> object:
        x = array(args, 0)
        return fn(x, normal_axis(call, int_param(call, "axis", default=-1), x.ndim))

    return kernel


def _infer_softmax(call: Call, arg_types: Sequence[Type | None]) -> Type:
    x = tensor_arg(call, arg_types, 0)
    normal_axis(call, int_param(call, "axis", default=-1), len(x.shape))
    return x


def _norm_axes(call: Call, x: TensorType) -> tuple[int, ...]:
    return tuple(
        normal_axis(call, a, len(x.shape)) for a in ints(call.attr("axes", (-1,)), "axes", call)
    )


def _check_norm_operand(call: Call, x: TensorType, operand: TensorType, what: str) -> None:
    expected = tuple(x.shape[a] for a in _norm_axes(call, x))
    if operand.shape != expected:
        raise fail(
            call,
            f"{call.op} of {x.shape} over axes {_norm_axes(call, x)}: {what} has shape "
            f"{operand.shape}, expected {expected}",
        )


def _infer_layer_norm(call: Call, arg_types: Sequence[Type | None]) -> Type:
    x = tensor_arg(call, arg_types, 0)
    _check_norm_operand(call, x, tensor_arg(call, arg_types, 1), "gamma")
    _check_norm_operand(call, x, tensor_arg(call, arg_types, 2), "beta")
    return x


def _layer_norm_kernel(call: Call, args: Sequence[object]) -> object:
    x = array(args, 0)
    axes = _norm_axes(call, TensorType(x.shape, x.dtype.name))
    epsilon = float_attr(call, "epsilon", 1e-5)
    center, scale = bool(call.attr("center", True)), bool(call.attr("scale", True))
    return kernels.layer_norm(x, array(args, 1), array(args, 2), axes, epsilon, center, scale)


def _infer_rms_norm(call: Call, arg_types: Sequence[Type | None]) -> Type:
    x = tensor_arg(call, arg_types, 0)
    _check_norm_operand(call, x, tensor_arg(call, arg_types, 1), "weight")
    return x


def _rms_norm_kernel(call: Call, args: Sequence[object]) -> object:
    x = array(args, 0)
    axes = _norm_axes(call, TensorType(x.shape, x.dtype.name))
    return kernels.rms_norm(x, array(args, 1), axes, float_attr(call, "epsilon", 1e-5))


register(OpDef("nn.softmax", _infer_softmax, _axis_kernel(kernels.softmax)))
register(OpDef("nn.log_softmax", _infer_softmax, _axis_kernel(kernels.log_softmax)))
register(OpDef("nn.layer_norm", _infer_layer_norm, _layer_norm_kernel))
register(OpDef("nn.rms_norm", _infer_rms_norm, _rms_norm_kernel))
