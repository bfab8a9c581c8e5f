"""One interpreter for every way optplan runs a program in NumPy.

`Interpreter` runs the entry function of a typed program (`infer_types` first) with every
value in its own array, the reference run. Its steps:

1. bind each parameter to a read-only copy of its input (checked against its type);
2. run the bindings in order; each is an If, a call, or a view of other values (a
   variable, a tuple, a tuple item), and its value goes into the environment;
3. an If runs the branch its condition takes, in a scope of its own, and its value is a
   copy of the branch's value (`if_value`);
4. a call evaluates its operands, then goes to the override point the op table names
   (`OpDef.runs`): the
   memory ops (`alloc_storage`, `alloc_tensor`, `alloc_fresh`, `kill_tensor`,
   `kill_storage`), destination-passing kernels (`call_kernel`), and every other op
   (`call_op`: the op table's kernel, or the mixing kernel for opaque ones);
5. each bound value is recorded (`record`) by name, as it was right after its binding;
6. the function's result, flattened, is the run's outputs.

A `ReplayFailure` (a write into a read-only array, a plan that misses an offset) stops the
run and becomes `Run.failure`. The planned replay (`optplan.runtime.replay`) overrides where
values live (`placement`, `place`, `store`, `if_value`) and when bytes are poisoned
(`enter_branch`, `after`, `kill_tensor`); the lowered runner
(`optplan.runtime.lowered`) overrides the memory ops and kernel calls, as torch.fx's Interpreter
subclasses override `call_function`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from optplan.analysis.types import format_type
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
from optplan.ops import Runs, evaluate, inplace_outputs, lookup, overwritten_args

POISON = 0xA5

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


def meta_key(kind: str, index: int) -> str:
    """The name of a metadata constant among the inputs, as TVMScript prints it."""
    return f'metadata["{kind}"][{index}]'


@dataclass(slots=True)
class Interpreter:
    """An environment of values, run binding by binding; see the module docstring."""

    program: Program
    inputs: dict[str, np.ndarray]
    keep_values: bool = True
    # In-place calls write into values bound earlier, so a run records copies when the
    # program has them (and a replay whose bytes are reused always does).
    copy_values: bool = False
    env: dict[str, Value] = field(default_factory=dict)
    values: dict[str, np.ndarray] = field(default_factory=dict)
    locs: dict[str, Loc | None] = field(default_factory=dict)

    def run(self) -> Run:
        fn = self.program.main
        self.copy_values = self.copy_values or any(
            _writes_an_argument(b.value) for b in iter_bindings(fn.body)
        )
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
                # A constant beyond its dtype's range becomes inf, as NumPy and TVM make it.
                with np.errstate(over="ignore"):
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
                return self.call(expr, None, None)
            case _:
                raise InputError(f"cannot evaluate a {type(expr).__name__} here")

    def snapshot(self, value: np.ndarray) -> np.ndarray:
        """The value as it is now (a copy when later bindings may write its bytes)."""
        return np.array(value, copy=True) if self.copy_values else value

    def record(self, binding: Binding, value: Value) -> None:
        """Keep the value of `binding` under its name (a tuple's fields as `name[i]`)."""
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
        value_expr, taken = binding.value, None
        if isinstance(value_expr, If):
            value, taken = self.if_(binding, value_expr)
        elif isinstance(value_expr, Call):
            value = self.call(value_expr, binding.type, binding)
        else:
            # Var, tuple, tuple item: the same bytes as their source.
            value = self.place(binding, self.expr(value_expr))
        self.env[binding.var.name] = value
        # Recorded before the kills: a value nobody reads dies right after its binding.
        self.record(binding, value)
        self.after(binding, taken)

    def if_(self, binding: Binding, node: If) -> tuple[Value, bool]:
        """Run the branch taken, in a scope of its own: the If's value (`if_value`) and
        which branch ran."""
        taken = bool(np.asarray(self.expr(node.cond)))
        branch = node.then_branch if taken else node.else_branch
        self.enter_branch(binding, taken)
        outer = dict(self.env)
        self.seq(branch)
        if isinstance(branch.body, Call):
            # A branch may end in a call instead of a variable; it has the If's type.
            result = self.call(branch.body, binding.type, None)
        else:
            result = self.expr(branch.body)
        value = self.if_value(binding, result)
        self.env = outer
        return value, taken

    def call(self, call: Call, out_type: Type | None, binding: Binding | None) -> Value:
        """Evaluate the operands, then hand the call to its override point (`OpDef.runs`)."""
        args = [self.expr(a) for a in call.args]
        op = lookup(call.op)
        match Runs.OP if op is None else op.runs:
            case Runs.OP:
                return self.call_op(call, args, out_type, binding)
            case Runs.KERNEL:
                return self.call_kernel(call, args, binding)
            case Runs.ALLOC_STORAGE:
                return self.alloc_storage(call, args, out_type, binding)
            case Runs.ALLOC_TENSOR:
                return self.alloc_tensor(call, args, out_type, binding)
            case Runs.ALLOC_FRESH:
                return self.alloc_fresh(call, args, out_type, binding)
            case Runs.KILL_TENSOR:
                return self.kill_tensor(call, args)
            case Runs.KILL_STORAGE:
                return self.kill_storage(call, args)
            case Runs.KILL_OBJECT:
                return ()

    # ------------------------------------------------------------------ override points

    def placement(self, binding: Binding | None) -> object:
        """Where the value of `binding` lives; None: in arrays of its own."""
        return None

    def place(self, binding: Binding | None, value: Value) -> Value:
        """`value` as the value of `binding`, where `placement` says it lives."""
        return value

    def if_value(self, binding: Binding, result: Value) -> Value:
        """The value of an If: a buffer of its own (as the liveness has it), never the
        branch's source, so an in-place write over it leaves the source alone."""
        return _copy(result)

    def enter_branch(self, binding: Binding, taken: bool) -> None:
        """Called on entering the branch taken of the If bound by `binding`."""

    def after(self, binding: Binding, taken: bool | None) -> None:
        """Called once `binding` has run and its value is recorded (for an If, once the
        branch `taken` has run and its value is the If's; else `taken` is None)."""

    def call_op(
        self, call: Call, args: list[Value], out_type: Type | None, binding: Binding | None
    ) -> Value:
        """An op of the table (or an opaque kernel): its value in arrays of its own; an
        in-place call writes the arguments it overwrites."""
        if out_type is None:
            raise InputError(f"the type of the {call.op} call is not known")
        result = self.compute(call, args, out_type, binding)
        if overwritten_args(call):
            return self.overwrite(call, args, result, binding, out_type)
        op = lookup(call.op)
        if (op is not None and op.view) or self.placement(binding) is not None:
            # A view keeps its source's bytes; it is copied only if a plan put it elsewhere.
            return self.place(binding, result)
        return _fresh(result)

    def compute(
        self, call: Call, args: list[Value], out_type: Type, binding: Binding | None
    ) -> Value:
        """The op's kernel on `args`; any fault in it is one line naming the binding."""
        try:
            return evaluate(call, args, out_type)
        except (InputError, ReplayFailure):
            raise
        except Exception as error:  # noqa: BLE001 - any kernel fault is one line naming the node
            raise KernelFailure.of(call, binding, error) from None

    def overwrite(
        self, call: Call, args: list[Value], result: Value, binding: Binding | None, out_type: Type
    ) -> Value:
        """An in-place call: each output is the argument it overwrites (or, at index -1, a
        fresh value). Parameters and constants (and views of them) are read-only, and
        writing one is a failure."""
        placement = self.placement(binding)
        results = result if isinstance(result, tuple) else (result,)
        places = placement if isinstance(placement, tuple) else (placement,) * len(results)
        types = out_type.fields if isinstance(out_type, TupleType) else (out_type,)
        loc = binding.loc if binding is not None else call.loc
        outputs = []
        for index, value, place, type_ in zip(inplace_outputs(call), results, places, types):
            if index < 0:
                outputs.append(_fresh(value) if place is None else self.store(place, value, type_))
                continue
            target = args[index]
            assert isinstance(target, np.ndarray) and isinstance(value, np.ndarray)
            if not target.flags.writeable:
                raise ReplayFailure(
                    f"{call.op} of {call.attr('kernel')!r} writes into {_describe(call.args[index])}, "
                    "which is read-only (a parameter or constant, or a view of one)",
                    loc,
                )
            # Every run writes in place: a later read of the argument sees the new value,
            # as in TVM.
            np.copyto(target, value)
            outputs.append(target)
        return tuple(outputs) if isinstance(result, tuple) else outputs[0]

    def store(self, placement: object, value: Value, type_: Type | None) -> Value:
        """`value` stored at `placement` (a planned replay's arena); here, as it is."""
        return value

    def call_kernel(self, call: Call, args: list[Value], binding: Binding | None) -> Value:
        raise InputError(
            f"kernel call {call.attr('kernel')!r} writes its arguments: this is a lowered "
            "program; run it with optplan.runtime.lowered.run_lowered"
        )

    def alloc_storage(
        self, call: Call, args: list[Value], out_type: Type | None, binding: Binding | None
    ) -> Value:
        return self.call_op(call, args, out_type, binding)

    def alloc_tensor(
        self, call: Call, args: list[Value], out_type: Type | None, binding: Binding | None
    ) -> Value:
        return self.call_op(call, args, out_type, binding)

    def alloc_fresh(
        self, call: Call, args: list[Value], out_type: Type | None, binding: Binding | None
    ) -> Value:
        return self.call_op(call, args, out_type, binding)

    def kill_tensor(self, call: Call, args: list[Value]) -> Value:
        return ()

    def kill_storage(self, call: Call, args: list[Value]) -> Value:
        return ()


# ---------------------------------------------------------------------------- helpers


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


__all__ = [
    "POISON",
    "Interpreter",
    "KernelFailure",
    "ReplayFailure",
    "Run",
    "flat_arrays",
    "meta_key",
    "read_only",
]
