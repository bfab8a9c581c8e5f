"""optplan inside TVM: a Relax pass that takes the place of StaticPlanBlockMemory.

`PlanBlockMemory(planner="cpsat", time_limit=10)` is a module pass; put it where
`relax.transform.StaticPlanBlockMemory()` sits in a pipeline (or call `pipeline(target)`
for TVM's CPU pipeline with the swap made). For each Relax function of the module:

1. TVM's own StaticPlanBlockMemory runs first. It decides what may be planned (tensors
   that the function does not return, used only by kernels in the block that makes them)
   and turns each of their `R.builtin.alloc_tensor` into `R.memory.alloc_tensor(storage,
   0, ...)` on storages it shares by its token rule. A tensor with symbolic dimensions is
   sized at their upper bounds (`tir_var_upper_bound`); one whose size has no bound gets a
   storage of symbolic size. Everything it leaves alone stays as it is.
2. The tensors optplan plans are those TVM carved from storages of constant size, each at
   its size at the bounds (`tvm_ir.bound_sizes`, TVM's own reading of the bounds). The
   function is printed as TVMScript and read by optplan's reader;
   `optplan.runtime.check.extract_plan` gives their lifetimes: live from the
   `alloc_tensor` to the last use of any of its aliases (var bindings, reshape views,
   tuples), as the rest of TVM's pipeline will use them.
3. optplan's planner places the buffers, every offset a multiple of `alignment` (64 bytes
   by default, TVM's runtime allocation alignment, which its LLVM kernels assume); the
   independent validator judges the plan.
4. The function is rewritten on TVM's IR (`tvm_ir.rewrite`): one `R.memory.alloc_storage`
   of the arena's bytes at the top of the body, every planned `alloc_tensor` carving it
   at optplan's offset with its shape unchanged (symbolic shapes stay symbolic, so the
   function runs at any size up to the bounds), the storages they used dropped. Nothing
   else changes, so LowerAllocTensor, KillAfterLastUse, VM lowering and `relax.build` work
   as before.

What stays TVM's is named in each function's report (`FunctionReport.left`, and
`report.why()` in words, `tvm_left`): returned tensors, tensors passed to a packed call
or a builtin optplan cannot see through, tensors and runtime objects a packed call makes,
and tensors whose size has no bound (a `PlanWarning` names those). A whole function keeps
TVM's plan, with a warning saying why, when optplan cannot read it, when the planner
finds no valid plan, or when TVM's plan is smaller (never worse than TVM's). `plan_module`
returns the rewritten module and one `FunctionReport` per function that allocates memory.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from optplan.budget import DEFAULT_WORK, GUARD_SECONDS, Budget
from optplan.errors import InputError
from optplan.planners import get_planner
from optplan.planners.base import configured
from optplan.problem import Alias, Problem
from optplan.problem.plan import Plan, validate

try:
    import tvm
    from tvm import relax
except ImportError as missing:  # pragma: no cover - exercised only without the extra
    raise ImportError("optplan.tvm needs apache-tvm 0.27: pip install 'optplan[tvm]'") from missing

from optplan.integrations import tvm_ir
from optplan.integrations.tvm_ir import storage_bytes
from optplan.integrations.tvm_left import Left, split

__all__ = [
    "FunctionReport",
    "Left",
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


class PlanWarning(UserWarning):
    """Memory stays TVM's: a whole function keeps TVM's plan, or tensors whose size has no
    upper bound stay on TVM's storages; the message says which and why."""


