"""Large-neighbourhood search: lower the top of a part too big for one CP-SAT model.

A CP-SAT model of a whole 20,000-60,000-rectangle part (idealloc's S_1, Y_1, pangu_2.6B)
takes gigabytes and minutes before its first solution. The arena is set by the few
rectangles that reach the top, so this re-solves small bands around them instead:

    bytes
    arena ┤      ┌──r──┐            r reaches the arena; the band is [low, arena)
          │ ┌─a─┐│     │┌─b─┐       freed: r and the highest rectangles live with it
    low   ┤─┼───┼┼─────┼┼───┼────   obstacles: the others live with a freed one that
          │ └───┘└─────┘└───┘          reach into the band, fixed where they are
          └─────────────────── time

Steps:
1. Start from the given offsets (the best greedy plan).
2. Take a rectangle at the top (in turn, when several are) and free it with the
   `width - 1` highest-topped rectangles live with it in time; the band starts at the
   lowest offset among them.
3. Model the band with CP-SAT: the freed rectangles get offsets inside the band, every
   other rectangle live with one of them and reaching into the band is a fixed obstacle,
   and the highest top of the freed rectangles is minimised from the current placement
   (the hint).
4. Keep the new placement if that top went down. A neighbourhood that gave nothing is
   tried again wider (WIDTHS); when no width helps any rectangle at the top, stop.
5. Stop when the time left is less than the last neighbourhood took (building a band's
   model on Y_1 takes seconds, and the solver's own limit does not cover it), when the
   arena meets the floor, or when the caller's watch is stopped (Ctrl-C).

Anytime: the offsets are valid after every step. The search proves no bound; the
caller reports the live-bytes bound as always.
"""

from __future__ import annotations

import numpy as np
from ortools.sat.python import cp_model

from optplan.budget import Clock
from optplan.planners.common import Rect
from optplan.planners.watch import Watch

WIDTHS = (48, 96, 192, 384)  # freed rectangles per neighbourhood, tried in turn
STEP_WORK = 2.0  # most work (or seconds) one neighbourhood may take


def improve(
    part: list[Rect],
    offsets: list[int],
    between: tuple[int, float],
    clock: Clock,
    *,
    seed: int = 0,
    workers: int = 2,
    watch: Watch | None = None,
) -> list[int]:
    """Offsets (by rect index, like `offsets`) with the part's top no higher and not
    below `floor`, found before `deadline` (`between`: the two; the deadline a `clock`
    reading), or before `watch` is stopped (which also ends a band's solve)."""
    floor, deadline = between
    best = list(offsets)
    start = np.array([r.start for r in part], dtype=np.int64)
    end = np.array([r.end for r in part], dtype=np.int64)
    size = np.array([r.size for r in part], dtype=np.int64)
    movable = np.array([r.pin is None for r in part])
    at = np.array([best[r.index] for r in part], dtype=np.int64)
    failed: set[tuple[int, int]] = set()
    step = 0.0  # what the last neighbourhood took: one more that much must fit
    while not clock.past(deadline - step) and not (watch is not None and watch.stopped):
        began = clock.now()
        tops = at + size
        arena = int(tops.max(initial=0))
        if arena <= floor:
            break
        chosen = _next_neighbourhood(tops, arena, movable, failed)
        if chosen is None:
            break
        centre, width = chosen
        freed = _freed(centre, width, start, end, tops, movable)
        limits = (min(STEP_WORK, deadline - began), seed, workers)
        placed = _solve_band(part, freed, at, (start, end, size), limits, clock, watch)
        step = clock.now() - began
        if placed is None:
            failed.add((centre, width))
            continue
        at[freed] = placed
        failed.clear()  # the placement changed: what failed before may work now
    for position, rect in enumerate(part):
        best[rect.index] = int(at[position])
    return best


def _next_neighbourhood(
    tops: np.ndarray, arena: int, movable: np.ndarray, failed: set[tuple[int, int]]
) -> tuple[int, int] | None:
    """A rectangle at the top and a width not yet tried on it; None when all failed."""
    for width in WIDTHS:
        for centre in np.flatnonzero((tops == arena) & movable).tolist():
            if (centre, width) not in failed:
                return centre, width
    return None


def _freed(
    centre: int,
    width: int,
    start: np.ndarray,
    end: np.ndarray,
    tops: np.ndarray,
    movable: np.ndarray,
) -> np.ndarray:
    """`centre` and the highest-topped movable rectangles live with it, `width` at most."""
    live = (start < end[centre]) & (start[centre] < end) & movable
    live[centre] = False
    others = np.flatnonzero(live)
    others = others[np.argsort(-tops[others], kind="stable")[: width - 1]]
    return np.concatenate(([centre], others)).astype(np.int64)


def _solve_band(
    part: list[Rect],
    freed: np.ndarray,
    at: np.ndarray,
    columns: tuple[np.ndarray, np.ndarray, np.ndarray],
    limits: tuple[float, int, int],
    clock: Clock,
    watch: Watch | None,
) -> np.ndarray | None:
    """New offsets for `freed` inside their band with a lower highest top; None if the
    solver found none within its share of `clock` (`limits`: that share, the seed and the
    workers). `columns` are the part's start, end and size."""
    start, end, size = columns
    low = int(at[freed].min())
    old_top = int((at[freed] + size[freed]).max())
    live = np.zeros(len(part), dtype=bool)
    for f in freed.tolist():
        live |= (start < end[f]) & (start[f] < end)
    live &= at + size > low
    live[freed] = False
    model = cp_model.CpModel()
    top = model.new_int_var(low, old_top, "top")
    times: list[cp_model.IntervalVar] = []
    spaces: list[cp_model.IntervalVar] = []
    slots: list[cp_model.IntVar] = []
    for f in freed.tolist():
        rect = part[f]
        residue = rect.residue or 0
        first = -(-(low - residue) // rect.modulus)
        last = (old_top - rect.size - residue) // rect.modulus
        slot = model.new_int_var(first, last, f"slot[{rect.root}]")
        offset = residue + rect.modulus * slot
        model.add(offset + rect.size <= top)
        model.add_hint(slot, (int(at[f]) - residue) // rect.modulus)
        space = model.new_fixed_size_interval_var(offset, rect.size, f"bytes[{rect.root}]")
        _add_times(model, rect, space, times, spaces)
        slots.append(slot)
    for o in np.flatnonzero(live).tolist():
        rect = part[o]
        space = model.new_fixed_size_interval_var(int(at[o]), rect.size, f"bytes[{rect.root}]")
        _add_times(model, rect, space, times, spaces)
    model.add_no_overlap_2d(times, spaces)
    model.add_hint(top, old_top)
    model.minimize(top)
    solver = cp_model.CpSolver()
    units, seed, workers = limits
    clock.limit(solver.parameters, units, workers=workers, seed=seed)
    code = solver.solve(model) if watch is None else watch.solve(solver, model)
    clock.solved(solver)
    if code not in (cp_model.OPTIMAL, cp_model.FEASIBLE) or solver.value(top) >= old_top:
        return None
    return np.array(
        [
            (part[f].residue or 0) + part[f].modulus * solver.value(s)
            for f, s in zip(freed.tolist(), slots)
        ],
        dtype=np.int64,
    )


def _add_times(
    model: cp_model.CpModel, rect: Rect, space: cp_model.IntervalVar, times: list, spaces: list
) -> None:
    for j, iv in enumerate(rect.live):
        times.append(
            model.new_fixed_size_interval_var(iv.start, iv.end - iv.start, f"time[{rect.root}#{j}]")
        )
        spaces.append(space)
