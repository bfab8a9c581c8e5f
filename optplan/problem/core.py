"""The allocation problem: the seam between programs and planners.

A `Problem` is a set of buffers, each with a size, an alignment and the half-open
intervals of program points during which it is live, plus alias equations
`offset(view) == offset(base) + delta`. Planners see only this; they never import the IR.

    point:    0   1   2   3   4
    a         [=======)              live [0, 2), never shares bytes with b
    b             [===========)      live [1, 4)
    c                     [=======)  live [3, 5): may reuse a's bytes

`lower_bound(problem)` is the most bytes live at any one point (an alias class counted
once); no arena can be smaller. `columns_of` gives an
alias-free problem's buffers as NumPy columns (`problem.columns`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from optplan.problem.buffers import Alias, Buffer, Interval
from optplan.problem.columns import BufferColumns
from optplan.problem.memory import MAIN, Memory, check_memories

# What a problem's plans are judged by (`Problem.objective`).
Objective = Literal["arena", "traffic"]


@dataclass(frozen=True, slots=True)
class Problem:
    """Buffers to place, aliases between them, and the memories they may live in.

    `memories` defaults to one unbounded memory (`memory.MAIN`), today's arena; a
    capacity is always a memory's (`memory.one_arena(C)` is the one memory of C bytes).
    """

    buffers: Sequence[Buffer]
    aliases: tuple[Alias, ...] = ()
    memories: tuple[Memory, ...] = field(default=(MAIN,), kw_only=True)
    _index: dict[str, int] | None = field(init=False, repr=False, compare=False, default=None)

    @property
    def objective(self) -> Objective:
        """What its plans are judged by, every plan being residences in its memories:
        "arena", the bytes of its one memory, when that memory has no alignment of its
        own (every buffer resides there all its life, so every plan has the same
        traffic: the plan of one arena); "traffic", the bytes accessed in each memory
        times its cost, otherwise. The driver (`planners.base`) packs an arena or decides
        residency by it, and reports and properties speak of it."""
        one_arena = len(self.memories) == 1 and self.memories[0].alignment == 1
        return "arena" if one_arena else "traffic"

    def memory(self, name: str) -> Memory:
        for memory in self.memories:
            if memory.name == name:
                return memory
        raise KeyError(name)

    def __post_init__(self) -> None:
        object.__setattr__(self, "aliases", tuple(self.aliases))
        object.__setattr__(self, "memories", tuple(self.memories))
        check_memories(self.memories)
        if isinstance(self.buffers, BufferColumns):
            # Checked as columns when they were made; the index waits until it is asked
            # for (100 MB at 1,000,000 buffers).
            object.__setattr__(self, "_index", None)
            self._check_aliases(self._positions() if self.aliases else {})
            return
        index: dict[str, int] = {}
        names = {m.name for m in self.memories}
        for position, buffer in enumerate(self.buffers):
            if buffer.id in index:
                raise ValueError(f"buffer {buffer.id!r} appears twice")
            index[buffer.id] = position
            _check_buffer(buffer)
            if buffer.memories or buffer.writes is not None or buffer.reads is not None:
                _check_tiers(buffer, names)
        object.__setattr__(self, "_index", index)
        self._check_aliases(index)

    def _check_aliases(self, index: dict[str, int]) -> None:
        for alias in self.aliases:
            for name in (alias.base, alias.view):
                if name not in index:
                    raise ValueError(f"alias names unknown buffer {name!r}")
            if alias.delta < 0:
                raise ValueError(f"alias of {alias.view!r} has negative delta {alias.delta}")

    def _positions(self) -> dict[str, int]:
        """Position by buffer id (made on first use for buffers held as columns)."""
        if self._index is None:
            assert isinstance(self.buffers, BufferColumns)
            object.__setattr__(self, "_index", {b: i for i, b in enumerate(self.buffers.ids)})
        assert self._index is not None
        return self._index

    def buffer(self, buffer_id: str) -> Buffer:
        return self.buffers[self._positions()[buffer_id]]

    @property
    def naive_bytes(self) -> int:
        """The arena with no reuse at all: every alias class laid end to end, each at the
        lowest offset its members' alignments allow (the naive planner's arena when
        nothing is pinned)."""
        if isinstance(self.buffers, BufferColumns) and not self.aliases:
            return self.buffers.naive_bytes()  # the same sum, without a class per buffer
        total = 0
        for cls in alias_classes(self):
            total = (total if cls.residue is None else cls.lift(total)) + cls.size
        return total


def _check_tiers(buffer: Buffer, names: set[str]) -> None:
    """The memories a buffer names exist; it is written and read at points it is live."""
    for name in buffer.memories:
        if name not in names:
            raise ValueError(f"buffer {buffer.id!r} names unknown memory {name!r}")
    for kind, points in (("written", buffer.writes or ()), ("read", buffer.reads or ())):
        for point in points:
            if not any(iv.start <= point < iv.end for iv in buffer.live):
                lives = ", ".join(str(iv) for iv in buffer.live)
                raise ValueError(
                    f"buffer {buffer.id!r} is {kind} at point {point}, outside {lives}"
                )


def _check_buffer(buffer: Buffer) -> None:
    if buffer.size < 0:
        raise ValueError(f"buffer {buffer.id!r} has negative size {buffer.size}")
    if buffer.alignment < 1:
        raise ValueError(f"buffer {buffer.id!r} has alignment {buffer.alignment} < 1")
    if not buffer.live:
        raise ValueError(f"buffer {buffer.id!r} is never live")
    for iv in buffer.live:
        if iv.end <= iv.start:
            raise ValueError(f"buffer {buffer.id!r} has empty interval {iv}")
    if buffer.offset is not None and buffer.offset < 0:
        raise ValueError(f"buffer {buffer.id!r} is pinned at negative offset {buffer.offset}")


# ---------------------------------------------------------------------------- alias classes


@dataclass(frozen=True, slots=True)
class AliasClass:
    """Buffers tied by aliases, packed as one rectangle: the form every planner packs.

    `members` maps each buffer id to its delta from the class's root; `size` is the height
    of the rectangle (max of delta + size), `live` the union of the members' lifetimes.
    The class is one allocation: the whole rectangle is reserved while any member is live.
    Its offset must be `residue (mod modulus)`, so that every member's `offset + delta` is
    a multiple of the member's alignment; `residue` is None when no offset satisfies them
    all. `pins` are the distinct class offsets that pinned members imply (more than one:
    the pins contradict each other and no plan exists). `index` is the class's position
    in `alias_classes`.
    """

    index: int
    root: str
    members: tuple[tuple[str, int], ...]
    size: int
    live: tuple[Interval, ...]
    modulus: int
    residue: int | None
    pins: tuple[int, ...]

    @property
    def pin(self) -> int | None:
        """The class offset its pins fix, when they agree."""
        return self.pins[0] if len(self.pins) == 1 else None

    @property
    def start(self) -> int:
        return self.live[0].start

    @property
    def end(self) -> int:
        return self.live[-1].end

    @property
    def length(self) -> int:
        return sum(iv.end - iv.start for iv in self.live)

    def lift(self, offset: int) -> int:
        """The lowest allowed offset at or above `offset`."""
        assert self.residue is not None
        return offset + (self.residue - offset) % self.modulus

    def allowed(self, offset: int) -> bool:
        return self.residue is not None and offset % self.modulus == self.residue

    def overlaps_in_time(self, other: AliasClass) -> bool:
        return any(a.overlaps(b) for a in self.live for b in other.live)


def alias_classes(problem: Problem) -> list[AliasClass]:
    """Group buffers into alias classes, in the order of their first buffer.

    Deltas are measured from the class's lowest member so that all are >= 0. Raises
    ValueError when the aliases contradict each other (a cycle with unequal deltas).
    Without aliases every buffer is its own class, and no grouping is done (it matters at
    100k buffers).
    """
    if not problem.aliases and isinstance(problem.buffers, BufferColumns):
        return _column_classes(problem.buffers)
    if not problem.aliases:
        return [
            AliasClass(
                index=index,
                root=b.id,
                members=((b.id, 0),),
                size=b.size,
                live=b.live if len(b.live) == 1 else merge_intervals(list(b.live)),
                modulus=b.alignment,
                residue=0,
                pins=() if b.offset is None else (b.offset,),
            )
            for index, b in enumerate(problem.buffers)
        ]
    return [
        _alias_class(problem, index, members)
        for index, members in enumerate(_alias_groups(problem).values())
    ]


def _column_classes(columns: BufferColumns) -> list[AliasClass]:
    """One class per buffer, read from the columns without making `Buffer` objects."""
    ids = columns.ids
    sizes, aligns, pins = columns.size.tolist(), columns.alignment.tolist(), columns.pin.tolist()
    spans = zip(columns.start.tolist(), columns.end.tolist())
    return [
        AliasClass(
            index=index,
            root=ids[index],
            members=((ids[index], 0),),
            size=sizes[index],
            live=(Interval(start, end),),
            modulus=aligns[index],
            residue=0,
            pins=() if pins[index] < 0 else (pins[index],),
        )
        for index, (start, end) in enumerate(spans)
    ]


def _alias_groups(problem: Problem) -> dict[str, list[tuple[str, int]]]:
    """Each class's members with their deltas from its union-find root, by root."""
    parent: dict[str, tuple[str, int]] = {b.id: (b.id, 0) for b in problem.buffers}

    def find(name: str) -> tuple[str, int]:
        root, delta = name, 0
        while parent[root][0] != root:
            step_root, step = parent[root]
            delta += step
            root = step_root
        return root, delta

    for alias in problem.aliases:
        base_root, base_delta = find(alias.base)
        view_root, view_delta = find(alias.view)
        # offset(view) = offset(base) + delta, and offset(x) = offset(root(x)) + delta(x).
        if base_root == view_root:
            if view_delta != base_delta + alias.delta:
                raise ValueError(f"aliases of {alias.view!r} contradict each other")
            continue
        parent[view_root] = (base_root, base_delta + alias.delta - view_delta)

    groups: dict[str, list[tuple[str, int]]] = {}
    for buffer in problem.buffers:
        root, delta = find(buffer.id)
        groups.setdefault(root, []).append((buffer.id, delta))
    return groups