@dataclass(frozen=True, slots=True)
class Options:
    """How to plan: an optplan planner by name, its work (units, the same module on any
    machine) and time limit (seconds, an outer guard), the offset alignment."""

    planner: str = "cpsat"
    time_limit: float = GUARD_SECONDS
    alignment: int = TVM_ALIGNMENT
    work: float = DEFAULT_WORK

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
    the pass in the storages optplan plans; `tvm_bytes` what TVM's StaticPlanBlockMemory
    allocated in them; `bound_bytes` the bound the planner proved and `lower_bound_bytes`
    the live-bytes bound (None when no planner ran); `kept` says why TVM's plan was kept
    (None when optplan's plan replaced it). `bounds` are the symbolic dimensions' upper
    bounds the tensors were planned at; `planned` names the tensors in optplan's arena,
    `left` those left to TVM, with the reason."""

    function: str
    tensors: int
    tvm_bytes: int
    arena_bytes: int
    lower_bound_bytes: int | None
    bound_bytes: int | None
    status: str
    seconds: float
    kept: str | None = None
    bounds: tuple[tuple[str, int], ...] = ()
    planned: tuple[str, ...] = ()
    left: tuple[Left, ...] = ()

    def why(self, tensor: str | None = None) -> str:
        """In words: what became of the function (and every tensor left to TVM, with its
        reason), or of one `tensor` by its name in TVM's IR (KeyError if it has none)."""
        if tensor is not None:
            reasons = [str(left) for left in self.left if left.name == tensor]
            if reasons:
                return "\n".join(f"{self.function}: {reason}" for reason in reasons)
            if tensor in self.planned:
                return f"{self.function}: {tensor}: planned by optplan in its arena"
            raise KeyError(f"{self.function} has no tensor {tensor!r} that allocates memory")
        at = ", ".join(f"{name} <= {bound}" for name, bound in self.bounds)
        at = f" (at {at})" if at else ""
        if self.kept is None:
            head = (
                f"{self.function}: planned by optplan{at}: {self.tensors} tensor"
                f"{'' if self.tensors == 1 else 's'} in one "
                f"storage of {self.arena_bytes} bytes, TVM's {self.tvm_bytes}; "
                f"proven bound {self.bound_bytes} ({self.status})"
            )
        else:
            head = f"{self.function}: kept TVM's plan{at}: {self.kept}"
        lines = [head] + [f"  left to TVM: {left}" for left in self.left]
        return "\n".join(lines)


def PlanBlockMemory(
    planner: str = "cpsat",
    time_limit: float = GUARD_SECONDS,
    alignment: int = TVM_ALIGNMENT,
    work: float = DEFAULT_WORK,
) -> tvm.transform.Pass:
    """The pass to put in place of `relax.transform.StaticPlanBlockMemory()`: `work` units
    per function (the same module on any machine), `time_limit` seconds as the guard."""
    options = Options(planner, time_limit, alignment, work)

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
        if not isinstance(func, relax.Function):
            continue
        name = gvar.name_hint
        rewritten, report = _plan_function(name, func, planned, options)
        if not tvm_ir.storages(func.body) and not report.left:
            continue
        _warn(report)
        reports.append(report)
        updates[gvar] = rewritten
    for gvar, func in updates.items():
        planned[gvar] = func
    return planned, reports


NOTHING = "nothing for optplan to plan"


def _warn(report: FunctionReport) -> None:
    """A PlanWarning for a function that keeps TVM's plan for a reason the user may fix,
    and one naming the tensors left to TVM for want of a bound."""
    if report.kept is not None and report.kept != NOTHING:
        warnings.warn(
            f"{report.function}: kept TVM's plan: {report.kept}", PlanWarning, stacklevel=4
        )
    unbounded = [
        f"{left.name} {left.type}" + (" (from data)" if left.kind == "data-dependent" else "")
        for left in report.left
        if left.kind in ("unbounded", "data-dependent")
    ]
    if unbounded:
        warnings.warn(
            f"{report.function}: left on TVM's storages, sizes without an upper bound: "
            f"{', '.join(unbounded)} (report.why() says more)",
            PlanWarning,
            stacklevel=4,
        )


def _plan_function(
    name: str, func: relax.Function, mod: tvm.IRModule, options: Options
) -> tuple[relax.Function, FunctionReport]:
    carved, sizes = tvm_ir.carves(func.body), tvm_ir.storages(func.body)
    parts = split(func, mod)
    mine, left = parts.mine, parts.left
    tvm_bytes = sum(sizes[s] or 0 for s in {carved[k].value.args[0] for k in mine})
    bounds = tuple(sorted(tvm_ir.signature_bounds(func).items()))
    names = tuple(carved[k].var.name for k in mine)
    kept = FunctionReport(name, 0, tvm_bytes, tvm_bytes, None, None, "tvm", 0.0, None, bounds,
                          (), left)  # fmt: skip
    if not mine:
        return func, dataclasses.replace(kept, kept=NOTHING)
    try:
        problem = _problem(name, func, carved, mine, options.alignment)
    except InputError as error:
        return func, dataclasses.replace(kept, kept=f"optplan cannot read it: {error}")
    plan = _planner(options)(problem)
    report = dataclasses.replace(
        kept,
        tensors=len(problem.buffers),
        arena_bytes=plan.arena,
        lower_bound_bytes=plan.lower_bound,
        bound_bytes=max(plan.bound, plan.lower_bound),
        status=plan.status.value,
        seconds=plan.seconds,
        planned=names,
    )
    fault = _fault(problem, plan, tvm_bytes)
    if fault is not None:
        return func, dataclasses.replace(report, arena_bytes=tvm_bytes, kept=fault)
    offsets = {carved[k].var: plan.offsets[str(j)] for j, k in enumerate(mine)}
    return tvm_ir.rewrite(func, plan.arena, offsets), report


def _planner(options: Options) -> Any:
    budget = Budget(options.work, options.time_limit)
    return configured(get_planner(options.planner), budget)  # type: ignore[type-var]


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


def _problem(
    name: str,
    func: relax.Function,
    carved: list[relax.Binding],
    mine: Sequence[int],
    alignment: int,
) -> Problem:
    """Step 2: the tensors `mine` (indices into `carved`, TVM's carves in program order)
    as buffers of their size at the bounds, live as optplan reads them from TVM's text.
    Symbols without a bound are read at 1: only tensors on TVM's symbolic storages have
    such sizes, and those are not planned here. InputError when optplan's reading and
    TVM's disagree (a tensor read larger than TVM's bound, another count of tensors)."""
    from optplan.frontends.script import parse
    from optplan.ir import Program
    from optplan.runtime.check import extract_plan

    if func.attrs is not None and "params" in func.attrs:
        func = func.without_attr("params")  # from_onnx's weight values: not read here
    bounded = tvm_ir.signature_bounds(func)
    symbols = relax.analysis.free_symbolic_vars(func) + relax.analysis.defined_symbolic_vars(func)
    dims = {v.name: 1 for v in symbols if v.name not in bounded}
    program = parse(func.script(show_meta=False), file=f"<TVM function {name}>", dims=dims)
    problem, _ = extract_plan(Program(program.functions[:1], program.kernels, program.module))
    if len(problem.buffers) != len(carved):
        raise InputError(f"optplan read {len(problem.buffers)} planned tensors, TVM holds "
                         f"{len(carved)}")  # fmt: skip
    sizes = tvm_ir.bound_sizes(func, [carved[k].value for k in mine])
    buffers = []
    for j, (k, size) in enumerate(zip(mine, sizes)):
        read = problem.buffers[k]
        if size is None or read.size > size:
            raise InputError(f"optplan read {carved[k].var.name} at {read.size} bytes, "
                             f"TVM bounds it at {size}")  # fmt: skip
        buffers.append(dataclasses.replace(read, id=str(j), size=size, alignment=alignment))
    index = {problem.buffers[k].id: j for j, k in enumerate(mine)}
    aliases = tuple(
        Alias(str(index[a.base]), str(index[a.view]), 0)  # an If's two results: one place
        for a in problem.aliases
        if a.base in index
        and a.view in index
        and buffers[index[a.base]].size == buffers[index[a.view]].size
    )
    return Problem(tuple(buffers), aliases)
