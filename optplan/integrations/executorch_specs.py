"""ExecuTorch's specs as a Problem of several memories, and any algorithm's result judged.

What `executorch_memories` plans and what the tests and benchmarks judge, derived once per
graph (`derive`):

1. `accesses`: where each spec is written and read, from the graph ExecuTorch plans
   (node k is program point k, as in ExecuTorch's lifetimes): written by the node that
   outputs it (or at its placeholder), read once by each node that takes it (the output
   node too: the caller reads outputs); `alloc`, `view` and `getitem` nodes access
   nothing. Each spec is named after the node that makes it.
2. `memory_problem`: one Problem over every memory id. A spec a custom pool pass pinned
   to a declared id may use only that memory; one pinned to an undeclared id goes to a
   memory of its own, unbounded and free (not ours to weigh), which no other spec may
   use. A storage-backed spec is an Alias of its base. Each bounded memory holds what
   `rooms_of` leaves: its capacity less the bytes a control-flow submodule set aside at
   its start (`start_of`) and the delegate's padding.
3. `judge`: a `MemoryAlgoResult` as a plan of that problem: `validate` on every spec's
   residence (its offset after the bytes set aside), each id's buffer against its
   capacity, and the traffic per memory: bytes written and read there times its cost.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from optplan.problem import Alias, Buffer, Interval, Memory, Problem
from optplan.problem.plan import Plan, Residence, Status, validate

# (mem_id, Memory) pairs: the memories a caller declared, in their order (fast first).
Ids = tuple[tuple[int, Memory], ...]


@dataclass(frozen=True, slots=True)
class MemoryUse:
    """One memory id after planning: `buffer_bytes` is ExecuTorch's buffer for it (the
    bytes a submodule set aside and the padding included), `capacity` its limit (None:
    unbounded), `traffic` the bytes written and read there times the memory's cost."""

    mem_id: int
    name: str
    buffer_bytes: int
    capacity: int | None
    traffic: int
    specs: int

    @property
    def fits(self) -> bool:
        return self.capacity is None or self.buffer_bytes <= self.capacity

    def summary(self) -> str:
        room = "unbounded" if self.capacity is None else f"of {self.capacity}"
        over = "" if self.fits else " OVER CAPACITY"
        return (
            f"{self.name} (mem_id {self.mem_id}) {self.buffer_bytes} bytes {room}{over}, "
            f"{self.specs} specs, traffic {self.traffic}"
        )


@dataclass(frozen=True, slots=True)
class Judgement:
    """An algorithm's result as optplan sees it: each id's use, what `validate` found
    wrong with its offsets (capacities aside: `uses` say those), and its traffic."""

    uses: tuple[MemoryUse, ...]
    violations: tuple[str, ...]

    @property
    def traffic(self) -> int:
        return sum(use.traffic for use in self.uses)

    @property
    def fits(self) -> bool:
        return all(use.fits for use in self.uses)


@dataclass(frozen=True, slots=True)
class Accesses:
    """Per spec (by `id`): the points where it is written and read, and its name;
    `nodes[k]` names program point k."""

    writes: dict[int, tuple[int, ...]]
    reads: dict[int, tuple[int, ...]]
    names: dict[int, str]
    nodes: tuple[str, ...] = ()

    def where(self, message: str) -> str:
        """`message` with each 'point k' followed by the node at k."""

        def named(found: re.Match[str]) -> str:
            point = int(found.group(1))
            node = f" (node {self.nodes[point]})" if 0 <= point < len(self.nodes) else ""
            return f"{found.group(0)}{node}"

        return re.sub(r"\bpoint (\d+)", named, message)


@dataclass(frozen=True, slots=True)
class Specs:
    """One graph's specs as planning and judging take them, derived once (`derive`):
    `names[k]` is the buffer id of `group[k]`, `reserved` the bytes set aside per id,
    `by_id` every memory id the specs may use."""

    ids: Ids
    group: list[Any]
    names: list[str]
    seen: Accesses
    reserved: list[int]
    by_id: dict[int, Memory]
    alignment: int
    padding: int

    def problem(self, rooms: Mapping[int, int | None]) -> Problem:
        """Step 2 with memory id m holding at most `rooms[m]` bytes (None: unbounded)."""
        return memory_problem(self, rooms)

    def start(self, mem_id: int) -> int:
        return start_of(mem_id, self.by_id[mem_id], self.reserved, self.alignment)


def derive(
    ids: Ids, alignment: int, specs: Sequence[Any], graph_module: Any, padding: int
) -> Specs:
    """The specs of one call of the algorithm (already realigned), with their graph."""
    group = list(specs)
    check_bases(group, graph_module)
    seen = accesses(graph_module)
    return Specs(
        ids, group, spec_names(group, seen), seen, reserved_bytes(graph_module),
        memory_of(ids, group), alignment, padding,
    )  # fmt: skip


# ---------------------------------------------------------------------------- 1. accesses


