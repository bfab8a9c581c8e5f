"""Greedy runs: which (order, fit) runs a part gets, the best of them, and the
plain-Python placement.

1. `_runs` picks the runs for a part by its size (every order with every fit, fewer on
   large parts); `best_runs` tries them on a `Runner` and keeps the lowest arena.
2. A `Runner` is one part ready for runs: the compiled loop (`kernel.Compiled`) or the
   plain-Python `Interpreted` below, which sorts by `_ORDER_KEYS` and places with `place`
   over time buckets (the bucket picture is in `greedy.planner`'s docstring).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from optplan.budget import RECTS_PER_UNIT, Clock
from optplan.planners.common import Rect, now, top

ORDERS = ("size", "start", "lifetime", "area", "xla")
FITS = ("first", "best")
# On parts this large every run costs seconds (idealloc's Y_1, 62,185 buffers: 1.6-6 s
# each), so only the runs that win on some large real trace are made (module docstring).
LARGE_PART = 20_000
LARGE_RUNS = (("size", "first"), ("size", "best"), ("lifetime", "best"))
# Above this, one run costs 2 s of CPU a 100,000 rectangles (a generated trace, about
# 100 live at once): only the first of LARGE_RUNS is made.
HUGE_PART = 200_000
# The same cuts by the listed intervals a run of the bucket loop reads (rectangles x
# reads a query, `kernel.Compiled.reads`), which grows with the buffers live at once:
# on random traces of 10,000 buffers with 100 and 1,000 live at once (4 and 41 million)
# a run takes 0.05 and 0.3-0.4 s, so all ten runs would take 0.5 and 3.5 s where
# idealloc's one try takes 0.4 and 2.2 s (`benchmarks/greedy_concurrency.py`).
LARGE_READS = 2_000_000
HUGE_READS = 2_000_000_000

_ORDER_KEYS: dict[str, Callable[[Rect], tuple[int, ...]]] = {
    "size": lambda r: (-r.size, r.start, r.index),
    "start": lambda r: (r.start, -r.size, r.index),
    "lifetime": lambda r: (-r.length, -r.size, r.start, r.index),
    "area": lambda r: (-r.size * r.length, r.start, r.index),
    "xla": lambda r: (-r.size, -r.length, r.start, r.index),
}

# One offset per rectangle of a part: a list, or an int64 array from the compiled loop
Offsets = list[int] | np.ndarray
# (offset, top, first rank, end rank) of one placed interval, as listed in a bucket
_Entry = tuple[int, int, int, int]


def check_runs(orders: tuple[str, ...], fits: tuple[str, ...]) -> None:
    for order in orders:
        if order not in _ORDER_KEYS:
            raise ValueError(f"unknown greedy order {order!r}; choose from {', '.join(ORDERS)}")
    for fit in fits:
        if fit not in FITS:
            raise ValueError(f"unknown greedy fit {fit!r}; choose from {', '.join(FITS)}")


def best_runs(
    runner: Runner,
    naive: Offsets,
    rects: int,
    orders: tuple[str, ...],
    fits: tuple[str, ...],
    floor: int,
    deadline: float | None = None,
    clock: Clock | None = None,
    stop: np.ndarray | None = None,
) -> tuple[Offsets, dict[str, object]]:
    """The best of `naive` and the runs `_runs` allows on a part of `rects` rectangles,
    stopping once an arena is at `floor`, or after the first run once past `deadline` (a
    `clock` reading, where one is given: each run counts `rects / RECTS_PER_UNIT` units
    of work; else a `now()` time); with the winner and every run's arena. Once `stop`
    (`greedy.stop`) is raised the run under way is dropped and no other starts; the
    detail then names it (`cut_run`)."""
    best = naive
    winner = "naive"
    arenas: dict[str, int] = {"naive": runner.top(best)}
    done: dict[tuple[Hashable, str], str] = {}
    sequences: dict[str, Hashable] = {}
    for order, fit in _runs(rects, runner.reads, orders, fits):
        if arenas[winner] <= floor:
            break  # under the live-bytes bound of the whole problem: nothing to gain
        if deadline is not None and done and _past(deadline, clock):
            break
        run = f"{order}/{fit}"
        if stop is not None and stop[0]:
            return best, {"order": winner, "arenas": arenas, "cut_run": run}
        if order not in sequences:
            sequences[order] = runner.sequence(order)
        key = (sequences[order], fit)
        if key in done:
            # Orders that agree on this part (sizes all distinct, say) give the same
            # placement; run it once.
            arenas[run] = arenas[done[key]]
            continue
        offsets = runner.place(key[0], fit, stop)
        if offsets is None:
            return best, {"order": winner, "arenas": arenas, "cut_run": run}
        if clock is not None:
            clock.spend((rects + RUN_OVERHEAD) / RECTS_PER_UNIT)
        arenas[run] = runner.top(offsets)
        done[key] = run
        if arenas[run] < arenas[winner]:
            best, winner = offsets, run
    return best, {"order": winner, "arenas": arenas}


# What a run costs besides its rectangles (its sequence, its arrays), in rectangles: a
# run over a schedule's 300 instances takes about 7 ms.
RUN_OVERHEAD = 300


def _past(deadline: float, clock: Clock | None) -> bool:
    return clock.past(deadline) if clock is not None else now() >= deadline


def _runs(
    rects: int, reads: float, orders: tuple[str, ...], fits: tuple[str, ...]
) -> list[tuple[str, str]]:
    """The (order, fit) runs for a part of `rects` rectangles whose queries read `reads`
    listed intervals each (0 where it is not counted): all, except that a part of more
    than LARGE_PART, or whose run reads more than LARGE_READS, keeps only LARGE_RUNS (or,
    if none was asked for, the first), and one of more than HUGE_PART, or reading more
    than HUGE_READS, only the first of those."""
    runs = [(order, fit) for order in orders for fit in fits]
    work = rects * reads
    if rects <= LARGE_PART and work <= LARGE_READS:
        return runs
    large = [run for run in runs if run in LARGE_RUNS] or runs[:1]
    return large[:1] if rects > HUGE_PART or work > HUGE_READS else large


class Runner(Protocol):
    """One part, ready for runs: `sequence` names an order's placement sequence (equal
    names, equal sequences), `place` places in it, `top` measures the arena."""

    @property
    def reads(self) -> float: ...

    def sequence(self, order: str) -> Hashable: ...

    def place(
        self, sequence: Hashable, fit: str, stop: np.ndarray | None = None
    ) -> Offsets | None: ...

    def top(self, offsets: Offsets) -> int: ...


@dataclass(frozen=True, slots=True)
class Interpreted:
    """The plain-Python runner: sorts with the key functions and places with `place`."""

    part: list[Rect]
    grid: _Grid

    @staticmethod
    def build(part: list[Rect]) -> Interpreted:
        return Interpreted(part, _Grid.build(part))

    def sequence(self, order: str) -> tuple[int, ...]:
        key = _ORDER_KEYS[order]
        movable = [i for i, r in enumerate(self.part) if r.pin is None]
        return tuple(sorted(movable, key=lambda i: key(self.part[i])))

    @property
    def reads(self) -> float:
        """Not counted: parts this small place in well under a second."""
        return 0.0

    def place(self, sequence: Hashable, fit: str, stop: np.ndarray | None = None) -> list[int]:
        """A whole run: parts this small place in well under a second, so `stop` waits."""
        assert isinstance(sequence, tuple)
        return place(self.part, sequence, fit, self.grid)

    def top(self, offsets: Offsets) -> int:
        return top(self.part, list(offsets))


@dataclass(frozen=True, slots=True)
class _Grid:
    """Lifetimes as ranks of end points, and the bucket width (a power of two)."""

    spans: tuple[tuple[tuple[int, int], ...], ...]
    shape: tuple[tuple[int, int, int], ...]  # (size, residue, modulus) per rectangle
    shift: int
    buckets: int

    @staticmethod
    def build(rects: list[Rect]) -> _Grid:
        points = sorted({p for r in rects for iv in r.live for p in (iv.start, iv.end)})
        rank = {p: i for i, p in enumerate(points)}
        spans = tuple(tuple((rank[iv.start], rank[iv.end]) for iv in r.live) for r in rects)
        lengths = sorted(e - s for span in spans for s, e in span)
        typical = lengths[len(lengths) // 2] if lengths else 1
        shift = max(typical, 1).bit_length() - 1
        shape = tuple((r.size, r.residue or 0, r.modulus) for r in rects)
        return _Grid(spans, shape, shift, (len(points) >> shift) + 1)


def place(part: list[Rect], sequence: tuple[int, ...], fit: str, grid: _Grid) -> list[int]:
    """Offsets (in the order of `part`) with pinned rectangles at their pins and the
    others placed in the order of `sequence`, a list of positions in `part`."""
    offsets = [r.pin if r.pin is not None else r.lift(0) for r in part]
    buckets: list[list[_Entry]] = [[] for _ in range(grid.buckets)]
    shift = grid.shift
    for position, rect in enumerate(part):
        if rect.pin is not None and rect.size > 0:
            _enter(buckets, grid.spans[position], rect.pin, rect.pin + rect.size, shift)
    hole = _best_hole if fit == "best" else _first_hole
    spans, shape = grid.spans, grid.shape
    for index in sequence:
        size, residue, modulus = shape[index]
        span = spans[index]
        if len(span) == 1:
            # The common case, kept free of calls: one interval, usually one bucket.
            s, e = span[0]
            first, last = s >> shift, (e - 1) >> shift
            if first == last:
                busy = [(lo, hi) for lo, hi, bs, be in buckets[first] if bs < e and s < be]
            else:
                busy = [
                    (lo, hi)
                    for b in range(first, last + 1)
                    for lo, hi, bs, be in buckets[b]
                    if bs < e and s < be
                ]
            busy.sort()
            offset = hole(busy, size, residue, modulus)
            entry = (offset, offset + size, s, e)
            for b in range(first, last + 1):
                buckets[b].append(entry)
        else:
            busy = _busy(buckets, span, shift)
            offset = hole(busy, size, residue, modulus)
            _enter(buckets, span, offset, offset + size, shift)
        offsets[index] = offset
    return offsets


def _enter(
    buckets: list[list[_Entry]],
    span: tuple[tuple[int, int], ...],
    low: int,
    high: int,
    shift: int,
) -> None:
    for s, e in span:
        entry = (low, high, s, e)
        for b in range(s >> shift, ((e - 1) >> shift) + 1):
            buckets[b].append(entry)


def _busy(
    buckets: list[list[_Entry]], span: tuple[tuple[int, int], ...], shift: int
) -> list[tuple[int, int]]:
    """Byte ranges of placed rectangles live at some point of `span`, sorted by offset.

    An entry listed in several buckets may appear more than once; the sweeps do not mind.
    """
    busy: list[tuple[int, int]] = []
    for s, e in span:
        for b in range(s >> shift, ((e - 1) >> shift) + 1):
            busy.extend([(lo, hi) for lo, hi, bs, be in buckets[b] if bs < e and s < be])
    busy.sort()
    return busy


def _first_hole(busy: list[tuple[int, int]], size: int, residue: int, modulus: int) -> int:
    """The lowest allowed offset whose bytes clear every busy range."""
    offset = residue
    for lo, hi in busy:
        if offset + size <= lo:
            break
        if hi > offset:
            offset = hi + (residue - hi) % modulus
    return offset


def _best_hole(busy: list[tuple[int, int]], size: int, residue: int, modulus: int) -> int:
    """The allowed offset in the smallest hole that fits, lowest on ties; else on top."""
    offset = residue
    best, best_room = -1, -1
    for lo, hi in busy:
        room = lo - offset
        if room >= size and (best < 0 or room < best_room):
            best, best_room = offset, room
        if hi > offset:
            offset = hi + (residue - hi) % modulus
    return best if best >= 0 else offset
