"""TVM's Relax IR as `optplan.integrations.tvm` reads and rewrites it.

- `bindings`, `storages`, `carves`: what StaticPlanBlockMemory left in a function (its
  `R.memory.alloc_storage` and `R.memory.alloc_tensor` bindings), in program order.
- `bound_sizes`: every carved tensor's size at the upper bounds of its symbolic
  dimensions, read as StaticPlanBlockMemory reads them (below), or None where a dimension
  has no bound.
- `rewrite`: one storage of the arena's bytes carved at optplan's offsets in place of the
  storages optplan planned; everything else untouched.

Bounds, as TVM's pass reads them: `tir_var_upper_bound` ({"n": 2048}) binds each named
variable of the function's signature to [0, 2048]; `tir_non_negative_var` (["n"]) only
says n >= 0; a variable the body defines (`R.match_cast` from data) takes no bound. Each
dimension is bounded on its own, by TVM's arithmetic analyzer (its constant bound, else
its interval set over the bound variables): so `2048 - n` is bounded by 2048, not by the
0 that substituting the bound would give, and the tensor fits at every `n` up to it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import tvm
from tvm import relax

__all__ = [
    "ALLOC_STORAGE",
    "ALLOC_TENSOR",
    "BUILTIN_ALLOC",
    "bindings",
    "bound_sizes",
    "carves",
    "is_call",
    "rewrite",
    "signature_bounds",
    "storage_bytes",
    "storages",
    "unbounded_names",
]

ALLOC_STORAGE = "relax.memory.alloc_storage"
ALLOC_TENSOR = "relax.memory.alloc_tensor"
BUILTIN_ALLOC = "relax.builtin.alloc_tensor"
BOUND_ATTR = "tir_var_upper_bound"
NON_NEGATIVE_ATTR = "tir_non_negative_var"


def bindings(seq: relax.SeqExpr) -> Iterator[relax.Binding]:
    """Every binding of `seq` in program order, If branches before the If (as optplan's
    `iter_bindings`)."""
    for block in seq.blocks:
        for binding in block.bindings:
            value = binding.value
            if isinstance(value, relax.If):
                yield from bindings(value.true_branch)
                yield from bindings(value.false_branch)
            yield binding


def is_call(value: Any, op: str) -> bool:
    return (
        isinstance(value, relax.Call) and isinstance(value.op, tvm.ir.Op) and (value.op.name == op)
    )


def storages(seq: relax.SeqExpr) -> dict[relax.Var, int | None]:
    """Every `alloc_storage` of a function body and its size in bytes (shape[0]); None for
    a size that is a symbolic expression (a tensor with no upper bound)."""
    sizes: dict[relax.Var, int | None] = {}
    for b in bindings(seq):
        if is_call(b.value, ALLOC_STORAGE):
            size = b.value.args[0].values[0]
            sizes[b.var] = int(size.value) if isinstance(size, tvm.tirx.IntImm) else None
    return sizes


def storage_bytes(mod: tvm.IRModule) -> dict[str, int]:
    """Total `alloc_storage` bytes of every Relax function of `mod` that allocates any;
    storages of symbolic size (tensors without an upper bound) are not counted."""
    totals = {}
    for gvar, func in mod.functions_items():
        if isinstance(func, relax.Function):
            sizes = storages(func.body)
            if sizes:
                totals[gvar.name_hint] = sum(s for s in sizes.values() if s is not None)
    return totals


def carves(seq: relax.SeqExpr) -> list[relax.Binding]:
    """The `alloc_tensor` bindings that carve a storage of this function, in program order."""
    made = set(storages(seq))
    return [b for b in bindings(seq) if is_call(b.value, ALLOC_TENSOR) and b.value.args[0] in made]


# ---------------------------------------------------------------------------- bounds


def signature_bounds(func: relax.Function) -> dict[str, int]:
    """`tir_var_upper_bound` of the variables of `func`'s signature, by name (TVM applies
    the attribute to those only)."""
    given = _attr(func, BOUND_ATTR)
    names = {v.name for v in relax.analysis.tir_vars_in_type(func.ty)}
    return {str(k): int(v) for k, v in (given or {}).items() if str(k) in names}


def bound_sizes(func: relax.Function, calls: list[relax.Call]) -> list[int | None]:
    """Each `alloc_tensor` call's bytes at the upper bounds of its dimensions; None where
    one dimension has none. The bounds are TVM's: see the module's docstring."""
    from tvm.sym import Analyzer, ConstIntBound, IntervalSet

    analyzer = Analyzer()
    domains = {}
    bounds = signature_bounds(func)
    non_negative = {str(name) for name in _attr(func, NON_NEGATIVE_ATTR) or ()}
    for var in relax.analysis.tir_vars_in_type(func.ty):
        if var.name in bounds:
            analyzer.bind(var, tvm.ir.Range.from_min_extent(0, bounds[var.name] + 1))
            domains[var] = IntervalSet(0, bounds[var.name])
        elif var.name in non_negative:
            analyzer.update(var, ConstIntBound(0, ConstIntBound.POS_INF), True)

    def dim_bound(dim: Any) -> int | None:
        top = analyzer.const_int_bound(dim).max_value
        if top != ConstIntBound.POS_INF:
            return int(top)
        top = analyzer.int_set(dim, domains).max_value
        return int(top.value) if isinstance(top, tvm.tirx.IntImm) else None

    sizes: list[int | None] = []
    for call in calls:
        dims = [dim_bound(dim) for dim in call.ty.shape.values]
        dtype = tvm.runtime.DataType(call.ty.dtype)
        count: int | None = 1
        for dim in dims:
            count = None if dim is None or count is None else count * dim
        sizes.append(None if count is None else count * ((dtype.bits * dtype.lanes + 7) // 8))
    return sizes


def unbounded_names(func: relax.Function, shape: Any) -> list[tuple[str, bool]]:
    """The variables of `shape` that take no bound in `func`, each with whether the
    function's signature has it (False: the body defines it, from data)."""
    bounds = signature_bounds(func)
    signature = {v.name for v in relax.analysis.tir_vars_in_type(func.ty)}
    found: dict[str, bool] = {}
    for dim in shape.values:
        for var in tvm.tirx.analysis.undefined_vars(dim):
            if var.name not in bounds:
                found.setdefault(var.name, var.name in signature)
    return list(found.items())


