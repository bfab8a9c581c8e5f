"""optplan inside TensorFlow Lite Micro: a plan written into a `.tflite` as its offline plan.

TFLite Micro reads an offline plan from the model's metadata entry named
`OfflineMemoryAllocation`: a buffer of little-endian int32 words `[version, subgraphs, n,
offset_0, ..., offset_n-1]`, n the tensors of all subgraphs, each offset from the start
of the arena's planned section (its head), -1 for a tensor its own planner places. It
rounds every size up to 16 bytes, and it does not check an offline plan: a wrong one runs
and gives wrong outputs. So `planned_model`:

1. maps the plan to one offset per tensor (`offline_offsets`): a planned tensor's buffer
   offset; -1 for constants and variables, which TFLite Micro keeps elsewhere;
2. refuses a plan that `validate` faults, or an offset that is not a multiple of 16;
3. writes the words into the model (`with_offline_plan`) without touching a byte of it:

       before:  [root][TFL3][ ...the model, Model table somewhere inside... ]
       after:   [root][TFL3][ new Model | vectors | plan ][ ...the same bytes... ]

   A flatbuffer's offsets are relative and point forward, so a block inserted after the
   8-byte header, 16 bytes long times k, moves the old bytes without breaking one offset
   or alignment. The block holds a new Model table whose fields point at the old ones,
   and the two vectors that grow: buffers (one more, the plan's words, 16-byte aligned)
   and metadata (one more entry; an old offline plan's entry is dropped). The old Model
   table stays, unread.

`read_offline_plan` reads such a plan back, and `check_offline_plan` judges it as
`optplan check` judges TVM's plans. Running the models in TFLite Micro is
`optplan.integrations.tflm_run`.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from optplan.analysis.liveness import build_memory
from optplan.analysis.memory import Placement
from optplan.analysis.types import infer_types
from optplan.frontends import Loaded
from optplan.frontends.registry import rounded_sizes
from optplan.frontends.tflite import (
    OFFLINE_PLAN,
    main_subgraph,
    parse,
    read_bytes,
    read_tflite,
    tensor_names,
)
from optplan.frontends.tflite_format import FormatFault, Model, Table, root
from optplan.integrations.tflm_run import Comparison, compare_in_tflm
from optplan.problem import Problem, lower_bound
from optplan.problem.plan import Plan, Status, validate

ALIGNMENT = 16  # TFLite Micro's kBufferAlignment: sizes rounded up to it, offsets on it
PLAN_VERSION = 1
_MODEL_FIELDS = 10  # Model's fields in TFLite's schema: version ... external_buffers
_BUFFERS, _METADATA = 4, 6


class InvalidPlan(ValueError):
    """A plan that must not reach TFLite Micro (which would run it and compute garbage)."""


# ---------------------------------------------------------------------------- plan -> words


def offline_offsets(loaded: Loaded, plan: Plan, names: Sequence[str]) -> tuple[int, ...]:
    """One offset per tensor (`names`, as `tensor_names` gives them) of the model `loaded`
    was read from; -1 for a tensor not in the arena."""
    if loaded.memory is None:
        raise ValueError(f"{loaded.path}: not a program")
    offsets = []
    for name in names:
        place = loaded.memory.placements.get(name)
        offsets.append(plan.offsets[place.buffer] if isinstance(place, Placement) else -1)
    return tuple(offsets)


def planned_model(loaded: Loaded, plan: Plan) -> bytes:
    """The `.tflite` that `loaded` was read from, carrying `plan` as its offline plan.

    Raises InvalidPlan for a plan `validate` faults or an offset off TFLite Micro's 16."""
    faults = validate(loaded.problem, plan)
    if faults:
        raise InvalidPlan(f"{loaded.path}: the plan is invalid: {faults[0]}")
    data = read_bytes(loaded.path)
    names = tensor_names(main_subgraph(parse(data, loaded.path), loaded.path))
    offsets = offline_offsets(loaded, plan, names)
    for name, offset in zip(names, offsets):
        if offset != -1 and offset % ALIGNMENT:
            raise InvalidPlan(
                f"{loaded.path}: tensor {name!r} at offset {offset}, not a multiple of "
                f"{ALIGNMENT} (TFLite Micro's alignment; plan with --alignment {ALIGNMENT})"
            )
    return with_offline_plan(data, offsets)


def plan_words(offsets: Sequence[int], subgraphs: int = 1) -> bytes:
    """The metadata buffer's bytes: version, subgraphs, count, then the offsets."""
    return struct.pack(f"<3i{len(offsets)}i", PLAN_VERSION, subgraphs, len(offsets), *offsets)


