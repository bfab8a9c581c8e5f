"""The CP-SAT model of several memories: where every tensor is at every point, the copies
between memories, and its offsets in every memory with a capacity, in one model.

For track k (an alias class), memory m it may use, and its i-th live point:

    held[k,i,m]      bool: m holds k at that point (one bool per memory for life when k
                     is fixed: several buffers, or pinned)
    sum_m held       >= 1 at every point; == 1 at its first point and where it is written
    copy[k,i,s,m]    bool: a copy from s into m at that point, s holding k at both it and
                     the point before; m entered (held now, not before) needs one
    read[k,i,m]      bool: its reads at that point come from m, which holds it; one m
    capacity         sum of sizes held in m at each point <= capacity (redundant, for
                     the bound)
    offset[k,m]      = residue + modulus * slot, within the capacity; a pin is a constant
    apart            two tracks held in m at one same point (`together[k,l,m]`) do not
                     share a byte: below[k,l,m] or below[l,k,m]
    traffic          sum of bytes x cost: writes where held, reads where read, copies
                     read in s and written in m; minimised

The plan space is exactly the judge's (`optplan.problem.tiers`): per point residency, one
offset per buffer and memory, copies from a memory holding the buffer before and after,
fixed classes in one memory; memories without a capacity take any residency, and are
packed afterwards. Every variable is named; the best heuristic residency is the hint.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ortools.sat.python import cp_model

from optplan.budget import Clock
from optplan.planners.tiers.form import TierForm, Track, member_buffers
from optplan.planners.tiers.stays import Stays
from optplan.planners.watch import Watch
from optplan.problem import residue_of

SUBSOLVERS = ("max_lp", "default_lp")

Literal = cp_model.IntVar


@dataclass(slots=True)
class _Model:
    """The model and its named variables, built once."""

    form: TierForm
    model: cp_model.CpModel = field(default_factory=cp_model.CpModel)
    held: dict[tuple[int, int, int], Literal] = field(default_factory=dict)
    slot: dict[tuple[int, int], cp_model.IntVar] = field(default_factory=dict)
    offset: dict[tuple[int, int], cp_model.LinearExprT] = field(default_factory=dict)
    # (residue, modulus) of each track's offset in each bounded memory
    frame: dict[tuple[int, int], tuple[int, int]] = field(default_factory=dict)
    cost: list[cp_model.LinearExprT] = field(default_factory=list)

    def h(self, track: Track, i: int, m: int) -> Literal:
        return self.held[(track.index, 0 if track.fixed else i, m)]


@dataclass(frozen=True, slots=True)
class Solved:
    """What the solve found: its status, and for a solution the stays, the offsets in
    every bounded memory (by memory index and buffer), its traffic; the bound proven."""

    status: str
    stays: Stays | None
    offsets: dict[int, dict[str, int]]
    traffic: int
    bound: int


def solve_tiers(
    form: TierForm,
    hint: tuple[Stays, dict[int, dict[str, int]]] | None,
    *,
    units: float,
    clock: Clock,
    workers: int,
    seed: int,
    watch: Watch | None = None,
) -> Solved:
    """Build the model, hint it, solve it within `units` of `clock` (`Clock.limit`)."""
    built = _Model(form)
    for track in form.tracks:
        _residency(built, track)
    for m, memory in enumerate(form.memories):
        if memory.capacity is not None:
            _capacity(built, m, memory.capacity)
    built.model.minimize(sum(built.cost))
    if hint is not None:
        _hint(built, *hint)
    solver = cp_model.CpSolver()
    # Counted in work, the workers take turns (`interleave_search`): on the zoo's BART and
    # Llama with a fast memory of 2-3 KiB one worker stopped at 7-17 % more traffic after
    # 60 units, two interleaved found the optimum of the clock's two workers in 1-9 s.
    clock.limit(solver.parameters, units, workers=workers, seed=seed, interleave=True)
    # The bound comes from the LP of the full linearization: with two workers CP-SAT's
    # default portfolio runs only `default_lp`, whose bound stayed at the floor for 60 s
    # on the zoo's BART (fast memory of a quarter to three quarters of its live bytes);
    # with `max_lp` each of those cases is proven optimal in 1-11 s. One worker (a
    # counted clock) runs that linearization itself.
    if solver.parameters.num_workers == 1:
        solver.parameters.linearization_level = 2
    for subsolver in SUBSOLVERS:
        solver.parameters.subsolvers.append(subsolver)
    status = solver.solve(built.model) if watch is None else watch.solve(solver, built.model)
    clock.solved(solver)
    return _solved(built, solver, status)


# ---------------------------------------------------------------------------- residency


def _residency(built: _Model, track: Track) -> None:
    """Held bools, their sums, copies and the traffic of one track."""
    model, form = built.model, built.form
    steps = 1 if track.fixed else len(track.points)
    for i in range(steps):
        for m in track.allowed:
            built.held[(track.index, i, m)] = model.new_bool_var(
                f"held[{track.name}@{_at(track, i)},{_name(form, m)}]"
            )
    writes = {track.first, *(p for p, _ in track.writes)}
    for i in range(steps):
        held = [built.h(track, i, m) for m in track.allowed]
        if track.fixed or track.points[i] in writes:
            model.add_exactly_one(held)
        else:
            model.add_bool_or(held)
    for point, size in track.writes:
        i = _index(track, point)
        built.cost.extend(size * form.cost(m) * built.h(track, i, m) for m in track.allowed)
    _reads(built, track)
    if not track.fixed:
        for i in range(1, steps):
            _copies(built, track, i)


def _reads(built: _Model, track: Track) -> None:
    """Each point's reads come from one memory holding the track there."""
    form = built.form
    by_point: dict[int, int] = {}
    for point, size in track.reads:
        by_point[point] = by_point.get(point, 0) + size
    for point, size in sorted(by_point.items()):
        i = _index(track, point)
        if len(track.allowed) == 1:
            built.cost.append(size * form.cost(track.allowed[0]))
            continue
        chosen = []
        for m in track.allowed:
            read = built.model.new_bool_var(f"read[{track.name}@{point},{_name(form, m)}]")
            built.model.add_implication(read, built.h(track, i, m))
            built.cost.append(size * form.cost(m) * read)
            chosen.append(read)
        built.model.add_exactly_one(chosen)


