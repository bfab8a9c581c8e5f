"""Tests of the TVMScript reader and printer: what each construct becomes in the IR, round
trips on hand-written and random programs, exact error places, and TVM's own dumps."""

from __future__ import annotations

import dataclasses
import math
import textwrap
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from optplan.errors import InputError
from optplan.frontends.script import load, parse, print_program
from optplan.ir import (
    Binding,
    Block,
    Call,
    Const,
    Function,
    If,
    Kernel,
    Literal,
    Loc,
    MetaConst,
    ObjectType,
    Param,
    PrimType,
    Program,
    SeqExpr,
    ShapeExpr,
    ShapeType,
    TensorType,
    Tuple,
    TupleGetItem,
    TupleType,
    Var,
)
from optplan.strategies.programs import attrs, programs

DATA = Path(__file__).parents[2] / "shared" / "data"
F32 = "float32"


def read(text: str, file: str = "model.py") -> Program:
    return parse(textwrap.dedent(text).lstrip("\n"), file)


def round_trip(program: Program) -> Program:
    text = print_program(program)
    again = parse(text, "printed.py")
    assert again == program, text
    assert print_program(again) == text
    return again


def body_bindings(program: Program) -> list[Binding]:
    return [b for block in program.main.body.blocks for b in block.bindings]


# ---------------------------------------------------------------------------- small programs

FUSED = """
# from tvm.script import relax as R

@R.function
def main(x: R.Tensor((1, 64), dtype="float32"), w: R.Tensor((64, 64), dtype="float32")) -> R.Tensor((1, 64), dtype="float32"):
    R.func_attr({"num_input": 1})
    with R.dataflow():
        lv = R.call_tir(fused_dense_relu, (x, w, metadata["ir.GenericConst"][3]), out_ty=R.Tensor((1, 64), dtype="float32"))
        lv1: R.Tensor((1, 64), dtype="float32") = R.call_tir_inplace(add_inplace, (lv, x), out_sinfo=R.Tensor((1, 64), dtype="float32"), inplace_indices=[0])
        t: R.Tuple(R.Tensor((1, 64), dtype="float32"), R.Tensor((64,), dtype="float32")) = lv1, metadata["ir.GenericConst"][4]
        lv2: R.Tensor((64,), dtype="float32") = t[1]
        gv: R.Tensor((1, 64, 1, 1), dtype="float32") = R.reshape(lv1, R.shape([1, 64, 1, 1]))
        R.output(gv, lv2)
    return gv

# Metadata omitted. Use show_meta=True in script() method to show it.
"""


def test_fused_dataflow_becomes_the_documented_ir() -> None:
    program = read(FUSED)
    fn = program.main
    t64 = TensorType((1, 64), F32)
    assert program.module is None and program.kernels == ()
    assert fn.name == "main" and fn.num_input == 1 and fn.ret_type == t64
    assert fn.params == (Param(Var("x"), t64), Param(Var("w"), TensorType((64, 64), F32)))
    (block,) = fn.body.blocks
    assert block.dataflow and block.outputs == (Var("gv"), Var("lv2"))
    lv, lv1, t, lv2, gv = block.bindings
    meta = MetaConst("ir.GenericConst", 3)
    assert lv == Binding(
        Var("lv"),
        Call(
            "call_tir",
            (Var("x"), Var("w"), meta),
            (("kernel", "fused_dense_relu"), ("out_ty", t64)),
        ),
    )
    assert lv1.value == Call(
        "call_tir_inplace",
        (Var("lv"), Var("x")),
        (("inplace_indices", (0,)), ("kernel", "add_inplace"), ("out_ty", t64)),
    )
    assert lv1.type == t64
    assert t.value == Tuple((Var("lv1"), MetaConst("ir.GenericConst", 4)))
    assert t.type == TupleType((t64, TensorType((64,), F32)))
    assert lv2.value == TupleGetItem(Var("t"), 1)
    assert gv.value == Call("reshape", (Var("lv1"), ShapeExpr((1, 64, 1, 1))))
    assert fn.body.body == Var("gv")
    round_trip(program)


