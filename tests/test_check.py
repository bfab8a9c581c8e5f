"""Tests of `optplan.runtime.check`: reading the plan out of planned programs, TVM's and ours.

On TVM's planned MLP and ResNet-18 the check reports TVM's own totals and "valid"; the
same plan with one tensor moved onto a live one is invalid, and so is TVM's in-place
ResNet-18, whose kernels write BatchNorm's `var + eps` into a model constant.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from optplan.analysis.liveness import build_memory
from optplan.analysis.types import infer_types
from optplan.frontends.script import load, parse, print_program
from optplan.ir import Binding, Call, Program, Var
from optplan.passes import lower_program, plan_memory
from optplan.planners import get_planner
from optplan.planners.tokens import TokensPlanner
from optplan.problem.plan import validate
from optplan.runtime.check import check_program, extract_plan

GOLDEN = Path(__file__).parent / "golden"
DATA = Path(__file__).parents[2] / "shared" / "data" / "tvm"
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason=f"TVM dumps not found at {DATA}")

TVM_TOTALS = {
    "mlp": 2097152,
    "mlp.unfused": 2102272,
    "resnet18": 4919296,
    "resnet18.unfused": 7432096,
    "resnet18.inplace": 4417536,
}


@needs_data
@pytest.mark.parametrize("stage", ["4_planned", "5_killed"])
@pytest.mark.parametrize("model", sorted(TVM_TOTALS))
def test_tvm_plans_are_valid_with_tvm_totals(model: str, stage: str) -> None:
    path = DATA / f"{model}.{stage}.py"
    report = check_program(load(path), path=str(path))
    assert report.arena_bytes == TVM_TOTALS[model]
    assert report.valid, report.summary()
    assert report.summary().endswith("valid")


@needs_data
def test_moved_tensor_on_mlp_is_invalid() -> None:
    text = (DATA / "mlp.4_planned.py").read_text()
    moved = text.replace(
        'alloc2: R.Tensor((128, 2048), dtype="float32") = R.memory.alloc_tensor(storage, 0',
        'alloc2: R.Tensor((128, 2048), dtype="float32") = R.memory.alloc_tensor(storage1, 0',
    )
    assert moved != text
    report = check_program(parse(moved, "moved.py"), path="moved.py")
    assert not report.valid
    assert any("'alloc1' and 'alloc2'" in v for v in report.violations)
    assert report.replay is not None


@needs_data
def test_moved_tensor_on_resnet18_is_invalid() -> None:
    program = infer_types(load(DATA / "resnet18.4_planned.py"))
    problem, plan = extract_plan(program)
    assert validate(problem, plan) == []
    victim, target = _overlapping_pair(program, problem)
    report = check_program(_move(program, victim, target), path="moved.py")
    assert not report.valid
    assert any(victim in v for v in report.violations)


def _overlapping_pair(program: Program, problem) -> tuple[str, str]:  # type: ignore[no-untyped-def]
    """A tensor and a storage of equal size holding a tensor live at the same time."""
    storage_of = {
        b.var.name: b.value.args[0].name  # type: ignore[union-attr]
        for b in program.main.body.blocks[0].bindings
        if isinstance(b.value, Call) and b.value.op == "memory.alloc_tensor"
    }
    for a in problem.buffers:
        for b in problem.buffers:
            if storage_of[a.id] != storage_of[b.id] and a.size == b.size and a.overlaps_in_time(b):
                return a.id, storage_of[b.id]
    raise AssertionError("no two live tensors of equal size")


def _move(program: Program, name: str, storage: str) -> Program:
    def moved(binding: Binding) -> Binding:
        if binding.var.name != name:
            return binding
        call = binding.value
        assert isinstance(call, Call)
        return dataclasses.replace(
            binding, value=dataclasses.replace(call, args=(Var(storage),) + call.args[1:])
        )

    fn = program.main
    block = fn.body.blocks[0]
    body = dataclasses.replace(
        fn.body, blocks=(dataclasses.replace(block, bindings=tuple(map(moved, block.bindings))),)
    )
    return program.replace_function(dataclasses.replace(fn, body=body))


@needs_data
def test_tvm_inplace_resnet18_writes_a_constant() -> None:
    """TVM 0.27's in-place pass writes BatchNorm's `var + eps` into the model constant:
    the plan itself is valid, but the replay, with read-only constants, stops there."""
    path = DATA / "resnet18.unfused_inplace.4_planned.py"
    report = check_program(load(path), path=str(path))
    assert report.violations == ()
    assert report.replay is not None and "read-only" in report.replay
    assert not report.valid


@pytest.mark.parametrize("planner", ["greedy", "tokens"])
def test_extract_plan_gives_back_our_own_plan(planner: str) -> None:
    program = infer_types(load(GOLDEN / "lower.in.py"))
    memory = build_memory(program, alignment=1)
    plan = (
        TokensPlanner()(memory.problem)
        if planner == "tokens"
        else get_planner(planner)(memory.problem)
    )
    lowered = plan_memory(program, memory, plan)
    problem, extracted = extract_plan(lowered)
    assert extracted.arena == plan.arena
    assert extracted.offsets == {b: plan.offsets[b] for b in extracted.offsets}
    assert {b.id: b.size for b in problem.buffers} == {b.id: b.size for b in memory.problem.buffers}
    assert check_program(lowered).valid


def test_overrunning_a_storage_is_invalid() -> None:
    program = infer_types(load(GOLDEN / "lower.in.py"))
    memory = build_memory(program, alignment=1)
    lowered = plan_memory(program, memory, get_planner("greedy")(memory.problem))
    text = print_program(lowered).replace(
        "R.memory.alloc_tensor(storage, 64", "R.memory.alloc_tensor(storage, 80"
    )
    report = check_program(parse(text))
    assert any("overruns storage" in v for v in report.violations)
    assert not report.valid


def test_a_tensor_off_its_element_alignment_is_invalid() -> None:
    """A float32 tensor at byte 1 of its storage cannot be read there, whatever else holds."""
    program = infer_types(load(GOLDEN / "lower.in.py"))
    memory = build_memory(program, alignment=1)
    lowered = plan_memory(program, memory, get_planner("greedy")(memory.problem))
    text = print_program(lowered)
    assert "R.memory.alloc_tensor(storage, 0," in text
    report = check_program(
        parse(
            text.replace(
                "R.memory.alloc_tensor(storage, 0,", "R.memory.alloc_tensor(storage, 1,", 1
            )
        )
    )
    assert any(
        "is not a multiple of 4, the alignment of its element type" in v for v in report.violations
    )
    assert not report.valid


@needs_data
@pytest.mark.parametrize(("planner", "arena"), [("tokens", 4919296), ("greedy", 4014080)])
def test_lowered_resnet18_checks_back_to_its_plan(planner: str, arena: int) -> None:
    program = load(DATA / "resnet18.2_fused_dataflow.py")
    lowered, plan = lower_program(program, get_planner(planner), alignment=1)
    assert plan.arena == arena
    report = check_program(parse(print_program(lowered)))
    assert report.valid, report.summary()
    assert report.arena_bytes == arena
    assert len(report.storages) == (5 if planner == "tokens" else 1)


def test_carving_an_unknown_storage_is_an_input_error() -> None:
    from optplan.errors import InputError

    text = """
