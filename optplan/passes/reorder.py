"""reorder: run each dataflow block's bindings in the order that needs the least memory.

The freedom and how it is used, per function (the entry function):

1. Liveness of the program as written (`build_memory`) gives every buffer's size and the
   points it occupies. Every binding's value is resolved to the buffers it refers to, as
   the liveness does: a call makes new buffers, a view, a var-to-var binding, a tuple item
   or an in-place call's output refers to its source's.
2. Every dataflow block (inside If branches too) becomes a `Graph`: one op per binding;
   its reads and new buffers; edges from the binding of every variable it reads;
   in-place: every earlier reader of a buffer an in-place call overwrites runs before
   that call (its old bytes have no later reader); a binding with an effect (bound to
   `_`, or a call with `ops.has_effect`: `memory.*`, `vm.*`, print) and an `If` keep their place (every earlier
   binding before them, every later one after). Buffers read in the block and live on
   entry are `live_in`, those occupied just after it `live_out`, and bytes live across it
   that it does not touch are `base_bytes`. Plain blocks keep their order.
3. A scheduler orders every graph; the block's bindings are permuted to that order
   (`dataclasses.replace`; dataflow outputs unchanged).
4. Points outside the reordered blocks hold the same bytes whatever the order, so the
   program's peak is the largest of those and of every block's peak, and its proven bound
   the largest of those and of every block's bound.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass

from optplan.analysis.liveness import build_memory
from optplan.analysis.types import typed_program
from optplan.ir import (
    Binding,
    Block,
    Call,
    Const,
    Expr,
    Function,
    If,
    Literal,
    MetaConst,
    Program,
    SeqExpr,
    ShapeExpr,
    TensorType,
    Tuple,
    TupleGetItem,
    TupleType,
    Type,
    Var,
    free_vars,
    iter_bindings,
    operands,
)
from optplan.ops import has_effect, inplace_outputs, lookup
from optplan.problem import Problem, live_profile
from optplan.schedule import Schedule, Scheduler
from optplan.schedule.graph import Graph

# A value's buffers by name: a name, None (not planned), or a tuple of those.
Value = str | None | tuple["Value", ...]


@dataclass(frozen=True, slots=True)
class Reordered:
    """A program with its dataflow blocks reordered, and what that bought.

    `peak_bytes` / `original_peak_bytes`: live-bytes bound of the entry function after and
    before; `bound_bytes`: proven lower bound on the peak of every valid order; `blocks`:
    one Schedule per reordered block, in program order.
    """

    program: Program
    peak_bytes: int
    original_peak_bytes: int
    bound_bytes: int
    blocks: tuple[Schedule, ...]
    seconds: float

    @property
    def optimal(self) -> bool:
        return self.peak_bytes <= self.bound_bytes


def reorder(
    program: Program,
    scheduler: Callable[[Graph], Schedule] | None = None,
    *,
    plan_outputs: bool = False,
) -> Reordered:
    """`program` with the dataflow blocks of its entry function reordered by `scheduler`
    (`Scheduler("auto")` by default)."""
    began = time.perf_counter()
    scheduler = scheduler or Scheduler()
    program = typed_program(program)
    fn = program.main
    memory = build_memory(program, plan_outputs=plan_outputs, alignment=1)
    facts = _Facts(memory.problem, _values(fn), memory.points)
    schedules: list[Schedule] = []
    body = _seq(fn.body, facts, scheduler, schedules)
    # The same typed bindings in another order: still typed.
    reordered = dataclasses.replace(
        program.replace_function(dataclasses.replace(fn, body=body)), typed=True
    )
    fixed = max(
        (live for point, live in _profile(memory.problem) if point not in facts.scheduled),
        default=0,
    )
    peak = max([fixed, *(s.peak_bytes for s in schedules)])
    bound = max([fixed, *(s.bound_bytes for s in schedules)])
    original = max((live for _, live in _profile(memory.problem)), default=0)
    return Reordered(
        reordered, peak, original, bound, tuple(schedules), time.perf_counter() - began
    )


def block_graphs(program: Program, *, plan_outputs: bool = False) -> list[Graph]:
    """The scheduling graph of every dataflow block the pass reorders, in program order."""
    graphs: list[Graph] = []

    def keep(graph: Graph) -> Schedule:
        graphs.append(graph)
        return Scheduler("program")(graph)

    reorder(program, keep, plan_outputs=plan_outputs)
    return graphs


@dataclass(slots=True)
class _Facts:
    problem: Problem
    values: dict[str, Value]
    points: dict[str, int]
    scheduled: set[int] = dataclasses.field(default_factory=set)
    sizes: dict[str, int] = dataclasses.field(init=False)
    occupied: dict[str, set[int]] = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        self.sizes = {b.id: b.size for b in self.problem.buffers}
        self.occupied = {
            b.id: {p for iv in b.live for p in range(iv.start, iv.end)}
            for b in self.problem.buffers
        }


def _profile(problem: Problem) -> list[tuple[int, int]]:
    """Live bytes at every point (not only where they change)."""
    profile = live_profile(problem)
    out: list[tuple[int, int]] = []
    for (point, live), nxt in zip(
        profile, [*profile[1:], (profile[-1][0] + 1, 0)] if profile else []
    ):
        out.extend((p, live) for p in range(point, nxt[0]))
    return out


def _seq(
    seq: SeqExpr, facts: _Facts, scheduler: Callable[[Graph], Schedule], schedules: list[Schedule]
) -> SeqExpr:
    blocks = []
    for block in seq.blocks:
        bindings = tuple(_branches(b, facts, scheduler, schedules) for b in block.bindings)
        block = dataclasses.replace(block, bindings=bindings)
        if _reorderable(block):
            graph = block_graph(bindings, facts)
            schedule = scheduler(graph)
            schedules.append(schedule)
            facts.scheduled.update(facts.points[b.var.name] for b in bindings)
            block = dataclasses.replace(block, bindings=tuple(bindings[v] for v in schedule.order))
        blocks.append(block)
    return dataclasses.replace(seq, blocks=tuple(blocks))


def _reorderable(block: Block) -> bool:
    """A dataflow block of two or more bindings, no If, and every name bound once (two
    bindings to `_` would share one point and one buffer name in the liveness)."""
    names = [b.var.name for b in block.bindings]
    return (
        block.dataflow
        and len(names) > 1
        and len(set(names)) == len(names)
        and not any(isinstance(b.value, If) for b in block.bindings)
    )


def _branches(
    binding: Binding,
    facts: _Facts,
    scheduler: Callable[[Graph], Schedule],
    schedules: list[Schedule],
) -> Binding:
    if not isinstance(binding.value, If):
        return binding
    node = binding.value
    value = dataclasses.replace(
        node,
        then_branch=_seq(node.then_branch, facts, scheduler, schedules),
        else_branch=_seq(node.else_branch, facts, scheduler, schedules),
    )
    return dataclasses.replace(binding, value=value)


# ---------------------------------------------------------------------------- graphs


def block_graph(bindings: tuple[Binding, ...], facts: _Facts) -> Graph:
    """The scheduling graph of one dataflow block (module docstring, step 2)."""
    names = [b.var.name for b in bindings]
    points = [facts.points[n] for n in names]
    first, last = points[0], points[-1]
    if points != list(range(first, last + 1)):
        raise AssertionError(f"the points of a dataflow block are not consecutive: {points}")
    reads = [_read_buffers(b.value, facts) for b in bindings]
    creates = [sorted(_new_buffers(b, facts)) for b in bindings]
    made = {buf for bufs in creates for buf in bufs}
    touched = made | {buf for bufs in reads for buf in bufs}
    live_in = sorted(buf for buf in touched - made if first in facts.occupied[buf])
    buffers = sorted(made) + live_in
    ids = {buf: i for i, buf in enumerate(buffers)}
    base = sum(
        size
        for buf, size in facts.sizes.items()
        if buf not in touched and first in facts.occupied[buf]
    )
    return Graph(
        sizes=tuple(facts.sizes[buf] for buf in buffers),
        creates=tuple(tuple(ids[buf] for buf in bufs) for bufs in creates),
        reads=tuple(tuple(ids[buf] for buf in sorted(bufs) if buf in ids) for bufs in reads),
        # In-place order is about every buffer overwritten, planned or not (one that
        # becomes a returned value is not planned, yet its earlier readers come first).
        preds=_edges(
            bindings, [_read_buffers(b.value, facts, planned=False) for b in bindings], facts
        ),
        live_in=tuple(ids[buf] for buf in live_in),
        live_out=frozenset(ids[buf] for buf in buffers if last + 1 in facts.occupied[buf]),
        base_bytes=base,
        names=tuple(buffers),
        labels=tuple(names),
    )


def _edges(
    bindings: tuple[Binding, ...], reads: list[set[str]], facts: _Facts
) -> tuple[tuple[int, ...], ...]:
    index = {b.var.name: i for i, b in enumerate(bindings)}
    preds: list[set[int]] = [set() for _ in bindings]
    for v, binding in enumerate(bindings):
        for var in free_vars(binding.value):
            if var.name in index and index[var.name] != v:
                preds[v].add(index[var.name])
        overwritten = _overwritten(binding.value, facts)
        preds[v].update(u for u in range(v) if reads[u] & overwritten)
        if _pinned(binding):
            preds[v].update(range(v))
            for w in range(v + 1, len(bindings)):
                preds[w].add(v)
    return tuple(tuple(sorted(p)) for p in preds)


def _overwritten(value: Expr, facts: _Facts) -> set[str]:
    """Buffers an in-place call writes over: those of the arguments it overwrites."""
    if not isinstance(value, Call):
        return set()
    out: set[str] = set()
    for i in inplace_outputs(value):
        if i >= 0:
            out |= _flat(_value_of(value.args[i], facts.values))
    return out


def _pinned(binding: Binding) -> bool:
    value = binding.value
    if binding.var.name == "_" or isinstance(value, If):
        return True
    return isinstance(value, Call) and has_effect(value.op)


# ---------------------------------------------------------------------------- values


def _values(fn: Function) -> dict[str, Value]:
    """Every bound variable's buffers, resolved as the liveness resolves them."""
    values: dict[str, Value] = {}
    for binding in iter_bindings(fn.body):
        values[binding.var.name] = _binding_value(binding, values)
    return values


