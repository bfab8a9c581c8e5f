"""ExecuTorch program files (`.pte`) in: the memory plan ExecuTorch wrote into one, as an
optplan Problem and Plan per method and memory id, for `optplan check`.

The file is read as the FlatBuffer it is (ExecuTorch's `program.fbs`, identifier ET12),
by hand, so neither torch nor executorch is needed to check a plan. Steps:

1. Program -> execution plans (methods): each plan's values, inputs, outputs, first
   chain, operators and `non_const_buffer_sizes` (the bytes of each memory id).
2. Planned tensors: Tensor values with `allocation_info` (memory id, offset); their bytes
   are the product of their sizes (upper bounds for a bounded dynamic shape) times the
   element size.
3. Touches, over the chain's instructions: a kernel call touches its arguments (tensor
   lists expanded) and writes its last one, the value it returns (an op named `..._`
   writes in place, so it reads that value too); a delegate call writes what it touches
   first; a backward jump makes every tensor touched inside the loop live over all of it.
4. Lifetimes, half-open over instruction indices: from the first write to the last touch.
   A tensor read before any write holds bytes from before the call: a method input is
   live from the start, any other (state, such as a mutable buffer, whose bytes carry
   from one call to the next) over the whole method; an output is live to the end.
5. The sharing ExecuTorch means, as Aliases: a tensor no instruction writes (a static
   view) shares the bytes of the tensor last written at its offset before it is read; an
   output placed over one of its own op's inputs (in place, or a storage-backed output
   such as a slice update inside a cache) shares that input's bytes.
6. Per memory id, `Problem(buffers, aliases)` and `Plan(offsets, arena)` with the arena
   `non_const_buffer_sizes[id]`: `validate` judges it as it judges every planner.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from optplan.errors import InputError
from optplan.problem import Alias, Buffer, Interval, Problem
from optplan.problem.plan import Plan, Status

# ExecuTorch's ScalarType ids (scalar_type.fbs) -> bytes per element.
ELEMENT_BYTES = {0: 1, 1: 1, 2: 2, 3: 4, 4: 8, 5: 2, 6: 4, 7: 8, 11: 1, 12: 1, 13: 1, 14: 4,
                 15: 2, 16: 1, 17: 1, 22: 2, 23: 1, 24: 1, 25: 1, 26: 1, 27: 2, 28: 4, 29: 8}  # fmt: skip
# ExecuTorch's own ops that write into their first argument rather than return a value:
# a `map` body copies each iteration's result into the stacked output (its earlier rows
# are kept, but nothing before the loop is: a write, not a read of older bytes).
WRITES_FIRST_ARGUMENT = frozenset({"executorch_prim::et_copy_index"})
_TENSOR, _TENSOR_LIST, _OPTIONAL_TENSOR_LIST = 5, 10, 11  # KernelTypes union ids
_KERNEL, _DELEGATE, _MOVE, _JUMP_FALSE = 1, 2, 3, 4  # InstructionArguments union ids


@dataclass(frozen=True, slots=True)
class Tensor:
    """A planned tensor of a method: its value index, memory id, offset and bytes."""

    value: int
    mem_id: int
    offset: int
    size_bytes: int


@dataclass(frozen=True, slots=True)
class MemoryPlan:
    """One memory id of one method: the Problem ExecuTorch's plan solves and the plan."""

    method: str
    mem_id: int
    buffer_bytes: int
    problem: Problem
    plan: Plan


