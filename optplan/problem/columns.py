"""Buffers as columns: a million buffers without a million objects.

A CSV problem is a table: one row a buffer, one interval each, no aliases. Held as
`Buffer` objects it costs ~370 bytes a buffer (the object, its interval tuple, the
`Interval`, four integers; 370 MB at 1,000,000 rows) and seconds to build, and every
stage then reads the fields back one attribute at a time. `BufferColumns` keeps the
table as NumPy columns and the ids as one tuple of strings (~110 bytes a buffer).

1. `BufferColumns` is a read-only `Sequence[Buffer]`: `Problem(BufferColumns(...))` is a
   `Problem` like any other, and code that iterates or indexes `problem.buffers` gets
   `Buffer` objects, made on demand (iterating once keeps them, so a second pass is
   free).
2. Stages that can work on the columns (`lower_bound`, `greedy`, `validate`, `write_csv`,
   `naive_bytes`) ask `columns_of(problem)`: the columns of an alias-free problem whose
   buffers have one interval each, taken as they are from a `BufferColumns` or gathered
   once from `Buffer` objects; None otherwise, and they take their general path.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import overload

import numpy as np

from optplan.problem.buffers import Buffer, Interval

_LIMIT = 2**62  # column values below this leave room for sums in int64


class BufferColumns(Sequence["Buffer"]):
    """Buffers with one interval `[start, end)` each; `pin` is -1 where a buffer is not
    pinned. The columns are int64 and read-only; the caller has checked them (sizes and
    pins >= 0, alignments >= 1, `end > start`, ids unique and non-empty)."""

    __slots__ = ("_built", "alignment", "end", "ids", "pin", "size", "start")

    def __init__(
        self,
        ids: tuple[str, ...],
        start: np.ndarray,
        end: np.ndarray,
        size: np.ndarray,
        alignment: np.ndarray,
        pin: np.ndarray,
    ) -> None:
        count = len(ids)
        for column in (start, end, size, alignment, pin):
            if column.shape != (count,) or column.dtype != np.int64:
                raise ValueError(f"a column of {count} buffers must be int64 of that length")
            column.flags.writeable = False
        self.ids = ids
        self.start, self.end, self.size = start, end, size
        self.alignment, self.pin = alignment, pin
        self._built: tuple[Buffer, ...] | None = None

    def __len__(self) -> int:
        return len(self.ids)

    @overload
    def __getitem__(self, index: int) -> Buffer: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[Buffer, ...]: ...

    def __getitem__(self, index: int | slice) -> Buffer | tuple[Buffer, ...]:
        if isinstance(index, slice):
            return self.buffers()[index]
        if self._built is not None:
            return self._built[index]
        position = range(len(self.ids))[index]  # IndexError, and negative indices, as a tuple
        return self._buffer(position)

    def __iter__(self) -> Iterator[Buffer]:
        return iter(self.buffers())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other))

    def __hash__(self) -> int:
        return hash(self.buffers())

    def __repr__(self) -> str:
        return f"BufferColumns({len(self)} buffers)"

    def buffers(self) -> tuple[Buffer, ...]:
        """Every buffer as a `Buffer`, made once."""
        if self._built is None:
            self._built = tuple(self._buffer(i) for i in range(len(self.ids)))
        return self._built

    def _buffer(self, position: int) -> Buffer:
        pin = int(self.pin[position])
        return Buffer(
            self.ids[position],
            int(self.size[position]),
            (Interval(int(self.start[position]), int(self.end[position])),),
            int(self.alignment[position]),
            None if pin < 0 else pin,
        )

    @property
    def pinned(self) -> bool:
        return bool((self.pin >= 0).any())

    def naive_bytes(self) -> int:
        """Every buffer end to end in order, each lifted to its alignment."""
        if not (self.alignment > 1).any():
            return int(self.size.sum(dtype=object) if self._large() else self.size.sum())
        total = 0
        for size, alignment in zip(self.size.tolist(), self.alignment.tolist()):
            total = -(-total // alignment) * alignment + size
        return total

    def _large(self) -> bool:
        return float(self.size.sum(dtype=np.float64)) >= _LIMIT


def fits_int64(columns: BufferColumns) -> bool:
    """Whether sums of sizes, alignments and pins stay clear of int64 overflow."""
    total = sum(float(c.sum(dtype=np.float64)) for c in (columns.size, columns.alignment))
    highest = float(columns.pin.max(initial=0)) + float(columns.end.max(initial=0))
    return total + highest < _LIMIT
