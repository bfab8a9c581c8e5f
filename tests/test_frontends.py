"""Frontends by registry: one reader per suffix, each read once with its weights."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import optplan
from optplan.cli import main
from optplan.errors import InputError
from optplan.frontends import FRONTENDS, Frontend, Options, Source, frontend_of, load, register
from optplan.planners import get_planner
from optplan.problem import Buffer, Interval, Problem
from optplan.problem.plan import validate

ROOT = Path(__file__).resolve().parents[1]
ZOO = ROOT / "tests" / "data" / "zoo"


def test_the_registry_knows_programs_models_and_problems() -> None:
    assert {".py", ".onnx", ".csv", ".json"} <= set(FRONTENDS)
    assert FRONTENDS[".csv"].default_alignment == 1
    assert FRONTENDS[".py"].dims_at_replay and not FRONTENDS[".onnx"].dims_at_replay


def test_an_unknown_suffix_names_the_known_ones(tmp_path: Path) -> None:
    path = tmp_path / "model.xyz"
    path.write_bytes(b"")
    with pytest.raises(InputError, match=r"\.csv, \.json, \.onnx, \.py, \.tflite"):
        frontend_of(str(path))
    assert main(["plan", str(path)]) == 2


@st.composite
def problems(draw: st.DrawFn) -> Problem:
    count = draw(st.integers(1, 6))
    buffers = []
    for i in range(count):
        start, length = draw(st.integers(0, 8)), draw(st.integers(1, 5))
        buffers.append(
            Buffer(f"b{i}", draw(st.integers(1, 256)), (Interval(start, start + length),))
        )
    return Problem(tuple(buffers))


@settings(max_examples=25, deadline=None)
@given(problems())
def test_a_registered_frontend_is_read_by_load_and_the_command_line(problem: Problem) -> None:
    def read(path: str, options: Options) -> Source:
        return Source(problem=problem)

    register(Frontend(".toy", read, default_alignment=1))
    try:
        with tempfile.TemporaryDirectory() as scratch:
            path = Path(scratch) / "problem.toy"
            path.write_text("")
            loaded = optplan.load(str(path))
            assert loaded.problem == problem and loaded.program is None
            plan = get_planner("greedy")(loaded.problem)
            assert validate(loaded.problem, plan) == []
            assert main(["plan", str(path), "--planner", "greedy", "--json"]) == 0
    finally:
        del FRONTENDS[".toy"]


def test_an_onnx_model_is_read_once_on_run(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("onnx")
    from optplan.frontends import onnx as onnx_frontend

    path = ZOO / "resnet_script.onnx"
    if not path.is_file():
        pytest.skip("tests/data/zoo holds no models")
    reads: list[bool] = []
    original = onnx_frontend._read_checked

    def counted(path: str, *, load_data: bool) -> object:
        reads.append(load_data)
        return original(path, load_data=load_data)

    monkeypatch.setattr(onnx_frontend, "_read_checked", counted)
    assert main(["run", str(path), "--planner", "greedy"]) == 0
    assert reads == [True]
    assert "bit-for-bit" in capsys.readouterr().out


def test_load_carries_the_weights_of_an_onnx_model() -> None:
    pytest.importorskip("onnx")
    from optplan.frontends.onnx import read_onnx

    path = ZOO / "resnet_script.onnx"
    if not path.is_file():
        pytest.skip("tests/data/zoo holds no models")
    loaded = load(str(path))
    expected = read_onnx(str(path), {}).weights
    assert set(loaded.weights) == set(expected)
    for name, value in expected.items():
        assert np.array_equal(loaded.weights[name], value)
    assert loaded.program is not None and loaded.program.typed


def test_a_script_is_typed_once() -> None:
    loaded = load(str(ROOT / "examples" / "residual_cnn.py"))
    assert loaded.program is not None and loaded.program.typed
    assert loaded.weights == {}


@pytest.mark.parametrize("extra", [[], ["--inplace"]])
def test_run_infers_the_types_of_a_program_once(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], extra: list[str]
) -> None:
    from optplan.analysis import types

    inferred: list[str] = []
    original = types._infer_function

    def counted(fn: object, known: object) -> object:
        inferred.append(getattr(fn, "name", "?"))
        return original(fn, known)  # type: ignore[arg-type]

    monkeypatch.setattr(types, "_infer_function", counted)
    path = ROOT / "examples" / "residual_cnn.py"
    assert main(["run", str(path), "--planner", "greedy", *extra]) == 0
    assert "bit-for-bit" in capsys.readouterr().out
    assert len(inferred) == 1