HIGHLEVEL = """
# from tvm.script import ir as I
# from tvm.script import tir as T
# from tvm.script import relax as R

@I.ir_module
class Module:
    @T.prim_func(private=True)
    def add_one(a: T.handle, b: T.handle):
        # kept as text, never read
        T.evaluate(0)

    @R.function
    def main(x: R.Tensor((1, 3, 8, 8), dtype="float32"), w: R.Tensor((4, 3, 3, 3), dtype="float32")) -> R.Tensor((1, 8, 8, 8), dtype="float32"):
        R.func_attr({"num_input": 1})
        with R.dataflow():
            lv: R.Tensor((1, 4, 8, 8), dtype="float32") = R.nn.conv2d(x, w, strides=[1, 1], padding=[1, 1, 1, 1], groups=1, data_layout="NCHW", out_dtype=None)
            lv1: R.Tensor((1, 4, 1, 1), dtype="float32") = R.mean(lv, axis=[0, 2, 3], keepdims=True)
            lv2: R.Tensor((1, 4, 8, 8), dtype="float32") = R.multiply(lv, R.const(0.25, "float32"))
            lv3: R.Tensor((), dtype="float32") = R.where(R.const(True, "bool"), R.const("-inf", "float32"), R.const(2, "float32"))
            lv4: R.Tensor((1, 4, 8, 8), dtype="float32") = R.call_tir(cls.add_one, (lv2,), out_ty=R.Tensor((1, 4, 8, 8), dtype="float32"))
            gv: R.Tensor((1, 8, 8, 8), dtype="float32") = R.concat((lv2, lv4), axis=1)
            R.output(gv)
        return gv
"""


def test_highlevel_module_keeps_kernels_as_text_and_attrs_sorted() -> None:
    program = read(HIGHLEVEL)
    assert program.module == "Module"
    (kernel,) = program.kernels
    assert kernel == Kernel(
        "add_one",
        "@T.prim_func(private=True)\ndef add_one(a: T.handle, "
        "b: T.handle):\n    # kept as text, never read\n    T.evaluate(0)",
    )
    conv, mean, mul, where, tir, concat = body_bindings(program)
    assert conv.value.op == "nn.conv2d"
    assert conv.value.attrs == (
        ("data_layout", "NCHW"),
        ("groups", 1),
        ("out_dtype", None),
        ("padding", (1, 1, 1, 1)),
        ("strides", (1, 1)),
    )
    assert mean.value.attrs == (("axis", (0, 2, 3)), ("keepdims", True))
    assert mul.value.args[1] == Const(0.25, F32)
    cond, neg_inf, two = where.value.args
    assert cond == Const(True, "bool") and two == Const(2, F32)
    assert neg_inf.value == -math.inf and neg_inf.dtype == F32
    assert tir.value.attr("kernel") == "add_one"
    assert concat.value == Call("concat", (Tuple((Var("lv2"), Var("lv4"))),), (("axis", 1),))
    text = print_program(round_trip(program))
    assert "R.call_tir(cls.add_one, (lv2,)" in text and 'R.const("-inf", "float32")' in text


IF_ELSE = """
@R.function
def main(c: R.Tensor((), dtype="bool"), x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
    if c:
        a: R.Tensor((2, 3), dtype="float32") = R.nn.relu(x)
        y: R.Tensor((2, 3), dtype="float32") = R.add(a, x)
    else:
        y = R.multiply(x, x)
    return y
"""


def test_if_binds_the_variable_both_branches_assign() -> None:
    program = read(IF_ELSE)
    t = TensorType((2, 3), F32)
    (binding,) = body_bindings(program)
    then = SeqExpr(
        (Block((Binding(Var("a"), Call("nn.relu", (Var("x"),)), t),)),),
        Call("add", (Var("a"), Var("x"))),
    )
    orelse = SeqExpr((), Call("multiply", (Var("x"), Var("x"))))
    assert binding == Binding(Var("y"), If(Var("c"), then, orelse), t)
    round_trip(program)


PLANNED = """
@R.function
def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
    R.func_attr({"relax.force_pure": True, "num_input": 1})
    storage: R.Any = R.memory.alloc_storage(R.shape([16]), 0, R.str("global"), R.dtype("uint8"))
    alloc: R.Tensor((4,), dtype="float32") = R.memory.alloc_tensor(storage, 0, R.shape([4]), R.dtype("float32"), 0)
    b: R.Tensor((4,), dtype="float32") = R.builtin.alloc_tensor(R.shape([4]), R.dtype("float32"), 0, R.str("global"), ty_args=(R.Tensor((4,), dtype="float32"),))
    fused_relu(x, alloc)
    R.memory.kill_storage(storage)
    lv = alloc
    return lv
"""


