"""The op table: each kernel against a slow, obvious reference; type rules and their errors."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st

from optplan.errors import InputError
from optplan.ir import Call, Const, Literal, Loc, ShapeExpr, TensorType, Tuple, TupleType, Type, Var
from optplan.ops import OPS, evaluate, kernels, lookup, overwritten_args

RNG = np.random.default_rng(7)


def ttype(array: np.ndarray) -> TensorType:
    return TensorType(array.shape, array.dtype.name)


def call(op: str, *args: object, **attrs: object) -> tuple[Type, object]:
    """Infer and run `op` on arrays (given as Vars), tuples of arrays, shapes or literals."""
    exprs, types, values = [], [], []
    for position, arg in enumerate(args):
        if isinstance(arg, np.ndarray):
            exprs.append(Var(f"a{position}"))
            types.append(ttype(arg))
        elif isinstance(arg, tuple) and arg and isinstance(arg[0], np.ndarray):
            exprs.append(Tuple(tuple(Var(f"a{position}_{i}") for i in range(len(arg)))))
            types.append(TupleType(tuple(ttype(a) for a in arg)))
        elif isinstance(arg, ShapeExpr):
            exprs.append(arg)
            types.append(None)
            arg = arg.values
        else:
            exprs.append(Literal("prim", arg))  # type: ignore[arg-type]
            types.append(None)
        values.append(arg)
    node = Call(op, tuple(exprs), tuple(sorted(attrs.items())), loc=Loc("m.py", 3, 9))  # type: ignore[arg-type]
    out_type = OPS[op].infer(node, types)
    return out_type, evaluate(node, values, out_type)


def floats(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


# ---------------------------------------------------------------------------- elementwise

shapes = st.lists(st.integers(1, 4), min_size=0, max_size=4).map(tuple)


@st.composite
def broadcastable(draw: st.DrawFn) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Two shapes that broadcast: the second is the first with some dims set to 1 and
    some leading dims dropped."""
    a = draw(shapes)
    b = tuple(d if draw(st.booleans()) else 1 for d in a)
    return a, b[draw(st.integers(0, len(b))) :]


@given(
    broadcastable(),
    st.sampled_from(["add", "subtract", "multiply", "divide", "maximum", "minimum"]),
    st.booleans(),
)
@example(((2, 3), (3,)), "add", False)
def test_binary_ops_broadcast_like_numpy(pair: tuple, op: str, swap: bool) -> None:
    a_shape, b_shape = pair[::-1] if swap else pair
    a, b = floats(*a_shape), floats(*b_shape)
    out_type, value = call(op, a, b)
    expected = {
        "add": np.add,
        "subtract": np.subtract,
        "multiply": np.multiply,
        "divide": np.divide,
        "maximum": np.maximum,
        "minimum": np.minimum,
    }[op](a, b)
    assert out_type == TensorType(np.broadcast_shapes(a_shape, b_shape), "float32")
    assert np.asarray(value).tobytes() == np.asarray(expected).tobytes()


def test_shapes_that_do_not_broadcast_are_an_error_at_the_call() -> None:
    with pytest.raises(
        InputError, match=r"^m.py:3:9: add of \(2, 3\) and \(4,\): shapes do not broadcast$"
    ):
        call("add", floats(2, 3), floats(4))


def test_binary_ops_need_one_dtype() -> None:
    with pytest.raises(InputError, match="float32 and int32: dtypes differ"):
        call("multiply", floats(2), np.ones(2, np.int32))


def test_integer_divide_truncates_toward_zero() -> None:
    a = np.array([7, -7, 7, -7, 6], np.int32)
    b = np.array([2, 2, -2, -2, 3], np.int32)
    _, value = call("divide", a, b)
    assert value.tolist() == [3, -3, -3, 3, 2]  # type: ignore[union-attr]
    assert value.dtype == np.int32  # type: ignore[union-attr]


def test_erf_matches_math_erf() -> None:
    xs = np.linspace(-7, 7, 4001)
    expected = np.array([math.erf(x) for x in xs])
    assert np.max(np.abs(kernels.erf(xs) - expected)) < 1e-13


