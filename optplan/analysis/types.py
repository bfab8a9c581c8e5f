"""Structural checks and type inference for a Program.

`verify(program)` checks, function by function, in program order:

1. parameters have distinct names;
2. every variable is bound once (the name `_` of bare statements aside);
3. every variable is defined before it is read; a variable bound inside an If branch is
   visible only in that branch;
4. every call names an op of the op table, or a kernel (opaque calls are fine, even to a
   kernel whose body the file does not contain);
5. a dataflow block's `R.output(...)` names variables bound in that block, and the
   function's result reads only defined variables.

`infer_types(program)` then:

1. gives a type to each `metadata[...]` constant that a use pins down: the annotation of a
   tuple binding that holds it, or the annotated result of a reshape of it (a reshape keeps
   the bytes, so its result's type is as good as the constant's own);
2. walks every function in program order, inferring each binding's type from the op
   table (tuples, tuple items, variables and If branches by their structure);
3. fills each binding whose type is None, and raises InputError where an annotation
   disagrees with the inferred type (`R.Object` annotations accept anything).

Both raise InputError at the offending node's `file:line:col`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence

from optplan.errors import InputError
from optplan.ir import (
    Binding,
    Block,
    Call,
    Const,
    Expr,
    Function,
    If,
    Literal,
    Loc,
    MetaConst,
    ObjectType,
    PrimType,
    Program,
    SeqExpr,
    ShapeExpr,
    ShapeType,
    TensorType,
    Tuple,
    TupleGetItem,
    TupleType,
    Type,
    Var,
    free_vars,
    iter_bindings,
    operands,
)
from optplan.ops import lookup

# ---------------------------------------------------------------------------- messages


def format_type(type_: Type | None) -> str:
    """A type as TVMScript-like text for messages: `R.Tensor((1, 64), float32)`."""
    match type_:
        case TensorType(shape=shape, dtype=dtype):
            return f"R.Tensor({shape}, {dtype})"
        case TupleType(fields=fields):
            return f"R.Tuple({', '.join(format_type(f) for f in fields)})"
        case ShapeType(ndim=ndim):
            return f"R.Shape(ndim={ndim})"
        case PrimType(dtype=dtype):
            return f"R.Prim({dtype})"
        case ObjectType():
            return "R.Object"
        case _:
            return "an unknown type"


def _error(message: str, *locs: Loc | None) -> InputError:
    """InputError at the first known location among `locs`."""
    for loc in locs:
        if loc is not None:
            return InputError(message, file=loc.file, line=loc.line, col=loc.col)
    return InputError(message)


# ---------------------------------------------------------------------------- verify


def verify(program: Program) -> None:
    """Raise InputError at the first structural fault of `program` (see module doc)."""
    kernels = {k.name for k in program.kernels}
    for fn in program.functions:
        _Checker(fn, kernels).function()


@dataclasses.dataclass(slots=True)
class _Checker:
    fn: Function
    kernels: set[str]
    defined_at: dict[str, Loc | None] = dataclasses.field(default_factory=dict)

    def where(self) -> str:
        return f"(in function {self.fn.name!r})"

    def function(self) -> None:
        for p in self.fn.params:
            if p.var.name in self.defined_at:
                raise _error(
                    f"parameter {p.var.name!r} is declared twice {self.where()}",
                    p.loc,
                    p.var.loc,
                    self.fn.loc,
                )
            self.defined_at[p.var.name] = p.loc or p.var.loc
        self.seq(self.fn.body, set(self.defined_at))

    def seq(self, seq: SeqExpr, visible: set[str]) -> None:
        for block in seq.blocks:
            self.block(block, visible)
        self.reads(seq.body, visible, seq.loc or self.fn.loc)

    def block(self, block: Block, visible: set[str]) -> None:
        bound_here: set[str] = set()
        for binding in block.bindings:
            self.binding(binding, visible)
            bound_here.add(binding.var.name)
        for out in block.outputs:
            if out.name not in bound_here:
                raise _error(
                    f"R.output names {out.name!r}, which this dataflow block does not bind "
                    f"{self.where()}",
                    out.loc,
                    block.loc,
                )

    def binding(self, binding: Binding, visible: set[str]) -> None:
        value = binding.value
        if isinstance(value, If):
            self.reads(value.cond, visible, binding.loc)
            # A branch's bindings are its own: neither the other branch nor what follows sees them.
            self.seq(value.then_branch, set(visible))
            self.seq(value.else_branch, set(visible))
        else:
            self.reads(value, visible, binding.loc)
            self.ops(value, binding.loc)
        self.define(binding, visible)

    def define(self, binding: Binding, visible: set[str]) -> None:
        name = binding.var.name
        if name == "_":
            return
        if name in self.defined_at:
            first = self.defined_at[name]
            previous = f" (first at line {first.line})" if first is not None and first.line else ""
            raise _error(
                f"{name!r} is defined twice{previous} {self.where()}", binding.var.loc, binding.loc
            )
        self.defined_at[name] = binding.var.loc or binding.loc
        visible.add(name)

    def reads(self, expr: Expr, visible: set[str], loc: Loc | None) -> None:
        for var in free_vars(expr):
            if var.name not in visible:
                known = var.name in self.defined_at
                what = (
                    "is used outside the If branch that defines it"
                    if known
                    else "is used before it is defined"
                )
                raise _error(f"{var.name!r} {what} {self.where()}", var.loc, loc)

    def ops(self, expr: Expr, loc: Loc | None) -> None:
        for call in _calls(expr):
            if (
                lookup(call.op) is None
                and call.op not in self.kernels
                and call.attr("kernel") is None
            ):
                raise _error(f"unknown op {call.op!r} {self.where()}", call.loc, loc)


def _calls(expr: Expr) -> Iterator[Call]:
    if isinstance(expr, Call):
        yield expr
    if isinstance(expr, If):
        return
    for sub in operands(expr):
        yield from _calls(sub)


# ---------------------------------------------------------------------------- metadata


MetaKey = tuple[str, int]


def _meta_types(program: Program) -> dict[MetaKey, TensorType]:
    """Types of metadata constants that a use pins down (see the module doc, step 1).

    A tuple annotation states the constant's own type, so it wins over a reshape's
    result, which only has the same element count.
    """
    exact: dict[MetaKey, TensorType] = {}
    by_reshape: dict[MetaKey, TensorType] = {}
    for fn in program.functions:
        for binding in iter_bindings(fn.body):
            value, annotated = binding.value, binding.type
            if isinstance(value, Tuple) and isinstance(annotated, TupleType):
                for item, item_type in zip(value.fields, annotated.fields):
                    if isinstance(item, MetaConst) and isinstance(item_type, TensorType):
                        exact.setdefault((item.kind, item.index), item_type)
            if (
                isinstance(value, Call)
                and value.op == "reshape"
                and value.args
                and isinstance(value.args[0], MetaConst)
                and isinstance(annotated, TensorType)
            ):
                meta = value.args[0]
                by_reshape.setdefault((meta.kind, meta.index), annotated)
    return by_reshape | exact


def _fill_meta(expr: Expr, known: dict[MetaKey, TensorType]) -> Expr:
    """`expr` with untyped metadata constants given the types in `known`."""
    match expr:
        case MetaConst(type=None, kind=kind, index=index) if (kind, index) in known:
            return dataclasses.replace(expr, type=known[(kind, index)])
        case Call(args=args):
            return dataclasses.replace(expr, args=tuple(_fill_meta(a, known) for a in args))
        case Tuple(fields=fields):
            return dataclasses.replace(expr, fields=tuple(_fill_meta(f, known) for f in fields))
        case TupleGetItem(tuple_value=inner):
            return dataclasses.replace(expr, tuple_value=_fill_meta(inner, known))
        case _:
            return expr


# ---------------------------------------------------------------------------- inference


def infer_types(program: Program) -> Program:
    """`program` with every binding typed (`Program.typed`); InputError where an
    annotation disagrees."""
    known = _meta_types(program)
    functions = tuple(_infer_function(fn, known) for fn in program.functions)
    return Program(functions, program.kernels, program.module, typed=True)


def typed_program(program: Program) -> Program:
    """`program` itself when its types are already inferred, else `infer_types(program)`:
    a frontend infers once, and every consumer after it takes the program as it is."""
    return program if program.typed else infer_types(program)


@dataclasses.dataclass(slots=True)
class _Inferrer:
    fn: Function
    known: dict[MetaKey, TensorType]
    env: dict[str, Type | None]

    def seq(self, seq: SeqExpr) -> tuple[SeqExpr, Type | None]:
        blocks = tuple(self.block(b) for b in seq.blocks)
        body = _fill_meta(seq.body, self.known)
        return dataclasses.replace(seq, blocks=blocks, body=body), self.type_of(body, seq.loc)

    def block(self, block: Block) -> Block:
        return dataclasses.replace(block, bindings=tuple(self.binding(b) for b in block.bindings))

    def binding(self, binding: Binding) -> Binding:
        value = binding.value
        if isinstance(value, If):
            value, inferred = self.if_(value, binding)
        else:
            value = _fill_meta(value, self.known)
            inferred = self.type_of(value, binding.loc, binding.type)
        final = _agree(binding, inferred, value)
        self.env[binding.var.name] = final
        return dataclasses.replace(binding, value=value, type=final)

    def if_(self, node: If, binding: Binding) -> tuple[If, Type | None]:
        cond = _fill_meta(node.cond, self.known)
        cond_type = self.type_of(cond, node.loc or binding.loc)
        if isinstance(cond_type, TensorType) and (
            cond_type.shape != () or cond_type.dtype != "bool"
        ):
            raise _error(
                f"the condition of the If bound to {binding.var.name!r} is "
                f"{format_type(cond_type)}, not a bool scalar",
                node.loc,
                binding.loc,
            )
        outer = dict(self.env)
        then_branch, then_type = self.seq(node.then_branch)
        self.env = dict(outer)
        else_branch, else_type = self.seq(node.else_branch)
        self.env = outer
        if then_type is not None and else_type is not None and then_type != else_type:
            raise _error(
                f"the branches of the If bound to {binding.var.name!r} disagree: then gives "
                f"{format_type(then_type)}, else gives {format_type(else_type)}",
                node.loc,
                binding.loc,
            )
        new = dataclasses.replace(node, cond=cond, then_branch=then_branch, else_branch=else_branch)
        return new, then_type if then_type is not None else else_type

    def type_of(self, expr: Expr, loc: Loc | None, annotated: Type | None = None) -> Type | None:
        match expr:
            case Var(name=name):
                if name not in self.env:
                    raise _error(
                        f"{name!r} is used before it is defined (in function {self.fn.name!r})",
                        expr.loc,
                        loc,
                    )
                return self.env[name]
            case Const():
                return expr.type
            case MetaConst(type=type_):
                return type_
            case ShapeExpr(values=values):
                return ShapeType(len(values))
            case Literal(kind="prim", value=value):
                return PrimType("float64" if isinstance(value, float) else "int64")
            case Literal():
                return None
            case Tuple(fields=fields):
                types = [self.type_of(f, loc) for f in fields]
                known = tuple(t for t in types if t is not None)
                return TupleType(known) if len(known) == len(types) else None
            case TupleGetItem(tuple_value=inner, index=index):
                return self.item(inner, index, loc)
            case Call():
                return self.call(expr, loc, annotated)
            case _:
                raise _error(f"a {type(expr).__name__} cannot appear here", loc)

    def item(self, inner: Expr, index: int, loc: Loc | None) -> Type | None:
        tuple_type = self.type_of(inner, loc)
        if tuple_type is None:
            return None
        if not isinstance(tuple_type, TupleType):
            raise _error(f"cannot take item {index} of {format_type(tuple_type)}", loc)
        if not -len(tuple_type.fields) <= index < len(tuple_type.fields):
            raise _error(
                f"item {index} of a tuple of {len(tuple_type.fields)} is out of range", loc
            )
        return tuple_type.fields[index]

    def call(self, call: Call, loc: Loc | None, annotated: Type | None) -> Type | None:
        arg_types = [self.type_of(a, loc) for a in call.args]
        op = lookup(call.op)
        if op is None:
            # An opaque call to a kernel: only its annotation can say what it returns.
            return annotated
        try:
            return op.infer(call, arg_types)
        except InputError as error:
            if error.line or loc is None:
                raise
            raise InputError(error.message, file=loc.file, line=loc.line, col=loc.col) from None


def _infer_function(fn: Function, known: dict[MetaKey, TensorType]) -> Function:
    env: dict[str, Type | None] = {p.var.name: p.type for p in fn.params}
    body, body_type = _Inferrer(fn, known, env).seq(fn.body)
    if fn.ret_type is not None and body_type is not None and not _accepts(fn.ret_type, body_type):
        raise _error(
            f"function {fn.name!r} is annotated to return {format_type(fn.ret_type)} but its "
            f"body gives {format_type(body_type)}",
            fn.loc,
        )
    return dataclasses.replace(fn, body=body)


def _accepts(annotated: Type, inferred: Type) -> bool:
    """Whether an annotation admits the inferred type: equal, or `R.Object` (anything)."""
    if isinstance(annotated, ObjectType) or annotated == inferred:
        return True
    if isinstance(annotated, ShapeType) and isinstance(inferred, ShapeType):
        return annotated.ndim in (-1, inferred.ndim)
    if isinstance(annotated, TupleType) and isinstance(inferred, TupleType):
        return len(annotated.fields) == len(inferred.fields) and all(
            _accepts(a, i) for a, i in zip(annotated.fields, inferred.fields)
        )
    return False


def _agree(binding: Binding, inferred: Type | None, value: Expr) -> Type | None:
    annotated = binding.type
    if annotated is None or inferred is None:
        return annotated if annotated is not None else inferred
    if not _accepts(annotated, inferred):
        raise _error(
            f"{binding.var.name!r} is annotated {format_type(annotated)} but "
            f"{_producer(value)} gives {format_type(inferred)}",
            binding.loc,
            binding.var.loc,
        )
    return annotated


def _producer(value: Expr) -> str:
    match value:
        case Call(op=op):
            return op
        case Var(name=name):
            return repr(name)
        case If():
            return "the If"
        case _:
            return "its value"


__all__: Sequence[str] = ["format_type", "infer_types", "typed_program", "verify"]
