"""The greedy placement loop compiled by numba: the same offsets as `greedy.place`, faster.

`greedy.place` reads the placed rectangles under a query's lifetime from time buckets,
sorts them by offset and sweeps for a hole. On real traces (idealloc's S_1, Y_1,
pangu_2.6B) a few thousand buffers are live at once and one in ten lives for most of the
run, so a query meets thousands of placed rectangles, each listed in hundreds of buckets:
one order took 12 s on pangu_2.6B's 18,692 buffers. The hole a rectangle goes to depends
only on the union of the busy byte ranges under its lifetime, so this module keeps
unions, merged, in a segment tree over time:

    node n covers ranks [lo(n), hi(n))
    cover[n]  the byte ranges of placed intervals whose canonical decomposition holds n
              (live at every point of n, not at every point of n's parent)
    union[n]  the byte ranges of placed intervals live at some point of n, merged

1. `Compiled.build(part)` ranks the end points of the part's intervals; the tree has one
   leaf per rank (a power of two of them).
2. `Compiled.sequence(order)` is one stable `np.lexsort` over the order's keys; equal
   keys fall back to the part's order, which is `rect.index` order, as in the key tuples
   of `greedy._ORDER_KEYS`.
3. `_place` answers a query [s, e) with the union of `union[n]` over the canonical nodes
   of [s, e) and `cover[a]` over the nodes on the paths from leaves s and e - 1 to the
   root (every partially covered node is on one of them), sorted by low end, and sweeps
   it for the first (or best) hole. Placing a rectangle adds its byte range to `cover`
   and `union` of the canonical nodes and to `union` of the nodes on both paths. Each
   list stays sorted and merged (touching ranges join), so a packed region of the arena
   is one entry however many rectangles fill it: a query reads O(log T) short lists.

The sweeps are `greedy._first_hole` and `greedy._best_hole` line for line; both give the
same offset for any list of busy ranges with the same union (sorted by low end), so the
offsets are those of `greedy.place` for every order and fit
(`tests/test_greedy_scaling.py`).

`Compiled.build(part)` (or `Compiled.from_columns`) also picks the loop: this tree, or
`greedy.buckets`' sorted buckets when a query would read fewer than BUCKET_READS listed
intervals there from fewer than BUCKET_SPAN buckets (lifetimes of about the same length,
however many live at once), where the tree's node lists repeat the same ranges and cost
3-6x more; the tree where some lifetimes span the whole run.

`Compiled.build(part)` returns None, and greedy uses `greedy.place`, when numba is
missing or some number (offsets up to the naive stack, size x lifetime for the `area`
order) might not fit in int64.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from optplan.planners.common import Rect, make_form
from optplan.planners.greedy.buckets import place_buckets, reads, shift_for
from optplan.planners.greedy.stop import POLL, flag_of
from optplan.planners.greedy.sweeps import best_hole, first_hole
from optplan.planners.jit import GREEDY, njit, warm
from optplan.planners.jit import NUMBA_INSTALLED as COMPILED
from optplan.problem import Buffer, Interval, Problem, columns_of

_LIMIT = 1 << 62  # numbers at or above this could overflow an int64 sum or product
# Buckets when a query reads fewer listed intervals than this, on average, and its
# lifetime spans fewer than BUCKET_SPAN buckets (reads x buckets merged over reads,
# `greedy.buckets.reads`); else the tree. The spans split the traces cleanly: random
# traces of 10 to 10,000 live at once 2.5-3.4 (buckets 3-5x faster than the tree at
# 1,000 and 10,000 live, `benchmarks/greedy_concurrency.py`), idealloc's G_1 3.7 and
# resnet50 5.8 (either loop as fast), but a schedule of MOCCASIN's 500-node graph with
# recomputation ~104 (some lifetimes across the whole run: 0.28 s with the tree, 1.7 s
# with buckets) and idealloc's pangu_2.6B, S_1, Y_1 2,400-8,000 (reads 128,000 to 2.5
# million: only the tree's merged lists keep those in hand).
BUCKET_READS = 60_000
BUCKET_SPAN = 8.0


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
    keys, `leaves`, the number of leaves of the segment tree (a power of two), and the
    loop that places: `buckets` (with buckets of 2**shift ranks) or the tree."""

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
    leaves: int
    buckets: bool = False
    shift: int = 0
    reads: float = 0.0  # listed intervals a bucket query reads, on average (0: the tree)

    @staticmethod
    def build(part: Sequence[Rect], kernel: str = "auto") -> Compiled | None:
        """The part as arrays; None when numba is missing or a number might not fit in
        int64, and `greedy.place` must do the work."""
        if not COMPILED:
            return None
        try:
            # Field by field, with no tuple per rectangle (a million of them at 1M).
            size, residue, modulus, pin, start_time, length = (
                np.fromiter(values, np.int64, len(part))
                for values in (
                    (r.size for r in part),
                    (r.residue or 0 for r in part),
                    (r.modulus for r in part),
                    (-1 if r.pin is None else r.pin for r in part),
                    (r.start for r in part),
                    (r.length for r in part),
                )
            )
            times = np.fromiter(
                (p for r in part for iv in r.live for p in (iv.start, iv.end)), np.int64
            )
        except OverflowError:
            return None
        counts = _array([len(r.live) for r in part])
        first = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
        shape = (size, residue, modulus, pin)
        return _assemble(first, times[0::2], times[1::2], shape, start_time, length, kernel)

    @staticmethod
    def from_columns(
        start: np.ndarray,
        end: np.ndarray,
        size: np.ndarray,
        alignment: np.ndarray,
        kernel: str = "auto",
    ) -> Compiled | None:
        """Unpinned rectangles of one interval each, from columns (`optplan.problem.columns`);
        None as for `build`."""
        if not COMPILED:
            return None
        count = len(size)
        shape = (size, np.zeros(count, np.int64), alignment, np.full(count, -1, np.int64))
        first = np.arange(count + 1, dtype=np.int64)
        return _assemble(first, start, end, shape, start, end - start, kernel)

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

    def place(
        self, sequence: Hashable, fit: str, stop: np.ndarray | None = None
    ) -> np.ndarray | None:
        """The run's offsets; None when `stop` (`greedy.stop`) was raised before its end."""
        assert isinstance(sequence, bytes)
        arrays = (self.first, self.starts, self.ends, self.size, self.residue, self.modulus)
        order = np.frombuffer(sequence, dtype=np.int64)
        flag = flag_of() if stop is None else stop
        if self.buckets:
            offsets, placed = place_buckets(
                order, fit == "best", *arrays, self.pin, self.shift, flag
            )
        else:
            offsets, placed = _place(order, fit == "best", *arrays, self.pin, self.leaves, flag)
        return offsets if placed == len(order) else None

    def whole(self, sequence: Hashable, fit: str) -> np.ndarray:
        """A run that nothing cuts."""
        offsets = self.place(sequence, fit)
        assert offsets is not None
        return offsets

    def top(self, offsets: list[int] | np.ndarray) -> int:
        return int((np.asarray(offsets, dtype=np.int64) + self.size).max(initial=0))

    def stack(self) -> np.ndarray:
        """`naive.stack` of the part: unpinned rectangles end to end above the pinned."""
        return _stack(self.size, self.residue, self.modulus, self.pin)


