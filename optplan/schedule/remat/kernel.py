"""The recomputation heuristics' hot loops, compiled: the bytes held at each step of a
schedule whose steps may run an op more than once (`heuristic.profile_of`'s meaning), a
schedule's instances and their readers (`instances`), the ops to make again before one
(`levels`), and how far the profile of one move is from a target (`moved_distance`).

The peak heuristic tries tens of schedules a move and hundreds of moves on MOCCASIN's
graphs of 500 and 1,000 nodes. Profiled on the 1,000-node graph at 60 %, the profile
count in Python took half of its 34 s; with it compiled (`Flat`), the same heuristic at
50 % spent 35 % of its time listing levels, 27 % evaluating schedules and 15 % making
the profile of each candidate move, all in Python: compiled, the peak heuristic gives
the same schedules 1.8 to 3.9 times faster on those graphs. `Flat` holds the graph as
the arrays the kernels read, built once a search.
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
        self.creator = np.full(len(graph.sizes), -1, dtype=np.int64)
        for v, bufs in enumerate(graph.creates):
            self.creator[list(bufs)] = v

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

    def instances(self, steps: np.ndarray) -> tuple:  # type: ignore[type-arg]
        """The kernel `instances` of `steps`."""
        return instances(  # type: ignore[no-any-return]
            steps, self.reads_ptr, self.reads_idx, self.creates_ptr, self.creates_idx, self.live_in, self.live_out
        )


def distance(profile: np.ndarray, target: int) -> tuple[int, int, int]:
    """How far a profile is from `target`: its peak, the steps at the peak, the bytes
    over the target summed over the steps (smaller is nearer)."""
    peak, count, over = _key(profile, target)
    return int(peak), int(count), int(over)


def moved_distance(
    profile: np.ndarray, cut: int, r: int, size: int, ends: list[int], sizes: list[int], new: int, target: int
) -> tuple[int, int, int]:
    """`distance` from `target` of `profile` less `size` over steps [cut, r), plus each
    `sizes[i]` over [ends[i], r), with one step holding `new` more: the profile after one
    move of `heuristic._moved`, without making it (the distance does not depend on where
    the new step goes)."""
    peak, count, over = _moved_key(
        profile, cut, r, size, np.array(ends, dtype=np.int64), np.array(sizes, dtype=np.int64), new, target
    )
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


@njit(cache=True)
def instances(steps, reads_ptr, reads_idx, creates_ptr, creates_idx, live_in, live_out):  # type: ignore[no-untyped-def]
    """`schedule.graph.instances` as arrays, with every instance's readers: `buffer`,
    `start`, `end` by instance (instance b is buffer b's first, later ones follow in the
    order made); the steps that read each instance, ascending (CSR: `read_ptr`,
    `read_steps`); each buffer's instances in the order made (CSR: `made_ptr`, `made`).
    `ok` is False where a step reads a buffer no earlier step made."""
    n, buffers = steps.shape[0], live_in.shape[0]
    total, reads = buffers, 0
    seen = live_in.copy()
    for t in range(n):
        v = steps[t]
        reads += reads_ptr[v + 1] - reads_ptr[v]
        for i in range(creates_ptr[v], creates_ptr[v + 1]):
            total += 1 if seen[creates_idx[i]] else 0
            seen[creates_idx[i]] = True
    buffer = np.empty(total, dtype=np.int64)
    start = np.zeros(total, dtype=np.int64)
    end = np.zeros(total, dtype=np.int64)
    latest = np.full(buffers, -1, dtype=np.int64)
    for b in range(buffers):
        buffer[b] = b
        if live_in[b]:
            latest[b], end[b] = b, 1
    read_of = np.empty(reads, dtype=np.int64)  # each read's instance, in step order
    read_at = np.empty(reads, dtype=np.int64)
    ok, j, following = True, 0, buffers
    for t in range(n):
        v = steps[t]
        for i in range(reads_ptr[v], reads_ptr[v + 1]):
            k = latest[reads_idx[i]]
            if k < 0:
                ok, k = False, 0
            read_of[j], read_at[j] = k, t
            end[k] = max(end[k], t + 1)
            j += 1
        for i in range(creates_ptr[v], creates_ptr[v + 1]):
            b = creates_idx[i]
            k = b if latest[b] < 0 else following
            following += 1 if latest[b] >= 0 else 0
            buffer[k], start[k], end[k], latest[b] = b, t, t + 1, k
    for b in range(buffers):
        if live_out[b] and latest[b] >= 0:
            end[latest[b]] = max(end[latest[b]], n)
    ok = ok and following == total and bool((latest >= 0).all())
    read_ptr, read_steps = _grouped(read_of, read_at, total)
    made_ptr, made = _grouped(buffer, np.arange(total), buffers)
    return buffer, start, end, read_ptr, read_steps, made_ptr, made, ok


@njit(cache=True)
def _grouped(keys, values, groups):  # type: ignore[no-untyped-def]
    """`values` grouped by `keys` (CSR), each group in the order given."""
    ptr = np.zeros(groups + 1, dtype=np.int64)
    for key in keys:
        ptr[key + 1] += 1
    for g in range(groups):
        ptr[g + 1] += ptr[g]
    out = np.empty(keys.shape[0], dtype=np.int64)
    fill = ptr[:-1].copy()
    for i in range(keys.shape[0]):
        out[fill[keys[i]]] = values[i]
        fill[keys[i]] += 1
    return ptr, out


@njit(cache=True)
def latest(made_ptr, made, start, b, t):  # type: ignore[no-untyped-def]
    """The instance of buffer b a read at step t takes: the last made before t (the first
    where none is, as one live in)."""
    k = made[made_ptr[b]]
    for i in range(made_ptr[b] + 1, made_ptr[b + 1]):
        if start[made[i]] >= t:
            break
        k = made[i]
    return k


@njit(cache=True)
def levels(v, r, reads_ptr, reads_idx, creator, recomputable, made_ptr, made, start, end):  # type: ignore[no-untyped-def]
    """`heuristic._levels` as arrays: the ops of every level, level by level (`ops`); level
    d is `ops[ptr[d]:ptr[d + 1]]`."""
    seen = np.zeros(recomputable.shape[0], dtype=np.bool_)
    ops = np.empty(recomputable.shape[0], dtype=np.int64)
    ptr = np.zeros(65, dtype=np.int64)
    depth = 0
    while depth < 64:
        count = ptr[depth]
        lo, hi = (ptr[depth - 1], ptr[depth]) if depth else (0, 1)
        for f in range(lo, hi):
            u = ops[f] if depth else v
            for i in range(reads_ptr[u], reads_ptr[u + 1]):
                a = reads_idx[i]
                w = creator[a]
                if w < 0 or seen[w] or not recomputable[w] or end[latest(made_ptr, made, start, a, r)] > r:
                    continue
                seen[w] = True
                ops[count] = w
                count += 1
        if count == ptr[depth]:
            break
        depth += 1
        ptr[depth] = count
    return ops[: ptr[depth]], ptr[: depth + 1]


@njit(cache=True)
def _moved_key(profile, cut, r, size, ends, sizes, new, target):  # type: ignore[no-untyped-def]
    change = np.zeros(profile.shape[0] + 1, dtype=np.int64)
    if cut < r:
        change[cut] -= size
        change[r] += size
    for i in range(ends.shape[0]):
        change[ends[i]] += sizes[i]
        change[r] -= sizes[i]
    moved = np.empty(profile.shape[0] + 1, dtype=np.int64)
    held = 0
    for t in range(profile.shape[0]):
        held += change[t]
        moved[t] = profile[t] + held
    moved[profile.shape[0]] = new
    return _key(moved, target)


def warm_kernels() -> None:
    """Compile the kernels: one profile of a schedule of three ops, one run again, its
    instances and one op's levels."""
    graph = Graph(sizes=(2, 1, 3), creates=((0,), (1,), (2,)), reads=((), (0,), (0, 1)), preds=((), (0,), (0, 1)))
    flat = Flat(graph)
    steps = np.array((0, 1, 0, 2), dtype=np.int64)
    distance(flat(steps), 4)
    moved_distance(flat(steps), 1, 2, 1, [0], [2], 3, 4)
    found = flat.instances(steps)
    levels(2, 3, flat.reads_ptr, flat.reads_idx, flat.creator, np.ones(3, dtype=np.bool_), found[5], found[6], found[1], found[2])
