"""Lower bounds on the optimal arena, each with the name of how it was proven.

No arena is smaller than the bytes live at any one point (`live-bytes`). For buffers
with plain intervals that is also the heaviest set of pairwise-overlapping buffers, so a
clique bound adds nothing; what can add is an exact answer on a piece of the problem:

    time:     0    1    2    3    4    5    6
    peak:               ^ heaviest point
    window:        [=========)              the buffers live in [1, 4), cut to it
                                            pack them alone: any packing of the whole
                                            packs them too, so their optimum bounds it

- `search`: the skyline search proves "nothing fits in C bytes" for the whole problem,
  so the optimum is at least C + step (every canonical peak is a multiple of the
  problem's granularity).
- `window`: the same proof on the buffers of a time window around the heaviest point,
  with lifetimes cut to the window (fewer conflicts, so a relaxation); small windows
  are proven fast and the window grows while time remains.

`best_bound` runs them in that order of cost and returns the largest.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from optplan.planners.search import SearchStatus, granularity, search
from optplan.problem import Buffer, Interval, Problem, alias_classes, live_profile, lower_bound


@dataclass(frozen=True, slots=True)
class Bound:
    """`value` bytes at least, proven by `name`."""

    value: int
    name: str


def live_bytes(problem: Problem) -> Bound:
    return Bound(lower_bound(problem), "live-bytes")


def search_bound(problem: Problem, start: int, *, time_limit: float, seed: int = 0) -> int:
    """The first capacity from `start` up (in steps of the granularity) at which the
    search does not prove infeasibility within the time; `start` if it proves nothing."""
    deadline = time.perf_counter() + time_limit
    step = granularity(problem)
    capacity = -(-start // step) * step
    while True:
        left = deadline - time.perf_counter()
        if left <= 0:
            return capacity
        result = search(problem, capacity, time_limit=left, seed=seed)
        if result.status is not SearchStatus.INFEASIBLE:
            return capacity
        capacity += step


def window_problem(problem: Problem, start: int, end: int) -> Problem:
    """The alias classes live in `[start, end)`, cut to it, as plain buffers."""
    buffers = []
    for cls in alias_classes(problem):
        live = tuple(
            Interval(max(iv.start, start), min(iv.end, end))
            for iv in cls.live
            if iv.start < end and start < iv.end
        )
        if live and cls.size > 0:
            buffers.append(Buffer(cls.root, cls.size, live, cls.alignment))
    return Problem(tuple(buffers))


def window_bound(problem: Problem, floor: int, *, time_limit: float, seed: int = 0) -> int:
    """The best bound from windows around the heaviest point, widening while time lasts.

    Each window is asked only from `floor` (a bound already proven for the whole) up: a
    window that fits there proves nothing new and is simply passed over."""
    deadline = time.perf_counter() + time_limit
    profile = live_profile(problem)
    if not profile:
        return floor
    points = [point for point, _ in profile]
    peak = max(range(len(profile)), key=lambda k: profile[k][1])
    best = floor
    radius = 1
    while radius <= len(points):
        left = deadline - time.perf_counter()
        if left <= 0:
            break
        start = points[max(0, peak - radius)]
        end = points[min(len(points) - 1, peak + radius)]
        window = window_problem(problem, start, end)
        best = max(best, search_bound(window, best, time_limit=left / 2, seed=seed))
        if start == points[0] and end == points[-1]:
            break
        radius *= 2
    return best


def best_bound(problem: Problem, *, time_limit: float, seed: int = 0) -> Bound:
    """The largest bound the methods above prove within `time_limit` seconds."""
    deadline = time.perf_counter() + time_limit
    bound = live_bytes(problem)
    proven = window_bound(problem, bound.value, time_limit=time_limit / 2, seed=seed)
    if proven > bound.value:
        bound = Bound(proven, "window")
    left = deadline - time.perf_counter()
    proven = search_bound(problem, bound.value, time_limit=max(left, 0.0), seed=seed)
    if proven > bound.value:
        bound = Bound(proven, "search")
    return bound
