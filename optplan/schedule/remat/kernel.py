"""The recomputation heuristics' hot loop, compiled: the bytes held at each step of a
schedule whose steps may run an op more than once (`heuristic.profile_of`'s meaning).

The peak heuristic tries tens of schedules a move and hundreds of moves on MOCCASIN's
graphs of 500 and 1,000 nodes; profiled on the 1,000-node graph at 60 %, this count in
Python took half of its 34 s. `Flat` holds the graph as the arrays the kernel reads,
built once a search.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from optplan.planners.jit import njit
from optplan.schedule.graph import Graph


class Flat:
    """`graph` as flat arrays; calling it with steps gives `profile_of`'s profile."""

    def __init__(self, graph: Graph) -> None:
        self.base = graph.base_bytes
        self.sizes = np.array(graph.sizes, dtype=np.int64)
        self.live_in = np.zeros(len(graph.sizes), dtype=np.bool_)
        self.live_in[list(graph.live_in)] = True
        self.live_out = np.zeros(len(graph.sizes), dtype=np.bool_)
        self.live_out[list(graph.live_out)] = True
        self.reads_ptr, self.reads_idx = _csr(graph.reads)
        self.creates_ptr, self.creates_idx = _csr(graph.creates)

    def __call__(self, steps: Sequence[int] | np.ndarray) -> np.ndarray:
        return _profile(
            np.asarray(steps, dtype=np.int64),
            self.reads_ptr,
            self.reads_idx,
            self.creates_ptr,
            self.creates_idx,
            self.sizes,
            self.live_in,
            self.live_out,
            self.base,
        )

    def key(self, steps: np.ndarray, target: int) -> tuple[int, int, int]:
        """`distance` of the profile of `steps` from `target`."""
        return distance(self(steps), target)


def distance(profile: np.ndarray, target: int) -> tuple[int, int, int]:
    """How far a profile is from `target`: its peak, the steps at the peak, the bytes
    over the target summed over the steps (smaller is nearer)."""
    peak, count, over = _key(profile, target)
    return int(peak), int(count), int(over)


def _csr(rows: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    ptr = np.zeros(len(rows) + 1, dtype=np.int64)
    ptr[1:] = np.cumsum([len(row) for row in rows])
    idx = np.array([b for row in rows for b in row], dtype=np.int64)
    return ptr, idx


@njit(cache=True)
def _profile(steps, reads_ptr, reads_idx, creates_ptr, creates_idx, sizes, live_in, live_out, base):  # type: ignore[no-untyped-def]
    """Each instance is held from its step to its last reader's inclusive (a live-in
    buffer from step 0, the last instance of a live-out one to the end); the bytes held
    at each step, `base` included."""
    n = steps.shape[0]
    change = np.zeros(n + 1, dtype=np.int64)
    start = np.full(sizes.shape[0], -1, dtype=np.int64)  # the latest instance's step
    end = np.zeros(sizes.shape[0], dtype=np.int64)  # one past its last reader's
    for b in range(sizes.shape[0]):
        if live_in[b]:
            start[b], end[b] = 0, 1
    for t in range(n):
        v = steps[t]
        for i in range(reads_ptr[v], reads_ptr[v + 1]):
            end[reads_idx[i]] = t + 1
        for i in range(creates_ptr[v], creates_ptr[v + 1]):
            b = creates_idx[i]
            if start[b] >= 0:  # the previous instance is complete
                change[start[b]] += sizes[b]
                change[end[b]] -= sizes[b]
            start[b], end[b] = t, t + 1
    for b in range(sizes.shape[0]):
        if start[b] >= 0:
            change[start[b]] += sizes[b]
            change[n if live_out[b] else end[b]] -= sizes[b]
    out = np.empty(n, dtype=np.int64)
    held = base
    for t in range(n):
        held += change[t]
        out[t] = held
    return out


@njit(cache=True)
def _key(profile, target):  # type: ignore[no-untyped-def]
    peak = profile[0] if profile.shape[0] else 0
    count = over = 0
    for held in profile:
        if held > peak:
            peak, count = held, 0
        if held == peak:
            count += 1
        if held > target:
            over += held - target
    return peak, count, over


def warm_kernels() -> None:
    """Compile the kernel: one profile of a schedule of three ops, one run again."""
    graph = Graph(sizes=(2, 1, 3), creates=((0,), (1,), (2,)), reads=((), (0,), (0, 1)), preds=((), (0,), (0, 1)))
    flat = Flat(graph)
    flat.key(np.array((0, 1, 0, 2), dtype=np.int64), 4)
