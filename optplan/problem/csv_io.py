"""MiniMalloc's CSV format: `id,lower,upper,size[,alignment][,offset]`, read and written.

For problems of several memories three optional columns hold lists, their items apart by
spaces: `writes` and `reads`, the points where a buffer is written and read (one read per
consumer; an empty cell: written at `lower`, read once at `upper - 1`), and `memories`,
the memories the buffer may use (empty: any).

Reading, in steps:
1. The bytes are decoded as UTF-8 (a leading byte-order mark is dropped); a byte that is
   not UTF-8 is an error at its line and column.
2. The header names the columns; MiniMalloc's older names (`buffer`, `start`, and an
   inclusive `end`) are accepted.
3. The fast reader (`_read_columns`) splits the whole body at once, converts each
   integer column with one NumPy call and checks sizes, lifetimes, alignments, offsets
   and duplicate ids as arrays: 1,000,000 rows in about a second, where reading row by
   row took 24 s.
4. Anything the fast reader is unsure of (quotes, a wrong number of fields, a cell that
   is not a plain ASCII integer, any fault at all) sends the file to `read_rows`, the
   row-by-row reader, which either reads it or raises the one-line error
   `file:line:col: what` for the first faulty cell. So every error comes from one place,
   and a good file gives the same Problem either way (`tests/test_csv.py`).

Integers are ASCII decimal digits with an optional sign: Python's `int` also takes other
scripts' digits (`١٢`) and `1_000`, which no CSV writer means as a number.
"""

from __future__ import annotations

import csv
import gc
import io
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from optplan.errors import InputError
from optplan.problem.buffers import Buffer, Interval
from optplan.problem.columns import BufferColumns
from optplan.problem.core import Problem, columns_of
from optplan.problem.memory import MAIN, Memory

_REQUIRED = ("id", "lower", "upper", "size")
_SYNONYMS = {"buffer": "id", "buffer_id": "id", "start": "lower", "begin": "lower"}
_INTEGER = re.compile(r"[+-]?[0-9]+")
_BOM = "\ufeff"
_NUMBERS = ("lower", "upper", "size", "alignment", "offset")
_LISTS = ("writes", "reads", "memories")
_CHUNK_ROWS = 65536


def read_csv(
    path: str | Path,
    *,
    text: str | None = None,
    alignment: int = 1,
    memories: tuple[Memory, ...] | None = None,
) -> Problem:
    """Read a MiniMalloc CSV; any fault raises InputError naming the file, the line and
    the column. Every buffer's alignment is a multiple of `alignment` (the lcm with its
    own column): building each buffer twice cost 40 s of loading 1,000,000 rows. The
    problem's memories are `memories` (None: one unbounded memory)."""
    name = str(path)
    if text is None:
        text = _decode(name, _read_bytes(name, path))
    text = text.removeprefix(_BOM)
    problem = _read_columns(text, alignment)
    if problem is None:
        return read_rows(name, text, alignment, memories)
    return problem if memories is None else replace(problem, memories=memories)


def _read_bytes(name: str, path: str | Path) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as error:
        raise InputError(f"cannot read: {error.strerror}", file=name) from None


