"""recompute: fit a program's memory into a budget by computing tensors again.

Steps of `recompute(program, capacity_bytes)`, on the entry function:

1. The scheduling graph of every dataflow block, as the reorder pass makes them
   (`block_graphs`), each op costed from the op table (`ops.compute_cost`: FLOPs for
   matmul and convolution, bytes read and written for the rest). An op may run again
   when it is a call of a pure op (no effect, not in place, not a view) that makes one
   tensor, read only through its own variable or names bound to it (`a = x`) and not
   after the block.
2. A block whose program order already fits keeps it. The others are scheduled by
   `schedule.remat.rematerialise` with the capacity as budget: order, what to compute
   again, and a proof that it fits (offsets of the block's tensors).
3. The block's bindings are rewritten in the schedule's steps: a step that runs an op
   again binds a fresh variable (`lv3_rc2`: lv3's second computation) and every later
   binding reads the latest variable.
4. The rewritten program is planned (greedy) within the capacity; if its tensors do not
   pack (the blocks' neighbours share the arena), the blocks' budgets are lowered and
   steps 2 and 3 run again, a few times.

The result says which variables are computed again (`copies`: new name -> original),
what that costs, and the proven bounds.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from optplan.analysis.liveness import build_memory
from optplan.analysis.types import typed_program
from optplan.budget import Budget, active, now, running
from optplan.ir import (
    Binding,
    Block,
    Call,
    Expr,
    If,
    Program,
    SeqExpr,
    TensorType,
    Tuple,
    TupleGetItem,
    Var,
    free_vars,
    iter_bindings,
    var_types,
)
from optplan.ops import compute_cost, has_effect, inplace_outputs, lookup
from optplan.passes.names import fresh_name
from optplan.passes.reorder import _reorderable, block_graphs
from optplan.planners import get_planner
from optplan.problem import Problem, lower_bound, one_arena
from optplan.problem.plan import Status
from optplan.schedule.graph import Graph, peak_bytes
from optplan.schedule.remat import Remat, RematSchedule, rematerialise
from optplan.schedule.remat.packing import cpsat_within


@dataclass(frozen=True, slots=True)
class Recomputed:
    """A program whose blocks compute some tensors again to fit `capacity_bytes`.

    `copies`: each new variable and the one it computes again; `extra_cost` /
    `total_cost`: compute of the runs again / of the original program (op-table units);
    `bound_cost`: proven lower bound on the extra compute (0 where none is proven);
    `peak_bytes` / `original_peak_bytes`: live-bytes peak after / before; `status`:
    FEASIBLE or OPTIMAL with a program, INFEASIBLE (with `reason`: the proven memory
    bound) or UNKNOWN (none found in the time).
    """

    program: Program
    copies: dict[str, str]
    extra_cost: int
    total_cost: int
    bound_cost: int
    peak_bytes: int
    original_peak_bytes: int
    status: Status
    reason: str
    blocks: tuple[RematSchedule, ...]
    seconds: float

    @property
    def extra_percent(self) -> float:
        return 100.0 * self.extra_cost / self.total_cost if self.total_cost else 0.0

    @property
    def lower_bound(self) -> int:
        """No program within the capacity computes less again, over every schedule of
        its blocks (the sum of their `lower_bound`s)."""
        return sum(block.lower_bound for block in self.blocks)

    @property
    def gap_percent(self) -> float:
        """(extra - lower_bound) / extra, 0 where nothing is computed again."""
        if not self.extra_cost:
            return 0.0
        return 100.0 * (self.extra_cost - self.lower_bound) / self.extra_cost


def recompute(
    program: Program,
    capacity_bytes: int,
    *,
    time_limit: float = 10.0,
    work: float | None = None,
    plan_outputs: bool = False,
    alignment: int = 64,
    allow: Callable[[str], bool] | None = None,
) -> Recomputed:
    """`program` rewritten to fit `capacity_bytes` (module docstring); `allow(name)` False
    keeps the binding of `name` to one computation (e.g. an ONNX node's inner binding).
    With `work`, every stage stops on work (the same program on any machine) and
    `time_limit` is a guard; without, the stages share `time_limit` seconds."""
    clock = Budget(work, time_limit).clock()
    with running(clock):
        found = _recompute(program, capacity_bytes, clock.end, plan_outputs, alignment, allow)
    return dataclasses.replace(found, seconds=clock.seconds())


def _recompute(
    program: Program,
    capacity_bytes: int,
    time_limit: float,
    plan_outputs: bool,
    alignment: int,
    allow: Callable[[str], bool] | None,
) -> Recomputed:
    """`recompute` on the running clock, whose `time_limit` is in its units."""
    began = now()
    program = typed_program(program)
    original = build_memory(program, plan_outputs=plan_outputs, alignment=alignment).problem
    graphs = _costed(program, block_graphs(program, plan_outputs=plan_outputs))
    budget = capacity_bytes
    result: Recomputed | None = None
    unpacked: Recomputed | None = None  # live bytes within the budget, not yet packed
    for _ in range(4):
        left = time_limit - (now() - began)
        result = _attempt(
            program, graphs, budget, max(0.5, left / 2), plan_outputs, alignment, allow, original
        )
        if not result.status.has_plan:
            break
        if _fits(result, capacity_bytes, plan_outputs, alignment, left):
            return result
        unpacked = unpacked or result
        budget -= max(1, budget // 50)
    assert result is not None
    # The caller's planner may still pack what greedy could not: hand over the first
    # program whose live bytes fit rather than nothing.
    return unpacked or result


def _fits(
    result: Recomputed, capacity: int, plan_outputs: bool, alignment: int, seconds: float
) -> bool:
    problem = build_memory(result.program, plan_outputs=plan_outputs, alignment=alignment).problem
    problem = Problem(problem.buffers, problem.aliases, memories=one_arena(capacity))
    plan = get_planner("greedy")(problem)
    if not plan.status.has_plan and seconds > 1:
        plan = cpsat_within(problem, min(5.0, seconds / 4))
    return plan.status.has_plan


def _options(budget: int, units: float) -> Remat:
    """One block's options: `units` of the running clock, work where it counts work."""
    clock = active()
    if clock is None or not clock.counted:
        return Remat(budget, time_limit=units)
    return Remat(budget, time_limit=max(clock.guard_left(), 0.01), work=max(units, 0.01))


def _costed(program: Program, graphs: list[Graph]) -> list[Graph]:
    """Step 1: each graph with its ops' costs (the graphs' ops are their blocks' bindings)."""
    types = var_types(program.main)
    out = []
    for graph, block in zip(graphs, _blocks(program.main.body)):
        costs = []
        for binding in block.bindings:
            value = binding.value
            if isinstance(value, Call):
                args = [
                    types.get(a.name) if isinstance(a, Var) else getattr(a, "type", None)
                    for a in value.args
                ]
                costs.append(compute_cost(value, args, binding.type))
            else:
                costs.append(0)  # tuples and item reads move no data
        out.append(dataclasses.replace(graph, costs=tuple(costs)))
    return out


def _blocks(seq: SeqExpr) -> list[Block]:
    """The reorderable blocks in the order `block_graphs` lists their graphs."""
    found: list[Block] = []
    for block in seq.blocks:
        for binding in block.bindings:
            if isinstance(binding.value, If):
                found += _blocks(binding.value.then_branch) + _blocks(binding.value.else_branch)
        if _reorderable(block):
            found.append(block)
    return found


def _aliases(block: Block) -> dict[str, set[str]]:
    """Per variable, the other names bound to it in the block (`a = x`, `b = a`)."""
    source: dict[str, str] = {}
    for binding in block.bindings:
        if isinstance(binding.value, Var):
            name = binding.value.name
            source[binding.var.name] = source.get(name, name)
    found: dict[str, set[str]] = {}
    for alias, name in source.items():
        found.setdefault(name, set()).add(alias)
    return found


def _recomputable(graph: Graph, block: Block, allow: Callable[[str], bool] | None) -> list[bool]:
    """Step 1's rule, per binding of the block."""
    readers = graph.readers()
    names = graph.names
    aliases = _aliases(block)
    out = []
    for v, binding in enumerate(block.bindings):
        value, name = binding.value, binding.var.name
        op = lookup(value.op) if isinstance(value, Call) else None
        ok = (
            isinstance(value, Call)
            and op is not None
            and not op.view
            and not has_effect(value.op)
            and not inplace_outputs(value)
            and isinstance(binding.type, TensorType)
            and len(graph.creates[v]) == 1
            and names[graph.creates[v][0]] == name
            and graph.creates[v][0] not in graph.live_out
            and (allow is None or allow(name))
        )
        if ok:
            b = graph.creates[v][0]
            known = {name} | aliases.get(name, set())
            ok = all(
                known & {var.name for var in free_vars(block.bindings[w].value)} for w in readers[b]
            )
        out.append(ok)
    return out


def _attempt(
    program: Program,
    graphs: list[Graph],
    budget: int,
    seconds: float,
    plan_outputs: bool,
    alignment: int,
    allow: Callable[[str], bool] | None,
    original: Problem,
) -> Recomputed:
    """Steps 2 and 3 at one budget for every block."""
    fn = program.main
    names = {p.var.name for p in fn.params} | {b.var.name for b in iter_bindings(fn.body)}
    state = _Rewrite(iter(graphs), budget, seconds / max(1, len(graphs)), allow, names)
    body = state.seq(fn.body)
    total = sum(sum(g.costs) for g in graphs)
    original_peak = lower_bound(original)
    failed = [s for s in state.schedules if s.steps is None]
    if failed:
        worst = failed[0]
        return Recomputed(
            program,
            {},
            0,
            total,
            0,
            original_peak,
            original_peak,
            worst.status,
            worst.reason,
            tuple(state.schedules),
            0.0,
        )
    rewritten = dataclasses.replace(
        program.replace_function(dataclasses.replace(fn, body=body)), typed=True
    )
    peak = lower_bound(
        build_memory(rewritten, plan_outputs=plan_outputs, alignment=alignment).problem
    )
    extra = sum(s.extra_cost for s in state.schedules)
    bound = sum(s.bound_cost for s in state.schedules)
    status = Status.OPTIMAL if extra <= bound else Status.FEASIBLE
    return Recomputed(
        rewritten,
        state.copies,
        extra,
        total,
        bound,
        peak,
        original_peak,
        status,
        "",
        tuple(state.schedules),
        0.0,
    )


@dataclass(slots=True)
class _Rewrite:
    """Walks the function as `block_graphs` does, scheduling and rewriting each block."""

    graphs: object
    budget: int
    seconds: float
    allow: Callable[[str], bool] | None
    names: set[str]
    copies: dict[str, str] = dataclasses.field(default_factory=dict)
    schedules: list[RematSchedule] = dataclasses.field(default_factory=list)

    def seq(self, seq: SeqExpr) -> SeqExpr:
        blocks = []
        for block in seq.blocks:
            bindings = tuple(self._branches(b) for b in block.bindings)
            block = dataclasses.replace(block, bindings=bindings)
            if _reorderable(block):
                graph = next(self.graphs)  # type: ignore[call-overload]
                block = self._block(block, graph)
            blocks.append(block)
        return dataclasses.replace(seq, blocks=tuple(blocks))

    def _branches(self, binding: Binding) -> Binding:
        if not isinstance(binding.value, If):
            return binding
        node = binding.value
        value = dataclasses.replace(
            node, then_branch=self.seq(node.then_branch), else_branch=self.seq(node.else_branch)
        )
        return dataclasses.replace(binding, value=value)

    def _block(self, block: Block, graph: Graph) -> Block:
        """Step 2 and 3 for one block."""
        if peak_bytes(graph, range(graph.ops)) <= self.budget:
            return block
        allowed = _recomputable(graph, block, self.allow)
        schedule = rematerialise(graph, _options(self.budget, self.seconds), allowed)
        self.schedules.append(schedule)
        if schedule.steps is None:
            return block
        return dataclasses.replace(block, bindings=self._rewritten(block, schedule.steps))

    def _rewritten(self, block: Block, steps: tuple[int, ...]) -> tuple[Binding, ...]:
        aliases = _aliases(block)
        latest: dict[str, str] = {}
        runs = [0] * len(block.bindings)
        out = []
        for v in steps:
            binding = block.bindings[v]
            name = binding.var.name
            value = _renamed(binding.value, latest)
            runs[v] += 1
            if runs[v] > 1:
                fresh = fresh_name(f"{name}_rc{runs[v]}", self.names, "_")
                self.copies[fresh] = name
                # A later read through a second name reads the new variable.
                latest.update(dict.fromkeys({name} | aliases.get(name, set()), fresh))
                binding = dataclasses.replace(
                    binding, var=dataclasses.replace(binding.var, name=fresh)
                )
            out.append(dataclasses.replace(binding, value=value))
        return tuple(out)


def _renamed(expr: Expr, latest: dict[str, str]) -> Expr:
    """`expr` reading the latest variable of every name `latest` maps."""
    match expr:
        case Var(name=name) if name in latest:
            return dataclasses.replace(expr, name=latest[name])
        case Call(args=args):
            return dataclasses.replace(expr, args=tuple(_renamed(a, latest) for a in args))
        case Tuple(fields=fields):
            return dataclasses.replace(expr, fields=tuple(_renamed(f, latest) for f in fields))
        case TupleGetItem(tuple_value=inner):
            return dataclasses.replace(expr, tuple_value=_renamed(inner, latest))
        case _:
            return expr
