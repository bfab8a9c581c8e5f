"""An independent judge of memory objects (`mem_obj_id`) in any algorithm's
`MemoryAlgoResult`, for tests/test_executorch_objects.py and
`benchmarks/executorch_objects.py`. It reads only the result and the specs, and shares
no code with optplan's objects.

What a backend that allocates each object alone (Vulkan's) needs, and what ExecuTorch's
greedy gives:

- every spec has an object id, an int >= 0, numbered 0, 1, ... within each memory id;
- a storage-backed spec is in its base's memory id and object, at its base's offset plus
  its `storage_base_offset`;
- an object is the run of bytes from its lowest spec to its highest; the runs of two
  objects of one memory id share no byte, and each lies inside its buffer;
- two specs of one object alive at once (inclusive lifetimes) with different roots: with
  overlapping allocations allowed, they share no byte; without, they are a fault, and
  every root spec sits at its object's start.
"""

from __future__ import annotations

import functools
import itertools
from collections import defaultdict
from collections.abc import Iterable
from typing import Any


def _root(spec: Any) -> Any:
    while spec.storage_base is not None:
        spec = spec.storage_base
    return spec


def _alive_together(a: Any, b: Any) -> bool:
    return not (a.lifetime[1] < b.lifetime[0] or a.lifetime[0] > b.lifetime[1])


def extents(specs: Iterable[Any], result: Any) -> dict[tuple[int, int], tuple[int, int]]:
    """(mem_id, mem_obj_id) -> the object's bytes [start, end) (start == end: none)."""
    spans: dict[tuple[int, int], tuple[int, int]] = {}
    for spec in specs:
        got = result.spec_dict[spec]
        key = (got.mem_id, got.mem_obj_id)
        low, high = got.mem_offset, got.mem_offset + spec.allocated_memory
        if key in spans:
            low, high = min(low, spans[key][0]), max(high, spans[key][1])
        spans[key] = (low, high)
    return spans


def object_bytes(specs: Iterable[Any], result: Any) -> tuple[int, int]:
    """The bytes over all objects (each object's run) and how many objects there are."""
    spans = extents(list(specs), result)
    return sum(high - low for low, high in spans.values()), len(spans)


def object_faults(specs: list[Any], result: Any, allow_overlapping: bool) -> list[str]:
    """Every way the result's objects break the rules above, as sentences."""
    faults = _ids_and_views(specs, result)
    spans = extents(specs, result)
    by_id: dict[int, list[tuple[int, int, int]]] = defaultdict(list)
    for (mem_id, obj), (low, high) in spans.items():
        by_id[mem_id].append((low, high, obj))
        if high > result.bufsizes[mem_id]:
            faults.append(f"object {obj} of mem_id {mem_id} ends at {high}, past its buffer")
    for mem_id, runs in by_id.items():
        runs.sort()
        for (_, high, a), (low, _, b) in itertools.pairwise(runs):
            if low < high:
                faults.append(f"objects {a} and {b} of mem_id {mem_id} share bytes")
    members: dict[tuple[int, int], list[Any]] = defaultdict(list)
    for spec in specs:
        got = result.spec_dict[spec]
        members[got.mem_id, got.mem_obj_id].append(spec)
    for key, held in members.items():
        faults += _within(key, held, result, spans[key][0], allow_overlapping)
    return faults


def _ids_and_views(specs: list[Any], result: Any) -> list[str]:
    faults = []
    ids: dict[int, set[int]] = defaultdict(set)
    for spec in specs:
        got = result.spec_dict[spec]
        if not isinstance(got.mem_obj_id, int) or got.mem_obj_id < 0:
            faults.append(f"{spec}: mem_obj_id {got.mem_obj_id!r} is not an int >= 0")
            continue
        ids[got.mem_id].add(got.mem_obj_id)
        base = spec.storage_base
        if base is not None:
            there = result.spec_dict[base]
            if (got.mem_id, got.mem_obj_id) != (there.mem_id, there.mem_obj_id):
                faults.append(f"{spec}: not in its base's object")
            if got.mem_offset != there.mem_offset + spec.storage_base_offset:
                faults.append(f"{spec}: not at its base's offset plus its storage offset")
    for mem_id, found in ids.items():
        if found != set(range(len(found))):
            faults.append(f"mem_id {mem_id}: objects {sorted(found)} are not 0, 1, ...")
    return faults


def _within(
    key: tuple[int, int], held: list[Any], result: Any, start: int, allow: bool
) -> list[str]:
    faults = []
    for k, a in enumerate(held):
        if not allow and a.storage_base is None and result.spec_dict[a].mem_offset != start:
            faults.append(f"object {key}: {a} is not at the object's start")
        for b in held[k + 1 :]:
            if _root(a) is _root(b) or not _alive_together(a, b):
                continue
            if not allow:
                faults.append(f"object {key}: {a} and {b} are alive together")
                continue
            ra, rb = result.spec_dict[a], result.spec_dict[b]
            if (
                ra.mem_offset < rb.mem_offset + b.allocated_memory
                and rb.mem_offset < ra.mem_offset + a.allocated_memory
            ):
                faults.append(f"object {key}: {a} and {b} share bytes while alive together")
    return faults


class Beside:
    """An algorithm for ExecuTorch's suite that, on every call, plans the specs with
    greedy and with optplan, each with overlapping allocations allowed and not; judges
    every result; records (label, allowed) -> (object bytes, objects, buffer bytes,
    faults) per call in `calls`; and returns optplan's result with `keep` allowed."""

    def __init__(self, keep: bool, work: float | None = None) -> None:
        self.keep, self.work = keep, work
        self.calls: list[dict[tuple[str, bool], tuple[int, int, int, list[str]]]] = []
        self.reports: list[Any] = []  # optplan's PlanReport per call, without overlap
        self.__name__ = "beside_objects"

    def __call__(
        self, alignment: int, specs: Any, module: Any, signature: Any, padding: int = 0
    ) -> Any:
        from executorch.exir.memory_planning import greedy

        import optplan.executorch as oet

        specs = list(specs)
        row: dict[tuple[str, bool], tuple[int, int, int, list[str]]] = {}
        kept = None
        for allow in (True, False):
            extra = {} if self.work is None else {"work": self.work}
            for label, algo in (
                ("greedy", functools.partial(greedy, allow_overlapping_allocations=allow)),
                (
                    "optplan",
                    oet.algorithm(
                        allow_overlapping_allocations=allow,
                        report=None if allow else self.reports.append,
                        **extra,
                    ),
                ),
            ):
                result = algo(alignment, specs, module, signature, padding)
                total, count = object_bytes(specs, result)
                faults = object_faults(specs, result, allow)
                row[label, allow] = (total, count, sum(result.bufsizes), faults)
                if label == "optplan" and allow == self.keep:
                    kept = result
        self.calls.append(row)
        return kept
