"""optplan inside TVM: a Relax pass that takes the place of StaticPlanBlockMemory.

`PlanBlockMemory(planner="cpsat", time_limit=10)` is a module pass; put it where
`relax.transform.StaticPlanBlockMemory()` sits in a pipeline (or call `pipeline(target)`
for TVM's CPU pipeline with the swap made). For each Relax function of the module:

1. TVM's own StaticPlanBlockMemory runs first. It decides what may be planned (tensors of
   static shape that the function does not return) and turns each of their
   `R.builtin.alloc_tensor` into `R.memory.alloc_tensor(storage, 0, ...)` on storages it
   shares by its token rule. Everything it leaves alone stays as it is.
2. The function is printed as TVMScript and read by optplan's reader;
   `optplan.runtime.check.extract_plan` gives the allocation problem: one buffer per carved
   tensor, live from its `alloc_tensor` to the last use of any of its aliases (var
   bindings, reshape views, tuples), as the rest of TVM's pipeline will use it.
3. optplan's planner places the buffers, every offset a multiple of `alignment` (64 bytes
   by default, TVM's runtime allocation alignment, which its LLVM kernels assume); the
   independent validator judges the plan.
4. The function is rewritten on TVM's IR: one `R.memory.alloc_storage` of the arena's
   bytes at the top of the body, every planned `alloc_tensor` carving it at optplan's
   offset, TVM's storages dropped. TVM's kernels take only tensors whose DLPack
   `byte_offset` is 0, so a tensor carved at a nonzero offset is passed through
   `R.memory.ensure_zero_offset`, which on a CPU moves a 64-byte aligned offset into the
   data pointer (no copy; an unaligned one would be copied, hence the alignment rule).
   Nothing else changes, so LowerAllocTensor, KillAfterLastUse, VM lowering and
   `relax.build` work as before.

A function keeps TVM's plan, with a warning naming it and why, when it has symbolic
shapes, when optplan cannot read it, when the planner finds no valid plan, or when TVM's
plan is smaller (never worse than TVM's). `plan_module` returns the rewritten module and
one `FunctionReport` per planned function, TVM's bytes beside optplan's.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from optplan.errors import InputError
from optplan.planners import get_planner
from optplan.problem import Alias, Problem
from optplan.problem.plan import Plan, validate

try:
    import tvm
    from tvm import relax
except ImportError as missing:  # pragma: no cover - exercised only without the extra
    raise ImportError("optplan.tvm needs apache-tvm 0.27: pip install 'optplan[tvm]'") from missing

__all__ = [
    "FunctionReport",
    "Options",
    "PlanBlockMemory",
    "PlanWarning",
    "pipeline",
    "plan_module",
    "storage_bytes",
]

# TVM's runtime aligns every allocation to 64 bytes (kAllocAlignment); its LLVM kernels
# may assume it of every buffer they are handed.
TVM_ALIGNMENT = 64
_ALLOC_STORAGE = "relax.memory.alloc_storage"
_ALLOC_TENSOR = "relax.memory.alloc_tensor"


class PlanWarning(UserWarning):
    """A function keeps TVM's own plan; the message says which and why."""


@dataclass(frozen=True, slots=True)
class Options:
    """How to plan: an optplan planner by name, its time limit, the offset alignment."""

    planner: str = "cpsat"
    time_limit: float = 10.0
    alignment: int = TVM_ALIGNMENT

    def __post_init__(self) -> None:
        if self.alignment < 1 or self.alignment % TVM_ALIGNMENT:
            # ensure_zero_offset moves only 64-byte aligned offsets into the pointer;
            # it copies any other tensor, and a kernel would then write into the copy.
            raise ValueError(
                f"alignment must be a multiple of {TVM_ALIGNMENT} bytes, got {self.alignment}"
            )
        get_planner(self.planner)  # a wrong name fails here, not in the middle of a build


@dataclass(frozen=True, slots=True)
class FunctionReport:
    """What happened to one function. `arena_bytes` is what the function allocates after
    the pass; `tvm_bytes` what TVM's StaticPlanBlockMemory allocated; `kept` says why
    TVM's plan was kept (None when optplan's plan replaced it)."""

    function: str
    tensors: int
    tvm_bytes: int
    arena_bytes: int
    lower_bound_bytes: int
    bound_bytes: int
    status: str
    seconds: float
    kept: str | None = None


def PlanBlockMemory(
    planner: str = "cpsat", time_limit: float = 10.0, alignment: int = TVM_ALIGNMENT
) -> tvm.transform.Pass:
    """The pass to put in place of `relax.transform.StaticPlanBlockMemory()`."""
    options = Options(planner, time_limit, alignment)

    def transform(mod: tvm.IRModule, _ctx: tvm.transform.PassContext) -> tvm.IRModule:
        return plan_module(mod, options)[0]

    return tvm.transform.module_pass(transform, opt_level=0, name="optplan.PlanBlockMemory")


