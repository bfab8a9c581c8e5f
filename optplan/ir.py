"""A frozen, Relax-like IR: just enough of TVM Relax to plan memory and replay a program.

A `Program` holds Relax functions and, for whole modules, the text of kernels
(`@T.prim_func`) that optplan keeps but does not interpret. A function body is a
`SeqExpr`: blocks of bindings (dataflow or plain) and a result expression.

Nodes are frozen, slotted dataclasses compared by value; a pass builds new nodes with
`dataclasses.replace`. Variables are referred to by name (`Var`); the type of a variable
lives where it is defined (`Param.type`, `Binding.type`), and `var_types(fn)` collects
them. A binding's type is None where the source left it unannotated and no pass has
inferred it yet.

Where each node came from (`Loc`) is kept for error messages but ignored by equality, so a
program printed and parsed back compares equal to the original.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Union

import numpy as np

# ---------------------------------------------------------------------------- types


@dataclass(frozen=True, slots=True)
class TensorType:
    """`R.Tensor(shape, dtype)`: a static shape and a NumPy dtype name."""

    shape: tuple[int, ...]
    dtype: str

    @property
    def size_bytes(self) -> int:
        count = 1
        for dim in self.shape:
            count *= dim
        return count * np.dtype(self.dtype).itemsize


@dataclass(frozen=True, slots=True)
class TupleType:
    """`R.Tuple(...)`."""

    fields: tuple[Type, ...]


@dataclass(frozen=True, slots=True)
class ShapeType:
    """`R.Shape([...])`: the type of a shape value."""

    ndim: int = -1


@dataclass(frozen=True, slots=True)
class ObjectType:
    """`R.Object` / `R.Any`: an opaque object such as a storage."""


@dataclass(frozen=True, slots=True)
class PrimType:
    """`R.Prim(dtype)`: a scalar that is not a tensor (an offset, a condition value)."""

    dtype: str


Type = TensorType | TupleType | ShapeType | ObjectType | PrimType

# ---------------------------------------------------------------------------- places


@dataclass(frozen=True, slots=True)
class Loc:
    """Where a node came from in its source file (1-based line and column)."""

    file: str = ""
    line: int = 0
    col: int = 0


def _loc_field() -> Loc | None:
    return field(default=None, compare=False, repr=False, kw_only=True)  # type: ignore[return-value]


# ---------------------------------------------------------------------------- expressions


@dataclass(frozen=True, slots=True)
class Var:
    """A reference to a parameter or a bound variable, by name."""

    name: str
    loc: Loc | None = _loc_field()


@dataclass(frozen=True, slots=True)
class Const:
    """`R.const(value, dtype)`: a scalar constant (shape `()`)."""

    value: float | int | bool
    dtype: str
    loc: Loc | None = _loc_field()

    @property
    def type(self) -> TensorType:
        return TensorType((), self.dtype)


@dataclass(frozen=True, slots=True)
class MetaConst:
    """`metadata["ir.GenericConst"][index]`: a model constant whose value is not printed.

    `type` is None where the text does not say its shape; passes fill it in where a use
    determines it.
    """

    kind: str
    index: int
    type: TensorType | None = None
    loc: Loc | None = _loc_field()


@dataclass(frozen=True, slots=True)
class ShapeExpr:
    """`R.shape([...])`."""

    values: tuple[int, ...]
    loc: Loc | None = _loc_field()


@dataclass(frozen=True, slots=True)
class Literal:
    """A non-tensor argument: `R.str("global")` (kind "str"), `R.dtype("float32")`
    (kind "dtype"), or a plain integer or float argument (kind "prim")."""

    kind: str
    value: str | int | float
    loc: Loc | None = _loc_field()


AttrValue = Union[None, bool, int, float, str, tuple["AttrValue", ...], Type]  # noqa: UP007 (recursive alias)


@dataclass(frozen=True, slots=True)
class Call:
    """A call of an op from the op table, by its Relax name without the `R.` prefix.

    `args` are the operands (tensors, tuples, shapes, constants); keyword attributes are in
    `attrs` as sorted `(name, value)` pairs. `R.call_tir(kernel, (a, b), out_ty=T)` is
    `Call("call_tir", (a, b), attrs=(("kernel", "kernel"), ("out_ty", T)))`, and
    `R.call_tir_inplace` adds `("inplace_indices", (0,))`.
    """

    op: str
    args: tuple[Expr, ...]
    attrs: tuple[tuple[str, AttrValue], ...] = ()
    loc: Loc | None = _loc_field()

    def attr(self, name: str, default: AttrValue = None) -> AttrValue:
        for key, value in self.attrs:
            if key == name:
                return value
        return default


@dataclass(frozen=True, slots=True)
class Tuple:
    """`(a, b, c)`: a tuple of values; it owns no memory of its own."""

    fields: tuple[Expr, ...]
    loc: Loc | None = _loc_field()


@dataclass(frozen=True, slots=True)
class TupleGetItem:
    """`t[index]`."""

    tuple_value: Expr
    index: int
    loc: Loc | None = _loc_field()


@dataclass(frozen=True, slots=True)
class If:
    """`if cond: ... else: ...`; each branch is a SeqExpr whose body is its value."""

    cond: Expr
    then_branch: SeqExpr
    else_branch: SeqExpr
    loc: Loc | None = _loc_field()


Expr = Var | Const | MetaConst | ShapeExpr | Literal | Call | Tuple | TupleGetItem | If

# ---------------------------------------------------------------------------- structure


@dataclass(frozen=True, slots=True)
class Binding:
    """`var: type = value`. `type` is None where it is neither written nor inferred."""

    var: Var
    value: Expr
    type: Type | None = None
    loc: Loc | None = _loc_field()


@dataclass(frozen=True, slots=True)
class Block:
    """A list of bindings; a dataflow block (`with R.dataflow():`) names its `outputs`."""

    bindings: tuple[Binding, ...]
    dataflow: bool = False
    outputs: tuple[Var, ...] = ()
    loc: Loc | None = _loc_field()


@dataclass(frozen=True, slots=True)
class SeqExpr:
    blocks: tuple[Block, ...]
    body: Expr
    loc: Loc | None = _loc_field()


@dataclass(frozen=True, slots=True)
class Param:
    var: Var
    type: Type
    loc: Loc | None = _loc_field()


@dataclass(frozen=True, slots=True)
class Function:
    """`@R.function def name(params) -> ret_type:` with `R.func_attr({...})` in `attrs`."""

    name: str
    params: tuple[Param, ...]
    ret_type: Type | None
    body: SeqExpr
    attrs: tuple[tuple[str, AttrValue], ...] = ()
    loc: Loc | None = _loc_field()

    def attr(self, name: str, default: AttrValue = None) -> AttrValue:
        for key, value in self.attrs:
            if key == name:
                return value
        return default

    @property
    def num_input(self) -> int:
        """How many leading parameters are inputs; the rest are weights."""
        value = self.attr("num_input")
        return len(self.params) if value is None else int(value)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class Kernel:
    """A `@T.prim_func` kept as its source text; optplan runs it as an opaque kernel."""

    name: str
    text: str


@dataclass(frozen=True, slots=True)
class Program:
    """Relax functions and kernel texts. `module` is the `@I.ir_module` class name, or
    None for a file of bare `@R.function`s. `typed`: made by `infer_types`, so every
    binding has its checked type (a pass that adds untyped bindings clears it); consumers
    then use the program as it is instead of inferring its types again."""

    functions: tuple[Function, ...]
    kernels: tuple[Kernel, ...] = ()
    module: str | None = None
    typed: bool = field(default=False, compare=False)

    @property
    def main(self) -> Function:
        """The entry function: `main` if there is one, else the first."""
        for fn in self.functions:
            if fn.name == "main":
                return fn
        return self.functions[0]

    def replace_function(self, fn: Function) -> Program:
        functions = tuple(fn if f.name == fn.name else f for f in self.functions)
        return Program(functions, self.kernels, self.module)


# ---------------------------------------------------------------------------- walking


def iter_bindings(seq: SeqExpr) -> Iterator[Binding]:
    """Every binding of `seq` in program order, descending into If branches (a branch's
    bindings come before the binding of the If itself)."""
    for block in seq.blocks:
        for binding in block.bindings:
            if isinstance(binding.value, If):
                yield from iter_bindings(binding.value.then_branch)
                yield from iter_bindings(binding.value.else_branch)
            yield binding


def var_types(fn: Function) -> dict[str, Type | None]:
    """The declared or inferred type of every parameter and bound variable, by name."""
    types: dict[str, Type | None] = {p.var.name: p.type for p in fn.params}
    for binding in iter_bindings(fn.body):
        types[binding.var.name] = binding.type
    return types


def operands(expr: Expr) -> Iterator[Expr]:
    """The direct sub-expressions an expression reads (not If branches' bindings)."""
    match expr:
        case Call(args=args):
            yield from args
        case Tuple(fields=fields):
            yield from fields
        case TupleGetItem(tuple_value=value):
            yield value
        case If(cond=cond):
            yield cond
        case _:
            return


def free_vars(expr: Expr) -> Iterator[Var]:
    """Every Var read by `expr`, at any depth (If branches are not entered)."""
    if isinstance(expr, Var):
        yield expr
        return
    for sub in operands(expr):
        yield from free_vars(sub)
