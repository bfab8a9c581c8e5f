"""kill_after_last_use: free every tensor and storage right after its last use.

The analogue of TVM Relax's KillAfterLastUse (and of Relay's ManifestLifetimes before
it), without their gaps around If. Per function:

1. Types are inferred and the liveness of runtime objects is computed on a shadow of the
   function (`optplan.passes.objects`): one buffer per tensor a call creates, per
   storage, per tensor carved from a storage. Views, var-to-var bindings and tuple items
   share their source's buffer, so an alias class is one buffer and dies only when every
   member is dead. Parameters, constants and returned values are no buffers: never killed.
2. After each binding, one bare `R.memory.kill_tensor(x)` (or `kill_storage(s)` for a
   storage) per buffer that `MemoryFacts.released(var).after` says is dead there. A storage's uses
   are the `alloc_tensor` calls carving it, so it is killed right after the last one.
3. If: a buffer live before the If but dead on entering a branch (the condition after its
   test, a value used only in the other branch) is killed at the top of that branch; one
   dying inside a branch is killed there by step 2.
4. A branch whose value is a call first gets the call bound to a fresh variable (its
   operands can then be killed after it). A branch's value is handed over to the If's
   own variable. When it dies there (the usual case: a branch-local result, or an outer
   value at its last use) it is moved, not killed, so there is no kill before the
   hand-over and no second kill of the same bytes; the If's variable is then killed
   after its own last use. A value still live after the If is copied, as the executor
   does, and killed after its own last use. An If whose value is never read is killed
   right after it.

        x = f(a)             if c:                      r = if ...
        y = g(x)               kill_tensor(b)  <- 3       h(r)
        kill_tensor(x) <- 2    v = k(a)                   kill_tensor(r)  <- 4
                               r = v           <- 4: v moves into r

The bound name of the kill is the variable that created the buffer (a tuple field is
named `t[i]`), which is in scope wherever the buffer is live. A kill goes into the block
of the binding it follows, a dataflow block too (TVM runs its pass after leaving
dataflow form; optplan does not need to). Kills already in the program are dropped first,
so running the pass twice gives the same program.
"""

from __future__ import annotations

import dataclasses
import re

from optplan.analysis.types import infer_types
from optplan.ir import (
    Binding,
    Block,
    Call,
    Expr,
    Function,
    If,
    Program,
    SeqExpr,
    TupleGetItem,
    Var,
    iter_bindings,
)
from optplan.passes.names import fresh_name
from optplan.passes.objects import BARE, Objects, function_objects, is_storage

KILL_TENSOR = "memory.kill_tensor"
KILL_STORAGE = "memory.kill_storage"
_FIELD = re.compile(r"\[(\d+)\]")


def kill_after_last_use(program: Program) -> Program:
    """`program` with a kill after the last use of every tensor and storage; kills it
    already has are replaced (they would read as uses)."""
    program = name_branch_values(strip_kills(program))
    typed = infer_types(program)
    functions = tuple(
        _kill_function(fn, function_objects(typed_fn))
        for fn, typed_fn in zip(program.functions, typed.functions)
    )
    # The kills are bare statements without types.
    return dataclasses.replace(program, functions=functions, typed=False)


def name_branch_values(program: Program) -> Program:
    """A branch whose value is a call gets the call bound to a fresh variable first, so
    that its operands can be killed after it (nothing can follow a branch's value)."""
    functions = tuple(_name_function(fn) for fn in program.functions)
    # The new bindings have no types yet.
    return dataclasses.replace(program, functions=functions, typed=False)


def _name_function(fn: Function) -> Function:
    taken = {b.var.name for b in iter_bindings(fn.body)} | {p.var.name for p in fn.params}
    return dataclasses.replace(fn, body=_name_seq(fn.body, taken))


def _name_seq(seq: SeqExpr, taken: set[str]) -> SeqExpr:
    blocks = []
    for block in seq.blocks:
        bindings = tuple(_name_binding(b, taken) for b in block.bindings)
        blocks.append(dataclasses.replace(block, bindings=bindings))
    return dataclasses.replace(seq, blocks=tuple(blocks))


def _name_binding(binding: Binding, taken: set[str]) -> Binding:
    node = binding.value
    if not isinstance(node, If):
        return binding
    branches = []
    for branch in (node.then_branch, node.else_branch):
        branch = _name_seq(branch, taken)
        if isinstance(branch.body, Call):
            var = Var(fresh_name(f"{binding.var.name}_value", taken))
            named = Binding(var, branch.body, binding.type)
            branch = dataclasses.replace(branch, blocks=_append(branch.blocks, named), body=var)
        branches.append(branch)
    rewritten = dataclasses.replace(node, then_branch=branches[0], else_branch=branches[1])
    return dataclasses.replace(binding, value=rewritten)