def test_planned_stage_bare_calls_bind_underscore() -> None:
    program = read(PLANNED)
    fn = program.main
    assert fn.attrs == (("num_input", 1), ("relax.force_pure", True))
    storage, alloc, builtin, kernel, kill, alias = body_bindings(program)
    assert storage.type == ObjectType()
    assert storage.value == Call(
        "memory.alloc_storage",
        (ShapeExpr((16,)), Literal("prim", 0), Literal("str", "global"), Literal("dtype", "uint8")),
    )
    assert alloc.value.args[0] == Var("storage")
    assert builtin.value.attrs == (("ty_args", (TensorType((4,), F32),)),)
    assert kernel == Binding(
        Var("_"), Call("call_kernel", (Var("x"), Var("alloc")), (("kernel", "fused_relu"),))
    )
    assert kill == Binding(Var("_"), Call("memory.kill_storage", (Var("storage"),)))
    assert alias.value == Var("alloc")
    text = print_program(round_trip(program))
    assert "\n    fused_relu(x, alloc)\n" in text and "ty_args=(R.Tensor((4,)" in text


def test_types_of_every_spelling() -> None:
    program = read("""
    @R.function
    def f(a: R.Tensor((), "float32"), b: R.Tensor((2,), dtype="int64"), c: R.Shape([1, 2]),
          d: R.Object, e: R.Any, g: R.Prim("int64"), h: R.Tuple(R.Tensor([3], "int8"), R.Shape),
          k: R.Shape(ndim=3), m: R.Tuple):
        return a
    """)
    assert [p.type for p in program.main.params] == [
        TensorType((), F32),
        TensorType((2,), "int64"),
        ShapeType(2),
        ObjectType(),
        ObjectType(),
        PrimType("int64"),
        TupleType((TensorType((3,), "int8"), ShapeType())),
        ShapeType(3),
        TupleType(()),
    ]
    round_trip(program)


def test_locations_are_one_based_and_name_the_file() -> None:
    program = read(FUSED, "fused.py")
    (block,) = program.main.body.blocks
    lv = block.bindings[0]
    assert program.main.loc == Loc("fused.py", 4, 1)
    assert lv.loc == Loc("fused.py", 7, 9) and lv.var.loc == Loc("fused.py", 7, 9)
    assert lv.value.loc == Loc("fused.py", 7, 14)
    assert lv.value.args[0].loc == Loc("fused.py", 7, 44)


def test_every_parsed_node_has_a_location() -> None:
    def walk(node: object) -> None:
        if dataclasses.is_dataclass(node):
            if "loc" in {f.name for f in dataclasses.fields(node)}:
                assert node.loc is not None and node.loc.line >= 1 and node.loc.col >= 1, node
            for f in dataclasses.fields(node):
                walk(getattr(node, f.name))
        elif isinstance(node, tuple):
            for item in node:
                walk(item)

    for text in (FUSED, HIGHLEVEL, IF_ELSE, PLANNED):
        walk(read(text))


def test_call_tir_spellings_agree() -> None:
    def call(spelling: str) -> Call:
        program = read(f"""
        @R.function
        def main(x: R.Tensor((2,), "float32")):
            y = R.call_tir(k, {spelling})
            return y
        """)
        return body_bindings(program)[0].value

    t = 'R.Tensor((2,), dtype="float32")'
    expected = call(f"(x,), out_ty={t}")
    assert expected == Call(
        "call_tir", (Var("x"),), (("kernel", "k"), ("out_ty", TensorType((2,), F32)))
    )
    assert call(f"(x,), out_sinfo={t}") == expected
    assert call(f"(x,), {t}") == expected
    assert call(f"x, out_ty={t}") == expected


def test_module_calls_its_own_definitions_through_cls() -> None:
    program = read("""
    @I.ir_module
    class Module:
        @R.function
        def helper(x: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
            return x

        @R.function
        def main(x: R.Tensor((2,), "float32")):
            y = cls.helper(x)
            return y
    """)
    (call,) = [b.value for b in program.functions[1].body.blocks[0].bindings]
    assert call == Call("call_kernel", (Var("x"),), (("kernel", "helper"),))
    assert "y = cls.helper(x)" in print_program(round_trip(program))


def test_hand_built_program_round_trips() -> None:
    t = TensorType((2, 2), "float16")
    fn = Function(
        "main",
        (Param(Var("x"), t),),
        None,
        SeqExpr(
            (
                Block(
                    (Binding(Var("y"), Call("nn.softmax", (Var("x"),), (("axis", -1),))),),
                    dataflow=True,
                    outputs=(Var("y"),),
                ),
                Block(
                    (
                        Binding(Var("z"), Tuple((Var("y"),)), TupleType((t,))),
                        Binding(Var("w"), Tuple(())),
                        Binding(Var("n"), Literal("prim", -3)),
                        Binding(Var("s"), ShapeExpr(()), ShapeType(0)),
                    )
                ),
            ),
            TupleGetItem(Var("z"), 0),
        ),
    )
    round_trip(Program((fn,)))


