"""Greedy on a problem held as columns: no object per buffer from CSV to plan.

`greedy` builds a `Rect` per alias class, splits the list into parts, and gathers each
part back into arrays for the compiled loop: at 1,000,000 buffers the rectangles alone
took 6.6 s and 230 MB, the split 2 s. A problem without aliases or pins whose buffers
have one interval each is already its own rectangles, so here, in steps:

1. The columns (`optplan.problem.columns.columns_of`) are the rectangles: class = buffer, residue
   0, modulus = alignment.
2. Parts by a NumPy sweep: buffers sorted by start; a part ends where the next start is
   at or past every end so far. Buffers of size 0 take offset 0 and no part. Parts come
   in the order of their lowest buffer, members in buffer order, as `common.split` gives.
3. Each part goes to `greedy.kernel.Compiled.from_columns` and `greedy.runs.best_runs`: the
   same runs, orders and loops as `greedy.best_offsets`, so the same offsets.
4. The plan: offsets by buffer id, the arena, the lower bound from the same columns.

`plan_columns` returns None when it cannot take the problem (aliases, pins, several
intervals, numba missing, numbers too large for int64), and `greedy` takes its general
path.
"""

from __future__ import annotations

import numpy as np

from optplan.planners.common import now, split_columns
from optplan.planners.greedy.kernel import COMPILED, Compiled, stack_columns
from optplan.planners.greedy.runs import best_runs
from optplan.planners.greedy.stop import Limits, unlimited
from optplan.problem import Problem, columns_of, lower_bound
from optplan.problem.columns import BufferColumns, fits_int64
from optplan.problem.plan import Plan, Status


def plan_columns(
    problem: Problem,
    orders: tuple[str, ...],
    fits: tuple[str, ...],
    name: str,
    started: float,
    limits: Limits | None = None,
) -> Plan | None:
    """The greedy plan of `problem` from its columns within `limits` (a run the guard cut
    is dropped, and the plan says so); None when the columns cannot be used."""

    limits = unlimited() if limits is None else limits
    columns = columns_of(problem) if COMPILED else None
    if columns is None or columns.pinned or not fits_int64(columns):
        return None
    floor = lower_bound(problem)
    offsets = np.zeros(len(columns), dtype=np.int64)
    detail: dict[str, object] = {"order": "naive", "arenas": {}}
    highest = -1
    cut = False
    parts = split_columns(columns)
    for part in parts:
        found = _best_of_part(columns, part, orders, fits, floor, limits)
        if found is None:
            return None
        placed, runs = found
        offsets[part] = placed
        arena = int((placed + columns.size[part]).max(initial=0))
        cut = cut or "cut_run" in runs
        if arena > highest:
            highest, detail = arena, runs
    detail["parts"] = len(parts)
    detail.update(limits.detail(cut))
    return _plan(problem, columns, offsets, floor, name, started, detail)


def _best_of_part(
    columns: BufferColumns,
    part: np.ndarray,
    orders: tuple[str, ...],
    fits: tuple[str, ...],
    floor: int,
    limits: Limits,
) -> tuple[np.ndarray, dict[str, object]] | None:
    """The best run's offsets on one part, and its detail; None where the compiled loop
    cannot take it. Once the guard is up no loop is built (at 1,000,000 buffers that
    alone takes a second): the part keeps its naive stack."""
    size, alignment = columns.size[part], columns.alignment[part]
    if limits.stop[0]:
        stacked = stack_columns(size, alignment)
        arena = int((stacked + size).max(initial=0))
        return stacked, {"order": "naive", "arenas": {"naive": arena}, "cut_run": "all"}
    runner = Compiled.from_columns(columns.start[part], columns.end[part], size, alignment)
    if runner is None:
        return None
    until = (limits.deadline, limits.clock)
    placed, runs = best_runs(
        runner, runner.stack(), len(part), orders, fits, floor, *until, limits.stop
    )
    return np.asarray(placed, dtype=np.int64), runs


def _plan(
    problem: Problem,
    columns: BufferColumns,
    offsets: np.ndarray,
    floor: int,
    name: str,
    started: float,
    detail: dict[str, object],
) -> Plan:
    """As `common.make_plan` makes it from rectangles."""
    arena = int((offsets + columns.size).max(initial=0))
    seconds = now() - started
    if (capacity := problem.memories[0].capacity) is not None and arena > capacity:
        detail["reason"] = f"arena {arena} exceeds capacity {capacity}"
        return Plan({}, 0, Status.UNKNOWN, name, floor, seconds, floor, detail)
    status = Status.OPTIMAL if arena <= floor else Status.FEASIBLE
    placed = dict(zip(columns.ids, offsets.tolist()))
    return Plan(placed, arena, status, name, floor, now() - started, floor, detail)