def test_activations_match_their_formulas() -> None:
    x = floats(3, 5)
    wide = x.astype(np.float64)
    gelu = np.array([0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in wide.ravel()]).reshape(
        x.shape
    )
    np.testing.assert_allclose(call("nn.gelu", x)[1], gelu, rtol=1e-6)
    np.testing.assert_allclose(call("nn.silu", x)[1], wide / (1 + np.exp(-wide)), rtol=1e-6)
    np.testing.assert_allclose(call("sigmoid", x)[1], 1 / (1 + np.exp(-wide)), rtol=1e-6)
    assert np.array_equal(call("nn.relu", x)[1], np.where(x > 0, x, 0))
    assert call("isnan", np.array([1.0, np.nan], np.float32))[0] == TensorType((2,), "bool")


def test_where_broadcasts_and_needs_a_bool_condition() -> None:
    cond = np.array([True, False])
    out_type, value = call("where", cond, np.array(1.0, np.float32), floats(3, 2))
    assert out_type == TensorType((3, 2), "float32")
    assert np.all(np.asarray(value)[:, 0] == 1.0)
    with pytest.raises(InputError, match="condition is float32, not bool"):
        call("where", floats(2), floats(2), floats(2))


def test_astype_and_elementwise_flags() -> None:
    out_type, value = call("astype", floats(2, 2), dtype="float16")
    assert out_type == TensorType((2, 2), "float16") and value.dtype == np.float16  # type: ignore[union-attr]
    assert OPS["add"].inplace and OPS["add"].elementwise and not OPS["add"].view
    assert not OPS["equal"].inplace  # bool output, other byte size
    assert OPS["reshape"].view and not OPS["permute_dims"].view
    assert lookup("nn.nothing") is None


# ---------------------------------------------------------------------------- matmul


@pytest.mark.parametrize(
    ("a", "b", "out"),
    [
        ((2, 3), (3, 4), (2, 4)),
        ((5, 2, 3), (3, 4), (5, 2, 4)),
        ((3,), (3, 4), (4,)),
        ((2, 3), (3,), (2,)),
        ((1, 6, 2, 3), (4, 1, 3, 5), (4, 6, 2, 5)),
    ],
)
def test_matmul_shapes_follow_numpy(a: tuple, b: tuple, out: tuple) -> None:
    x, y = floats(*a), floats(*b)
    out_type, value = call("matmul", x, y, out_dtype=None)
    assert out_type == TensorType(out, "float32")
    assert np.asarray(value).tobytes() == np.matmul(x, y).tobytes()


def test_matmul_inner_dimensions_must_agree() -> None:
    with pytest.raises(InputError) as error:
        call("matmul", floats(2, 3), floats(4, 5))
    assert str(error.value) == "m.py:3:9: matmul of (2, 3) and (4, 5): inner dimensions differ"


# ---------------------------------------------------------------------------- shapes


def test_reshape_is_a_view_with_the_same_bytes() -> None:
    x = floats(2, 6)
    out_type, value = call("reshape", x, ShapeExpr((3, -1)))
    assert out_type == TensorType((3, 4), "float32")
    assert np.shares_memory(value, x)
    with pytest.raises(
        InputError, match=r"reshape of \(2, 6\) to \(5, 2\): element counts differ \(12 vs 10\)"
    ):
        call("reshape", x, ShapeExpr((5, 2)))


def test_permute_expand_squeeze_flatten() -> None:
    x = floats(2, 3, 4)
    assert np.array_equal(call("permute_dims", x, axes=(2, 0, 1))[1], x.transpose(2, 0, 1))
    assert call("permute_dims", x, axes=None)[0] == TensorType((4, 3, 2), "float32")
    assert call("expand_dims", floats(16), axis=(0, 2, 3))[0] == TensorType(
        (1, 16, 1, 1), "float32"
    )
    assert call("expand_dims", x, axis=-1)[0] == TensorType((2, 3, 4, 1), "float32")
    assert call("squeeze", floats(1, 3, 1), axis=None)[0] == TensorType((3,), "float32")
    assert call("flatten", x)[0] == TensorType((24,), "float32")
    with pytest.raises(InputError, match="axes .* are not a permutation"):
        call("permute_dims", x, axes=(0, 0, 1))
    with pytest.raises(InputError, match="axis 1 has size 3, not 1"):
        call("squeeze", floats(1, 3), axis=(1,))