def _decode(name: str, data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line_start = data.rfind(b"\n", 0, error.start) + 1
        raise InputError(
            f"not UTF-8: byte 0x{data[error.start]:02x}; save the file as UTF-8",
            file=name,
            line=data.count(b"\n", 0, error.start) + 1,
            col=error.start - line_start + 1,
        ) from None


def _header(name: str, first: list[str]) -> tuple[list[str], bool]:
    """Column names (synonyms resolved) and whether `end` is inclusive."""
    header = [_SYNONYMS.get(h.strip().lower(), h.strip().lower()) for h in first]
    inclusive_end = "end" in header and "upper" not in header
    header = ["upper" if h == "end" and inclusive_end else h for h in header]
    for column in _REQUIRED:
        if column not in header:
            raise InputError(
                f"header lacks column {column!r} (found {','.join(first)})", file=name, line=1
            )
    return header, inclusive_end


# ---------------------------------------------------------------------------- fast reader


def _read_columns(text: str, alignment: int) -> Problem | None:
    """The problem, read column by column; None if anything needs `read_rows`' care."""
    if '"' in text:
        return None
    text = text.replace("\r\n", "\n")
    if "\r" in text:
        return None
    lines = text.split("\n")
    if not lines:
        return None
    try:
        header, inclusive_end = _header("", lines[0].split(","))
    except InputError:
        return None
    if any(column in header for column in _LISTS):
        return None  # lists in cells: the row reader's
    width = len(header)
    body = [line for line in lines[1:] if line.strip(" \t,")]
    del lines
    if not body:
        return None
    ids: list[str] = []
    chunks: dict[str, list[np.ndarray]] = {c: [] for c in _NUMBERS if c in header}
    for first in range(0, len(body), _CHUNK_ROWS):
        # A string per cell: made a chunk at a time, so that they never all exist at once.
        rows = body[first : first + _CHUNK_ROWS]
        cells = ",".join(rows).split(",")
        if len(cells) != width * len(rows):
            return None
        ids.extend(cell.strip() for cell in cells[header.index("id") :: width])
        for column, parts in chunks.items():
            values = _integers(cells[header.index(column) :: width])
            if values is None:
                return None
            parts.append(values)
    del body  # its line strings, 80 MB at 1M rows, are not needed by the buffers
    if "" in ids or len(set(ids)) != len(ids):
        return None
    number = {column: np.concatenate(parts) for column, parts in chunks.items()}
    return _checked(ids, number, inclusive_end, alignment)


def _integers(column: list[str]) -> np.ndarray | None:
    """The column as int64; None if some cell is empty, not a plain ASCII integer, or too
    large for int64 (NumPy's conversion goes through `int`, so `_` is refused first)."""
    joined = "".join(column)
    if not joined.isascii() or "_" in joined:
        return None
    try:
        return np.array(column, dtype=np.int64)
    except (ValueError, OverflowError):
        return None


def _checked(
    ids: list[str], number: Mapping[str, np.ndarray | None], inclusive_end: bool, least: int
) -> Problem | None:
    lower, upper, size = number["lower"], number["upper"], number["size"]
    assert lower is not None and upper is not None and size is not None
    upper = upper + 1 if inclusive_end else upper
    alignment = number.get("alignment")
    offset = number.get("offset")
    if (size < 0).any() or (upper <= lower).any():
        return None
    if alignment is not None and (alignment < 1).any():
        return None
    if offset is not None and (offset < 0).any():
        return None
    if float(alignment.max(initial=1) if alignment is not None else 1) * least < 2.0**62:
        aligns = (
            np.full(len(ids), least, np.int64) if alignment is None else np.lcm(alignment, least)
        )
        if offset is None:
            offset = np.full(len(ids), -1, np.int64)
        # Columns, no object per buffer (`optplan.problem.columns`): 7 s -> 1 s at 1,000,000 rows.
        return Problem(BufferColumns(tuple(ids), lower, upper, size, aligns, offset))
    assert alignment is not None
    return _objects(
        ids, lower, upper, size, [math.lcm(a, least) for a in alignment.tolist()], offset
    )


def _objects(
    ids: list[str],
    lower: np.ndarray,
    upper: np.ndarray,
    size: np.ndarray,
    aligns: list[int],
    offset: np.ndarray | None,
) -> Problem:
    """The problem as `Buffer` objects, for alignments too large for int64 columns."""
    pins = offset.tolist() if offset is not None else [None] * len(ids)
    # A million new objects, none in a cycle: the cyclic collector rescanning them all as
    # they are made took 8 of the 15 s of reading 1,000,000 rows.
    collecting = gc.isenabled()
    gc.disable()
    try:
        buffers = tuple(
            Buffer(buffer_id, buffer_size, (Interval(start, end),), align, pin)
            for buffer_id, start, end, buffer_size, align, pin in zip(
                ids, lower.tolist(), upper.tolist(), size.tolist(), aligns, pins
            )
        )
        return Problem(buffers)
    finally:
        if collecting:
            gc.enable()


# ---------------------------------------------------------------------------- row reader


def read_rows(
    name: str, text: str, alignment: int = 1, memories: tuple[Memory, ...] | None = None
) -> Problem:
    """The row-by-row reader: the reference, and the one source of every error."""
    rows = list(csv.reader(io.StringIO(text.removeprefix(_BOM))))
    if not rows:
        raise InputError("empty file; expected a header 'id,lower,upper,size'", file=name, line=1)
    header, inclusive_end = _header(name, rows[0])
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
        if not buffer_id:
            raise InputError("empty id", file=name, line=line_no, col=header.index("id") + 1)
        if buffer_id in seen:
            raise InputError(
                f"buffer {buffer_id!r} already defined on line {seen[buffer_id]}",
                file=name,
                line=line_no,
            )
        seen[buffer_id] = line_no
        reader = _Row(cells, header, buffer_id, name, line_no, _names(memories))
        buffer = reader.buffer(inclusive_end)
        if alignment != 1:
            buffer = replace(buffer, alignment=math.lcm(buffer.alignment, alignment))
        buffers.append(buffer)
    try:
        return Problem(tuple(buffers), memories=(MAIN,) if memories is None else memories)
    except ValueError as error:  # the lists' faults are the rows'; the memories' the caller's
        raise InputError(str(error), file=name) from None


def _names(memories: tuple[Memory, ...] | None) -> tuple[str, ...]:
    return tuple(m.name for m in memories) if memories is not None else (MAIN.name,)


@dataclass(frozen=True, slots=True)
class _Row:
    """One row of a CSV file, for reading its integer cells with errors that point at them."""

    cells: dict[str, str]
    header: list[str]
    buffer_id: str
    file: str
    line: int
    memories: tuple[str, ...] = (MAIN.name,)

    def buffer(self, inclusive_end: bool) -> Buffer:
        lower, upper, size = self.required("lower"), self.required("upper"), self.required("size")
        upper += 1 if inclusive_end else 0
        alignment = self.number("alignment", 1)
        offset = self.number("offset")
        assert alignment is not None
        if size < 0:
            self.fault("size", f"negative size {size}")
        elif upper <= lower:
            self.fault("upper", f"empty lifetime [{lower}, {upper})")
        elif alignment < 1:
            self.fault("alignment", f"alignment {alignment} < 1")
        elif offset is not None and offset < 0:
            self.fault("offset", f"negative offset {offset}")
        buffer = Buffer(self.buffer_id, size, (Interval(lower, upper),), alignment, offset)
        return self.with_lists(buffer)

    def with_lists(self, buffer: Buffer) -> Buffer:
        """The buffer with its `writes`, `reads` and `memories` cells, where given."""
        writes, reads = self.points("writes", buffer), self.points("reads", buffer)
        memories = tuple(self.cells.get("memories", "").split())
        for memory in memories:
            if memory not in self.memories:
                known = ", ".join(self.memories)
                self.fault(
                    "memories",
                    None,
                    f"buffer {self.buffer_id!r} names memory {memory!r}; the memories are {known} (--memory)",
                )
        return replace(buffer, writes=writes, reads=reads, memories=memories)

    def points(self, column: str, buffer: Buffer) -> tuple[int, ...] | None:
        cell = self.cells.get(column, "")
        if not cell:
            return None
        items = cell.split()
        for item in items:
            if not _INTEGER.fullmatch(item):
                self.fault(
                    column, None, f"{column} of buffer {self.buffer_id!r}: {item!r} is not a point"
                )
        at = tuple(int(item) for item in items)
        for point in at:
            if not buffer.start <= point < buffer.end:
                message = f"{column} of buffer {self.buffer_id!r}: point {point} is outside [{buffer.start}, {buffer.end})"
                self.fault(column, None, message)
        return at

    def required(self, column: str) -> int:
        value = self.number(column)
        if value is None:
            self.fault(column, None, f"{column} of buffer {self.buffer_id!r} is empty")
        assert value is not None
        return value

    def number(self, column: str, default: int | None = None) -> int | None:
        """The integer in `column`, `default` where the cell is empty."""
        cell = self.cells.get(column, "")
        if cell == "":
            return default
        if not _INTEGER.fullmatch(cell):
            self.fault(
                column, None, f"{column} {cell!r} of buffer {self.buffer_id!r} is not an integer"
            )
        return int(cell)

    def fault(self, column: str, what: str | None, message: str = "") -> None:
        raise InputError(
            message or f"buffer {self.buffer_id!r} has {what}",
            file=self.file,
            line=self.line,
            col=self.header.index(column) + 1,
        )


# ---------------------------------------------------------------------------- writing


def write_csv(problem: Problem, offsets: dict[str, int] | None = None) -> str:
    """The problem as MiniMalloc CSV; with `offsets`, an `offset` column holds them.

    A buffer live over several intervals is written as one row spanning them all (the
    format has no gaps), which is safe: it only ever forbids more sharing.
    """
    stored = columns_of(problem)
    if stored is not None and isinstance(problem.buffers, BufferColumns):
        return _write_columns(stored, offsets)
    has_alignment = any(b.alignment != 1 for b in problem.buffers)
    columns = ["id", "lower", "upper", "size"] + (["alignment"] if has_alignment else [])
    if offsets is not None or any(b.offset is not None for b in problem.buffers):
        columns.append("offset")
    lists = [c for c in _LISTS if any(_list_cell(b, c) for b in problem.buffers)]
    columns.extend(lists)
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
        row.extend(_list_cell(b, column) for column in lists)
        writer.writerow(row)
    return out.getvalue()


def _list_cell(buffer: Buffer, column: str) -> str:
    """A buffer's `writes`, `reads` or `memories` as a cell ("" when not given)."""
    items = getattr(buffer, column)
    return "" if items is None else " ".join(str(item) for item in items)


def _write_columns(columns: BufferColumns, offsets: dict[str, int] | None) -> str:
    """`write_csv` of buffers held as columns: the same text, one join per row and no
    `Buffer` objects (23 s -> 1 s at 1,000,000 buffers), made _CHUNK_ROWS rows at a time
    so that a string per cell never exists for the whole table at once."""
    has_alignment = bool((columns.alignment != 1).any())
    header = ["id", "lower", "upper", "size"] + (["alignment"] if has_alignment else [])
    numbers = [columns.start, columns.end, columns.size] + (
        [columns.alignment] if has_alignment else []
    )
    if offsets is not None or columns.pinned:
        header.append("offset")
    given = offsets if offsets is not None else {}
    quoted = any(_needs_quotes(name) for name in columns.ids)
    chunks = [",".join(header) + "\n"]
    for first in range(0, len(columns), _CHUNK_ROWS):
        rows = slice(first, first + _CHUNK_ROWS)
        ids = columns.ids[rows]
        cells = [list(ids), *(list(map(str, c[rows].tolist())) for c in numbers)]
        if "offset" in header:
            pins = columns.pin[rows].tolist()
            cells.append(
                [str(given.get(name, pin if pin >= 0 else "")) for name, pin in zip(ids, pins)]
            )
        chunks.append(
            _write_rows(cells) if quoted else "".join(",".join(row) + "\n" for row in zip(*cells))
        )
    return "".join(chunks)


def _needs_quotes(name: str) -> bool:
    return any(c in name for c in ',"\r\n') or name != name.strip()


def _write_rows(cells: list[list[str]]) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(zip(*cells))
    return out.getvalue()
