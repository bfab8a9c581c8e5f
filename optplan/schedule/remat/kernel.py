"""The recomputation heuristics' hot loops, compiled: the bytes held at each step of a
schedule whose steps may run an op more than once (`heuristic.profile_of`'s meaning), a
schedule's instances and their readers (`instances`), the ops to make again before one
(`levels`), how far the profile after each move at a step is from a target
(`move_keys`), and how far that of a schedule with a chain of ops inserted is
(`chain_key`), both from the instances of the schedule before.

The peak heuristic tries tens of schedules a move and hundreds of moves on MOCCASIN's
graphs of 500 and 1,000 nodes. Profiled on the 1,000-node graph at 60 %, the profile
count in Python took half of its 34 s; with it compiled (`Flat`), the same heuristic at
50 % spent 35 % of its time listing levels, 27 % evaluating schedules and 15 % making
the profile of each candidate move, all in Python: compiled, the peak heuristic gives
the same schedules 1.8 to 3.9 times faster on those graphs. Profiled again on the
1,000-node graph at 50 % (one run of the cheapest moves from the searched order, 9.2 s),
half of the time went to ranking the moves one call at a time in Python, and a quarter
to counting every trial schedule's profile from its steps: with both from the instances
of the schedule before (`move_keys`, `chain_key`), the same run gives the same schedule
in 3.3 s. `Flat` holds the graph as the arrays the kernels read, built once a search.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from optplan.planners.jit import njit
from optplan.schedule.graph import Graph
from optplan.schedule.tables import buffer_arrays, csr


class Flat:
    """`graph` as flat arrays; calling it with steps gives `profile_of`'s profile."""

    def __init__(self, graph: Graph) -> None:
        self.base = graph.base_bytes
        self.sizes, self.live_in, self.live_out = buffer_arrays(graph)
        self.reads_ptr, self.reads_idx = csr(graph.reads)
        self.creates_ptr, self.creates_idx = csr(graph.creates)
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
            steps,
            self.reads_ptr,
            self.reads_idx,
            self.creates_ptr,
            self.creates_idx,
            self.live_in,
            self.live_out,
        )


def distance(profile: np.ndarray, target: int) -> tuple[int, int, int]:
    """How far a profile is from `target`: its peak, the steps at the peak, the bytes
    over the target summed over the steps (smaller is nearer)."""
    peak, count, over = _key(profile, target)
    return int(peak), int(count), int(over)


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
    if not profile.shape[0]:
        return 0, 0, 0
    return _inserted_key(
        np.zeros(profile.shape[0] + 1, dtype=np.int64), profile, 0, profile.shape[0], 0, target
    )


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
                if (
                    w < 0
                    or seen[w]
                    or not recomputable[w]
                    or end[latest(made_ptr, made, start, a, r)] > r
                ):
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
def move_keys(  # type: ignore[no-untyped-def]
    p,
    profile,
    crossing,
    relief,
    buffer,
    start,
    end,
    read_ptr,
    read_steps,
    made_ptr,
    made,
    creator,
    recomputable,
    sizes,
    reads_ptr,
    reads_idx,
    creates_ptr,
    creates_idx,
    target,
):
    """Every move of `heuristic._best_move` at step p and how near each brings the profile
    to `target`: instance k held across p (not read there, read after it, its op may run
    again) is made again just before its first reader after p, r. The keys (`distance`
    of the moved profile, one row a move), the ks and the rs, in the order of k. The
    moved profile holds k less over [its last read before r, r), each of the op's inputs
    whose instance is dead by r more from that instance's end to r, and one new step (the
    key does not depend on where that step goes)."""
    n = profile.shape[0]
    change = np.zeros(n + 2, dtype=np.int64)
    # A move changes the profile only over [lo, r): the rest is read from the keys of the
    # profile's prefixes and suffixes, and the new step is one value more.
    before, after = _running_keys(profile, target, False), _running_keys(profile, target, True)
    keys = np.empty((buffer.shape[0], 3), dtype=np.int64)
    ks = np.empty(buffer.shape[0], dtype=np.int64)
    rs = np.empty(buffer.shape[0], dtype=np.int64)
    count = 0
    for k in range(buffer.shape[0]):
        v = creator[buffer[k]]
        if not start[k] < p < end[k] or v < 0 or not recomputable[v]:
            continue
        r, cut, read_at_p = -1, start[k], False
        for i in range(read_ptr[k], read_ptr[k + 1]):  # ascending
            t = read_steps[i]
            read_at_p = read_at_p or t == p
            if t > p:
                r = t
                break
            cut = t
        if r < 0 or read_at_p:
            continue
        cut += 1
        new = crossing[r] + relief[r]
        for i in range(creates_ptr[v], creates_ptr[v + 1]):
            if creates_idx[i] != buffer[k]:
                new += sizes[creates_idx[i]]
        lo = r
        if cut < r:
            change[cut] -= sizes[buffer[k]]
            change[r] += sizes[buffer[k]]
            lo = cut
        for i in range(reads_ptr[v], reads_ptr[v + 1]):
            a = reads_idx[i]
            ended = end[latest(made_ptr, made, start, a, r)]
            if ended <= r:
                change[ended] += sizes[a]
                change[r] -= sizes[a]
                new += sizes[a]
                lo = min(lo, ended)
        # Every change lies in [lo, r] and they sum to 0: the profile moves over [lo, r).
        peak, at_peak, over = _inserted_key(change[lo:], profile[lo:r], new, r - lo, 1, target)
        peak, at_peak, over = _merged(peak, at_peak, over, before[lo])
        peak, at_peak, over = _merged(peak, at_peak, over, after[n - r])
        keys[count, 0], keys[count, 1], keys[count, 2] = peak, at_peak, over
        change[lo : r + 1] = 0
        ks[count], rs[count] = k, r
        count += 1
    return keys[:count], ks[:count], rs[:count]