def test_reductions_with_axes_and_keepdims() -> None:
    x = floats(2, 3, 4)
    out_type, value = call("mean", x, axis=(1, -1), keepdims=True)
    assert out_type == TensorType((2, 1, 1), "float32")
    np.testing.assert_allclose(value, x.mean(axis=(1, 2), keepdims=True), rtol=1e-6)
    assert call("sum", x, axis=None, keepdims=False)[0] == TensorType((), "float32")
    assert np.array_equal(call("max", x, axis=0, keepdims=False)[1], x.max(axis=0))


def test_concat_split_take_repeat() -> None:
    a, b = floats(2, 3), floats(2, 5)
    out_type, value = call("concat", (a, b), axis=1)
    assert out_type == TensorType((2, 8), "float32")
    assert np.array_equal(value, np.concatenate([a, b], axis=1))
    with pytest.raises(InputError, match="other dimensions differ"):
        call("concat", (a, b), axis=0)
    # TVM's sections: ceil(size / n) each, the last one shorter.
    out_type, parts = call("split", floats(10, 2), indices_or_sections=4, axis=0)
    assert [t.shape[0] for t in out_type.fields] == [3, 3, 3, 1]  # type: ignore[union-attr]
    assert [p.shape[0] for p in parts] == [3, 3, 3, 1]  # type: ignore[union-attr]
    table, ids = floats(5, 3), np.array([[4, 0], [2, 2]], np.int32)
    out_type, value = call("take", table, ids, axis=0, mode="fast")
    assert out_type == TensorType((2, 2, 3), "float32")
    assert np.array_equal(value, table[ids])
    assert np.array_equal(call("repeat", a, repeats=2, axis=1)[1], np.repeat(a, 2, axis=1))


def test_creation_and_triangles() -> None:
    out_type, value = call("full", ShapeExpr((3, 3)), np.array(-1e9, np.float32), dtype="float32")
    assert out_type == TensorType((3, 3), "float32") and np.all(
        np.asarray(value) == np.float32(-1e9)
    )
    # TVM prints triu's k positionally.
    _, upper = call("triu", np.asarray(value), 1)
    assert np.array_equal(upper, np.triu(np.asarray(value), 1))


def test_strided_slice() -> None:
    x = floats(4, 6)
    out_type, value = call("strided_slice", x, axes=(1,), begin=(1,), end=(6,), strides=(2,))
    assert out_type == TensorType((4, 3), "float32")
    assert np.array_equal(value, x[:, 1:6:2])


# ---------------------------------------------------------------------------- normalisation


def test_softmax_layer_norm_rms_norm() -> None:
    x = floats(2, 3, 8).astype(np.float64)
    soft = np.exp(x) / np.exp(x).sum(axis=-1, keepdims=True)
    np.testing.assert_allclose(call("nn.softmax", x, axis=-1)[1], soft, rtol=1e-12)
    gamma, beta = floats(8).astype(np.float64), floats(8).astype(np.float64)
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    expected = (x - mean) / np.sqrt(var + 1e-5) * gamma + beta
    _, value = call(
        "nn.layer_norm", x, gamma, beta, axes=(-1,), epsilon=1e-5, center=True, scale=True
    )
    np.testing.assert_allclose(value, expected, rtol=1e-10)
    _, value = call(
        "nn.layer_norm", x, gamma, beta, axes=(-1,), epsilon=1e-5, center=False, scale=False
    )
    np.testing.assert_allclose(value, (x - mean) / np.sqrt(var + 1e-5), rtol=1e-10)
    _, value = call("nn.rms_norm", x, gamma, axes=(-1,), epsilon=1e-5)
    np.testing.assert_allclose(
        value, x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-5) * gamma, rtol=1e-10
    )
    with pytest.raises(InputError, match=r"gamma has shape \(7,\), expected \(8,\)"):
        call("nn.layer_norm", x, floats(7), beta, axes=(-1,))