def _alias_class(problem: Problem, index: int, members: list[tuple[str, int]]) -> AliasClass:
    """One class from its members: deltas from the lowest member, the rectangle, and
    where its offset may go (alignments and pins)."""
    low = min(delta for _, delta in members)
    shifted = tuple((name, delta - low) for name, delta in members)
    buffers = [problem.buffer(name) for name, _ in shifted]
    pins = {b.offset - delta for b, (_, delta) in zip(buffers, shifted) if b.offset is not None}
    alignments = [(delta, b.alignment) for b, (_, delta) in zip(buffers, shifted)]
    return AliasClass(
        index=index,
        root=shifted[0][0],
        members=shifted,
        size=max(b.size + d for b, (_, d) in zip(buffers, shifted)),
        live=merge_intervals([iv for b in buffers for iv in b.live]),
        modulus=math.lcm(*(alignment for _, alignment in alignments)),
        residue=residue_of(alignments),
        pins=tuple(sorted(pins)),
    )


def residue_of(alignments: list[tuple[int, int]]) -> int | None:
    """The least r >= 0 with (r + delta) % alignment == 0 for every (delta, alignment), by
    the Chinese remainder theorem; None when the congruences contradict each other.

    Usually 0; an alias whose delta is not a multiple of the view's alignment moves it.
    Each step merges r = residue (mod modulus) with r = -delta (mod alignment).
    """
    residue, modulus = 0, 1
    for delta, alignment in alignments:
        want = -delta % alignment
        common = math.gcd(modulus, alignment)
        if (want - residue) % common:
            return None
        # residue + modulus * k = want (mod alignment): solve for k modulo alignment / common.
        step = alignment // common
        k = (want - residue) // common * pow(modulus // common, -1, step) % step if step > 1 else 0
        residue += modulus * k
        modulus *= step
        residue %= modulus
    return residue