def read_offline_plan(model: Model) -> tuple[int, ...] | None:
    """The offsets of the model's offline plan, None without one; FormatFault when its
    words do not fit the model (TFLite Micro refuses a count other than its tensors')."""
    words = model.metadata_bytes(OFFLINE_PLAN)
    if words is None:
        return None
    if len(words) < 12 or len(words) % 4:
        raise FormatFault(f"{OFFLINE_PLAN} has {len(words)} bytes; expected 12 + 4 per tensor")
    _, _, count = struct.unpack_from("<3i", words)
    tensors = sum(len(g.tensors) for g in model.subgraphs)
    if count != tensors or len(words) != 12 + 4 * count:
        raise FormatFault(
            f"{OFFLINE_PLAN} gives {count} offsets in {len(words) - 12} bytes; "
            f"the model has {tensors} tensors"
        )
    return struct.unpack_from(f"<{count}i", words, 12)


# ---------------------------------------------------------------------------- the writer


@dataclass(slots=True)
class _Block:
    """The bytes inserted after the header (a builder, local to `with_offline_plan`), and
    the offsets in them to fill in once the block's length is known: `to_old[at]` points
    at a position of the old file, `to_label[at]` at a label of the block."""

    out: bytearray = field(default_factory=bytearray)
    labels: dict[str, int] = field(default_factory=dict)
    to_old: dict[int, int] = field(default_factory=dict)
    to_label: dict[int, str] = field(default_factory=dict)

    def here(self) -> int:
        return 8 + len(self.out)

    def align(self, alignment: int, extra: int = 0) -> None:
        while (self.here() + extra) % alignment:
            self.out.append(0)

    def label(self, name: str) -> None:
        self.labels[name] = self.here()

    def pack(self, fmt: str, *values: int) -> None:
        self.out += struct.pack(fmt, *values)

    def ref(self, target: str | int) -> None:
        """An offset to fill in: to a position of the old file (int) or a label (str)."""
        if isinstance(target, int):
            self.to_old[self.here()] = target
        else:
            self.to_label[self.here()] = target
        self.out += b"\0\0\0\0"

    def table(self, name: str, slots: Sequence[int], table_bytes: int) -> None:
        """A vtable, then the start of table `name` (its offset back to the vtable)."""
        self.align(2)
        vtable = self.here()
        self.pack(f"<{2 + len(slots)}H", 4 + 2 * len(slots), table_bytes, *slots)
        self.align(4)
        self.label(name)
        self.pack("<i", self.here() - vtable)


def with_offline_plan(data: bytes, offsets: Sequence[int]) -> bytes:
    """`data` with `offsets` as its offline plan, every byte of it kept (see the module)."""
    model = root(data)
    present = {i: model.field_pos(i) is not None for i in model.field_ids()}
    unknown = [i for i, here in present.items() if here and i >= _MODEL_FIELDS]
    if unknown:
        raise FormatFault(f"the Model table has field {unknown[0]}, unknown to optplan")
    block = _Block()
    _model_table(block, model, present)
    buffers = [t.pos for t in model.tables(_BUFFERS)]
    metadata = [t.pos for t in model.tables(_METADATA) if t.string(0) != OFFLINE_PLAN]
    _vector(block, "buffers", [*buffers, "plan_buffer"])
    _vector(block, "metadata", [*metadata, "plan_entry"])
    block.table("plan_buffer", [4], 8)
    block.ref("plan_words")
    block.align(16, extra=4)  # TFLite Micro reads the words in place: 16-byte aligned data
    block.label("plan_words")
    words = plan_words(offsets, len(model.tables(2)))
    block.pack("<I", len(words))
    block.out += words
    block.table("plan_entry", [4, 8], 12)
    block.ref("plan_name")
    block.pack("<I", len(buffers))
    block.label("plan_name")
    name = OFFLINE_PLAN.encode()
    block.pack("<I", len(name))
    block.out += name + b"\0"
    block.align(16, extra=8)  # a block of 16 x k bytes keeps the old bytes' alignment
    shift = len(block.out)
    targets = {at: old + shift for at, old in block.to_old.items()}
    targets.update({at: block.labels[label] for at, label in block.to_label.items()})
    for at, target in targets.items():
        struct.pack_into("<I", block.out, at - 8, target - at)
    return struct.pack("<I", block.labels["model"]) + data[4:8] + bytes(block.out) + data[8:]


def _model_table(block: _Block, model: Table, present: dict[int, bool]) -> None:
    """A Model table with every old field: the version, and offsets to the old vectors
    except buffers and metadata, which point at the new ones."""
    fields = [i for i in range(_MODEL_FIELDS) if present.get(i) or i in (_BUFFERS, _METADATA)]
    slots = [0] * _MODEL_FIELDS
    for k, i in enumerate(fields):
        slots[i] = 4 + 4 * k
    block.table("model", slots, 4 + 4 * len(fields))
    for i in fields:
        if i == 0:
            block.pack("<I", model.scalar(0, "<I"))
        elif i in (_BUFFERS, _METADATA):
            block.ref("buffers" if i == _BUFFERS else "metadata")
        else:
            target = model.target(i)
            assert target is not None
            block.ref(target)