def stack_columns(size: np.ndarray, alignment: np.ndarray) -> np.ndarray:
    """`naive.stack` of unpinned buffers given as columns, with no loop built."""
    count = len(size)
    return _stack(size, np.zeros(count, np.int64), alignment, np.full(count, -1, np.int64))


def warm_kernels() -> None:
    """Compile every greedy kernel with the argument types real runs pass (numba compiles
    once per combination of types): both loops, built from rectangles and from columns,
    and the stack, on a part of three buffers."""
    buffers = tuple(Buffer(f"b{k}", 8, (Interval(k, k + 2),)) for k in range(3))
    problem = Problem(buffers)
    columns = columns_of(problem)
    assert columns is not None
    (part,) = make_form(problem).parts
    members = np.arange(len(buffers))  # `greedy.columns` passes a part's columns as copies
    start, end = columns.start[members], columns.end[members]
    size, alignment = columns.size[members], columns.alignment[members]
    for kernel in ("tree", "buckets"):
        built = Compiled.build(part, kernel)
        for runner in (built, Compiled.from_columns(start, end, size, alignment, kernel)):
            assert runner is not None
            runner.whole(runner.sequence("size"), "best")
            runner.stack()


def _assemble(
    first: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    shape: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    start_time: np.ndarray,
    length: np.ndarray,
    kernel: str,
) -> Compiled | None:
    """Ranks of the interval ends, and the loop for the trace's shape: buckets when a
    query would read fewer than BUCKET_READS listed intervals (`greedy.buckets.reads`)
    from fewer than BUCKET_SPAN buckets, else the tree."""
    size, residue, modulus, pin = shape
    if not _fits(size, modulus, pin, length):
        return None
    warm(GREEDY)  # where pip did not compile the kernels ahead: all of them, once
    points, ranks = np.unique(np.concatenate((start, end)), return_inverse=True)
    ranks = ranks.reshape(-1).astype(np.int64)
    starts, ends = ranks[: len(start)], ranks[len(start) :]
    shift = shift_for(starts, ends)
    read, merged = reads(starts, ends, shift)
    if kernel == "auto":
        kernel = "buckets" if read < BUCKET_READS and merged < BUCKET_SPAN * read else "tree"
    return Compiled(
        first=first,
        starts=starts,
        ends=ends,
        size=size,
        residue=residue,
        modulus=modulus,
        pin=pin,
        start_time=start_time,
        length=length,
        movable=np.flatnonzero(pin < 0).astype(np.int64),
        leaves=1 << max(len(points) - 1, 1).bit_length(),
        buckets=kernel == "buckets",
        shift=shift,
        reads=read if kernel == "buckets" else 0.0,
    )


