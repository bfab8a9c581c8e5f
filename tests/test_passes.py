"""Tests of the memory passes: golden texts of small programs, TVM's own kills on the MLP,
the BatchNorm constant that must never be written, replays, and properties over random
programs (every planned buffer killed exactly once on every path, never before a use;
rewritten programs replay bit for bit like the originals).

Golden files: `tests/golden/<name>.in.py` is the input, `<name>.out.py` the expected
printed output. Set OPTPLAN_UPDATE_GOLDEN=1 to rewrite the outputs after a deliberate
change (and read the diff).
"""

from __future__ import annotations

import os
from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings

from optplan.analysis.liveness import build_memory
from optplan.analysis.types import infer_types, verify
from optplan.errors import InputError
from optplan.frontends.script import load, parse, print_program
from optplan.ir import Binding, Call, If, Program, Var, iter_bindings
from optplan.passes import (
    attach_layout_free_buffers,
    kill_after_last_use,
    plan_memory,
    use_inplace_calls,
)
from optplan.passes.kill import strip_kills
from optplan.planners import get_planner
from optplan.planners.tokens import TokensPlanner
from optplan.runtime.check import check_program
from optplan.runtime.lowered import run_lowered
from optplan.runtime.replay import Run, compare, make_inputs, planned_run, reference_run
from optplan.strategies.passes import kill_faults, straight_programs
from optplan.strategies.programs import programs

GOLDEN = Path(__file__).parent / "golden"
DATA = Path(__file__).parents[2] / "shared" / "data" / "tvm"
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason=f"TVM dumps not found at {DATA}")


def golden(name: str, text: str) -> None:
    expected = GOLDEN / f"{name}.out.py"
    if os.environ.get("OPTPLAN_UPDATE_GOLDEN") or not expected.exists():
        expected.write_text(text)
    assert text == expected.read_text()


def inplace_indices(program: Program) -> dict[str, object]:
    return {
        b.var.name: b.value.attr("inplace_indices")
        for b in iter_bindings(program.main.body)
        if isinstance(b.value, Call) and b.value.attr("inplace_indices") is not None
    }


# ---------------------------------------------------------------------------- kill_after_last_use


@pytest.mark.parametrize("name", ["kill_alias", "kill_if", "kill_if_call"])
def test_kill_golden(name: str) -> None:
    program = load(GOLDEN / f"{name}.in.py")
    killed = kill_after_last_use(program)
    golden(name, print_program(killed))
    assert parse(print_program(killed)) == killed
    assert kill_faults(program, killed) == []


def test_kill_if_cases() -> None:
    """Relay's three gaps: the condition dies at the top of both branches; a value dead
    in one branch dies at that branch's top; a branch result is moved, not killed."""
    killed = print_program(kill_after_last_use(load(GOLDEN / "kill_if.in.py")))
    then_part, else_part = killed.split("else:")
    assert "kill_tensor(c)" in then_part.split("if c:")[1] and "kill_tensor(c)" in else_part
    assert "kill_tensor(b)" in then_part.split("if c:")[1] and "kill_tensor(a)" in else_part
    assert "kill_tensor(y)" not in killed and killed.count("kill_tensor(r)") == 1


def test_kill_alias_class_dies_whole() -> None:
    killed = print_program(kill_after_last_use(load(GOLDEN / "kill_alias.in.py")))
    # a, b and the reshape c are one buffer: killed once, after c's last use (the sum).
    assert killed.count("kill_tensor(a)") == 1 and "kill_tensor(b)" not in killed
    assert killed.index("R.sum(c)") < killed.index("kill_tensor(a)")
    assert "kill_tensor(x)" not in killed and "kill_tensor(w)" not in killed
    assert "kill_tensor(h)" not in killed  # returned
    assert "kill_tensor(unused)" in killed  # never read: dead on arrival


def test_kill_is_idempotent() -> None:
    killed = kill_after_last_use(load(GOLDEN / "kill_if.in.py"))
    assert kill_after_last_use(killed) == killed


def test_kill_replays_like_the_original() -> None:
    program = infer_types(load(GOLDEN / "kill_if.in.py"))
    killed = kill_after_last_use(program)
    inputs = make_inputs(program)
    assert compare(reference_run(program, inputs), reference_run(killed, inputs)) is None


