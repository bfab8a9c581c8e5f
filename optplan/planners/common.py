"""What every planner shares: one input form, built once, and turning offsets into a Plan.

Steps:
1. `make_form(problem)` derives, once, everything a planner packs: each alias class as
   one rectangle (`Rect`, built by `problem.alias_classes`: its height, its live
   intervals, and the offsets it may take, `residue + modulus * k`, so that every member
   `class offset + delta` is a multiple of the member's own alignment, or its pin); the
   rectangles of non-zero size split into parts that no point of time connects
   (`split`); the live-bytes lower bound; and, if there is one, the fault that makes
   the problem infeasible whatever the planner does (`pin_fault`).
2. A planner chooses one offset per rectangle, part by part where it likes.
3. `make_plan` expands rectangle offsets to member offsets (`offset + delta`) and fills in
   the arena, the lower bound, the bound, the status and the time taken.

`pin_fault(rects)` finds what makes a problem infeasible before any search: a member
alignment no class offset can satisfy, a pin off its residue, or two pinned rectangles
that share a byte while live together.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from optplan.problem import AliasClass, Problem, alias_classes, lower_bound
from optplan.problem.columns import BufferColumns
from optplan.problem.plan import Plan, Status

# An alias class is packed as one rectangle; planners speak of it as such.
Rect = AliasClass


@dataclass(frozen=True, slots=True)
class Form:
    """The one input every planner takes, derived once from `problem`.

    `rects` holds one rectangle per alias class, in the order of `alias_classes` (a
    rectangle's `index` is its position); `parts` the rectangles of non-zero size in
    groups that no point of time connects, each in index order; `live_bytes` the most
    bytes live at one point (`lower_bound`); `fault` why no plan can exist, if
    alignments and pins alone show it.
    """

    problem: Problem
    rects: tuple[Rect, ...]
    parts: tuple[tuple[Rect, ...], ...]
    live_bytes: int
    fault: str | None

    @property
    def capacity(self) -> int | None:
        """The capacity of the one memory the form packs (a form is of one arena)."""
        return self.problem.memories[0].capacity


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector, then restore it as it was.

    A planner call allocates a rectangle, a tuple or a list per buffer, and none of them
    can form a cycle; at 100k buffers the collector rescanning them all cost ~15 % of a
    best-of run and 0.10-0.15 s of a single-order call (0.60 s -> 0.45 s, ResNet chain),
    and at 1,000,000 buffers 3.4 of `make_form`'s 9.1 s.
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def make_form(problem: Problem) -> Form:
    """The planners' form of `problem` (see `Form`). A problem held as columns (a CSV
    trace) is split and checked on the columns: at 1,000,000 buffers `split` and
    `pin_fault` over the rectangles took 6.5 s, the columns' sweep 0.1 s."""
    with gc_paused():
        return _form(problem)


def _form(problem: Problem) -> Form:
    rects = tuple(alias_classes(problem))
    columns = problem.buffers
    if isinstance(columns, BufferColumns) and not problem.aliases:
        parts = tuple(tuple(rects[i] for i in part.tolist()) for part in split_columns(columns))
        fault = pin_fault(rects) if columns.pinned else None
    else:
        parts = tuple(tuple(part) for part in split(rects))
        fault = pin_fault(rects)
    # Without aliases `lower_bound` sweeps the buffers in NumPy; with them it would group
    # the classes again, so the sweep runs over the rectangles already built.
    live_bytes = live_peak(rects) if problem.aliases else lower_bound(problem)
    return Form(problem, rects, parts, live_bytes, fault)


def rectangles(problem: Problem) -> list[Rect]:
    """One rectangle per alias class, in the order of `alias_classes`."""
    return alias_classes(problem)


def pin_fault(rects: Sequence[Rect]) -> str | None:
    """Why no plan can exist, judged from alignments and pins alone; None if none found."""
    pinned = []
    for rect in rects:
        if len(rect.pins) > 1:
            at = " and ".join(str(pin) for pin in rect.pins)
            return f"alias class {rect.root!r} is pinned at {at} at once by its members"
        if rect.residue is None:
            return f"no offset satisfies the alignments of alias class {rect.root!r}"
        if rect.pin is not None:
            if rect.pin < 0 or not rect.allowed(rect.pin):
                return f"alias class {rect.root!r} is pinned at {rect.pin}, against its alignment"
            pinned.append(rect)
    for i, a in enumerate(pinned):
        for b in pinned[i + 1 :]:
            assert a.pin is not None and b.pin is not None
            share = a.pin < b.pin + b.size and b.pin < a.pin + a.size
            if share and a.size and b.size and a.overlaps_in_time(b):
                return f"pinned classes {a.root!r} and {b.root!r} share bytes while live"
    return None


def split(rects: Sequence[Rect]) -> list[list[Rect]]:
    """Rectangles (of non-zero size) in groups that no point of time connects.

    The arena is the maximum over such parts, so each can be planned on its own; a class
    live over several intervals ties together the parts it touches.
    """
    sized = [r for r in rects if r.size > 0]
    parent = {r.index: r.index for r in sized}

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    intervals = sorted((iv.start, iv.end, r.index) for r in sized for iv in r.live)
    reach, anchor = None, -1
    for start, end, index in intervals:
        if reach is not None and start < reach:
            parent[find(index)] = find(anchor)
            reach = max(reach, end)
        else:
            reach, anchor = end, index
    groups: dict[int, list[Rect]] = {}
    for rect in sized:
        groups.setdefault(find(rect.index), []).append(rect)
    return list(groups.values())


