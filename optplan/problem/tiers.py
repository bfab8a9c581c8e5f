"""The judge of plans of several memories: residences, copies, capacities and traffic.

A plan gives each buffer a `Residence` in every memory it uses (one offset there, over
the points it is held there; a plan listing none keeps every buffer in the first memory
all its life) and lists the `Copy` steps between them (`outcome`). `validate_memories` checks, in order:

1. Residences: each names a known buffer and a memory the buffer may use, at most once
   per memory, over non-empty intervals inside the buffer's life; together they hold the
   buffer at every point of its life. A pinned buffer, and every member of an alias class
   of several buffers, stays in one memory all its life (a pinned one at its pin).
2. `offsets[b]` is the offset of b's residence at b's first point.
3. Where it is held: the buffer's life is cut into pieces at every residence boundary,
   access and copy; at its first point, and at every point where it is written, exactly
   one memory holds it (the one written).
4. Copies: a memory that holds the buffer on a piece and did not at the point before
   (the previous point of its life) is filled by exactly one copy at the piece's first
   point, from a memory that holds the buffer at both points; no other copy is listed.
5. Memory by memory: the residences there are a problem of one memory (each buffer live
   over its residence's points, aligned to its own and the memory's alignment, within
   the memory's capacity), judged by the one-memory checks (`plan.validate_arena`).
6. Traffic, recounted here (`traffic_of`) and compared with the plan's claim: every byte
   written or read costs its memory's cost, a read from the cheapest memory holding the
   buffer at that point, a write in the one memory holding it; a copy of a buffer's
   bytes reads them in one memory and writes them in the other.

Shares no code with any planner.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass

from optplan.problem.buffers import Alias, Buffer
from optplan.problem.core import Problem, merge_intervals
from optplan.problem.memory import one_arena
from optplan.problem.outcome import Copy, Plan, Residence, Status, Violation, residences_of

Judge = Callable[[Problem, Plan], list[Violation]]


@dataclass(frozen=True, slots=True)
class _Piece:
    """Points `[start, end)` of one buffer's life over which the same memories hold it."""

    start: int
    end: int
    held: frozenset[str]


def validate_memories(problem: Problem, plan: Plan, judge_one: Judge) -> list[Violation]:
    """Everything wrong with `plan` as a plan of `problem`'s memories (see the module)."""
    faults: list[Violation] = []
    by_buffer = _residences(problem, plan, faults)
    copies = _copies_by_buffer(problem, plan, faults)
    for b in problem.buffers:
        places = by_buffer.get(b.id, [])
        if not places:
            faults.append(Violation("missing", (b.id,), f"buffer {b.id!r} is in no memory"))
            continue
        faults.extend(_placement_faults(b, places, plan))
        pieces = _pieces(b, places, copies.get(b.id, []))
        faults.extend(_hold_faults(b, pieces))
        faults.extend(_copy_faults(b, pieces, copies.get(b.id, [])))
    faults.extend(_class_faults(problem, by_buffer))
    for memory in problem.memories:
        faults.extend(_memory_faults(problem, memory.name, by_buffer, judge_one))
    if plan.traffic is None:
        faults.append(Violation("traffic", (), "the plan claims no traffic"))
    elif not faults:
        counted = traffic_of(problem, plan)
        if counted != plan.traffic:
            message = f"the plan claims traffic {plan.traffic}, but its accesses and copies cost {counted}"
            faults.append(Violation("traffic", (), message))
    return faults


# ---------------------------------------------------------------------------- residences


def _residences(
    problem: Problem, plan: Plan, faults: list[Violation]
) -> dict[str, list[Residence]]:
    """The plan's residences by buffer (`outcome.residences_of`: a plan listing none keeps
    every buffer in the first memory), those naming unknown things reported and left out."""
    known = {b.id: b for b in problem.buffers}
    names = {m.name for m in problem.memories}
    by_buffer: dict[str, list[Residence]] = {}
    for r in residences_of(problem, plan):
        b = known.get(r.buffer)
        if b is None:
            faults.append(
                Violation("unknown", (r.buffer,), f"residence of unknown buffer {r.buffer!r}")
            )
        elif r.memory not in names:
            faults.append(
                Violation(
                    "memory", (b.id,), f"buffer {b.id!r} is placed in unknown memory {r.memory!r}"
                )
            )
        elif b.memories and r.memory not in b.memories:
            message = f"buffer {b.id!r} is placed in memory {r.memory!r}, not one of {', '.join(b.memories)}"
            faults.append(Violation("memory", (b.id,), message))
        elif any(other.memory == r.memory for other in by_buffer.get(b.id, [])):
            message = f"buffer {b.id!r} has two residences in memory {r.memory!r}"
            faults.append(Violation("memory", (b.id,), message))
        elif not r.live or any(iv.end <= iv.start for iv in r.live):
            message = f"buffer {b.id!r} has an empty residence in memory {r.memory!r}"
            faults.append(Violation("memory", (b.id,), message))
        else:
            by_buffer.setdefault(b.id, []).append(r)
    return by_buffer