@R.function
def main(x: R.Tensor((2,), dtype="float32")) -> R.Tensor((2,), dtype="float32"):
    a: R.Tensor((2,), dtype="float32") = R.memory.alloc_tensor(x, 0, R.shape([2]), R.dtype("float32"), 0)
    return a
"""
    with pytest.raises(InputError, match="carved from no storage") as caught:
        check_program(parse(text, "bad.py"))
    assert str(caught.value).startswith("bad.py:4:")


def test_if_result_lives_on_after_its_branch() -> None:
    """The tensor a branch yields is the If's value afterwards: moving it onto a tensor
    that is live after the If is caught."""
    program = infer_types(load(GOLDEN / "kill_if.in.py"))
    memory = build_memory(program, alignment=1)
    lowered = plan_memory(program, memory, get_planner("greedy")(memory.problem))
    problem, plan = extract_plan(lowered)
    assert validate(problem, plan) == []
    r_then = problem.buffer("r_then")
    after = max(iv.end for iv in memory.problem.buffer("r").live)
    assert r_then.end >= after


def test_report_as_json() -> None:
    import json

    program = infer_types(load(GOLDEN / "lower.in.py"))
    memory = build_memory(program, alignment=1)
    lowered = plan_memory(program, memory, get_planner("greedy")(memory.problem))
    record = json.loads(json.dumps(check_program(lowered, path="lower.py").as_dict()))
    assert record["valid"] is True and record["path"] == "lower.py"
    assert record["arena_bytes"] == sum(s["bytes"] for s in record["storages"])
