"""Run a lowered program (storages, carved tensors, kernel calls, kills) in NumPy.

The planned forms that `plan_memory` writes and TVM prints after StaticPlanBlockMemory
are run as written, statement by statement:

- `R.memory.alloc_storage(R.shape([n]), ...)`: `n` bytes of `uint8`, every byte POISON;
- `R.memory.alloc_tensor(s, offset, shape, dtype)`: a view of storage `s` at `offset`
  (an error if it overruns the storage or the storage was killed);
- `R.builtin.alloc_tensor(...)`: a fresh tensor of its own (TVM's unplanned outputs);
- `kernel(args...)` (a `call_kernel`): the kernel reads its inputs and writes its
  destinations. Destinations are the arguments listed in `inplace_indices` if the call
  says; else the trailing arguments that are tensors allocated and not yet written (TVM's
  destination-passing form); else (an in-place kernel, `add_inplace(x, b)`) the first
  argument that is a writable tensor. A call with an `op` attribute (a high-level op
  that `plan_memory` lowered) runs that op's NumPy kernel; any other kernel runs the
  deterministic mixing kernel of `optplan.ops.kernels` under its name, through
  `optplan.ops.evaluate`, exactly as the executor runs a `call_tir` of that name;
- `R.memory.kill_tensor(x)`: x's bytes become POISON; `R.memory.kill_storage(s)`: the
  bytes of `s` not held by a live tensor become POISON, and `s` may carve no more;
- anything else (views, tuples, high-level ops, Ifs) as the reference interpreter
  (`optplan.runtime.interpreter.Interpreter`) runs it: `Lowered` overrides only the memory ops
  and the kernel calls, and keeps an If's value where its branch carved it.

With `shared=False` every `alloc_tensor` is a fresh poisoned array of its own and kills
do nothing: the reference that a shared run must match bit for bit. Parameters and
constants are read-only, so a kernel writing into one stops the run with a failure.
Values are recorded as each kernel writes them, by destination name.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from optplan.analysis.types import typed_program
from optplan.errors import InputError
from optplan.ir import (
    Binding,
    Call,
    Expr,
    Loc,
    Program,
    TensorType,
    TupleType,
    Type,
    Var,
    var_types,
)
from optplan.passes.objects import literal_int
from optplan.runtime.interpreter import POISON, Interpreter, ReplayFailure, Run, Value


def run_lowered(program: Program, inputs: dict[str, np.ndarray], *, shared: bool = True) -> Run:
    """Run the entry function of a lowered `program`; see the module docstring."""
    program = typed_program(program)
    return Lowered(
        program, inputs, copy_values=True, shared=shared, types=var_types(program.main)
    ).run()


@dataclass(slots=True)
class _Carved:
    storage: str
    start: int
    end: int


@dataclass(slots=True)
class Lowered(Interpreter):
    """The reference interpreter, with storages, carved tensors, kills and kernels that
    write their destinations."""

    shared: bool = True
    types: dict[str, Type | None] = field(default_factory=dict)
    storages: dict[str, np.ndarray] = field(default_factory=dict)
    dead_storages: set[str] = field(default_factory=set)
    carved: dict[str, _Carved] = field(default_factory=dict)
    unwritten: set[str] = field(default_factory=set)

    def record(self, binding: Binding, value: Value) -> None:
        """Values are recorded as kernels write them (`write`), not as they are bound."""

    def if_value(self, binding: Binding, result: Value) -> Value:
        """The branch yields the If's own tensor, carved where the plan put it."""
        return result

    # ------------------------------------------------------------------ memory ops

    def alloc_storage(
        self, call: Call, args: list[Value], out_type: Type | None, binding: Binding | None
    ) -> Value:
        name = _bound_name(call, binding)
        size = int(args[0][0])  # type: ignore[index]
        self.storages[name] = np.full(size, POISON, dtype=np.uint8)
        return self.storages[name]

    def alloc_tensor(
        self, call: Call, args: list[Value], out_type: Type | None, binding: Binding | None
    ) -> Value:
        name = _bound_name(call, binding)
        loc = binding.loc if binding is not None else None
        storage = _var_name(call.args[0])
        type_ = _type_of(call, out_type)
        assert isinstance(type_, TensorType)
        start = literal_int(call.args[1])
        end = start + type_.size_bytes
        arena = self.storages[storage]
        if storage in self.dead_storages:
            raise ReplayFailure(f"{name!r} is carved from {storage!r} after its kill", loc)
        if start < 0 or end > arena.size:
            raise ReplayFailure(
                f"{name!r} at bytes [{start}, {end}) overruns {storage!r} of {arena.size} bytes",
                loc,
            )
        self.carved[name] = _Carved(storage, start, end)
        self.unwritten.add(name)
        if not self.shared:
            return _poisoned(type_)
        return arena[start:end].view(type_.dtype).reshape(type_.shape)

    def alloc_fresh(
        self, call: Call, args: list[Value], out_type: Type | None, binding: Binding | None
    ) -> Value:
        value = Interpreter.alloc_fresh(self, call, args, out_type, binding)
        self.unwritten.add(_bound_name(call, binding))
        return value

    def kill_tensor(self, call: Call, args: list[Value]) -> Value:
        value = args[0]
        if self.shared and isinstance(value, np.ndarray) and value.flags.writeable:
            value.reshape(-1).view(np.uint8)[:] = POISON
        if isinstance(call.args[0], Var):
            self.carved.pop(call.args[0].name, None)
        return ()

    def kill_storage(self, call: Call, args: list[Value]) -> Value:
        name = _var_name(call.args[0])
        self.dead_storages.add(name)
        if self.shared:
            held = np.zeros(self.storages[name].size, dtype=bool)
            for carved in self.carved.values():
                if carved.storage == name:
                    held[carved.start : carved.end] = True
            self.storages[name][~held] = POISON
        return ()

    # ------------------------------------------------------------------ kernels

    def call_kernel(self, call: Call, args: list[Value], binding: Binding | None) -> Value:
        outs, in_place = self.destinations(call, args)
        count = len(args) if in_place else len(args) - len(outs)
        out_type = self.out_type(call, outs)
        op_call = _as_op_call(call, call.args[:count])
        result = self.compute(op_call, args[:count], out_type, binding)
        results = result if isinstance(result, tuple) else (result,)
        loc = binding.loc if binding is not None else call.loc
        for index, value in zip(outs, results):
            self.write(call, index, args[index], value, loc)
        return ()

    def out_type(self, call: Call, outs: list[int]) -> Type:
        types = []
        for index in outs:
            type_ = self.types.get(_var_name(call.args[index]))
            if type_ is None:
                raise InputError(
                    f"the type of argument {index} of kernel {call.attr('kernel')!r} is not known"
                )
            types.append(type_)
        return types[0] if len(types) == 1 else TupleType(tuple(types))

    def destinations(self, call: Call, args: list[Value]) -> tuple[list[int], bool]:
        """The arguments the kernel writes, and whether they are inputs too (in place)."""
        listed = call.attr("inplace_indices")
        if listed is not None:
            items = listed if isinstance(listed, tuple) else (listed,)
            return [int(i) for i in items if isinstance(i, int)], True
        trailing: list[int] = []
        for index in range(len(args) - 1, -1, -1):
            arg = call.args[index]
            if not (isinstance(arg, Var) and arg.name in self.unwritten):
                break
            trailing.insert(0, index)
        if trailing:
            return trailing, False
        for index, value in enumerate(args):
            if (
                isinstance(value, np.ndarray)
                and value.flags.writeable
                and isinstance(call.args[index], Var)
            ):
                return [index], True
        raise ReplayFailure(
            f"kernel {call.attr('kernel')!r} writes in place, but every argument it could write "
            "is read-only (a parameter or constant, or a view of one)",
            call.loc,
        )

    def write(self, call: Call, index: int, target: Value, value: Value, loc: Loc | None) -> None:
        if not isinstance(target, np.ndarray) or not target.flags.writeable:
            raise ReplayFailure(
                f"kernel {call.attr('kernel')!r} writes into argument {index}, which is read-only "
                "(a parameter or constant, or a view of one)",
                loc,
            )
        np.copyto(target, value)  # type: ignore[arg-type]
        name = _var_name(call.args[index])
        self.unwritten.discard(name)
        self.values[name] = np.array(target, copy=True)
        self.locs[name] = loc


