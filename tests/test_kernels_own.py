"""optplan's own kernels where `onnx.reference` is wrong or NumPy is slow, and how a
kernel that fails is reported.

- `gather_elements` against a brute force over every output element, with indices shorter
  than the data on the other axes (where `onnx.reference` fails) and negative indices;
- `matmul` in float16 is float32's product rounded once, in both runs alike;
- a kernel that raises ends `optplan run` with one line naming the node, exit 2.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from optplan.ops import kernels


@st.composite
def gather_cases(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, int]:
    rank = draw(st.integers(1, 3))
    data_shape = tuple(draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank)))
    axis = draw(st.integers(-rank, rank - 1))
    # Indices may be shorter than the data on every axis, and longer on the gather axis.
    index_shape = tuple(
        draw(st.integers(1, 5)) if d == axis % rank else draw(st.integers(1, n))
        for d, n in enumerate(data_shape)
    )
    size = data_shape[axis % rank]
    flat = draw(st.lists(st.integers(-size, size - 1), min_size=1, max_size=1))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    indices = rng.integers(-size, size, index_shape) if seed % 2 else np.full(index_shape, flat[0])
    data = np.arange(int(np.prod(data_shape)), dtype=np.float32).reshape(data_shape)
    return data, indices.astype(np.int64), axis


def _gather_brute(data: np.ndarray, indices: np.ndarray, axis: int) -> np.ndarray:
    axis %= data.ndim
    out = np.empty(indices.shape, data.dtype)
    for where in itertools.product(*(range(n) for n in indices.shape)):
        source = list(where)
        source[axis] = int(indices[where]) % data.shape[axis]
        out[where] = data[tuple(source)]
    return out


@given(gather_cases())
@settings(max_examples=80, deadline=None)
@example((np.arange(512, dtype=np.float32).reshape(1, 512), np.zeros((1, 16), np.int64), 1))
def test_gather_elements_matches_brute_force(case: tuple[np.ndarray, np.ndarray, int]) -> None:
    data, indices, axis = case
    np.testing.assert_array_equal(
        kernels.gather_elements(data, indices, axis), _gather_brute(data, indices, axis)
    )


def test_gather_elements_refuses_an_index_out_of_range() -> None:
    with pytest.raises(IndexError, match="outside"):
        kernels.gather_elements(np.zeros((2, 3)), np.array([[3]]), 1)


@given(
    st.integers(1, 3), st.integers(1, 9), st.integers(1, 9), st.integers(1, 9), st.integers(0, 99)
)
@settings(max_examples=40, deadline=None)
def test_float16_matmul_is_float32_rounded_once(
    batch: int, m: int, k: int, n: int, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((batch, m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    got = kernels.matmul(a, b, "float16")
    assert got.dtype == np.float16
    want = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)
    assert got.tobytes() == want.tobytes()
    # Rounding once from float32 is within one float16 step of the exact product.
    exact = a.astype(np.float64) @ b.astype(np.float64)
    assert np.allclose(got, exact, rtol=2e-3, atol=2e-3 * np.abs(exact).max(initial=1.0))


def test_matmul_accumulates_in_a_wider_out_dtype() -> None:
    a = np.full((2, 3), 0.1, np.float16)
    assert kernels.matmul(a, a.T, "float32").dtype == np.float32


# ---------------------------------------------------------------------------- ONNX


def _gather_model(tmp_path: Path, data_shape: list[int], index_value: int) -> str:
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    index = numpy_helper.from_array(np.full((1, 4), index_value, np.int64), "index")
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("GatherElements", ["r", "index"], ["g"], axis=1),
        helper.make_node("Neg", ["g"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "gather",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, data_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
        [index],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path = tmp_path / "gather.onnx"
    onnx.save(model, path)
    return str(path)


def test_onnx_gather_elements_replays(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The shape onnx.reference cannot run: a (1, 4) index into (1, 32) data."""
    from optplan.cli import main

    path = _gather_model(tmp_path, [1, 32], 5)
    assert main(["run", path, "--planner", "greedy"]) == 0
    assert "bit-for-bit equal" in capsys.readouterr().out


def test_onnx_gather_elements_matches_onnxruntime(tmp_path: Path) -> None:
    ort = pytest.importorskip("onnxruntime")
    from optplan.frontends.onnx import read_onnx
    from optplan.runtime import replay as executor

    path = _gather_model(tmp_path, [1, 32], -3)
    model = read_onnx(path, {})
    x = np.linspace(-1, 1, 32, dtype=np.float32).reshape(1, 32)
    run = executor.reference_run(model.program, {"x": x, **model.weights})
    (want,) = ort.InferenceSession(path).run(None, {"x": x})
    assert run.outputs[0].tobytes() == want.tobytes()


def test_a_failing_kernel_is_one_line_naming_the_node(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from optplan.cli import main

    path = _gather_model(tmp_path, [1, 4], 9)  # index 9 on an axis of 4
    assert main(["run", path, "--planner", "greedy"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "'g' = onnx.GatherElements: the kernel failed: IndexError" in err
    assert "Traceback" not in err
