"""The planned replay across several memories: one poisoned array per memory, and every
copy the plan lists performed as a step of its own.

`Tiered` is the planned replay (`planned.Planned`) with these overrides:

1. one `uint8` array per memory, of the bytes the plan uses there, every byte POISON;
2. program point k is binding k (a program of several memories has no If); before the
   op of point k runs, every copy at k copies the buffer's bytes from its source memory
   into its target memory (both hold it at k);
3. a planned value is read where the plan says reads go at the current point (the
   cheapest memory holding its buffer) and written where its buffer is at that point
   (one memory: the judge requires it): every use of a variable makes its view afresh
   (`expr`), so a value moved since it was bound is read where it is now; views, tuples
   and tuple items are evaluated again from their binding for the same reason;
4. after the op of point k, the bytes of every residence that ends there while its
   buffer lives on are poisoned, and at a buffer's death its bytes in every memory
   holding it (the kills of `planned.Planned`).

So a plan that lets two buffers share a byte in one memory, or that reads a buffer from a
memory it was never copied into, changes some value or reads poison, and the comparison
with the reference run shows it.

    point:    3          4            5
    copies    x fast->slow             x slow->fast
    arrays    fast |x..y..|  slow |x...|
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from optplan.analysis.memory import Placement
from optplan.analysis.types import format_type
from optplan.ir import Binding, Expr, SeqExpr, TensorType, Tuple, TupleGetItem, TupleType, Type, Var
from optplan.problem.plan import Copy, Plan, Residence
from optplan.runtime.interpreter import POISON, ReplayFailure, Value
from optplan.runtime.planned import Planned, aligned_arena


@dataclass(slots=True)
class Tiered(Planned):
    """The planned replay in one array per memory, with the plan's copies."""

    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    costs: dict[str, int] = field(default_factory=dict)
    residences: dict[str, list[Residence]] = field(default_factory=dict)
    copies_at: dict[int, list[Copy]] = field(default_factory=dict)
    point: int = -1
    types: dict[str, Type | None] = field(default_factory=dict)
    again: dict[str, Expr] = field(default_factory=dict)

    # ------------------------------------------------------------------ points

    def run_binding(self, binding: Binding) -> None:
        self.arrive(self.point + 1)
        name = binding.var.name
        self.types[name] = binding.type
        if isinstance(binding.value, (Var, Tuple, TupleGetItem)):
            self.again[name] = binding.value
        Planned.run_binding(self, binding)
        self.leave()

    def seq(self, seq: SeqExpr) -> None:
        Planned.seq(self, seq)
        if seq is self.program.main.body:
            self.arrive(self.point + 1)  # the return point, where outputs are read

    def arrive(self, point: int) -> None:
        """Step 2: the copies at `point`, before its op."""
        self.point = point
        for copy in self.copies_at.get(point, []):
            source = self.bytes_of(copy.buffer, copy.source)
            target = self.bytes_of(copy.buffer, copy.target)
            np.copyto(target, source)

    def leave(self) -> None:
        """Step 4's residences ending after the current point, their buffer still live."""
        assert self.memory is not None
        for buffer, places in self.residences.items():
            live = self.memory.problem.buffer(buffer).live
            if not _holds_live(live, self.point + 1):
                continue
            for r in places:
                if _holds_live(r.live, self.point) and not _holds_live(r.live, self.point + 1):
                    self.bytes_of(buffer, r.memory).fill(POISON)

    # ------------------------------------------------------------------ where values are

    def expr(self, expr: Expr) -> Value:
        if isinstance(expr, Var) and self.memory is not None:
            name = expr.name
            if name in self.again:
                return self.expr(self.again[name])
            placement = self.memory.placements.get(name)
            if placement is not None and name in self.types:
                return self.current(placement, self.types[name])
        return Planned.expr(self, expr)

    def current(self, placement: object, type_: Type | None) -> Value:
        """The value where it is read now. A kernel's tuple may outlive some of its
        fields (only `t[0]` is read later): a field no memory holds is poison."""
        if isinstance(placement, tuple):
            assert isinstance(type_, TupleType)
            return tuple(self.current(p, t) for p, t in zip(placement, type_.fields))
        assert isinstance(placement, Placement)
        held = any(
            _holds_live(r.live, self.point) for r in self.residences.get(placement.buffer, [])
        )
        if not held and isinstance(type_, TensorType):
            return (
                np.full(type_.size_bytes, POISON, np.uint8).view(type_.dtype).reshape(type_.shape)
            )
        return self.view(placement, type_)

    def view(self, placement: Placement, type_: Type | None) -> np.ndarray:
        if not isinstance(type_, TensorType):
            raise ReplayFailure(f"buffer {placement.buffer!r} holds a {format_type(type_)}", None)
        memory = self.read_memory(placement.buffer)
        whole = self.bytes_of(placement.buffer, memory)
        if type_.size_bytes > whole.size:
            raise ReplayFailure(
                f"{type_.size_bytes} bytes read from buffer {placement.buffer!r} of {whole.size}",
                None,
            )
        return whole[: type_.size_bytes].view(type_.dtype).reshape(type_.shape)

    def read_memory(self, buffer: str) -> str:
        """The cheapest memory holding `buffer` at the current point."""
        held = [
            r.memory for r in self.residences.get(buffer, []) if _holds_live(r.live, self.point)
        ]
        if not held:
            raise ReplayFailure(
                f"the plan holds buffer {buffer!r} in no memory at point {self.point}", None
            )
        return min(held, key=lambda m: (self.costs[m], list(self.costs).index(m)))

    def bytes_of(self, buffer: str, memory: str) -> np.ndarray:
        assert self.memory is not None
        size = self.memory.problem.buffer(buffer).size
        for r in self.residences.get(buffer, []):
            if r.memory == memory:
                array = self.arrays[memory]
                if r.offset < 0 or r.offset + size > array.size:
                    raise ReplayFailure(f"buffer {buffer!r} lies outside memory {memory!r}", None)
                return array[r.offset : r.offset + size]
        raise ReplayFailure(f"the plan never puts buffer {buffer!r} in memory {memory!r}", None)

    def poison(self, buffers: tuple[str, ...]) -> None:
        for buffer in buffers:
            for r in self.residences.get(buffer, []):
                if _holds_live(r.live, self.point):
                    self.bytes_of(buffer, r.memory).fill(POISON)


def _holds_live(live: tuple, point: int) -> bool:  # type: ignore[type-arg]
    return any(iv.start <= point < iv.end for iv in live)


def tiered_machine(planned: Planned, plan: Plan, costs: dict[str, int]) -> Tiered:
    """A Tiered replay of `plan`, with the settings of `planned`."""
    assert planned.memory is not None
    sizes = {b.id: b.size for b in planned.memory.problem.buffers}
    used: dict[str, int] = dict.fromkeys(costs, 0)
    residences: dict[str, list[Residence]] = {}
    for r in plan.residences:
        residences.setdefault(r.buffer, []).append(r)
        used[r.memory] = max(used.get(r.memory, 0), r.offset + sizes.get(r.buffer, 0))
    copies_at: dict[int, list[Copy]] = {}
    for c in plan.copies:
        copies_at.setdefault(c.point, []).append(c)
    return Tiered(
        planned.program,
        planned.inputs,
        keep_values=planned.keep_values,
        copy_values=True,
        memory=planned.memory,
        arrays={name: aligned_arena(size) for name, size in used.items()},
        costs=costs,
        residences=residences,
        copies_at=copies_at,
    )