def _as_op_call(call: Call, in_exprs: tuple[Expr, ...]) -> Call:
    """The call a kernel stands for: the high-level op that `plan_memory` lowered (its
    `op` attribute), with the op's own attributes; else an opaque kernel by its name,
    which the mixing kernel runs as the executor runs a `call_tir` of that name."""
    op = call.attr("op")
    if isinstance(op, str):
        attrs = tuple((k, v) for k, v in call.attrs if k not in ("kernel", "op", "inplace_indices"))
        return Call(op, tuple(in_exprs), attrs)
    return Call("call_tir", tuple(in_exprs), (("kernel", str(call.attr("kernel"))),))


def _type_of(call: Call, out_type: Type | None) -> Type:
    if out_type is None:
        raise InputError(f"the type of the {call.op} call is not known")
    return out_type


def _bound_name(call: Call, binding: Binding | None) -> str:
    if binding is None:
        raise InputError(f"{call.op} must be bound to a variable")
    return binding.var.name


def _var_name(expr: Expr) -> str:
    if not isinstance(expr, Var):
        raise InputError(f"expected a variable, got {type(expr).__name__}")
    return expr.name


def _poisoned(type_: TensorType) -> np.ndarray:
    raw = np.full(type_.size_bytes, POISON, dtype=np.uint8)
    return raw.view(type_.dtype).reshape(type_.shape)
