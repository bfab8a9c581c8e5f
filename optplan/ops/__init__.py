"""One table of per-op facts: how each op types its output, runs in NumPy, and uses memory.

Analyses read `OPS[name]` instead of testing op names. An entry says:

- `infer(call, arg_types)`: the output type, or InputError naming the call when the
  operands do not fit;
- `kernel(call, args)`: the NumPy result (an array, or a tuple of arrays for ops with a
  tuple result); None for ops optplan cannot interpret, which run the mixing kernel;
- `inplace`: the output may take the bytes of an argument that dies at this op and has the
  same shape and dtype (elementwise ops);
- `view`: the output is the same bytes as the first argument, reinterpreted (reshape);
  views are never planned on their own;
- `effect`: the op does something besides computing its value (allocates, kills, prints),
  so it keeps its place in the program whatever the order of the values around it;
- `keeps_elements`: the output is the first operand's elements in the same order (reshape);
  `keeps_sign`: positive operands give a positive output (add, astype);
  `needs_positive`: the op's domain is the positive numbers (sqrt, log);
  `indexed_size(call, data)`: for ops that read operand 1 as indices into operand 0
  (`take`, ONNX Gather), how many entries the indexed axis of `data` has. The replay's
  input maker reads these four (`optplan.executor.make_inputs`);
- `runs`: the interpreter's override point for the op (`Runs`): most ops compute a value;
  kernel calls, allocations and kills have points of their own, which the planned and
  lowered runners override;
- `into(call, args, out)`: optional destination passing: writes the result straight into
  the array `out` and returns True, or returns False when it cannot (the executor then
  runs `kernel` and copies). NumPy ufuncs do this with `out=`, saving a copy per op.

Op names are Relax's, without `R.`. Attributes are read as TVM 0.27 prints them
(`axis=`, `axes=`, `strides=[1, 1]`, `padding=[t, l, b, r]`, ...); an attribute TVM prints
positionally (`R.triu(x, 1)`) is also accepted as a `Literal` operand. `evaluate(call,
args, out_type)` runs a call the way both replays do: the kernel, or the mixing kernel,
then a check that the result has the inferred type.

The package: `core` (the record, the registry, `evaluate`, shared helpers and type rules)
and one module per family of ops, imported below in the order the registry keeps:
`elementwise` (and matmul), `shapes` (and views), `reductions` (and normalisation),
`conv` (and pooling), `indexing` (joining and indexing), `creation` (and more tensor ops),
`memory` (kernel calls, allocations, kills). NumPy bodies too long for a lambda live in
`optplan.kernels`.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from optplan import kernels
from optplan.ir import Call, Literal, ObjectType, TensorType, TupleType, Type
from optplan.ops.core import (
    OPS,
    IndexedSize,
    Infer,
    Into,
    Kernel,
    OpDef,
    Runs,
    array,
    broadcast,
    dtype_name,
    element_count,
    evaluate,
    fail,
    float_attr,
    has_effect,
    infer_unary,
    inplace_outputs,
    int_param,
    ints,
    lookup,
    normal_axis,
    optional_int,
    overwritten_args,
    param,
    register,
    same_dtype,
    shape_operand,
    shape_value,
    tensor_arg,
)


def _infer_predicate(call: Call, arg_types: Sequence[Type | None]) -> Type:
    return TensorType(tensor_arg(call, arg_types, 0).shape, "bool")


def _binary_rule(result_dtype: str | None) -> Infer:
    def infer(call: Call, arg_types: Sequence[Type | None]) -> Type:
        a, b = tensor_arg(call, arg_types, 0), tensor_arg(call, arg_types, 1)
        dtype = same_dtype(call, (a, b))
        return TensorType(broadcast(call, (a.shape, b.shape)), result_dtype or dtype)

    return infer


def _elementwise(
    name: str, infer: Infer, fn: Callable[..., object], *, inplace: bool = True, ufunc: object = None
) -> None:
    into = _ufunc_into(ufunc) if isinstance(ufunc, np.ufunc) else None
    register(OpDef(name, infer, lambda call, args: fn(*args), inplace=inplace, elementwise=True, into=into))


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

# ---------------------------------------------------------------------------- elementwise

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
    register(OpDef("where", _infer_where, lambda call, args: np.where(array(args, 0), array(args, 1), array(args, 2)), elementwise=True))


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


register(OpDef("matmul", _infer_matmul, _matmul_kernel))

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
    the cast is a check)."""
    x = tensor_arg(call, arg_types, 0)
    cast = call.attr("struct_info")
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
        shape = tuple(
            1 if i in axes else d for i, d in enumerate(x.shape) if keep or i not in axes
        )
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
    return tuple(normal_axis(call, a, len(x.shape)) for a in ints(call.attr("axes", (-1,)), "axes", call))


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