def accesses(graph_module: Any) -> Accesses:
    """Step 1: where each spec of `graph_module` is written and read, and its name."""
    from executorch.exir import memory
    from executorch.exir.memory_planning import filter_nodes, get_node_tensor_specs

    silent = (memory.alloc, memory.view, operator.getitem)
    writes: dict[int, list[int]] = {}
    reads: dict[int, list[int]] = {}
    names: dict[int, str] = {}
    for point, node in enumerate(graph_module.graph.nodes):
        own = [s for s in get_node_tensor_specs(node) if s is not None]
        if node.target is not memory.alloc and node.target is not memory.view:
            for k, spec in enumerate(own):
                names.setdefault(id(spec), node.name if len(own) == 1 else f"{node.name}[{k}]")
        if node.op == "get_attr" or node.target in silent:
            continue
        if node.op != "output":  # the output node only reads: the caller takes them
            for spec in own:
                writes.setdefault(id(spec), []).append(point)
        taken = {
            id(spec)
            for arg in filter_nodes([*node.args, *node.kwargs.values()])
            if arg.target is not memory.alloc  # an out= buffer is written, not read
            for spec in get_node_tensor_specs(arg)
            if spec is not None
        }
        for key in taken:
            reads.setdefault(key, []).append(point)
    nodes = tuple(node.name for node in graph_module.graph.nodes)
    return Accesses(
        {k: tuple(v) for k, v in writes.items()},
        {k: tuple(v) for k, v in reads.items()},
        names,
        nodes,
    )


# ---------------------------------------------------------------------------- 2. the problem


def reserved_bytes(graph_module: Any) -> list[int]:
    """The bytes control-flow submodules set aside at the start of each memory id."""
    return list(getattr(graph_module, "input_mem_buffer_sizes", None) or [])


def memory_of(ids: Ids, specs: Iterable[Any]) -> dict[int, Memory]:
    """Every memory id the plan may use: the declared ones, and for each id a pool pass
    pinned a spec to without declaring it, an unbounded memory that costs nothing."""
    found = dict(ids)
    for spec in specs:
        if spec.mem_id is not None and spec.mem_id not in found:
            found[spec.mem_id] = Memory(f"mem_id {spec.mem_id}", None, 1, 0)
    return found


def memory_problem(given: Specs, rooms: Mapping[int, int | None]) -> Problem:
    """Step 2: the specs over every memory id, id m holding at most `rooms[m]` bytes."""
    declared = tuple(memory.name for _, memory in given.ids)
    memories = tuple(
        replace(memory, capacity=rooms[m]) for m, memory in sorted(given.by_id.items())
    )
    index = {id(spec): k for k, spec in enumerate(given.group)}
    buffers, aliases = [], []
    for k, spec in enumerate(given.group):
        if spec.allocated_memory <= 0:
            continue
        pin = root(spec).mem_id
        allowed = declared if pin is None else (given.by_id[pin].name,)
        live = spec_interval(spec)
        writes = _inside(given.seen.writes.get(id(spec)), live)
        reads = _inside(given.seen.reads.get(id(spec)), live, empty=True)
        size = spec.allocated_memory
        buffers.append(
            Buffer(
                given.names[k],
                size,
                (live,),
                given.alignment,
                memories=allowed,
                writes=writes,
                reads=reads,
            )
        )
        base = spec.storage_base
        if base is not None and id(base) in index:  # in place, or a view: inside its base
            aliases.append(
                Alias(
                    given.names[index[id(base)]],
                    given.names[k],
                    storage_offset(spec, given.alignment),
                )
            )
    return Problem(tuple(buffers), tuple(aliases), memories=memories)


def storage_offset(spec: Any, alignment: int) -> int:
    """A storage-backed spec's byte offset inside its base. ExecuTorch places it at its
    base's offset plus this and requires a multiple of the alignment, which no plan can
    give when this offset is not one itself: a ValueError that says so."""
    offset = int(spec.storage_base_offset)
    if offset % alignment:
        raise ValueError(
            f"ExecuTorch handed over a storage-backed spec at storage_base_offset {offset} "
            f"inside its base, not a multiple of the alignment {alignment}: no offset of "
            f"its base can align it ({spec})"
        )
    return offset


def spec_interval(spec: Any) -> Interval:
    """A spec's half-open life: ExecuTorch's lifetimes are inclusive."""
    start, last = spec.lifetime
    if start is None or last is None:
        raise ValueError(f"ExecuTorch handed over a spec without a lifetime: {spec}")
    return Interval(int(start), int(last) + 1)


def _inside(
    points: tuple[int, ...] | None, live: Interval, *, empty: bool = False
) -> tuple[int, ...] | None:
    """The points inside `live`; None (the defaults) when none were seen, or for reads
    when the spec was never found (an empty tuple when it was found and never read)."""
    kept = tuple(p for p in points or () if live.start <= p < live.end)
    if kept or (empty and points is not None):
        return kept
    return None