def _copies_by_buffer(
    problem: Problem, plan: Plan, faults: list[Violation]
) -> dict[str, list[Copy]]:
    known = {b.id for b in problem.buffers}
    by_buffer: dict[str, list[Copy]] = {}
    for c in plan.copies:
        if c.buffer not in known:
            faults.append(Violation("unknown", (c.buffer,), f"copy of unknown buffer {c.buffer!r}"))
        else:
            by_buffer.setdefault(c.buffer, []).append(c)
    return by_buffer


def _placement_faults(b: Buffer, places: list[Residence], plan: Plan) -> list[Violation]:
    """Residences inside the life and covering it; the home offset; a pin kept."""
    faults = []
    life = merge_intervals(list(b.live))
    for r in places:
        for iv in r.live:
            if not any(whole.start <= iv.start and iv.end <= whole.end for whole in life):
                message = (
                    f"buffer {b.id!r} is held in memory {r.memory!r} over {iv}, outside its life"
                )
                faults.append(Violation("residence", (b.id,), message))
    held = merge_intervals([iv for r in places for iv in r.live])
    for whole in life:
        point = whole.start
        for h in held:
            if h.start <= point < h.end:
                point = h.end
        if point < whole.end:
            message = f"buffer {b.id!r} is in no memory at point {point}, inside its life {whole}"
            faults.append(Violation("residence", (b.id,), message))
    home = [r for r in places if any(iv.start <= b.start < iv.end for iv in r.live)]
    if home and plan.offsets.get(b.id) != home[0].offset:
        message = (
            f"buffer {b.id!r} is at {home[0].offset} in memory {home[0].memory!r} at its first "
            f"point, but the plan's offsets say {plan.offsets.get(b.id)}"
        )
        faults.append(Violation("offset", (b.id,), message))
    if b.offset is not None and (len(places) != 1 or places[0].offset != b.offset):
        message = f"buffer {b.id!r} is pinned at {b.offset}: it stays there, in one memory"
        faults.append(Violation("pinned", (b.id,), message))
    return faults


def _class_faults(problem: Problem, by_buffer: dict[str, list[Residence]]) -> list[Violation]:
    """Buffers tied by aliases stay together in one memory all their lives."""
    faults = []
    for alias in problem.aliases:
        base, view = by_buffer.get(alias.base, []), by_buffer.get(alias.view, [])
        memories = {r.memory for r in base + view}
        if len(base) > 1 or len(view) > 1 or len(memories) > 1:
            message = (
                f"buffers {alias.base!r} and {alias.view!r} are tied by an alias: "
                "they stay in one memory all their lives"
            )
            faults.append(Violation("alias", (alias.base, alias.view), message))
    return faults


# ---------------------------------------------------------------------------- pieces


def _pieces(b: Buffer, places: list[Residence], copies: list[Copy]) -> list[_Piece]:
    """The buffer's life cut where what holds it may change (see step 3)."""
    cuts: set[int] = set()
    for iv in b.live:
        cuts.update((iv.start, iv.end))
    for r in places:
        for iv in r.live:
            cuts.update((iv.start, iv.end))
    for point in (*b.written_at, *b.read_at, *(c.point for c in copies)):
        cuts.update((point, point + 1))
    life = merge_intervals(list(b.live))
    ordered = sorted(cuts)
    pieces = []
    for start, end in itertools.pairwise(ordered):
        if any(whole.start <= start < whole.end for whole in life):
            held = frozenset(
                r.memory for r in places if any(iv.start <= start < iv.end for iv in r.live)
            )
            pieces.append(_Piece(start, end, held))
    return pieces


def _held_at(pieces: list[_Piece], point: int) -> frozenset[str]:
    for piece in pieces:
        if piece.start <= point < piece.end:
            return piece.held
    return frozenset()


