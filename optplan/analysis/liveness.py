"""Liveness of tensor buffers over program points, and the Problem it gives.

Steps:

1. Number program points. Binding k of a block is one point. A binding of an If takes a
   test point (where the condition is read), then the points of its then branch ending in
   a yield point (where the branch's value is copied into the If's own buffer), then the
   same for the else branch; the two branches' points are disjoint, so a tensor used only
   in one branch never conflicts with one used only in the other.

       point:   4      5   6    7        8   9    10
                test   then...  yield    else...  yield   (next binding: 11)
                 |______^________|________^        |
                 |_____________________|           |___> 11
                                        (yield of then jumps to 11)

2. Resolve every value to the buffers it refers to. A call that is not a view makes new
   buffers (one per tensor of its result); a view (reshape, a var-to-var binding, a tuple
   item, an in-place call's output) refers to its source's buffer; a tuple built from
   other values refers to all of theirs; parameters and constants refer to none, as they
   are never planned, nor does a packed call's result (`OpDef.runtime_result`: the
   runtime's memory, which TVM does not plan either).
3. Backward dataflow over the control-flow graph of points: a buffer is live into a
   point if that point reads it, or it is live out of it and not written there. A buffer
   occupies its bytes at every point it is live into and at every point that writes it,
   so a tensor defined at d and last read at u is live over [d, u + 1), and one never
   read over [d, d + 1).
4. Function outputs are left out (TVM plans them neither) unless `plan_outputs`, in which
   case they are read at a final return point.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from optplan.analysis.memory import MemoryFacts, Placement, Releases
from optplan.errors import InputError
from optplan.ir import (
    Call,
    Const,
    Expr,
    Function,
    If,
    Literal,
    Loc,
    MetaConst,
    ObjectType,
    Program,
    SeqExpr,
    ShapeExpr,
    TensorType,
    Tuple,
    TupleGetItem,
    TupleType,
    Type,
    Var,
    operands,
)
from optplan.ops import inplace_outputs, lookup
from optplan.problem import MAIN, Buffer, Interval, Memory, Problem

# A value's buffers: a Placement for a planned tensor, None for a tensor that is not
# planned, or a tuple of those for tuple values.
Value = Placement | None | tuple["Value", ...]


@dataclass(slots=True)
class _Point:
    uses: set[str] = field(default_factory=set)
    defs: set[str] = field(default_factory=set)
    succ: list[int] = field(default_factory=list)
    # The buffers whose bytes the point really reads and writes: a view, a var-to-var
    # binding or a tuple item names buffers (`uses`) but touches none of their bytes.
    reads: set[str] = field(default_factory=set)
    writes: set[str] = field(default_factory=set)


@dataclass(slots=True)
class _Walk:
    """State of one walk over a function: its points, buffers and values."""

    fn: Function
    points: list[_Point] = field(default_factory=list)
    sizes: dict[str, int] = field(default_factory=dict)
    dtypes: dict[str, str] = field(default_factory=dict)
    values: dict[str, Value] = field(default_factory=dict)
    # Every binding's value, kept after its branch's scope closes, for the executor.
    placed: dict[str, Value] = field(default_factory=dict)
    point_of: dict[str, int] = field(default_factory=dict)
    if_points: dict[str, tuple[int, int, int]] = field(default_factory=dict)

    def new_point(self, uses: set[str], defs: set[str] = frozenset()) -> int:  # type: ignore[assignment]
        self.points.append(_Point(set(uses), set(defs), reads=set(uses), writes=set(defs)))
        return len(self.points) - 1


def build_memory(
    program: Program,
    *,
    plan_outputs: bool = False,
    alignment: int = 64,
    memories: tuple[Memory, ...] | None = None,
) -> MemoryFacts:
    """The Problem of `program`'s entry function and where each of its values lives, its
    buffers in `memories` (None: one unbounded memory).

    The program's types must be known (run `infer_types` first). Several memories are
    refused for a function with an If: a copy placed inside one branch would be skipped
    when the other runs, and the Problem's points are one straight sequence.
    """
    fn = program.main
    walk = _Walk(fn)
    for param in fn.params:
        walk.values[param.var.name] = _unplanned(param.type)
    _walk_seq(walk, fn.body)
    returned = _buffers_of(_value_of(walk, fn.body.body))
    if plan_outputs:
        walk.new_point(returned)
    _link_straight(walk)
    occupied = _occupancy(walk.points)
    excluded = set() if plan_outputs else returned
    writes, reads = _accesses(walk.points)
    buffers = tuple(
        Buffer(
            name,
            size,
            _intervals(occupied.get(name, [])),
            alignment,
            dtype=walk.dtypes[name],
            writes=writes.get(name, ()),
            reads=reads.get(name, ()),
        )
        for name, size in walk.sizes.items()
        if name not in excluded
    )
    if memories is not None and len(memories) > 1 and walk.if_points:
        raise InputError(
            f"several memories are planned for programs without If; {fn.name!r} has one "
            f"({next(iter(walk.if_points))!r})"
        )
    return MemoryFacts(
        problem=Problem(buffers, memories=(MAIN,) if memories is None else memories),
        placements={
            var: value
            for var, value in walk.placed.items()
            if value is not None and var != "_" and not (_buffers_of(value) & excluded)
        },
        releases=_releases(walk, occupied, excluded),
        points=dict(walk.point_of),
    )


# ---------------------------------------------------------------------------- walking


def _walk_seq(walk: _Walk, seq: SeqExpr) -> None:
    for block in seq.blocks:
        for binding in block.bindings:
            name = binding.var.name
            if binding.type is None and name != "_":
                raise _error(
                    binding.var, f"the type of {name!r} is not known; run infer_types first"
                )
            if isinstance(binding.value, If):
                _walk_if(walk, name, binding.value, binding.type or ObjectType())
                continue
            uses = _read_buffers(walk, binding.value)
            point = walk.new_point(uses)
            value = _value_of_binding(walk, name, binding.value, binding.type or ObjectType())
            walk.points[point].defs = _buffers_of(value) - uses
            walk.points[point].writes = _buffers_of(value) if _touches(binding.value) else set()
            if not _touches(binding.value):
                walk.points[point].reads = set()
            walk.values[name] = value
            walk.placed[name] = value
            walk.point_of[name] = point


def _walk_if(walk: _Walk, name: str, node: If, type_: Type) -> None:
    test = walk.new_point(_read_buffers(walk, node.cond))
    walk.point_of[name] = test
    result = _new_buffers(walk, name, type_)
    exits = []
    for branch in (node.then_branch, node.else_branch):
        scope = dict(walk.values)
        first = len(walk.points)
        walk.points[test].succ.append(first)
        _walk_seq(walk, branch)
        # The yield reads the branch's value (computing it if it is a call) and writes it
        # into the If's own buffer.
        exits.append(walk.new_point(_read_buffers(walk, branch.body), _buffers_of(result)))
        walk.values = scope
    walk.values[name] = result
    walk.placed[name] = result
    # The then branch's yield jumps over the else branch to the next point.
    walk.points[exits[0]].succ.append(exits[1] + 1)
    walk.if_points[name] = (test, exits[0], exits[1])


def _link_straight(walk: _Walk) -> None:
    """Points without explicit successors fall through to the next point; the test point
    of an If already has both branches, and the last point has none."""
    branch_tests = {test for test, _, _ in walk.if_points.values()}
    for index, point in enumerate(walk.points):
        if index in branch_tests or point.succ:
            continue
        if index + 1 < len(walk.points):
            point.succ.append(index + 1)
    for index, point in enumerate(walk.points):
        point.succ = [s for s in point.succ if s < len(walk.points)]


def _touches(expr: Expr) -> bool:
    """Whether a binding's value reads and writes bytes: a call that is not a view."""
    if not isinstance(expr, Call):
        return False
    op = lookup(expr.op)
    return op is None or not op.view