@njit(cache=True)
def chain_key(  # type: ignore[no-untyped-def]
    chain,
    r,
    profile,
    crossing,
    relief,
    buffer,
    start,
    end,
    read_ptr,
    read_steps,
    made_ptr,
    made,
    sizes,
    reads_ptr,
    reads_idx,
    creates_ptr,
    creates_idx,
    live_out,
    target,
):
    """`distance` from `target` of the profile after the ops of `chain` run just before
    step r (the chain's steps count r's relief), from the instances of the schedule
    before (`instances`) without counting it again: the instances the chain reads live
    on to its reads; those current at r whose buffer the chain makes again end at their
    last read before r, and their reads from r on (and the end, for one live out) go to
    the chain's new instance."""
    n, m = profile.shape[0], chain.shape[0]
    until, read_to, taken, touched = _chain_runs(
        chain, r, start, made_ptr, made, sizes, reads_ptr, reads_idx, creates_ptr, creates_idx
    )
    delta = np.zeros(n + m + 1, dtype=np.int64)
    for k in touched:
        b, size = buffer[k], sizes[buffer[k]]
        was = end[k] if end[k] <= r else end[k] + m
        now = max(was, read_to[k])
        if taken[k]:
            kept = start[k]
            for i in range(read_ptr[k], read_ptr[k + 1]):
                t = read_steps[i]
                if t < r:
                    kept = t
                else:
                    until[b] = max(until[b], t + m + 1)
            now = max(kept + 1, read_to[k])
            if live_out[b] and made[made_ptr[b + 1] - 1] == k:
                until[b] = n + m
        delta[min(was, now)] += size if now > was else -size
        delta[max(was, now)] -= size if now > was else -size
    for j in range(m):
        for i in range(creates_ptr[chain[j]], creates_ptr[chain[j] + 1]):
            b = creates_idx[i]
            delta[r + j] += sizes[b]
            delta[until[b]] -= sizes[b]
    return _inserted_key(delta, profile, crossing[r] + relief[r], r, m, target)


