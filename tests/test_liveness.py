"""Liveness: program points, intervals [def, last use + 1), views, tuples, If branches."""

from __future__ import annotations

from optplan.analysis.liveness import build_memory
from optplan.analysis.memory import Placement
from optplan.ir import (
    Binding,
    Block,
    Call,
    Function,
    If,
    Param,
    Program,
    SeqExpr,
    TensorType,
    Tuple,
    TupleGetItem,
    TupleType,
    Var,
)
from optplan.problem import Interval

T = TensorType((4, 4), "float32")  # 64 bytes


def kernel(*args: str, out: TensorType | TupleType = T, inplace: int | None = None) -> Call:
    attrs: list[tuple[str, object]] = [("kernel", "k"), ("out_ty", out)]
    if inplace is not None:
        attrs.append(("inplace_indices", (inplace,)))
    return Call(
        "call_tir_inplace" if inplace is not None else "call_tir",
        tuple(Var(a) for a in args),
        tuple(sorted(attrs)),  # type: ignore[arg-type]
    )


def program(bindings: list[Binding], result: str, params: tuple[str, ...] = ("x",)) -> Program:
    body = SeqExpr((Block(tuple(bindings), dataflow=False),), Var(result))
    fn = Function("main", tuple(Param(Var(p), T) for p in params), T, body)
    return Program((fn,))


def lives(prog: Program, **options: object) -> dict[str, tuple[Interval, ...]]:
    memory = build_memory(prog, alignment=1, **options)  # type: ignore[arg-type]
    return {b.id: b.live for b in memory.problem.buffers}


def test_chain_lives_from_definition_to_last_use_plus_one() -> None:
    prog = program(
        [
            Binding(Var("a"), kernel("x"), T),
            Binding(Var("b"), kernel("a"), T),
            Binding(Var("c"), kernel("b", "a"), T),
            Binding(Var("unused"), kernel("c"), T),
            Binding(Var("gv"), kernel("c"), T),
        ],
        "gv",
    )
    assert lives(prog) == {
        "a": (Interval(0, 3),),
        "b": (Interval(1, 3),),
        "c": (Interval(2, 5),),
        "unused": (Interval(3, 4),),
    }


def test_outputs_are_planned_only_when_asked() -> None:
    prog = program([Binding(Var("a"), kernel("x"), T), Binding(Var("gv"), kernel("a"), T)], "gv")
    assert "gv" not in lives(prog)
    # Read at the return point after the last binding.
    assert lives(prog, plan_outputs=True)["gv"] == (Interval(1, 3),)


def test_view_of_a_tensor_extends_its_buffer() -> None:
    prog = program(
        [
            Binding(Var("a"), kernel("x"), T),
            Binding(Var("v"), Var("a"), T),
            Binding(Var("b"), kernel("x"), T),
            Binding(Var("gv"), kernel("v", "b"), T),
        ],
        "gv",
    )
    memory = build_memory(prog, alignment=1)
    assert memory.placements["v"] == Placement("a")
    assert {b.id: b.live for b in memory.problem.buffers} == {
        "a": (Interval(0, 4),),
        "b": (Interval(2, 4),),
    }


def test_tuple_items_and_tuples_keep_their_fields_alive() -> None:
    pair = TupleType((T, T))
    prog = program(
        [
            Binding(Var("s"), kernel("x", out=pair), pair),
            Binding(Var("s0"), TupleGetItem(Var("s"), 0), T),
            Binding(Var("t"), Tuple((Var("s0"), Var("x"))), TupleType((T, T))),
            Binding(Var("gv"), kernel("s0"), T),
            Binding(Var("gv2"), kernel("t"), T),
        ],
        "gv2",
    )
    memory = build_memory(prog, alignment=1)
    assert memory.placements["s"] == (Placement("s[0]"), Placement("s[1]"))
    assert memory.placements["s0"] == Placement("s[0]")
    live = {b.id: b.live for b in memory.problem.buffers}
    assert live["s[0]"] == (Interval(0, 5),)  # read through the tuple t at point 4
    assert live["s[1]"] == (Interval(0, 1),)  # never read


def test_inplace_output_takes_its_argument_buffer() -> None:
    prog = program(
        [
            Binding(Var("a"), kernel("x"), T),
            Binding(Var("b"), kernel("a", inplace=0), T),
            Binding(Var("gv"), kernel("b"), T),
        ],
        "gv",
    )
    memory = build_memory(prog, alignment=1)
    assert memory.placements["b"] == Placement("a")
    assert [b.id for b in memory.problem.buffers] == ["a"]


def test_inplace_into_a_parameter_is_not_planned() -> None:
    prog = program(
        [Binding(Var("b"), kernel("x", inplace=0), T), Binding(Var("gv"), kernel("b"), T)], "gv"
    )
    memory = build_memory(prog, alignment=1)
    assert "b" not in memory.placements
    assert memory.problem.buffers == ()


def branchy() -> Program:
    then = SeqExpr((Block((Binding(Var("t1"), kernel("b"), T),)),), Var("t1"))
    other = SeqExpr((Block((Binding(Var("e1"), kernel("c"), T),)),), Var("e1"))
    return program(
        [
            Binding(Var("a"), kernel("x"), T),
            Binding(Var("b"), kernel("a"), T),
            Binding(Var("c"), kernel("a"), T),
            Binding(Var("cond"), kernel("c"), T),
            Binding(Var("y"), If(Var("cond"), then, other), T),
            Binding(Var("gv"), kernel("y"), T),
        ],
        "gv",
    )


def test_branches_get_disjoint_points() -> None:
    # points: a0 b1 c2 cond3 | test4 | t1=5 yield6 | e1=7 yield8 | gv9
    live = lives(branchy())
    assert live["cond"] == (Interval(3, 5),)  # dead at the top of both branches
    assert live["b"] == (Interval(1, 6),)  # used in the then branch only
    assert live["c"] == (Interval(2, 5), Interval(7, 8))  # used in the else branch only
    assert live["t1"] == (Interval(5, 7),)
    assert live["e1"] == (Interval(7, 9),)
    assert live["y"] == (Interval(6, 7), Interval(8, 10))


def test_branch_only_tensors_may_share_bytes() -> None:
    problem = build_memory(branchy(), alignment=1).problem
    t1, e1 = problem.buffer("t1"), problem.buffer("e1")
    b, c = problem.buffer("b"), problem.buffer("c")
    assert not t1.overlaps_in_time(e1)
    assert not b.overlaps_in_time(e1)
    assert not c.overlaps_in_time(t1)


def test_releases_follow_the_path_taken() -> None:
    memory = build_memory(branchy(), alignment=1)
    assert memory.releases["y"].then_entry == ("c", "cond")
    assert memory.releases["y"].else_entry == ("b", "cond")
    assert memory.releases["y"].then_exit == ("t1",)
    assert memory.releases["y"].else_exit == ("e1",)
    assert memory.releases["gv"].after == ("y",)
    assert memory.releases["c"].after == ("a",)


def test_alignment_is_given_to_every_buffer() -> None:
    memory = build_memory(branchy(), alignment=64)
    assert {b.alignment for b in memory.problem.buffers} == {64}