def _array(values: list[int]) -> np.ndarray:
    return np.asarray(values, dtype=np.int64)


# ---------------------------------------------------------------------------- the loop
#
# Lists of merged byte ranges live in one pool: list k holds pool_low/pool_high[at[k] :
# at[k] + count[k]] within room[k] slots; a full list moves to the pool's end with twice
# the room (the pool doubles when it must). List 2n is cover[n], list 2n + 1 union[n].


@njit(cache=True, nogil=True)
def _place(sequence, best_fit, first, starts, ends, size, residue, modulus, pin, leaves, stop):
    """Offsets with pinned rectangles at their pins and the others placed in `sequence`,
    and how many of `sequence` were placed: all, unless `stop[0]` was raised."""
    lists = 4 * leaves
    at = np.zeros(lists, dtype=np.int64)
    count = np.zeros(lists, dtype=np.int32)
    room = np.zeros(lists, dtype=np.int32)
    # Most lists hold one or two ranges: start small and double (a fixed four slots a
    # list took 512 MB up front at 1,000,000 rectangles).
    pool = np.empty((2, 8 * first[-1] + 64), dtype=np.int64)
    used = 0
    offsets = residue.copy()
    busy = np.empty((2, 64), dtype=np.int64)
    spare = np.empty((2, 64), dtype=np.int64)
    for i in range(size.shape[0]):
        if pin[i] >= 0:
            offsets[i] = pin[i]
            pool, used = _enter(
                i, pin[i], first, starts, ends, size, leaves, pool, used, at, count, room
            )
    for q in range(sequence.shape[0]):
        if q % POLL == 0 and stop[0]:
            return offsets, q
        i = sequence[q]
        busy, found = _gather(i, first, starts, ends, leaves, pool, at, count, busy)
        if spare.shape[1] < busy.shape[1]:
            spare = np.empty_like(busy)
        ranges = _sort_by_low(busy, spare, found)
        low, high = ranges[0], ranges[1]
        if best_fit:
            offset = best_hole(low, high, found, size[i], residue[i], modulus[i])
        else:
            offset = first_hole(low, high, found, size[i], residue[i], modulus[i])
        offsets[i] = offset
        pool, used = _enter(
            i, offset, first, starts, ends, size, leaves, pool, used, at, count, room
        )
    return offsets, sequence.shape[0]


_RUN = 8  # ranges a query's sort orders by insertion before it merges


@njit(cache=True)
def _sort_by_low(busy, spare, found):
    """The first `found` ranges of `busy` sorted by low end, equal ends kept in their
    order (as a stable argsort keeps them): bottom-up merges back and forth between
    `busy` and `spare`; returns the one holding the result. Plain loops: numba compiles
    `np.argsort` and the fancy indexing it needs in many times the time."""
    for left in range(0, found, _RUN):  # runs of _RUN by insertion, then merges
        for x in range(left + 1, min(left + _RUN, found)):
            low, high = busy[0, x], busy[1, x]
            y = x
            while y > left and busy[0, y - 1] > low:
                busy[0, y], busy[1, y] = busy[0, y - 1], busy[1, y - 1]
                y -= 1
            busy[0, y], busy[1, y] = low, high
    source, target = busy, spare
    width = _RUN
    while width < found:
        for left in range(0, found, 2 * width):
            middle, right = min(left + width, found), min(left + 2 * width, found)
            a, b = left, middle
            for x in range(left, right):
                if b >= right or (a < middle and source[0, a] <= source[0, b]):
                    target[0, x], target[1, x] = source[0, a], source[1, a]
                    a += 1
                else:
                    target[0, x], target[1, x] = source[0, b], source[1, b]
                    b += 1
        source, target = target, source
        width *= 2
    return source


@njit(cache=True)
def _gather(i, first, starts, ends, leaves, pool, at, count, busy):
    """The busy ranges under rectangle i's lifetime (unsorted, maybe overlapping): union
    lists of the canonical nodes and cover lists of the nodes on the boundary paths."""
    found = 0
    for j in range(first[i], first[i + 1]):
        left, right = starts[j] + leaves, ends[j] + leaves
        a, b = left, right - 1
        while a >= 1:  # both paths up, once where they have met
            busy, found = _append(busy, found, pool, at[2 * a], count[2 * a])
            if b != a:
                busy, found = _append(busy, found, pool, at[2 * b], count[2 * b])
            a >>= 1
            b >>= 1
        while left < right:
            if left & 1:
                busy, found = _append(busy, found, pool, at[2 * left + 1], count[2 * left + 1])
                left += 1
            if right & 1:
                right -= 1
                busy, found = _append(busy, found, pool, at[2 * right + 1], count[2 * right + 1])
            left >>= 1
            right >>= 1
    return busy, found