def split_columns(columns: BufferColumns) -> list[np.ndarray]:
    """Positions of the buffers of non-zero size, in groups no point of time connects."""
    sized = np.flatnonzero(columns.size > 0)
    if not len(sized):
        return []
    start, end = columns.start[sized], columns.end[sized]
    order = np.argsort(start, kind="stable")
    reach = np.maximum.accumulate(end[order])
    # Sorted position k opens a part when it starts at or after every earlier end.
    opens = np.concatenate(([True], start[order][1:] >= reach[:-1]))
    label = np.empty(len(sized), dtype=np.int64)
    label[order] = np.cumsum(opens) - 1
    # Parts in the order of their lowest buffer; members in buffer order.
    _, lowest = np.unique(label, return_index=True)
    rank = np.empty(len(lowest), dtype=np.int64)
    rank[np.argsort(lowest, kind="stable")] = np.arange(len(lowest))
    grouped = np.argsort(rank[label], kind="stable")
    bounds = np.cumsum(np.bincount(rank[label], minlength=len(lowest)))[:-1]
    return [sized[group] for group in np.split(grouped, bounds)]


def live_peak(rects: Sequence[Rect]) -> int:
    """The most bytes live at one point of `rects` (a part, say); over all of a problem's
    rectangles it equals `lower_bound` (ends sort before starts at the same point:
    half-open intervals)."""
    events = sorted(
        (point, change)
        for r in rects
        if r.size
        for iv in r.live
        for point, change in ((iv.start, r.size), (iv.end, -r.size))
    )
    live = peak = 0
    for _, change in events:
        live += change
        peak = max(peak, live)
    return peak


def crowded_at(rects: Sequence[Rect], capacity: int) -> str | None:
    """The first point where more than `capacity` bytes are live, with the tensors live
    there, largest first (None when there is none)."""
    events = sorted(
        (point, change, rect.index)
        for rect in rects
        if rect.size
        for iv in rect.live
        for point, change in ((iv.start, rect.size), (iv.end, -rect.size))
    )
    live = 0
    for position, (point, change, _) in enumerate(events):
        live += change
        ended = position + 1 == len(events) or events[position + 1][0] != point
        if ended and live > capacity:
            here = [r for r in rects if r.size and any(iv.start <= point < iv.end for iv in r.live)]
            names = ", ".join(r.root for r in sorted(here, key=lambda r: (-r.size, r.index)))
            return f"at point {point}, {live} bytes of tensors are live, more than the capacity {capacity}: {names}"
    return None


def top(rects: Sequence[Rect], offsets: Sequence[int]) -> int:
    """The arena the rectangles need: the highest byte any of them reaches."""
    return max((offset + rect.size for rect, offset in zip(rects, offsets)), default=0)


def expand(rects: Sequence[Rect], offsets: Sequence[int]) -> dict[str, int]:
    """Member offsets from class offsets: `class offset + delta`."""
    return {
        name: offset + delta for rect, offset in zip(rects, offsets) for name, delta in rect.members
    }


def make_plan(
    form: Form,
    planner: str,
    offsets: Sequence[int] | None,
    *,
    started: float,
    bound: int = 0,
    status: Status | None = None,
    detail: dict[str, object] | None = None,
    storages: tuple[tuple[int, int], ...] = (),
) -> Plan:
    """A Plan from one offset per rectangle of `form` (None: no plan, with `status`
    saying why).

    With offsets and no explicit status the plan is OPTIMAL when the arena meets the best
    bound and FEASIBLE otherwise; an arena above the capacity gives UNKNOWN and no offsets.
    """
    floor = form.live_bytes
    bound = max(bound, floor)
    detail = dict(detail or {})
    seconds = time.perf_counter() - started
    if offsets is None:
        assert status is not None and not status.has_plan
        return Plan({}, 0, status, planner, floor, seconds, bound, detail)
    arena = top(form.rects, offsets)
    capacity = form.capacity
    if capacity is not None and arena > capacity:
        detail["reason"] = f"arena {arena} exceeds capacity {capacity}"
        return Plan({}, 0, Status.UNKNOWN, planner, floor, seconds, bound, detail)
    if status is None:
        status = Status.OPTIMAL if arena <= bound else Status.FEASIBLE
    offsets_by_name = expand(form.rects, offsets)
    return Plan(offsets_by_name, arena, status, planner, floor, seconds, bound, detail, storages)


def no_plan(
    form: Form,
    planner: str,
    *,
    started: float,
    status: Status,
    reason: str,
    bound: int = 0,
) -> Plan:
    """A Plan that says why there is none (INFEASIBLE: proven; UNKNOWN: not found)."""
    detail: dict[str, object] = {"reason": reason}
    return make_plan(
        form, planner, None, started=started, bound=bound, status=status, detail=detail
    )


def now() -> float:
    return time.perf_counter()
