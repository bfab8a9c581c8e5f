"""Random programs for the memory passes, and an independent judge of kills.

`straight_programs()` draws If-free functions rich in what the passes care about: chains
of elementwise ops (in-place candidates), views, var-to-var aliases, tuples and their
items, and BatchNorm's `weight + eps` on a weight parameter (which must never be written).
Programs with If come from `strategies_ir.programs()`.

`kill_faults(program, killed)` walks every path through the Ifs of `killed` and reports,
per path, each planned buffer that is not killed exactly once, killed before one of its
uses, or a kill of something that is not a planned buffer (a parameter, a constant, a
returned value). A branch value that is dead after its If is handed over to the If's
variable, so the hand-over counts as its kill (see `optplan.passes.kill`). It reads only
`MemoryFacts.placements` of the original program and does its own walk.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import strategies as st

from optplan.analysis.liveness import build_memory
from optplan.analysis.memory import Placement
from optplan.analysis.types import infer_types
from optplan.ir import (
    Binding,
    Block,
    Call,
    Const,
    Expr,
    Function,
    If,
    Param,
    Program,
    SeqExpr,
    ShapeExpr,
    TensorType,
    Tuple,
    TupleGetItem,
    Var,
)

SHAPE = (2, 3)
UNARY = ("exp", "negative", "nn.relu", "tanh")
BINARY = ("add", "multiply", "subtract", "maximum")


# ---------------------------------------------------------------------------- programs


@st.composite
def straight_programs(draw: st.DrawFn) -> Program:
    """One dataflow function over `x` (input) and `w` (weight), all tensors 2x3 float32
    (or their 3x2 reshapes, which no elementwise op reads)."""
    ty = TensorType(SHAPE, "float32")
    params = (Param(Var("x"), ty), Param(Var("w"), ty))
    tensors, bindings = ["x", "w"], []
    for index in range(draw(st.integers(1, 8))):
        name = f"v{index}"
        kind = draw(st.sampled_from(("unary", "binary", "binary", "alias", "view", "tuple", "eps")))
        bindings.append(_draw_binding(draw, kind, name, tensors, ty))
        if kind != "view":
            tensors.append(name)
    result = draw(st.sampled_from(tensors[2:] or ["x"]))
    if result == "x":
        bindings.append(Binding(Var("out"), Call("exp", (Var("x"),)), ty))
        result = "out"
    block = Block(tuple(bindings), dataflow=True, outputs=(Var(result),))
    fn = Function("main", params, ty, SeqExpr((block,), Var(result)), (("num_input", 1),))
    return Program((fn,))


def _draw_binding(
    draw: st.DrawFn, kind: str, name: str, tensors: list[str], ty: TensorType
) -> Binding:
    pick = st.sampled_from(tensors)
    match kind:
        case "unary":
            return Binding(Var(name), Call(draw(st.sampled_from(UNARY)), (Var(draw(pick)),)), ty)
        case "binary":
            args = (Var(draw(pick)), Var(draw(pick)))
            return Binding(Var(name), Call(draw(st.sampled_from(BINARY)), args), ty)
        case "alias":
            return Binding(Var(name), Var(draw(pick)), ty)
        case "view":
            view = TensorType(SHAPE[::-1], "float32")
            return Binding(
                Var(name), Call("reshape", (Var(draw(pick)), ShapeExpr(SHAPE[::-1]))), view
            )
        case "tuple":
            inner = Tuple((Var(draw(pick)), Var(draw(pick))))
            return Binding(Var(name), TupleGetItem(inner, draw(st.integers(0, 1))), ty)
        case _:
            # BatchNorm's `var + eps`: the weight dies here, but it is not ours to write.
            return Binding(Var(name), Call("add", (Var("w"), Const(1e-5, "float32"))), ty)


# ---------------------------------------------------------------------------- the judge


@dataclass
class _Path:
    events: list[tuple[str, frozenset[str]]] = field(default_factory=list)


def kill_faults(program: Program, killed: Program) -> list[str]:
    """Everything wrong with the kills of `killed` (`program` with kills added)."""
    faults: list[str] = []
    for fn, after in zip(infer_types(program).functions, killed.functions):
        memory = build_memory(Program((fn,)), alignment=1)
        planned = {b.id for b in memory.problem.buffers}
        for number, path in enumerate(_paths(after, memory.placements)):
            faults += [f"{fn.name}, path {number}: {f}" for f in _judge(path, planned)]
    return faults


def _paths(fn: Function, placements: dict[str, object]) -> list[_Path]:
    return _walk_seq(fn.body, placements, [_Path()])


def _walk_seq(seq: SeqExpr, placements: dict[str, object], paths: list[_Path]) -> list[_Path]:
    for block in seq.blocks:
        for binding in block.bindings:
            paths = _walk_binding(binding, placements, paths)
    return paths


def _walk_binding(
    binding: Binding, placements: dict[str, object], paths: list[_Path]
) -> list[_Path]:
    value = binding.value
    if isinstance(value, Call) and value.op.startswith("memory.kill"):
        for path in paths:
            path.events.append(("kill", _buffers(value.args[0], placements)))
        return paths
    if isinstance(value, If):
        return _walk_if(binding, value, placements, paths)
    for path in paths:
        path.events.append(("use", _buffers(value, placements)))
        path.events.append(("def", _buffers(binding.var, placements)))
    return paths


def _walk_if(
    binding: Binding, node: If, placements: dict[str, object], paths: list[_Path]
) -> list[_Path]:
    out = []
    for branch in (node.then_branch, node.else_branch):
        copies = [_Path(list(p.events)) for p in paths]
        for path in copies:
            path.events.append(("use", _buffers(node.cond, placements)))
        copies = _walk_seq(branch, placements, copies)
        for path in copies:
            path.events.append(("yield", _buffers(branch.body, placements)))
            path.events.append(("def", _buffers(binding.var, placements)))
        out += copies
    return out


def _buffers(expr: Expr, placements: dict[str, object]) -> frozenset[str]:
    match expr:
        case Var(name=name):
            return _flat(placements.get(name))
        case TupleGetItem(tuple_value=Var(name=name), index=index):
            value = placements.get(name)
            return _flat(value[index]) if isinstance(value, tuple) else frozenset()
        case Call(args=items) | Tuple(fields=items):
            return frozenset().union(*(_buffers(e, placements) for e in items))
        case _:
            return frozenset()


def _flat(value: object) -> frozenset[str]:
    if isinstance(value, Placement):
        return frozenset({value.buffer})
    if isinstance(value, tuple):
        return frozenset().union(*(_flat(v) for v in value))
    return frozenset()


def _judge(path: _Path, planned: set[str]) -> list[str]:
    """Per buffer on this path: defined, then used, then killed exactly once."""
    uses: dict[str, list[int]] = {}
    kills: dict[str, list[int]] = {}
    defined: set[str] = set()
    for time, (kind, buffers) in enumerate(path.events):
        for buffer in buffers:
            if kind == "def":
                defined.add(buffer)
            elif kind in ("use", "yield"):
                uses.setdefault(buffer, []).append(time)
            else:
                kills.setdefault(buffer, []).append(time)
    # A yielded value used nowhere later is handed over: that is its kill.
    for time, (kind, buffers) in enumerate(path.events):
        for buffer in buffers if kind == "yield" else ():
            if max(uses[buffer]) == time:
                kills.setdefault(buffer, []).append(time)
    faults = [f"kill of {b!r}, which is not a planned buffer" for b in kills if b not in planned]
    for buffer in sorted(defined & planned):
        times = kills.get(buffer, [])
        if len(times) != 1:
            faults.append(f"{buffer!r} is killed {len(times)} times")
        elif any(use > times[0] for use in uses.get(buffer, [])):
            faults.append(f"{buffer!r} is used after its kill")
    return faults