def _kill_signature(program: Program) -> list[tuple[str, str]]:
    """Kills modulo TVM's CanonicalizeBindings and LowerAllocTensor: var-to-var aliases
    are replaced by their source, and a storage made for one tensor is that tensor's
    allocation. Each kill is paired with the last non-kill statement before it."""
    bindings = list(iter_bindings(program.main.body))
    alias: dict[str, str] = {}
    for b in bindings:
        if isinstance(b.value, Var):
            alias[b.var.name] = alias.get(b.value.name, b.value.name)
    single = _single_tensor_storages(bindings)
    signature, anchor = [], ""
    for b in bindings:
        value = b.value
        if isinstance(value, Var) or (
            _is_op(value, "memory.alloc_storage") and b.var.name in single
        ):
            continue
        if isinstance(value, Call) and value.op.startswith("memory.kill"):
            target = value.args[0]
            assert isinstance(target, Var)
            if target.name not in single:
                signature.append((anchor, f"{value.op}({alias.get(target.name, target.name)})"))
            continue
        args = [alias.get(a.name, a.name) for a in getattr(value, "args", ()) if isinstance(a, Var)]
        anchor = f"{b.var.name}:{getattr(value, 'op', '')}:{args}"
    return signature


def _is_op(value: object, op: str) -> bool:
    return isinstance(value, Call) and value.op == op


def _single_tensor_storages(bindings: list[Binding]) -> set[str]:
    """Storages that LowerAllocTensor made for one tensor, right before carving it."""
    single = set()
    for b, after in pairwise(bindings):
        if not (
            _is_op(b.value, "memory.alloc_storage") and _is_op(after.value, "memory.alloc_tensor")
        ):
            continue
        carvers = [
            x
            for x in bindings
            if _is_op(x.value, "memory.alloc_tensor") and x.value.args[0] == b.var
        ]  # type: ignore[union-attr]
        if len(carvers) == 1:
            single.add(b.var.name)
    return single


@needs_data
@pytest.mark.parametrize("model", ["mlp", "mlp.unfused", "mlp.inplace", "mlp.unfused_inplace"])
def test_kills_match_tvm_on_mlp(model: str) -> None:
    ours = kill_after_last_use(load(DATA / f"{model}.4_planned.py"))
    tvm = load(DATA / f"{model}.5_killed.py")
    assert _kill_signature(ours) == _kill_signature(tvm)


@needs_data
def test_kills_differ_from_tvm_only_at_a_live_view_on_resnet18() -> None:
    """TVM kills `alloc21` while its reshape `lv127` is still read (kill_tensor drops one
    reference in TVM); optplan kills the alias class once, after the reshape's last use."""
    ours = _kill_signature(kill_after_last_use(load(DATA / "resnet18.4_planned.py")))
    tvm = _kill_signature(load(DATA / "resnet18.5_killed.py"))
    last = "_:call_kernel:['lv127', 'alloc22']"
    assert set(ours) - set(tvm) == {(last, "memory.kill_tensor(alloc21)")}
    assert set(tvm) - set(ours) == {
        (last, "memory.kill_tensor(lv127)"),
        ("lv127:reshape:['alloc21']", "memory.kill_tensor(alloc21)"),
    }


@settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(programs())
def test_every_buffer_is_killed_once_on_every_path(program: Program) -> None:
    try:
        for fn in infer_types(program).functions:
            build_memory(Program((fn,)))
    except (ValueError, InputError):
        assume(False)  # a branch whose value is a call: not a program liveness accepts
    killed = kill_after_last_use(program)
    assert kill_faults(program, killed) == []
    verify(killed)
    if _round_trips(program):
        assert parse(print_program(killed)) == killed
    inputs = make_inputs(program)
    reference = reference_run(program, inputs)
    assume(reference.failure is None)  # random call_tir_inplace may write a parameter
    assert compare(reference, reference_run(killed, inputs)) is None


def _round_trips(program: Program) -> bool:
    try:
        return parse(print_program(program)) == program
    except (ValueError, InputError):
        return False


# ---------------------------------------------------------------------------- use_inplace_calls


def test_inplace_golden() -> None:
    program = load(GOLDEN / "inplace.in.py")
    rewritten = use_inplace_calls(program)
    golden("inplace", print_program(rewritten))
    assert inplace_indices(rewritten) == {
        "b": (1,),
        "c": (0,),
        "d": (0,),
        "e": (0,),
        "f": (0,),
        "out": (0,),
    }


