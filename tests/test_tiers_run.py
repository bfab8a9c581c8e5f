"""Programs planned in several memories replay bit for bit, copies included, and a plan
that moves a buffer wrongly shows in the replay."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

import optplan
from optplan import Memory, get_planner, validate
from optplan.problem import lower_bound
from optplan.problem.plan import Plan
from optplan.runtime.replay import compare, make_inputs, planned_run, reference_run

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _loaded(name: str, share: float) -> optplan.Loaded:
    path = str(EXAMPLES / name)
    least = lower_bound(optplan.load(path).problem)
    return optplan.load(
        path, memories=(Memory("fast", int(least * share)), Memory("slow", cost=10))
    )


def _replay(loaded: optplan.Loaded, plan: Plan) -> object:
    assert loaded.program is not None and loaded.memory is not None
    inputs = make_inputs(loaded.program)
    reference = reference_run(loaded.program, inputs)
    return compare(reference, planned_run(loaded.program, loaded.memory, plan, inputs))


@pytest.mark.parametrize("name", ["residual_cnn.py", "transformer_block.py"])
@pytest.mark.parametrize("share", [0.25, 0.5, 0.75])
@pytest.mark.parametrize("planner", ["naive", "greedy", "spill", "cpsat"])
def test_plans_of_two_memories_replay_bit_for_bit(name: str, share: float, planner: str) -> None:
    loaded = _loaded(name, share)
    options = {"time_limit": 20} if planner == "cpsat" else {}
    plan = get_planner(planner, **options)(loaded.problem)
    assert validate(loaded.problem, plan) == []
    assert _replay(loaded, plan) is None


def _with_copies() -> tuple[optplan.Loaded, Plan]:
    loaded = _loaded("transformer_block.py", 0.5)
    plan = get_planner("cpsat", time_limit=20)(loaded.problem)
    assert plan.copies, "the optimum here spills and prefetches"
    return loaded, plan


def test_a_missing_copy_reads_poison() -> None:
    loaded, plan = _with_copies()
    broken = dataclasses.replace(plan, copies=plan.copies[1:])
    assert validate(loaded.problem, broken)
    difference = _replay(loaded, broken)
    assert difference is not None


def test_a_copy_landing_on_a_live_buffer_shows() -> None:
    loaded, plan = _with_copies()
    moved = plan.copies[0]
    where = {(r.buffer, r.memory): r for r in plan.residences}
    target = where[(moved.buffer, moved.target)]
    others = [
        r
        for r in plan.residences
        if r.memory == moved.target
        and r.buffer != moved.buffer
        and any(iv.start <= moved.point < iv.end for iv in r.live)
    ]
    assert others
    residences = tuple(
        dataclasses.replace(r, offset=others[0].offset) if r is target else r
        for r in plan.residences
    )
    broken = dataclasses.replace(plan, residences=residences)
    assert any(f.kind == "overlap" for f in validate(loaded.problem, broken))
    assert _replay(loaded, broken) is not None


@pytest.mark.parametrize("name", ["residual_cnn.py", "transformer_block.py"])
def test_the_lowered_program_carves_each_memory_and_copies(name: str) -> None:
    from optplan.frontends.script import print_program
    from optplan.passes import plan_memory
    from optplan.runtime.lowered import run_lowered

    loaded = _loaded(name, 0.5 if name.startswith("transformer") else 0.75)
    assert loaded.program is not None and loaded.memory is not None
    plan = get_planner("cpsat", time_limit=20)(loaded.problem)
    assert plan.copies
    lowered = plan_memory(loaded.program, loaded.memory, plan)
    text = print_program(lowered)
    assert 'R.str("fast")' in text and 'R.str("slow")' in text
    for copy in plan.copies:
        assert f"astype({copy.buffer}, {copy.buffer}_{copy.target}" in text
    inputs = make_inputs(loaded.program)
    reference = reference_run(loaded.program, inputs)
    run = run_lowered(lowered, inputs)
    assert run.failure is None
    assert all(a.tobytes() == b.tobytes() for a, b in zip(reference.outputs, run.outputs))


ZOO = Path(__file__).resolve().parent / "data" / "zoo"


@pytest.mark.parametrize("name", ["gpt2_dynamo", "llama_script"])
@pytest.mark.parametrize("planner", ["greedy", "spill", "cpsat"])
def test_zoo_models_in_two_memories_replay_bit_for_bit(name: str, planner: str) -> None:
    """gpt2_dynamo splits a tuple whose fields die apart: a later read of one field must
    not ask for another that no memory holds any more."""
    pytest.importorskip("onnx")
    path = str(ZOO / f"{name}.onnx")
    least = lower_bound(optplan.load(path, alignment=16).problem)
    loaded = optplan.load(
        path, alignment=16, memories=(Memory("fast", least // 2), Memory("slow", cost=10))
    )
    assert loaded.program is not None and loaded.memory is not None
    plan = get_planner(planner, **({"time_limit": 30} if planner == "cpsat" else {}))(
        loaded.problem
    )
    assert validate(loaded.problem, plan) == []
    inputs = {**make_inputs(loaded.program), **loaded.weights}
    reference = reference_run(loaded.program, inputs)
    assert compare(reference, planned_run(loaded.program, loaded.memory, plan, inputs)) is None