def _attr(func: relax.Function, name: str) -> Any:
    return None if func.attrs is None or name not in func.attrs else func.attrs[name]


# ---------------------------------------------------------------------------- rewrite


def rewrite(
    func: relax.Function, arena_bytes: int, offsets: Mapping[relax.Var, int]
) -> relax.Function:
    """One storage of `arena_bytes` at the top of the body; every carve in `offsets` moved
    onto it at its offset, and the storages those carves used dropped. Other storages and
    carves (tensors without an upper bound) stay as TVM planned them.

    TVM's kernels take only tensors whose `byte_offset` is 0, so a carve at a nonzero
    offset is followed by `R.memory.ensure_zero_offset`, which on a CPU moves a 64-byte
    aligned offset into the data pointer (no copy) and hands the kernels that tensor. A
    carve keeps its shape, symbolic or not, so the function runs at any size up to the
    bounds its arena was planned at."""
    moved = {b.var: b.value.args[0] for b in carves(func.body) if b.var in offsets}
    dropped = set(moved.values())
    template = next(b.value for b in bindings(func.body) if b.var in dropped)
    arena = relax.Var("storage", relax.ObjectType())
    size = relax.ShapeExpr([max(arena_bytes, 1)])
    alloc = relax.op.memory.alloc_storage(size, template.args[1], "global", "uint8")

    def carve(binding: relax.Binding) -> list[relax.Binding]:
        call = binding.value
        offset = offsets[binding.var]
        args = [arena, tvm.ir.prim.IntImm("int64", offset), *call.args[2:]]
        carved = relax.Call(call.op, args, call.attrs)
        if offset == 0:
            return [relax.VarBinding(binding.var, carved)]
        shifted = relax.Var(f"{binding.var.name}_at_offset", binding.var.ty)
        zeroed = relax.op.memory.ensure_zero_offset(shifted)
        return [relax.VarBinding(shifted, carved), relax.VarBinding(binding.var, zeroed)]

    def block(old: relax.BindingBlock) -> list[relax.Binding]:
        out: list[relax.Binding] = []
        for binding in old.bindings:
            value = binding.value
            if binding.var in dropped:
                continue
            if binding.var in moved:
                out += carve(binding)
                continue
            if isinstance(value, relax.If):
                value = relax.If(value.cond, seq(value.true_branch), seq(value.false_branch))
            out.append(_rebind(binding, value))
        return out

    def seq(old: relax.SeqExpr) -> relax.SeqExpr:
        return relax.SeqExpr([_like(b, block(b)) for b in old.blocks], old.body)

    body = seq(func.body)
    blocks = [relax.BindingBlock([relax.VarBinding(arena, alloc)]), *body.blocks]
    new_body = relax.SeqExpr(blocks, body.body)
    rewritten = relax.Function(func.params, new_body, func.ret_ty, func.is_pure, func.attrs)
    return relax.BlockBuilder().normalize(rewritten)


def _rebind(binding: relax.Binding, value: Any) -> relax.Binding:
    if isinstance(binding, relax.MatchCast):
        return relax.MatchCast(binding.var, value, binding.ty)
    return relax.VarBinding(binding.var, value)


def _like(block: relax.BindingBlock, bindings: list[relax.Binding]) -> relax.BindingBlock:
    if isinstance(block, relax.DataflowBlock):
        return relax.DataflowBlock(bindings)
    return relax.BindingBlock(bindings)
