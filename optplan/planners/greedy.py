"""Greedy planners: place alias classes one at a time, each as low as it fits.

Steps:
1. Each alias class becomes one rectangle (`common.rectangles`); pinned ones are placed
   first, at their pins.
2. The others are taken in one of several orders:
   - `size`: largest first, earlier start first on ties (TFLite's greedy-by-size);
   - `start`: earliest start first (what an online allocator sees);
   - `lifetime`: longest-lived first;
   - `area`: largest size x lifetime first;
   - `xla`: largest first, longer-lived first on ties (XLA's global decreasing size).
3. Each rectangle goes to the lowest allowed offset that clears every placed rectangle
   live at the same time (`first` fit), or to the smallest hole it fits in, else on top
   (`best` fit, as TFLite's arena and XLA's best-fit heap do).
4. `greedy` runs every order with every fit, plus the naive stack (so that it is never
   worse than `naive`, which alignment padding could otherwise make it), and keeps the
   lowest arena; `plan.detail` says which run won and what each reached. Orders that
   sort this problem's rectangles identically are run once.

Finding the rectangles live at the same time is the cost. Time is compressed to the ranks
of its end points and cut into buckets about one typical lifetime wide; a placed
rectangle is listed in every bucket its lifetime touches. A query reads only the buckets
under its own lifetime, keeps the entries that really overlap it in time, sorts them by
offset and sweeps for the first (or best) hole:

    bucket:    |  0  |  1  |  2  |  3  |
    placed a   [=====)                      listed in 0
    placed b         [===========)          listed in 1, 2
    query c             [====)              reads 1 (and 2): sees b, never a

With lifetimes short next to the whole run, as in real models, each query reads a few
dozen entries, so a run is O(n log n) for the ordering plus O(n k log k) for k rectangles
live at once.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from dataclasses import dataclass

from optplan.plan import Plan, Status
from optplan.planners.common import Rect, make_plan, now, pin_fault, rectangles, top
from optplan.planners.naive import stack
from optplan.problem import Problem

ORDERS = ("size", "start", "lifetime", "area", "xla")
FITS = ("first", "best")

_ORDER_KEYS: dict[str, Callable[[Rect], tuple[int, ...]]] = {
    "size": lambda r: (-r.size, r.start, r.index),
    "start": lambda r: (r.start, -r.size, r.index),
    "lifetime": lambda r: (-r.length, -r.size, r.start, r.index),
    "area": lambda r: (-r.size * r.length, r.start, r.index),
    "xla": lambda r: (-r.size, -r.length, r.start, r.index),
}

# (offset, top, first rank, end rank) of one placed interval, as listed in a bucket
_Entry = tuple[int, int, int, int]


@dataclass(frozen=True, slots=True)
class Greedy:
    """Options: which orders and fits to try; the best arena among them wins."""

    name: str = "greedy"
    orders: tuple[str, ...] = ORDERS
    fits: tuple[str, ...] = FITS

    def __call__(self, problem: Problem) -> Plan:
        return plan_greedy(problem, self)


def plan_greedy(problem: Problem, options: Greedy = Greedy()) -> Plan:
    started = now()
    rects = rectangles(problem)
    fault = pin_fault(rects)
    if fault is not None:
        return make_plan(
            problem,
            options.name,
            rects,
            None,
            started=started,
            status=Status.INFEASIBLE,
            detail={"reason": fault},
        )
    offsets, detail = best_offsets(rects, options.orders, options.fits)
    return make_plan(problem, options.name, rects, offsets, started=started, detail=detail)


def best_offsets(
    rects: list[Rect], orders: tuple[str, ...] = ORDERS, fits: tuple[str, ...] = FITS
) -> tuple[list[int], dict[str, object]]:
    """The lowest-arena offsets over every order and fit (and the naive stack).

    Assumes `pin_fault(rects)` found nothing. Ties go to the earlier run, so the result
    depends only on the input.
    """
    for order in orders:
        if order not in _ORDER_KEYS:
            raise ValueError(f"unknown greedy order {order!r}; choose from {', '.join(ORDERS)}")
    for fit in fits:
        if fit not in FITS:
            raise ValueError(f"unknown greedy fit {fit!r}; choose from {', '.join(FITS)}")
    collecting = gc.isenabled()
    # A run allocates a tuple per placed interval and a list per bucket; at 100k buffers
    # the cyclic collector rescanning them all cost ~15 % of the time, and none of them
    # can form a cycle.
    gc.disable()
    try:
        return _best_of(rects, orders, fits)
    finally:
        if collecting:
            gc.enable()


def _best_of(
    rects: list[Rect], orders: tuple[str, ...], fits: tuple[str, ...]
) -> tuple[list[int], dict[str, object]]:
    grid = _Grid.build(rects)
    best = stack(rects)
    winner = "naive"
    arenas: dict[str, int] = {"naive": top(rects, best)}
    movable = [r for r in rects if r.pin is None and r.size > 0]
    done: dict[tuple[int, ...], str] = {}
    for order in orders:
        sequence = tuple(r.index for r in sorted(movable, key=_ORDER_KEYS[order]))
        for fit in fits:
            run = f"{order}/{fit}"
            same = done.get(sequence)
            if same is not None:
                # Orders that agree on this problem (sizes all distinct, say) give the
                # same placement; run it once.
                arenas[run] = arenas[f"{same}/{fit}"]
                continue
            offsets = place(rects, sequence, fit, grid)
            arenas[run] = top(rects, offsets)
            if arenas[run] < arenas[winner]:
                best, winner = offsets, run
        done.setdefault(sequence, order)
    return best, {"order": winner, "arenas": arenas}


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


def place(rects: list[Rect], sequence: tuple[int, ...], fit: str, grid: _Grid) -> list[int]:
    """Offsets with pinned rectangles at their pins and the rectangles of `sequence`
    (indices) placed in that order."""
    offsets = [r.pin if r.pin is not None else r.lift(0) for r in rects]
    buckets: list[list[_Entry]] = [[] for _ in range(grid.buckets)]
    shift = grid.shift
    for rect in rects:
        if rect.pin is not None and rect.size > 0:
            _enter(buckets, grid.spans[rect.index], rect.pin, rect.pin + rect.size, shift)
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
