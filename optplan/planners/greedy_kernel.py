"""The greedy placement loop compiled by numba: the same offsets as `greedy.place`, faster.

`greedy.place` reads the placed rectangles under a query's lifetime from time buckets,
sorts them by offset and sweeps for a hole. When many rectangles are live at once (the
MiniMalloc instances: a hundred or more), the Python list building and sorting per query
is the cost: a 100k-buffer chain of them took 1.7-2.2 s per order and fit. This module
does the same with int64 arrays:

1. `Compiled.build(part)` ranks the end points, sets the bucket width (about one typical
   lifetime, a power of two) and counts how many intervals touch each bucket, so every
   bucket gets a fixed slice of one flat array.
2. `Compiled.sequence(order)` is one stable `np.lexsort` over the order's keys; equal
   keys fall back to the part's order, which is `rect.index` order, as in the key tuples
   of `greedy._ORDER_KEYS`.
3. `_place` keeps each bucket sorted by offset (one insertion step per entry). A query
   reads its buckets, keeps the entries live with it (each placed rectangle once, by a
   stamp), and sweeps them in offset order: a query inside one bucket needs no sort at
   all; one spanning several sorts what it read.

The sweeps are `greedy._first_hole` and `greedy._best_hole` line for line. Both depend
only on the set of busy ranges sorted by their low end (ties in any order), so reading
each rectangle once instead of once per bucket, and sorting by the low end alone, leaves
every offset unchanged; `tests/test_greedy_scaling.py` checks that against
`greedy.place` for every order and fit.

`Compiled.build(part)` returns None, and greedy uses `greedy.place`, when numba is
missing or some number (offsets up to the naive stack, size x lifetime for the `area`
order) might not fit in int64.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

import numpy as np

from optplan.planners.common import Rect

try:
    from numba import njit

    COMPILED = True
except ImportError:  # pragma: no cover - greedy falls back to its plain-Python placement
    COMPILED = False

    def njit(*args: object, **kwargs: object):  # type: ignore[no-redef]
        if args and callable(args[0]):
            return args[0]
        return lambda function: function


_LOW, _START, _END, _OWNER = range(4)  # rows of a placed entry: offset, ranks, rectangle
_LIMIT = 1 << 62  # numbers at or above this could overflow an int64 sum or product


def _fits(size: np.ndarray, modulus: np.ndarray, pin: np.ndarray, length: np.ndarray) -> bool:
    """Whether every offset the loop can produce (at most the naive stack above the
    highest pin) and every `area` key (size x lifetime) stays below 2**62; the sums are
    taken in floating point, which cannot wrap around."""
    stacked = float(size.sum(dtype=np.float64) + modulus.sum(dtype=np.float64))
    area = float(size.max(initial=0)) * float(length.max(initial=1))
    return stacked + float(pin.max(initial=0)) < _LIMIT and area < _LIMIT


@dataclass(frozen=True, slots=True)
class Compiled:
    """One part as arrays: intervals (`first`: each rectangle's first interval, CSR
    style; `starts`/`ends` as ranks of end points), shape, pins (-1: none), the order
    keys, and the buckets (`base[b]`: where bucket b's slice of the flat array starts)."""

    first: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    size: np.ndarray
    residue: np.ndarray
    modulus: np.ndarray
    pin: np.ndarray
    start_time: np.ndarray
    length: np.ndarray
    movable: np.ndarray
    shift: int
    base: np.ndarray

    @staticmethod
    def build(part: list[Rect]) -> Compiled | None:
        """The part as arrays; None when numba is missing or a number might not fit in
        int64, and `greedy.place` must do the work."""
        if not COMPILED:
            return None
        try:
            shape = np.array(
                [
                    (r.size, r.residue or 0, r.modulus, -1 if r.pin is None else r.pin)
                    + (r.start, r.length)
                    for r in part
                ],
                dtype=np.int64,
            )
            times = _array([p for r in part for iv in r.live for p in (iv.start, iv.end)])
        except OverflowError:
            return None
        size, residue, modulus, pin, start_time, length = shape.T.copy()
        if not _fits(size, modulus, pin, length):
            return None
        counts = _array([len(r.live) for r in part])
        points, ranks = np.unique(times, return_inverse=True)
        starts, ends = ranks[0::2].astype(np.int64), ranks[1::2].astype(np.int64)
        shift = _shift(ends - starts)
        return Compiled(
            first=np.concatenate(([0], np.cumsum(counts))).astype(np.int64),
            starts=starts,
            ends=ends,
            size=size,
            residue=residue,
            modulus=modulus,
            pin=pin,
            start_time=start_time,
            length=length,
            movable=np.flatnonzero(pin < 0).astype(np.int64),
            shift=shift,
            base=_bucket_base(starts, ends, shift, len(points)),
        )

    def sequence(self, order: str) -> Hashable:
        """The positions of the movable rectangles in `order`, as bytes (hashable)."""
        m = self.movable
        size, start, length = self.size[m], self.start_time[m], self.length[m]
        keys = {  # np.lexsort sorts by the last key first; it is stable
            "size": (start, -size),
            "start": (-size, start),
            "lifetime": (start, -size, -length),
            "area": (start, -size * length),
            "xla": (start, -length, -size),
        }[order]
        return m[np.lexsort(keys)].tobytes()

    def place(self, sequence: Hashable, fit: str) -> np.ndarray:
        assert isinstance(sequence, bytes)
        return _place(
            np.frombuffer(sequence, dtype=np.int64),
            fit == "best",
            self.first,
            self.starts,
            self.ends,
            self.size,
            self.residue,
            self.modulus,
            self.pin,
            self.shift,
            self.base,
        )

    def top(self, offsets: list[int] | np.ndarray) -> int:
        return int((np.asarray(offsets, dtype=np.int64) + self.size).max(initial=0))


def _array(values: list[int]) -> np.ndarray:
    return np.asarray(values, dtype=np.int64)


def _shift(lengths: np.ndarray) -> int:
    """log2 of the bucket width: four median interval lengths (in ranks), rounded down to
    a power of two. Reading an entry that is not live with the query costs far less here
    than merging one more bucket, so buckets are wider than `greedy._Grid`'s (one median
    length): at 100k buffers two runs took 0.133 s on the MiniMalloc chain at one
    length, 0.100 s at four, 0.097 s at eight, and 0.012, 0.010, 0.014 s on the ResNet
    chain."""
    typical = int(np.sort(lengths)[len(lengths) // 2]) if len(lengths) else 1
    return max(typical, 1).bit_length() + 1


def _bucket_base(starts: np.ndarray, ends: np.ndarray, shift: int, points: int) -> np.ndarray:
    """Where each bucket's slice starts in the flat entry arrays (one more at the end):
    an interval is listed in every bucket its ranks touch."""
    buckets = (points >> shift) + 1
    touches = np.zeros(buckets + 1, dtype=np.int64)
    np.add.at(touches, starts >> shift, 1)
    np.add.at(touches, ((ends - 1) >> shift) + 1, -1)
    return np.concatenate(([0], np.cumsum(np.cumsum(touches)[:buckets]))).astype(np.int64)


@njit(cache=True)
def _place(sequence, best_fit, first, starts, ends, size, residue, modulus, pin, shift, base):
    """Offsets with pinned rectangles at their pins and the others placed in `sequence`.

    Bucket b holds columns base[b] .. base[b] + count[b] of `entries`, sorted by offset;
    an entry is one placed interval: (offset, start rank, end rank, rectangle)."""
    n = size.shape[0]
    count = np.zeros(base.shape[0] - 1, dtype=np.int64)
    entries = np.empty((4, base[-1]), dtype=np.int64)  # rows _LOW, _START, _END, _OWNER
    offsets = residue.copy()
    seen = np.full(n, -1, dtype=np.int64)
    busy_low = np.empty(n, dtype=np.int64)
    busy_high = np.empty(n, dtype=np.int64)
    fresh_low = np.empty(n, dtype=np.int64)
    fresh_high = np.empty(n, dtype=np.int64)
    for i in range(n):
        if pin[i] >= 0:
            offsets[i] = pin[i]
            _enter(i, pin[i], first, starts, ends, shift, base, count, entries)
    for q in range(sequence.shape[0]):
        i = sequence[q]
        found = 0
        for j in range(first[i], first[i + 1]):
            s, e = starts[j], ends[j]
            for b in range(s >> shift, ((e - 1) >> shift) + 1):
                fresh = 0
                for x in range(base[b], base[b] + count[b]):
                    other = entries[_OWNER, x]
                    live = entries[_START, x] < e and s < entries[_END, x]
                    if live and seen[other] != q:
                        seen[other] = q  # an interval listed in several buckets counts once
                        fresh_low[fresh] = entries[_LOW, x]
                        fresh_high[fresh] = entries[_LOW, x] + size[other]
                        fresh += 1
                found = _merge(busy_low, busy_high, found, fresh_low, fresh_high, fresh)
        if best_fit:
            offset = _best_hole(busy_low, busy_high, found, size[i], residue[i], modulus[i])
        else:
            offset = _first_hole(busy_low, busy_high, found, size[i], residue[i], modulus[i])
        offsets[i] = offset
        _enter(i, offset, first, starts, ends, shift, base, count, entries)
    return offsets


@njit(cache=True)
def _merge(busy_low, busy_high, found, fresh_low, fresh_high, fresh):
    """Merge the `fresh` ranges (sorted by low end) into the `found` busy ones (sorted
    too), from the back so that no scratch space is needed; returns the new count."""
    a, b, out = found - 1, fresh - 1, found + fresh - 1
    while b >= 0:
        if a >= 0 and busy_low[a] > fresh_low[b]:
            busy_low[out], busy_high[out] = busy_low[a], busy_high[a]
            a -= 1
        else:
            busy_low[out], busy_high[out] = fresh_low[b], fresh_high[b]
            b -= 1
        out -= 1
    return found + fresh


@njit(cache=True)
def _enter(i, offset, first, starts, ends, shift, base, count, entries):
    """List rectangle i at `offset` in every bucket its intervals touch, keeping each
    bucket sorted by offset (an insertion step: shift the higher entries up by one)."""
    for j in range(first[i], first[i + 1]):
        for b in range(starts[j] >> shift, ((ends[j] - 1) >> shift) + 1):
            x = base[b] + count[b]
            while x > base[b] and entries[_LOW, x - 1] > offset:
                for row in range(4):
                    entries[row, x] = entries[row, x - 1]
                x -= 1
            entries[_LOW, x] = offset
            entries[_START, x] = starts[j]
            entries[_END, x] = ends[j]
            entries[_OWNER, x] = i
            count[b] += 1


@njit(cache=True)
def _first_hole(busy_low, busy_high, found, size, residue, modulus):
    """The lowest allowed offset whose bytes clear every busy range (sorted by low end)."""
    offset = residue
    for x in range(found):
        if offset + size <= busy_low[x]:
            break
        if busy_high[x] > offset:
            offset = busy_high[x] + (residue - busy_high[x]) % modulus
    return offset


@njit(cache=True)
def _best_hole(busy_low, busy_high, found, size, residue, modulus):
    """The allowed offset in the smallest hole that fits, lowest on ties; else on top."""
    offset = residue
    best, best_room = -1, -1
    for x in range(found):
        room = busy_low[x] - offset
        if room >= size and (best < 0 or room < best_room):
            best, best_room = offset, room
        if busy_high[x] > offset:
            offset = busy_high[x] + (residue - busy_high[x]) % modulus
    return best if best >= 0 else offset
