"""Run a program in NumPy, unplanned and planned, and compare the two byte for byte.

`reference_run` gives every value its own fresh array (`optplan.runtime.interpreter.Interpreter`;
an in-place call still writes into its argument, as in TVM, and values are then recorded
as copies). `planned_run` replays the same program inside one arena laid out by a plan,
with `Planned`, an Interpreter that overrides only where values live and when bytes die:

1. one `uint8` arena of `plan.arena` bytes, every byte set to POISON;
2. every planned value is a view of the arena at `plan.offsets[buffer]`
   (`memory.placements`); views (reshape, tuple items, var-to-var bindings) land on the
   same bytes as their source, so they cost nothing;
3. each call computes its result and writes it into its output view (destination
   passing); `call_tir_inplace` writes it into the argument it overwrites;
4. after the binding of `v` the buffers of `memory.released(v).after` are poisoned again;
   on entering an If branch, and after copying the branch's value into the If's own
   buffer, the branch's releases are poisoned too;
5. parameters and constants are read-only arrays in both runs, so a program or plan that
   writes into one fails loudly instead of silently corrupting the model.

A plan of several memories replays in one array per memory, its copies performed as
steps of their own (`tiered.Tiered`); the planned replay itself is `planned.Planned`.

A plan that lets two live values share a byte therefore changes some value, and
`compare` names the first one (in program order) that differs from the reference run,
where it is bound, and its first differing element. Comparison is on bytes, so NaN and
-0.0 compare exactly. A program's types are inferred only if no one has yet (`typed_program`).

    arena:  |..lv0..|..lv1..|.......lv2.......|      A5 A5 A5 = poison, rewritten at kills
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from optplan.analysis.memory import MemoryFacts
from optplan.analysis.types import format_type, typed_program
from optplan.errors import InputError
from optplan.ir import (
    Call,
    Expr,
    Function,
    If,
    Loc,
    MetaConst,
    Program,
    TensorType,
    Tuple,
    TupleGetItem,
    Type,
    Var,
    iter_bindings,
)
from optplan.ops import lookup
from optplan.problem.plan import Plan
from optplan.runtime.interpreter import (
    POISON,
    Interpreter,
    KernelFailure,
    ReplayFailure,
    Run,
    flat_arrays,
    meta_key,
    read_only,
)
from optplan.runtime.planned import Planned, aligned_arena
from optplan.runtime.tiered import tiered_machine


@dataclass(frozen=True, slots=True)
class Difference:
    """The first place where a planned run differs from the reference run."""

    name: str
    loc: Loc | None
    index: int  # the first differing element (flat, C order); -1 when not comparable
    detail: str

    def __str__(self) -> str:
        where = ""
        if self.loc is not None and self.loc.line:
            where = f"{self.loc.file or '<input>'}:{self.loc.line}:{self.loc.col}: "
        return f"{where}{self.detail}"


# ---------------------------------------------------------------------------- inputs


def make_inputs(program: Program, seed: int = 0) -> dict[str, np.ndarray]:
    """Deterministic values for every parameter and metadata constant of the entry function.

    The op table says how (`OpDef.needs_positive`, `keeps_sign`, `keeps_elements`,
    `indexed_size`), for Relax's ops and ONNX's alike. Floats are uniform in [-1, 1), or
    in [0.5, 1.5) for parameters that reach a sqrt or log through adds, products and views
    (BatchNorm's `sqrt(var + eps)`): a NaN there would spread and hide later corruption.
    Integers that `take` or ONNX's Gather uses as indices are in range of the axis they
    index, other integers small and non-negative; each value is drawn from a generator
    seeded by `seed` and its own name, so adding a parameter does not change the others.
    """
    fn = typed_program(program).main
    bounds = _index_bounds(fn)
    positive = _positive_params(fn)
    inputs: dict[str, np.ndarray] = {}
    for p in fn.params:
        if not isinstance(p.type, TensorType):
            raise InputError(
                f"parameter {p.var.name!r} is {format_type(p.type)}; only tensors can be made"
            )
        name = p.var.name
        inputs[name] = _random(name, p.type, seed, bounds.get(name), name in positive)
    for meta in _metadata(fn):
        key = meta_key(meta.kind, meta.index)
        if key not in inputs:
            # A constant whose shape the text does not give: any bytes do for the opaque
            # kernels that read it.
            kind = meta.type or TensorType((4,), "float32")
            inputs[key] = _random(key, kind, seed, None, False)
    return inputs


def _random(
    name: str, type_: TensorType, seed: int, bound: int | None, positive: bool
) -> np.ndarray:
    digest = hashlib.blake2b(f"{seed}:{name}".encode(), digest_size=8).digest()
    rng = np.random.default_rng(int.from_bytes(digest, "little"))
    dtype = np.dtype(type_.dtype)
    if dtype == np.bool_:
        return rng.random(type_.shape) < 0.5
    if np.issubdtype(dtype, np.integer):
        return rng.integers(0, max(bound or 8, 1), size=type_.shape).astype(dtype)
    low, high = (0.5, 1.5) if positive else (-1.0, 1.0)
    return rng.uniform(low, high, size=type_.shape).astype(dtype)


def _positive_params(fn: Function) -> set[str]:
    """Variables whose values reach the operand of an op with `needs_positive` through ops
    with `keeps_sign`, found backwards from those ops (a definition always precedes its
    uses)."""
    needs: set[str] = set()
    for binding in reversed(list(iter_bindings(fn.body))):
        value = binding.value
        reads = [a.name for a in getattr(value, "args", ()) if isinstance(a, Var)]
        if isinstance(value, Var):
            reads = [value.name]
        op = lookup(value.op) if isinstance(value, Call) else None
        if isinstance(value, Call) and op is None:
            continue
        keeps_sign = op is None or op.keeps_sign
        if (op is not None and op.needs_positive) or (binding.var.name in needs and keeps_sign):
            needs.update(reads)
    return needs


def _index_bounds(fn: Function) -> dict[str, int]:
    """For parameters read (maybe through ops with `keeps_elements`) as the indices of an
    op with `indexed_size` (`take`, ONNX Gather), the size of the axis they index."""
    source: dict[str, str] = {p.var.name: p.var.name for p in fn.params}
    types: dict[str, Type | None] = {p.var.name: p.type for p in fn.params}
    bounds: dict[str, int] = {}
    for binding in iter_bindings(fn.body):
        types[binding.var.name] = binding.type
        value = binding.value
        if isinstance(value, Var) and value.name in source:
            source[binding.var.name] = source[value.name]
        if not isinstance(value, Call) or not value.args or not isinstance(value.args[0], Var):
            continue
        op = lookup(value.op)
        if op is None:
            continue
        if op.keeps_elements and value.args[0].name in source:
            source[binding.var.name] = source[value.args[0].name]
        if op.indexed_size is not None and len(value.args) > 1 and isinstance(value.args[1], Var):
            data = types.get(value.args[0].name)
            origin = source.get(value.args[1].name)
            if origin is not None and isinstance(data, TensorType) and data.shape:
                size = op.indexed_size(value, data)
                bounds[origin] = min(bounds.get(origin, size), size)
    return bounds


def _metadata(fn: Function) -> Iterator[MetaConst]:
    def walk(expr: Expr) -> Iterator[MetaConst]:
        match expr:
            case MetaConst():
                yield expr
            case Call(args=items) | Tuple(fields=items):
                for item in items:
                    yield from walk(item)
            case TupleGetItem(tuple_value=inner):
                yield from walk(inner)
            case If(cond=cond, then_branch=then, else_branch=other):
                yield from walk(cond)
                yield from walk(then.body)
                yield from walk(other.body)
            case _:
                return

    for binding in iter_bindings(fn.body):
        yield from walk(binding.value)
    yield from walk(fn.body.body)


# ---------------------------------------------------------------------------- runs


def reference_run(program: Program, inputs: dict[str, np.ndarray], *, record: bool = True) -> Run:
    """Run the entry function of `program` with every value in its own array.

    With `record=False` only the outputs are kept (for timing; `compare` then checks only
    them).
    """
    return Interpreter(typed_program(program), inputs, keep_values=record).run()


def planned_run(
    program: Program,
    memory: MemoryFacts,
    plan: Plan,
    inputs: dict[str, np.ndarray],
    *,
    record: bool = True,
) -> Run:
    """Replay the entry function of `program` inside one poisoned arena laid out by `plan`,
    or, for a plan of several memories, in one array per memory with its copies
    (`tiered.Tiered`)."""
    machine = Planned(
        typed_program(program),
        inputs,
        keep_values=record,
        copy_values=True,
        memory=memory,
        offsets=dict(plan.offsets),
        arena=aligned_arena(0 if plan.residences else plan.arena),
    )
    if plan.residences:
        costs = {m.name: m.cost for m in memory.problem.memories}
        return tiered_machine(machine, plan, costs).run()
    return machine.run()


# ---------------------------------------------------------------------------- comparison


def compare(reference: Run, planned: Run) -> Difference | None:
    """The first value, in program order, whose bytes differ between the runs; None when
    the planned run is bit-for-bit the reference."""
    for run, which in ((reference, "the reference run"), (planned, "the planned run")):
        if run.failure is not None:
            return Difference("", run.failure_loc, -1, f"{which} failed: {run.failure}")
    for name, expected in reference.values.items():
        loc = reference.locs.get(name)
        if name not in planned.values:
            return Difference(name, loc, -1, f"{name!r} was not computed in the planned run")
        found = _differs(name, expected, planned.values[name], loc)
        if found is not None:
            return found
    if len(reference.outputs) != len(planned.outputs):
        return Difference("", None, -1, "the runs return different numbers of values")
    for i, (expected, actual) in enumerate(zip(reference.outputs, planned.outputs)):
        found = _differs(f"output {i}", expected, actual, None)
        if found is not None:
            return found
    return None


def _differs(
    name: str, expected: np.ndarray, actual: np.ndarray, loc: Loc | None
) -> Difference | None:
    label = name if name.startswith("output") else repr(name)
    if expected.shape != actual.shape or expected.dtype != actual.dtype:
        return Difference(
            name,
            loc,
            -1,
            f"{label} is {actual.shape} {actual.dtype} in the planned run, "
            f"{expected.shape} {expected.dtype} in the reference run",
        )
    a = np.ascontiguousarray(expected).reshape(-1).view(np.uint8)
    b = np.ascontiguousarray(actual).reshape(-1).view(np.uint8)
    if np.array_equal(a, b):
        return None
    byte = int(np.flatnonzero(a != b)[0])
    index = byte // max(expected.dtype.itemsize, 1)
    flat_expected = np.ascontiguousarray(expected).reshape(-1)
    flat_actual = np.ascontiguousarray(actual).reshape(-1)
    return Difference(
        name,
        loc,
        index,
        f"{label} differs from the reference run at element {index} of {expected.shape} "
        f"{expected.dtype}: {flat_expected[index]!r} in the reference, "
        f"{flat_actual[index]!r} in the planned run",
    )


__all__ = [
    "POISON",
    "Difference",
    "KernelFailure",
    "Planned",
    "ReplayFailure",
    "Run",
    "compare",
    "flat_arrays",
    "make_inputs",
    "meta_key",
    "planned_run",
    "read_only",
    "reference_run",
]
