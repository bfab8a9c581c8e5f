"""What every planner shares: rectangles to pack, and turning their offsets into a Plan.

Steps:
1. `rectangles(problem)` turns each alias class into one `Rect`: its height, its live
   intervals, and the offsets it may take (`residue + modulus * k`, so that every member
   `class offset + delta` is a multiple of the member's own alignment), or its pin.
2. A planner chooses one offset per rectangle.
3. `make_plan` expands rectangle offsets to member offsets (`offset + delta`) and fills in
   the arena, the lower bound, the bound, the status and the time taken.

`pin_fault(rects)` finds what makes a problem infeasible before any search: a member
alignment no class offset can satisfy, a pin off its residue, or two pinned rectangles
that share a byte while live together.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from optplan.plan import Plan, Status
from optplan.problem import Interval, Problem, alias_classes, merge_intervals


@dataclass(frozen=True, slots=True)
class Rect:
    """One alias class as a rectangle: live over `live`, `size` bytes tall.

    Its offset must be `residue (mod modulus)`; `pin` fixes it. `residue` is None when no
    offset satisfies every member's alignment; `pins` holds every class offset that a
    pinned member implies (two or more: the pins contradict each other).
    """

    index: int
    root: str
    members: tuple[tuple[str, int], ...]
    size: int
    live: tuple[Interval, ...]
    modulus: int
    residue: int | None
    pins: tuple[int, ...]

    @property
    def pin(self) -> int | None:
        """The offset the pins fix, when they agree."""
        return self.pins[0] if len(self.pins) == 1 else None

    @property
    def start(self) -> int:
        return self.live[0].start

    @property
    def end(self) -> int:
        return self.live[-1].end

    @property
    def length(self) -> int:
        return sum(iv.end - iv.start for iv in self.live)

    def lift(self, offset: int) -> int:
        """The lowest allowed offset at or above `offset`."""
        assert self.residue is not None
        return offset + (self.residue - offset) % self.modulus

    def allowed(self, offset: int) -> bool:
        return self.residue is not None and offset % self.modulus == self.residue

    def overlaps_in_time(self, other: Rect) -> bool:
        return any(a.overlaps(b) for a in self.live for b in other.live)


def rectangles(problem: Problem) -> list[Rect]:
    """One rectangle per alias class, in the order of `alias_classes`."""
    if not problem.aliases:
        # Every buffer is its own class; skipping the grouping matters at 100k buffers.
        return [
            Rect(
                index=index,
                root=b.id,
                members=((b.id, 0),),
                size=b.size,
                live=b.live if len(b.live) == 1 else merge_intervals(list(b.live)),
                modulus=b.alignment,
                residue=0,
                pins=() if b.offset is None else (b.offset,),
            )
            for index, b in enumerate(problem.buffers)
        ]
    rects = []
    for index, cls in enumerate(alias_classes(problem)):
        alignments = [(delta, problem.buffer(name).alignment) for name, delta in cls.members]
        rects.append(
            Rect(
                index=index,
                root=cls.root,
                members=cls.members,
                size=cls.size,
                live=cls.live,
                modulus=cls.alignment,
                residue=_residue(alignments),
                pins=cls.pins,
            )
        )
    return rects


def _residue(alignments: list[tuple[int, int]]) -> int | None:
    """The least r >= 0 with (r + delta) % alignment == 0 for every (delta, alignment), by
    the Chinese remainder theorem; None when the congruences contradict each other.

    Usually 0; an alias whose delta is not a multiple of the view's alignment moves it.
    Each step merges r = residue (mod modulus) with r = -delta (mod alignment).
    """
    residue, modulus = 0, 1
    for delta, alignment in alignments:
        want = -delta % alignment
        common = math.gcd(modulus, alignment)
        if (want - residue) % common:
            return None
        # residue + modulus * k = want (mod alignment): solve for k modulo alignment / common.
        step = alignment // common
        k = (want - residue) // common * pow(modulus // common, -1, step) % step if step > 1 else 0
        residue += modulus * k
        modulus *= step
        residue %= modulus
    return residue


def pin_fault(rects: list[Rect]) -> str | None:
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


def split(rects: list[Rect]) -> list[list[Rect]]:
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


def live_peak(rects: list[Rect]) -> int:
    """The most bytes live at one point: `problem.lower_bound`, computed from rectangles
    already built (ends sort before starts at the same point: half-open intervals)."""
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


def top(rects: list[Rect], offsets: list[int]) -> int:
    """The arena the rectangles need: the highest byte any of them reaches."""
    return max((offset + rect.size for rect, offset in zip(rects, offsets)), default=0)


def expand(rects: list[Rect], offsets: list[int]) -> dict[str, int]:
    """Member offsets from class offsets: `class offset + delta`."""
    return {
        name: offset + delta for rect, offset in zip(rects, offsets) for name, delta in rect.members
    }


def make_plan(
    problem: Problem,
    planner: str,
    rects: list[Rect],
    offsets: list[int] | None,
    *,
    started: float,
    bound: int = 0,
    status: Status | None = None,
    detail: dict[str, object] | None = None,
    storages: tuple[tuple[int, int], ...] = (),
) -> Plan:
    """A Plan from one offset per rectangle (None: no plan, with `status` saying why).

    With offsets and no explicit status the plan is OPTIMAL when the arena meets the best
    bound and FEASIBLE otherwise; an arena above the capacity gives UNKNOWN and no offsets.
    """
    floor = live_peak(rects)
    bound = max(bound, floor)
    detail = dict(detail or {})
    seconds = time.perf_counter() - started
    if offsets is None:
        assert status is not None and not status.has_plan
        return Plan({}, 0, status, planner, floor, seconds, bound, detail)
    arena = top(rects, offsets)
    if problem.capacity is not None and arena > problem.capacity:
        detail["reason"] = f"arena {arena} exceeds capacity {problem.capacity}"
        return Plan({}, 0, Status.UNKNOWN, planner, floor, seconds, bound, detail)
    if status is None:
        status = Status.OPTIMAL if arena <= bound else Status.FEASIBLE
    return Plan(expand(rects, offsets), arena, status, planner, floor, seconds, bound, detail, storages)


def no_plan(
    problem: Problem,
    planner: str,
    rects: list[Rect],
    *,
    started: float,
    status: Status,
    reason: str,
    bound: int = 0,
) -> Plan:
    """A Plan that says why there is none (INFEASIBLE: proven; UNKNOWN: not found)."""
    detail: dict[str, object] = {"reason": reason}
    return make_plan(
        problem, planner, rects, None, started=started, bound=bound, status=status, detail=detail
    )


def now() -> float:
    return time.perf_counter()
