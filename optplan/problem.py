"""The allocation problem: the seam between programs and planners.

A `Problem` is a set of buffers, each with a size, an alignment and the half-open
intervals of program points during which it is live, plus alias equations
`offset(view) == offset(base) + delta`. Planners see only this; they never import the IR.

    point:    0   1   2   3   4
    a         [=======)              live [0, 2), never shares bytes with b
    b             [===========)      live [1, 4)
    c                     [=======)  live [3, 5): may reuse a's bytes

`lower_bound(problem)` is the most bytes live at any one point (an alias class counted
once); no arena can be smaller. `read_csv` / `write_csv` speak MiniMalloc's format
(columns id, lower, upper, size, and optional alignment and offset).
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field
from pathlib import Path

from optplan.errors import InputError


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


@dataclass(frozen=True, slots=True)
class Problem:
    """Buffers to place in one arena, aliases between them, and an optional capacity."""

    buffers: tuple[Buffer, ...]
    aliases: tuple[Alias, ...] = ()
    capacity: int | None = None
    _index: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        index: dict[str, int] = {}
        for position, buffer in enumerate(self.buffers):
            if buffer.id in index:
                raise ValueError(f"buffer {buffer.id!r} appears twice")
            index[buffer.id] = position
            _check_buffer(buffer)
        for alias in self.aliases:
            for name in (alias.base, alias.view):
                if name not in index:
                    raise ValueError(f"alias names unknown buffer {name!r}")
            if alias.delta < 0:
                raise ValueError(f"alias of {alias.view!r} has negative delta {alias.delta}")
        if self.capacity is not None and self.capacity < 0:
            raise ValueError(f"capacity {self.capacity} is negative")
        object.__setattr__(self, "_index", index)

    def buffer(self, buffer_id: str) -> Buffer:
        return self.buffers[self._index[buffer_id]]

    @property
    def naive_bytes(self) -> int:
        """The arena with no reuse at all: every alias class laid end to end, aligned."""
        total = 0
        for cls in alias_classes(self):
            total = _align_up(total, cls.alignment) + cls.size
        return total


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


def _align_up(value: int, alignment: int) -> int:
    return -(-value // alignment) * alignment


# ---------------------------------------------------------------------------- alias classes


@dataclass(frozen=True, slots=True)
class AliasClass:
    """Buffers tied by aliases, packed as one rectangle.

    `members` maps each buffer id to its delta from the class's root; `size` is the height
    of the rectangle (max of delta + size), `live` the union of the members' lifetimes.
    The class is one allocation: the whole rectangle is reserved while any member is live.
    `pins` are the distinct class offsets that pinned members imply (more than one: the
    pins contradict each other and no plan exists).
    """

    root: str
    members: tuple[tuple[str, int], ...]
    size: int
    live: tuple[Interval, ...]
    alignment: int
    pins: tuple[int, ...]

    @property
    def offset(self) -> int | None:
        """The class offset its pins fix, when they agree."""
        return self.pins[0] if len(self.pins) == 1 else None


def alias_classes(problem: Problem) -> list[AliasClass]:
    """Group buffers into alias classes, in the order of their first buffer.

    Deltas are measured from the class's lowest member so that all are >= 0. Raises
    ValueError when the aliases contradict each other (a cycle with unequal deltas).
    """
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
    classes = []
    for members in groups.values():
        low = min(delta for _, delta in members)
        shifted = tuple((name, delta - low) for name, delta in members)
        buffers = [problem.buffer(name) for name, _ in shifted]
        alignment = 1
        pins: set[int] = set()
        for buffer, (_, delta) in zip(buffers, shifted):
            alignment = math.lcm(alignment, buffer.alignment)
            if buffer.offset is not None:
                pins.add(buffer.offset - delta)
        classes.append(
            AliasClass(
                root=shifted[0][0],
                members=shifted,
                size=max(b.size + d for b, (_, d) in zip(buffers, shifted)),
                live=merge_intervals([iv for b in buffers for iv in b.live]),
                alignment=alignment,
                pins=tuple(sorted(pins)),
            )
        )
    return classes


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
    events: list[tuple[int, int]] = []
    for cls in alias_classes(problem):
        for iv in cls.live:
            events.append((iv.start, cls.size))
            events.append((iv.end, -cls.size))
    events.sort(key=lambda event: (event[0], event[1]))
    profile: list[tuple[int, int]] = []
    live = 0
    for point, change in events:
        live += change
        if profile and profile[-1][0] == point:
            profile[-1] = (point, live)
        else:
            profile.append((point, live))
    return profile


def lower_bound(problem: Problem) -> int:
    """The most bytes live at any one point; no valid arena is smaller."""
    return max((live for _, live in live_profile(problem)), default=0)


# ---------------------------------------------------------------------------- CSV


_REQUIRED = ("id", "lower", "upper", "size")
_SYNONYMS = {"buffer": "id", "buffer_id": "id", "start": "lower", "begin": "lower"}


def read_csv(path: str | Path, *, text: str | None = None) -> Problem:
    """Read a MiniMalloc CSV (`id,lower,upper,size[,alignment][,offset]`).

    The header may use MiniMalloc's older names (`buffer`, `start`, and an inclusive
    `end`). Any fault raises InputError naming the file, the line and the column.
    """
    name = str(path)
    if text is None:
        try:
            text = Path(path).read_text()
        except OSError as error:
            raise InputError(f"cannot read: {error.strerror}", file=name) from None
    rows = list(csv.reader(io.StringIO(text)))
    if not rows:
        raise InputError("empty file; expected a header 'id,lower,upper,size'", file=name, line=1)
    header = [_SYNONYMS.get(h.strip().lower(), h.strip().lower()) for h in rows[0]]
    inclusive_end = "end" in header and "upper" not in header
    header = ["upper" if h == "end" and inclusive_end else h for h in header]
    for column in _REQUIRED:
        if column not in header:
            raise InputError(
                f"header lacks column {column!r} (found {','.join(rows[0])})", file=name, line=1
            )
    buffers: list[Buffer] = []
    seen: dict[str, int] = {}
    for line_no, row in enumerate(rows[1:], start=2):
        if not row or all(not cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise InputError(
                f"expected {len(header)} fields, found {len(row)}", file=name, line=line_no
            )
        cells = {h: cell.strip() for h, cell in zip(header, row)}
        buffer_id = cells["id"]
        if buffer_id in seen:
            raise InputError(
                f"buffer {buffer_id!r} already defined on line {seen[buffer_id]}",
                file=name,
                line=line_no,
            )
        seen[buffer_id] = line_no

        row_at = _Row(cells, header, buffer_id, name, line_no)
        lower, upper, size = row_at.number("lower"), row_at.number("upper"), row_at.number("size")
        assert lower is not None and upper is not None and size is not None
        if inclusive_end:
            upper += 1
        alignment = row_at.number("alignment", 1)
        offset = row_at.number("offset")
        assert alignment is not None
        fault = None
        if size < 0:
            fault = ("size", f"negative size {size}")
        elif upper <= lower:
            fault = ("upper", f"empty lifetime [{lower}, {upper})")
        elif alignment < 1:
            fault = ("alignment", f"alignment {alignment} < 1")
        elif offset is not None and offset < 0:
            fault = ("offset", f"negative offset {offset}")
        if fault:
            column, what = fault
            raise InputError(
                f"buffer {buffer_id!r} has {what}",
                file=name,
                line=line_no,
                col=header.index(column) + 1,
            )
        buffers.append(Buffer(buffer_id, size, (Interval(lower, upper),), alignment, offset))
    return Problem(tuple(buffers))


@dataclass(frozen=True, slots=True)
class _Row:
    """One row of a CSV file, for reading its integer cells with errors that point at them."""

    cells: dict[str, str]
    header: list[str]
    buffer_id: str
    file: str
    line: int

    def number(self, column: str, default: int | None = None) -> int | None:
        """The integer in `column`, `default` where the cell is empty."""
        cell = self.cells.get(column, "")
        if cell == "":
            return default
        try:
            return int(cell)
        except ValueError:
            raise InputError(
                f"{column} {cell!r} of buffer {self.buffer_id!r} is not an integer",
                file=self.file,
                line=self.line,
                col=self.header.index(column) + 1,
            ) from None


def write_csv(problem: Problem, offsets: dict[str, int] | None = None) -> str:
    """The problem as MiniMalloc CSV; with `offsets`, an `offset` column holds them.

    A buffer live over several intervals is written as one row spanning them all (the
    format has no gaps), which is safe: it only ever forbids more sharing.
    """
    has_alignment = any(b.alignment != 1 for b in problem.buffers)
    columns = ["id", "lower", "upper", "size"] + (["alignment"] if has_alignment else [])
    if offsets is not None or any(b.offset is not None for b in problem.buffers):
        columns.append("offset")
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for b in problem.buffers:
        row: list[object] = [b.id, b.start, b.end, b.size]
        if has_alignment:
            row.append(b.alignment)
        if "offset" in columns:
            offset = offsets.get(b.id, b.offset) if offsets is not None else b.offset
            row.append("" if offset is None else offset)
        writer.writerow(row)
    return out.getvalue()
