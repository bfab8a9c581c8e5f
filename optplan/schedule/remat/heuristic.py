"""The heuristic baseline and anytime path: free a tensor early and compute it again.

From a start order (a plain schedule) under a memory target, steps:

1. Evaluate the schedule: every computed instance, its span and its readers
   (`schedule.graph.instances`), and the bytes at every step.
2. At the step of the peak, every instance held there and not read there whose op may
   run again is a candidate: its readers after the peak read a new instance instead,
   made by running its op again just before the first of them. The new step extends
   the lives of that op's own inputs to it, unless (recursively, a level at a time)
   those are made again too.
3. Each candidate's bytes over the target (summed over the steps) are computed from the
   profile directly; the one that removes the most bytes over the target per unit of
   extra compute is taken (free ops first). Repeat from 1 until the peak is within the
   target, or nothing helps (no schedule found from this start).
4. Prune: drop every recomputation that is no longer needed, dearest first.

    step:     0    1    2    3    4    5         a is read at 1 and at 5
    a:        [=========================]        held across the peak at 3
    after:    [=========]          [====]        a made again just before step 5
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from optplan.schedule.graph import Graph, instances


@dataclass(frozen=True, slots=True)
class _State:
    """One schedule evaluated (step 1)."""

    steps: tuple[int, ...]
    buffer: tuple[int, ...]  # instance -> its buffer
    start: np.ndarray
    end: np.ndarray
    readers: tuple[tuple[int, ...], ...]  # instance -> steps that read it
    made: dict[int, list[int]]  # buffer -> its instances, in the order made
    profile: np.ndarray  # bytes held at each step
    crossing: np.ndarray  # bytes held from step r - 1 into step r (index r)


def evaluate(graph: Graph, steps: Sequence[int]) -> _State:
    buffers, spans = instances(graph, steps)
    made: dict[int, list[int]] = {}
    for k in sorted(range(len(buffers)), key=lambda k: spans[k][0]):
        made.setdefault(buffers[k], []).append(k)
    starts = {b: [spans[k][0] for k in ks] for b, ks in made.items()}
    readers: list[list[int]] = [[] for _ in buffers]
    for t, v in enumerate(steps):
        for b in graph.reads[v]:
            ks = made[b]
            # The latest instance made before step t (live-in ones count as made before 0).
            i = bisect.bisect_left(starts[b], t) - 1
            readers[ks[max(i, 0)]].append(t)
    n = len(steps)
    sizes = np.array([graph.sizes[b] for b in buffers], dtype=np.int64)
    start = np.array([s for s, _ in spans], dtype=np.int64)
    end = np.array([e for _, e in spans], dtype=np.int64)
    change = np.zeros(n + 2, dtype=np.int64)
    np.add.at(change, start, sizes)
    np.add.at(change, end, -sizes)
    profile = graph.base_bytes + np.cumsum(change)[:n]
    across = np.zeros(n + 2, dtype=np.int64)
    long = end > start + 1
    np.add.at(across, start[long] + 1, sizes[long])
    np.add.at(across, end[long], -sizes[long])
    crossing = graph.base_bytes + np.cumsum(across)[: n + 1]
    return _State(tuple(steps), tuple(buffers), start, end, tuple(map(tuple, readers)), made, profile, crossing)


def profile_of(graph: Graph, steps: Sequence[int]) -> np.ndarray:
    """The bytes held at each step, as `evaluate` counts them, without the rest of its
    state: the trial schedules of steps 3 and 4 need only this (evaluate's other tables
    took two thirds of the time on MOCCASIN's 1,000-node graph)."""
    n = len(steps)
    change = [0] * (n + 1)
    sizes = graph.sizes
    start: dict[int, int] = {}  # buffer -> step of its latest instance
    end: dict[int, int] = {}
    for b in graph.live_in:
        start[b], end[b] = 0, 1
    for t, v in enumerate(steps):
        for b in graph.reads[v]:
            end[b] = t + 1  # a step reads the latest instance, made before it
        for b in graph.creates[v]:
            if b in start:  # the previous instance is complete
                change[start[b]] += sizes[b]
                change[end[b]] -= sizes[b]
            start[b], end[b] = t, t + 1
    for b in graph.live_out:
        if b in end:
            end[b] = n
    for b, t in start.items():
        change[t] += sizes[b]
        change[end[b]] -= sizes[b]
    return graph.base_bytes + np.cumsum(np.array(change[:n], dtype=np.int64))


def extra_cost(graph: Graph, steps: Sequence[int]) -> int:
    """The compute of every run after an op's first (each op costs 1 without costs)."""
    seen: set[int] = set()
    total = 0
    for v in steps:
        if v in seen:
            total += graph.costs[v] if graph.costs else 1
        seen.add(v)
    return total


def greedy(
    graph: Graph,
    start: Sequence[int],
    target: int,
    recomputable: Sequence[bool],
    deadline: float,
) -> tuple[int, ...] | None:
    """A schedule from `start` whose peak is at most `target` (module docstring), or None."""
    creator = {b: v for v, bufs in enumerate(graph.creates) for b in bufs}
    state = evaluate(graph, start)
    while int(state.profile.max(initial=0)) > target:
        if time.perf_counter() > deadline:
            return None
        found = _best_move(graph, state, target, recomputable, creator, deadline)
        if found is None:
            return None
        state = evaluate(graph, found)
    return prune(graph, state.steps, target)


def _key(profile: np.ndarray, target: int) -> tuple[int, int, int]:
    """How far a profile is from the target: its peak, the steps at the peak, the bytes
    over the target summed over the steps (smaller is nearer)."""
    peak = int(profile.max(initial=0))
    return peak, int((profile == peak).sum()), int(np.maximum(profile - target, 0).sum())


def _best_move(
    graph: Graph,
    state: _State,
    target: int,
    recomputable: Sequence[bool],
    creator: dict[int, int],
    deadline: float,
) -> tuple[int, ...] | None:
    """Steps 2 and 3: the steps after the best move, or None when no move helps."""
    p = int(np.argmax(state.profile))
    before = _key(state.profile, target)
    scored: list[tuple[tuple[int, int, int], int, int]] = []
    for k, b in enumerate(state.buffer):
        v = creator.get(b)
        if v is None or not recomputable[v] or not state.start[k] < p < state.end[k]:
            continue
        later = [t for t in state.readers[k] if t > p]
        if not later or p in state.readers[k]:
            continue
        # Ranked by making v alone again; a move that does not help may once v's inputs
        # are made again too, so the first few are tried with those as well.
        scored.append((_key(_moved_profile(graph, state, k, v, later[0]), target), k, later[0]))
    scored.sort()
    best: tuple[tuple[int, tuple[int, int, int]], tuple[int, ...]] | None = None
    for _, k, r in scored[:6]:
        if time.perf_counter() > deadline:
            break
        v = creator[state.buffer[k]]
        for depth in (0, 1, 2, 4, 8, 64):
            chain = _chain(graph, state, v, r, depth, recomputable, creator) + [v]
            if depth and len(chain) == 1:
                break
            steps = state.steps[:r] + tuple(chain) + state.steps[r:]
            key = _key(profile_of(graph, steps), target)
            cost = sum(graph.costs[u] if graph.costs else 1 for u in chain)
            if key < before and (best is None or (cost, key) < best[0]):
                best = ((cost, key), steps)
    return None if best is None else best[1]


def _moved_profile(graph: Graph, state: _State, k: int, v: int, r: int) -> np.ndarray:
    """The profile after instance k's readers from step r on read a new instance made by
    running v again just before step r (no other op made again)."""
    size = graph.sizes[state.buffer[k]]
    profile = state.profile.copy()
    kept = [t for t in state.readers[k] if t < r]
    cut = (max(kept) if kept else int(state.start[k])) + 1
    profile[cut:r] -= size
    new = int(state.crossing[r]) + sum(graph.sizes[b] for b in graph.creates[v] if b != state.buffer[k])
    for a in graph.reads[v]:
        j = _latest(state, a, r)
        if state.end[j] <= r:
            profile[state.end[j] : r] += graph.sizes[a]
            new += graph.sizes[a]
    return np.insert(profile, r, new)


def _latest(state: _State, b: int, t: int) -> int:
    """The instance of buffer b a read at step t takes."""
    ks = state.made[b]
    i = 0
    while i + 1 < len(ks) and state.start[ks[i + 1]] < t:
        i += 1
    return ks[i]


def _chain(
    graph: Graph, state: _State, v: int, r: int, depth: int, recomputable: Sequence[bool], creator: dict[int, int]
) -> list[int]:
    """Ops to run again before v at step r so that v's inputs whose instances are dead by
    then are made again rather than kept (`depth` levels up), in an order that makes each
    one's inputs first (that of their first runs). Each op is visited once: a walk of
    paths instead spent 530 s on one 250-node graph."""
    chain: set[int] = set()
    frontier = [v]
    for _ in range(depth):
        following = []
        for u in frontier:
            for a in graph.reads[u]:
                w = creator.get(a)
                if w is None or w in chain or not recomputable[w] or state.end[_latest(state, a, r)] > r:
                    continue
                chain.add(w)
                following.append(w)
        frontier = following
        if not frontier:
            break
    first: dict[int, int] = {}
    for t, u in enumerate(state.steps):
        first.setdefault(u, t)
    return sorted(chain, key=lambda u: first[u])


def prune(graph: Graph, steps: Sequence[int], target: int) -> tuple[int, ...]:
    """Step 4: without each recomputation, dearest first, where the peak stays in target."""
    steps = tuple(steps)
    seen: set[int] = set()
    again = []
    for t, v in enumerate(steps):
        if v in seen:
            again.append(t)
        seen.add(v)
    for t in sorted(again, key=lambda t: -(graph.costs[steps[t]] if graph.costs else 1)):
        trial = steps[:t] + (-1,) + steps[t + 1 :]
        shorter = tuple(v for v in trial if v >= 0)
        if int(profile_of(graph, shorter).max(initial=0)) <= target:
            steps = trial
    return tuple(v for v in steps if v >= 0)