# ---------------------------------------------------------------------------- properties


@given(programs())
def test_random_programs_round_trip(program: Program) -> None:
    round_trip(program)


@given(programs(lowered=True))
def test_random_lowered_programs_round_trip(program: Program) -> None:
    round_trip(program)


@given(attrs())
@example((("epsilon", 1e-05), ("axis", (-1,)), ("out_dtype", None)))
@example((("a", -0.0), ("b", 1e16), ("c", 'q"\\\n\u00e9')))
@example((("s", "\U00010000"),))  # once printed as a surrogate pair that read back as two
def test_any_attribute_values_round_trip(attributes: tuple) -> None:
    attributes = tuple(sorted(attributes))
    t = TensorType((1,), F32)
    call = Call("nn.some_op", (Var("x"),), attributes)
    fn = Function(
        "main",
        (Param(Var("x"), t),),
        t,
        SeqExpr((Block((Binding(Var("y"), call),)),), Var("y")),
        attributes,
    )
    round_trip(Program((fn,)))


@given(st.data())
def test_damaged_text_gives_input_error_or_a_program(data: st.DataObject) -> None:
    """Whatever a file holds, the reader answers with a Program or an InputError."""
    text = textwrap.dedent(data.draw(st.sampled_from((FUSED, HIGHLEVEL, IF_ELSE, PLANNED))))
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, min(len(text), start + 12)))
    junk = data.draw(st.text(alphabet="()[]{},:=.\"'#@ \nRx01-_", max_size=6))
    try:
        program = parse(text[:start] + junk + text[end:], "damaged.py")
    except InputError as error:
        assert str(error).startswith("damaged.py:")
    else:
        round_trip(program)


# ---------------------------------------------------------------------------- errors


def error_of(text: str, file: str = "model.py") -> str:
    with pytest.raises(InputError) as info:
        read(text, file)
    return str(info.value)


def test_unsupported_statement_names_its_place() -> None:
    message = error_of("""
    @I.ir_module
    class Module:
        @R.function
        def main(x: R.Tensor((2,), "float32")):
            while x:
                pass
            return x
    """)
    assert message == "model.py:5:9: unsupported statement 'while'"


def test_unknown_construct() -> None:
    message = error_of("""
    @R.function
    def main(x: R.Tensor((2,), "float32")):
        y = np.add(x, x)
        return y
    """)
    assert message == "model.py:3:9: unknown construct 'np.add'"


def test_symbolic_dim_is_named() -> None:
    message = error_of(
        """
    @R.function
    def main(x: R.Tensor((n, 4), "float32")):
        return x
    """,
        "x.py",
    )
    assert message == (
        "x.py:2:23: symbolic dimension 'n' has no upper bound: add "
        'R.func_attr({"tir_var_upper_bound": {"n": ...}}) to the function or give --bound n=VALUE'
    )


def test_malformed_tensor_type() -> None:
    message = error_of(
        """
    @R.function
    def main(x: R.Tensor((2,), "float32")):
        y: R.Tensor(2, "float32") = R.nn.relu(x)
        return y
    """,
        "x.py",
    )
    assert message == "x.py:3:8: expected R.Tensor(shape, dtype), found 'R.Tensor(2, \"float32\")'"


