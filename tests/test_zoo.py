"""The tiny torch zoo: models exported by torch itself, replayed against onnxruntime.

`tests/data/zoo` holds tiny CNNs (ResNet, MobileNet, UNet written in torch.nn) and
transformers (GPT-2, BERT, ViT, LLaMA, BART from `transformers` configs with random
weights), each exported by TorchScript (`*_script.onnx`) and dynamo (`*_dynamo.onnx`), with
the export's inputs and onnxruntime's outputs (`.npz`); `benchmarks/zoo.py --size tiny
--write-tests tests/data/zoo` rebuilds them. For every one: static shapes without `--dim`,
a cpsat and a greedy plan that `validate` accepts, a replay in the plan's arena bit for
bit against the reference run, and the reference run's outputs within RTOL/ATOL of
onnxruntime's (the recorded ones, so onnxruntime need not be installed).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnx")

from optplan.analysis.liveness import build_memory
from optplan.frontends.onnx import read_onnx
from optplan.planners import get_planner
from optplan.problem.plan import validate
from optplan.runtime import replay as executor

ZOO = Path(__file__).resolve().parent / "data" / "zoo"
MODELS = sorted(p.stem for p in ZOO.glob("*.onnx"))
# float32 kernels in a different order than onnxruntime's: a few ulps on values of order 1.
RTOL, ATOL = 1e-4, 1e-5


@pytest.mark.skipif(not MODELS, reason="tests/data/zoo holds no models")
def test_the_zoo_covers_every_model_from_both_exporters() -> None:
    names = {m.rsplit("_", 1)[0] for m in MODELS}
    assert {"resnet", "mobilenet", "unet", "gpt2", "bert", "vit", "llama", "bart"} <= names
    for name in names:
        assert {f"{name}_script", f"{name}_dynamo"} <= set(MODELS)


@pytest.mark.parametrize("planner", ["greedy", "cpsat"])
@pytest.mark.parametrize("name", MODELS)
def test_zoo_model_replays_bit_for_bit_and_matches_onnxruntime(name: str, planner: str) -> None:
    model = read_onnx(str(ZOO / f"{name}.onnx"), {})
    memory = build_memory(model.program)
    options = {"time_limit": 2.0} if planner == "cpsat" else {}
    plan = get_planner(planner, **options)(memory.problem)
    assert plan.status.has_plan
    assert validate(memory.problem, plan) == []
    with np.load(ZOO / f"{name}.npz") as data:
        recorded = {k: data[k] for k in data.files}
    feeds = {
        model.names[k.removeprefix("input_")]: v
        for k, v in recorded.items()
        if k.startswith("input_")
    }
    inputs = {**model.weights, **feeds}
    reference = executor.reference_run(model.program, inputs)
    replay = executor.planned_run(model.program, memory, plan, inputs)
    assert reference.failure is None and replay.failure is None
    assert executor.compare(reference, replay) is None
    expected = [recorded[f"output_{i}"] for i in range(len(reference.outputs))]
    for got, want in zip(reference.outputs, expected, strict=True):
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
