"""Shapes and views: `reshape`, `match_cast`, `expand_dims`, `squeeze` and `flatten`,
which are views of their input's bytes, and `permute_dims`, which copies.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from optplan.ir import Call, ShapeType, TensorType, Type
from optplan.ops import kernels
from optplan.ops.core import (
    Infer,
    OpDef,
    array,
    element_count,
    fail,
    ints,
    normal_axis,
    param,
    register,
    shape_operand,
    tensor_arg,
)

# ---------------------------------------------------------------------------- shapes and views


def _infer_reshape(call: Call, arg_types: Sequence[Type | None]) -> Type:
    x = tensor_arg(call, arg_types, 0)
    target = list(shape_operand(call, 1))
    count = element_count(x.shape)
    if target.count(-1) > 1:
        raise fail(call, f"reshape of {x.shape} to {tuple(target)}: more than one -1")
    if -1 in target:
        known = element_count(tuple(d for d in target if d != -1))
        if known == 0 or count % known:
            raise fail(call, f"reshape of {x.shape} to {tuple(target)}: no size fits the -1")
        target[target.index(-1)] = count // known
    if element_count(tuple(target)) != count:
        raise fail(
            call,
            f"reshape of {x.shape} to {tuple(target)}: element counts differ "
            f"({count} vs {element_count(tuple(target))})",
        )
    return TensorType(tuple(target), x.dtype)


def _permutation(call: Call, ndim: int) -> tuple[int, ...]:
    axes = call.attr("axes")
    if axes is None:
        return tuple(range(ndim - 1, -1, -1))
    normal = tuple(normal_axis(call, a, ndim) for a in ints(axes, "axes", call))
    if sorted(normal) != list(range(ndim)):
        raise fail(call, f"permute_dims: axes {axes} are not a permutation of {ndim} dimensions")
    return normal


def _infer_permute(call: Call, arg_types: Sequence[Type | None]) -> Type:
    x = tensor_arg(call, arg_types, 0)
    return TensorType(tuple(x.shape[a] for a in _permutation(call, len(x.shape))), x.dtype)


def _expanded_axes(call: Call, ndim: int) -> tuple[int, ...]:
    axes = ints(param(call, "axis", 1), "axis", call)
    out_ndim = ndim + len(axes)
    normal = tuple(sorted(normal_axis(call, a, out_ndim) for a in axes))
    if len(set(normal)) != len(normal):
        raise fail(call, f"expand_dims: axis {axes} repeats an axis")
    return normal


def _infer_expand_dims(call: Call, arg_types: Sequence[Type | None]) -> Type:
    x = tensor_arg(call, arg_types, 0)
    shape = list(x.shape)
    for axis in _expanded_axes(call, len(x.shape)):
        shape.insert(axis, 1)
    return TensorType(tuple(shape), x.dtype)


def _infer_squeeze(call: Call, arg_types: Sequence[Type | None]) -> Type:
    x = tensor_arg(call, arg_types, 0)
    axis = param(call, "axis", 1)
    if axis is None:
        return TensorType(tuple(d for d in x.shape if d != 1), x.dtype)
    drop = {normal_axis(call, a, len(x.shape)) for a in ints(axis, "axis", call)}
    for a in drop:
        if x.shape[a] != 1:
            raise fail(call, f"squeeze of {x.shape}: axis {a} has size {x.shape[a]}, not 1")
    return TensorType(tuple(d for i, d in enumerate(x.shape) if i not in drop), x.dtype)


def _infer_flatten(call: Call, arg_types: Sequence[Type | None]) -> Type:
    x = tensor_arg(call, arg_types, 0)
    return TensorType((element_count(x.shape),), x.dtype)


def _view(name: str, infer: Infer) -> None:
    """A view's kernel reshapes its input to the inferred shape: the same bytes, as the
    executor's arena shares them."""

    def kernel(call: Call, args: Sequence[object]) -> object:
        x = array(args, 0)
        out = infer(call, [TensorType(x.shape, x.dtype.name)])
        assert isinstance(out, TensorType)
        return x.reshape(out.shape)

    register(OpDef(name, infer, kernel, view=True, keeps_elements=name != "match_cast"))


def _infer_match_cast(call: Call, arg_types: Sequence[Type | None]) -> Type:
    """`R.match_cast(x, T)`: x itself, which must have type T (shapes are static here, so
    the cast is a check). A shape cast to `R.Shape([k])` names its values (TVM's way of
    giving a data-dependent size a symbol): only its rank is checked."""
    cast = call.attr("struct_info")
    if arg_types and isinstance(arg_types[0], ShapeType) and isinstance(cast, ShapeType):
        if -1 not in (arg_types[0].ndim, cast.ndim) and arg_types[0].ndim != cast.ndim:
            raise fail(call, f"match_cast of a shape of {arg_types[0].ndim} values to {cast.ndim}")
        return cast
    x = tensor_arg(call, arg_types, 0)
    if not isinstance(cast, TensorType):
        raise fail(call, "match_cast needs a tensor type to cast to")
    if cast != x:
        raise fail(call, f"match_cast of a {x.shape} {x.dtype} tensor to {cast.shape} {cast.dtype}")
    return cast


_view("reshape", _infer_reshape)
_view("match_cast", _infer_match_cast)
_view("expand_dims", _infer_expand_dims)
_view("squeeze", _infer_squeeze)
_view("flatten", _infer_flatten)
register(
    OpDef(
        "permute_dims",
        _infer_permute,
        lambda call, args: kernels.contiguous(
            np.transpose(array(args, 0), _permutation(call, array(args, 0).ndim))
        ),
    )
)
