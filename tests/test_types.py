"""verify and infer_types on IR built by hand, with exact `file:line:col` places."""

from __future__ import annotations

import pytest

from optplan.analysis.types import format_type, infer_types, verify
from optplan.errors import InputError
from optplan.ir import (
    Binding,
    Block,
    Call,
    Const,
    Function,
    If,
    Kernel,
    Loc,
    MetaConst,
    ObjectType,
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

F32 = "float32"
X = TensorType((1, 64), F32)
W = TensorType((64, 32), F32)


def at(line: int, col: int) -> Loc:
    return Loc("model.py", line, col)


def bind(name: str, value: object, type_: object = None, line: int = 10) -> Binding:
    return Binding(Var(name, loc=at(line, 9)), value, type_, loc=at(line, 9))  # type: ignore[arg-type]


def program(
    *bindings: Binding,
    result: str = "out",
    dataflow: bool = False,
    outputs: tuple[str, ...] = (),
    kernels: tuple[Kernel, ...] = (),
) -> Program:
    block = Block(tuple(bindings), dataflow=dataflow, outputs=tuple(Var(o) for o in outputs))
    params = (Param(Var("x"), X), Param(Var("w"), W))
    fn = Function(
        "main", params, None, SeqExpr((block,), Var(result, loc=at(20, 12))), loc=at(1, 1)
    )
    return Program((fn,), kernels)


def types_of(prog: Program) -> dict[str, object]:
    fn = infer_types(prog).main
    return {b.var.name: b.type for block in fn.body.blocks for b in block.bindings}


def message(prog: Program, check: object = verify) -> str:
    with pytest.raises(InputError) as error:
        check(prog)  # type: ignore[operator]
    return str(error.value)


# ---------------------------------------------------------------------------- verify


def test_use_before_definition_names_the_var_the_place_and_the_function() -> None:
    prog = program(
        bind("lv0", Call("matmul", (Var("x"), Var("lv3", loc=at(14, 30)))), line=14),
        bind("lv3", Call("nn.relu", (Var("x"),)), line=15),
        result="lv3",
    )
    assert (
        message(prog) == "model.py:14:30: 'lv3' is used before it is defined (in function 'main')"
    )


def test_a_var_bound_twice_is_an_error_but_underscore_is_not() -> None:
    prog = program(
        bind("a", Call("nn.relu", (Var("x"),)), line=11),
        bind("_", Call("nn.relu", (Var("x"),)), line=12),
        bind("_", Call("nn.relu", (Var("x"),)), line=13),
        bind("a", Call("nn.relu", (Var("x"),)), line=14),
        result="a",
    )
    assert (
        message(prog)
        == "model.py:14:9: 'a' is defined twice (first at line 11) (in function 'main')"
    )


def test_unknown_op_is_an_error_but_a_kernel_call_is_opaque() -> None:
    bad = program(bind("out", Call("nn.foo", (Var("x"),), loc=at(12, 15)), X, line=12))
    assert message(bad) == "model.py:12:15: unknown op 'nn.foo' (in function 'main')"
    # A call_tir to a kernel the file does not define is fine: it runs opaquely.
    opaque = Call("call_tir", (Var("x"),), (("kernel", "fused_undefined"), ("out_ty", X)))
    verify(program(bind("out", opaque)))
    # So is a direct call to a kernel the module defines.
    verify(
        program(
            bind("out", Call("my_kernel", (Var("x"),)), X), kernels=(Kernel("my_kernel", "..."),)
        )
    )


def test_dataflow_output_must_be_bound_in_its_block() -> None:
    prog = program(bind("out", Call("nn.relu", (Var("x"),))), dataflow=True, outputs=("gv",))
    assert "R.output names 'gv', which this dataflow block does not bind" in message(prog)


def test_the_returned_value_must_be_defined() -> None:
    prog = program(bind("a", Call("nn.relu", (Var("x"),))), result="nothing")
    assert (
        message(prog)
        == "model.py:20:12: 'nothing' is used before it is defined (in function 'main')"
    )


def test_a_var_bound_in_a_branch_is_not_visible_after_the_if() -> None:
    cond = TensorType((), "bool")
    then_branch = SeqExpr((Block((bind("inner", Call("nn.relu", (Var("x"),))),)),), Var("inner"))
    else_branch = SeqExpr((), Var("x"))
    fn = Function(
        "main",
        (Param(Var("c"), cond), Param(Var("x"), X)),
        None,
        SeqExpr(
            (
                Block(
                    (
                        bind("r", If(Var("c"), then_branch, else_branch)),
                        bind("z", Call("nn.relu", (Var("inner", loc=at(30, 4)),))),
                    )
                ),
            ),
            Var("z"),
        ),
    )
    assert message(Program((fn,))) == (
        "model.py:30:4: 'inner' is used outside the If branch that defines it (in function 'main')"
    )


# ---------------------------------------------------------------------------- infer_types


def test_inference_fills_unannotated_bindings() -> None:
    prog = program(
        bind("mm", Call("matmul", (Var("x"), Var("w")), (("out_dtype", None),))),
        bind("parts", Call("split", (Var("mm"),), (("axis", 1), ("indices_or_sections", 2)))),
        bind("first", TupleGetItem(Var("parts"), 0)),
        bind("alias", Var("first")),
        bind("pair", Tuple((Var("alias"), Const(1.0, F32)))),
        bind("out", Call("add", (Var("alias"), Const(1.0, F32)))),
    )
    half = TensorType((1, 16), F32)
    assert types_of(prog) == {
        "mm": TensorType((1, 32), F32),
        "parts": TupleType((half, half)),
        "first": half,
        "alias": half,
        "pair": TupleType((half, TensorType((), F32))),
        "out": half,
    }


def test_an_annotation_that_disagrees_is_an_error_naming_both_types() -> None:
    prog = program(
        bind("lv3", Call("matmul", (Var("x"), Var("w"))), TensorType((1, 64), F32), line=12),
        result="lv3",
    )
    assert message(prog, infer_types) == (
        "model.py:12:9: 'lv3' is annotated R.Tensor((1, 64), float32) but matmul gives "
        "R.Tensor((1, 32), float32)"
    )


def test_op_errors_carry_the_call_place_or_else_the_binding_place() -> None:
    located = Call("matmul", (Var("w"), Var("w")), loc=at(7, 21))
    assert message(program(bind("out", located, line=7)), infer_types) == (
        "model.py:7:21: matmul of (64, 32) and (64, 32): inner dimensions differ"
    )
    unlocated = Call("matmul", (Var("w"), Var("w")))
    assert message(program(bind("out", unlocated, line=8)), infer_types).startswith(
        "model.py:8:9: matmul"
    )


def test_object_annotations_accept_anything_and_opaque_calls_keep_their_annotation() -> None:
    prog = program(
        bind("storage", Call("nn.relu", (Var("x"),)), ObjectType()),
        bind("out", Call("my_kernel", (Var("x"),)), X),
    )
    assert types_of(prog) == {"storage": ObjectType(), "out": X}


def test_if_branches_must_agree() -> None:
    cond = TensorType((), "bool")

    def fn(else_value: Call) -> Program:
        then_branch = SeqExpr((), Var("x"))
        else_branch = SeqExpr((Block((bind("e", else_value),)),), Var("e"))
        body = SeqExpr(
            (Block((bind("r", If(Var("c"), then_branch, else_branch), line=5),)),), Var("r")
        )
        params = (Param(Var("c"), cond), Param(Var("x"), X), Param(Var("w"), W))
        return Program((Function("main", params, None, body),))

    good = infer_types(fn(Call("nn.relu", (Var("x"),))))
    assert good.main.body.blocks[0].bindings[0].type == X
    assert message(fn(Call("matmul", (Var("x"), Var("w")))), infer_types) == (
        "model.py:5:9: the branches of the If bound to 'r' disagree: then gives "
        "R.Tensor((1, 64), float32), else gives R.Tensor((1, 32), float32)"
    )


def test_metadata_types_come_from_tuple_annotations_before_reshapes() -> None:
    meta0, meta1 = MetaConst("ir.GenericConst", 0), MetaConst("ir.GenericConst", 1)
    shaped = TensorType((1, 64, 1, 1), F32)
    prog = program(
        bind("r0", Call("reshape", (meta0, ShapeExpr((1, 64, 1, 1)))), shaped),
        bind("r1", Call("reshape", (meta1, ShapeExpr((1, 64, 1, 1)))), shaped),
        bind("t", Tuple((meta1,)), TupleType((TensorType((64,), F32),))),
        bind("out", Call("nn.relu", (Var("x"),))),
    )
    typed = infer_types(prog).main.body.blocks[0].bindings
    assert typed[0].value.args[0].type == shaped  # type: ignore[union-attr]
    assert typed[1].value.args[0].type == TensorType((64,), F32)  # type: ignore[union-attr]
    assert typed[2].value.fields[0].type == TensorType((64,), F32)  # type: ignore[union-attr]


def test_an_unpinned_metadata_constant_stays_untyped() -> None:
    meta = MetaConst("ir.GenericConst", 3)
    call = Call("call_tir", (Var("x"), meta), (("kernel", "k"), ("out_ty", X)))
    typed = infer_types(program(bind("out", call))).main.body.blocks[0].bindings[0]
    assert typed.value.args[1].type is None and typed.type == X  # type: ignore[union-attr]


def test_format_type() -> None:
    assert format_type(TensorType((64,), F32)) == "R.Tensor((64,), float32)"
    assert format_type(TupleType((X,))) == "R.Tuple(R.Tensor((1, 64), float32))"
    assert format_type(None) == "an unknown type"
