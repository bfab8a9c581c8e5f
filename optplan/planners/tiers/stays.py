"""Where each track is at each of its points, what that costs, and the plan it makes.

A `Stays` holds, for every track of a `TierForm`, one bitmask of memory indices per live
point (bit m set: memory m holds the track there). Everything else follows from it:

- copies (`copies_of`): a memory that holds the track at a point and did not at the point
  before is filled by a copy from the cheapest memory holding it at both;
- traffic (`traffic`): each write in the one memory holding the track, each read from
  the cheapest, each copy read in its source and written in its target, bytes times cost;
- each memory's problem (`memory_problem`): the buffers it holds, each live over the
  points it holds them, aligned to the memory as well, within its capacity;
- the plan (`assemble`), once each memory's problem has offsets.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable
from dataclasses import dataclass

from optplan.planners.tiers.form import TierForm, Track, member_buffers
from optplan.problem import Alias, Buffer, Interval, Problem, lower_bound, one_arena
from optplan.problem.outcome import Copy, Plan, Residence, Status

# Packs one memory's problem: a plan of one memory (None offsets when it found none).
Packer = Callable[[Problem], Plan]


@dataclass(frozen=True, slots=True)
class Stays:
    """`held[k][i]`: the memories (a bitmask) holding track k at its i-th point."""

    held: tuple[tuple[int, ...], ...]

    def at(self, track: Track, point: int) -> int:
        masks = self.held[track.index]
        if track.fixed:
            return masks[0]
        if track.simple:
            return masks[point - track.first]
        return masks[bisect.bisect_left(track.points, point)]


def static(form: TierForm, choice: list[int]) -> Stays:
    """Every track in one memory all its life: `choice[k]` for track k."""
    return Stays(tuple(tuple([1 << choice[t.index]] * len(t.points)) for t in form.tracks))


def bits(mask: int) -> list[int]:
    return [m for m in range(mask.bit_length()) if mask >> m & 1]


def cheapest(form: TierForm, mask: int) -> int:
    """The cheapest memory of `mask` (the first listed on a tie); -1 for none."""
    for m in form.by_cost:
        if mask >> m & 1:
            return m
    return -1


def copies_of(form: TierForm, track: Track, stays: Stays) -> list[tuple[int, int, int]]:
    """(point, source, target) of every copy the track's stays need."""
    if track.fixed:
        return []
    masks = stays.held[track.index]
    found = []
    for i in range(1, len(masks)):
        for target in bits(masks[i] & ~masks[i - 1]):
            source = cheapest(form, masks[i] & masks[i - 1])
            assert source >= 0, f"track {track.name!r} enters memory {target} with no source"
            found.append((track.points[i], source, target))
    return found


def traffic(form: TierForm, stays: Stays) -> int:
    total = 0
    for track in form.tracks:
        for point, size in (*track.writes, *track.reads):
            total += size * form.cost(cheapest(form, stays.at(track, point)))
        for _, source, target in copies_of(form, track, stays):
            total += track.size * (form.cost(source) + form.cost(target))
    return total


def floor_traffic(form: TierForm) -> int:
    """No plan costs less: every access in the cheapest memory the track may use."""
    total = 0
    for track in form.tracks:
        if track.allowed:
            cost = form.cost(track.allowed[0])
            total += cost * sum(size for _, size in (*track.writes, *track.reads))
    return total


def runs(track: Track, stays: Stays, memory: int) -> tuple[Interval, ...]:
    """The intervals of points where `memory` holds the track."""
    if track.fixed:
        return track.rect.live if stays.held[track.index][0] >> memory & 1 else ()
    found: list[Interval] = []
    for point, mask in zip(track.points, stays.held[track.index]):
        if not mask >> memory & 1:
            continue
        if found and found[-1].end == point:
            found[-1] = Interval(found[-1].start, point + 1)
        else:
            found.append(Interval(point, point + 1))
    return tuple(found)


def memory_problem(
    form: TierForm, stays: Stays, memory: int
) -> tuple[Problem, dict[str, tuple[Interval, ...]]]:
    """The buffers `memory` holds as a problem of one memory, and where each is held."""
    held: dict[str, tuple[Interval, ...]] = {}
    buffers: list[Buffer] = []
    align = form.memories[memory].alignment
    for track in form.tracks:
        spans = runs(track, stays, memory)
        if not spans:
            continue
        for b in member_buffers(form.problem, track):
            live = b.live if track.fixed else spans
            held[b.id] = live
            buffers.append(Buffer(b.id, b.size, live, math.lcm(b.alignment, align), b.offset))
    aliases = tuple(
        Alias(a.base, a.view, a.delta)
        for a in form.problem.aliases
        if a.base in held and a.view in held
    )
    return Problem(
        tuple(buffers), aliases, memories=one_arena(form.memories[memory].capacity)
    ), held


@dataclass(frozen=True, slots=True)
class Packed:
    """Offsets by memory index and buffer, or the memory that would not pack."""

    offsets: dict[int, dict[str, int]]
    held: dict[int, dict[str, tuple[Interval, ...]]]
    failed: str | None = None


def pack(
    form: TierForm, stays: Stays, packer: Packer, given: dict[int, dict[str, int]] | None = None
) -> Packed:
    """Offsets in every memory: `given` where a model chose them, else by `packer`."""
    offsets: dict[int, dict[str, int]] = {}
    held_by: dict[int, dict[str, tuple[Interval, ...]]] = {}
    for memory in range(len(form.memories)):
        problem, held = memory_problem(form, stays, memory)
        held_by[memory] = held
        if given is not None and memory in given:
            offsets[memory] = {name: given[memory][name] for name in held}
            continue
        if not held:
            offsets[memory] = {}
            continue
        plan = packer(problem)
        if not plan.status.has_plan:
            return Packed(offsets, held_by, form.memories[memory].name)
        offsets[memory] = dict(plan.offsets)
    return Packed(offsets, held_by)


def assemble(form: TierForm, stays: Stays, packed: Packed, **plan: object) -> Plan:
    """The plan of `stays` with the offsets of `packed`; `plan` holds the Plan's other
    fields (planner, status, lower_bound, seconds, traffic_bound, detail)."""
    names = [m.name for m in form.memories]
    sizes = {b.id: b.size for b in form.problem.buffers}
    residences, home = [], {}
    for memory, held in packed.held.items():
        for name, live in held.items():
            offset = packed.offsets[memory][name]
            residences.append(Residence(name, names[memory], offset, live))
    for b in form.problem.buffers:
        home[b.id] = next(r.offset for r in residences if r.buffer == b.id and _holds(r, b.start))
    copies = [
        Copy(track.name, point, names[source], names[target])
        for track in form.tracks
        for point, source, target in copies_of(form, track, stays)
    ]
    first = [r for r in residences if r.memory == names[0]]
    arena = max((r.offset + sizes[r.buffer] for r in first), default=0)
    return Plan(
        offsets=home,
        arena=arena,
        residences=tuple(sorted(residences)),
        copies=tuple(sorted(copies)),
        traffic=traffic(form, stays),
        **plan,  # type: ignore[arg-type]
    )


def _holds(residence: Residence, point: int) -> bool:
    return any(iv.start <= point < iv.end for iv in residence.live)


def no_plan(
    form: TierForm, name: str, status: Status, reason: str, seconds: float, bound: int = 0
) -> Plan:
    """A plan that says why there is none (INFEASIBLE: proven; UNKNOWN: not found)."""
    return Plan(
        {},
        0,
        status,
        name,
        lower_bound(form.problem),
        seconds,
        detail={"reason": reason},
        traffic_bound=bound,
    )