@njit(cache=True)
def _chain_runs(
    chain, r, start, made_ptr, made, sizes, reads_ptr, reads_idx, creates_ptr, creates_idx
):  # type: ignore[no-untyped-def]
    """`chain_key`'s walk of the chain: each buffer it makes, its new instance's end so
    far (`until`, by buffer); each instance of the schedule before that it reads, the
    step after its last read in the chain (`read_to`, by instance), and whether the
    chain makes its buffer again (`taken`); the instances of the schedule before that
    it touches, each once."""
    until = np.full(sizes.shape[0], -1, dtype=np.int64)
    read_to = np.full(start.shape[0], -1, dtype=np.int64)
    taken = np.zeros(start.shape[0], dtype=np.bool_)
    touched = np.empty(reads_idx.shape[0] + creates_idx.shape[0], dtype=np.int64)
    count = 0
    for j in range(chain.shape[0]):
        u = chain[j]
        for i in range(reads_ptr[u], reads_ptr[u + 1]):
            a = reads_idx[i]
            if until[a] >= 0:  # made earlier in the chain
                until[a] = max(until[a], r + j + 1)
                continue
            k = latest(made_ptr, made, start, a, r)
            if read_to[k] < 0 and not taken[k]:
                touched[count] = k
                count += 1
            read_to[k] = max(read_to[k], r + j + 1)
        for i in range(creates_ptr[u], creates_ptr[u + 1]):
            b = creates_idx[i]
            until[b] = r + j + 1
            k = latest(made_ptr, made, start, b, r)
            if start[k] < r:
                if read_to[k] < 0 and not taken[k]:
                    touched[count] = k
                    count += 1
                taken[k] = True
    return until, read_to, taken, touched[:count]


@njit(cache=True)
def _inserted_key(delta, profile, held_there, r, m, target):  # type: ignore[no-untyped-def]
    """`_key` of `profile` with m steps holding `held_there` inserted before step r, plus
    the running sum of `delta`."""
    peak, at_peak, over, held = -1, 0, 0, 0
    for t in range(profile.shape[0] + m):
        held += delta[t]
        value = held + (profile[t] if t < r else held_there if t < r + m else profile[t - m])
        peak, at_peak, over = _counted(peak, at_peak, over, value, target)
    return peak, at_peak, over


@njit(cache=True)
def _counted(peak, at_peak, over, value, target):  # type: ignore[no-untyped-def]
    """A key (peak, steps at the peak, bytes over `target`) with one step more, holding
    `value`."""
    if value > peak:
        peak, at_peak = value, 0
    if value == peak:
        at_peak += 1
    if value > target:
        over += value - target
    return peak, at_peak, over


@njit(cache=True)
def _running_keys(profile, target, backwards):  # type: ignore[no-untyped-def]
    """`_key` of each prefix of `profile` (of each suffix, `backwards`): row i for the
    first (last) i steps, row 0 an empty one (peak -1)."""
    n = profile.shape[0]
    keys = np.empty((n + 1, 3), dtype=np.int64)
    peak, at_peak, over = -1, 0, 0
    keys[0, 0], keys[0, 1], keys[0, 2] = peak, at_peak, over
    for i in range(n):
        value = profile[n - 1 - i] if backwards else profile[i]
        peak, at_peak, over = _counted(peak, at_peak, over, value, target)
        keys[i + 1, 0], keys[i + 1, 1], keys[i + 1, 2] = peak, at_peak, over
    return keys


@njit(cache=True)
def _merged(peak, at_peak, over, other):  # type: ignore[no-untyped-def]
    """The key of two runs of steps, one's key given as a row of three."""
    if other[0] > peak:
        return other[0], other[1], over + other[2]
    if other[0] == peak:
        return peak, at_peak + other[1], over + other[2]
    return peak, at_peak, over + other[2]


def warm_kernels() -> None:
    """Compile the kernels: one profile of a schedule of three ops, one run again, its
    instances and one op's levels."""
    graph = Graph(
        sizes=(2, 1, 3),
        creates=((0,), (1,), (2,)),
        reads=((), (0,), (0, 1)),
        preds=((), (0,), (0, 1)),
    )
    flat = Flat(graph)
    steps = np.array((0, 1, 0, 2), dtype=np.int64)
    profile = flat(steps)
    distance(profile, 4)
    buffer, start, end, read_ptr, read_steps, made_ptr, made, _ = flat.instances(steps)
    everyone = np.ones(3, dtype=np.bool_)
    levels(2, 3, flat.reads_ptr, flat.reads_idx, flat.creator, everyone, made_ptr, made, start, end)
    move_keys(
        1,
        profile,
        np.zeros(5, dtype=np.int64),
        np.zeros(4, dtype=np.int64),
        buffer,
        start,
        end,
        read_ptr,
        read_steps,
        made_ptr,
        made,
        flat.creator,
        everyone,
        flat.sizes,
        flat.reads_ptr,
        flat.reads_idx,
        flat.creates_ptr,
        flat.creates_idx,
        4,
    )