# ---------------------------------------------------------------------------- convolution


@dataclass(frozen=True, slots=True)
class Window:
    """The 2-D window attributes of a convolution or pooling call, normalised."""

    strides: tuple[int, int]
    padding: tuple[int, int, int, int]  # top, left, bottom, right
    dilation: tuple[int, int]

    def extent(self, kernel: tuple[int, int]) -> tuple[int, int]:
        return (
            (kernel[0] - 1) * self.dilation[0] + 1,
            (kernel[1] - 1) * self.dilation[1] + 1,
        )


def _pair(call: Call, name: str, default: tuple[int, int]) -> tuple[int, int]:
    value = ints(call.attr(name, default), name, call)
    if len(value) == 1:
        return (value[0], value[0])
    if len(value) != 2:
        raise fail(call, f"{call.op}: {name} needs 1 or 2 values, got {list(value)}")
    return (value[0], value[1])


def window(call: Call) -> Window:
    pad = ints(call.attr("padding", (0, 0)), "padding", call)
    if len(pad) == 1:
        pad = pad * 4
    elif len(pad) == 2:
        pad = pad + pad
    elif len(pad) != 4:
        raise fail(call, f"{call.op}: padding needs 1, 2 or 4 values, got {list(pad)}")
    strides, dilation = _pair(call, "strides", (1, 1)), _pair(call, "dilation", (1, 1))
    if min(strides + dilation) < 1 or min(pad) < 0:
        raise fail(call, f"{call.op}: strides and dilation must be >= 1, padding >= 0")
    return Window(strides, (pad[0], pad[1], pad[2], pad[3]), dilation)


def _check_layouts(call: Call, **expected: str) -> None:
    for name, layout in expected.items():
        value = call.attr(name)
        if value is not None and value != layout:
            raise fail(call, f"{call.op}: {name} {value!r} is not supported (only {layout!r})")


