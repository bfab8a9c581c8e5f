"""attach_layout_free_buffers: mark kernel arguments that are weights, drop dead kernels.

The analogue of TVM Relax's AttachAttrLayoutFreeBuffers. A weight's layout may be changed
ahead of time (it never changes between runs), so a compiler may pre-transform it; the
kernel call records which of its argument positions are such buffers. Steps:

1. Per function, the weights: parameters at or after `num_input`, followed through
   var-to-var bindings (an alias of a weight is the same weight).
2. On each kernel call (`call_tir`, `call_tir_inplace`, and destination-passing kernel
   calls), the positions of arguments that are weights or constants (`R.const`,
   `metadata[...]`) become the attribute `layout_free_buffers`; a call with none gets
   no attribute. Calls inside If branches are visited too.
3. In a whole module (`program.kernels`), kernels that no call names any more are dropped.
"""

from __future__ import annotations

import dataclasses

from optplan.ir import (
    Binding,
    Block,
    Call,
    Const,
    Expr,
    Function,
    If,
    MetaConst,
    Program,
    SeqExpr,
    Var,
)
from optplan.passes.inplace import with_attr

LAYOUT_FREE = "layout_free_buffers"
KERNEL_CALLS = ("call_tir", "call_tir_inplace", "call_kernel")


def attach_layout_free_buffers(program: Program) -> Program:
    """`program` with `layout_free_buffers` on its kernel calls and unused kernels gone."""
    functions = tuple(_attach_function(fn) for fn in program.functions)
    called = {name for fn in functions for name in _called_kernels(fn.body)}
    kernels = tuple(k for k in program.kernels if k.name in called)
    return dataclasses.replace(program, functions=functions, kernels=kernels)


def _attach_function(fn: Function) -> Function:
    weights = {p.var.name for p in fn.params[fn.num_input :]}
    return dataclasses.replace(fn, body=_seq(fn.body, weights))


def _seq(seq: SeqExpr, weights: set[str]) -> SeqExpr:
    return dataclasses.replace(seq, blocks=tuple(_block(b, weights) for b in seq.blocks))


def _block(block: Block, weights: set[str]) -> Block:
    return dataclasses.replace(block, bindings=tuple(_binding(b, weights) for b in block.bindings))


def _binding(binding: Binding, weights: set[str]) -> Binding:
    value = binding.value
    match value:
        case Var(name=name) if name in weights:
            # Mutating the set is safe: names are bound once and read after their binding.
            weights.add(binding.var.name)
        case If():
            value = dataclasses.replace(
                value,
                then_branch=_seq(value.then_branch, weights),
                else_branch=_seq(value.else_branch, weights),
            )
        case Call(op=op) if op in KERNEL_CALLS:
            positions = tuple(
                i for i, arg in enumerate(value.args) if _is_layout_free(arg, weights)
            )
            if positions:
                value = dataclasses.replace(
                    value, attrs=with_attr(value.attrs, LAYOUT_FREE, positions)
                )
    return dataclasses.replace(binding, value=value)


def _is_layout_free(arg: Expr, weights: set[str]) -> bool:
    return isinstance(arg, (Const, MetaConst)) or (isinstance(arg, Var) and arg.name in weights)


def _called_kernels(seq: SeqExpr) -> set[str]:
    names: set[str] = set()
    for block in seq.blocks:
        for binding in block.bindings:
            value = binding.value
            if isinstance(value, If):
                names |= _called_kernels(value.then_branch) | _called_kernels(value.else_branch)
            elif isinstance(value, Call) and value.op in KERNEL_CALLS:
                names.add(str(value.attr("kernel")))
    return names