def test_syntax_error_keeps_line_and_column() -> None:
    message = error_of("""
    @R.function
    def main(x: R.Tensor((2,), "float32")):
        y = R.add(x, x
        return y
    """)
    assert message.startswith("model.py:3:14: syntax error: ")


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("y = x + x", "model.py:3:9: unsupported expression 'x + x'"),
        ('y = R.const(1.0, "float33")', "model.py:3:22: unknown dtype 'float33'"),
        ("y = R.output(x)", "model.py:3:9: R.output is not allowed in an expression"),
        ("R.output(x)", "model.py:3:5: R.output(...) must be the end of a dataflow block"),
        ("a, b = x", "model.py:3:5: unsupported assignment target 'a, b'"),
        ('x.y: R.Tensor((2,), "float32") = x', "model.py:3:5: unsupported assignment target 'x.y'"),
        ("y = x[-1]", "model.py:3:11: a tuple index must not be negative, found -1"),
        ("y = R.add(x, axis=x)", "model.py:3:23: expected an attribute value"),
        ("y = R.call_tir(k, (x,))", "model.py:3:9: expected R.call_tir(kernel, (args...)"),
        ("if x:\n        y = x", "model.py:3:5: 'if' without 'else'"),
        (
            'y = R.call_tir(k, (x,), R.Tensor((2,), "float32"), out_ty=R.Tensor((2,), "float32"))',
            "model.py:3:9: expected R.call_tir(kernel, (args...)",
        ),
        ('y = metadata["ir.GenericConst"][-1]', "model.py:3:37: a metadata index must not be"),
        ("y: R.Tensor = x", "model.py:3:8: R.Tensor without a shape: optplan plans static"),
        ('y: R.Tensor(ndim=2, dtype="float32") = x', "model.py:3:8: R.Tensor without a shape"),
        ('y = "abc"', "model.py:3:9: a bare string '\"abc\"': write R.str(...)"),
        ("y = R.add(x, *x)", "model.py:3:18: '*' arguments are not supported"),
        ("y = R.add(x, x, axis=1, axis=2)", "model.py:3:29: keyword argument 'axis' repeated"),
        (
            'R.func_attr({"a": 1})\n    R.func_attr({"b": 1})',
            "model.py:4:5: R.func_attr given twice",
        ),
        (
            "with R.dataflow():\n        R.output(x)\n        y = x",
            "model.py:4:9: R.output(...) must be the last",
        ),
        (
            "with open(x):\n        y = x",
            "model.py:3:10: expected 'with R.dataflow():', found 'open(x)'",
        ),
        # Found by fuzzing: NumPy raised a SyntaxError on this dtype; 1e999 is infinite.
        ('y: R.Tensor((2,), "(") = x', "model.py:3:23: unknown dtype '('"),
        ("y = R.add(x, axis=1e999)", "model.py:3:23: number out of range: '1e999'"),
    ],
)
def test_bad_bindings(body: str, expected: str) -> None:
    text = f'@R.function\ndef main(x: R.Tensor((2,), "float32")):\n    {body}\n    return x\n'
    with pytest.raises(InputError) as info:
        parse(text, "model.py")
    assert str(info.value).startswith(expected)


def test_if_branches_must_assign_the_same_variable() -> None:
    message = error_of("""
    @R.function
    def main(c: R.Tensor((), "bool"), x: R.Tensor((2,), "float32")):
        if c:
            y = x
        else:
            z = x
        return x
    """)
    assert message == "model.py:6:9: both branches must assign the same variable, found 'y' and 'z'"


def test_names_are_defined_once() -> None:
    message = error_of("""
    @R.function
    def main(x: R.Tensor((2,), "float32"), x: R.Tensor((2,), "float32")):
        return x
    """)
    assert message == "model.py:2:40: parameter 'x' appears twice"
    message = error_of("""
    @I.ir_module
    class Module:
        @T.prim_func
        def main():
            T.evaluate(0)

        @R.function
        def main(x: R.Tensor((2,), "float32")):
            return x
    """)
    assert message == "model.py:8:5: 'main' is defined twice"


def test_missing_return_and_no_function() -> None:
    assert error_of("# nothing here\n") == "model.py:1:1: no @R.function found"
    message = error_of("""
    @R.function
    def main(x: R.Tensor((2,), "float32")):
        y = x
    """)
    assert message == "model.py:3:5: function 'main' must end with 'return <value>'"


def test_load_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.py"
    path.write_text('@R.function\ndef main(x: R.Tensor((2,), "float32")):\n    return x +\n')
    with pytest.raises(InputError) as info:
        load(path)
    assert str(info.value).startswith(f"{path}:3:")
    with pytest.raises(InputError) as info:
        load(tmp_path / "absent.py")
    assert str(info.value).startswith(f"{tmp_path / 'absent.py'}: cannot read the file")


def test_printer_refuses_what_no_text_can_say() -> None:
    t = TensorType((1,), F32)
    bad = Function("main", (Param(Var("not a name"), t),), None, SeqExpr((), Var("x")))
    with pytest.raises(ValueError):
        print_program(Program((bad,)))


# ---------------------------------------------------------------------------- TVM's own dumps


def shared_files() -> list[Path]:
    tvm = DATA / "tvm"
    return sorted(tvm.glob("*.py")) + sorted((tvm / "highlevel").glob("*.py"))