def pipeline(target: Any = "llvm", **options: Any) -> tvm.transform.Pass:
    """TVM's default CPU pipeline (`relax.backend.cpu_generic`) with StaticPlanBlockMemory
    replaced by `PlanBlockMemory(**options)`: pass it as `tvm.compile(...,
    relax_pipeline=...)`."""
    from tvm.relax.backend.cpu_generic import pipeline as cpu

    target = tvm.target.Target(target) if isinstance(target, str) else target
    passes = (
        cpu.library_dispatch_passes(target)
        + cpu.legalize_passes(target)
        + cpu.dataflow_lower_passes(target)
        + swap_in(cpu.finalize_passes(target), PlanBlockMemory(**options))
    )

    def run(mod: tvm.IRModule, _ctx: tvm.transform.PassContext) -> tvm.IRModule:
        with target:
            return tvm.transform.Sequential(passes)(mod)

    return tvm.transform.module_pass(run, opt_level=0, name="optplan.pipeline")


def swap_in(passes: Sequence[tvm.transform.Pass], planned: tvm.transform.Pass) -> list[Any]:
    """`passes` with every StaticPlanBlockMemory replaced by `planned` (ValueError if none)."""
    names = [p.info.name for p in passes]
    if "StaticPlanBlockMemory" not in names:
        raise ValueError(f"no StaticPlanBlockMemory among the passes: {', '.join(names)}")
    return [planned if name == "StaticPlanBlockMemory" else p for p, name in zip(passes, names)]


# ---------------------------------------------------------------------------- planning


def plan_module(
    mod: tvm.IRModule, options: Options = Options()
) -> tuple[tvm.IRModule, list[FunctionReport]]:
    """Steps 1-4 on every Relax function of `mod`: the rewritten module and the reports."""
    planned = relax.transform.StaticPlanBlockMemory()(mod)
    reports = []
    updates = {}
    for gvar, func in planned.functions_items():
        if not isinstance(func, relax.Function) or not _storages(func.body):
            continue
        name = gvar.name_hint
        rewritten, report = _plan_function(name, func, options)
        if report.kept is not None:
            warnings.warn(f"{name}: kept TVM's plan: {report.kept}", PlanWarning, stacklevel=3)
        reports.append(report)
        updates[gvar] = rewritten
    for gvar, func in updates.items():
        planned[gvar] = func
    return planned, reports


def _plan_function(
    name: str, func: relax.Function, options: Options
) -> tuple[relax.Function, FunctionReport]:
    tvm_bytes = sum(_storages(func.body).values())
    kept = FunctionReport(name, 0, tvm_bytes, tvm_bytes, 0, 0, "tvm", 0.0)
    if relax.analysis.defined_symbolic_vars(func) or relax.analysis.free_symbolic_vars(func):
        return func, dataclasses.replace(kept, kept="symbolic shapes (planned by TVM's rule)")
    try:
        problem = _problem(name, func, options.alignment)
    except InputError as error:
        return func, dataclasses.replace(kept, kept=f"optplan cannot read it: {error}")
    plan = _planner(options)(problem)
    report = FunctionReport(
        name,
        len(problem.buffers),
        tvm_bytes,
        plan.arena,
        plan.lower_bound,
        max(plan.bound, plan.lower_bound),
        plan.status.value,
        plan.seconds,
    )
    fault = _fault(problem, plan, tvm_bytes)
    if fault is not None:
        return func, dataclasses.replace(report, arena_bytes=tvm_bytes, kept=fault)
    return _rewrite(func, plan), report


def _planner(options: Options) -> Any:
    planner = get_planner(options.planner)
    if "time_limit" in {f.name for f in dataclasses.fields(planner)}:  # type: ignore[arg-type]
        return get_planner(options.planner, time_limit=options.time_limit)
    return planner


def _fault(problem: Problem, plan: Plan, tvm_bytes: int) -> str | None:
    """Why optplan's plan must not replace TVM's, or None."""
    if not plan.status.has_plan:
        return f"{plan.planner} found no plan ({plan.status.value})"
    violations = validate(problem, plan)
    if violations:
        return f"{plan.planner}'s plan is invalid: {violations[0]}"
    if plan.arena > tvm_bytes:
        return f"TVM's {tvm_bytes} bytes are fewer than {plan.planner}'s {plan.arena}"
    return None


