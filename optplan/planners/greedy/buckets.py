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
2. A query reads the buckets under each of its intervals, keeps the listed intervals
   that really overlap one of its own in time, sorts their byte ranges by low end and
   sweeps for the first (or best) hole with `greedy.kernel`'s sweeps, so the offsets are
   those of `greedy.place` for every order and fit (`tests/test_greedy_scaling.py`).

`reads(...)` is what a run costs: the mean number of listed intervals a query reads at
the end of a run (a bound on any moment of it), and the mean of those reads times the
buckets each query merges. `greedy.kernel.Compiled` takes buckets when both are small
(`BUCKET_READS`, `BUCKET_MERGES`) and the tree otherwise.
"""

from __future__ import annotations

import numpy as np

from optplan.planners.jit import njit


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


@njit(cache=True)
def place_buckets(sequence, best_fit, first, starts, ends, size, residue, modulus, pin, shift):
    """Offsets with pinned rectangles at their pins and the others placed in `sequence`."""
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
    cursor = np.empty((4, 64), dtype=np.int64)  # next entry, stop, query start, query end
    for q in range(sequence.shape[0]):
        i = sequence[q]
        cursors = 0
        for j in range(first[i], first[i + 1]):
            for b in range(starts[j] >> shift, ((ends[j] - 1) >> shift) + 1):
                if fill[b] > head[b]:
                    if cursors == cursor.shape[1]:
                        grown = np.empty((4, 2 * cursors), dtype=np.int64)
                        for c in range(cursors):  # a slice copy took numba 30x longer to compile
                            for row in range(4):
                                grown[row, c] = cursor[row, c]
                        cursor = grown
                    cursor[0, cursors], cursor[1, cursors] = head[b], fill[b]
                    cursor[2, cursors], cursor[3, cursors] = starts[j], ends[j]
                    cursors += 1
        offset = _hole(best_fit, cursor, cursors, listed, size[i], residue[i], modulus[i])
        offsets[i] = offset
        _enter(i, offset, size[i], first, starts, ends, shift, fill, head, listed)
    return offsets


@njit(cache=True)
def _hole(best_fit, cursor, cursors, listed, size, residue, modulus):
    """`greedy.sweeps.first_hole` or `best_hole` over the entries the cursors merge in
    order of low byte, keeping those whose lifetime meets the cursor's query interval;
    first fit stops at the first hole."""
    offset = residue
    best, best_room = -1, -1
    while True:
        pick, lowest = -1, 0
        for c in range(cursors):
            x = cursor[0, c]
            if x < cursor[1, c] and (pick < 0 or listed[x, 0] < lowest):
                pick, lowest = c, listed[x, 0]
        if pick < 0:
            break
        x = cursor[0, pick]
        cursor[0, pick] = x + 1
        if not (listed[x, 2] < cursor[3, pick] and cursor[2, pick] < listed[x, 3]):
            continue
        if best_fit:
            room = lowest - offset
            if room >= size and (best < 0 or room < best_room):
                best, best_room = offset, room
        elif offset + size <= lowest:
            break
        top = listed[x, 1]
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