def test_every_shared_tvm_file_parses_and_round_trips() -> None:
    if not (DATA / "tvm").is_dir():
        pytest.skip(f"shared data not found at {DATA / 'tvm'}")
    files = shared_files()
    assert files
    for path in files:
        program = load(path)
        assert program.functions, path
        round_trip(program)


def test_shared_dumps_print_back_as_tvm_printed_them() -> None:
    """Every stage TVM printed comes back as the same text, comments and blank lines
    aside (high-level files differ only in the order of keyword attributes)."""
    if not (DATA / "tvm").is_dir():
        pytest.skip(f"shared data not found at {DATA / 'tvm'}")

    def lines(text: str) -> list[str]:
        return [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]

    for path in sorted((DATA / "tvm").glob("*.py")):
        assert lines(print_program(load(path))) == lines(path.read_text()), path
    fused = body_bindings(load(DATA / "tvm" / "resnet18.2_fused_dataflow.py"))
    assert {b.value.op for b in fused if isinstance(b.value, Call)} == {"call_tir", "reshape"}


def test_shared_planned_stages_read_as_lowered_calls() -> None:
    path = DATA / "tvm" / "mlp.5_killed.py"
    if not path.is_file():
        pytest.skip(f"shared data not found at {path}")
    fn = load(path).main
    assert fn.attrs == (("num_input", 1), ("relax.force_pure", True))
    bindings = body_bindings(load(path))
    ops = [b.value.op for b in bindings if isinstance(b.value, Call)]
    assert ops.count("memory.alloc_storage") == 3 and ops.count("memory.alloc_tensor") == 5
    assert ops.count("call_kernel") == 5 and ops.count("memory.kill_tensor") == 4
    assert ops.count("memory.kill_storage") == 3
    storage = bindings[0]
    assert storage == Binding(
        Var("storage"),
        Call(
            "memory.alloc_storage",
            (
                ShapeExpr((1048576,)),
                Literal("prim", 0),
                Literal("str", "global"),
                Literal("dtype", "float32"),
            ),
        ),
        ObjectType(),
    )
    kernel_calls = [b for b in bindings if b.var.name == "_" and b.value.op == "call_kernel"]
    assert kernel_calls[0].value.attrs == (("kernel", "fused_matmul_add_relu"),)
    assert fn.body.body == Var("alloc4")


def test_kernel_text_is_kept_exactly_at_top_level_and_in_a_module() -> None:
    kernel = '''@T.prim_func(private=True)
# a comment between decorator and def
def k(a: T.handle):
    T.func_attr({"tir.noalias": True})

    doc = """
not indented"""
    T.evaluate(0)'''
    main = '@R.function\ndef main(x: R.Tensor((2,), "float32")):\n    return x\n'
    top = parse(kernel + "\n\n" + main)
    assert top.kernels == (Kernel("k", kernel),)
    indented = textwrap.indent(kernel, "    ", lambda line: line.strip() != "")
    # A line that is part of a string keeps its own indentation; only the class's goes.
    indented = indented.replace("    not indented", "not indented")
    module = parse(
        "@I.ir_module\nclass Module:\n" + indented + "\n\n" + textwrap.indent(main, "    ")
    )
    assert module.kernels == (Kernel("k", kernel),)
    round_trip(top)
    round_trip(module)


def test_bare_call_inside_a_dataflow_block_is_a_binding() -> None:
    program = read("""
    @R.function
    def main(x: R.Tensor((2,), "float32")):
        with R.dataflow():
            R.memory.kill_tensor(x)
        return x
    """)
    (block,) = program.main.body.blocks
    assert block.outputs == ()
    assert block.bindings == (Binding(Var("_"), Call("memory.kill_tensor", (Var("x"),))),)
    round_trip(program)


def test_nested_if_round_trips_and_elif_is_refused() -> None:
    program = read("""
    @R.function
    def main(c: R.Tensor((), "bool"), x: R.Tensor((2,), "float32")):
        if c:
            if c:
                z = R.exp(x)
            else:
                z = x
            y = R.add(z, x)
        else:
            y = x
        return y
    """)
    (binding,) = body_bindings(program)
    (inner,) = binding.value.then_branch.blocks[0].bindings
    assert inner.var == Var("z") and isinstance(inner.value, If)
    round_trip(program)
    message = error_of("""
    @R.function
    def main(c: R.Tensor((), "bool"), x: R.Tensor((2,), "float32")):
        if c:
            y = x
        elif c:
            y = x
        else:
            y = x
        return y
    """)
    assert message.startswith("model.py:5:5: an 'if' branch must end by assigning")
