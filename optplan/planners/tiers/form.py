"""The form every planner of several memories takes, derived once from a problem.

Steps (`make_tier_form`):
1. Each alias class is one `Track`: the class moves as one allocation, so its members'
   accesses are the track's (each with the member's bytes) and it may use only the
   memories every member may use. A class of several buffers and a pinned class stay in
   one memory all their lives (`fixed`). A track written only at its first point and live
   over one interval is `simple`: the heuristics move only those (one written again later,
   by an in-place op, must be in one memory at each write; one live over an If's
   branches has points that do not follow each other).
2. Every track's live points are listed in order: a plan says, point by point, which
   memories hold it, so the models are as long as the problem's lives summed.
3. `crowded(form)` says why no plan can exist, naming the program point and the tensors
   live there: tensors that may only use some memories need more bytes at one point
   than those memories hold together, or a tensor is larger than every memory it may
   use.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from optplan.planners.common import Rect
from optplan.problem import Buffer, Memory, Problem, alias_classes


@dataclass(frozen=True, slots=True)
class Track:
    """One alias class as memory planners see it: `size` bytes (its rectangle), live at
    `points` (in order), which may use the memories `allowed` (indices into the
    problem's memories, cheapest first); written at `writes` and read at `reads`, as
    (point, bytes) pairs, one per member access; `fixed`: it stays in one memory;
    `simple`: written only at its first point, live over one interval."""

    rect: Rect
    points: tuple[int, ...]
    allowed: tuple[int, ...]
    writes: tuple[tuple[int, int], ...]
    reads: tuple[tuple[int, int], ...]
    fixed: bool
    simple: bool

    @property
    def index(self) -> int:
        return self.rect.index

    @property
    def size(self) -> int:
        return self.rect.size

    @property
    def name(self) -> str:
        return self.rect.root

    @property
    def first(self) -> int:
        return self.points[0]

    def alignment(self, memory: Memory) -> int:
        """The alignment an offset of this track keeps in `memory`."""
        return math.lcm(self.rect.modulus, memory.alignment)


@dataclass(frozen=True, slots=True)
class TierForm:
    """A problem of several memories as its planners take it."""

    problem: Problem
    tracks: tuple[Track, ...]
    memories: tuple[Memory, ...]
    # Memory indices from the cheapest to the dearest (ties in the problem's order).
    by_cost: tuple[int, ...]

    def cost(self, memory: int) -> int:
        return self.memories[memory].cost

    def capacity(self, memory: int) -> int | None:
        return self.memories[memory].capacity


def make_tier_form(problem: Problem, *, copies: bool = True) -> TierForm:
    """The form of `problem`; without `copies` every track is fixed (static placement:
    each tensor in one memory all its life, as banked planners place them)."""
    memories = tuple(problem.memories)
    by_cost = tuple(sorted(range(len(memories)), key=lambda m: (memories[m].cost, m)))
    rank = {m: position for position, m in enumerate(by_cost)}
    tracks = tuple(_track(problem, rect, rank, copies) for rect in alias_classes(problem))
    return TierForm(problem, tracks, memories, by_cost)


def _track(problem: Problem, rect: Rect, rank: dict[int, int], copies: bool) -> Track:
    members = [problem.buffer(name) for name, _ in rect.members]
    names = [m.name for m in problem.memories]
    allowed = set(range(len(names)))
    for b in members:
        if b.memories:
            allowed &= {names.index(name) for name in b.memories}
    writes = tuple(sorted((p, b.size) for b in members for p in b.written_at))
    reads = tuple(sorted((p, b.size) for b in members for p in b.read_at))
    points = tuple(p for iv in rect.live for p in range(iv.start, iv.end))
    fixed = len(members) > 1 or rect.pins != () or not copies
    simple = not fixed and len(rect.live) == 1 and all(p == points[0] for p, _ in writes)
    ranked = tuple(sorted(allowed, key=rank.__getitem__))
    return Track(rect, points, ranked, writes, reads, fixed, simple)


def crowded(form: TierForm) -> str | None:
    """Why no plan can exist, judged point by point (see the module); None if no point
    shows it."""
    for track in form.tracks:
        if not track.allowed:
            return f"tensor {track.name!r} may use no memory: its buffers name none in common"
        room = [form.capacity(m) for m in track.allowed]
        if None not in room and track.size > max(r for r in room if r is not None):
            where = ", ".join(form.memories[m].name for m in track.allowed)
            return (
                f"at point {track.first}, tensor {track.name!r} needs {track.size} bytes, "
                f"more than any memory it may use holds ({where})"
            )
    return _crowded_point(form)


def _crowded_point(form: TierForm) -> str | None:
    """A point where the tensors confined to some set of memories exceed them together."""
    live: dict[int, list[Track]] = {}
    for track in form.tracks:
        for point in track.points:
            live.setdefault(point, []).append(track)
    for point in sorted(live):
        tracks = live[point]
        for confined in sorted({t.allowed for t in tracks}):
            room = [form.capacity(m) for m in confined]
            if None in room:
                continue
            inside = [t for t in tracks if set(t.allowed) <= set(confined)]
            need = sum(t.size for t in inside)
            total = sum(r for r in room if r is not None)
            if need > total:
                where = " and ".join(form.memories[m].name for m in confined)
                names = ", ".join(t.name for t in sorted(inside, key=lambda t: -t.size))
                return (
                    f"at point {point}, {need} bytes of tensors are live that only "
                    f"{where} may hold ({total} bytes): {names}"
                )
    return None


def member_buffers(problem: Problem, track: Track) -> list[Buffer]:
    return [problem.buffer(name) for name, _ in track.rect.members]
