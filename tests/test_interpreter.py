"""The one interpreter: its override points, and its runs on typed programs."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
from hypothesis import HealthCheck, assume, given, settings

from optplan.analysis.liveness import build_memory
from optplan.analysis.types import infer_types, typed_program
from optplan.errors import InputError
from optplan.frontends.script import parse
from optplan.ir import Binding, Call, If, Program, Type, iter_bindings
from optplan.passes import plan_memory
from optplan.planners import get_planner
from optplan.runtime.interpreter import Interpreter, Value
from optplan.runtime.lowered import Lowered, run_lowered
from optplan.runtime.replay import Planned, Run, compare, make_inputs, planned_run, reference_run
from optplan.strategies.passes import straight_programs
from optplan.strategies.programs import programs


@dataclass(slots=True)
class Tracing(Interpreter):
    """The reference interpreter, noting every op it hands to `call_op`."""

    ops: list[str] = field(default_factory=list)

    def call_op(
        self, call: Call, args: list[Value], out_type: Type | None, binding: Binding | None
    ) -> Value:
        self.ops.append(call.op)
        return Interpreter.call_op(self, call, args, out_type, binding)


@settings(max_examples=60, deadline=None)
@given(straight_programs())
def test_an_override_sees_every_call_and_changes_nothing(program: Program) -> None:
    program = infer_types(program)
    inputs = make_inputs(program)
    tracing = Tracing(program, inputs)
    traced = tracing.run()
    calls = [b.value.op for b in iter_bindings(program.main.body) if isinstance(b.value, Call)]
    assert tracing.ops == calls
    assert compare(reference_run(program, inputs), traced) is None


@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much], deadline=None)
@given(programs())
def test_the_three_runners_agree_on_random_programs(program: Program) -> None:
    """Reference, planned replay and lowered run are one interpreter with different
    override points: on tuples, kernels, in-place calls, views and Ifs they give the same
    values bit for bit."""
    program = infer_types(program)
    try:
        memory = build_memory(program)
    except InputError:
        assume(False)  # a branch whose value is a call: not a program liveness accepts
    inputs = make_inputs(program)
    reference = reference_run(program, inputs)
    assume(reference.failure is None)
    plan = get_planner("greedy")(memory.problem)
    assert compare(reference, planned_run(program, memory, plan, inputs)) is None
    lowered = run_lowered(plan_memory(program, memory, plan), inputs)
    assert lowered.failure is None
    assert compare(Run(outputs=reference.outputs), Run(outputs=lowered.outputs)) is None


def test_runners_are_interpreters() -> None:
    assert issubclass(Planned, Interpreter) and issubclass(Lowered, Interpreter)
    overridden = {
        name for name in vars(Lowered) if name in vars(Interpreter) and not name.startswith("__")
    }
    assert overridden <= {
        "record", "if_value", "alloc_storage", "alloc_tensor", "alloc_fresh",
        "kill_tensor", "kill_storage", "call_kernel",
    }  # fmt: skip


@settings(max_examples=30, deadline=None)
@given(programs())
def test_types_are_inferred_once(program: Program) -> None:
    try:
        typed = infer_types(program)
    except InputError:
        assume(False)
    assert typed.typed and not program.typed
    assert typed_program(typed) is typed
    assert typed == infer_types(typed)
    assert all(
        b.type is not None for b in iter_bindings(typed.main.body) if not isinstance(b.value, If)
    )


OUT_OF_RANGE = """
from tvm.script import relax as R

@R.function
def main(x: R.Tensor((2,), dtype="float16")) -> R.Tensor((2,), dtype="float16"):
    with R.dataflow():
        y: R.Tensor((2,), dtype="float16") = R.add(x, R.const(100000.0, "float16"))
        R.output(y)
    return y
"""


def test_a_constant_beyond_its_dtype_is_infinite_without_a_warning() -> None:
    """float16 holds at most 65504: a larger constant is inf, as NumPy and TVM make it,
    and the cast is meant, not a fault to warn of."""
    program = infer_types(parse(OUT_OF_RANGE))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run = reference_run(program, make_inputs(program))
    assert run.failure is None and np.isinf(run.outputs[0]).all()