# ---------------------------------------------------------------------------- convolution


def conv2d_loops(
    x: np.ndarray, w: np.ndarray, stride: tuple, pad: tuple, dil: tuple, groups: int
) -> np.ndarray:
    n, _, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[2]), (pad[1], pad[3])))
    oh = (h + pad[0] + pad[2] - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + pad[1] + pad[3] - dil[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((n, o, oh, ow))
    per_group = o // groups
    for b, oc, i, j in itertools.product(range(n), range(o), range(oh), range(ow)):
        g = oc // per_group
        for ic, p, q in itertools.product(range(cg), range(kh), range(kw)):
            out[b, oc, i, j] += (
                xp[b, g * cg + ic, i * stride[0] + p * dil[0], j * stride[1] + q * dil[1]]
                * w[oc, ic, p, q]
            )
    return out


@st.composite
def conv_case(draw: st.DrawFn) -> dict:
    groups = draw(st.integers(1, 3))
    return {
        "groups": groups,
        "cg": draw(st.integers(1, 2)),
        "og": draw(st.integers(1, 2)),
        "k": (draw(st.integers(1, 3)), draw(st.integers(1, 3))),
        "stride": (draw(st.integers(1, 3)), draw(st.integers(1, 3))),
        "dil": (draw(st.integers(1, 2)), draw(st.integers(1, 2))),
        "pad": tuple(draw(st.integers(0, 2)) for _ in range(4)),
        "size": (draw(st.integers(5, 8)), draw(st.integers(5, 8))),
    }


@given(conv_case())
def test_conv2d_matches_loops(case: dict) -> None:
    g = case["groups"]
    x = floats(2, g * case["cg"], *case["size"]).astype(np.float64)
    w = floats(g * case["og"], case["cg"], *case["k"]).astype(np.float64)
    out_type, value = call(
        "nn.conv2d",
        x,
        w,
        strides=case["stride"],
        padding=case["pad"],
        dilation=case["dil"],
        groups=g,
        data_layout="NCHW",
        kernel_layout="OIHW",
        out_layout="NCHW",
        out_dtype=None,
    )
    expected = conv2d_loops(x, w, case["stride"], case["pad"], case["dil"], g)
    assert out_type == TensorType(expected.shape, "float64")
    np.testing.assert_allclose(value, expected, rtol=1e-10, atol=1e-12)


def test_conv2d_checks_channels_and_layouts() -> None:
    with pytest.raises(
        InputError, match="4 input channels do not match 3 weight channels x 1 groups"
    ):
        call("nn.conv2d", floats(1, 4, 5, 5), floats(2, 3, 3, 3))
    with pytest.raises(InputError, match="data_layout 'NHWC' is not supported"):
        call("nn.conv2d", floats(1, 3, 5, 5), floats(2, 3, 3, 3), data_layout="NHWC")


def conv2d_transpose_loops(
    x: np.ndarray, w: np.ndarray, stride: tuple, pad: tuple, out_pad: tuple, dil: tuple, groups: int
) -> np.ndarray:
    n, c, h, wd = x.shape
    _, og, kh, kw = w.shape
    full_h = (h - 1) * stride[0] + dil[0] * (kh - 1) + 1 + out_pad[0]
    full_w = (wd - 1) * stride[1] + dil[1] * (kw - 1) + 1 + out_pad[1]
    out = np.zeros((n, og * groups, full_h, full_w))
    cg = c // groups
    for b, ic, i, j, p, q, oc in itertools.product(
        range(n), range(c), range(h), range(wd), range(kh), range(kw), range(og)
    ):
        g = ic // cg
        out[b, g * og + oc, i * stride[0] + p * dil[0], j * stride[1] + q * dil[1]] += (
            x[b, ic, i, j] * w[ic, oc, p, q]
        )
    return out[:, :, pad[0] : full_h - pad[2], pad[1] : full_w - pad[3]]


@given(conv_case(), st.integers(0, 1))
def test_conv2d_transpose_matches_scattering_loops(case: dict, out_pad: int) -> None:
    g = case["groups"]
    stride = case["stride"]
    extra = (min(out_pad, stride[0] - 1), min(out_pad, stride[1] - 1))
    x = floats(1, g * case["cg"], 3, 4).astype(np.float64)
    w = floats(g * case["cg"], case["og"], *case["k"]).astype(np.float64)
    pad = tuple(min(p, k - 1) for p, k in zip(case["pad"], case["k"] * 2))
    out_type, value = call(
        "nn.conv2d_transpose",
        x,
        w,
        strides=stride,
        padding=pad,
        output_padding=extra,
        dilation=case["dil"],
        groups=g,
        kernel_layout="IOHW",
    )
    expected = conv2d_transpose_loops(x, w, stride, pad, extra, case["dil"], g)
    assert out_type == TensorType(expected.shape, "float64")
    np.testing.assert_allclose(value, expected, rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------------------- pooling


def pool_loops(
    x: np.ndarray, k: tuple, stride: tuple, pad: tuple, ceil: bool, kind: str, include_pad: bool
) -> np.ndarray:
    n, c, h, w = x.shape
    sizes = []
    for axis, size in enumerate((h, w)):
        span = size + pad[axis] + pad[axis + 2] - k[axis]
        sizes.append((span + (stride[axis] - 1 if ceil else 0)) // stride[axis] + 1)
    out = np.zeros((n, c, *sizes))
    for i, j in itertools.product(range(sizes[0]), range(sizes[1])):
        top, left = i * stride[0] - pad[0], j * stride[1] - pad[1]
        rows = [r for r in range(top, top + k[0]) if 0 <= r < h]
        cols = [q for q in range(left, left + k[1]) if 0 <= q < w]
        window = x[:, :, rows][:, :, :, cols]
        if kind == "max":
            out[:, :, i, j] = window.max(axis=(2, 3))
        else:
            if include_pad:
                count = (min(top + k[0], h + pad[2]) - top) * (min(left + k[1], w + pad[3]) - left)
            else:
                count = len(rows) * len(cols)
            out[:, :, i, j] = window.sum(axis=(2, 3)) / count
    return out


@given(
    st.tuples(st.integers(1, 3), st.integers(1, 3)),
    st.tuples(st.integers(1, 3), st.integers(1, 3)),
    st.integers(0, 1),
    st.booleans(),
    st.sampled_from(["max", "avg"]),
    st.booleans(),
)
def test_pooling_matches_loops(
    k: tuple, stride: tuple, pad_size: int, ceil: bool, kind: str, include: bool
) -> None:
    pad = tuple(min(pad_size, kk - 1) for kk in k * 2)
    x = floats(1, 2, 7, 6).astype(np.float64)
    for axis, size in enumerate(x.shape[2:]):
        # Ceil mode may add a last window that starts past the input and the leading
        # padding; as in TVM it is kept, but it holds no element to compare.
        span = size + 2 * pad[axis] - k[axis]
        last_start = -(-span // stride[axis]) * stride[axis] if ceil else span - span % stride[axis]
        assume(last_start < size + pad[axis])
    out_type, value = call(
        f"nn.{kind}_pool2d",
        x,
        pool_size=k,
        strides=stride,
        dilation=(1, 1),
        padding=pad,
        ceil_mode=ceil,
        count_include_pad=include,
        layout="NCHW",
        out_layout="NCHW",
    )
    expected = pool_loops(x, k, stride, pad, ceil, kind, include)
    assert out_type == TensorType(expected.shape, "float64")
    np.testing.assert_allclose(value, expected, rtol=1e-12)


def test_adaptive_avg_pool2d_matches_loops() -> None:
    x = floats(1, 2, 7, 5).astype(np.float64)
    out_type, value = call("nn.adaptive_avg_pool2d", x, output_size=(3, 2))
    expected = np.zeros((1, 2, 3, 2))
    for i, j in itertools.product(range(3), range(2)):
        r0, r1 = (i * 7) // 3, math.ceil((i + 1) * 7 / 3)
        c0, c1 = (j * 5) // 2, math.ceil((j + 1) * 5 / 2)
        expected[:, :, i, j] = x[:, :, r0:r1, c0:c1].mean(axis=(2, 3))
    assert out_type == TensorType((1, 2, 3, 2), "float64")
    np.testing.assert_allclose(value, expected, rtol=1e-12)


# ---------------------------------------------------------------------------- opaque kernels


def test_call_tir_types_from_out_ty_and_runs_the_mixing_kernel() -> None:
    x = floats(4, 4)
    out = TensorType((2, 8), "float32")
    out_type, value = call("call_tir", x, kernel="fused_add", out_ty=out)
    assert out_type == out
    again = call("call_tir", x.copy(), kernel="fused_add", out_ty=out)[1]
    assert np.asarray(value).tobytes() == np.asarray(again).tobytes()
    assert np.all(np.isfinite(value))
    other_name = call("call_tir", x, kernel="fused_mul", out_ty=out)[1]
    assert np.asarray(value).tobytes() != np.asarray(other_name).tobytes()


@given(st.integers(0, 4 * 4 * 4 - 1), st.integers(1, 255))
def test_mixing_kernel_output_depends_on_every_input_byte(position: int, flip: int) -> None:
    x = floats(4, 4)
    out = TensorType((3,), "float32")
    before = np.asarray(kernels.mix("k", [x], out))
    changed = x.copy()
    changed.view(np.uint8).reshape(-1)[position] ^= flip
    after = np.asarray(kernels.mix("k", [changed], out))
    assert before.tobytes() != after.tobytes()


def test_mixing_kernel_gives_tuples_and_ints() -> None:
    out = TupleType((TensorType((2,), "int32"), TensorType((3,), "bool")))
    first, second = kernels.mix("k", [np.zeros(3, np.float32)], out)  # type: ignore[misc]
    assert first.dtype == np.int32 and first.shape == (2,) and np.all(first >= 0)
    assert second.dtype == np.bool_


def test_call_tir_inplace_overwrites_its_argument_of_the_same_type() -> None:
    x = floats(4, 4)
    node = Call(
        "call_tir_inplace",
        (Var("x"), Const(1.0, "float32")),
        (("inplace_indices", (0,)), ("kernel", "add_inplace"), ("out_ty", ttype(x))),
        loc=Loc("m.py", 5, 2),
    )
    assert overwritten_args(node) == (0,)
    assert OPS["call_tir_inplace"].infer(node, [ttype(x), TensorType((), "float32")]) == ttype(x)
    with pytest.raises(InputError, match="^m.py:5:2: call_tir_inplace of 'add_inplace': output"):
        OPS["call_tir_inplace"].infer(node, [TensorType((4,), "float32"), None])


def test_evaluate_rejects_a_kernel_result_of_the_wrong_type() -> None:
    node = Call("add", (Var("a"), Var("b")))
    with pytest.raises(RuntimeError, match="type rule says"):
        evaluate(node, [floats(2), floats(2)], TensorType((3,), "float32"))


def test_broadcast_to_pad_cumsum() -> None:
    x = floats(1, 3)
    out_type, value = call("broadcast_to", x, ShapeExpr((2, 3)))
    assert out_type == TensorType((2, 3), "float32") and np.array_equal(
        value, np.broadcast_to(x, (2, 3))
    )
    out_type, value = call(
        "nn.pad", floats(2, 2), pad_width=(0, 1, 1, 2), pad_value=0.5, pad_mode="constant"
    )
    assert out_type == TensorType((3, 5), "float32")
    assert np.asarray(value)[2, 0] == 0.5 and np.asarray(value)[0, 0] == 0.5
    ints_ = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
    assert call("cumsum", ints_, axis=1)[1].tolist() == [[1, 3, 6], [4, 9, 15]]  # type: ignore[union-attr]
    assert call("cumsum", ints_, axis=1, exclusive=True)[1].tolist() == [[0, 1, 3], [0, 4, 9]]  # type: ignore[union-attr]
    assert call("cumsum", ints_, axis=None)[0] == TensorType((6,), "int32")


def test_batch_norm_in_inference_form() -> None:
    x = floats(2, 3, 4, 4).astype(np.float64)
    gamma, beta, mean, var = (floats(3).astype(np.float64) for _ in range(4))
    var = np.abs(var) + 0.5
    out_type, (out, _, moving_var) = call(  # type: ignore[misc]
        "nn.batch_norm", x, gamma, beta, mean, var, axis=1, epsilon=1e-5, center=True, scale=True
    )
    shape = (1, 3, 1, 1)
    expected = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + 1e-5) * gamma.reshape(
        shape
    ) + beta.reshape(shape)
    np.testing.assert_allclose(out, expected, rtol=1e-12)
    assert np.array_equal(moving_var, var) and out_type.fields[1] == TensorType((3,), "float64")  # type: ignore[union-attr]


def test_out_dtype_is_the_accumulation_type() -> None:
    a = np.full((1, 4096), 1.0, np.float16)
    b = np.full((4096, 1), 1.0, np.float16)
    out_type, value = call("matmul", a, b, out_dtype="float32")
    assert out_type == TensorType((1, 1), "float32")
    assert np.asarray(value)[0, 0] == 4096.0
    x = np.ones((1, 1, 4, 4), np.float16)
    out_type, value = call("nn.conv2d", x, np.ones((1, 1, 3, 3), np.float16), out_dtype="float32")
    assert out_type == TensorType((1, 1, 2, 2), "float32") and np.all(np.asarray(value) == 9.0)


def test_zero_dimensional_results_stay_zero_dimensional() -> None:
    # np.ascontiguousarray turns a 0-d array into shape (1,); the kernels must not.
    scalar = np.array(1.5, np.float32)
    for op, attrs in (("permute_dims", {"axes": ()}), ("nn.relu", {}), ("exp", {})):
        out_type, value = call(op, scalar, **attrs)
        assert out_type == TensorType((), "float32") and np.asarray(value).shape == ()


def test_unary_ops_keep_an_integer_dtype() -> None:
    out_type, value = call("exp", np.array([0, 1, 2], np.int32))
    assert out_type == TensorType((3,), "int32") and value.dtype == np.int32  # type: ignore[union-attr]
    assert np.asarray(value).tolist() == [1, 2, 7]


def test_effects_are_op_facts() -> None:
    from optplan.ops import OPS, has_effect

    for name in (
        "memory.alloc_storage",
        "memory.alloc_tensor",
        "memory.kill_tensor",
        "vm.kill_object",
    ):
        assert OPS[name].effect and has_effect(name)
    for name in ("print", "call_packed", "vm.builtin.anything"):
        assert has_effect(name)
    assert not any(has_effect(name) for name in ("add", "reshape", "call_tir", "nn.conv2d"))


def test_memory_ops_name_their_override_point() -> None:
    from optplan.ops import OPS, Runs

    assert OPS["call_kernel"].runs is Runs.KERNEL
    assert OPS["memory.alloc_storage"].runs is Runs.ALLOC_STORAGE
    assert OPS["memory.alloc_tensor"].runs is Runs.ALLOC_TENSOR
    assert OPS["builtin.alloc_tensor"].runs is Runs.ALLOC_FRESH
    assert OPS["memory.kill_tensor"].runs is Runs.KILL_TENSOR
    assert OPS["memory.kill_storage"].runs is Runs.KILL_STORAGE
    assert OPS["vm.kill_object"].runs is Runs.KILL_OBJECT
    special = ("memory.", "vm.", "call_kernel", "builtin.")
    assert all(op.runs is Runs.OP for name, op in OPS.items() if not name.startswith(special))