@dataclass(frozen=True, slots=True)
class Method:
    """What step 1 reads of one execution plan."""

    name: str
    tensors: tuple[Tensor, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    touches: tuple[tuple[int, ...], ...]  # per instruction, the values it touches
    writes: tuple[tuple[int, ...], ...]  # per instruction, the values it writes
    reads_first: tuple[tuple[int, ...], ...] = ()  # per instruction, values read before writing
    loops: tuple[tuple[int, int], ...] = ()  # (first, last) instruction of each backward jump
    buffer_bytes: tuple[int, ...] = field(default=())


class _Table:
    """A FlatBuffer table: fields by their index in the schema."""

    def __init__(self, data: bytes, pos: int) -> None:
        self.data, self.pos = data, pos
        vtable = pos - struct.unpack_from("<i", data, pos)[0]
        self.vsize = struct.unpack_from("<H", data, vtable)[0]
        self.vtable = vtable

    def _field(self, index: int) -> int:
        slot = 4 + 2 * index
        if slot >= self.vsize:
            return 0
        offset: int = struct.unpack_from("<H", self.data, self.vtable + slot)[0]
        return self.pos + offset if offset else 0

    def scalar(self, index: int, fmt: str, default: int = 0) -> int:
        at = self._field(index)
        return int(struct.unpack_from("<" + fmt, self.data, at)[0]) if at else default

    def _target(self, index: int) -> int:
        at = self._field(index)
        return at + struct.unpack_from("<I", self.data, at)[0] if at else 0

    def table(self, index: int) -> _Table | None:
        at = self._target(index)
        return _Table(self.data, at) if at else None

    def tables(self, index: int) -> list[_Table]:
        at = self._target(index)
        if not at:
            return []
        count = struct.unpack_from("<I", self.data, at)[0]
        items = (at + 4 + 4 * k for k in range(count))
        return [_Table(self.data, p + struct.unpack_from("<I", self.data, p)[0]) for p in items]

    def numbers(self, index: int, fmt: str) -> tuple[int, ...]:
        at = self._target(index)
        if not at:
            return ()
        count = struct.unpack_from("<I", self.data, at)[0]
        return tuple(int(v) for v in struct.unpack_from(f"<{count}{fmt}", self.data, at + 4))

    def string(self, index: int) -> str:
        at = self._target(index)
        if not at:
            return ""
        count = struct.unpack_from("<I", self.data, at)[0]
        return self.data[at + 4 : at + 4 + count].decode("utf-8", "replace")


def read_pte(path: str) -> list[MemoryPlan]:
    """Steps 1-6 for every method of the file; a file that is not an ExecuTorch program
    is an InputError naming it."""
    data = Path(path).read_bytes()
    if len(data) < 8 or data[4:8] != b"ET12":
        found = data[4:8].decode("ascii", "replace") if len(data) >= 8 else "too short"
        raise InputError(
            f"not an ExecuTorch program (file identifier {found!r}, expected 'ET12')", file=path
        )
    try:
        program = _Table(data, struct.unpack_from("<I", data, 0)[0])
        methods = [_method(plan) for plan in program.tables(1)]
    except (struct.error, IndexError, KeyError) as fault:
        raise InputError(f"malformed ExecuTorch program: {fault}", file=path) from None
    return [plan for method in methods for plan in memory_plans(method)]


def _method(plan: _Table) -> Method:
    """Step 1-3 for one execution plan."""
    values = plan.tables(2)
    tensors, lists = [], {}
    for index, value in enumerate(values):
        kind = value.scalar(0, "B")
        if kind in (_TENSOR_LIST, _OPTIONAL_TENSOR_LIST) and (items := value.table(1)):
            lists[index] = items.numbers(0, "i")
        if kind == _TENSOR and (tensor := value.table(1)) and (info := tensor.table(6)):
            offset = info.scalar(1, "I") | info.scalar(2, "I") << 32
            nbytes = math.prod(tensor.numbers(2, "i")) * ELEMENT_BYTES[tensor.scalar(0, "b")]
            tensors.append(Tensor(index, info.scalar(0, "I"), offset, nbytes))
    operators = [op.string(0) for op in plan.tables(6)]
    chains = plan.tables(5)
    touches, writes, reads, loops = [], [], [], []
    for at, instruction in enumerate(chains[0].tables(2) if chains else []):
        kind, args = instruction.scalar(0, "B"), instruction.table(1)
        touched, written, read = _instruction(kind, args, operators, lists)
        touches.append(touched)
        writes.append(written)
        reads.append(read)
        if kind == _JUMP_FALSE and args is not None and args.scalar(1, "i") <= at:
            loops.append((args.scalar(1, "i"), at))
    return Method(plan.string(0), tuple(tensors), plan.numbers(3, "i"), plan.numbers(4, "i"),
                  tuple(touches), tuple(writes), tuple(reads), tuple(loops),
                  plan.numbers(8, "q"))  # fmt: skip


def _instruction(
    kind: int, args: _Table | None, operators: Sequence[str], lists: dict[int, tuple[int, ...]]
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """Step 3 for one instruction: the values it touches, writes, and reads in place."""
    if args is None:
        return (), (), ()
    if kind == _MOVE:
        source, target = args.scalar(0, "i"), args.scalar(1, "i")
        return (source, target), (target,), ()
    if kind == _JUMP_FALSE:
        return (args.scalar(0, "i"),), (), ()
    if kind not in (_KERNEL, _DELEGATE):
        return (), (), ()
    raw = args.numbers(1, "i")
    touched = tuple(v for a in raw for v in (a, *lists.get(a, ())))
    if kind == _DELEGATE:
        return touched, touched, ()
    operator = operators[args.scalar(0, "i")]
    returned = raw[:1] if operator in WRITES_FIRST_ARGUMENT else raw[-1:]
    written = tuple(v for a in returned for v in (a, *lists.get(a, ())))
    in_place = operator.endswith("_")
    return touched, written, written if in_place else ()


def memory_plans(method: Method) -> list[MemoryPlan]:
    """Steps 4-6: per memory id, the problem ExecuTorch's plan must solve and the plan."""
    by_value = {t.value: t for t in method.tensors}
    first, last = _touched(method)
    views = _views(method, first, _spans(method, first, last, {}))
    spans = _spans(method, first, last, views)
    aliases = _tree(
        [Alias(str(b), str(v), 0) for v, b in views.items()] + _over_inputs(method, by_value)
    )
    plans = []
    for mem_id in sorted({t.mem_id for t in method.tensors}):
        mine = [t for t in method.tensors if t.mem_id == mem_id and t.size_bytes > 0]
        names = {str(t.value) for t in mine}
        buffers = tuple(Buffer(str(t.value), t.size_bytes, (spans[t.value],)) for t in mine)
        ties = tuple(a for a in aliases if a.base in names and a.view in names)
        problem = Problem(buffers, ties)
        arena = method.buffer_bytes[mem_id] if mem_id < len(method.buffer_bytes) else 0
        offsets = {str(t.value): t.offset for t in mine}
        plan = Plan(offsets, arena, Status.FEASIBLE, "executorch", 0)
        plans.append(MemoryPlan(method.name, mem_id, arena, problem, plan))
    return plans


def _touched(method: Method) -> tuple[dict[int, int], dict[int, int]]:
    """The first and the last instruction that touches each value."""
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    for at, touched in enumerate(method.touches):
        for value in touched:
            first.setdefault(value, at)
            last[value] = at
    return first, last


def _spans(
    method: Method, first: dict[int, int], last: dict[int, int], views: dict[int, int]
) -> dict[int, Interval]:
    """Step 4: each planned tensor's half-open lifetime over instruction indices; a view
    is live from its first touch to its last."""
    end = max(len(method.touches), 1)
    first_write: dict[int, int] = {}
    read_first = set(method.inputs)
    for at, (touched, written) in enumerate(zip(method.touches, method.writes)):
        for value in touched:
            before = first.get(value) == at and value not in first_write
            if before and (value not in written or value in method.reads_first[at]):
                read_first.add(value)
        for value in written:
            first_write.setdefault(value, at)
    spans = {}
    for tensor in method.tensors:
        value = tensor.value
        start = first_write.get(value, first.get(value, 0))
        stop = last.get(value, start) + 1
        if value in views:
            start = first.get(value, 0)
        elif value in read_first:
            start, stop = 0, (stop if value in method.inputs else end)
        if value in method.outputs:
            stop = end
        for loop in method.loops:
            start, stop = _around_loop(method, value, loop, start, stop)
        spans[value] = Interval(start, max(stop, start + 1))
    return spans


def _around_loop(
    method: Method, value: int, loop: tuple[int, int], start: int, stop: int
) -> tuple[int, int]:
    """Step 3's loops: a value read in the body before the body writes it (a value from
    before the loop, or one carried from the last iteration) is live over the whole
    body; one the body writes and the code after the loop reads is live from the body's
    start, since later iterations run while it holds."""
    first, last = loop
    if stop <= first or start > last:
        return start, stop
    inside = range(max(start, first), min(stop, last + 1))
    touched = [at for at in inside if value in method.touches[at]]
    written = [at for at in touched if value in method.writes[at]
               and value not in method.reads_first[at]]  # fmt: skip
    if not written or touched[0] < written[0]:
        return min(start, first), max(stop, last + 1)
    if stop > last + 1:
        return min(start, first), stop
    return start, stop


def _views(method: Method, first: dict[int, int], spans: dict[int, Interval]) -> dict[int, int]:
    """Step 5's static views, each to its base: a tensor no instruction writes shares the
    bytes of the tensor last written at its offset before its first touch."""
    written = {v for values in method.writes for v in values} | set(method.inputs)
    views = {}
    for tensor in method.tensors:
        if tensor.value in written or tensor.value not in first:
            continue
        read_at = first[tensor.value]
        bases = [b for b in method.tensors if b.value in written and _same_start(b, tensor)
                 and spans[b.value].start <= read_at]  # fmt: skip
        if bases:
            views[tensor.value] = max(bases, key=lambda b: spans[b.value].start).value
    return views


def _over_inputs(method: Method, by_value: dict[int, Tensor]) -> list[Alias]:
    """Step 5's outputs placed over one of their own op's inputs, at its offset and
    within its bytes: in place, or storage-backed (ExecuTorch's `storage_base`)."""
    aliases = []
    for touched, outputs in zip(method.touches, method.writes):
        for out in (by_value[v] for v in outputs if v in by_value):
            for source in (by_value[v] for v in touched if v in by_value and v not in outputs):
                if _same_start(source, out) and out.size_bytes <= source.size_bytes:
                    aliases.append(Alias(str(source.value), str(out.value), 0))
    return aliases


def _same_start(a: Tensor, b: Tensor) -> bool:
    return a.mem_id == b.mem_id and a.offset == b.offset


def _tree(aliases: list[Alias]) -> list[Alias]:
    """Each view tied once (its first base), and no tie that closes a circle."""
    parent: dict[str, str] = {}

    def root(name: str) -> str:
        while name in parent:
            name = parent[name]
        return name

    kept = []
    for alias in aliases:
        if alias.view in parent or root(alias.base) == alias.view or alias.base == alias.view:
            continue
        parent[alias.view] = alias.base
        kept.append(alias)
    return kept