def _binding_value(binding: Binding, values: dict[str, Value]) -> Value:
    name, expr, type_ = binding.var.name, binding.value, binding.type
    if isinstance(expr, If):
        return _fresh(name, type_)
    if not isinstance(expr, Call):
        return _value_of(expr, values)
    indices = inplace_outputs(expr)
    if indices:
        fields = type_.fields if isinstance(type_, TupleType) else (type_,)
        parts = tuple(
            _value_of(expr.args[i], values)
            if i >= 0
            else _fresh(name if len(fields) == 1 else f"{name}[{k}]", fields[k])
            for k, i in enumerate(indices)
        )
        return parts[0] if len(parts) == 1 else parts
    op = lookup(expr.op)
    if op is not None and op.view:
        return _value_of(expr.args[0], values)
    return _fresh(name, type_)


def _fresh(name: str, type_: Type | None) -> Value:
    if isinstance(type_, TensorType):
        return name
    if isinstance(type_, TupleType):
        return tuple(_fresh(f"{name}[{i}]", t) for i, t in enumerate(type_.fields))
    return None


def _value_of(expr: Expr, values: dict[str, Value]) -> Value:
    match expr:
        case Var(name=name):
            return values.get(name)
        case Tuple(fields=fields):
            return tuple(_value_of(f, values) for f in fields)
        case TupleGetItem(tuple_value=inner, index=index):
            value = _value_of(inner, values)
            return value[index] if isinstance(value, tuple) and index < len(value) else None
        case Const() | MetaConst() | ShapeExpr() | Literal():
            return None
        case _:
            return None


def _flat(value: Value) -> set[str]:
    if isinstance(value, str):
        return {value}
    if isinstance(value, tuple):
        return set().union(*(_flat(v) for v in value))
    return set()


def _read_buffers(expr: Expr, facts: _Facts, *, planned: bool = True) -> set[str]:
    """Buffers an expression reads (the planned ones only, unless `planned` is False); a
    tuple item reads only that item's."""
    if isinstance(expr, (Call, Tuple)):
        return set().union(*(_read_buffers(sub, facts, planned=planned) for sub in operands(expr)))
    return {b for b in _flat(_value_of(expr, facts.values)) if b in facts.sizes or not planned}


def _new_buffers(binding: Binding, facts: _Facts) -> set[str]:
    """Planned buffers the binding makes: those named after its variable."""
    name = binding.var.name
    return {
        b for b in _flat(facts.values.get(name)) if b in facts.sizes and b.split("[")[0] == name
    }