def merge_intervals(intervals: list[Interval]) -> tuple[Interval, ...]:
    """The union of intervals as sorted, disjoint, non-touching intervals."""
    merged: list[Interval] = []
    for iv in sorted(intervals):
        if merged and iv.start <= merged[-1].end:
            last = merged[-1]
            merged[-1] = Interval(last.start, max(last.end, iv.end))
        else:
            merged.append(iv)
    return tuple(merged)


# ---------------------------------------------------------------------------- lower bound


def live_profile(problem: Problem) -> list[tuple[int, int]]:
    """`(point, live bytes)` at every point where the live set changes, alias classes
    counted once, by a sweep over interval ends before starts."""
    points, live = _live_steps(problem)
    return list(zip(points.tolist(), live.tolist()))


def lower_bound(problem: Problem) -> int:
    """The most bytes live at any one point; no valid arena is smaller."""
    _, live = _live_steps(problem)
    return int(live.max()) if len(live) else 0


def _live_steps(problem: Problem) -> tuple[np.ndarray, np.ndarray]:
    """The sweep in NumPy: events sorted by point and summed; the last sum at each point
    is the live bytes from there on (half-open: what ends there is gone). Without aliases
    every buffer is its own class, so the classes need not be built (at 1,000,000
    buffers that took 18 s of the 25 s the Python sweep took). Sums that might not fit
    in int64 are taken over Python integers."""
    table = _spans(problem)
    if not len(table):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    points = np.concatenate((table[:, 0], table[:, 1]))
    changes = np.concatenate((table[:, 2], -table[:, 2]))
    # Only the last sum at each point is kept, so the order within a point is free.
    order = np.argsort(points, kind="stable")
    points, live = points[order], np.cumsum(changes[order])
    last = np.append(np.asarray(points[1:] != points[:-1], dtype=bool), True)
    return points[last], live[last]


