"""Convolution and pooling on NCHW data: `nn.conv2d`, `nn.conv2d_transpose`,
`nn.max_pool2d`, `nn.avg_pool2d`, `nn.adaptive_avg_pool2d`, and the 2-D `Window` they share.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from optplan.ir import Call, TensorType, Type
from optplan.ops import kernels
from optplan.ops.core import (
    OpDef,
    array,
    dtype_name,
    element_count,
    fail,
    int_param,
    ints,
    register,
    tensor_arg,
)

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


def _conv_output(
    call: Call, size: tuple[int, int], kernel: tuple[int, int], win: Window
) -> tuple[int, int]:
    out = []
    for axis in range(2):
        padded = size[axis] + win.padding[axis] + win.padding[axis + 2]
        span = padded - win.extent(kernel)[axis]
        if span < 0:
            raise fail(
                call, f"{call.op}: the window {kernel} is larger than the padded input {size}"
            )
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


def _conv_flops(call: Call, arg_types: Sequence[Type | None], result: Type) -> int:
    """A multiply and an add per result element and weight element of its group (the
    transpose: per input element and weight element)."""
    x, w = tensor_arg(call, arg_types, 0), tensor_arg(call, arg_types, 1)
    assert isinstance(result, TensorType)
    if call.op == "nn.conv2d_transpose":
        return 2 * element_count(x.shape) * element_count(w.shape[1:])
    return 2 * element_count(result.shape) * element_count(w.shape[1:])


register(OpDef("nn.conv2d", _infer_conv2d, _conv2d_kernel, flops=_conv_flops))
register(
    OpDef(
        "nn.conv2d_transpose", _infer_conv2d_transpose, _conv2d_transpose_kernel, flops=_conv_flops
    )
)

# ---------------------------------------------------------------------------- pooling


def _pool_output(call: Call, x: TensorType) -> tuple[int, int]:
    pool = _pair(call, "pool_size", (1, 1))
    win = window(call)
    out = []
    for axis in range(2):
        span = (
            x.shape[2 + axis] + win.padding[axis] + win.padding[axis + 2] - win.extent(pool)[axis]
        )
        if span < 0:
            raise fail(
                call, f"{call.op}: the window {pool} is larger than the padded input {x.shape}"
            )
        if call.attr("ceil_mode", False):
            span += win.strides[axis] - 1
        out.append(span // win.strides[axis] + 1)
    return (out[0], out[1])


def _pooled(call: Call, arg_types: Sequence[Type | None]) -> TensorType:
    """A pool's data operand: 4-D, in NCHW layout in and out."""
    _check_layouts(call, layout="NCHW", out_layout="NCHW")
    x = tensor_arg(call, arg_types, 0)
    if len(x.shape) != 4:
        raise fail(call, f"{call.op} of {x.shape}: data must be 4-D (NCHW)")
    return x


def _infer_pool(call: Call, arg_types: Sequence[Type | None]) -> Type:
    x = _pooled(call, arg_types)
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
    x = _pooled(call, arg_types)
    return TensorType(x.shape[:2] + _adaptive_size(call, x), x.dtype)


def _adaptive_pool_kernel(call: Call, args: Sequence[object]) -> object:
    x = array(args, 0)
    return kernels.adaptive_avg_pool2d(x, _adaptive_size(call, TensorType(x.shape, x.dtype.name)))


register(OpDef("nn.max_pool2d", _infer_pool, _pool_kernel))
register(OpDef("nn.avg_pool2d", _infer_pool, _pool_kernel))
register(OpDef("nn.adaptive_avg_pool2d", _infer_adaptive_pool, _adaptive_pool_kernel))
