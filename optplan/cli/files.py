"""What commands write: through a temporary file, checked before any work is done."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np

from optplan.errors import InputError
from optplan.frontends import Loaded
from optplan.problem import Problem, write_csv
from optplan.problem.plan import Plan

PICTURES = (".png", ".svg", ".pdf")


def check_output(path: str | None, suffixes: tuple[str, ...] = ()) -> None:
    """Refuse an output path that cannot be written, before any work is done."""
    if path is None:
        return
    target = Path(path)
    if target.is_dir():
        raise InputError("is a directory; give a file name to write", file=path)
    if suffixes and target.suffix.lower() not in suffixes:
        raise InputError(
            f"cannot tell the file's format; name it {' or '.join(suffixes)}", file=path
        )
    if not target.parent.is_dir():
        raise InputError(f"directory {str(target.parent)!r} does not exist", file=path)


def write_text(path: str, text: str) -> None:
    """Write through a temporary file, so an interrupted write leaves nothing half-done."""
    write_bytes(path, (text + ("" if text.endswith("\n") else "\n")).encode())


def write_bytes(path: str, data: bytes) -> None:
    """Write through a temporary file, so an interrupted write leaves nothing half-done."""
    target = Path(path)
    partial = target.with_name(target.name + ".partial")
    try:
        partial.write_bytes(data)
        partial.replace(target)
    except OSError as error:
        partial.unlink(missing_ok=True)
        raise InputError(f"cannot write: {error.strerror}", file=path) from None


def write_plan(path: str, loaded: Loaded, plan: Plan, record: dict[str, object]) -> None:
    """The plan as JSON, MiniMalloc's CSV, or (a `.tflite` read from one) the model with
    the plan as its offline plan."""
    if path.lower().endswith(".tflite"):
        from optplan.integrations.tflm import planned_model

        write_bytes(path, planned_model(loaded, plan))
    elif path.endswith(".csv") and plan.residences:
        write_text(path, memory_csv(loaded.problem, plan))
    elif path.endswith(".csv"):
        write_text(path, write_csv(loaded.problem, plan.offsets))
    else:
        write_text(path, json.dumps(record, indent=1))


def check_tflite_output(
    path: str | None, program: str, alignment: int | None, reorder: object
) -> None:
    """A planned `.tflite` is written only from a `.tflite` model, in its own operator
    order, at offsets TFLite Micro can use: refused before any planning otherwise."""
    if path is None or not path.lower().endswith(".tflite"):
        return
    if not program.lower().endswith(".tflite"):
        raise InputError("a planned .tflite is written from a .tflite model", file=path)
    if reorder:
        raise InputError(
            "--reorder changes the operators' order, which a .tflite keeps; "
            "leave it out to write a planned model",
            file=path,
        )
    if alignment is not None and alignment % 16:
        raise InputError(
            f"--alignment {alignment}: TFLite Micro needs offsets on 16 bytes", file=path
        )


def memory_csv(problem: Problem, plan: Plan) -> str:
    """A plan of several memories as CSV: one row per buffer and interval it is held in
    one memory (`lower`, `upper`: those points), with the memory, the offset there, and
    `copy_from`: the memory its bytes are copied from at `lower` (empty where it is
    written there, or where it stays from the point before)."""
    sizes = {b.id: b.size for b in problem.buffers}
    aligns = {b.id: b.alignment for b in problem.buffers}
    copies = {(c.buffer, c.point, c.target): c.source for c in plan.copies}
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["id", "lower", "upper", "size", "alignment", "memory", "offset", "copy_from"])
    rows = sorted(
        (r.buffer, iv.start, iv.end, r.memory, r.offset) for r in plan.residences for iv in r.live
    )
    order = {b.id: k for k, b in enumerate(problem.buffers)}
    rows.sort(key=lambda row: (order[row[0]], row[1], row[3]))
    for buffer, start, end, memory, offset in rows:
        source = copies.get((buffer, start, memory), "")
        writer.writerow([buffer, start, end, sizes[buffer], aligns[buffer], memory, offset, source])
    return out.getvalue()


def read_npz(path: str) -> dict[str, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as data:
            return {name: data[name] for name in data.files}
    except OSError as error:
        raise InputError(f"cannot read: {error.strerror or error}", file=path) from None
    except (ValueError, AttributeError):
        raise InputError("not an .npz archive of arrays (numpy.savez)", file=path) from None