def _append(blocks: tuple[Block, ...], binding: Binding) -> tuple[Block, ...]:
    if blocks and not blocks[-1].dataflow:
        last = blocks[-1]
        return (*blocks[:-1], dataclasses.replace(last, bindings=(*last.bindings, binding)))
    return (*blocks, Block((binding,)))


def _kill_function(fn: Function, objects: Objects) -> Function:
    return dataclasses.replace(fn, body=_seq(fn.body, objects.shadow.body, objects, ()))


def _seq(seq: SeqExpr, shadow: SeqExpr, objects: Objects, prefix: tuple[Binding, ...]) -> SeqExpr:
    blocks = [
        dataclasses.replace(block, bindings=tuple(_block_bindings(block, twin, objects)))
        for block, twin in zip(seq.blocks, shadow.blocks)
    ]
    if prefix:
        if blocks and not blocks[0].dataflow:
            blocks[0] = dataclasses.replace(blocks[0], bindings=prefix + blocks[0].bindings)
        else:
            # Kills are not pure, so they open a plain block rather than join a dataflow one.
            blocks.insert(0, Block(prefix))
    return dataclasses.replace(seq, blocks=tuple(blocks))


def _block_bindings(block: Block, twin: Block, objects: Objects) -> list[Binding]:
    out: list[Binding] = []
    for binding, shadow in zip(block.bindings, twin.bindings):
        name = shadow.var.name
        if isinstance(binding.value, If):
            assert isinstance(shadow.value, If)
            out.extend(_if_bindings(binding, binding.value, shadow.value, name, objects))
        else:
            out.append(binding)
            out.extend(kills(objects.memory.released(name).after, objects))
    return out


def _if_bindings(
    binding: Binding, node: If, twin: If, name: str, objects: Objects
) -> list[Binding]:
    released = objects.memory.released(name)
    then_kills = kills(released.then_entry, objects)
    else_kills = kills(released.else_entry, objects)
    rewritten = dataclasses.replace(
        node,
        then_branch=_seq(node.then_branch, twin.then_branch, objects, tuple(then_kills)),
        else_branch=_seq(node.else_branch, twin.else_branch, objects, tuple(else_kills)),
    )
    # Of what dies at a branch's exit, only the If's own buffers are killed: the rest is
    # the branch's value, moved into the If's variable (step 4).
    exits = set(released.then_exit) | set(released.else_exit)
    own = sorted(b for b in exits if _root(b) == name)
    return [dataclasses.replace(binding, value=rewritten), *kills(tuple(own), objects)]


def kills(buffers: tuple[str, ...], objects: Objects) -> list[Binding]:
    """One bare kill per buffer, naming the variable (or tuple field) that created it."""
    out = []
    for buffer in buffers:
        root = _root(buffer)
        if root in objects.bare:
            # Made by a bare statement: no name can reach it (TVM leaks it the same way).
            continue
        op = KILL_STORAGE if is_storage(objects.types.get(root)) else KILL_TENSOR
        out.append(Binding(Var(BARE), Call(op, (_target(buffer),))))
    return out


def _root(buffer: str) -> str:
    """The variable whose binding created `buffer` (`t` for the field buffer `t[1][0]`)."""
    return buffer.split("[", 1)[0]


def _target(buffer: str) -> Expr:
    expr: Expr = Var(_root(buffer))
    for index in _FIELD.findall(buffer):
        expr = TupleGetItem(expr, int(index))
    return expr


def is_kill(binding: Binding) -> bool:
    return isinstance(binding.value, Call) and binding.value.op in (KILL_TENSOR, KILL_STORAGE)


def strip_kills(program: Program) -> Program:
    """`program` without its kill statements (to replace them by this pass's own)."""
    functions = tuple(dataclasses.replace(fn, body=_strip_seq(fn.body)) for fn in program.functions)
    return dataclasses.replace(program, functions=functions)


def _strip_seq(seq: SeqExpr) -> SeqExpr:
    blocks = []
    for block in seq.blocks:
        kept = tuple(_strip_binding(b) for b in block.bindings if not is_kill(b))
        if kept or not block.bindings:
            blocks.append(dataclasses.replace(block, bindings=kept))
    return dataclasses.replace(seq, blocks=tuple(blocks))


def _strip_binding(binding: Binding) -> Binding:
    value = binding.value
    if not isinstance(value, If):
        return binding
    stripped = dataclasses.replace(
        value, then_branch=_strip_seq(value.then_branch), else_branch=_strip_seq(value.else_branch)
    )
    return dataclasses.replace(binding, value=stripped)