def _value_of_binding(walk: _Walk, name: str, expr: Expr, type_: Type) -> Value:
    if isinstance(expr, Call):
        indices = inplace_outputs(expr)
        if indices:
            return _inplace_value(walk, name, expr, indices, type_)
        op = lookup(expr.op)
        if op is not None and op.view:
            return _value_of(walk, expr.args[0])
        if op is not None and op.runtime_result:
            return _unplanned(type_)
        return _new_buffers(walk, name, type_)
    return _value_of(walk, expr)


def _inplace_value(
    walk: _Walk, name: str, call: Call, indices: tuple[int, ...], type_: Type
) -> Value:
    """An in-place call's outputs take the memory of the arguments they overwrite; an
    index of -1 is a fresh output."""
    fields = type_.fields if isinstance(type_, TupleType) else (type_,)
    values = tuple(
        _value_of(walk, call.args[index])
        if index >= 0
        else _new_buffers(
            walk, name if len(fields) == 1 else f"{name}[{position}]", fields[position]
        )
        for position, index in enumerate(indices)
    )
    return values[0] if len(values) == 1 else values


def _value_of(walk: _Walk, expr: Expr) -> Value:
    match expr:
        case Var(name=name):
            if name not in walk.values:
                raise _error(expr, f"{name!r} is used before it is defined")
            return walk.values[name]
        case Tuple(fields=fields):
            return tuple(_value_of(walk, f) for f in fields)
        case TupleGetItem(tuple_value=inner, index=index):
            value = _value_of(walk, inner)
            return value[index] if isinstance(value, tuple) else None
        case Const() | MetaConst() | ShapeExpr() | Literal():
            return None
        case _:
            raise _error(expr, f"a nested {type(expr).__name__} must be bound to a variable first")