def _copies(built: _Model, track: Track, i: int) -> None:
    """A memory entered at the i-th point is filled by a copy from one holding it at
    the point before and at this one."""
    model, form = built.model, built.form
    point = track.points[i]
    for target in track.allowed:
        sources = []
        for source in track.allowed:
            if source == target:
                continue
            copy = model.new_bool_var(
                f"copy[{track.name}@{point},{_name(form, source)}->{_name(form, target)}]"
            )
            model.add_implication(copy, built.h(track, i - 1, source))
            model.add_implication(copy, built.h(track, i, source))
            built.cost.append(track.size * (form.cost(source) + form.cost(target)) * copy)
            sources.append(copy)
        # held now and not before => some copy
        model.add(sum(sources) >= built.h(track, i, target) - built.h(track, i - 1, target))


# ---------------------------------------------------------------------------- capacity


def _capacity(built: _Model, m: int, capacity: int) -> None:
    """Bytes live in m at each point within the capacity; offsets that keep tracks held
    at one point apart."""
    form, model = built.form, built.model
    inside = [t for t in form.tracks if m in t.allowed]
    by_point: dict[int, list[tuple[Track, int]]] = {}
    for track in inside:
        for i, point in enumerate(track.points):
            by_point.setdefault(point, []).append((track, i))
    for point, present in sorted(by_point.items()):
        sized = [(t, i) for t, i in present if t.size]
        if sum(t.size for t, _ in sized) > capacity:
            model.add(sum(t.size * built.h(t, i, m) for t, i in sized) <= capacity)
    for track in inside:
        _offset(built, track, m, capacity)
    _apart(built, m, [t for t in inside if t.size], by_point)


