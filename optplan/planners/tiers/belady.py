"""The spill heuristic: Belady's rule over the cheapest memory, the rest as backing.

Steps (`spill`):
1. The fast memory is the cheapest one. Tracks it does not move (all but the simple ones
   that may use the fast memory and another) are placed first, one
   memory each, as `fill` places them by size.
2. Every other track gets a backing memory, the cheapest other one with room for it all
   its life, where it is written when the fast memory has no room, and where it waits
   between uses once spilled.
3. The points are walked in order. A track accessed at a point and not in the fast
   memory asks to come in (written there at its first point, else prefetched from its
   backing memory by a copy at that point). When the fast memory lacks room, the tracks
   in it that are not accessed at that point and are needed later than the one asking
   leave it, the one needed furthest in the future first (Belady's rule). One leaving
   that was never in its backing memory is spilled there by a copy at the point after
   its last use, so it must have been last used two points before, or it stays. If not
   enough can leave, the access is served from the backing memory instead.

       point:      3     4     5     6     7
       x in fast   [=========)                [==   read at 3, prefetched at 7
       x backing         [======================    spilled at 4
       y in fast                  [============     written at 5, where x was

Limits count the bytes live at each point; the caller packs the memories and, when a
packing overflows, tries again with lower limits.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from optplan.planners.tiers.fill import Loads, order, place
from optplan.planners.tiers.form import TierForm, Track
from optplan.planners.tiers.stays import Stays

NEVER = 1 << 62


@dataclass(slots=True)
class _State:
    """One movable track during the walk."""

    track: Track
    backing: int
    accesses: list[int]
    fast: list[int] = field(default_factory=list)
    resident: bool = False
    backed_from: int | None = None  # the point its backing memory holds it from

    def next_access(self, point: int) -> int:
        """Its first access after `point` (NEVER when none)."""
        at = bisect.bisect_right(self.accesses, point)
        return self.accesses[at] if at < len(self.accesses) else NEVER

    def last_access(self, point: int) -> int:
        """Its last access before `point`."""
        return self.accesses[bisect.bisect_left(self.accesses, point) - 1]

    def can_leave(self, point: int) -> bool:
        return self.backed_from is not None or self.last_access(point) + 1 < point

    def leave(self, point: int) -> None:
        """Out of the fast memory from `point` on; spilled after its last use if its
        backing memory does not hold it yet."""
        last = self.last_access(point)
        keep = last
        if self.backed_from is None:  # the copy at last + 1 reads it in the fast memory
            self.backed_from = keep = last + 1
        while self.fast and self.fast[-1] > keep:
            self.fast.pop()
        self.resident = False


def spill(form: TierForm, limits: Sequence[int | None]) -> Stays | None:
    """Stays by Belady's rule (see the module), or None when some track fits nowhere."""
    fast = form.by_cost[0]
    loads = Loads(form, limits)
    movable = [t for t in form.tracks if _movable(t, fast)] if limits[fast] is not None else []
    moving = {t.index for t in movable}
    choice = [-1] * len(form.tracks)
    for track in order(form, "size", [t for t in form.tracks if t.index not in moving]):
        choice[track.index] = place(loads, track)
        if choice[track.index] < 0:
            return None
    states = []
    for track in order(form, "size", movable):
        backing = place(loads, track, [m for m in track.allowed if m != fast])
        if backing < 0:
            return None
        accesses = sorted({track.first, *(p for p, _ in (*track.writes, *track.reads))})
        states.append(_State(track, backing, accesses))
    limit = limits[fast]
    if states and limit is not None and not _walk(states, loads.bytes[fast], limit):
        return None
    return _stays(form, choice, states, fast)


def _movable(track: Track, fast: int) -> bool:
    return track.simple and fast in track.allowed and len(track.allowed) > 1


def _walk(states: list[_State], base: np.ndarray, limit: int) -> bool:
    """Step 3 over every point; False if the fixed tracks and those that cannot leave
    overflow the limit."""
    by_point: dict[int, list[_State]] = {}
    for state in states:
        for point in state.accesses:
            by_point.setdefault(point, []).append(state)
    last = max(s.track.points[-1] for s in states)
    resident: list[_State] = []
    for point in range(last + 1):
        resident = [s for s in resident if s.track.points[-1] >= point]
        accessed = {id(s) for s in by_point.get(point, [])}
        used = int(base[point]) + sum(s.track.size for s in resident)
        # The fixed tracks may have grown here: anything may leave for them.
        if used > limit and not _make_room(used - limit, -1, point, resident, accessed):
            return False
        asking = [s for s in by_point.get(point, []) if not s.resident]
        asking.sort(key=lambda s: (s.next_access(point), s.track.size, s.track.index))
        for state in asking:
            used = int(base[point]) + sum(s.track.size for s in resident)
            need = used + state.track.size - limit
            if need <= 0 or _make_room(need, state.next_access(point), point, resident, accessed):
                state.resident = True
                resident.append(state)
            elif state.backed_from is None:  # written in its backing memory instead
                assert point == state.track.first, f"{state.track.name!r} lost at {point}"
                state.backed_from = point
        for state in resident:
            state.fast.append(point)
    return True


def _make_room(
    need: int, wanted: int, point: int, resident: list[_State], accessed: set[int]
) -> bool:
    """Free `need` bytes at `point` by sending out tracks not accessed there and next
    needed after `wanted`, the furthest first; False (and nothing sent) if they cannot."""
    leaving = sorted(
        (
            s
            for s in resident
            if id(s) not in accessed and s.can_leave(point) and s.next_access(point) > wanted
        ),
        key=lambda s: (-s.next_access(point), -s.track.size, s.track.index),
    )
    chosen, freed = [], 0
    for other in leaving:
        if freed >= need:
            break
        chosen.append(other)
        freed += other.track.size
    if freed < need:
        return False
    for other in chosen:
        other.leave(point)
        resident.remove(other)
    return True


def _stays(form: TierForm, choice: list[int], states: list[_State], fast: int) -> Stays:
    held = [
        tuple([1 << choice[t.index]] * len(t.points)) if choice[t.index] >= 0 else ()
        for t in form.tracks
    ]
    for state in states:
        track, in_fast = state.track, set(state.fast)
        masks = []
        for point in track.points:
            mask = (1 << fast) if point in in_fast else 0
            if state.backed_from is not None and point >= state.backed_from:
                mask |= 1 << state.backing
            assert mask, f"track {track.name!r} is nowhere at point {point}"
            masks.append(mask)
        held[track.index] = tuple(masks)
    return Stays(tuple(held))
