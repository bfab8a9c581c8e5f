"""Joining and indexing: `concat`, `split`, `take`, `strided_slice`, `repeat`, `tile`,
`triu`, `tril`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import numpy as np

from optplan.ir import Call, TensorType, TupleType, Type
from optplan.ops import kernels
from optplan.ops.core import (
    OpDef,
    array,
    element_count,
    fail,
    infer_unary,
    int_param,
    ints,
    normal_axis,
    optional_int,
    param,
    register,
    same_dtype,
    tensor_arg,
)

# ---------------------------------------------------------------------------- joining and indexing


def _tuple_arg(call: Call, arg_types: Sequence[Type | None]) -> list[TensorType]:
    if not arg_types or not isinstance(arg_types[0], TupleType):
        raise fail(call, f"{call.op} takes a tuple of tensors, as in R.concat((a, b), axis=0)")
    fields = arg_types[0].fields
    if not fields or not all(isinstance(f, TensorType) for f in fields):
        raise fail(call, f"{call.op} takes a non-empty tuple of tensors")
    return [f for f in fields if isinstance(f, TensorType)]


def _infer_concat(call: Call, arg_types: Sequence[Type | None]) -> Type:
    parts = _tuple_arg(call, arg_types)
    dtype = same_dtype(call, parts)
    ndim = len(parts[0].shape)
    axis = normal_axis(call, int_param(call, "axis", 1, 0), ndim)
    for part in parts:
        rest = [d for i, d in enumerate(part.shape) if i != axis]
        if len(part.shape) != ndim or rest != [
            d for i, d in enumerate(parts[0].shape) if i != axis
        ]:
            listed = ", ".join(str(p.shape) for p in parts)
            raise fail(call, f"concat of {listed} on axis {axis}: other dimensions differ")
    shape = list(parts[0].shape)
    shape[axis] = sum(p.shape[axis] for p in parts)
    return TensorType(tuple(shape), dtype)


def _concat_kernel(call: Call, args: Sequence[object]) -> object:
    parts = args[0]
    assert isinstance(parts, tuple)
    axis = int_param(call, "axis", 1, 0)
    return np.concatenate(parts, axis=axis)


def _split_points(call: Call, size: int) -> list[int]:
    """Where `split` cuts an axis of `size`: n sections of ceil(size / n) (the last one
    shorter), or the given indices."""
    spec = param(call, "indices_or_sections", 1)
    if isinstance(spec, int) and not isinstance(spec, bool):
        if spec < 1:
            raise fail(call, f"split into {spec} sections")
        step = -(-size // spec)
        return [min(step * i, size) for i in range(1, spec)]
    return list(ints(spec, "indices_or_sections", call))


def _infer_split(call: Call, arg_types: Sequence[Type | None]) -> Type:
    x = tensor_arg(call, arg_types, 0)
    axis = normal_axis(call, int_param(call, "axis", 2, 0), len(x.shape))
    bounds = [0] + _split_points(call, x.shape[axis]) + [x.shape[axis]]
    fields = []
    for low, high in itertools.pairwise(bounds):
        low, high = min(max(low, 0), x.shape[axis]), min(max(high, 0), x.shape[axis])
        shape = list(x.shape)
        shape[axis] = max(high - low, 0)
        fields.append(TensorType(tuple(shape), x.dtype))
    return TupleType(tuple(fields))


def _split_kernel(call: Call, args: Sequence[object]) -> object:
    x = array(args, 0)
    axis = normal_axis(call, int_param(call, "axis", 2, 0), x.ndim)
    return kernels.split(x, _split_points(call, x.shape[axis]), axis)


def _infer_take(call: Call, arg_types: Sequence[Type | None]) -> Type:
    x, indices = tensor_arg(call, arg_types, 0), tensor_arg(call, arg_types, 1)
    if not indices.dtype.startswith(("int", "uint")):
        raise fail(call, f"take: indices are {indices.dtype}, not integers")
    axis = optional_int(call, "axis", 2)
    if axis is None:
        return TensorType(indices.shape, x.dtype)
    a = normal_axis(call, axis, len(x.shape))
    return TensorType(x.shape[:a] + indices.shape + x.shape[a + 1 :], x.dtype)


def _take_kernel(call: Call, args: Sequence[object]) -> object:
    mode = str(call.attr("mode", "fast"))
    return kernels.take(array(args, 0), array(args, 1), optional_int(call, "axis", 2), mode)


def _slice_spec(call: Call, ndim: int) -> tuple[list[int], list[int], list[int], list[int]]:
    axes = [normal_axis(call, a, ndim) for a in ints(param(call, "axes", 1), "axes", call)]
    begin = list(ints(param(call, "begin", 2), "begin", call))
    end = list(ints(param(call, "end", 3), "end", call))
    strides_attr = param(call, "strides", 4)
    strides = (
        list(ints(strides_attr, "strides", call)) if strides_attr is not None else [1] * len(axes)
    )
    if not len(axes) == len(begin) == len(end) == len(strides) or 0 in strides:
        raise fail(call, "strided_slice: axes, begin, end and strides must match, strides nonzero")
    return axes, begin, end, strides


def _infer_strided_slice(call: Call, arg_types: Sequence[Type | None]) -> Type:
    x = tensor_arg(call, arg_types, 0)
    shape = list(x.shape)
    for axis, b, e, s in zip(*_slice_spec(call, len(x.shape))):
        shape[axis] = len(range(*slice(b, e, s).indices(x.shape[axis])))
    return TensorType(tuple(shape), x.dtype)


def _strided_slice_kernel(call: Call, args: Sequence[object]) -> object:
    x = array(args, 0)
    return kernels.strided_slice(x, *_slice_spec(call, x.ndim))


def _infer_repeat(call: Call, arg_types: Sequence[Type | None]) -> Type:
    x = tensor_arg(call, arg_types, 0)
    repeats = int_param(call, "repeats", 1, 1)
    axis = optional_int(call, "axis", 2)
    if axis is None:
        return TensorType((element_count(x.shape) * repeats,), x.dtype)
    a = normal_axis(call, axis, len(x.shape))
    shape = list(x.shape)
    shape[a] *= repeats
    return TensorType(tuple(shape), x.dtype)


def _repeat_kernel(call: Call, args: Sequence[object]) -> object:
    repeats = int_param(call, "repeats", 1, 1)
    return np.repeat(array(args, 0), repeats, axis=optional_int(call, "axis", 2))


def _infer_tile(call: Call, arg_types: Sequence[Type | None]) -> Type:
    x = tensor_arg(call, arg_types, 0)
    reps = ints(param(call, "repeats", 1), "repeats", call)
    ndim = max(len(x.shape), len(reps))
    shape = (1,) * (ndim - len(x.shape)) + x.shape
    reps = (1,) * (ndim - len(reps)) + reps
    return TensorType(tuple(d * r for d, r in zip(shape, reps)), x.dtype)


def _triangle(name: str, fn: Callable[[np.ndarray, int], np.ndarray]) -> None:
    def kernel(call: Call, args: Sequence[object]) -> object:
        return fn(array(args, 0), int_param(call, "k", 1, 0))

    register(OpDef(name, infer_unary, kernel))


register(OpDef("concat", _infer_concat, _concat_kernel))
register(OpDef("split", _infer_split, _split_kernel))


def _take_size(call: Call, data: TensorType) -> int:
    axis = call.attr("axis")
    return data.shape[axis] if isinstance(axis, int) else element_count(data.shape)


register(OpDef("take", _infer_take, _take_kernel, indexed_size=_take_size))
register(OpDef("strided_slice", _infer_strided_slice, _strided_slice_kernel))
register(OpDef("repeat", _infer_repeat, _repeat_kernel))
register(
    OpDef(
        "tile",
        _infer_tile,
        lambda call, args: np.tile(
            array(args, 0), ints(param(call, "repeats", 1), "repeats", call)
        ),
    )
)
_triangle("triu", kernels.triu)
_triangle("tril", kernels.tril)