def _offset(built: _Model, track: Track, m: int, capacity: int) -> None:
    """offset[k,m] = residue + modulus * slot within the capacity (its pin if pinned);
    a track that cannot fit is never held in m."""
    form, model = built.form, built.model
    memory = form.memories[m]
    members = member_buffers(form.problem, track)
    deltas = dict(track.rect.members)
    alignments = [(deltas[b.id], math.lcm(b.alignment, memory.alignment)) for b in members]
    residue = residue_of(alignments)
    modulus = math.lcm(*(a for _, a in alignments))
    pin = track.rect.pin
    room = capacity - track.size
    fits = residue is not None and (
        room >= residue if pin is None else pin <= room and pin % modulus == residue
    )
    if not fits:
        for i in range(1 if track.fixed else len(track.points)):
            model.add(built.h(track, i, m) == 0)
        built.offset[(track.index, m)] = 0
        return
    assert residue is not None
    if pin is not None:
        built.offset[(track.index, m)] = pin
        return
    slot = model.new_int_var(0, (room - residue) // modulus, f"slot[{track.name},{memory.name}]")
    built.slot[(track.index, m)] = slot
    built.frame[(track.index, m)] = (residue, modulus)
    built.offset[(track.index, m)] = residue + modulus * slot


def _apart(
    built: _Model, m: int, tracks: Sequence[Track], by_point: dict[int, list[tuple[Track, int]]]
) -> None:
    """Tracks held in m at one same point do not share a byte."""
    model, name = built.model, _name(built.form, m)
    pairs: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for present in by_point.values():
        sized = sorted(((t, i) for t, i in present if t.size), key=lambda ti: ti[0].index)
        for (a, i), (b, j) in itertools.combinations(sized, 2):
            pairs.setdefault((a.index, b.index), []).append((i, j))
    by_index = {t.index: t for t in tracks}
    for (ka, kb), steps in sorted(pairs.items()):
        a, b = by_index[ka], by_index[kb]
        together = model.new_bool_var(f"together[{a.name},{b.name},{name}]")
        for i, j in set(steps) if not (a.fixed and b.fixed) else {(0, 0)}:
            model.add_bool_or([built.h(a, i, m).Not(), built.h(b, j, m).Not(), together])
        below = model.new_bool_var(f"below[{a.name},{b.name},{name}]")
        above = model.new_bool_var(f"below[{b.name},{a.name},{name}]")
        model.add_bool_or([together.Not(), below, above])
        oa, ob = built.offset[(ka, m)], built.offset[(kb, m)]
        model.add(oa + a.size <= ob).only_enforce_if(below)
        model.add(ob + b.size <= oa).only_enforce_if(above)


# ---------------------------------------------------------------------------- hint, answer


def _hint(built: _Model, stays: Stays, offsets: dict[int, dict[str, int]]) -> None:
    for (k, i, m), var in built.held.items():
        built.model.add_hint(var, bool(stays.held[k][i] >> m & 1))
    for (k, m), slot in built.slot.items():
        track = built.form.tracks[k]
        placed = offsets.get(m, {})
        if track.name in placed:
            residue, modulus = built.frame[(k, m)]
            start = placed[track.name] - dict(track.rect.members)[track.name]
            built.model.add_hint(slot, (start - residue) // modulus)


def _solved(built: _Model, solver: cp_model.CpSolver, status: Any) -> Solved:
    name = solver.status_name(status).lower()
    bound = (
        math.ceil(solver.best_objective_bound - 1e-6)
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE)
        else 0
    )
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return Solved(name, None, {}, 0, bound)
    form = built.form
    held = []
    for track in form.tracks:
        steps = 1 if track.fixed else len(track.points)
        masks = []
        for i in range(steps):
            mask = sum(1 << m for m in track.allowed if solver.boolean_value(built.h(track, i, m)))
            masks.append(mask)
        held.append(tuple(masks * (len(track.points) if track.fixed else 1)))
    offsets: dict[int, dict[str, int]] = {}
    for m, memory in enumerate(form.memories):
        if memory.capacity is None:
            continue
        offsets[m] = {}
        for track in form.tracks:
            if m in track.allowed:
                base = (
                    int(solver.value(built.offset[(track.index, m)]))
                    if (track.index, m) in built.offset
                    else 0
                )
                for member, delta in track.rect.members:
                    offsets[m][member] = base + delta
    traffic = round(solver.objective_value)
    return Solved(name, Stays(tuple(held)), offsets, traffic, bound)


def _index(track: Track, point: int) -> int:
    return 0 if track.fixed else track.points.index(point)


def _at(track: Track, i: int) -> str:
    return "life" if track.fixed else str(track.points[i])


def _name(form: TierForm, m: int) -> str:
    return form.memories[m].name


__all__ = ["Solved", "solve_tiers"]
