"""The `.tflite` flatbuffer read by hand: the few tables a memory plan needs, as records.

A flatbuffer is a little-endian byte string: at byte 0 the offset of the root table
(here `Model`), at bytes 4-8 the file identifier `TFL3`. A table starts with a signed
offset back to its vtable; the vtable lists, per field id, where the field sits from the
table's start (0: absent, the default holds). A field that is not a scalar holds an
unsigned offset, forward from where it sits, to a vector (a 32-bit length, then the
elements) or a string (a vector of bytes) or another table. Steps of `parse_model`:

1. check the identifier and the root offset;
2. read `Model` (schema field ids: 0 version, 1 operator_codes, 2 subgraphs, 3
   description, 4 buffers, 6 metadata), each operator code's name, each buffer's bytes,
   the metadata entries;
3. read every subgraph's tensors (0 shape, 1 type, 2 buffer, 3 name, 5 is_variable),
   operators (0 opcode_index, 1 inputs, 2 outputs, 8 intermediates), inputs and outputs.

Every offset is checked against the file: a truncated or foreign file is a `FormatFault`
naming the byte, never an IndexError.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from optplan.frontends.tflite_ops import BUILTIN_OPS

IDENTIFIER = b"TFL3"

# TensorType (schema.fbs) -> NumPy dtype name; None: no NumPy dtype optplan runs.
DTYPES: tuple[str | None, ...] = (
    "float32", "float16", "int32", "uint8", "int64", None, "bool", "int16", "complex64",
    "int8", "float64", "complex128", "uint64", None, None, "uint32", "uint16",
)  # fmt: skip
TYPE_NAMES = (
    "FLOAT32", "FLOAT16", "INT32", "UINT8", "INT64", "STRING", "BOOL", "INT16", "COMPLEX64",
    "INT8", "FLOAT64", "COMPLEX128", "UINT64", "RESOURCE", "VARIANT", "UINT32", "UINT16",
    "INT4", "BFLOAT16", "INT2", "UINT4", "FLOAT8_E4M3FN", "FLOAT8_E5M2",
)  # fmt: skip


class FormatFault(ValueError):
    """The bytes are not a well-formed TensorFlow Lite flatbuffer."""


@dataclass(frozen=True, slots=True)
class Table:
    """One flatbuffer table: the file's bytes and where the table starts."""

    data: bytes
    pos: int

    def _u(self, fmt: str, at: int) -> int:
        size = struct.calcsize(fmt)
        if at < 0 or at + size > len(self.data):
            raise FormatFault(f"offset {at} is past the end of the file ({len(self.data)} bytes)")
        return int(struct.unpack_from(fmt, self.data, at)[0])

    @property
    def vtable(self) -> int:
        return self.pos - self._u("<i", self.pos)

    def field_pos(self, field_id: int) -> int | None:
        """Where field `field_id` sits in the file, or None when it is absent."""
        vtable = self.vtable
        vtable_bytes = self._u("<H", vtable)
        entry = 4 + 2 * field_id
        if entry + 2 > vtable_bytes:
            return None
        relative = self._u("<H", vtable + entry)
        return self.pos + relative if relative else None

    def field_ids(self) -> range:
        """The ids the vtable has a slot for."""
        return range((self._u("<H", self.vtable) - 4) // 2)

    def scalar(self, field_id: int, fmt: str, default: int = 0) -> int:
        at = self.field_pos(field_id)
        return default if at is None else self._u(fmt, at)

    def target(self, field_id: int) -> int | None:
        """Where the offset held by field `field_id` points."""
        at = self.field_pos(field_id)
        return None if at is None else at + self._u("<I", at)

    def vector(self, field_id: int) -> tuple[int, int]:
        """(first element's position, length) of a vector field; (0, 0) when absent."""
        at = self.target(field_id)
        if at is None:
            return 0, 0
        length = self._u("<I", at)
        return at + 4, length

    def ints(self, field_id: int, fmt: str = "<i") -> tuple[int, ...]:
        start, length = self.vector(field_id)
        size = struct.calcsize(fmt)
        if start + size * length > len(self.data):
            raise FormatFault(
                f"a vector of {length} numbers at {start} is past the end of the file"
            )
        return struct.unpack_from(f"<{length}{fmt[1:]}", self.data, start) if length else ()

    def tables(self, field_id: int) -> tuple[Table, ...]:
        start, length = self.vector(field_id)
        if length and start + 4 * length > len(self.data):
            raise FormatFault(f"a vector of {length} tables at {start} is past the end of the file")
        return tuple(
            Table(self.data, start + 4 * i + self._u("<I", start + 4 * i)) for i in range(length)
        )

    def table(self, field_id: int) -> Table | None:
        at = self.target(field_id)
        return None if at is None else Table(self.data, at)

    def raw(self, field_id: int) -> bytes:
        start, length = self.vector(field_id)
        if start + length > len(self.data):
            raise FormatFault(f"{length} bytes at {start} are past the end of the file")
        return self.data[start : start + length]

    def string(self, field_id: int) -> str:
        return self.raw(field_id).decode("utf-8", errors="replace")


@dataclass(frozen=True, slots=True)
class Tensor:
    """One tensor of a subgraph: `dtype` a NumPy name (None: not one optplan runs)."""

    index: int
    name: str
    shape: tuple[int, ...]
    type_code: int
    buffer: int
    is_variable: bool

    @property
    def dtype(self) -> str | None:
        return DTYPES[self.type_code] if 0 <= self.type_code < len(DTYPES) else None

    @property
    def type_name(self) -> str:
        code = self.type_code
        return TYPE_NAMES[code] if 0 <= code < len(TYPE_NAMES) else f"type {code}"


@dataclass(frozen=True, slots=True)
class Operator:
    """One operator: its op name, and tensor indices (-1: an optional input left out)."""

    index: int
    op: str
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    intermediates: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Subgraph:
    name: str
    tensors: tuple[Tensor, ...]
    operators: tuple[Operator, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Model:
    """What a plan needs of a `.tflite` model; `buffers[i]` is buffer i's bytes."""

    version: int
    description: str
    subgraphs: tuple[Subgraph, ...]
    buffers: tuple[bytes, ...]
    metadata: tuple[tuple[str, int], ...]  # (name, buffer index)
    external: bool  # some buffer's bytes live outside the flatbuffer

    def metadata_bytes(self, name: str) -> bytes | None:
        for key, buffer in self.metadata:
            if key == name:
                if not 0 <= buffer < len(self.buffers):
                    raise FormatFault(f"metadata {name!r} names buffer {buffer}, which is absent")
                return self.buffers[buffer]
        return None


def root(data: bytes) -> Table:
    """The Model table, after checking the file's identifier."""
    if len(data) < 8 or data[4:8] != IDENTIFIER:
        raise FormatFault("no TFL3 file identifier at bytes 4-8")
    table = Table(data, struct.unpack_from("<I", data, 0)[0])
    table.vtable  # noqa: B018 - reads the vtable offset, so a wild root fails here
    return table


def parse_model(data: bytes) -> Model:
    """The model in `data` (FormatFault when it is not a well-formed `.tflite`)."""
    model = root(data)
    ops = tuple(_op_name(code) for code in model.tables(1))
    buffers = model.tables(4)
    return Model(
        version=model.scalar(0, "<I"),
        description=model.string(3),
        subgraphs=tuple(_subgraph(s, ops) for s in model.tables(2)),
        buffers=tuple(b.raw(0) for b in buffers),
        metadata=tuple((m.string(0), m.scalar(1, "<I")) for m in model.tables(6)),
        external=any(b.scalar(1, "<Q") > 1 for b in buffers),
    )


def _op_name(code: Table) -> str:
    # Builtin codes above 127 are in field 3; older files have only the byte of field 0.
    builtin = max(code.scalar(0, "<b"), code.scalar(3, "<i"))
    if 0 <= builtin < len(BUILTIN_OPS) and BUILTIN_OPS[builtin] == "CUSTOM":
        return "CUSTOM." + code.string(1)
    return BUILTIN_OPS[builtin] if 0 <= builtin < len(BUILTIN_OPS) else f"BUILTIN_{builtin}"


def _subgraph(table: Table, ops: tuple[str, ...]) -> Subgraph:
    tensors = tuple(
        Tensor(
            index=i,
            name=t.string(3),
            shape=t.ints(0),
            type_code=t.scalar(1, "<b"),
            buffer=t.scalar(2, "<I"),
            is_variable=bool(t.scalar(5, "<B")),
        )
        for i, t in enumerate(table.tables(0))
    )
    operators = []
    for i, op in enumerate(table.tables(3)):
        code = op.scalar(0, "<I")
        if code >= len(ops):
            raise FormatFault(f"operator {i} has opcode index {code}; the model has {len(ops)}")
        operators.append(Operator(i, ops[code], op.ints(1), op.ints(2), op.ints(8)))
    return Subgraph(table.string(4), tensors, tuple(operators), table.ints(1), table.ints(2))
