"""optplan's offline plans run in TensorFlow Lite Micro (`pip install tflite-micro`).

Every model of tests/data/tflite runs in TFLite Micro's Python interpreter twice, with its
own planner and with optplan's plan in its metadata: the planned head is optplan's arena
and no larger than TFLite Micro's, and the outputs are byte for byte the same. One model
is measured to the byte by bisection on the arena size, and a plan that overlaps two live
tensors is shown to run and compute something else (TFLite Micro does not check).
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip(
    "tflite_micro", reason="tflite-micro is not installed (pip install tflite-micro)"
)

from optplan.cli import main
from optplan.frontends import load
from optplan.frontends.tflite import tensor_names
from optplan.frontends.tflite_format import parse_model
from optplan.integrations.tflm import offline_offsets, planned_model, with_offline_plan
from optplan.integrations.tflm_run import (
    compare_in_tflm,
    model_inputs,
    prober,
    smallest_arena,
)
from optplan.planners import get_planner
from optplan.problem import lower_bound

DATA = Path(__file__).parent / "data" / "tflite"
MODELS = ("ds_cnn", "mobilenet_v1_025", "resnet8", "autoencoder", "mobilenet_v2_035", "transformer")
ROOMY = 4 << 20  # an arena every model fits in


def _outputs_equal(a: tuple, b: tuple) -> bool:  # type: ignore[type-arg]
    return len(a) == len(b) and all(x.tobytes() == y.tobytes() for x, y in zip(a, b))


@pytest.mark.parametrize("name", MODELS)
def test_the_planned_model_runs_with_a_smaller_head_and_the_same_outputs(
    name: str, tmp_path: Path
) -> None:
    path = DATA / f"{name}.tflite"
    loaded = load(str(path))
    plan = get_planner("cpsat", time_limit=30)(loaded.problem)
    assert plan.arena == lower_bound(loaded.problem)
    planned = tmp_path / "planned.tflite"
    planned.write_bytes(planned_model(loaded, plan))
    data = path.read_bytes()
    inputs = model_inputs(data)
    outputs = len(parse_model(data).subgraphs[0].outputs)
    with prober(path, inputs, outputs) as run:
        own = run(ROOMY)
    with prober(planned, inputs, outputs) as run:
        offline = run(ROOMY)
    assert own.fits and offline.fits
    assert offline.head_bytes == plan.arena <= own.head_bytes
    assert _outputs_equal(own.outputs, offline.outputs)


def test_the_smallest_arenas_found_by_bisection() -> None:
    path = DATA / "ds_cnn.tflite"
    loaded = load(str(path))
    plan = get_planner("cpsat", time_limit=30)(loaded.problem)
    found = compare_in_tflm(path.read_bytes(), planned_model(loaded, plan), plan.lower_bound)
    assert found.outputs_equal
    assert found.planned.arena_bytes <= found.own.arena_bytes
    assert found.planned.run.head_bytes == plan.arena
    # One byte less and the planned model no longer runs: the bisection's answer is exact.
    inputs = model_inputs(path.read_bytes())
    with prober(path, inputs, 1) as run:
        assert not run(found.own.arena_bytes - 1).fits
    again = smallest_arena(path, inputs, 1, plan.lower_bound)
    assert again.arena_bytes == found.own.arena_bytes


def test_an_overlapping_plan_runs_and_computes_something_else(tmp_path: Path) -> None:
    """Why optplan validates before writing: TFLite Micro takes any offsets it is given."""
    path = DATA / "resnet8.tflite"
    loaded = load(str(path))
    plan = get_planner("greedy")(loaded.problem)
    data = path.read_bytes()
    names = tensor_names(parse_model(data).subgraphs[0])
    wrong = tmp_path / "wrong.tflite"
    wrong.write_bytes(
        with_offline_plan(data, [min(o, 0) for o in offline_offsets(loaded, plan, names)])
    )
    inputs = model_inputs(data)
    with prober(path, inputs, 1) as run:
        own = run(ROOMY)
    with prober(wrong, inputs, 1) as run:
        overlapping = run(ROOMY)
    assert overlapping.fits and not _outputs_equal(own.outputs, overlapping.outputs)


def test_run_and_check_on_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = DATA / "autoencoder.tflite"
    assert main(["run", str(path), "--time-limit", "10"]) == 0
    out = capsys.readouterr().out
    assert "replay bit-for-bit equal" in out and "outputs byte-for-byte equal" in out
    planned = tmp_path / "autoencoder.planned.tflite"
    assert main(["plan", str(path), "--time-limit", "10", "-o", str(planned)]) == 0
    assert main(["check", str(planned)]) == 0
    assert capsys.readouterr().out.rstrip().endswith("valid")
