"""The records of an allocation problem: program-point intervals, buffers, aliases.

    point:    0   1   2   3   4
    a         [=======)              live [0, 2), never shares bytes with b
    b             [===========)      live [1, 4)
    c                     [=======)  live [3, 5): may reuse a's bytes
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, order=True)
class Interval:
    """Program points `[start, end)`; `end > start`."""

    start: int
    end: int

    def overlaps(self, other: Interval) -> bool:
        return self.start < other.end and other.start < self.end

    def __str__(self) -> str:
        return f"[{self.start}, {self.end})"


@dataclass(frozen=True, slots=True)
class Buffer:
    """A block of `size` bytes live over `live`; `offset` pins it where given.

    `dtype` is an optional tag (the tensor's element type) for planners that pool storage
    by type, as TVM's does; it never changes what a valid plan is.
    """

    id: str
    size: int
    live: tuple[Interval, ...]
    alignment: int = 1
    offset: int | None = None
    dtype: str = ""

    @property
    def start(self) -> int:
        return min(iv.start for iv in self.live)

    @property
    def end(self) -> int:
        return max(iv.end for iv in self.live)

    def overlaps_in_time(self, other: Buffer) -> bool:
        return any(a.overlaps(b) for a in self.live for b in other.live)


@dataclass(frozen=True, slots=True)
class Alias:
    """`offset(view) == offset(base) + delta`: the view lives inside the base's bytes."""

    base: str
    view: str
    delta: int = 0
