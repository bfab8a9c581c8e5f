"""The planned replay in one arena: the reference interpreter with its values at the
plan's offsets and kills that poison (`Planned`); see `replay` for the steps.

    arena:  |..lv0..|..lv1..|.......lv2.......|      A5 A5 A5 = poison, rewritten at kills
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from optplan.analysis.memory import NO_RELEASES, MemoryFacts, Placement, Releases
from optplan.analysis.types import format_type
from optplan.errors import InputError
from optplan.ir import Binding, Call, TensorType, TupleType, Type
from optplan.ops import lookup, overwritten_args
from optplan.runtime.interpreter import (
    POISON,
    Interpreter,
    KernelFailure,
    ReplayFailure,
    Value,
    flat_arrays,
)

ARENA_ALIGNMENT_BYTES = 64


def aligned_arena(size_bytes: int) -> np.ndarray:
    """A poisoned byte array whose first byte is 64-byte aligned, like a runtime's arena."""
    raw = np.empty(size_bytes + ARENA_ALIGNMENT_BYTES, dtype=np.uint8)
    start = (-raw.ctypes.data) % ARENA_ALIGNMENT_BYTES
    arena = raw[start : start + size_bytes]
    arena.fill(POISON)
    return arena


@dataclass(slots=True)
class Planned(Interpreter):
    """The reference interpreter with its values in one arena, and kills that poison."""

    memory: MemoryFacts | None = None
    offsets: dict[str, int] = field(default_factory=dict)
    arena: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint8))

    def placement(self, binding: Binding | None) -> object:
        if binding is None or self.memory is None:
            return None
        return self.memory.placements.get(binding.var.name)

    def place(self, binding: Binding | None, value: Value) -> Value:
        if binding is None:
            return value
        return self.store(self.placement(binding), value, binding.type)

    def if_value(self, binding: Binding, result: Value) -> Value:
        placement = self.placement(binding)
        if placement is None:
            return Interpreter.if_value(self, binding, result)
        return self.store(placement, result, binding.type)

    def enter_branch(self, binding: Binding, taken: bool) -> None:
        self.poison(self.released(binding).entry(taken))

    def after(self, binding: Binding, taken: bool | None) -> None:
        released = self.released(binding)
        self.poison(released.after if taken is None else released.exit(taken))

    def call_op(
        self, call: Call, args: list[Value], out_type: Type | None, binding: Binding | None
    ) -> Value:
        placement = self.placement(binding)
        op = lookup(call.op)
        if (
            isinstance(placement, Placement)
            and op is not None
            and op.into is not None
            and not overwritten_args(call)
        ):
            # Destination passing proper: the kernel writes its output view, no copy.
            view = self.view(placement, out_type)
            try:
                with np.errstate(all="ignore"):
                    if op.into(call, args, view):
                        return view
            except (InputError, ReplayFailure):
                raise
            except Exception as error:  # noqa: BLE001 - any kernel fault is one line naming the node
                raise KernelFailure.of(call, binding, error) from None
        return Interpreter.call_op(self, call, args, out_type, binding)

    def kill_tensor(self, call: Call, args: list[Value]) -> Value:
        """A killed tensor's bytes are poisoned, so a read after the kill shows. (A storage
        kill only drops a reference: tensors carved from it live on.)"""
        for target in flat_arrays(tuple(args)):
            if target.flags.writeable and target.flags.c_contiguous:
                target.reshape(-1).view(np.uint8).fill(POISON)
        return ()

    # ------------------------------------------------------------------ the arena

    def released(self, binding: Binding) -> Releases:
        if self.memory is None:
            return NO_RELEASES
        return self.memory.released(binding.var.name)

    def view(self, placement: Placement, type_: Type | None) -> np.ndarray:
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

    def store(self, placement: object, value: Value, type_: Type | None) -> Value:
        """`value` stored at `placement` (copied there unless it already is there)."""
        if placement is None:
            return value
        if isinstance(placement, tuple):
            assert isinstance(value, tuple) and isinstance(type_, TupleType)
            return tuple(self.store(p, v, t) for p, v, t in zip(placement, value, type_.fields))
        assert isinstance(placement, Placement) and isinstance(value, np.ndarray)
        view = self.view(placement, type_)
        if not _same_bytes(view, value):
            np.copyto(view, value)
        return view

    def poison(self, buffers: tuple[str, ...]) -> None:
        if self.memory is None:
            return
        for buffer in buffers:
            start = self.offsets.get(buffer)
            if start is not None:
                self.arena[start : start + self.memory.problem.buffer(buffer).size] = POISON


def _same_bytes(a: np.ndarray, b: np.ndarray) -> bool:
    return (
        isinstance(b, np.ndarray)
        and a.nbytes == b.nbytes
        and a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
        and b.flags.c_contiguous
    )
