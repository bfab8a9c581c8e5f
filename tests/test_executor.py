"""The executor: reference run, planned replay in a poisoned arena, bytewise comparison.

MemoryFacts objects are built by hand for small programs, so each test says exactly which
bytes a value lives in and when they are freed; a property at the end runs random
programs through liveness and the planners.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optplan.analysis.liveness import build_memory
from optplan.analysis.memory import MemoryFacts, Placement, Releases
from optplan.analysis.types import infer_types
from optplan.errors import InputError
from optplan.ir import (
    Binding,
    Block,
    Call,
    Const,
    Function,
    If,
    Loc,
    MetaConst,
    Param,
    Program,
    SeqExpr,
    ShapeExpr,
    TensorType,
    Tuple,
    TupleGetItem,
    TupleType,
    Var,
)
from optplan.planners import PLANNERS
from optplan.problem import Buffer, Interval, Problem
from optplan.problem.plan import Plan, Status, validate
from optplan.runtime.replay import (
    POISON,
    compare,
    make_inputs,
    meta_key,
    planned_run,
    reference_run,
)
from optplan.strategies.programs import programs

T = TensorType((4, 4), "float32")  # 64 bytes
F32 = "float32"


def at(line: int) -> Loc:
    return Loc("m.py", line, 5)


def bind(name: str, value: object, line: int = 0) -> Binding:
    return Binding(Var(name), value, None, loc=at(line) if line else None)  # type: ignore[arg-type]


def fn_program(
    bindings: list[Binding],
    result: object,
    params: tuple[tuple[str, TensorType], ...] = (("x", T),),
) -> Program:
    body = SeqExpr((Block(tuple(bindings)),), result)  # type: ignore[arg-type]
    fn = Function("main", tuple(Param(Var(n), t) for n, t in params), None, body)
    return infer_types(Program((fn,)))


def plan_of(offsets: dict[str, int], arena: int) -> Plan:
    return Plan(offsets, arena, Status.FEASIBLE, "hand", 0)


def buffers(*specs: tuple[str, int, int]) -> Problem:
    return Problem(tuple(Buffer(name, 64, (Interval(start, end),)) for name, start, end in specs))


def chain() -> Program:
    """x -> a = relu(x) -> b = a + x -> c = b * a -> out = c + b (out not planned).

    point:  0 a   1 b   2 c   3 out
    a       [=================)          live [0, 3)
    b             [=================)    live [1, 4)
    c                   [=======)        live [2, 4)
    """
    return fn_program(
        [
            bind("a", Call("nn.relu", (Var("x"),)), 1),
            bind("b", Call("add", (Var("a"), Var("x"))), 2),
            bind("c", Call("multiply", (Var("b"), Var("a"))), 3),
            bind("out", Call("add", (Var("c"), Var("b"))), 4),
        ],
        Var("out"),
    )


def chain_memory() -> MemoryFacts:
    return MemoryFacts(
        buffers(("a", 0, 3), ("b", 1, 4), ("c", 2, 4)),
        placements={"a": Placement("a"), "b": Placement("b"), "c": Placement("c")},
        releases={"c": Releases(after=("a",)), "out": Releases(after=("b", "c"))},
    )


def replay(program: Program, memory: MemoryFacts, plan: Plan, seed: int = 0) -> object:
    inputs = make_inputs(program, seed)
    return compare(reference_run(program, inputs), planned_run(program, memory, plan, inputs))


# ---------------------------------------------------------------------------- runs


def test_reference_run_records_every_bound_value_in_order() -> None:
    program = chain()
    inputs = make_inputs(program)
    run = reference_run(program, inputs)
    x = inputs["x"]
    a = np.maximum(x, 0)
    assert list(run.values) == ["a", "b", "c", "out"]
    assert run.values["c"].tobytes() == ((a + x) * a).tobytes()
    assert run.outputs[0].tobytes() == run.values["out"].tobytes()
    assert run.locs["b"] == at(2) and run.failure is None


def test_a_valid_plan_replays_bit_for_bit() -> None:
    memory = chain_memory()
    plan = plan_of({"a": 0, "b": 64, "c": 128}, 192)
    assert validate(memory.problem, plan) == []
    assert replay(chain(), memory, plan) is None


def test_a_plan_reusing_freed_bytes_replays_bit_for_bit() -> None:
    memory = MemoryFacts(
        buffers(("a", 0, 3), ("b", 1, 4), ("c", 2, 4), ("d", 4, 5)),
        placements={n: Placement(n) for n in "abcd"},
        releases={"c": Releases(after=("a",)), "d": Releases(after=("b", "c", "d"))},
    )
    program = fn_program(
        [
            bind("a", Call("nn.relu", (Var("x"),))),
            bind("b", Call("add", (Var("a"), Var("x")))),
            bind("c", Call("multiply", (Var("b"), Var("a")))),
            bind("out", Call("add", (Var("c"), Var("b")))),
            bind("d", Call("exp", (Var("out"),))),
        ],
        Var("out"),
    )
    plan = plan_of({"a": 0, "b": 64, "c": 128, "d": 0}, 192)
    assert validate(memory.problem, plan) == []
    assert replay(program, memory, plan) is None


def test_two_live_tensors_sharing_bytes_show_as_a_difference() -> None:
    # c overwrites a while a is still to be read by c's own op... and b by out.
    plan = plan_of({"a": 0, "b": 64, "c": 64}, 128)
    assert validate(chain_memory().problem, plan)  # the judge sees it too
    difference = replay(chain(), chain_memory(), plan)
    assert difference is not None
    assert difference.name == "out"  # type: ignore[attr-defined]
    assert str(difference).startswith("m.py:4:5: 'out' differs from the reference run at element ")


def test_poison_shows_a_buffer_released_too_early() -> None:
    memory = chain_memory()
    early = MemoryFacts(memory.problem, memory.placements, releases={"b": Releases(after=("a",))})
    difference = replay(chain(), early, plan_of({"a": 0, "b": 64, "c": 128}, 192))
    assert difference is not None and difference.name == "c"  # type: ignore[attr-defined]


def test_nan_values_compare_bytewise() -> None:
    program = fn_program(
        [bind("a", Call("sqrt", (Var("x"),))), bind("out", Call("negative", (Var("a"),)))],
        Var("out"),
    )
    memory = MemoryFacts(
        buffers(("a", 0, 2)),
        placements={"a": Placement("a")},
        releases={"out": Releases(after=("a",))},
    )
    inputs = {"x": -np.ones((4, 4), np.float32)}
    reference = reference_run(program, inputs)
    assert np.isnan(reference.values["a"]).all()
    assert compare(reference, planned_run(program, memory, plan_of({"a": 0}, 64), inputs)) is None


def test_views_share_the_bytes_of_their_source() -> None:
    program = fn_program(
        [
            bind("a", Call("exp", (Var("x"),))),
            bind("r", Call("reshape", (Var("a"), ShapeExpr((16,))))),
            bind("same", Var("r")),
            bind("out", Call("add", (Var("same"), Const(1.0, F32)))),
        ],
        Var("out"),
    )
    memory = MemoryFacts(
        buffers(("a", 0, 4)),
        placements={"a": Placement("a"), "r": Placement("a"), "same": Placement("a")},
        releases={"out": Releases(after=("a",))},
    )
    assert replay(program, memory, plan_of({"a": 64}, 128)) is None


def test_tuple_results_and_items_live_at_their_placements() -> None:
    program = fn_program(
        [
            bind("parts", Call("split", (Var("x"),), (("axis", 0), ("indices_or_sections", 2)))),
            bind("p0", TupleGetItem(Var("parts"), 0)),
            bind("p1", TupleGetItem(Var("parts"), 1)),
            bind("pair", Tuple((Var("p1"), Var("p0")))),
            bind("out", Call("concat", (Var("pair"),), (("axis", 0),))),
        ],
        Var("out"),
    )
    problem = Problem(
        (Buffer("parts[0]", 32, (Interval(0, 5),)), Buffer("parts[1]", 32, (Interval(0, 5),)))
    )
    memory = MemoryFacts(
        problem,
        placements={
            "parts": (Placement("parts[0]"), Placement("parts[1]")),
            "p0": Placement("parts[0]"),
            "p1": Placement("parts[1]"),
            "pair": (Placement("parts[1]"), Placement("parts[0]")),
        },
        releases={"out": Releases(after=("parts[0]", "parts[1]"))},
    )
    inputs = make_inputs(program)
    reference = reference_run(program, inputs)
    assert list(reference.values)[:2] == ["parts[0]", "parts[1]"]
    assert (
        compare(
            reference,
            planned_run(program, memory, plan_of({"parts[0]": 32, "parts[1]": 0}, 64), inputs),
        )
        is None
    )
    overlapping = plan_of({"parts[0]": 16, "parts[1]": 0}, 64)
    assert compare(reference, planned_run(program, memory, overlapping, inputs)) is not None


def test_if_copies_the_branch_value_and_poisons_on_entry() -> None:
    cond = TensorType((), "bool")
    then_branch = SeqExpr((Block((bind("t", Call("exp", (Var("a"),))),)),), Var("t"))
    else_branch = SeqExpr((Block((bind("e", Call("negative", (Var("x"),))),)),), Var("e"))
    body = SeqExpr(
        (
            Block(
                (
                    bind("a", Call("nn.relu", (Var("x"),))),
                    bind("r", If(Var("c"), then_branch, else_branch)),
                )
            ),
        ),
        Var("r"),
    )
    program = infer_types(
        Program((Function("main", (Param(Var("c"), cond), Param(Var("x"), T)), None, body),))
    )
    problem = Problem(
        (
            Buffer("a", 64, (Interval(0, 3),)),
            Buffer("t", 64, (Interval(2, 4),)),
            Buffer("e", 64, (Interval(5, 7),)),
        )
    )
    memory = MemoryFacts(
        problem,
        placements={"a": Placement("a"), "t": Placement("t"), "e": Placement("e")},
        releases={"r": Releases(else_entry=("a",), then_exit=("a", "t"), else_exit=("e",))},
    )
    # The else branch does not read a, so e may take a's bytes.
    plan = plan_of({"a": 0, "t": 64, "e": 0}, 128)
    for taken in (True, False):
        inputs = {"c": np.array(taken), "x": make_inputs(program)["x"]}
        reference = reference_run(program, inputs)
        assert compare(reference, planned_run(program, memory, plan, inputs)) is None
        assert ("t" in reference.values) == taken


# ---------------------------------------------------------------------------- read-only


def overwrite(target: object) -> Call:
    return Call(
        "call_tir_inplace",
        (target, Const(1.0, F32)),  # type: ignore[arg-type]
        (("inplace_indices", (0,)), ("kernel", "add_inplace"), ("out_ty", T)),
    )


def test_writing_into_a_parameter_fails_in_both_runs() -> None:
    program = fn_program([bind("out", overwrite(Var("x")), 3)], Var("out"))
    inputs = make_inputs(program)
    reference = reference_run(program, inputs)
    assert (
        reference.failure is not None and "writes into 'x', which is read-only" in reference.failure
    )
    planned = planned_run(program, MemoryFacts(Problem(())), plan_of({}, 0), inputs)
    assert planned.failure is not None
    difference = compare(reference, planned)
    assert difference is not None and str(difference).startswith(
        "m.py:3:5: the reference run failed"
    )
    assert inputs["x"].flags.writeable  # the caller's arrays are not touched


def test_writing_into_a_view_of_a_constant_fails() -> None:
    meta = MetaConst("ir.GenericConst", 0, TensorType((16,), F32))
    program = fn_program(
        [bind("v", Call("reshape", (meta, ShapeExpr((4, 4))))), bind("out", overwrite(Var("v")))],
        Var("out"),
    )
    run = reference_run(program, make_inputs(program))
    assert run.failure is not None and "'v'" in run.failure


def test_an_in_place_call_writes_into_its_planned_argument() -> None:
    program = fn_program(
        [bind("a", Call("exp", (Var("x"),))), bind("out", overwrite(Var("a")))], Var("out")
    )
    memory = MemoryFacts(
        buffers(("a", 0, 2)), placements={"a": Placement("a"), "out": Placement("a")}
    )
    inputs = make_inputs(program)
    reference = reference_run(program, inputs)
    # The reference keeps a's own value; the replay overwrites a's bytes in place.
    assert reference.values["a"].tobytes() != reference.values["out"].tobytes()
    assert compare(reference, planned_run(program, memory, plan_of({"a": 0}, 64), inputs)) is None


# ---------------------------------------------------------------------------- kills


def test_a_read_after_a_kill_shows_in_a_planned_run() -> None:
    program = fn_program(
        [
            bind("a", Call("exp", (Var("x"),))),
            bind("_", Call("memory.kill_tensor", (Var("a"),))),
            bind("out", Call("negative", (Var("a"),)), 7),
        ],
        Var("out"),
    )
    memory = MemoryFacts(buffers(("a", 0, 3)), placements={"a": Placement("a")})
    difference = replay(program, memory, plan_of({"a": 0}, 64))
    assert difference is not None and difference.name == "out"  # type: ignore[attr-defined]


def test_a_lowered_kernel_call_points_to_the_lowered_runner() -> None:
    program = fn_program(
        [
            bind("_", Call("call_kernel", (Var("x"), Var("x")), (("kernel", "k"),))),
            bind("out", Var("x")),
        ],
        Var("out"),
    )
    with pytest.raises(
        InputError, match="lowered program; run it with optplan.runtime.lowered.run_lowered"
    ):
        reference_run(program, make_inputs(program))


# ---------------------------------------------------------------------------- inputs


def test_make_inputs_is_deterministic_and_respects_take_and_sqrt() -> None:
    ids_type = TensorType((1, 8), "int32")
    program = fn_program(
        [
            bind("flat", Call("reshape", (Var("ids"), ShapeExpr((8,))))),
            bind("emb", Call("take", (Var("table"), Var("flat")), (("axis", 0), ("mode", "fast")))),
            bind("eps", Call("add", (Var("var"), Const(1e-5, F32)))),
            bind("root", Call("sqrt", (Var("eps"),))),
            bind(
                "out",
                Call(
                    "call_tir",
                    (Var("emb"), MetaConst("ir.GenericConst", 2)),
                    (("kernel", "k"), ("out_ty", T)),
                ),
            ),
        ],
        Var("out"),
        params=(
            ("ids", ids_type),
            ("table", TensorType((5, 4), F32)),
            ("var", TensorType((4,), F32)),
        ),
    )
    first, second = make_inputs(program, seed=3), make_inputs(program, seed=3)
    assert all(first[k].tobytes() == second[k].tobytes() for k in first)
    assert first["ids"].dtype == np.int32 and first["ids"].min() >= 0 and first["ids"].max() < 5
    assert first["var"].min() > 0
    assert meta_key("ir.GenericConst", 2) in first
    assert make_inputs(program, seed=4)["table"].tobytes() != first["table"].tobytes()
    run = reference_run(program, first)
    assert not np.isnan(run.values["root"]).any()


def test_inputs_of_the_wrong_shape_are_refused() -> None:
    with pytest.raises(
        InputError,
        match=r"input 'x' is \(2,\) float32, but the program declares R.Tensor\(\(4, 4\), float32\)",
    ):
        reference_run(chain(), {"x": np.zeros(2, np.float32)})


# ---------------------------------------------------------------------------- with liveness


def test_poison_fills_the_arena_between_values() -> None:
    program = chain()
    memory = build_memory(program, alignment=64)
    plan = PLANNERS["naive"](memory.problem)
    inputs = make_inputs(program)
    run = planned_run(program, memory, plan, inputs)
    assert run.failure is None and POISON == 0xA5


@pytest.mark.parametrize("name", sorted(PLANNERS))
def test_every_planner_replays_the_chain(name: str) -> None:
    program = chain()
    memory = build_memory(program, alignment=1)
    plan = PLANNERS[name](memory.problem)
    assert validate(memory.problem, plan) == []
    assert replay(program, memory, plan) is None


@settings(max_examples=40)
@given(programs(), st.integers(0, 3))
def test_random_programs_replay_bit_for_bit(program: Program, seed: int) -> None:
    typed = infer_types(program)
    memory = build_memory(typed, alignment=1)
    plan = PLANNERS["greedy"](memory.problem)
    assert validate(memory.problem, plan) == []
    inputs = make_inputs(typed, seed)
    reference = reference_run(typed, inputs)
    planned = planned_run(typed, memory, plan, inputs)
    if reference.failure is not None:
        # In-place writes into parameters fail in both runs alike.
        assert planned.failure is not None
        return
    assert compare(reference, planned) is None


def test_a_dead_if_result_is_recorded_before_its_bytes_are_poisoned() -> None:
    cond = TensorType((), "bool")
    then_branch = SeqExpr((Block((bind("t", Call("negative", (Var("x"),))),)),), Var("t"))
    else_branch = SeqExpr((Block((bind("e", Call("nn.relu", (Var("x"),))),)),), Var("e"))
    body = SeqExpr((Block((bind("r", If(Var("c"), then_branch, else_branch)),)),), Var("x"))
    program = infer_types(
        Program((Function("main", (Param(Var("c"), cond), Param(Var("x"), T)), None, body),))
    )
    memory = build_memory(program, alignment=1)
    plan = PLANNERS["greedy"](memory.problem)
    for taken in (True, False):
        inputs = {"c": np.array(taken), "x": make_inputs(program)["x"]}
        assert (
            compare(reference_run(program, inputs), planned_run(program, memory, plan, inputs))
            is None
        )


def test_a_read_after_an_in_place_call_sees_the_new_value_in_both_runs() -> None:
    program = fn_program(
        [
            bind("a", Call("exp", (Var("x"),))),
            bind("b", overwrite(Var("a"))),
            bind("out", Call("add", (Var("a"), Var("b")))),
        ],
        Var("out"),
    )
    memory = build_memory(program, alignment=1)
    inputs = make_inputs(program)
    reference = reference_run(program, inputs)
    assert reference.values["out"].tobytes() == (reference.values["b"] * 2).tobytes()
    plan = PLANNERS["greedy"](memory.problem)
    assert compare(reference, planned_run(program, memory, plan, inputs)) is None


def test_an_in_place_call_with_a_fresh_second_output() -> None:
    pair = TupleType((T, T))
    node = Call(
        "call_tir_inplace",
        (Var("a"),),
        (("inplace_indices", (0, -1)), ("kernel", "two_outputs"), ("out_ty", pair)),
    )
    program = fn_program(
        [
            bind("a", Call("exp", (Var("x"),))),
            bind("t", node),
            bind("first", TupleGetItem(Var("t"), 0)),
            bind("out", Call("add", (Var("first"), Var("a")))),
        ],
        Var("out"),
    )
    inputs = make_inputs(program)
    run = reference_run(program, inputs)
    assert run.values["t[0]"].tobytes() != run.values["t[1]"].tobytes()
    # The first output is a itself, so out = 2 * t[0].
    assert run.values["out"].tobytes() == (run.values["t[0]"] * 2).tobytes()
    memory = MemoryFacts(
        buffers(("a", 0, 4), ("t[1]", 1, 2)),
        placements={
            "a": Placement("a"),
            "t": (Placement("a"), Placement("t[1]")),
            "first": Placement("a"),
        },
    )
    assert (
        compare(run, planned_run(program, memory, plan_of({"a": 0, "t[1]": 64}, 128), inputs))
        is None
    )


def test_a_plan_that_misses_a_buffer_or_overruns_the_arena_fails_the_replay() -> None:
    inputs = make_inputs(chain())
    reference = reference_run(chain(), inputs)
    missing = planned_run(chain(), chain_memory(), plan_of({"a": 0, "b": 64}, 192), inputs)
    assert missing.failure == "the plan gives no offset for buffer 'c'"
    short = planned_run(chain(), chain_memory(), plan_of({"a": 0, "b": 64, "c": 128}, 150), inputs)
    assert short.failure is not None and "outside the arena of 150 bytes" in short.failure
    difference = compare(reference, short)
    assert difference is not None and str(difference).startswith("m.py:3:5: the planned run failed")


def test_an_in_place_write_over_an_if_value_leaves_the_branch_source_alone() -> None:
    """v1's If hands over v0, which is returned; relu writes over v1 in place. The
    reference run once shared v0's array with v1, so the write changed v0 there (and
    not in the planned run, where the If's value has its own bytes)."""
    from optplan.passes import use_inplace_calls

    scalar = TensorType((), "float32")
    ifs = Block(
        (
            bind("v0", If(Var("cond"), SeqExpr((), Var("x0")), SeqExpr((), Var("x0")))),
            bind("v1", If(Var("cond"), SeqExpr((), Var("v0")), SeqExpr((), Var("x0")))),
        )
    )
    tail = Block((bind("v5", Call("nn.relu", (Var("v1"),))),), dataflow=True, outputs=(Var("v5"),))
    params = (Param(Var("x0"), scalar), Param(Var("cond"), TensorType((), "bool")))
    source = Program((Function("main", params, None, SeqExpr((ifs, tail), Var("v0"))),))
    program = infer_types(use_inplace_calls(source))
    memory = build_memory(program, alignment=1)
    plan = PLANNERS["greedy"](memory.problem)
    inputs = {"x0": np.array(-1.5, dtype=np.float32), "cond": np.array(True)}
    reference = reference_run(program, inputs)
    assert reference.outputs[0] == np.float32(-1.5)
    assert compare(reference, planned_run(program, memory, plan, inputs)) is None