def _error(node: Expr, message: str) -> InputError:
    loc = node.loc or Loc()
    return InputError(message, file=loc.file, line=loc.line, col=loc.col)


def _new_buffers(walk: _Walk, name: str, type_: Type) -> Value:
    match type_:
        case TensorType():
            walk.sizes[name] = type_.size_bytes
            walk.dtypes[name] = type_.dtype
            return Placement(name)
        case TupleType(fields=fields):
            return tuple(_new_buffers(walk, f"{name}[{i}]", t) for i, t in enumerate(fields))
        case _:
            return None


def _unplanned(type_: Type) -> Value:
    if isinstance(type_, TupleType):
        return tuple(_unplanned(t) for t in type_.fields)
    return None


def _buffers_of(value: Value) -> set[str]:
    if isinstance(value, Placement):
        return {value.buffer}
    if isinstance(value, tuple):
        return set().union(*(_buffers_of(v) for v in value))
    return set()


def _read_buffers(walk: _Walk, expr: Expr) -> set[str]:
    """The buffers an expression reads; a tuple item reads only that item's buffers."""
    if isinstance(expr, (Call, Tuple)):
        return set().union(*(_read_buffers(walk, sub) for sub in operands(expr)))
    return _buffers_of(_value_of(walk, expr))


# ---------------------------------------------------------------------------- dataflow


def _occupancy(points: list[_Point]) -> dict[str, list[int]]:
    """For every buffer, the points at which its bytes are taken, in increasing order.

    Every edge goes forward in point order, so one backward pass reaches the fixed point.
    """
    live_in: list[set[str]] = [set() for _ in points]
    for index in range(len(points) - 1, -1, -1):
        point = points[index]
        live_out: set[str] = set().union(*(live_in[s] for s in point.succ))
        live_in[index] = point.uses | (live_out - point.defs)
    occupied: dict[str, list[int]] = {}
    for index, point in enumerate(points):
        for name in live_in[index] | point.defs:
            occupied.setdefault(name, []).append(index)
    return occupied


def _accesses(
    points: list[_Point],
) -> tuple[dict[str, tuple[int, ...]], dict[str, tuple[int, ...]]]:
    """The points where each buffer is written, and read (one read per reading point)."""
    writes: dict[str, list[int]] = {}
    reads: dict[str, list[int]] = {}
    for index, point in enumerate(points):
        for name in point.writes:
            writes.setdefault(name, []).append(index)
        for name in point.reads:
            reads.setdefault(name, []).append(index)
    return (
        {name: tuple(at) for name, at in writes.items()},
        {name: tuple(at) for name, at in reads.items()},
    )


def _intervals(points: list[int]) -> tuple[Interval, ...]:
    """Sorted points as maximal half-open runs: [3, 4, 5, 8] -> [3, 6), [8, 9)."""
    runs: list[Interval] = []
    for point in points:
        if runs and runs[-1].end == point:
            runs[-1] = Interval(runs[-1].start, point + 1)
        else:
            runs.append(Interval(point, point + 1))
    return tuple(runs)


def _releases(
    walk: _Walk, occupied: dict[str, list[int]], excluded: set[str]
) -> dict[str, Releases]:
    """Which buffers the executor may poison after each binding and around each If."""
    at: list[set[str]] = [set() for _ in walk.points]
    for name, points in occupied.items():
        if name not in excluded:
            for point in points:
                at[point].add(name)

    def dead_after(point: int, successor: int | None) -> tuple[str, ...]:
        after = at[successor] if successor is not None and successor < len(at) else set()
        return tuple(sorted(at[point] - after))

    def next_of(point: int) -> int | None:
        succ = walk.points[point].succ
        return succ[0] if succ else None

    releases: dict[str, Releases] = {}
    for name, point in walk.point_of.items():
        if name in walk.if_points:
            test, then_yield, else_yield = walk.if_points[name]
            then_first, else_first = walk.points[test].succ
            releases[name] = Releases(
                then_entry=dead_after(test, then_first),
                else_entry=dead_after(test, else_first),
                then_exit=dead_after(then_yield, next_of(then_yield)),
                else_exit=dead_after(else_yield, next_of(else_yield)),
            )
        else:
            releases[name] = Releases(after=dead_after(point, next_of(point)))
    return releases
