"""Greedy tries: the same compiled greedy loop in perturbed orders, the best kept.

On idealloc's real traces the arena a greedy order reaches swings by several per cent
when a few rectangles swap places in it: on S_1 (28,526 buffers) size/best gives 1.58 %
above the live-bytes bound, and lifetime/best with every lifetime scaled by a factor
drawn from [0.95, 1.05] gave 0.59 % to 11 % over six draws. idealloc spends its
"tries" the same way. With one run at 0.5-1 s, a time limit buys dozens of them.

Steps, while one more run (its work: the rectangles it places) fits before the deadline:
1. Draw a noise factor in [1 - NOISE, 1 + NOISE] for every movable rectangle.
2. Order by noisy size (ties: earlier start), and by noisy lifetime (ties: larger,
   then earlier), as greedy's `size` and `lifetime` orders do without noise.
3. Place each with first fit and best fit; keep a placement whose top is lower.

The draws come from `seed`, so a call is reproducible given the same number of runs.

`descend` searches the placement sequence itself, for plans that must fit a capacity (a
recomputed schedule's instances, whose live bytes the schedule has brought to the
budget at many steps at once, where greedy's orders pack 7-17 % above them). Steps:
1. Start from greedy's `lifetime` sequence (longest-lived first), placed with first
   fit. On recomputed schedules of MOCCASIN's 100- and 250-node graphs (70 and 60 %),
   2,000 moves from it end lowest in the median of five seeds: 0.4 and 9.5 % above the
   budget, against 1.3 and 11.6 % from the plan's own placement (rectangles by its
   offsets, which starts lowest but stalls soonest) and 0.9 and 10.5 % from `area`.
2. Move one rectangle to a random earlier place in the sequence: one whose top is above
   the target (the capacity, else the live bytes) seven times in ten, any other
   otherwise. Place again with first fit; keep the sequence when neither the top nor
   the bytes above the target summed over the rectangles grew.
3. Repeat until the top is within the target, `work` moves were tried, or the deadline.
On MOCCASIN's 500-node graph at 60 %, a schedule whose live bytes meet 95 % of the
budget packs 8.0 % above the budget by greedy's best order and 4.3 % above it after
2,000 moves.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from optplan.budget import RECTS_PER_UNIT, Clock, now, spend
from optplan.planners.common import Rect
from optplan.planners.greedy.kernel import Compiled
from optplan.planners.watch import Watch
from optplan.problem import Problem, columns_of, lower_bound
from optplan.problem.columns import fits_int64
from optplan.problem.plan import Plan, Status

NOISE = 0.05
# One move of the descent places its sequence again with the compiled first fit: about
# this many rectangles a second on schedules of 300-1,000 instances.
DESCENT_RECTS_PER_UNIT = 500_000


def tries(
    part: Sequence[Rect],
    offsets: list[int],
    deadline: float,
    *,
    clock: Clock,
    seed: int | tuple[int, ...] = 0,
    watch: Watch | None = None,
) -> list[int]:
    """Offsets (by rect index, like `offsets`) with the part's top no higher, from
    perturbed greedy runs made before `deadline` (a `clock` reading) or before `watch` is
    stopped. A run counts `len(part) / RECTS_PER_UNIT` units of work, and none starts
    unless that much is left."""
    runner = Compiled.build(part)
    if runner is None:
        return offsets
    best = np.array([offsets[r.index] for r in part], dtype=np.int64)
    best_top = runner.top(best)
    rng = np.random.default_rng(seed)
    movable = runner.movable
    size = runner.size[movable].astype(np.float64)
    length = runner.length[movable].astype(np.float64)
    start = runner.start_time[movable]
    cost = len(part) / RECTS_PER_UNIT
    while not clock.past(deadline - cost) and not (watch is not None and watch.stopped):
        for noisy in ("size", "lifetime"):
            noise = rng.uniform(1 - NOISE, 1 + NOISE, len(movable))
            if noisy == "size":
                keys: tuple[np.ndarray, ...] = (start, -size * noise)
            else:
                keys = (start, -size, -length * noise)
            sequence = movable[np.lexsort(keys)].tobytes()
            for fit in ("first", "best"):
                if clock.past(deadline - cost):
                    break
                placed = runner.whole(sequence, fit)
                clock.spend(cost)
                top = runner.top(placed)
                if top < best_top:
                    best, best_top = placed, top
    improved = list(offsets)
    for position, rect in enumerate(part):
        improved[rect.index] = int(best[position])
    return improved


def descend(
    problem: Problem, plan: Plan, deadline: float, *, work: int = 10_000, seed: int = 0
) -> Plan:
    """A plan of `problem` with a top lower than `plan`'s, from the search of the
    module docstring. `plan` itself where it fits its target already, where the search
    finds nothing lower, or where the problem is not one interval a buffer without pins
    or aliases (or numba is missing)."""
    columns = columns_of(problem)
    if columns is None or columns.pinned or not fits_int64(columns):
        return plan
    runner = Compiled.from_columns(columns.start, columns.end, columns.size, columns.alignment)
    floor = lower_bound(problem)
    target = floor if problem.memories[0].capacity is None else problem.memories[0].capacity
    if runner is None or not plan.offsets or plan.arena <= target:
        return plan
    lifetime = runner.sequence("lifetime")
    assert isinstance(lifetime, bytes)
    rng = np.random.default_rng(seed)
    placed = _search(runner, np.frombuffer(lifetime, dtype=np.int64), target, work, deadline, rng)
    top = runner.top(placed)
    if top >= plan.arena:
        return plan
    status = Status.OPTIMAL if top <= floor else Status.FEASIBLE
    return Plan(
        dict(zip(columns.ids, placed.tolist())),
        top,
        status,
        plan.planner,
        floor,
        plan.seconds,
        floor,
        plan.detail,
    )


def _search(
    runner: Compiled,
    sequence: np.ndarray,
    target: int,
    work: int,
    deadline: float,
    rng: np.random.Generator,
) -> np.ndarray:
    """Steps 2 and 3 from one sequence: the lowest placement found."""
    placed = runner.whole(sequence.tobytes(), "first")
    key = _key(runner, placed, target)
    for _ in range(work):
        if key[0] <= target or now() > deadline:
            break
        spend(len(sequence) / DESCENT_RECTS_PER_UNIT)
        high = np.nonzero(placed + runner.size > target)[0]
        k = int(rng.choice(high)) if rng.random() < 0.7 else int(rng.integers(len(sequence)))
        at = int(np.nonzero(sequence == k)[0][0])
        trial = np.insert(np.delete(sequence, at), int(rng.integers(0, at + 1)), k)
        offsets = runner.whole(trial.tobytes(), "first")
        found = _key(runner, offsets, target)
        if found <= key:
            sequence, placed, key = trial, offsets, found
    return placed


def _key(runner: Compiled, offsets: np.ndarray, target: int) -> tuple[int, int]:
    """The top, and the bytes above `target` summed over the rectangles."""
    tops = offsets + runner.size
    return int(tops.max(initial=0)), int(np.maximum(tops - target, 0).sum())
