"""Random high-level Relax programs that TVM's own parser and passes accept.

Where `optplan.strategies.programs` draws everything optplan's text can spell, this draws
what TVM's pipeline can compile: one function `main` whose single dataflow block calls
high-level ops (no opaque kernels), in four steps, each valid by construction:

1. Parameters: inputs `x0`, `x1`, ... (`num_input` of them) and weights `w0`, `w1`, ...,
   all float32 with shapes from a small pool, so that operands of equal shape meet often.
   Weights are bound as model constants before TVM's passes run (as an ONNX import
   does), so they must never be written.
2. Bindings `v0`, `v1`, ...: unary and binary elementwise ops (binary between equal
   shapes, or with a scalar `R.const`, as BatchNorm's `var + eps`), `reshape` (a view in
   TVM, after RewriteDataflowReshape), `permute_dims`, `sum`, a tuple and one of its
   items, and `nn.batch_norm` over a (1, C, H, W) tensor with four fresh (C,) weights.
3. Weights a binding draws (BatchNorm's four) join the parameters as they are drawn.
4. The block's output and the function's result: the last binding, or a tuple of two.

Examples shrink towards fewer bindings, lower-numbered operands and the first op of each
list (unary `nn.relu`, binary `add`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import strategies as st

from optplan.ir import (
    Binding,
    Block,
    Call,
    Const,
    Expr,
    Function,
    Param,
    Program,
    SeqExpr,
    ShapeExpr,
    TensorType,
    Tuple,
    TupleGetItem,
    TupleType,
    Type,
    Var,
)

SHAPES = ((2, 3), (1, 2, 2, 2), (6,), (3, 2))
UNARY = ("nn.relu", "exp", "negative", "sqrt", "tanh", "sigmoid")
BINARY = ("add", "multiply", "subtract", "maximum", "divide")
EPSILON = 1e-5


@dataclass
class RelaxCase:
    """A drawn program and which of its parameters are weights (bound as constants)."""

    program: Program
    weights: tuple[str, ...]

    @property
    def bindings(self) -> int:
        return sum(len(block.bindings) for block in self.program.functions[0].body.blocks)


@dataclass
class _Scope:
    params: list[Param]
    types: dict[str, TensorType] = field(default_factory=dict)
    counter: int = 0

    def fresh(self) -> Var:
        self.counter += 1
        return Var(f"v{self.counter - 1}")

    def weight(self, shape: tuple[int, ...]) -> Var:
        var = Var(f"w{sum(p.var.name.startswith('w') for p in self.params)}")
        self.params.append(Param(var, TensorType(shape, "float32")))
        self.types[var.name] = TensorType(shape, "float32")
        return var


@st.composite
def _unary(draw: st.DrawFn, scope: _Scope, source: str) -> tuple[Expr, TensorType]:
    return Call(draw(st.sampled_from(UNARY)), (Var(source),)), scope.types[source]


@st.composite
def _binary(draw: st.DrawFn, scope: _Scope, source: str) -> tuple[Expr, TensorType]:
    ty = scope.types[source]
    partners = [n for n, t in scope.types.items() if t == ty]
    scalar = st.sampled_from((EPSILON, 1.0, 2.0)).map(lambda v: Const(v, "float32"))
    other = draw(st.one_of(scalar, st.sampled_from(partners).map(Var)))
    return Call(draw(st.sampled_from(BINARY)), (Var(source), other)), ty


@st.composite
def _reshape(draw: st.DrawFn, scope: _Scope, source: str) -> tuple[Expr, TensorType]:
    ty = scope.types[source]
    count = 1
    for dim in ty.shape:
        count *= dim
    shapes = [s for s in SHAPES + ((1, count), (count,)) if _count(s) == count and s != ty.shape]
    shape = draw(st.sampled_from(shapes or [(count,)]))
    return Call("reshape", (Var(source), ShapeExpr(shape))), TensorType(shape, "float32")


def _count(shape: tuple[int, ...]) -> int:
    count = 1
    for dim in shape:
        count *= dim
    return count


@st.composite
def _permute(draw: st.DrawFn, scope: _Scope, source: str) -> tuple[Expr, TensorType]:
    ty = scope.types[source]
    axes = tuple(draw(st.permutations(range(len(ty.shape)))))
    shape = tuple(ty.shape[a] for a in axes)
    return Call("permute_dims", (Var(source),), (("axes", axes),)), TensorType(shape, "float32")


@st.composite
def _sum(draw: st.DrawFn, scope: _Scope, source: str) -> tuple[Expr, TensorType]:
    ty = scope.types[source]
    axis = draw(st.integers(0, len(ty.shape) - 1))
    shape = tuple(1 if i == axis else d for i, d in enumerate(ty.shape))
    call = Call("sum", (Var(source),), (("axis", (axis,)), ("keepdims", True)))
    return call, TensorType(shape, "float32")


_OPS = (_unary, _binary, _reshape, _permute, _sum)


def _tensor_binding(draw: st.DrawFn, scope: _Scope) -> list[Binding]:
    source = draw(st.sampled_from(sorted(scope.types)))
    value, ty = draw(st.sampled_from(_OPS).flatmap(lambda op: op(scope, source)))
    var = scope.fresh()
    scope.types[var.name] = ty
    return [Binding(var, value, ty)]


def _batch_norm(draw: st.DrawFn, scope: _Scope) -> list[Binding]:
    """`nn.batch_norm` and its item 0; TVM decomposes it into `(x - mean) / sqrt(var +
    eps) * gamma + beta` on (1, C, 1, 1) reshapes of the weights."""
    images = sorted(n for n, t in scope.types.items() if len(t.shape) == 4)
    if not images:
        return _tensor_binding(draw, scope)
    source = draw(st.sampled_from(images))
    ty = scope.types[source]
    stats = tuple(scope.weight((ty.shape[1],)) for _ in range(4))
    attrs = (("axis", 1), ("epsilon", EPSILON))
    stat = TensorType((ty.shape[1],), "float32")
    whole = TupleType((ty, stat, stat))
    triple, item = scope.fresh(), scope.fresh()
    scope.types[item.name] = ty
    return [
        Binding(triple, Call("nn.batch_norm", (Var(source), *stats), attrs), whole),
        Binding(item, TupleGetItem(triple, 0), ty),
    ]


def _tuple_item(draw: st.DrawFn, scope: _Scope) -> list[Binding]:
    names = draw(st.lists(st.sampled_from(sorted(scope.types)), min_size=2, max_size=2))
    types: tuple[Type, ...] = tuple(scope.types[n] for n in names)
    pair, item = scope.fresh(), scope.fresh()
    index = draw(st.integers(0, 1))
    scope.types[item.name] = scope.types[names[index]]
    return [
        Binding(pair, Tuple(tuple(Var(n) for n in names)), TupleType(types)),
        Binding(item, TupleGetItem(pair, index), scope.types[names[index]]),
    ]


@st.composite
def relax_cases(draw: st.DrawFn, max_bindings: int = 12) -> RelaxCase:
    """A program for TVM's pipeline and the names of its weights (steps 1-4)."""
    inputs = draw(st.lists(st.sampled_from(SHAPES), min_size=1, max_size=2))
    params = [Param(Var(f"x{i}"), TensorType(s, "float32")) for i, s in enumerate(inputs)]
    scope = _Scope(params, {p.var.name: p.type for p in params})  # type: ignore[misc]
    for shape in draw(st.lists(st.sampled_from(SHAPES), max_size=2)):
        scope.weight(shape)
    bindings: list[Binding] = []
    kinds = (_tensor_binding, _tensor_binding, _batch_norm, _tuple_item)
    # A "one more?" (3 in 4) before each binding, not a count drawn first: deleting one
    # binding's draws then leaves a valid, shorter program, which shrinks well.
    while not bindings or (len(bindings) < max_bindings and draw(st.integers(0, 3)) > 0):
        bindings += draw(st.sampled_from(kinds))(draw, scope)
    last = bindings[-1]
    outputs = [last.var]
    if draw(st.booleans()):
        outputs.insert(0, draw(st.sampled_from([b.var for b in bindings if _is_tensor(b)])))
    body: Expr = outputs[0] if len(outputs) == 1 else Tuple(tuple(outputs))
    block = Block(tuple(bindings), dataflow=True, outputs=tuple(dict.fromkeys(outputs)))
    attrs = (("num_input", len(inputs)),)
    fn = Function("main", tuple(scope.params), None, SeqExpr((block,), body), attrs)
    weights = tuple(p.var.name for p in scope.params[len(inputs) :])
    return RelaxCase(Program((fn,)), weights)


def _is_tensor(binding: Binding) -> bool:
    return isinstance(binding.type, TensorType)
