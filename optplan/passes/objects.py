"""Liveness of runtime objects (tensors and storages), read off the buffer liveness.

`build_memory` tracks the buffers a planner places. The memory passes need a little more:
the objects a runtime allocates and frees, including those of an already lowered program,
where `R.memory.alloc_tensor` is a view of its storage for planning purposes but a
separate object for killing. Rather than a second liveness analysis, this module runs
the one in `optplan.analysis.liveness` on a shadow copy of each function:

1. Bare statements (`_ = ...`) get unique names so that every binding has a point; a
   statement whose type is unknown (a destination-passing kernel call) gets the empty
   tuple type, so it makes no buffer.
2. `R.memory.alloc_storage` gets a byte-tensor type, so each storage is a buffer of its
   own; its uses are the `alloc_tensor` calls that carve it (a storage is dead after its
   last `alloc_tensor`, as in TVM, while the tensors carved from it live on).
3. `R.memory.alloc_tensor` becomes an opaque call, so each carved tensor is a buffer of
   its own instead of a view of its storage.

The shadow has the same shape as the function (block for block, binding for binding), so
a pass walks both in step and reads the releases of the shadow binding.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from optplan.analysis.liveness import build_memory
from optplan.analysis.memory import MemoryFacts
from optplan.ir import (
    Binding,
    Call,
    Function,
    If,
    Literal,
    ObjectType,
    Program,
    SeqExpr,
    ShapeExpr,
    TensorType,
    TupleType,
    Type,
    iter_bindings,
)

BARE = "_"
# The opaque stand-in for alloc_tensor: unknown to the op table, so never a view.
_CARVE = "optplan.carve_tensor"


@dataclass(frozen=True, slots=True)
class Objects:
    """The memory facts of one function's runtime objects.

    `shadow` is the function with bare statements renamed; `memory` its MemoryFacts (buffers
    named after the variables that create them); `types` the original type of every
    bound variable, by shadow name (storages keep their `ObjectType`).
    """

    shadow: Function
    memory: MemoryFacts
    types: dict[str, Type | None]
    bare: frozenset[str]


def function_objects(fn: Function) -> Objects:
    """Objects of `fn`, whose bindings must be typed (run `infer_types` first); bare
    statements may stay untyped."""
    names = {b.var.name for b in iter_bindings(fn.body)} | {p.var.name for p in fn.params}
    shadower = _Shadower(names)
    shadow = dataclasses.replace(fn, body=shadower.seq(fn.body))
    memory = build_memory(Program((shadow,)), alignment=1)
    bare = frozenset(name for name in shadower.types if name not in names)
    return Objects(shadow, memory, shadower.types, bare)


@dataclass(slots=True)
class _Shadower:
    """Builds the shadow of one function (steps 1-3), remembering the original types."""

    taken: set[str]
    types: dict[str, Type | None] = field(default_factory=dict)
    counter: int = 0

    def fresh(self) -> str:
        while f"_stmt{self.counter}" in self.taken:
            self.counter += 1
        self.taken.add(f"_stmt{self.counter}")
        return f"_stmt{self.counter}"

    def seq(self, seq: SeqExpr) -> SeqExpr:
        blocks = tuple(
            dataclasses.replace(block, bindings=tuple(self.binding(b) for b in block.bindings))
            for block in seq.blocks
        )
        return dataclasses.replace(seq, blocks=blocks)

    def binding(self, binding: Binding) -> Binding:
        bare = binding.var.name == BARE
        name = self.fresh() if bare else binding.var.name
        self.types[name] = binding.type
        value, type_ = binding.value, binding.type
        if isinstance(value, If):
            value = dataclasses.replace(
                value,
                then_branch=self.seq(value.then_branch),
                else_branch=self.seq(value.else_branch),
            )
        elif isinstance(value, Call):
            value, type_ = _shadow_call(value, type_, not bare)
        var = dataclasses.replace(binding.var, name=name)
        return dataclasses.replace(binding, var=var, value=value, type=type_)


def _shadow_call(call: Call, type_: Type | None, named: bool) -> tuple[Call, Type | None]:
    if call.op == "memory.alloc_storage":
        return call, TensorType((storage_bytes(call),), "uint8")
    if call.op == "memory.alloc_tensor":
        return dataclasses.replace(call, op=_CARVE), type_
    if type_ is None and not named:
        # A destination-passing kernel call or a kill: it returns nothing to track.
        return call, TupleType(())
    return call, type_


def storage_bytes(call: Call) -> int:
    """The size of `R.memory.alloc_storage(R.shape([n]), ...)`: n bytes."""
    shape = call.args[0]
    if not isinstance(shape, ShapeExpr) or len(shape.values) != 1:
        raise ValueError("alloc_storage takes its size as R.shape([bytes])")
    return int(shape.values[0])


def is_storage(type_: Type | None) -> bool:
    return isinstance(type_, ObjectType)


def literal_int(expr: object) -> int:
    """The integer of a `Literal` operand (an alloc_tensor offset)."""
    if not isinstance(expr, Literal) or not isinstance(expr.value, int):
        raise TypeError(f"expected an integer operand, got {expr!r}")
    return int(expr.value)