def _conv_output(call: Call, size: tuple[int, int], kernel: tuple[int, int], win: Window) -> tuple[int, int]:
    out = []
    for axis in range(2):
        padded = size[axis] + win.padding[axis] + win.padding[axis + 2]
        span = padded - win.extent(kernel)[axis]
        if span < 0:
            raise fail(call, f"{call.op}: the window {kernel} is larger than the padded input {size}")
        out.append(span // win.strides[axis] + 1)
    return (out[0], out[1])


def _infer_conv2d(call: Call, arg_types: Sequence[Type | None]) -> Type:
    _check_layouts(call, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW")
    x, w = tensor_arg(call, arg_types, 0), tensor_arg(call, arg_types, 1)
    if len(x.shape) != 4 or len(w.shape) != 4:
        raise fail(call, f"nn.conv2d of {x.shape} and {w.shape}: data and weight must be 4-D")
    groups = int_param(call, "groups", default=1)
    if groups < 1 or x.shape[1] != w.shape[1] * groups or w.shape[0] % groups:
        raise fail(
            call,
            f"nn.conv2d of {x.shape} and {w.shape}: {x.shape[1]} input channels do not match "
            f"{w.shape[1]} weight channels x {groups} groups",
        )
    oh, ow = _conv_output(call, (x.shape[2], x.shape[3]), (w.shape[2], w.shape[3]), window(call))
    dtype = call.attr("out_dtype") or x.dtype
    return TensorType((x.shape[0], w.shape[0], oh, ow), dtype_name(call, str(dtype)))


def _conv2d_kernel(call: Call, args: Sequence[object]) -> object:
    x = array(args, 0)
    win = window(call)
    dtype = str(call.attr("out_dtype") or x.dtype)
    groups = int_param(call, "groups", default=1)
    return kernels.conv2d(x, array(args, 1), win.strides, win.padding, win.dilation, groups, dtype)


def _infer_conv2d_transpose(call: Call, arg_types: Sequence[Type | None]) -> Type:
    _check_layouts(call, data_layout="NCHW", kernel_layout="IOHW", out_layout="NCHW")
    x, w = tensor_arg(call, arg_types, 0), tensor_arg(call, arg_types, 1)
    if len(x.shape) != 4 or len(w.shape) != 4:
        raise fail(call, f"{call.op} of {x.shape} and {w.shape}: data and weight must be 4-D")
    groups = int_param(call, "groups", default=1)
    if groups < 1 or x.shape[1] != w.shape[0] or w.shape[0] % groups:
        raise fail(
            call,
            f"{call.op} of {x.shape} and {w.shape}: {x.shape[1]} input channels do not match "
            f"the weight's {w.shape[0]} in {groups} groups",
        )
    win = window(call)
    extra = _pair(call, "output_padding", (0, 0))
    size = []
    for axis in range(2):
        size.append(
            (x.shape[2 + axis] - 1) * win.strides[axis]
            - win.padding[axis]
            - win.padding[axis + 2]
            + win.extent((w.shape[2], w.shape[3]))[axis]
            + extra[axis]
        )
    if min(size) < 1:
        raise fail(call, f"{call.op} of {x.shape} and {w.shape}: the output would be empty")
    dtype = call.attr("out_dtype") or x.dtype
    return TensorType(
        (x.shape[0], w.shape[1] * groups, size[0], size[1]), dtype_name(call, str(dtype))
    )


def _conv2d_transpose_kernel(call: Call, args: Sequence[object]) -> object:
    x = array(args, 0)
    win = window(call)
    extra = _pair(call, "output_padding", (0, 0))
    dtype = str(call.attr("out_dtype") or x.dtype)
    groups = int_param(call, "groups", default=1)
    return kernels.conv2d_transpose(
        x, array(args, 1), win.strides, win.padding, extra, win.dilation, groups, dtype
    )


register(OpDef("nn.conv2d", _infer_conv2d, _conv2d_kernel))
register(OpDef("nn.conv2d_transpose", _infer_conv2d_transpose, _conv2d_transpose_kernel))

# ---------------------------------------------------------------------------- pooling


def _pool_output(call: Call, x: TensorType) -> tuple[int, int]:
    pool = _pair(call, "pool_size", (1, 1))
    win = window(call)
    out = []
    for axis in range(2):
        span = x.shape[2 + axis] + win.padding[axis] + win.padding[axis + 2] - win.extent(pool)[axis]
        if span < 0:
            raise fail(call, f"{call.op}: the window {pool} is larger than the padded input {x.shape}")
        if call.attr("ceil_mode", False):
            span += win.strides[axis] - 1
        out.append(span // win.strides[axis] + 1)
    return (out[0], out[1])


def _infer_pool(call: Call, arg_types: Sequence[Type | None]) -> Type:
    _check_layouts(call, layout="NCHW", out_layout="NCHW")
    x = tensor_arg(call, arg_types, 0)
    if len(x.shape) != 4:
        raise fail(call, f"{call.op} of {x.shape}: data must be 4-D (NCHW)")
    return TensorType(x.shape[:2] + _pool_output(call, x), x.dtype)


def _pool_kernel(call: Call, args: Sequence[object]) -> object:
    x = array(args, 0)
    win = window(call)
    pool = _pair(call, "pool_size", (1, 1))
    ceil = bool(call.attr("ceil_mode", False))
    if call.op == "nn.max_pool2d":
        return kernels.max_pool2d(x, pool, win.strides, win.dilation, win.padding, ceil)
    include = bool(call.attr("count_include_pad", False))
    return kernels.avg_pool2d(x, pool, win.strides, win.dilation, win.padding, ceil, include)


def _adaptive_size(call: Call, x: TensorType) -> tuple[int, int]:
    size = call.attr("output_size")
    return (x.shape[2], x.shape[3]) if size is None else _pair(call, "output_size", (1, 1))


def _infer_adaptive_pool(call: Call, arg_types: Sequence[Type | None]) -> Type:
    _check_layouts(call, layout="NCHW", out_layout="NCHW")
    x = tensor_arg(call, arg_types, 0)
    if len(x.shape) != 4:
        raise fail(call, f"{call.op} of {x.shape}: data must be 4-D (NCHW)")
    return TensorType(x.shape[:2] + _adaptive_size(call, x), x.dtype)


def _adaptive_pool_kernel(call: Call, args: Sequence[object]) -> object:
    x = array(args, 0)
    return kernels.adaptive_avg_pool2d(x, _adaptive_size(call, TensorType(x.shape, x.dtype.name)))


register(OpDef("nn.max_pool2d", _infer_pool, _pool_kernel))
register(OpDef("nn.avg_pool2d", _infer_pool, _pool_kernel))
register(OpDef("nn.adaptive_avg_pool2d", _infer_adaptive_pool, _adaptive_pool_kernel))

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
        if len(part.shape) != ndim or rest != [d for i, d in enumerate(parts[0].shape) if i != axis]:
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
    strides = list(ints(strides_attr, "strides", call)) if strides_attr is not None else [1] * len(axes)
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
        lambda call, args: np.tile(array(args, 0), ints(param(call, "repeats", 1), "repeats", call)),
    )
)
_triangle("triu", kernels.triu)
_triangle("tril", kernels.tril)

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
        raise fail(call, f"nn.pad: pad_width needs {2 * ndim} non-negative values, got {list(width)}")
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
    value = args[2] if len(args) > 2 and isinstance(args[2], np.ndarray) else param(call, "pad_value", 2, 0)
    return np.pad(x, width, constant_values=np.asarray(value, dtype=x.dtype))


def _infer_batch_norm(call: Call, arg_types: Sequence[Type | None]) -> Type:
    x = tensor_arg(call, arg_types, 0)
    axis = normal_axis(call, int_param(call, "axis", default=1), len(x.shape))
    stats = [tensor_arg(call, arg_types, i) for i in range(1, 5)]
    for name, stat in zip(("gamma", "beta", "moving_mean", "moving_var"), stats):
        if stat.shape != (x.shape[axis],):
            raise fail(call, f"nn.batch_norm of {x.shape}: {name} has shape {stat.shape}, expected ({x.shape[axis]},)")
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
register(OpDef("nn.dropout", _infer_dropout, lambda call, args: (np.array(args[0]), np.ones_like(args[0]))))
register(OpDef("cumsum", _infer_cumsum, _cumsum_kernel))

# ---------------------------------------------------------------------------- kernels and memory


def _infer_call_tir(call: Call, arg_types: Sequence[Type | None]) -> Type:
    out = call.attr("out_ty", call.attr("out_sinfo"))
    name = call.attr("kernel")
    if isinstance(out, tuple) and all(isinstance(t, TensorType) for t in out):
        # `out_sinfo=[R.Tensor(...), ...]`, the older spelling of a tuple result.
        out = TupleType(tuple(t for t in out if isinstance(t, TensorType)))
    if not isinstance(out, (TensorType, TupleType)):
        raise fail(call, f"{call.op} of {name!r} needs out_ty=R.Tensor(...), got {out!r}")
    outputs = out.fields if isinstance(out, TupleType) else (out,)
    if call.op == "call_tir_inplace":
        if call.attr("inplace_indices") is None:
            raise fail(call, f"call_tir_inplace of {name!r} needs inplace_indices")
        listed = inplace_outputs(call)
        if len(listed) != len(outputs):
            raise fail(call, f"call_tir_inplace of {name!r}: one inplace index per output")
        for output, index in zip(outputs, listed):
            _check_overwrite(call, arg_types, output, index)
    return out


def _check_overwrite(call: Call, arg_types: Sequence[Type | None], output: Type, index: int) -> None:
    """An output written over argument `index` must be that argument's type exactly."""
    if index < 0:
        return
    if index >= len(arg_types):
        raise fail(call, f"call_tir_inplace: inplace index {index} names no argument")
    arg = arg_types[index]
    if arg is not None and arg != output:
        raise fail(
            call,
            f"call_tir_inplace of {call.attr('kernel')!r}: output {output} cannot overwrite "
            f"argument {index} of type {arg}",
        )


def _literal_dtype(call: Call, position: int) -> str:
    operand = call.args[position] if position < len(call.args) else None
    if not isinstance(operand, Literal) or operand.kind != "dtype":
        raise fail(call, f"{call.op}: operand {position} must be R.dtype(...)")
    return dtype_name(call, str(operand.value))


def _infer_builtin_alloc(call: Call, arg_types: Sequence[Type | None]) -> Type:
    return TensorType(shape_operand(call, 0), _literal_dtype(call, 1))


def _infer_alloc_storage(call: Call, arg_types: Sequence[Type | None]) -> Type:
    shape_operand(call, 0)
    return ObjectType()


def _infer_memory_alloc(call: Call, arg_types: Sequence[Type | None]) -> Type:
    return TensorType(shape_operand(call, 2), _literal_dtype(call, 3))


def _storage_view(call: Call, args: Sequence[object]) -> object:
    """`R.memory.alloc_tensor(storage, offset, shape, dtype)`: a view of the storage."""
    storage, offset, shape = array(args, 0), int_param(call, "offset", 1), shape_value(args, 2)
    dtype = np.dtype(_literal_dtype(call, 3))
    size_bytes = element_count(shape) * dtype.itemsize
    if offset < 0 or offset + size_bytes > storage.nbytes:
        raise fail(
            call,
            f"memory.alloc_tensor of {size_bytes} bytes at offset {offset} does not fit in a "
            f"storage of {storage.nbytes} bytes",
        )
    return storage.reshape(-1).view(np.uint8)[offset : offset + size_bytes].view(dtype).reshape(shape)


def _no_value(call: Call, arg_types: Sequence[Type | None]) -> Type:
    return TupleType(())


register(OpDef("call_tir", _infer_call_tir))
# `kernel(a, b, out)` after CallTIRRewrite: writes its destinations, returns nothing.
# Lowered programs run with optplan.lowered, which knows storages and destinations.
register(OpDef("call_kernel", _no_value, runs=Runs.KERNEL))
register(OpDef("call_tir_inplace", _infer_call_tir))
register(
    OpDef(
        "builtin.alloc_tensor",
        _infer_builtin_alloc,
        # Fresh memory is zeroed so that a replay is deterministic.
        lambda call, args: np.zeros(shape_value(args, 0), _literal_dtype(call, 1)),
        runs=Runs.ALLOC_FRESH,
    )
)
register(
    OpDef(
        "memory.alloc_storage",
        _infer_alloc_storage,
        lambda call, args: np.zeros(shape_value(args, 0), np.uint8),
        effect=True,
        runs=Runs.ALLOC_STORAGE,
    )
)
register(
    OpDef(
        "memory.alloc_tensor",
        _infer_memory_alloc,
        _storage_view,
        view=True,
        effect=True,
        runs=Runs.ALLOC_TENSOR,
    )
)
for _kill, _runs in (
    ("memory.kill_tensor", Runs.KILL_TENSOR),
    ("memory.kill_storage", Runs.KILL_STORAGE),
    ("vm.kill_object", Runs.KILL_OBJECT),
):
    register(OpDef(_kill, _no_value, lambda call, args: (), effect=True, runs=_runs))

# Facts for drawing replay inputs: a sqrt or log of a value in [-1, 1) would be a NaN that
# spreads and hides later corruption.
for _name in ("sqrt", "rsqrt", "log"):
    OPS[_name] = dataclasses.replace(OPS[_name], needs_positive=True)
for _name in ("add", "multiply", "astype", "reshape", "expand_dims", "squeeze", "flatten"):
    OPS[_name] = dataclasses.replace(OPS[_name], keeps_sign=True)

__all__ = [
    "OPS",
    "IndexedSize",
    "Infer",
    "Into",
    "Kernel",
    "OpDef",
    "Runs",
    "Window",
    "array",
    "broadcast",
    "evaluate",
    "fail",
    "float_attr",
    "has_effect",
    "inplace_outputs",
    "int_param",
    "ints",
    "lookup",
    "normal_axis",
    "optional_int",
    "overwritten_args",
    "param",
    "register",
    "same_dtype",
    "shape_value",
    "tensor_arg",
    "window",
]
