"""The greedy placement loop over time buckets, compiled: for traces of short lifetimes.

`greedy.kernel`'s segment tree keeps merged busy ranges per node, so a query reads
O(log T) short lists however many rectangles are live: the right structure when
thousands live at once and some live for most of the run (idealloc's S_1, Y_1,
pangu_2.6B). On a trace where about a hundred live at once and every lifetime is short
(the generated 1,000,000-buffer CSV), a query meets ~20 tree nodes whose lists repeat
the same few hundred ranges: 3.5 s a run at 100,000 buffers, 48 s at 1,000,000. Buckets
read each neighbour about twice.

This is `greedy.place` compiled, line for line:

1. Time is the ranks of interval end points, cut into buckets of 2**shift ranks, shift
   from the median lifetime (`shift_for`). Every interval is listed, once placed, in each
   bucket its lifetime touches; the lists are laid out in one array up front, since
   every interval is listed exactly once in each of its buckets by the end.
2. A query reads the buckets under each of its intervals in one pass each (`_gather`),
   keeps the listed intervals that really overlap one of its own in time, and drops one
   listed in the bucket before, which the same query read: one sorted run of byte
   ranges a bucket. `_hole` merges the runs by low end and sweeps for the first (or
   best) hole as `greedy.sweeps` does, so the offsets are those of `greedy.place` for
   every order and fit (`tests/test_greedy_scaling.py`, `tests/test_greedy_stop.py`).
   At 1,000 and 10,000 live at once this took a run from 0.34 and 1.3 s to 0.29 and
   0.94 s (first fit; best fit 0.57 and 1.7 s to 0.40 and 1.09 s) against the merge of
   every bucket's cursor entry by entry.
3. Every POLL placements the loop reads `stop[0]` and returns early if it is raised
   (`greedy.stop`); it holds no GIL.

`reads(...)` is what a run costs: the mean number of listed intervals a query reads at
the end of a run (a bound on any moment of it), and the mean of those reads times the
buckets each query spans. `greedy.kernel.Compiled` takes buckets when both are small
(`BUCKET_READS`, `BUCKET_SPAN`) and the tree otherwise.
"""

from __future__ import annotations

import numpy as np

from optplan.planners.greedy.stop import POLL
from optplan.planners.jit import njit

_DONE = (1 << 63) - 1  # the low byte of a run read to its end: above every real one