def _hold_faults(b: Buffer, pieces: list[_Piece]) -> list[Violation]:
    """One memory at the first point and wherever the buffer is written."""
    faults = []
    for point in sorted({b.start, *b.written_at}):
        held = _held_at(pieces, point)
        if len(held) > 1:
            what = "its first point" if point == b.start else f"point {point}, where it is written"
            message = (
                f"buffer {b.id!r} is in {len(held)} memories ({', '.join(sorted(held))}) at {what}"
            )
            faults.append(Violation("written", (b.id,), message))
    return faults


def _copy_faults(b: Buffer, pieces: list[_Piece], copies: list[Copy]) -> list[Violation]:
    """Every memory entered is filled by one copy from a memory holding it before and
    after; no copy beyond those."""
    faults = []
    listed: dict[tuple[int, str], list[Copy]] = {}
    for c in copies:
        listed.setdefault((c.point, c.target), []).append(c)
    needed: set[tuple[int, str]] = set()
    for before, piece in itertools.pairwise(pieces):
        for target in sorted(piece.held - before.held):
            needed.add((piece.start, target))
            found = listed.get((piece.start, target), [])
            if len(found) != 1:
                message = f"buffer {b.id!r} enters memory {target!r} at point {piece.start} with {len(found)} copies"
                faults.append(Violation("copy", (b.id,), message))
            elif found[0].source not in before.held & piece.held:
                message = (
                    f"buffer {b.id!r} is copied at point {piece.start} from memory "
                    f"{found[0].source!r}, which does not hold it there and at the point before"
                )
                faults.append(Violation("copy", (b.id,), message))
    for key, found in sorted(listed.items()):
        if key not in needed:
            message = f"buffer {b.id!r} is copied into memory {key[1]!r} at point {key[0]}, which it does not enter there"
            faults.append(Violation("copy", (b.id,), message))
    return faults


# ---------------------------------------------------------------------------- memories


def _memory_faults(
    problem: Problem, name: str, by_buffer: dict[str, list[Residence]], judge_one: Judge
) -> list[Violation]:
    """The memory's residences as a problem of one memory, judged as such."""
    memory = problem.memory(name)
    buffers, offsets = [], {}
    for b in problem.buffers:
        for r in by_buffer.get(b.id, []):
            if r.memory == name:
                alignment = math.lcm(b.alignment, memory.alignment)
                buffers.append(Buffer(b.id, b.size, merge_intervals(list(r.live)), alignment))
                offsets[b.id] = r.offset
    inside = set(offsets)
    aliases = tuple(a for a in problem.aliases if a.base in inside and a.view in inside)
    used = max((offsets[b.id] + b.size for b in buffers), default=0)
    try:
        alone = Problem(
            tuple(buffers),
            tuple(Alias(a.base, a.view, a.delta) for a in aliases),
            memories=one_arena(memory.capacity),
        )
    except ValueError as error:
        return [Violation("memory", (), f"memory {name!r}: {error}")]
    judged = judge_one(alone, Plan(offsets, used, Status.FEASIBLE, "judge", 0))
    faults = []
    for f in judged:
        message = f.message
        if f.kind == "capacity":
            message = f"its buffers reach byte {used}, past its capacity of {memory.capacity} bytes"
        faults.append(Violation(f.kind, f.buffers, f"memory {name!r}: {message}"))
    return faults


# ---------------------------------------------------------------------------- traffic


def traffic_of(problem: Problem, plan: Plan) -> int:
    """Bytes accessed in each memory times its cost, plus each copy's bytes read in one
    memory and written in the other. A plan without residences keeps every buffer in the
    problem's first memory all its life."""
    costs = {m.name: m.cost for m in problem.memories}
    by_buffer: dict[str, list[Residence]] = {}
    for r in plan.residences:
        by_buffer.setdefault(r.buffer, []).append(r)
    home = problem.memories[0].name
    total = 0
    for b in problem.buffers:
        places = by_buffer.get(b.id) or [Residence(b.id, home, 0, tuple(b.live))]
        pieces = _pieces(b, places, [])
        for point in (*b.written_at, *b.read_at):
            held = _held_at(pieces, point)
            total += b.size * min((costs.get(m, 0) for m in held), default=0)
    sizes = {b.id: b.size for b in problem.buffers}
    for c in plan.copies:
        total += sizes.get(c.buffer, 0) * (costs.get(c.source, 0) + costs.get(c.target, 0))
    return total


def all_in(problem: Problem, memory: str) -> int:
    """The traffic of keeping every buffer in `memory` all its life, whatever it holds:
    the figure to beat when everything sits in slow memory."""
    cost = problem.memory(memory).cost
    return sum(b.size * cost * (len(b.written_at) + len(b.read_at)) for b in problem.buffers)