def root(spec: Any) -> Any:
    """The spec whose bytes a storage-backed spec lives in (itself if none)."""
    seen = {id(spec)}
    while getattr(spec, "storage_base", None) is not None:
        spec = spec.storage_base
        if id(spec) in seen:
            raise ValueError(f"ExecuTorch handed over a circle of storage bases through {spec}")
        seen.add(id(spec))
    return spec


def check_bases(group: Sequence[Any], graph_module: Any) -> None:
    """Every storage-backed spec's base is among `group`: ExecuTorch places such a spec
    inside its base, so the two are planned together, or the spec cannot be placed at
    all. A ValueError that names the first spec whose base is missing."""
    present = {id(spec) for spec in group}
    for k, spec in enumerate(group):
        base = getattr(spec, "storage_base", None)
        if base is None or id(base) in present:
            continue
        name = _name_of(spec, graph_module, k)
        raise ValueError(
            f"ExecuTorch handed over a storage-backed spec {name!r} ({spec.allocated_memory} "
            f"bytes, lifetime {list(spec.lifetime)}) whose base is not among the specs to "
            "plan (left out by alloc_graph_input=False or alloc_graph_output=False, or a "
            "mutable buffer shared across methods): it lives inside its base, so the base "
            "must be planned with it"
        )


def _name_of(spec: Any, graph_module: Any, k: int) -> str:
    """The node that makes `spec`, or its position among the specs without a graph."""
    if getattr(graph_module, "graph", None) is None:
        return f"spec{k}"
    return accesses(graph_module).names.get(id(spec), f"spec{k}")


def spec_names(group: Sequence[Any], seen: Accesses) -> list[str]:
    """Buffer ids: each spec's node name, made unique by its position where two clash."""
    names = [seen.names.get(id(spec), f"spec{k}") for k, spec in enumerate(group)]
    counts: dict[str, int] = {}
    for name in names:
        counts[name] = counts.get(name, 0) + 1
    return [name if counts[name] == 1 else f"{name}#{k}" for k, name in enumerate(names)]


def rooms_of(given: Specs) -> dict[int, int | None]:
    """Step 2's capacities: each bounded memory's limit less the bytes set aside at its
    start and the padding after it."""
    rooms: dict[int, int | None] = {}
    for mem_id, memory in given.by_id.items():
        if memory.capacity is None:
            rooms[mem_id] = None
        else:
            rooms[mem_id] = max(0, memory.capacity - given.start(mem_id) - given.padding)
    return rooms


def start_of(mem_id: int, memory: Memory, reserved: Sequence[int], alignment: int) -> int:
    """Where optplan's bytes start in a memory id: after a submodule's, kept aligned."""
    before = reserved[mem_id] if mem_id < len(reserved) else 0
    step = math.lcm(alignment, memory.alignment)
    return -(-before // step) * step


# ---------------------------------------------------------------------------- 3. the judge


def judge(
    ids: Ids, alignment: int, specs: Sequence[Any], graph_module: Any, result: Any
) -> Judgement:
    """Step 3: `result` (any algorithm's, on these realigned specs) judged as a plan of the
    memories `ids`: `validate` on every spec's residence, and each id's use."""
    given = derive(ids, alignment, specs, graph_module, 0)
    problem = given.problem({m: None for m in given.by_id})
    sizes = {b.id: b.size for b in problem.buffers}
    faults: list[str] = []
    residences = []
    for spec, name in zip(given.group, given.names):
        got = result.spec_dict[spec]
        memory = given.by_id.get(got.mem_id)
        if memory is None:
            faults.append(f"spec {name!r} is in mem_id {got.mem_id}, which no memory declares")
        elif name in sizes:
            offset = got.mem_offset - given.start(got.mem_id)
            residences.append(Residence(name, memory.name, offset, (spec_interval(spec),)))
    uses = _uses(given, problem, residences, result.bufsizes)
    if not faults:
        claimed = sum(use.traffic for use in uses)
        offsets = {r.buffer: r.offset for r in residences}
        plan = Plan(offsets, 0, Status.FEASIBLE, "judged", 0, residences=tuple(residences),
                    traffic=claimed)  # fmt: skip
        faults = [str(v) for v in validate(problem, plan)]
    return Judgement(uses, tuple(faults))


def _uses(
    given: Specs, problem: Problem, residences: Sequence[Residence], bufsizes: Sequence[int]
) -> tuple[MemoryUse, ...]:
    """Each memory id's buffer bytes, capacity, traffic and spec count."""
    traffic: dict[str, int] = {}
    count: dict[str, int] = {}
    for r in residences:
        b, cost = problem.buffer(r.buffer), problem.memory(r.memory).cost
        traffic[r.memory] = traffic.get(r.memory, 0) + b.size * cost * (
            len(b.written_at) + len(b.read_at)
        )
        count[r.memory] = count.get(r.memory, 0) + 1
    uses = []
    for mem_id, memory in sorted(given.by_id.items()):
        size = bufsizes[mem_id] if mem_id < len(bufsizes) else 0
        name = memory.name
        uses.append(
            MemoryUse(mem_id, name, size, memory.capacity, traffic.get(name, 0), count.get(name, 0))
        )
    return tuple(uses)
