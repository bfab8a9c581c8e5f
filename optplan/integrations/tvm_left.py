"""What `PlanBlockMemory` leaves to TVM in a function, and why, read off TVM's IR.

After StaticPlanBlockMemory, memory the pass does not place in optplan's arena is of
four kinds; `split` names each tensor (or object) and its reason, beside the carves
optplan plans:

1. An `R.builtin.alloc_tensor` TVM itself left unplanned (the VM allocates it when the
   function runs): a tensor the function returns (the caller owns it); one passed to a
   call the planners cannot see through (a packed function, a builtin, another Relax
   function: it may keep the tensor, in a runtime object or elsewhere); one used outside
   the binding block it is made in, or by an If (TVM plans block by block).
2. A tensor TVM carved from a storage of symbolic size: one of its dimensions has no
   upper bound, either because the signature's variable has no `tir_var_upper_bound`, or
   because the body defines the variable from data (`R.match_cast`), which no bound
   reaches. It stays on TVM's storage.
3. A tensor carved from a storage TVM made for a returned value at its bound
   (`relax.memory_plan_dynamic_func_output`): the caller's, as in 1.
4. A tensor or object a packed call returns: its memory is the runtime's.

Aliases (var-to-var bindings, tuples and their items, reshape views) lead back to the
allocations they refer to, so a tensor returned or passed on through a view counts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import tvm
from tvm import relax

from optplan.integrations.tvm_ir import (
    ALLOC_TENSOR,
    BUILTIN_ALLOC,
    bindings,
    carves,
    is_call,
    storages,
    unbounded_names,
)

__all__ = ["Left", "Split", "split"]

_VIEWS = ("relax.reshape", "relax.memory.view", "relax.memory.ensure_zero_offset")
_PACKED = (
    "relax.call_pure_packed",
    "relax.call_inplace_packed",
    "relax.call_builtin_with_ctx",
    "relax.call_dps_packed",
)
_KERNEL_OPS = ("relax.vm.call_tir_dyn",)


@dataclass(frozen=True, slots=True)
class Left:
    """A tensor (or object) whose memory optplan leaves to TVM: its name in TVM's IR,
    its type as TVM prints it, why in words, and the kind of reason: "returned",
    "opaque call" (passed to a call optplan cannot see through), "block" (used by an If
    or in another binding block), "unbounded" (a signature's variable without a bound),
    "data-dependent" (a variable the body defines), "runtime" (a packed call's result)."""

    name: str
    type: str
    reason: str
    kind: str

    def __str__(self) -> str:
        return f"{self.name} {self.type}: {self.reason}"


@dataclass(frozen=True, slots=True)
class Split:
    """A function's memory after StaticPlanBlockMemory: the carves optplan plans (indices
    into `tvm_ir.carves`: those on storages of constant size that hold no returned value)
    and what stays TVM's."""

    mine: tuple[int, ...]
    left: tuple[Left, ...]


def split(func: relax.Function, mod: tvm.IRModule) -> Split:
    """The carves optplan plans, and kinds 1-4 of the docstring in program order."""
    carved, sizes = carves(func.body), storages(func.body)
    roots = _roots(func)
    outputs = _refers(func.body.body, roots)
    returned = {b.value.args[0] for b in carved if b.var in outputs}  # TVM's storages for them
    mine = tuple(
        k
        for k, b in enumerate(carved)
        if sizes[b.value.args[0]] is not None and b.value.args[0] not in returned
    )
    opaque = _opaque_uses(func, mod, roots)
    used = set(relax.analysis.free_vars(func.body.body))
    for b in bindings(func.body):
        used |= set(relax.analysis.free_vars(b.value))
    left = []
    for b in bindings(func.body):
        value = b.value
        why: tuple[str, str] | None = None
        if is_call(value, BUILTIN_ALLOC):
            why = _unplanned_reason(b.var, outputs, opaque)
        elif is_call(value, ALLOC_TENSOR) and value.args[0] in returned:
            why = "returned", "returned by the function: the caller's memory (TVM's storage)"
        elif is_call(value, ALLOC_TENSOR) and sizes.get(value.args[0], 0) is None:
            why = _unbounded_reason(func, value.ty.shape)
        elif _packed_name(value) is not None and _holds_memory(b.var) and b.var in used:
            why = (
                "runtime",
                (
                    f"returned by the packed function {_packed_name(value)}: the runtime's "
                    "memory, which optplan cannot see into"
                ),
            )
        if why is not None:
            left.append(Left(b.var.name, _type(b.var), why[1], why[0]))
    return Split(mine, tuple(left))


def _unplanned_reason(
    var: relax.Var, outputs: set[relax.Var], opaque: dict[relax.Var, str]
) -> tuple[str, str]:
    if var in outputs:
        return "returned", "returned by the function: the caller's memory (TVM's too)"
    if var in opaque:
        return "opaque call", (
            f"passed to {opaque[var]}, which optplan cannot see through (it may keep the "
            "tensor, in a runtime object or elsewhere); TVM allocates it at run time"
        )
    return "block", "used by an If or outside its binding block; TVM allocates it at run time"


def _unbounded_reason(func: relax.Function, shape: Any) -> tuple[str, str]:
    names = unbounded_names(func, shape)
    data = [name for name, in_signature in names if not in_signature]
    if data:
        return "data-dependent", (
            f"a data-dependent shape: {', '.join(data)} is defined in the function's body "
            "(R.match_cast), where no tir_var_upper_bound reaches; it stays on TVM's storage"
        )
    given = ", ".join(f'"{name}": ...' for name, _ in names)
    return "unbounded", (
        f"no upper bound for {', '.join(n for n, _ in names)}: add "
        f'R.func_attr({{"tir_var_upper_bound": {{{given}}}}}); it stays on TVM\'s storage'
    )


def _holds_memory(var: relax.Var) -> bool:
    """A tensor, a tuple, or an object (a runtime object: a KV cache, a storage); not a
    shape or a primitive value."""
    if isinstance(var.ty, relax.TupleType):
        return len(var.ty.fields) > 0
    return isinstance(var.ty, (relax.TensorType, relax.ObjectType, relax.AnyType))


def _type(var: relax.Var) -> str:
    ty = var.ty
    if isinstance(ty, relax.TensorType) and isinstance(ty.shape, relax.ShapeExpr):
        dims = ", ".join(
            str(d.value) if isinstance(d, tvm.tirx.IntImm) else str(d) for d in ty.shape.values
        )
        return f"({dims}{',' if len(ty.shape.values) == 1 else ''}) {ty.dtype}"
    return "object" if isinstance(ty, (relax.ObjectType, relax.AnyType)) else str(ty)


def _roots(func: relax.Function) -> dict[relax.Var, set[relax.Var]]:
    """Each variable of `func` and the allocations (allocs, packed results) it refers to."""
    roots: dict[relax.Var, set[relax.Var]] = {}
    for b in bindings(func.body):
        value = b.value
        if is_call(value, BUILTIN_ALLOC) or is_call(value, ALLOC_TENSOR):
            roots[b.var] = {b.var}
        elif _packed_name(value) is not None:
            # TVM's rule: a packed call's result holds none of its arguments' tokens.
            roots[b.var] = {b.var}
        elif isinstance(value, relax.Call) and any(is_call(value, op) for op in _VIEWS):
            roots[b.var] = _refers(value.args[0], roots)
        elif isinstance(value, relax.If):
            roots[b.var] = _refers(value.true_branch.body, roots)
            roots[b.var] |= _refers(value.false_branch.body, roots)
        elif not isinstance(value, relax.Call):
            roots[b.var] = _refers(value, roots)
    return roots


def _refers(expr: Any, roots: dict[relax.Var, set[relax.Var]]) -> set[relax.Var]:
    if isinstance(expr, relax.Var):
        return roots.get(expr, set())
    if isinstance(expr, relax.Tuple):
        return set().union(*(_refers(f, roots) for f in expr.fields))
    if isinstance(expr, relax.TupleGetItem):
        return _refers(expr.tuple_value, roots)
    return set()


def _refers_args(call: relax.Call, roots: dict[relax.Var, set[relax.Var]]) -> set[relax.Var]:
    return set().union(*(_refers(arg, roots) for arg in call.args))


def _opaque_uses(
    func: relax.Function, mod: tvm.IRModule, roots: dict[relax.Var, set[relax.Var]]
) -> dict[relax.Var, str]:
    """The allocations passed to a call whose body the planners cannot see (a packed
    function, a builtin, another Relax function), with the first such callee."""
    kernels = {gv for gv, f in mod.functions_items() if isinstance(f, tvm.tirx.PrimFunc)}
    found: dict[relax.Var, str] = {}
    for b in bindings(func.body):
        value = b.value
        if not isinstance(value, relax.Call) or _sees_through(value, kernels):
            continue
        for root in _refers_args(value, roots):
            found.setdefault(root, _callee(value))
    return found


def _sees_through(call: relax.Call, kernels: set[relax.GlobalVar]) -> bool:
    """TVM's rule: a kernel (a PrimFunc of the module, an extern function called
    directly) only reads and writes its arguments; views and allocations hold them."""
    op = call.op
    if isinstance(op, relax.GlobalVar):
        return op in kernels
    if isinstance(op, relax.ExternFunc):
        return True
    name = op.name if isinstance(op, tvm.ir.Op) else ""
    return name in _VIEWS or name in _KERNEL_OPS or name in (BUILTIN_ALLOC, ALLOC_TENSOR)


def _callee(call: relax.Call) -> str:
    packed = _packed_name(call)
    if packed is not None:
        return f"the packed function {packed}"
    op = call.op
    if isinstance(op, relax.GlobalVar):
        return f"the Relax function {op.name_hint}"
    return f"the operator {op.name}" if isinstance(op, tvm.ir.Op) else "a call"


def _packed_name(value: Any) -> str | None:
    """The function a packed call names: `R.call_packed("vm.builtin...", ...)` (a call of
    an ExternFunc, as TVM's pipeline leaves every packed call) or one of the packed-call
    operators (`R.call_pure_packed`, ...) before it does."""
    if not isinstance(value, relax.Call):
        return None
    if isinstance(value.op, relax.ExternFunc):
        return str(value.op.global_symbol)
    if not isinstance(value.op, tvm.ir.Op) or value.op.name not in _PACKED or not value.args:
        return None
    callee = value.args[0]
    return str(callee.global_symbol) if isinstance(callee, relax.ExternFunc) else value.op.name
