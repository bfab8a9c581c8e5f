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

    For problems of several memories: `memories` names the memories the buffer may use
    (empty: any); `writes` and `reads` are the program points where its bytes are written
    and read, one read per consumer (None: written at its first point, read once at its
    last, as a tensor live over `[d, u + 1)` is made at d and last read at u).
    """

    id: str
    size: int
    live: tuple[Interval, ...]
    alignment: int = 1
    offset: int | None = None
    dtype: str = ""
    memories: tuple[str, ...] = ()
    writes: tuple[int, ...] | None = None
    reads: tuple[int, ...] | None = None

    @property
    def written_at(self) -> tuple[int, ...]:
        """The points where the buffer is written (its first point unless told)."""
        return (self.start,) if self.writes is None else self.writes

    @property
    def read_at(self) -> tuple[int, ...]:
        """The points where it is read, one per consumer (its last point unless told)."""
        return (self.end - 1,) if self.reads is None else self.reads

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
