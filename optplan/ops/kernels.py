"""NumPy kernels of the op table, as plain functions of arrays and attributes.

`optplan.ops` reads the attributes off a call and hands them here, so each kernel can be
tested against a slow, obvious reference without building IR. Every kernel is
deterministic and vectorised (convolution and pooling go through strided window views,
never Python loops over pixels) and returns a fresh array of the result's dtype.

`mix` is the stand-in for kernels optplan cannot interpret: every output byte depends on
every input byte and on the kernel's name, so any corruption of any input shows.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from optplan.ir import TensorType, TupleType, Type

# ---------------------------------------------------------------------------- elementwise


def contiguous(x: np.ndarray) -> np.ndarray:
    """`x` in C order, copied only if it is not; unlike np.ascontiguousarray, a 0-d array
    stays 0-d."""
    return np.asarray(x, order="C")


def same_dtype(fn: Callable[[np.ndarray], object]) -> Callable[[np.ndarray], np.ndarray]:
    """A unary NumPy function whose result keeps its input's dtype, as the type rule says.

    NumPy turns `exp` of int32 into float64; TVM refuses such ops on integers, optplan
    replays them in the input's dtype instead.
    """

    def kernel(x: np.ndarray) -> np.ndarray:
        return np.asarray(fn(x)).astype(x.dtype, copy=False)

    return kernel


def _wide(x: np.ndarray) -> np.ndarray:
    """`x` in a float type at least as wide as float32, for numerically touchy kernels."""
    return x.astype(np.promote_types(x.dtype, np.float32), copy=False)


def erf(x: np.ndarray) -> np.ndarray:
    """The error function, to about 1e-14, in float64.

    NumPy has no erf and scipy is not a dependency. Below 2.5 the Maclaurin series (46
    terms, evaluated by Horner in x^2); above, the continued fraction of erfc, which
    converges fast there.
    """
    x64 = np.asarray(x, np.float64)
    a = np.abs(x64)
    out = np.empty_like(a)
    small = a < 2.5
    z = a[small]
    z2 = z * z
    acc = np.zeros_like(z)
    for n in range(45, -1, -1):
        acc = acc * z2 + (-1) ** n / (math.factorial(n) * (2 * n + 1))
    out[small] = 2 / math.sqrt(math.pi) * z * acc
    y = a[~small]
    frac = y.copy()
    for k in range(80, 0, -1):
        frac = y + (k / 2) / frac
    out[~small] = 1 - np.exp(-y * y) / math.sqrt(math.pi) / frac
    return np.copysign(out, x64)


def sigmoid(x: np.ndarray) -> np.ndarray:
    wide = _wide(x)
    return (1 / (1 + np.exp(-wide))).astype(x.dtype)


def silu(x: np.ndarray) -> np.ndarray:
    wide = _wide(x)
    return (wide / (1 + np.exp(-wide))).astype(x.dtype)


def gelu(x: np.ndarray) -> np.ndarray:
    """`0.5 x (1 + erf(x / sqrt 2))`, the exact form TVM's `nn.gelu` uses."""
    return (0.5 * x * (1 + erf(x / math.sqrt(2)))).astype(x.dtype)


def gelu_tanh(x: np.ndarray) -> np.ndarray:
    wide = x.astype(np.float64)
    inner = math.sqrt(2 / math.pi) * (wide + 0.044715 * wide**3)
    return (0.5 * wide * (1 + np.tanh(inner))).astype(x.dtype)


def relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, np.zeros((), x.dtype))


def divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """True division for floats; for integers, truncation toward zero as in C and TVM."""
    if np.issubdtype(a.dtype, np.floating):
        return np.divide(a, b)
    quotient = np.floor_divide(a, b)
    remainder = np.mod(a, b)
    # floor and trunc differ where the signs differ and the division is inexact.
    fix = (remainder != 0) & ((a < 0) != (b < 0))
    return (quotient + fix).astype(a.dtype)


def triu(x: np.ndarray, k: int) -> np.ndarray:
    return np.triu(x, k)


def tril(x: np.ndarray, k: int) -> np.ndarray:
    return np.tril(x, k)


# ---------------------------------------------------------------------------- normalisation


def softmax(x: np.ndarray, axis: int) -> np.ndarray:
    wide = _wide(x)
    shifted = np.exp(wide - np.max(wide, axis=axis, keepdims=True))
    return (shifted / np.sum(shifted, axis=axis, keepdims=True)).astype(x.dtype)


def log_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    wide = _wide(x)
    shifted = wide - np.max(wide, axis=axis, keepdims=True)
    return (shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))).astype(x.dtype)


