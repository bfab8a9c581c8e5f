"""The two hole sweeps of the compiled greedy loops (`greedy.kernel`, `greedy.buckets`).

Each takes the busy byte ranges under a query's lifetime, sorted by low end (repeats and
overlaps allowed), and returns an offset `residue (mod modulus)` whose `size` bytes clear
them all: `first_hole` the lowest, `best_hole` the one in the smallest hole that fits
(lowest on ties), else on top. They are `greedy._first_hole` and `greedy._best_hole` line
for line, and depend only on the union of the ranges.
"""

from __future__ import annotations

from optplan.planners.jit import njit


@njit(cache=True)
def first_hole(busy_low, busy_high, found, size, residue, modulus):
    """The lowest allowed offset whose bytes clear every busy range (sorted by low end)."""
    offset = residue
    for x in range(found):
        if offset + size <= busy_low[x]:
            break
        if busy_high[x] > offset:
            offset = busy_high[x] + (residue - busy_high[x]) % modulus
    return offset


@njit(cache=True)
def best_hole(busy_low, busy_high, found, size, residue, modulus):
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