def shift_for(starts: np.ndarray, ends: np.ndarray) -> int:
    """log2 of the bucket width: the median lifetime in ranks, rounded down to a power
    of two (as `greedy._Grid` does)."""
    lengths = np.sort(ends - starts)
    typical = int(lengths[len(lengths) // 2]) if len(lengths) else 1
    return max(typical, 1).bit_length() - 1


def reads(starts: np.ndarray, ends: np.ndarray, shift: int) -> tuple[float, float]:
    """The mean number of listed intervals one interval's query reads once every
    interval is listed (the occupancy of its buckets, summed), and the mean of each
    query's reads times the buckets it merges, since `_hole` picks every entry among
    them: what a query really costs where some lifetimes span many buckets."""
    if not len(starts):
        return 0.0, 0.0
    first, last = starts >> shift, (ends - 1) >> shift
    change = np.zeros(int(last.max()) + 2, dtype=np.int64)
    np.add.at(change, first, 1)
    np.add.at(change, last + 1, -1)
    occupancy = np.cumsum(change)
    before = np.concatenate(([0], np.cumsum(occupancy)))
    read = (before[last + 1] - before[first]).astype(np.float64)
    return float(read.mean()), float((read * (last - first + 1)).mean())


@njit(cache=True, nogil=True)
def place_buckets(
    sequence, best_fit, first, starts, ends, size, residue, modulus, pin, shift, stop
):
    """Offsets with pinned rectangles at their pins and the others placed in `sequence`,
    and how many of `sequence` were placed: all, unless `stop[0]` was raised."""
    buckets = (ends.max() - 1 >> shift) + 1 if starts.shape[0] else 1
    head = np.zeros(buckets + 1, dtype=np.int64)
    for j in range(starts.shape[0]):
        for b in range(starts[j] >> shift, ((ends[j] - 1) >> shift) + 1):
            head[b + 1] += 1
    for b in range(buckets):
        head[b + 1] += head[b]
    fill = head[:-1].copy()
    # What a bucket lists, side by side and sorted by low byte: an interval's byte range
    # and its lifetime. A query merges its few buckets instead of sorting what it read.
    listed = np.empty((head[buckets], 4), dtype=np.int64)
    offsets = residue.copy()
    for i in range(size.shape[0]):
        if pin[i] >= 0:
            offsets[i] = pin[i]
            _enter(i, pin[i], size[i], first, starts, ends, shift, fill, head, listed)
    busy = np.empty((2, 256), dtype=np.int64)  # the ranges a query keeps, run after run
    runs = np.empty(65, dtype=np.int64)  # where each run of `busy` begins
    for q in range(sequence.shape[0]):
        if q % POLL == 0 and stop[0]:
            return offsets, q
        i = sequence[q]
        busy, runs, count = _gather(i, first, starts, ends, shift, fill, head, listed, busy, runs)
        offset = _hole(best_fit, busy, runs, count, size[i], residue[i], modulus[i])
        offsets[i] = offset
        _enter(i, offset, size[i], first, starts, ends, shift, fill, head, listed)
    return offsets, sequence.shape[0]


@njit(cache=True)
def _gather(i, first, starts, ends, shift, fill, head, listed, busy, runs):
    """The byte ranges of listed intervals that meet rectangle i's lifetime, one run per
    bucket read, each sorted by low byte; an interval listed in the bucket before, which
    the same query read, is kept there only. Returns `busy`, `runs` (grown as needed)
    and the number of runs."""
    found, count = 0, 0
    for j in range(first[i], first[i + 1]):
        s, e = starts[j], ends[j]
        low_bucket = s >> shift
        for b in range(low_bucket, ((e - 1) >> shift) + 1):
            if found + fill[b] - head[b] > busy.shape[1]:
                busy = _grown(busy, found, 2 * (found + fill[b] - head[b]))
            began = found
            for x in range(head[b], fill[b]):
                meets = listed[x, 2] < e and s < listed[x, 3]
                if meets and (b == low_bucket or listed[x, 2] >> shift >= b):
                    busy[0, found], busy[1, found] = listed[x, 0], listed[x, 1]
                    found += 1
            if found > began:
                if count + 1 >= runs.shape[0]:
                    more = np.empty(2 * runs.shape[0], dtype=np.int64)
                    more[: count + 1] = runs[: count + 1]
                    runs = more
                runs[count] = began
                count += 1
                runs[count] = found
    return busy, runs, count


@njit(cache=True)
def _grown(busy, found, room):
    grown = np.empty((2, room), dtype=np.int64)
    for x in range(found):  # a slice copy took numba 30x longer to compile
        grown[0, x], grown[1, x] = busy[0, x], busy[1, x]
    return grown


@njit(cache=True)
def _hole(best_fit, busy, runs, count, size, residue, modulus):
    """`greedy.sweeps.first_hole` or `best_hole` over the ranges of the `count` runs of
    `busy` (run r is runs[r] to runs[r + 1]) merged in order of low byte; first fit
    stops at the first hole."""
    offset = residue
    best, best_room = -1, -1
    if count == 0:
        return offset
    at = runs[:count].copy()  # each run's next range
    low = np.empty(count, dtype=np.int64)  # its low byte, or _DONE once the run is read
    for r in range(count):
        low[r] = busy[0, at[r]]
    while True:
        pick, lowest = 0, low[0]
        for r in range(1, count):
            if low[r] < lowest:
                pick, lowest = r, low[r]
        if lowest == _DONE:
            break
        x = at[pick]
        at[pick] = x + 1
        low[pick] = busy[0, x + 1] if x + 1 < runs[pick + 1] else _DONE
        if best_fit:
            room = lowest - offset
            if room >= size and (best < 0 or room < best_room):
                best, best_room = offset, room
        elif offset + size <= lowest:
            break
        top = busy[1, x]
        if top > offset:
            offset = top + (residue - top) % modulus
    return best if best >= 0 else offset


@njit(cache=True)
def _enter(i, offset, height, first, starts, ends, shift, fill, head, listed):
    """List rectangle i's intervals, at `offset`, in every bucket they touch, each
    bucket kept sorted by low byte."""
    for j in range(first[i], first[i + 1]):
        for b in range(starts[j] >> shift, ((ends[j] - 1) >> shift) + 1):
            lo, hi = head[b], fill[b]
            while lo < hi:  # the first entry with a higher low byte
                middle = (lo + hi) >> 1
                if listed[middle, 0] <= offset:
                    lo = middle + 1
                else:
                    hi = middle
            for x in range(fill[b], lo, -1):
                listed[x, 0], listed[x, 1] = listed[x - 1, 0], listed[x - 1, 1]
                listed[x, 2], listed[x, 3] = listed[x - 1, 2], listed[x - 1, 3]
            listed[lo, 0], listed[lo, 1] = offset, offset + height
            listed[lo, 2], listed[lo, 3] = starts[j], ends[j]
            fill[b] += 1
