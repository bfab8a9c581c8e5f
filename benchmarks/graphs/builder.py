"""A small builder of Relax programs for the reorder benchmark: one dataflow block, ops
appended in the order a person would write them (branch after branch, forward then
backward), types inferred at the end.

    b = Builder()
    x = b.input("x", (1, 8, 16, 16))
    y = b.relu(b.conv(x, 16, 3))
    program = b.program(y)
"""

from __future__ import annotations

import dataclasses

from optplan.analysis.types import infer_types
from optplan.ir import (
    AttrValue,
    Binding,
    Block,
    Call,
    Expr,
    Function,
    Param,
    Program,
    SeqExpr,
    ShapeExpr,
    TensorType,
    Tuple,
    Var,
)


@dataclasses.dataclass
class Builder:
    """Appends bindings; `shape(v)` is known for every value as it is added."""

    params: list[Param] = dataclasses.field(default_factory=list)
    bindings: list[Binding] = dataclasses.field(default_factory=list)
    shapes: dict[str, tuple[int, ...]] = dataclasses.field(default_factory=dict)
    inputs: int = 0

    def input(self, name: str, shape: tuple[int, ...]) -> str:
        self.params.insert(self.inputs, Param(Var(name), TensorType(shape, "float32")))
        self.inputs += 1
        self.shapes[name] = shape
        return name

    def weight(self, name: str, shape: tuple[int, ...]) -> str:
        self.params.append(Param(Var(name), TensorType(shape, "float32")))
        self.shapes[name] = shape
        return name

    def op(self, op: str, *args: str | Expr, **attrs: AttrValue) -> str:
        name = f"v{len(self.bindings)}"
        operands = tuple(Var(a) if isinstance(a, str) else a for a in args)
        call = Call(op, operands, tuple(sorted(attrs.items())))
        self.bindings.append(Binding(Var(name), call))
        self.shapes[name] = self._typed(name)
        return name

    def opaque(self, kernel: str, args: tuple[str, ...], shape: tuple[int, ...]) -> str:
        """A kernel optplan does not interpret (it replays as the mixing kernel)."""
        return self.op("call_tir", *args, kernel=kernel, out_ty=TensorType(shape, "float32"))

    # A few layers, named as in the networks.
    def conv(self, x: str, channels: int, size: int, stride: int = 1) -> str:
        w = self.weight(f"w{len(self.params)}", (channels, self.shapes[x][1], size, size))
        pad = size // 2
        return self.op("nn.conv2d", x, w, padding=(pad, pad, pad, pad), strides=(stride, stride))

    def relu(self, x: str) -> str:
        return self.op("nn.relu", x)

    def add(self, a: str, b: str) -> str:
        return self.op("add", a, b)

    def concat(self, parts: list[str]) -> str:
        return self.op("concat", Tuple(tuple(Var(p) for p in parts)), axis=1)

    def pool(self, x: str, size: int = 3, stride: int = 1) -> str:
        pad = size // 2 if stride == 1 else 0
        return self.op(
            "nn.max_pool2d",
            x,
            pool_size=(size, size),
            strides=(stride, stride),
            padding=(pad, pad, pad, pad),
        )

    def matmul(self, a: str, b: str) -> str:
        return self.op("matmul", a, b)

    def transpose(self, x: str) -> str:
        return self.op("permute_dims", x, axes=(1, 0))

    def alias(self, x: str) -> str:
        """A second name for `x` (a binding of a variable, as TVM's gradient pass writes)."""
        name = f"v{len(self.bindings)}"
        self.bindings.append(Binding(Var(name), Var(x)))
        self.shapes[name] = self.shapes[x]
        return name

    def reshape(self, x: str, shape: tuple[int, ...]) -> str:
        return self.op("reshape", x, ShapeExpr(shape))

    def program(self, *outputs: str) -> Program:
        body: Expr = Var(outputs[0]) if len(outputs) == 1 else Tuple(tuple(Var(o) for o in outputs))
        block = Block(tuple(self.bindings), dataflow=True, outputs=tuple(Var(o) for o in outputs))
        fn = Function(
            "main", tuple(self.params), None, SeqExpr((block,), body), (("num_input", self.inputs),)
        )
        return infer_types(Program((fn,)))

    def _typed(self, name: str) -> tuple[int, ...]:
        block = Block(tuple(self.bindings), dataflow=True, outputs=(Var(name),))
        fn = Function("main", tuple(self.params), None, SeqExpr((block,), Var(name)))
        typed = infer_types(Program((fn,))).main
        out = typed.body.blocks[0].bindings[-1].type
        assert isinstance(out, TensorType)
        return out.shape