def layer_norm(
    x: np.ndarray,
    gamma: np.ndarray,
    beta: np.ndarray,
    axes: Sequence[int],
    epsilon: float,
    center: bool,
    scale: bool,
) -> np.ndarray:
    """`(x - mean) / sqrt(var + eps) * gamma + beta` over `axes`; gamma and beta have the
    shape of those axes, which are the trailing ones."""
    wide = _wide(x)
    axes_t = tuple(axes)
    mean = np.mean(wide, axis=axes_t, keepdims=True)
    centred = wide - mean
    var = np.mean(centred * centred, axis=axes_t, keepdims=True)
    out = centred / np.sqrt(var + epsilon)
    if scale:
        out = out * _wide(gamma)
    if center:
        out = out + _wide(beta)
    return out.astype(x.dtype)


def rms_norm(x: np.ndarray, weight: np.ndarray, axes: Sequence[int], epsilon: float) -> np.ndarray:
    wide = _wide(x)
    square_mean = np.mean(wide * wide, axis=tuple(axes), keepdims=True)
    return (wide / np.sqrt(square_mean + epsilon) * _wide(weight)).astype(x.dtype)


# ---------------------------------------------------------------------------- matmul


def compute_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype a product or sum is computed in: float16 goes through float32.

    NumPy has no float16 matrix kernel (it loops element by element, about 100 times
    slower than float32), so float16 products are computed in float32 and rounded once to
    float16. Both the reference run and the replay use this, so they stay bit for bit.
    """
    return np.dtype(np.float32) if np.dtype(dtype) == np.float16 else np.dtype(dtype)


def matmul(a: np.ndarray, b: np.ndarray, out_dtype: np.dtype | str) -> np.ndarray:
    """`a @ b` in `out_dtype`, computed in `compute_dtype` of the widest operand type."""
    out = np.dtype(out_dtype)
    wide = compute_dtype(np.result_type(a.dtype, b.dtype, out))
    result = np.matmul(a.astype(wide, copy=False), b.astype(wide, copy=False))
    return result.astype(out, copy=False)


def gather_elements(data: np.ndarray, indices: np.ndarray, axis: int) -> np.ndarray:
    """ONNX GatherElements: `out[i][j][k] = data[indices[i][j][k]][j][k]` along `axis`,
    negative indices counting from the end; an index out of range is an IndexError. On the
    other axes `indices` may be shorter than `data`: only the leading part of `data` is
    read there."""
    axis = axis % max(data.ndim, 1)
    size = data.shape[axis]
    index = indices.astype(np.int64, copy=False)
    if index.size and (index.min() < -size or index.max() >= size):
        raise IndexError(f"an index is outside [-{size}, {size}) on axis {axis}")
    window = tuple(slice(None) if d == axis else slice(0, index.shape[d]) for d in range(data.ndim))
    return np.take_along_axis(data[window], np.where(index < 0, index + size, index), axis=axis)


# ---------------------------------------------------------------------------- convolution


def _pad_or_crop(x: np.ndarray, before: Sequence[int], after: Sequence[int]) -> np.ndarray:
    """Pad the last two axes with zeros where a count is positive, crop where negative."""
    pads = [(0, 0)] * (x.ndim - 2) + [(max(b, 0), max(a, 0)) for b, a in zip(before, after)]
    x = np.pad(x, pads)
    h, w = x.shape[-2:]
    top, left = max(-before[0], 0), max(-before[1], 0)
    bottom, right = max(-after[0], 0), max(-after[1], 0)
    return x[..., top : h - bottom, left : w - right]


def conv2d(
    x: np.ndarray,
    w: np.ndarray,
    strides: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    groups: int,
    out_dtype: str,
) -> np.ndarray:
    """NCHW data, OIHW weights, padding `[top, left, bottom, right]`, by im2col + matmul."""
    n = x.shape[0]
    out_channels, group_channels, kh, kw = w.shape
    padded = _pad_or_crop(x, padding[:2], padding[2:])
    extent = ((kh - 1) * dilation[0] + 1, (kw - 1) * dilation[1] + 1)
    windows = sliding_window_view(padded, extent, axis=(2, 3))
    windows = windows[:, :, :: strides[0], :: strides[1], :: dilation[0], :: dilation[1]]
    oh, ow = windows.shape[2:4]
    # (n, groups, oh*ow, group_channels*kh*kw) @ (groups, group_channels*kh*kw, out/groups)
    cols = windows.reshape(n, groups, group_channels, oh, ow, kh, kw)
    cols = cols.transpose(0, 1, 3, 4, 2, 5, 6).reshape(n, groups, oh * ow, group_channels * kh * kw)
    per_group = out_channels // groups
    weights = w.reshape(groups, per_group, group_channels * kh * kw).transpose(0, 2, 1)
    # Sums in the widest of the operands' and the output's type, as out_dtype asks.
    acc_dtype = compute_dtype(np.result_type(x.dtype, w.dtype, np.dtype(out_dtype)))
    out = np.matmul(cols.astype(acc_dtype, copy=False), weights.astype(acc_dtype, copy=False))
    out = out.transpose(0, 1, 3, 2).reshape(n, out_channels, oh, ow)
    return np.asarray(out, dtype=out_dtype, order="C")


def conv2d_transpose(
    x: np.ndarray,
    w: np.ndarray,
    strides: Sequence[int],
    padding: Sequence[int],
    output_padding: Sequence[int],
    dilation: Sequence[int],
    groups: int,
    out_dtype: str,
) -> np.ndarray:
    """NCHW data, IOHW weights: the gradient of conv2d, as a stride-1 conv2d of the input
    spread out by the strides, padded by the kernel's extent, with the kernel flipped."""
    n, channels, h, wd = x.shape
    in_channels, per_group, kh, kw = w.shape
    spread = np.zeros(
        (n, channels, (h - 1) * strides[0] + 1, (wd - 1) * strides[1] + 1), dtype=x.dtype
    )
    spread[:, :, :: strides[0], :: strides[1]] = x
    reach = ((kh - 1) * dilation[0], (kw - 1) * dilation[1])
    before = (reach[0] - padding[0], reach[1] - padding[1])
    after = (
        reach[0] - padding[2] + output_padding[0],
        reach[1] - padding[3] + output_padding[1],
    )
    spread = _pad_or_crop(spread, before, after)
    grouped = w.reshape(groups, in_channels // groups, per_group, kh, kw)[..., ::-1, ::-1]
    flipped = grouped.transpose(0, 2, 1, 3, 4).reshape(
        groups * per_group, in_channels // groups, kh, kw
    )
    return conv2d(spread, flipped, (1, 1), (0, 0, 0, 0), dilation, groups, out_dtype)


# ---------------------------------------------------------------------------- pooling


def _pool_windows(
    x: np.ndarray,
    pool_size: Sequence[int],
    strides: Sequence[int],
    dilation: Sequence[int],
    padding: Sequence[int],
    ceil_mode: bool,
    fill: float,
) -> np.ndarray:
    """Windows `(n, c, oh, ow, kh, kw)` over `x` padded with `fill`; ceil mode pads the
    bottom and right further so that a last, partial window is kept."""
    extent = [(k - 1) * d + 1 for k, d in zip(pool_size, dilation)]
    after = list(padding[2:])
    if ceil_mode:
        for axis in range(2):
            size = x.shape[2 + axis] + padding[axis] + padding[2 + axis] - extent[axis]
            after[axis] += (-size) % strides[axis]
    pads = ((0, 0), (0, 0), (padding[0], after[0]), (padding[1], after[1]))
    padded = np.pad(x, pads, constant_values=fill)
    windows = sliding_window_view(padded, tuple(extent), axis=(2, 3))
    return windows[:, :, :: strides[0], :: strides[1], :: dilation[0], :: dilation[1]]


def max_pool2d(
    x: np.ndarray,
    pool_size: Sequence[int],
    strides: Sequence[int],
    dilation: Sequence[int],
    padding: Sequence[int],
    ceil_mode: bool,
) -> np.ndarray:
    lowest = -np.inf if np.issubdtype(x.dtype, np.floating) else np.iinfo(x.dtype).min
    windows = _pool_windows(x, pool_size, strides, dilation, padding, ceil_mode, lowest)
    return contiguous(windows.max(axis=(4, 5)))


def avg_pool2d(
    x: np.ndarray,
    pool_size: Sequence[int],
    strides: Sequence[int],
    dilation: Sequence[int],
    padding: Sequence[int],
    ceil_mode: bool,
    count_include_pad: bool,
) -> np.ndarray:
    """Mean over each window; the divisor counts the explicit padding only when
    `count_include_pad`, and never the extra cells of ceil mode."""
    wide = _wide(x)
    sums = _pool_windows(wide, pool_size, strides, dilation, padding, ceil_mode, 0).sum(axis=(4, 5))
    real = np.ones((1, 1) + x.shape[2:], dtype=wide.dtype)
    if count_include_pad:
        real = np.pad(
            real,
            ((0, 0), (0, 0), (padding[0], padding[2]), (padding[1], padding[3])),
            constant_values=1,
        )
        counts = _pool_windows(real, pool_size, strides, dilation, (0, 0, 0, 0), ceil_mode, 0)
    else:
        counts = _pool_windows(real, pool_size, strides, dilation, padding, ceil_mode, 0)
    count = counts.sum(axis=(4, 5))
    return contiguous((sums / np.maximum(count, 1)).astype(x.dtype))


def adaptive_avg_pool2d(x: np.ndarray, output_size: Sequence[int]) -> np.ndarray:
    """Cell (i, j) averages rows [floor(i H / oh), ceil((i + 1) H / oh)) and likewise
    columns; one slice per output cell, and output sizes are small."""
    h, w = x.shape[2:]
    oh, ow = output_size
    wide = _wide(x)
    out = np.empty(x.shape[:2] + (oh, ow), dtype=wide.dtype)
    for i in range(oh):
        top, bottom = (i * h) // oh, -((-(i + 1) * h) // oh)
        for j in range(ow):
            left, right = (j * w) // ow, -((-(j + 1) * w) // ow)
            out[:, :, i, j] = wide[:, :, top:bottom, left:right].mean(axis=(2, 3))
    return out.astype(x.dtype)


# ---------------------------------------------------------------------------- indexing


def split(
    x: np.ndarray, indices_or_sections: int | Sequence[int], axis: int
) -> tuple[np.ndarray, ...]:
    if isinstance(indices_or_sections, int):
        parts = np.array_split(x, indices_or_sections, axis=axis)
    else:
        parts = np.split(x, list(indices_or_sections), axis=axis)
    return tuple(contiguous(p) for p in parts)


def strided_slice(
    x: np.ndarray,
    axes: Sequence[int],
    begin: Sequence[int],
    end: Sequence[int],
    strides: Sequence[int] | None,
) -> np.ndarray:
    index = [slice(None)] * x.ndim
    steps = list(strides) if strides else [1] * len(axes)
    for axis, b, e, s in zip(axes, begin, end, steps):
        index[axis] = slice(b, e, s)
    return contiguous(x[tuple(index)])


def take(x: np.ndarray, indices: np.ndarray, axis: int | None, mode: str) -> np.ndarray:
    # "fast" promises in-range indices; clipping keeps a broken promise deterministic.
    if mode == "wrap":
        return np.take(x, indices.astype(np.intp), axis=axis, mode="wrap")
    return np.take(x, indices.astype(np.intp), axis=axis, mode="clip")


# ---------------------------------------------------------------------------- mixing


def _checksum(value: np.ndarray) -> tuple[int, int]:
    """Two 64-bit sums of the bytes of `value`: a plain sum of its 8-byte words and one
    weighted by an odd multiplier per position, so any change of any byte changes them."""
    raw = np.ascontiguousarray(value).reshape(-1).view(np.uint8)
    if raw.size % 8:
        padded = np.zeros(-(-raw.size // 8) * 8, dtype=np.uint8)
        padded[: raw.size] = raw
        raw = padded
    words = raw.view(np.uint64)
    weights = np.arange(words.size, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15) | np.uint64(1)
    with np.errstate(over="ignore"):
        return int(words.sum(dtype=np.uint64)), int((words * weights).sum(dtype=np.uint64))


def mix(name: str, args: Sequence[object], out_type: Type) -> np.ndarray | tuple[np.ndarray, ...]:
    if isinstance(out_type, TupleType):
        return tuple(mix_tensor(f"{name}[{i}]", args, f) for i, f in enumerate(out_type.fields))
    return mix_tensor(name, args, out_type)


def mix_tensor(name: str, args: Sequence[object], out_type: Type) -> np.ndarray:
    """A deterministic stand-in result of kernel `name` on `args`, of type `out_type`.

    Seeds a generator from the kernel's name and every input's shape, dtype and
    checksums, then draws the output: standard normal floats (finite), small
    non-negative integers, or booleans. A tuple type gives one tensor per field, each
    drawn under the name `name[i]`.
    """
    if not isinstance(out_type, TensorType):
        raise TypeError(f"kernel {name!r} must produce tensors, not {out_type}")
    digest = hashlib.blake2b(name.encode(), digest_size=16)
    for array in _flat_arrays(args):
        digest.update(f"{array.dtype.str}{array.shape}".encode())
        for part in _checksum(array):
            digest.update(part.to_bytes(8, "little"))
    rng = np.random.default_rng(int.from_bytes(digest.digest(), "little"))
    return _draw(rng, out_type.shape, np.dtype(out_type.dtype))


def _flat_arrays(args: Sequence[object]) -> list[np.ndarray]:
    arrays: list[np.ndarray] = []
    for arg in args:
        if isinstance(arg, tuple):
            arrays.extend(_flat_arrays(arg))
        else:
            arrays.append(np.asarray(arg))
    return arrays


def _draw(rng: np.random.Generator, shape: tuple[int, ...], kind: np.dtype) -> np.ndarray:
    if kind == np.bool_:
        return rng.random(shape) < 0.5
    if np.issubdtype(kind, np.integer):
        return rng.integers(0, 8, size=shape).astype(kind)
    if np.issubdtype(kind, np.floating):
        return rng.standard_normal(shape, dtype=np.float32).astype(kind)
    raw = rng.integers(0, 256, size=(math.prod(shape) * kind.itemsize,), dtype=np.uint8)
    return raw.view(kind).reshape(shape)