def _spans(problem: Problem) -> np.ndarray:
    """Rows (start, end, size), one per live interval of each alias class: int64 when
    every sum of sizes fits, Python integers otherwise."""
    buffers = problem.buffers
    if isinstance(buffers, BufferColumns) and not problem.aliases:
        table = np.stack((buffers.start, buffers.end, buffers.size), axis=1)
        if float(buffers.size.sum(dtype=np.float64)) < 2.0**62:
            return table
        return table.astype(object)
    if not problem.aliases and all(len(b.live) == 1 for b in buffers):
        # Column by column, with no tuple per buffer: 4.8 s -> 1.7 s at 1,000,000.
        columns = (
            (b.live[0].start for b in buffers),
            (b.live[0].end for b in buffers),
            (b.size for b in buffers),
        )
        try:
            table = np.stack([np.fromiter(c, np.int64, len(buffers)) for c in columns], axis=1)
            if float(table[:, 2].sum(dtype=np.float64)) < 2.0**62:
                return table
        except OverflowError:
            pass
        spans = [(b.live[0].start, b.live[0].end, b.size) for b in buffers]
    elif problem.aliases:
        spans = [(iv.start, iv.end, c.size) for c in alias_classes(problem) for iv in c.live]
    else:
        spans = [
            (iv.start, iv.end, b.size) for b in buffers for iv in merge_intervals(list(b.live))
        ]
    try:
        table = np.array(spans, dtype=np.int64).reshape(-1, 3)
        if float(table[:, 2].sum(dtype=np.float64)) < 2.0**62:
            return table
    except OverflowError:
        pass
    return np.array(spans, dtype=object).reshape(-1, 3)


def columns_of(problem: Problem) -> BufferColumns | None:
    """The problem's buffers as columns, when it has no aliases and every buffer one
    interval (None otherwise, or when a number does not fit in int64)."""
    buffers = problem.buffers
    if problem.aliases:
        return None
    if isinstance(buffers, BufferColumns):
        return buffers
    if any(len(b.live) != 1 for b in buffers):
        return None
    count = len(buffers)
    try:
        start, end, size, alignment, pin = (
            np.fromiter(values, np.int64, count)
            for values in (
                (b.live[0].start for b in buffers),
                (b.live[0].end for b in buffers),
                (b.size for b in buffers),
                (b.alignment for b in buffers),
                (-1 if b.offset is None else b.offset for b in buffers),
            )
        )
    except OverflowError:
        return None
    return BufferColumns(tuple(b.id for b in buffers), start, end, size, alignment, pin)
