"""Run a program in NumPy, unplanned and planned, and compare the two byte for byte.

`reference_run` gives every value its own fresh array (an in-place call still writes
into its argument, as in TVM, and values are then recorded as copies). `planned_run` replays the same
program inside one arena laid out by a plan:

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

A plan that lets two live values share a byte therefore changes some value, and
`compare` names the first one (in program order) that differs from the reference run,
where it is bound, and its first differing element. Comparison is on bytes, so NaN and
-0.0 compare exactly.

    arena:  |..lv0..|..lv1..|.......lv2.......|      A5 A5 A5 = poison, rewritten at kills
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from optplan.analysis.memory import NO_RELEASES, Memory, Placement, Releases
from optplan.analysis.types import format_type, infer_types
from optplan.errors import InputError
from optplan.ir import (
    Binding,
    Call,
    Const,
    Expr,
    Function,
    If,
    Literal,
    Loc,
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
    iter_bindings,
)
from optplan.ops import evaluate, inplace_outputs, lookup, overwritten_args
from optplan.plan import Plan

POISON = 0xA5
ARENA_ALIGNMENT_BYTES = 64

Value = object  # np.ndarray, a tuple of values, a shape tuple or a literal


@dataclass(frozen=True, slots=True)
class Run:
    """What one run computed.

    `values`: every bound tensor by variable name, in the order bound (a tuple value's
    fields as `name[i]`), as it was right after its binding ran. `outputs`: the function's
    result, flattened. `locs`: where each value's binding is. `failure`: why the run
    stopped early (a write into a read-only parameter, say), else None.
    """

    values: dict[str, np.ndarray] = field(default_factory=dict)
    outputs: tuple[np.ndarray, ...] = ()
    locs: dict[str, Loc | None] = field(default_factory=dict)
    failure: str | None = None
    failure_loc: Loc | None = None


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


class ReplayFailure(Exception):
    """A run cannot go on: a kernel wrote into a read-only array, or a plan misses an
    offset. Caught by the runs and reported as `Run.failure`."""

    def __init__(self, message: str, loc: Loc | None) -> None:
        super().__init__(message)
        self.loc = loc


class KernelFailure(InputError):
    """A kernel raised on the values it was given: one line naming the binding, its op
    and the fault, located at the binding when it has a place in a file."""

    @classmethod
    def of(cls, call: Call, binding: Binding | None, error: Exception) -> KernelFailure:
        name = f"{binding.var.name!r} = " if binding is not None else ""
        lines = [line.strip() for line in str(error).splitlines() if line.strip()]
        fault = f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__
        loc = (binding.loc if binding is not None else None) or call.loc or Loc()
        message = f"{name}{call.op}: the kernel failed: {fault}"
        return cls(message, file=loc.file or "", line=loc.line, col=loc.col)


# ---------------------------------------------------------------------------- inputs


def meta_key(kind: str, index: int) -> str:
    """The name of a metadata constant among the inputs, as TVMScript prints it."""
    return f'metadata["{kind}"][{index}]'


def make_inputs(program: Program, seed: int = 0) -> dict[str, np.ndarray]:
    """Deterministic values for every parameter and metadata constant of the entry function.

    Floats are uniform in [-1, 1), or in [0.5, 1.5) for parameters that reach a sqrt or log
    through adds, products and views (BatchNorm's `sqrt(var + eps)`): a NaN there would
    spread and hide later corruption. Integers that `take` uses as indices
    are in range of the axis they index, other integers small and non-negative; each value
    is drawn from a generator seeded by `seed` and its own name, so adding a parameter
    does not change the others.
    """
    typed = infer_types(program)
    fn = typed.main
    bounds = _index_bounds(fn)
    positive = _positive_params(fn)
    inputs: dict[str, np.ndarray] = {}
    for p in fn.params:
        if not isinstance(p.type, TensorType):
            raise InputError(f"parameter {p.var.name!r} is {format_type(p.type)}; only tensors can be made")
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


def _random(name: str, type_: TensorType, seed: int, bound: int | None, positive: bool) -> np.ndarray:
    digest = hashlib.blake2b(f"{seed}:{name}".encode(), digest_size=8).digest()
    rng = np.random.default_rng(int.from_bytes(digest, "little"))
    dtype = np.dtype(type_.dtype)
    if dtype == np.bool_:
        return rng.random(type_.shape) < 0.5
    if np.issubdtype(dtype, np.integer):
        return rng.integers(0, max(bound or 8, 1), size=type_.shape).astype(dtype)
    low, high = (0.5, 1.5) if positive else (-1.0, 1.0)
    return rng.uniform(low, high, size=type_.shape).astype(dtype)


_SAME_ELEMENTS = {"reshape", "expand_dims", "squeeze", "flatten"}
_NEEDS_POSITIVE = {"sqrt", "rsqrt", "log"}
_KEEPS_SIGN = _SAME_ELEMENTS | {"add", "multiply", "astype"}


def _positive_params(fn: Function) -> set[str]:
    """Variables whose values reach the operand of a sqrt or log through sign-keeping
    ops, found backwards from those ops (a definition always precedes its uses)."""
    needs: set[str] = set()
    for binding in reversed(list(iter_bindings(fn.body))):
        value = binding.value
        reads = [a.name for a in getattr(value, "args", ()) if isinstance(a, Var)]
        if isinstance(value, Var):
            reads = [value.name]
        op = value.op if isinstance(value, Call) else None
        if op in _NEEDS_POSITIVE or (binding.var.name in needs and (op in _KEEPS_SIGN or op is None)):
            needs.update(reads)
    return needs


def _index_bounds(fn: Function) -> dict[str, int]:
    """For parameters read (maybe through reshapes) as `take` indices, the size of the
    axis they index."""
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
        if value.op in _SAME_ELEMENTS and value.args[0].name in source:
            source[binding.var.name] = source[value.args[0].name]
        if value.op == "take" and len(value.args) > 1 and isinstance(value.args[1], Var):
            data = types.get(value.args[0].name)
            origin = source.get(value.args[1].name)
            if origin is not None and isinstance(data, TensorType) and data.shape:
                axis = value.attr("axis")
                size = data.shape[axis] if isinstance(axis, int) else int(np.prod(data.shape))
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
    """Run the entry function with every value in its own fresh array.

    With `record=False` only the outputs are kept (for timing; `compare` then checks only
    them).
    """
    return _Machine(infer_types(program), inputs, keep_values=record).run()


def planned_run(
    program: Program, memory: Memory, plan: Plan, inputs: dict[str, np.ndarray], *, record: bool = True
) -> Run:
    """Replay the entry function inside one poisoned arena laid out by `plan`."""
    machine = _Machine(
        infer_types(program), inputs, memory=memory, offsets=dict(plan.offsets), keep_values=record
    )
    machine.arena = _aligned_arena(plan.arena)
    return machine.run()


def _aligned_arena(size_bytes: int) -> np.ndarray:
    """A poisoned byte array whose first byte is 64-byte aligned, like a runtime's arena."""
    raw = np.empty(size_bytes + ARENA_ALIGNMENT_BYTES, dtype=np.uint8)
    start = (-raw.ctypes.data) % ARENA_ALIGNMENT_BYTES
    arena = raw[start : start + size_bytes]
    arena.fill(POISON)
    return arena


@dataclass(slots=True)
class _Machine:
    """An environment of values plus, for a planned run, the arena and the kills."""

    program: Program
    inputs: dict[str, np.ndarray]
    memory: Memory | None = None
    keep_values: bool = True
    offsets: dict[str, int] = field(default_factory=dict)
    arena: np.ndarray | None = None
    env: dict[str, Value] = field(default_factory=dict)
    values: dict[str, np.ndarray] = field(default_factory=dict)
    locs: dict[str, Loc | None] = field(default_factory=dict)
    # In-place calls write into values bound earlier, so even the reference run must
    # record copies when the program has them.
    copy_values: bool = False

    @property
    def planned(self) -> bool:
        return self.memory is not None

    def run(self) -> Run:
        fn = self.program.main
        self.copy_values = self.planned or any(_writes_an_argument(b.value) for b in iter_bindings(fn.body))
        self.bind_params(fn)
        try:
            self.seq(fn.body)
            outputs = tuple(self.snapshot(v) for v in flat_arrays(self.expr(fn.body.body)))
        except ReplayFailure as failure:
            return Run(self.values, (), self.locs, str(failure), failure.loc)
        return Run(self.values, outputs, self.locs)

    # ------------------------------------------------------------------ values

    def bind_params(self, fn: Function) -> None:
        for p in fn.params:
            name = p.var.name
            if name not in self.inputs:
                raise InputError(f"no input given for parameter {name!r}")
            self.env[name] = read_only(_checked_input(name, self.inputs[name], p.type))

    def expr(self, expr: Expr) -> Value:
        match expr:
            case Var(name=name):
                return self.env[name]
            case Const(value=value, dtype=dtype):
                return read_only(np.asarray(value, dtype=dtype))
            case MetaConst(kind=kind, index=index, type=type_):
                key = meta_key(kind, index)
                if key not in self.inputs:
                    raise InputError(f"no input given for {key}")
                return read_only(_checked_input(key, self.inputs[key], type_))
            case ShapeExpr(values=values):
                return values
            case Literal(value=value):
                return value
            case Tuple(fields=fields):
                return tuple(self.expr(f) for f in fields)
            case TupleGetItem(tuple_value=inner, index=index):
                items = self.expr(inner)
                assert isinstance(items, tuple)
                return items[index]
            case Call():
                return self.call(expr, None, None, None)
            case _:
                raise InputError(f"cannot evaluate a {type(expr).__name__} here")

    def snapshot(self, value: np.ndarray) -> np.ndarray:
        """The value as it is now; the arena's bytes will be reused, so a planned run
        keeps a copy."""
        return np.array(value, copy=True) if self.copy_values else value

    def record(self, binding: Binding, value: Value) -> None:
        name = binding.var.name
        if name == "_" or not self.keep_values:
            return
        if isinstance(value, np.ndarray) and isinstance(binding.type, TensorType):
            self.values[name] = self.snapshot(value)
            self.locs[name] = binding.loc
        elif isinstance(value, tuple) and isinstance(binding.type, TupleType):
            for i, item in enumerate(flat_arrays(value)):
                self.values[f"{name}[{i}]"] = self.snapshot(item)
                self.locs[f"{name}[{i}]"] = binding.loc

    # ------------------------------------------------------------------ bindings

    def seq(self, seq: SeqExpr) -> None:
        for block in seq.blocks:
            for binding in block.bindings:
                self.binding(binding)

    def binding(self, binding: Binding) -> None:
        try:
            self.run_binding(binding)
        except ReplayFailure as failure:
            if failure.loc is None and binding.loc is not None:
                raise ReplayFailure(str(failure), binding.loc) from None
            raise

    def run_binding(self, binding: Binding) -> None:
        name, value_expr = binding.var.name, binding.value
        released = self.released(name).after
        if isinstance(value_expr, If):
            value, released = self.if_(binding, value_expr)
        elif isinstance(value_expr, Call):
            value = self.call(value_expr, binding.type, self.placement(name), binding)
        else:
            # Var, tuple, tuple item: the same bytes as their source.
            value = self.place(self.placement(name), self.expr(value_expr), binding.type)
        self.env[name] = value
        # Recorded before the kills: a value nobody reads dies right after its binding.
        self.record(binding, value)
        self.poison(released)

    def if_(self, binding: Binding, node: If) -> tuple[Value, tuple[str, ...]]:
        """Run the branch taken; its value is copied into the If's own buffer. Returns the
        value and the buffers to poison once it is recorded."""
        name = binding.var.name
        taken = bool(np.asarray(self.expr(node.cond)))
        branch = node.then_branch if taken else node.else_branch
        self.poison(self.released(name).entry(taken))
        outer = dict(self.env)
        self.seq(branch)
        if isinstance(branch.body, Call):
            # A branch may end in a call instead of a variable; it has the If's type.
            result = self.call(branch.body, binding.type, None, None)
        else:
            result = self.expr(branch.body)
        placement = self.placement(name)
        # The If's value is a buffer of its own (as the liveness has it), never the branch's
        # source: an in-place write over the If's value must leave the source alone.
        value = self.place(placement, result, binding.type) if placement is not None else _copy(result)
        self.env = outer
        return value, self.released(name).exit(taken)

    def call(self, call: Call, out_type: Type | None, placement: object, binding: Binding | None) -> Value:
        if out_type is None:
            raise InputError(f"the type of the {call.op} call is not known")
        args = [self.expr(a) for a in call.args]
        loc = binding.loc if binding is not None else call.loc
        if call.op == "call_kernel":
            raise InputError(
                f"kernel call {call.attr('kernel')!r} writes its arguments: this is a lowered "
                "program; run it with optplan.lowered.run_lowered"
            )
        if call.op in _KILLS:
            return self.kill(call, args)
        op = lookup(call.op)
        overwritten = overwritten_args(call)
        try:
            if isinstance(placement, Placement) and op is not None and op.into is not None and not overwritten:
                # Destination passing proper: the kernel writes its output view, no copy.
                view = self.view(placement, out_type)
                with np.errstate(all="ignore"):
                    if op.into(call, args, view):
                        return view
            result = evaluate(call, args, out_type)
        except (InputError, ReplayFailure):
            raise
        except Exception as error:  # noqa: BLE001 - any kernel fault is one line naming the node
            raise KernelFailure.of(call, binding, error) from None
        if overwritten:
            return self.overwrite(call, args, result, placement, out_type, loc)
        if op is not None and op.view:
            # A view keeps its source's bytes; it is copied only if the plan put it elsewhere.
            return self.place(placement, result, out_type)
        if placement is None:
            return _fresh(result)
        return self.place(placement, result, out_type)

    def overwrite(
        self, call: Call, args: list[Value], result: Value, placement: object, out_type: Type, loc: Loc | None
    ) -> Value:
        """An in-place call: each output is the argument it overwrites (or, at index -1, a
        fresh value). Parameters and constants (and views of them) are read-only, and
        writing one is a failure."""
        results = result if isinstance(result, tuple) else (result,)
        places = placement if isinstance(placement, tuple) else (placement,) * len(results)
        types = out_type.fields if isinstance(out_type, TupleType) else (out_type,)
        outputs = []
        for index, value, place, type_ in zip(inplace_outputs(call), results, places, types):
            if index < 0:
                outputs.append(_fresh(value) if place is None else self.place(place, value, type_))
                continue
            target = args[index]
            assert isinstance(target, np.ndarray) and isinstance(value, np.ndarray)
            if not target.flags.writeable:
                raise ReplayFailure(
                    f"{call.op} of {call.attr('kernel')!r} writes into {_describe(call.args[index])}, "
                    "which is read-only (a parameter or constant, or a view of one)",
                    loc,
                )
            # Both runs write in place: a later read of the argument sees the new value,
            # as in TVM.
            np.copyto(target, value)
            outputs.append(target)
        return tuple(outputs) if isinstance(result, tuple) else outputs[0]

    def kill(self, call: Call, args: list[Value]) -> Value:
        """In a planned run a killed tensor's bytes are poisoned, so a read after the kill
        shows. A storage kill only drops a reference (tensors carved from it live on), so
        it poisons nothing."""
        if self.planned and call.op == "memory.kill_tensor":
            for target in flat_arrays(tuple(args)):
                if target.flags.writeable and target.flags.c_contiguous:
                    target.reshape(-1).view(np.uint8).fill(POISON)
        return ()

    # ------------------------------------------------------------------ the arena

    def placement(self, name: str) -> object:
        if self.memory is None:
            return None
        return self.memory.placements.get(name)

    def released(self, name: str) -> Releases:
        if self.memory is None:
            return NO_RELEASES
        return self.memory.released(name)

    def view(self, placement: Placement, type_: Type | None) -> np.ndarray:
        assert self.arena is not None and self.memory is not None
        if not isinstance(type_, TensorType):
            raise ReplayFailure(f"buffer {placement.buffer!r} holds a {format_type(type_)}", None)
        if placement.buffer not in self.offsets:
            raise ReplayFailure(f"the plan gives no offset for buffer {placement.buffer!r}", None)
        start = self.offsets[placement.buffer]
        end = start + type_.size_bytes
        if start < 0 or end > self.arena.size:
            raise ReplayFailure(
                f"buffer {placement.buffer!r} at bytes [{start}, {end}) is outside the arena "
                f"of {self.arena.size} bytes",
                None,
            )
        return self.arena[start:end].view(type_.dtype).reshape(type_.shape)

    def place(self, placement: object, value: Value, type_: Type | None) -> Value:
        """`value` stored at `placement` (copied there unless it already is there)."""
        if placement is None:
            return value
        if isinstance(placement, tuple):
            assert isinstance(value, tuple) and isinstance(type_, TupleType)
            return tuple(self.place(p, v, t) for p, v, t in zip(placement, value, type_.fields))
        assert isinstance(placement, Placement) and isinstance(value, np.ndarray)
        view = self.view(placement, type_)
        if not _same_bytes(view, value):
            np.copyto(view, value)
        return view

    def poison(self, buffers: tuple[str, ...]) -> None:
        if self.arena is None or self.memory is None:
            return
        for buffer in buffers:
            start = self.offsets.get(buffer)
            if start is not None:
                self.arena[start : start + self.memory.problem.buffer(buffer).size] = POISON


# ---------------------------------------------------------------------------- helpers

_KILLS = {"memory.kill_tensor", "memory.kill_storage", "vm.kill_object"}


def _writes_an_argument(expr: Expr) -> bool:
    return isinstance(expr, Call) and bool(overwritten_args(expr))



def read_only(array: np.ndarray) -> np.ndarray:
    """A copy of `array` that cannot be written: parameters and constants in a run."""
    array = np.array(array, copy=True)
    array.flags.writeable = False
    return array


def _checked_input(name: str, value: np.ndarray, type_: Type | None) -> np.ndarray:
    array = np.asarray(value)
    if isinstance(type_, TensorType) and (
        array.shape != type_.shape or array.dtype != np.dtype(type_.dtype)
    ):
        raise InputError(
            f"input {name!r} is {array.shape} {array.dtype}, but the program declares "
            f"{format_type(type_)}"
        )
    return array


def _fresh(value: Value) -> Value:
    """`value` in arrays of its own: a kernel may hand back a view of an input."""
    if isinstance(value, tuple):
        return tuple(_fresh(v) for v in value)
    if isinstance(value, np.ndarray):
        owned = value.flags.owndata and value.flags.c_contiguous and value.flags.writeable
        return value if owned else np.array(value, copy=True, order="C")
    return value


def _copy(value: Value) -> Value:
    """`value` in new arrays of its own."""
    if isinstance(value, tuple):
        return tuple(_copy(v) for v in value)
    if isinstance(value, np.ndarray):
        return np.array(value, copy=True, order="C")
    return value


def _same_bytes(a: np.ndarray, b: np.ndarray) -> bool:
    return (
        isinstance(b, np.ndarray)
        and a.nbytes == b.nbytes
        and a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
        and b.flags.c_contiguous
    )


def flat_arrays(value: Value) -> Iterator[np.ndarray]:
    """The arrays of a value, tuples flattened, in order."""
    if isinstance(value, tuple):
        for item in value:
            yield from flat_arrays(item)
    elif isinstance(value, np.ndarray):
        yield value


def _describe(expr: Expr) -> str:
    match expr:
        case Var(name=name):
            return repr(name)
        case MetaConst(kind=kind, index=index):
            return meta_key(kind, index)
        case Const():
            return "a constant"
        case _:
            return "an argument"


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


def _differs(name: str, expected: np.ndarray, actual: np.ndarray, loc: Loc | None) -> Difference | None:
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
    "ReplayFailure",
    "Run",
    "compare",
    "make_inputs",
    "meta_key",
    "planned_run",
    "reference_run",
]
