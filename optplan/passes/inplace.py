"""use_inplace_calls: let elementwise ops write their output over a dying input.

The analogue of TVM Relax's DataflowUseInplaceCalls, on high-level ops. Per function:

1. Infer types and compute buffer liveness (`build_memory`): each binding's point, the
   buffers dead after it (`MemoryFacts.released(var).after`), and where every variable's value lives
   (`placements`; parameters, constants and views of them have none, being never planned).
2. Walk the bindings of dataflow blocks (inside If branches too) in program order. A call
   may run in place over argument i when all hold:
   - its op may run in place (`OpDef.inplace`: elementwise ops of equal byte size;
     `call_tir` kernels are opaque, whatever their names say, so they never qualify);
   - argument i is a variable whose value is a whole planned buffer (of the same
     byte size): so not a parameter, a constant, nor a view or alias of one. This is the
     rule TVM 0.27 misses when it writes BatchNorm's `var + eps` into the model constant;
   - its buffer is dead after this binding: no alias of it (view, var-to-var binding,
     tuple) is read later and it is not a returned value;
   - argument i has exactly the output's shape and dtype (broadcast operands do not).
   The first such argument is taken: `Call(op, args, attrs + inplace_indices=(i,))`.
3. An accepted rewrite makes the output share the argument's buffer. Later decisions
   still read the first liveness: the output's own buffer dies exactly where the shared
   buffer now dies (the argument was dead after the rewritten op), so no rerun is needed.
   Liveness, planners and the executor already read `inplace_indices` as an alias.
"""

from __future__ import annotations

import dataclasses

from optplan.analysis.liveness import build_memory
from optplan.analysis.memory import MemoryFacts, Placement
from optplan.analysis.types import typed_program
from optplan.ir import (
    AttrValue,
    Binding,
    Block,
    Call,
    Function,
    If,
    Program,
    SeqExpr,
    TensorType,
    Var,
    var_types,
)
from optplan.ops import lookup

INPLACE = "inplace_indices"


def use_inplace_calls(program: Program) -> Program:
    """`program` with elementwise calls of its dataflow blocks made in place where safe.

    Types are filled in where they were missing (the liveness needs them).
    """
    typed = typed_program(program)
    functions = tuple(_inplace_function(fn) for fn in typed.functions)
    return dataclasses.replace(typed, functions=functions)


def _inplace_function(fn: Function) -> Function:
    memory = build_memory(Program((fn,)), alignment=1)
    types = {name: t for name, t in var_types(fn).items() if isinstance(t, TensorType)}
    return dataclasses.replace(fn, body=_seq(fn.body, memory, types))


def _seq(seq: SeqExpr, memory: MemoryFacts, types: dict[str, TensorType]) -> SeqExpr:
    blocks = tuple(_block(block, memory, types) for block in seq.blocks)
    return dataclasses.replace(seq, blocks=blocks)


def _block(block: Block, memory: MemoryFacts, types: dict[str, TensorType]) -> Block:
    bindings = []
    for binding in block.bindings:
        value = binding.value
        if isinstance(value, If):
            value = dataclasses.replace(
                value,
                then_branch=_seq(value.then_branch, memory, types),
                else_branch=_seq(value.else_branch, memory, types),
            )
        elif block.dataflow and isinstance(value, Call):
            value = _maybe_inplace(binding, value, memory, types)
        bindings.append(dataclasses.replace(binding, value=value))
    return dataclasses.replace(block, bindings=tuple(bindings))


def _maybe_inplace(
    binding: Binding, call: Call, memory: MemoryFacts, types: dict[str, TensorType]
) -> Call:
    index = inplace_candidate(binding, call, memory, types)
    if index is None:
        return call
    return dataclasses.replace(call, attrs=with_attr(call.attrs, INPLACE, (index,)))


def inplace_candidate(
    binding: Binding, call: Call, memory: MemoryFacts, types: dict[str, TensorType]
) -> int | None:
    """The first argument `call` may overwrite (step 2), or None."""
    op = lookup(call.op)
    if op is None or not op.inplace or call.attr(INPLACE) is not None:
        return None
    out = binding.type
    if not isinstance(out, TensorType):
        return None
    dead = set(memory.released(binding.var.name).after)
    for index, arg in enumerate(call.args):
        if (
            isinstance(arg, Var)
            and types.get(arg.name) == out
            and _owns_dying(arg.name, out, memory, dead)
        ):
            return index
    return None


def _owns_dying(name: str, out: TensorType, memory: MemoryFacts, dead: set[str]) -> bool:
    """Whether `name` is a whole planned buffer that dies here: parameters, constants and
    views of them have no placement, so they are never candidates."""
    placement = memory.placements.get(name)
    if not isinstance(placement, Placement):
        return False
    if placement.buffer not in dead:
        return False
    return memory.problem.buffer(placement.buffer).size == out.size_bytes


def with_attr(
    attrs: tuple[tuple[str, AttrValue], ...], key: str, value: AttrValue
) -> tuple[tuple[str, AttrValue], ...]:
    """`attrs` with `key` set to `value`, kept sorted by name as the IR wants."""
    kept = [(k, v) for k, v in attrs if k != key]
    return tuple(sorted([*kept, (key, value)], key=lambda item: item[0]))