def test_inplace_replays_bit_for_bit() -> None:
    program = infer_types(load(GOLDEN / "inplace.in.py"))
    rewritten = use_inplace_calls(program)
    inputs = make_inputs(program)
    reference = reference_run(program, inputs)
    assert compare(reference, reference_run(rewritten, inputs)) is None
    memory = build_memory(rewritten)
    plan = get_planner("greedy")(memory.problem)
    assert compare(reference, planned_run(rewritten, memory, plan, inputs)) is None
    assert plan.arena < get_planner("greedy")(build_memory(program).problem).arena


def test_inplace_refuses_the_batchnorm_constant() -> None:
    """TVM 0.27 writes BatchNorm's `var + eps` into the weight `var`; optplan leaves it."""
    rewritten = use_inplace_calls(load(GOLDEN / "inplace.in.py"))
    assert "eps" not in inplace_indices(rewritten)


def test_forced_inplace_on_a_weight_fails_the_replay() -> None:
    program = infer_types(load(GOLDEN / "inplace.in.py"))
    forced = _force(program, "eps", (0,))
    inputs = make_inputs(program)
    run = reference_run(forced, inputs)
    assert run.failure is not None and "read-only" in run.failure
    memory = build_memory(forced)
    planned = planned_run(forced, memory, get_planner("greedy")(memory.problem), inputs)
    assert planned.failure is not None


def test_forced_inplace_on_a_constant_fails_the_replay() -> None:
    text = (GOLDEN / "inplace.in.py").read_text().replace("R.add(var, R.const", "R.add(R.const")
    text = text.replace('"float32"))\n        e:', '"float32"), var)\n        e:')
    program = infer_types(parse(text))
    assert "eps" not in inplace_indices(use_inplace_calls(program))
    run = reference_run(_force(program, "eps", (0,)), make_inputs(program))
    assert run.failure is not None and "read-only" in run.failure


def _force(program: Program, name: str, indices: tuple[int, ...]) -> Program:
    import dataclasses

    def seq_replace(binding: Binding) -> Binding:
        if binding.var.name == name and isinstance(binding.value, Call):
            call = binding.value
            return dataclasses.replace(
                binding,
                value=dataclasses.replace(call, attrs=call.attrs + (("inplace_indices", indices),)),
            )
        return binding

    fn = program.main
    blocks = tuple(
        dataclasses.replace(b, bindings=tuple(seq_replace(x) for x in b.bindings))
        for b in fn.body.blocks
    )
    return program.replace_function(
        dataclasses.replace(fn, body=dataclasses.replace(fn.body, blocks=blocks))
    )


@settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(straight_programs())
def test_inplace_property(program: Program) -> None:
    rewritten = use_inplace_calls(program)
    inputs = make_inputs(program)
    reference = reference_run(program, inputs)
    assert reference.failure is None
    assert compare(reference, reference_run(rewritten, inputs)) is None
    memory = build_memory(rewritten)
    plan = get_planner("greedy")(memory.problem)
    assert compare(reference, planned_run(rewritten, memory, plan, inputs)) is None
    # The weight is never overwritten, whoever reads it.
    for b in iter_bindings(rewritten.main.body):
        if isinstance(b.value, Call) and b.value.attr("inplace_indices") is not None:
            (index,) = b.value.attr("inplace_indices")  # type: ignore[misc]
            assert b.value.args[index] not in (Var("w"), Var("x"))


@settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(programs())
def test_inplace_on_random_programs_replays(program: Program) -> None:
    try:
        rewritten = use_inplace_calls(program)
    except (ValueError, InputError):
        assume(False)
    inputs = make_inputs(program)
    reference = reference_run(program, inputs)
    assume(reference.failure is None)
    assert compare(reference, reference_run(rewritten, inputs)) is None
    memory = build_memory(rewritten)
    plan = get_planner("greedy")(memory.problem)
    assert compare(reference, planned_run(rewritten, memory, plan, inputs)) is None


# ---------------------------------------------------------------------------- layout-free buffers


def test_layout_free_golden() -> None:
    program = load(GOLDEN / "layout_free.in.py")
    attached = attach_layout_free_buffers(program)
    golden("layout_free", print_program(attached))
    assert parse(print_program(attached)) == attached
    assert [k.name for k in attached.kernels] == ["fused_dense", "fused_relu"]
    calls = [b.value for b in iter_bindings(attached.main.body) if isinstance(b.value, Call)]
    assert [c.attr("layout_free_buffers") for c in calls] == [(1, 2, 3), None]


