"""Training steps as TVM writes them (`tests/data/training`: a forward function
differentiated by Relax's gradient pass and printed by TVM, `benchmarks/graphs/
relax_training.py`), where the order of the backward ops matters most: reordered within
a work budget, proven optimal, no worse than the program order or any of Inductor's
three orders, and the reordered program, planned, replays bit for bit against the
original's unplanned run."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from optplan.analysis.liveness import build_memory
from optplan.frontends import load
from optplan.passes.reorder import reorder
from optplan.planners import get_planner
from optplan.problem.plan import validate
from optplan.runtime.replay import compare, make_inputs, planned_run, reference_run
from optplan.schedule import Scheduler

FILES = sorted((Path(__file__).parent / "data" / "training").glob("*.py"))


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_training_steps_reorder_to_a_proven_optimum_and_replay(path: Path) -> None:
    program = load(str(path)).program
    assert program is not None
    result = reorder(program, Scheduler("auto", time_limit=60, work=2_000_000))
    assert result.optimal
    assert result.peak_bytes < result.original_peak_bytes
    for heuristic in ("program", "lpmf", "bfs", "dfs"):
        assert result.peak_bytes <= reorder(program, Scheduler(heuristic)).peak_bytes
    memory = build_memory(result.program, alignment=1)
    plan = get_planner("cpsat", time_limit=10.0)(memory.problem)
    assert validate(memory.problem, plan) == []
    inputs = make_inputs(program)
    assert (
        compare(reference_run(program, inputs), planned_run(result.program, memory, plan, inputs))
        is None
    )


ZOO = Path(__file__).parent / "data" / "zoo"
ZOO_MODELS = sorted(p.stem for p in ZOO.glob("*.onnx"))


@pytest.mark.parametrize("name", ZOO_MODELS)
def test_every_reordered_zoo_model_replays_bit_for_bit(name: str) -> None:
    pytest.importorskip("onnx")
    from optplan.frontends.onnx import read_onnx

    model = read_onnx(str(ZOO / f"{name}.onnx"), {})
    result = reorder(model.program, Scheduler("auto", time_limit=30, work=1_000_000))
    assert result.peak_bytes <= result.original_peak_bytes
    for heuristic in ("lpmf", "bfs", "dfs"):
        assert result.peak_bytes <= reorder(model.program, Scheduler(heuristic)).peak_bytes
    memory = build_memory(result.program)
    plan = get_planner("greedy")(memory.problem)
    assert validate(memory.problem, plan) == []
    with np.load(ZOO / f"{name}.npz") as data:  # the export's own inputs: shapes follow them
        feeds = {
            model.names[k.removeprefix("input_")]: data[k]
            for k in data.files
            if k.startswith("input_")
        }
    inputs = {**model.weights, **feeds}
    reference = reference_run(model.program, inputs)
    assert reference.failure is None
    assert compare(reference, planned_run(result.program, memory, plan, inputs)) is None
