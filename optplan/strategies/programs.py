"""Hypothesis strategies for random valid programs, built directly from IR nodes.

A program is drawn in four steps, each valid by construction:

1. Parameters: one to three tensors with small static shapes (plus a scalar bool `cond`
   when an If may be drawn), and sometimes metadata constants and named kernels.
2. Blocks: dataflow and plain blocks, never two plain blocks in a row (the text cannot
   show a boundary between them). Variables defined in a dataflow block are visible after
   it only through its outputs, as in Relax.
3. Bindings: each picks its operands from the tensors in scope and knows its result type:
   elementwise ops of equal types, unary ops, reshape, permute_dims, sum, call_tir (opaque,
   any result type), call_tir_inplace, tuples and their items, var-to-var aliases, and, in
   plain blocks of a function body, an If over `cond` whose branches compute the same type.
4. The function returns a tensor in scope or a tuple of them.

With `lowered=True`, plain blocks may also hold the planned forms (`alloc_storage`,
`alloc_tensor`, bare kernel calls and kills bound to `_`). Names are `v0`, `v1`, ... in
order, so examples shrink towards short programs. Types are annotated on some bindings
and left out (None) on others, as in TVM's own text.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import strategies as st

from optplan.ir import (
    AttrValue,
    Binding,
    Block,
    Call,
    Const,
    Expr,
    Function,
    If,
    Kernel,
    Literal,
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
    Type,
    Var,
)

DTYPES = ("float32", "float16", "int32")
UNARY = ("nn.relu", "exp", "negative", "sqrt", "sigmoid", "tanh")
BINARY = ("add", "multiply", "subtract", "maximum")
KERNELS = ("fused_a", "fused_b_relu", "conv2d_add")
FUNCTION_ATTRS = ((), (("num_input", 1),), (("num_input", 1), ("relax.force_pure", True)))


@dataclass
class _Scope:
    """What a binding may read: tensors and tuples in scope, and the next fresh name."""

    types: dict[str, Type]
    counter: list[int] = field(default_factory=lambda: [0])

    def fresh(self) -> Var:
        self.counter[0] += 1
        return Var(f"v{self.counter[0] - 1}")

    def tensors(self) -> list[str]:
        return [n for n, t in self.types.items() if isinstance(t, TensorType) and n != "cond"]

    def child(self) -> _Scope:
        return _Scope(dict(self.types), self.counter)


def shapes(max_rank: int = 3) -> st.SearchStrategy[tuple[int, ...]]:
    return st.lists(st.integers(1, 4), min_size=0, max_size=max_rank).map(tuple)


def tensor_types() -> st.SearchStrategy[TensorType]:
    return st.builds(TensorType, shapes(), st.sampled_from(DTYPES))


def types(depth: int = 2) -> st.SearchStrategy[Type]:
    """Any type the text can spell; tuples nest up to `depth`."""
    leaves = st.one_of(
        tensor_types(),
        st.builds(ShapeType, st.integers(-1, 4)),
        st.just(ObjectType()),
        st.builds(PrimType, st.sampled_from(("int64", "bool", "float32"))),
    )
    if depth == 0:
        return leaves
    return st.one_of(leaves, st.lists(types(depth - 1), max_size=3).map(tuple).map(TupleType))


def attr_values(depth: int = 2) -> st.SearchStrategy[AttrValue]:
    """Every kind of keyword attribute: literals, nested lists of them, and types."""
    leaves = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**40), 2**40),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=8),
        types(1),
    )
    if depth == 0:
        return leaves
    return st.one_of(leaves, st.lists(attr_values(depth - 1), max_size=3).map(tuple))


def attrs() -> st.SearchStrategy[tuple[tuple[str, AttrValue], ...]]:
    names = st.sampled_from(("axis", "axes", "epsilon", "out_dtype", "data_layout", "mode"))
    return st.dictionaries(names, attr_values(), max_size=4).map(lambda d: tuple(sorted(d.items())))


def constants(dtype: str) -> st.SearchStrategy[Const]:
    if dtype.startswith("int"):
        return st.builds(Const, st.integers(-100, 100), st.just(dtype))
    values = st.one_of(
        st.floats(-1e6, 1e6, allow_nan=False), st.sampled_from((float("inf"), float("-inf")))
    )
    return st.builds(Const, values, st.just(dtype))


# ---------------------------------------------------------------------------- bindings


def _annotate(draw: st.DrawFn, var: Var, value: Expr, ty: Type) -> Binding:
    return Binding(var, value, ty if draw(st.booleans()) else None)


@st.composite
def _unary(draw: st.DrawFn, scope: _Scope, source: str) -> tuple[Expr, Type]:
    return Call(draw(st.sampled_from(UNARY)), (Var(source),)), scope.types[source]


@st.composite
def _binary(draw: st.DrawFn, scope: _Scope, source: str) -> tuple[Expr, Type]:
    ty = scope.types[source]
    assert isinstance(ty, TensorType)
    partners = [n for n in scope.tensors() if scope.types[n] == ty]
    other = draw(st.one_of(st.sampled_from(partners).map(Var), constants(ty.dtype)))
    return Call(draw(st.sampled_from(BINARY)), (Var(source), other)), ty


@st.composite
def _reshape(draw: st.DrawFn, scope: _Scope, source: str) -> tuple[Expr, Type]:
    ty = scope.types[source]
    assert isinstance(ty, TensorType)
    count = 1
    for dim in ty.shape:
        count *= dim
    shape = draw(st.sampled_from(((count,), (1, count), (count, 1))))
    return Call("reshape", (Var(source), ShapeExpr(shape))), TensorType(shape, ty.dtype)


@st.composite
def _permute(draw: st.DrawFn, scope: _Scope, source: str) -> tuple[Expr, Type]:
    ty = scope.types[source]
    assert isinstance(ty, TensorType)
    axes = tuple(draw(st.permutations(range(len(ty.shape)))))
    shape = tuple(ty.shape[a] for a in axes)
    call = Call("permute_dims", (Var(source),), (("axes", axes),))
    return call, TensorType(shape, ty.dtype)


@st.composite
def _sum(draw: st.DrawFn, scope: _Scope, source: str) -> tuple[Expr, Type]:
    ty = scope.types[source]
    assert isinstance(ty, TensorType) and ty.shape
    axis = draw(st.integers(0, len(ty.shape) - 1))
    shape = tuple(1 if i == axis else d for i, d in enumerate(ty.shape))
    call = Call("sum", (Var(source),), (("axis", (axis,)), ("keepdims", True)))
    return call, TensorType(shape, ty.dtype)


@st.composite
def _call_tir(draw: st.DrawFn, scope: _Scope, source: str) -> tuple[Expr, Type]:
    others = draw(st.lists(st.sampled_from(scope.tensors()), max_size=2))
    meta = st.builds(MetaConst, st.just("ir.GenericConst"), st.integers(0, 9))
    metas = draw(st.lists(meta, max_size=1))
    args: tuple[Expr, ...] = (Var(source), *(Var(n) for n in others), *metas)
    kernel = draw(st.sampled_from(KERNELS))
    if draw(st.booleans()):
        ty = scope.types[source]
        attrs = (("inplace_indices", (0,)), ("kernel", kernel), ("out_ty", ty))
        return Call("call_tir_inplace", args, attrs), ty
    ty = draw(tensor_types())
    return Call("call_tir", args, (("kernel", kernel), ("out_ty", ty))), ty


_TENSOR_OPS = (_unary, _binary, _reshape, _permute, _sum, _call_tir)


@st.composite
def _tensor_binding(draw: st.DrawFn, scope: _Scope) -> Binding:
    source = draw(st.sampled_from(scope.tensors()))
    ty = scope.types[source]
    assert isinstance(ty, TensorType)
    ops = [op for op in _TENSOR_OPS if ty.shape or op is not _sum]
    value, result = draw(st.sampled_from(ops).flatmap(lambda op: op(scope, source)))
    var = scope.fresh()
    scope.types[var.name] = result
    return _annotate(draw, var, value, result)


@st.composite
def _tuple_binding(draw: st.DrawFn, scope: _Scope) -> Binding:
    names = draw(st.lists(st.sampled_from(scope.tensors()), min_size=1, max_size=3))
    ty = TupleType(tuple(scope.types[n] for n in names))
    var = scope.fresh()
    scope.types[var.name] = ty
    return _annotate(draw, var, Tuple(tuple(Var(n) for n in names)), ty)


@st.composite
def _item_binding(draw: st.DrawFn, scope: _Scope) -> Binding:
    tuples = [n for n, t in scope.types.items() if isinstance(t, TupleType) and t.fields]
    if not tuples:
        return draw(_tensor_binding(scope))
    source = draw(st.sampled_from(tuples))
    ty = scope.types[source]
    assert isinstance(ty, TupleType)
    index = draw(st.integers(0, len(ty.fields) - 1))
    var = scope.fresh()
    scope.types[var.name] = ty.fields[index]
    return _annotate(draw, var, TupleGetItem(Var(source), index), ty.fields[index])


@st.composite
def _alias_binding(draw: st.DrawFn, scope: _Scope) -> Binding:
    source = draw(st.sampled_from(scope.tensors()))
    var = scope.fresh()
    scope.types[var.name] = scope.types[source]
    return _annotate(draw, var, Var(source), scope.types[source])


@st.composite
def _branch(draw: st.DrawFn, scope: _Scope, ty: TensorType) -> SeqExpr:
    """A branch computing a value of type `ty` from what is in scope."""
    inner = scope.child()
    sources = [n for n in inner.tensors() if inner.types[n] == ty]
    current = draw(st.sampled_from(sources))
    bindings = []
    for _ in range(draw(st.integers(0, 2))):
        value, _ = draw(_unary(inner, current))
        var = inner.fresh()
        inner.types[var.name] = ty
        bindings.append(_annotate(draw, var, value, ty))
        current = var.name
    result = st.just((Var(current), ty))
    body, _ = draw(st.one_of(result, _unary(inner, current), _binary(inner, current)))
    return SeqExpr((Block(tuple(bindings)),) if bindings else (), body)


@st.composite
def _if_binding(draw: st.DrawFn, scope: _Scope) -> Binding:
    source = draw(st.sampled_from(scope.tensors()))
    ty = scope.types[source]
    assert isinstance(ty, TensorType)
    node = If(Var("cond"), draw(_branch(scope, ty)), draw(_branch(scope, ty)))
    var = scope.fresh()
    scope.types[var.name] = ty
    return _annotate(draw, var, node, ty)


@st.composite
def _lowered_binding(draw: st.DrawFn, scope: _Scope) -> Binding:
    """The planned forms: a storage, a tensor in it, a kernel writing it, or a kill."""
    ty = draw(tensor_types())
    kind = draw(st.sampled_from(("storage", "tensor", "kernel", "kill")))
    if kind == "storage":
        size = ShapeExpr((ty.size_bytes,))
        args: tuple[Expr, ...] = (
            size,
            Literal("prim", 0),
            Literal("str", "global"),
            Literal("dtype", "uint8"),
        )
        var = scope.fresh()
        scope.types[var.name] = ObjectType()
        return Binding(var, Call("memory.alloc_storage", args), ObjectType())
    storages = [n for n, t in scope.types.items() if isinstance(t, ObjectType)]
    if kind == "tensor" and storages:
        offset = Literal("prim", draw(st.integers(0, 4096)))
        storage = Var(draw(st.sampled_from(storages)))
        dtype = Literal("dtype", ty.dtype)
        args = (storage, offset, ShapeExpr(ty.shape), dtype, Literal("prim", 0))
        var = scope.fresh()
        scope.types[var.name] = ty
        return Binding(var, Call("memory.alloc_tensor", args), ty)
    names = draw(st.lists(st.sampled_from(scope.tensors()), min_size=1, max_size=3))
    if kind == "kill":
        return Binding(Var("_"), Call("memory.kill_tensor", (Var(names[0]),)))
    kernel = (("kernel", draw(st.sampled_from(KERNELS))),)
    return Binding(Var("_"), Call("call_kernel", tuple(Var(n) for n in names), kernel))


# ---------------------------------------------------------------------------- structure


@st.composite
def _block(draw: st.DrawFn, scope: _Scope, *, dataflow: bool, lowered: bool) -> Block:
    kinds = [_tensor_binding, _tensor_binding, _tuple_binding, _item_binding, _alias_binding]
    if not dataflow and "cond" in scope.types:
        kinds.append(_if_binding)
    if not dataflow and lowered:
        kinds.append(_lowered_binding)
    inner = scope.child() if dataflow else scope
    bindings = [draw(draw(st.sampled_from(kinds))(inner)) for _ in range(draw(st.integers(1, 4)))]
    if not dataflow:
        return Block(tuple(bindings))
    defined = [b.var for b in bindings if b.var.name != "_"]
    outputs = [v for v in defined[:-1] if draw(st.booleans())] + defined[-1:]
    scope.types.update({v.name: inner.types[v.name] for v in outputs})
    return Block(tuple(bindings), dataflow=True, outputs=tuple(outputs))


@st.composite
def functions(draw: st.DrawFn, name: str = "main", *, lowered: bool = False) -> Function:
    param_types = draw(st.lists(tensor_types(), min_size=1, max_size=3))
    params = [Param(Var(f"x{i}"), ty) for i, ty in enumerate(param_types)]
    if draw(st.booleans()):
        params.append(Param(Var("cond"), TensorType((), "bool")))
    scope = _Scope({p.var.name: p.type for p in params})
    blocks: list[Block] = []
    for _ in range(draw(st.integers(1, 3))):
        # Two plain blocks in a row would print as one, so after a plain block comes a
        # dataflow block.
        dataflow = bool(blocks and not blocks[-1].dataflow) or draw(st.booleans())
        blocks.append(draw(_block(scope, dataflow=dataflow, lowered=lowered)))
    results = draw(st.lists(st.sampled_from(scope.tensors()), min_size=1, max_size=2))
    body: Expr = Var(results[0]) if len(results) == 1 else Tuple(tuple(Var(n) for n in results))
    result_types = tuple(scope.types[n] for n in results)
    body_type = result_types[0] if len(results) == 1 else TupleType(result_types)
    ret_type = body_type if draw(st.booleans()) else None
    attrs = draw(st.sampled_from(FUNCTION_ATTRS))
    return Function(name, tuple(params), ret_type, SeqExpr(tuple(blocks), body), attrs)


def kernel_text(name: str) -> str:
    return f"@T.prim_func\ndef {name}(x: T.handle):\n    # opaque to optplan\n    T.evaluate(0)"


@st.composite
def programs(draw: st.DrawFn, *, lowered: bool = False) -> Program:
    """A whole program: one or two functions, in a module (with kernel texts) or bare."""
    names = draw(st.sampled_from((("main",), ("main", "helper"))))
    fns = tuple(draw(functions(n, lowered=lowered)) for n in names)
    defined = sorted(draw(st.sets(st.sampled_from(KERNELS))))
    kernels = tuple(Kernel(k, kernel_text(k)) for k in defined)
    return Program(fns, kernels, module=draw(st.sampled_from((None, "Module"))))