def _problem(name: str, func: relax.Function, alignment: int) -> Problem:
    """Step 2: the function's planned tensors as optplan reads them from TVM's text, in the
    order TVM holds their `alloc_tensor` bindings (InputError when they disagree)."""
    from optplan.frontends.script import parse
    from optplan.ir import Program
    from optplan.runtime.check import extract_plan

    if func.attrs is not None and "params" in func.attrs:
        func = func.without_attr("params")  # from_onnx's weight values: not read here
    program = parse(func.script(show_meta=False), file=f"<TVM function {name}>")
    problem, _ = extract_plan(Program(program.functions[:1], program.kernels, program.module))
    ids = [b.id for b in problem.buffers]
    sizes = [_tensor_bytes(b.value) for b in _carves(func.body)]
    if [b.size for b in problem.buffers] != sizes:
        raise InputError(f"optplan read {len(ids)} planned tensors, TVM holds {len(sizes)}")
    buffers = tuple(
        dataclasses.replace(b, id=str(k), alignment=alignment)
        for k, b in enumerate(problem.buffers)
    )
    index = {old: str(k) for k, old in enumerate(ids)}
    aliases = tuple(
        Alias(index[a.base], index[a.view], 0)  # an If's two results: one value, one place
        for a in problem.aliases
        if problem.buffers[ids.index(a.base)].size == problem.buffers[ids.index(a.view)].size
    )
    return Problem(buffers, aliases)


# ---------------------------------------------------------------------------- TVM's IR


def _bindings(seq: relax.SeqExpr) -> Iterator[relax.Binding]:
    """Every binding of `seq` in program order, If branches before the If (as optplan's
    `iter_bindings`)."""
    for block in seq.blocks:
        for binding in block.bindings:
            value = binding.value
            if isinstance(value, relax.If):
                yield from _bindings(value.true_branch)
                yield from _bindings(value.false_branch)
            yield binding


def _is_call(value: Any, op: str) -> bool:
    return (
        isinstance(value, relax.Call) and isinstance(value.op, tvm.ir.Op) and (value.op.name == op)
    )


def _storages(seq: relax.SeqExpr) -> dict[relax.Var, int]:
    """Every `alloc_storage` of a function body and its size in bytes (shape[0]); 0 for
    a size that is a symbolic expression."""
    sizes = {}
    for b in _bindings(seq):
        if _is_call(b.value, _ALLOC_STORAGE):
            size = b.value.args[0].values[0]
            sizes[b.var] = int(size.value) if hasattr(size, "value") else 0
    return sizes


def storage_bytes(mod: tvm.IRModule) -> dict[str, int]:
    """Total `alloc_storage` bytes of every Relax function of `mod` that allocates any."""
    totals = {}
    for gvar, func in mod.functions_items():
        if isinstance(func, relax.Function):
            sizes = _storages(func.body)
            if sizes:
                totals[gvar.name_hint] = sum(sizes.values())
    return totals


def _carves(seq: relax.SeqExpr) -> list[relax.Binding]:
    """The `alloc_tensor` bindings that carve a storage of this function, in program order."""
    storages = set(_storages(seq))
    return [
        b
        for b in _bindings(seq)
        if _is_call(b.value, _ALLOC_TENSOR) and b.value.args[0] in storages
    ]


def _tensor_bytes(call: relax.Call) -> int:
    ty = call.ty
    count = 1
    for dim in ty.shape.values:
        count *= int(dim)
    dtype = tvm.runtime.DataType(ty.dtype)
    return count * ((dtype.bits * dtype.lanes + 7) // 8)


def _rewrite(func: relax.Function, plan: Plan) -> relax.Function:
    """Step 4: one storage of `plan.arena` bytes; the k-th carve at `plan.offsets[str(k)]`.

    TVM's kernels take only tensors whose `byte_offset` is 0, so a carve at a nonzero
    offset is followed by `R.memory.ensure_zero_offset`, which on a CPU moves a 64-byte
    aligned offset into the data pointer (no copy) and hands the kernels that tensor."""
    storages = _storages(func.body)
    template = next(b.value for b in _bindings(func.body) if _is_call(b.value, _ALLOC_STORAGE))
    arena = relax.Var("storage", relax.ObjectType())
    size = relax.ShapeExpr([max(plan.arena, 1)])
    alloc = relax.op.memory.alloc_storage(size, template.args[1], "global", "uint8")
    carves = {b.var: k for k, b in enumerate(_carves(func.body))}

    def carve(binding: relax.Binding) -> list[relax.Binding]:
        call = binding.value
        offset = plan.offsets[str(carves[binding.var])]
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
            if _is_call(value, _ALLOC_STORAGE) and binding.var in storages:
                continue
            if _is_call(value, _ALLOC_TENSOR) and binding.var in carves:
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