@needs_data
def test_layout_free_on_resnet18() -> None:
    program = load(DATA / "resnet18.2_fused_dataflow.py")
    attached = attach_layout_free_buffers(program)
    first = next(b.value for b in iter_bindings(attached.main.body) if isinstance(b.value, Call))
    assert first.attr("layout_free_buffers") == (1, 2, 3, 4, 5)


# ---------------------------------------------------------------------------- plan_memory


@pytest.mark.parametrize("planner", ["greedy", "tokens"])
def test_lower_golden(planner: str) -> None:
    program = infer_types(load(GOLDEN / "lower.in.py"))
    memory = build_memory(program, alignment=1)
    plan = (
        TokensPlanner()(memory.problem)
        if planner == "tokens"
        else get_planner(planner)(memory.problem)
    )
    lowered = plan_memory(program, memory, plan)
    text = print_program(lowered)
    golden(f"lower_{planner}", text)
    assert parse(text) == lowered
    inputs = make_inputs(program)
    reference = reference_run(program, inputs)
    assert (
        compare(Run(outputs=reference.outputs), Run(outputs=run_lowered(lowered, inputs).outputs))
        is None
    )


@pytest.mark.parametrize("positive", [True, False])
def test_lower_if_copies_into_the_if_tensor(positive: bool) -> None:
    program = infer_types(load(GOLDEN / "kill_if.in.py"))
    memory = build_memory(program, alignment=1)
    lowered = plan_memory(program, memory, get_planner("greedy")(memory.problem))
    inputs = make_inputs(program)
    inputs["x"] = abs(inputs["x"]) if positive else -abs(inputs["x"])
    reference = reference_run(program, inputs)
    shared = run_lowered(lowered, inputs)
    assert compare(Run(outputs=reference.outputs), Run(outputs=shared.outputs)) is None
    node = next(b.value for b in iter_bindings(lowered.main.body) if isinstance(b.value, If))
    assert node.then_branch.body == Var("r_then") and node.else_branch.body == Var("r_else")


@needs_data
@pytest.mark.parametrize("model", ["mlp", "resnet18", "resnet18.unfused"])
@pytest.mark.parametrize("planner", ["greedy", "tokens"])
def test_lower_tvm_models_replay(model: str, planner: str) -> None:
    program = infer_types(load(DATA / f"{model}.2_fused_dataflow.py"))
    memory = build_memory(program, alignment=1)
    plan = (
        TokensPlanner()(memory.problem)
        if planner == "tokens"
        else get_planner(planner)(memory.problem)
    )
    lowered = plan_memory(program, memory, plan)
    inputs = make_inputs(program)
    reference = reference_run(program, inputs)
    fresh, shared = run_lowered(lowered, inputs, shared=False), run_lowered(lowered, inputs)
    assert compare(fresh, shared) is None
    assert compare(Run(outputs=reference.outputs), Run(outputs=shared.outputs)) is None


@settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(straight_programs())
def test_lower_property(program: Program) -> None:
    program = use_inplace_calls(program)
    memory = build_memory(program)
    inputs = make_inputs(program)
    reference = reference_run(program, inputs)
    for plan in (get_planner("greedy")(memory.problem), TokensPlanner()(memory.problem)):
        lowered = plan_memory(program, memory, plan)
        shared = run_lowered(lowered, inputs)
        assert shared.failure is None
        assert compare(Run(outputs=reference.outputs), Run(outputs=shared.outputs)) is None
        assert kill_faults(strip_kills(lowered), lowered) == []


@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much], deadline=None)
@given(programs())
def test_lower_random_programs_replay(program: Program) -> None:
    """Tuples, kernels with tuple outputs, call_tir_inplace, views, If: lowered onto
    greedy and tokens plans, the program gives the reference's outputs bit for bit."""
    program = infer_types(program)
    try:
        memory = build_memory(program)
    except InputError:
        assume(False)  # a branch whose value is a call: not a program liveness accepts
    inputs = make_inputs(program)
    reference = reference_run(program, inputs)
    assume(reference.failure is None)
    for name in ("greedy", "tokens"):
        lowered = plan_memory(program, memory, get_planner(name)(memory.problem))
        shared = run_lowered(lowered, inputs)
        assert shared.failure is None
        assert compare(Run(outputs=reference.outputs), Run(outputs=shared.outputs)) is None
        assert check_program(lowered).violations == ()