def _vector(block: _Block, name: str, items: Sequence[int | str]) -> None:
    """A vector of tables: old ones by position, new ones by label."""
    block.align(4)
    block.label(name)
    block.pack("<I", len(items))
    for item in items:
        block.ref(item)


# ---------------------------------------------------------------------------- checking


@dataclass(frozen=True, slots=True)
class OfflineCheck:
    """An offline plan judged: the tensors it places, those left to TFLite Micro, the
    head it needs (the furthest byte it gives), the lower bound, and what is wrong."""

    path: str
    placed: int
    left: int
    head_bytes: int
    lower_bound_bytes: int
    violations: tuple[str, ...] = ()

    @property
    def valid(self) -> bool:
        return not self.violations


def load_unplanned(path: str) -> Loaded:
    """The model at `path` read as the `.tflite` frontend reads it, an offline plan it
    carries ignored: the Problem its plan must solve."""
    model = read_tflite(path, offline_plan_ok=True)
    program = infer_types(model.program)
    memory = build_memory(program, plan_outputs=True, alignment=ALIGNMENT)
    memory = replace(memory, problem=rounded_sizes(memory.problem, ALIGNMENT))
    return Loaded(path, memory.problem, program, memory, model.weights)


def check_offline_plan(path: str) -> OfflineCheck | None:
    """The model's offline plan judged by `validate` (None: it carries none). A tensor
    left to TFLite Micro (-1) is not judged; one of the arena's tensors at an offset is."""
    loaded = load_unplanned(path)
    model = parse(read_bytes(path), path)
    try:
        offsets = read_offline_plan(model)
    except FormatFault as error:
        return OfflineCheck(path, 0, 0, 0, lower_bound(loaded.problem), (str(error),))
    if offsets is None:
        return None
    assert loaded.memory is not None
    given: dict[str, int] = {}
    for name, offset in zip(tensor_names(main_subgraph(model, path)), offsets):
        place = loaded.memory.placements.get(name)
        if isinstance(place, Placement) and offset != -1:
            given[place.buffer] = offset
    placed = tuple(b for b in loaded.problem.buffers if b.id in given)
    problem = Problem(placed)
    head = max((given[b.id] + b.size for b in placed), default=0)
    plan = Plan(given, head, Status.FEASIBLE, "offline plan", lower_bound(problem), 0.0)
    faults = tuple(str(v) for v in validate(problem, plan))
    left = len(loaded.problem.buffers) - len(placed)
    return OfflineCheck(path, len(placed), left, head, lower_bound(loaded.problem), faults)


def run_against_own(path: str, lower_bound_bytes: int, seed: int = 0) -> Comparison:
    """The model at `path`, which carries an offline plan, run in TFLite Micro beside the
    same model with every offset -1 (TFLite Micro's own plan), as `compare_in_tflm`."""
    data = read_bytes(path)
    tensors = sum(len(g.tensors) for g in parse(data, path).subgraphs)
    own = with_offline_plan(data, [-1] * tensors)
    return compare_in_tflm(own, data, lower_bound_bytes, seed)


def check_summary(report: OfflineCheck, record: dict[str, object]) -> str:
    """What `optplan check` prints for a `.tflite`: the plan, its faults, the runs."""
    lines = [
        (
            f"{report.path}: offline plan of {report.placed} tensors ({report.left} left to "
            f"TFLite Micro's planner), head {report.head_bytes} bytes, lower bound "
            f"{report.lower_bound_bytes}"
        )
    ]
    lines += [f"  {v}" for v in report.violations]
    found = record.get("tflm")
    if isinstance(found, dict):
        own, planned = found["own"], found["planned"]
        lines.append(
            f"  TFLite Micro: smallest arena {planned['arena_bytes']} bytes with this plan "
            f"(head {planned['head_bytes']}), {own['arena_bytes']} with its own (head "
            f"{own['head_bytes']}); outputs "
            + ("byte-for-byte equal" if found["outputs_equal"] else "DIFFER")
        )
    elif report.valid:
        lines.append("  (tflite-micro is not installed: the plan is not run)")
    lines.append("valid" if record["valid"] else "invalid")
    return "\n".join(lines)


__all__ = [
    "ALIGNMENT",
    "OFFLINE_PLAN",
    "InvalidPlan",
    "OfflineCheck",
    "check_offline_plan",
    "check_summary",
    "load_unplanned",
    "offline_offsets",
    "plan_words",
    "planned_model",
    "read_offline_plan",
    "run_against_own",
    "with_offline_plan",
]
