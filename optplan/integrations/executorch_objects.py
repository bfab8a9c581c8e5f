"""Memory objects (`mem_obj_id`) for ExecuTorch's backends that allocate each one alone.

ExecuTorch's greedy groups the specs of each memory id into shared objects: `mem_obj_id`
numbers them from 0 within the id; an object is one run of the buffer's bytes, objects
lie one after another, and a backend that allocates per object (Vulkan's) gives each its
own block, every tensor of it bound at the block's start. `allow_overlapping_allocations`
says what an object may hold:

- True (greedy's default; the CPU runtime reads offsets only): tensors alive together at
  different offsets of one object. A plan of offsets has objects already: `cut` splits a
  buffer wherever no tensor crosses, one object per run of bytes between cuts, so the
  objects total the arena (less any bytes no tensor uses) and the least total over
  objects is the least arena, which the planner proves.
- False (Vulkan's): every allocation at its object's start, so no two of one object are
  alive at once, and an object is as large as its largest allocation. Choosing objects
  then colours an interval graph with the least sum over colours of the largest weight
  in each (max-colouring, NP-hard on interval graphs). `pack`:

    1. Units: one per allocation, a root spec with the storage-backed specs inside it
       (`units_of`), live over the hull of their lives, as high as their furthest byte.
    2. First fit by decreasing size, greedy's own rule: each unit into the first object
       none of whose units it meets in time, else into a new one; and the same into the
       smallest such object; the better of the two.
    3. The bound: at any point the j largest live units sit in j different objects, so
       the j-th largest object is at least the j-th largest live unit there; summed over
       j, the largest j-th live unit over all points.
    4. Unless 2 meets 3: CP-SAT, hinted with 2. Units in the order of 2; each either
       leads an object (its first and largest: it pays its size) or joins the object of
       an earlier unit it does not meet; at each maximal clique of lives (a point where
       a unit starts and none ends before the next start) an object holds at most one.

              time ->            objects (False)        one object (True)
       a  ######                 0: a, c   (8 bytes)    a at 0, b at 8,
       b     ####                1: b      (4 bytes)    c at 0: 12 bytes
       c          ######
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from optplan.budget import Budget
from optplan.integrations.executorch_objects_model import Unit, improve
from optplan.integrations.executorch_specs import root, spec_interval, storage_offset
from optplan.problem.plan import Plan, Status


@dataclass(frozen=True, slots=True)
class Objects:
    """Units grouped into objects: `of[u]` is unit u's object, `sizes[k]` object k's
    bytes (its largest unit); `bound` the least total any grouping reaches, as proven."""

    of: tuple[int, ...]
    sizes: tuple[int, ...]
    bound: int
    status: Status

    @property
    def total(self) -> int:
        return sum(self.sizes)


# ---------------------------------------------------------------------------- True: cut


def cut(ranges: Sequence[tuple[int, int]]) -> list[int]:
    """The object of each byte range `[offset, offset + size)` of one buffer: ranges
    that share a byte, directly or through others, are one object; objects are numbered
    in the order of their offsets. A range of no bytes joins the object whose bytes hold
    its offset, or, where none does, an object of no bytes of its own."""
    order = sorted((o, o + s) for o, s in ranges if s > 0)
    runs: list[list[int]] = []
    for start, end in order:
        if runs and start < runs[-1][1]:
            runs[-1][1] = max(runs[-1][1], end)
        else:
            runs.append([start, end])
    empty = [(o, o) for o, s in ranges if s <= 0 and _inside(runs, o) is None]
    number = {key: n for n, key in enumerate(sorted({*((r[0], r[1]) for r in runs), *empty}))}
    objects = []
    for offset, _ in ranges:
        run = _inside(runs, offset)  # a range of bytes always lies in its own run
        objects.append(number[(run[0], run[1]) if run else (offset, offset)])
    return objects


def _inside(runs: list[list[int]], offset: int) -> list[int] | None:
    """The run whose bytes hold `offset`, if any."""
    k = bisect.bisect_right([r[0] for r in runs], offset) - 1
    return runs[k] if k >= 0 and offset < runs[k][1] else None


# ---------------------------------------------------------------------------- False: pack


def units_of(group: Sequence[Any], alignment: int) -> tuple[list[Unit], list[int], list[int]]:
    """Step 1 for the specs of one memory id (realigned): the units, and for each spec
    its unit and its byte offset inside the unit (its storage offsets, summed)."""
    index = {id(spec): k for k, spec in enumerate(group)}
    roots = [k for k, spec in enumerate(group) if root(spec) is spec]
    unit_of_root = {k: u for u, k in enumerate(roots)}
    hulls = [[*_life(group[k]), 0] for k in roots]
    unit, delta = [], []
    for spec in group:
        inside, at = 0, spec
        while at.storage_base is not None:
            inside += storage_offset(at, alignment)
            at = at.storage_base
        u = unit_of_root[index[id(at)]]
        start, end = _life(spec)
        hull = hulls[u]
        hull[0], hull[1] = min(hull[0], start), max(hull[1], end)
        hull[2] = max(hull[2], inside + spec.allocated_memory)
        unit.append(u)
        delta.append(inside)
    return [Unit(*hull) for hull in hulls], unit, delta


def _life(spec: Any) -> tuple[int, int]:
    live = spec_interval(spec)
    return live.start, live.end


def order_of(units: Sequence[Unit]) -> list[int]:
    """Largest first; ties by start, then end, then position: the same on every run."""
    return sorted(
        range(len(units)), key=lambda u: (-units[u].size, units[u].start, units[u].end, u)
    )


def first_fit(units: Sequence[Unit], *, smallest: bool = False) -> list[int]:
    """Step 2: each unit's object, objects numbered in the order they open: the first
    object that takes the unit, or with `smallest` the smallest (the first of those),
    which keeps large objects free for the large units still to come."""
    members: list[list[int]] = []
    sizes: list[int] = []
    of = [0] * len(units)
    for u in order_of(units):
        free = [
            k for k, held in enumerate(members) if not any(units[u].meets(units[v]) for v in held)
        ]
        if free:
            k = min(free, key=lambda k: (sizes[k], k)) if smallest else free[0]
            members[k].append(u)
        else:
            k = len(members)
            members.append([u])
            sizes.append(units[u].size)
        of[u] = k
    return of


def level_bound(units: Sequence[Unit]) -> int:
    """Step 3: the sum over j of the largest j-th largest live unit at any point."""
    best: list[int] = []
    for point in sorted({u.start for u in units}):
        live = sorted((u.size for u in units if u.start <= point < u.end), reverse=True)
        best += [0] * (len(live) - len(best))
        best[: len(live)] = [max(b, a) for b, a in zip(best, live)]
    return sum(best)


def sizes_of(units: Sequence[Unit], of: Sequence[int]) -> tuple[int, ...]:
    sizes = [0] * (max(of, default=-1) + 1)
    for unit, k in zip(units, of):
        sizes[k] = max(sizes[k], unit.size)
    return tuple(sizes)


def pack(units: Sequence[Unit], budget: Budget) -> Objects:
    """Steps 2-4: objects of units no two of which are alive at once, least total first."""
    of = min(
        (first_fit(units), first_fit(units, smallest=True)), key=lambda g: sum(sizes_of(units, g))
    )
    bound = level_bound(units)
    optimal = sum(sizes_of(units, of)) <= bound
    if not optimal:
        found, proven, optimal = improve(units, order_of(units), of, budget)
        if sum(sizes_of(units, found)) < sum(sizes_of(units, of)):
            of = found
        bound = max(bound, proven)
    of = renumber(units, of)
    sizes = sizes_of(units, of)
    status = Status.OPTIMAL if optimal or sum(sizes) <= bound else Status.FEASIBLE
    return Objects(tuple(of), sizes, bound, status)


def renumber(units: Sequence[Unit], of: Sequence[int]) -> list[int]:
    """Objects numbered largest first (ties: the earlier leader), as greedy opens them."""
    leader: dict[int, int] = {}
    for rank, u in enumerate(order_of(units)):
        leader.setdefault(of[u], rank)
    new = {k: n for n, k in enumerate(sorted(leader, key=leader.__getitem__))}
    return [new[k] for k in of]


# ---------------------------------------------------------------------------- the specs


def place(
    group: Sequence[Any], alignment: int, budget: Budget
) -> tuple[Plan, list[int], list[int]]:
    """allow_overlapping_allocations=False for the specs of one memory id (realigned):
    the objects one after another, each spec at its object's start plus its offset inside
    its unit. The plan (over buffers `str(k)` with bytes, as `to_problem` names them, for
    the validator), and each spec's object and offset."""
    units, unit, delta = units_of(group, alignment)
    objects = pack(units, budget)
    starts = list(itertools.accumulate(objects.sizes, initial=0))
    offsets = [starts[objects.of[u]] + d for u, d in zip(unit, delta)]
    plan = Plan(
        {str(k): offsets[k] for k, spec in enumerate(group) if spec.allocated_memory > 0},
        objects.total,
        objects.status,
        "objects",
        objects.bound,
        bound=objects.bound,
        detail={"objects": len(objects.sizes), "objects_bound": objects.bound},
        storages=tuple(zip(starts, objects.sizes)),
    )
    return plan, [objects.of[u] for u in unit], offsets


def numbered(group: Sequence[Any], offsets: Sequence[int]) -> list[int]:
    """allow_overlapping_allocations=True: each spec's object, cut from its offsets."""
    return cut([(offset, spec.allocated_memory) for spec, offset in zip(group, offsets)])


def number_result(result: Any) -> None:
    """A `MemoryAlgoResult` of offsets (optplan's over several memory ids) given objects
    in place, each id's cut from its specs' offsets (`cut`)."""
    by_id: dict[int, list[Any]] = {}
    for spec, got in result.spec_dict.items():
        by_id.setdefault(got.mem_id, []).append(spec)
    for specs in by_id.values():
        offsets = [result.spec_dict[spec].mem_offset for spec in specs]
        for spec, obj in zip(specs, numbered(specs, offsets)):
            result.spec_dict[spec].mem_obj_id = obj