@njit(cache=True)
def _append(busy, found, pool, begin, length):
    """Copy `length` ranges from the pool at `begin` to the end of `busy` (grown as needed)."""
    if found + length > busy.shape[1]:
        grown = np.empty((2, 2 * (found + length)), dtype=np.int64)
        for x in range(found):  # a slice copy took numba 30x longer to compile
            grown[0, x], grown[1, x] = busy[0, x], busy[1, x]
        busy = grown
    for x in range(length):
        busy[0, found + x] = pool[0, begin + x]
        busy[1, found + x] = pool[1, begin + x]
    return busy, found + length


@njit(cache=True)
def _enter(i, offset, first, starts, ends, size, leaves, pool, used, at, count, room):
    """Record rectangle i at `offset`: its byte range joins cover and union of the
    canonical nodes of each interval and union of the nodes on both boundary paths."""
    low, high = offset, offset + size[i]
    for j in range(first[i], first[i + 1]):
        left, right = starts[j] + leaves, ends[j] + leaves
        for leaf in (left, right - 1):
            # Up a path until a union already holds the range: every union above holds
            # its children's, so they hold it too (this spares most of the climb).
            node, changed = leaf, True
            while node >= 1 and changed:
                pool, used, changed = _add(2 * node + 1, low, high, pool, used, at, count, room)
                node >>= 1
        while left < right:
            if left & 1:
                pool, used, _ = _add(2 * left, low, high, pool, used, at, count, room)
                pool, used, _ = _add(2 * left + 1, low, high, pool, used, at, count, room)
                left += 1
            if right & 1:
                right -= 1
                pool, used, _ = _add(2 * right, low, high, pool, used, at, count, room)
                pool, used, _ = _add(2 * right + 1, low, high, pool, used, at, count, room)
            left >>= 1
            right >>= 1
    return pool, used


@njit(cache=True)
def _add(k, low, high, pool, used, at, count, room):
    """Merge [low, high) into list k, kept sorted and merged (touching ranges join);
    says whether the list changed. Plain loops, not slices: a slice copy allocates, and
    this runs dozens of times a rectangle."""
    begin, length = at[k], count[k]
    end = begin + length
    # Ranges before `touch` end before `low`; ranges from `after` on start after `high`.
    touch = _search(pool, 1, begin, end, low, False)
    after = _search(pool, 0, touch, end, high, True)
    if touch < after:
        if after - touch == 1 and pool[0, touch] <= low and high <= pool[1, touch]:
            return pool, used, False
        pool[0, touch] = min(low, pool[0, touch])
        pool[1, touch] = max(high, pool[1, after - 1])
        gone = after - touch - 1
        if gone:
            for x in range(after, end):
                pool[0, x - gone] = pool[0, x]
                pool[1, x - gone] = pool[1, x]
            count[k] = length - gone
        return pool, used, True
    if length == room[k]:
        grow = max(2 * length, 1)
        if used + grow > pool.shape[1]:
            bigger = np.empty((2, 2 * (used + grow)), dtype=np.int64)
            for x in range(used):
                bigger[0, x], bigger[1, x] = pool[0, x], pool[1, x]
            pool = bigger
        for x in range(length):
            pool[0, used + x] = pool[0, begin + x]
            pool[1, used + x] = pool[1, begin + x]
        touch += used - begin
        begin, at[k], room[k] = used, used, grow
        end = begin + length
        used += grow
    for x in range(end, touch, -1):
        pool[0, x] = pool[0, x - 1]
        pool[1, x] = pool[1, x - 1]
    pool[0, touch], pool[1, touch] = low, high
    count[k] = length + 1
    return pool, used, True


@njit(cache=True)
def _search(pool, row, first, last, value, right):
    """The first x in [first, last) with pool[row, x] > value (`right`) or >= value."""
    while first < last:
        middle = (first + last) >> 1
        if pool[row, middle] < value or (right and pool[row, middle] == value):
            first = middle + 1
        else:
            last = middle
    return first


@njit(cache=True)
def _stack(size, residue, modulus, pin):
    cursor = 0
    for i in range(size.shape[0]):
        if pin[i] >= 0:
            cursor = max(cursor, pin[i] + size[i])
    offsets = np.empty_like(size)
    for i in range(size.shape[0]):
        if pin[i] >= 0:
            offsets[i] = pin[i]
        else:
            offsets[i] = cursor + (residue[i] - cursor) % modulus[i]
            cursor = offsets[i] + size[i]
    return offsets
