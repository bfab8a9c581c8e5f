"""`optplan fit PROGRAM --capacity SIZE`: the cheapest lever that fits, or a proof that
none can (`optplan.fit`), with the levers tried (`--levers`), all of it as JSON
(`--json`), and the plan (`-o OUT.json`) or the rewritten program (`-o OUT.py`).

Exit status: 0 when it fits, 1 when it cannot or nothing was found, 2 for bad input.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from optplan.budget import GUARD_SECONDS
from optplan.cli.files import check_output, write_text
from optplan.cli.inputs import load_input
from optplan.cli.options import (
    Commands,
    memories_of,
    parse_bytes,
    parse_dims,
    parse_memory,
    positive_int,
    positive_seconds,
    positive_work,
)
from optplan.cli.records import memory_record
from optplan.cli.terminal import say
from optplan.errors import InputError

if TYPE_CHECKING:
    from optplan.fitting import Fitted, Tried

# `optplan.fitting`'s status that fits, and its cost classes' names (it is imported only
# when a command fits, as it pulls in the passes and the schedulers).
FITS = "fits"
CLASS_NAMES = ("free", "extra compute", "slow-memory traffic")

# The work of all the levers together, where --work is not given: the examples and the
# tests' models answer in under a second of it. The hints of plan, compare and run use
# the same, so that the command a hint names gives the answer the hint gave.
FIT_WORK = 10.0


def add(commands: Commands) -> None:
    fit = commands.add_parser(
        "fit",
        help="does the program fit in SIZE bytes? the cheapest lever that makes it fit, or a proof",
    )
    fit.add_argument("program", help="a TVMScript .py, an ONNX .onnx, a .tflite or a .csv problem")
    fit.add_argument(
        "--capacity",
        type=parse_bytes,
        required=True,
        metavar="SIZE",
        help="the bytes the arena may hold (B, KiB, MiB, GiB)",
    )
    fit.add_argument(
        "--memory",
        action="append",
        type=parse_memory,
        metavar="NAME[=SIZE][:cost=C][:alignment=A]",
        help="a memory the tensors may spill to: one given is the second, beside a fast one "
        "of --capacity bytes; of several (fastest first), the first holds at most --capacity",
    )
    fit.add_argument(
        "--work",
        type=positive_work,
        default=FIT_WORK,
        metavar="UNITS",
        help=f"effort of all the levers together, counted in work (default {FIT_WORK:g}): the "
        "same answer on any machine",
    )
    fit.add_argument(
        "--time-limit",
        type=positive_seconds,
        metavar="SECONDS",
        help=f"an outer guard in seconds (default {GUARD_SECONDS:g})",
    )
    _add_reading(fit)
    fit.add_argument(
        "--levers", action="store_true", help="try every lever, and print the table of them"
    )
    fit.add_argument("--json", action="store_true", help="print all of it as JSON")
    fit.add_argument(
        "-o",
        "--output",
        action="append",
        default=[],
        help="write the plan (.json), the rewritten program (.py) or, of an ONNX model, the "
        "model in the new order with the nodes it computes again (.onnx); repeatable",
    )
    fit.set_defaults(handler=_cmd_fit, inplace=False, reorder=None)


def _add_reading(fit: argparse.ArgumentParser) -> None:
    """The flags that say how the program is read: alignment, outputs, dimensions."""
    fit.add_argument(
        "--alignment",
        type=positive_int,
        help="byte alignment of every offset (default: 64; 1 for a .csv)",
    )
    fit.add_argument("--plan-outputs", action="store_true", help="also plan the function's outputs")
    fit.add_argument(
        "--dim",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="fix a symbolic dimension of an ONNX model's inputs",
    )
    fit.add_argument(
        "--bound",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="upper bound of a symbolic dimension (repeatable)",
    )


def _cmd_fit(args: argparse.Namespace) -> int:
    from optplan.fitting.core import fit, onnx_allow

    for output in args.output:
        check_output(output)
        if not output.lower().endswith((".json", ".py", ".onnx")):
            raise InputError(
                "-o writes the plan (.json), the program (.py) or the model (.onnx)", file=output
            )
        if output.lower().endswith(".onnx") and not args.program.lower().endswith(".onnx"):
            raise InputError("an .onnx output needs an .onnx model as input", file=output)
    memories = memories_of(args)
    args.memory = None  # the program is read alone; the memories are a lever
    loaded = load_input(args)
    found = fit(
        loaded,
        args.capacity,
        memories=memories,
        alignment=args.alignment,
        plan_outputs=args.plan_outputs,
        time_limit=args.time_limit or GUARD_SECONDS,
        work=args.work,
        every=args.levers or args.json,
        allow=onnx_allow(args.program, parse_dims(args.dim)),
    )
    written = [_write(output, found, args) for output in args.output] if found.best else []
    if args.json:
        say(json.dumps(record(found), indent=1))
        return 0 if found.status == FITS else 1
    print(answer(found))
    for line in written:
        print(line)
    if args.levers:
        print(levers_table(found))
    return 0 if found.status == FITS else 1


def kib(size: int) -> str:
    return f"{size} bytes ({size / 1024:.1f} KiB)"


def cost_words(tried: Tried) -> str:
    if CLASS_NAMES[tried.cost_class] == "extra compute":
        return f"extra compute {tried.extra_percent:.2f} %"
    if CLASS_NAMES[tried.cost_class] == "slow-memory traffic":
        return f"slow-memory traffic {tried.slow_traffic} bytes"
    return "costs nothing"


def answer(found: Fitted) -> str:
    """The one paragraph: the lever, what it changed and costs, and the arena; or why not."""
    head = f"{found.path}: --capacity {kib(found.capacity)}"
    best = found.best
    if best is not None:
        arena = kib(best.arena_bytes or 0)
        return (
            f"{head}: fits {'as is' if best.lever == 'as is' else 'with ' + best.lever}, "
            f"{cost_words(best)}: arena {arena}, live-bytes peak {best.needs_bytes}; {best.note}"
        )
    if found.proof is not None:
        return f"{head}: cannot fit: {found.proof.line(found.capacity)}"
    return (
        f"{head}: no lever found a plan in {found.seconds:.1f} s, and no bound excludes one "
        f"(every lever needs at least {found.bound_bytes} bytes); try a longer --time-limit, "
        "or a second memory (--memory slow)"
    )


def levers_table(found: Fitted) -> str:
    rows = [("lever", "cost class", "fits", "cost", "live bytes", "arena", "note")]
    for t in found.tried:
        rows.append(
            (
                t.lever,
                CLASS_NAMES[t.cost_class],
                "yes" if t.fits else "no",
                cost_words(t) if t.fits else "-",
                "-" if t.needs_bytes is None else str(t.needs_bytes),
                "-" if t.arena_bytes is None else str(t.arena_bytes),
                t.note[:70],
            )
        )
    table = _aligned(rows)
    if found.best is None:  # the bytes every lever needs: the proof, row by row
        table += "\n\n" + _aligned(
            [("lever", "needs at least", "because")]
            + [(b.lever, str(b.bytes), b.reason) for b in found.bounds]
        )
    return table


def _aligned(rows: Sequence[tuple[str, ...]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)


def record(found: Fitted) -> dict[str, object]:
    best = found.best
    return {
        "program": found.path,
        "capacity_bytes": found.capacity,
        "status": found.status,
        "lever": best.lever if best else None,
        "arena_bytes": best.arena_bytes if best else None,
        "arena_kib": round(best.arena_bytes / 1024, 3) if best and best.arena_bytes else None,
        "extra_compute_percent": round(best.extra_percent, 4) if best else None,
        "slow_traffic": best.slow_traffic if best else None,
        "changed": best.note if best else None,
        "copies": best.form.copies if best and best.form else {},
        "offsets": dict(best.plan.offsets) if best and best.plan else {},
        **(_memories(best) if best else {}),
        "levers": [_lever(t) for t in found.tried],
        "bound_bytes": found.bound_bytes,
        "bounds": [{"lever": b.lever, "bytes": b.bytes, "reason": b.reason} for b in found.bounds],
        "proof": _proof(found),
        "seconds": round(found.seconds, 4),
    }


def _memories(best: Tried) -> dict[str, object]:
    if best.problem is None or best.plan is None or not best.plan.residences:
        return {}
    return memory_record(best.problem, best.plan)


def _lever(t: Tried) -> dict[str, object]:
    return {
        "lever": t.lever,
        "cost_class": CLASS_NAMES[t.cost_class],
        "fits": t.fits,
        "live_bytes": t.needs_bytes,
        "arena_bytes": t.arena_bytes,
        "extra_compute_percent": round(t.extra_percent, 4),
        "slow_traffic": t.slow_traffic,
        "note": t.note,
        "seconds": round(t.seconds, 4),
    }


def _proof(found: Fitted) -> dict[str, object] | None:
    proof = found.proof
    if proof is None:
        return None
    return {
        "bound_bytes": proof.bound_bytes,
        "reason": proof.reason,
        "point": proof.point,
        "binding": proof.binding,
        "held": [{"tensor": name, "bytes": size} for name, size in proof.held],
        "live_bytes": proof.live_bytes,
        "line": proof.line(found.capacity),
    }


def _write(output: str, found: Fitted, args: argparse.Namespace) -> str:
    """The plan, the program or the model of the answer, and the line that says so."""
    best = found.best
    assert best is not None and best.plan is not None
    if output.lower().endswith(".onnx"):
        return _write_onnx(output, best, args)
    if output.lower().endswith(".json"):
        data = {
            "program": found.path,
            "lever": best.lever,
            "arena_bytes": best.plan.arena,
            "offsets": dict(best.plan.offsets),
            **_memories(best),
        }
        write_text(output, json.dumps(data, indent=1) + "\n")
        return f"plan written to {output}"
    from optplan.frontends.script import print_program

    if best.form is None or best.form.program is None:
        raise InputError("a .csv problem has no program to write; -o OUT.json", file=output)
    try:
        text = print_program(best.form.program)
    except ValueError as error:
        raise InputError(f"cannot print the program: {error}", file=found.path) from None
    write_text(output, text)
    return f"program written to {output}"


def _write_onnx(output: str, best: Tried, args: argparse.Namespace) -> str:
    """The model with the lever's operator order and the nodes it computes again (in place
    is the runtime's to do: an ONNX model does not say where a tensor lives)."""
    from optplan.frontends.onnx_write import write_recomputed_onnx, write_reordered_onnx

    assert best.form is not None and best.form.program is not None
    dims = parse_dims(args.dim)
    if best.form.copies:
        write_recomputed_onnx(args.program, best.form.program, best.form.copies, output, dims)
    else:
        write_reordered_onnx(args.program, best.form.program, output, dims)
    return f"model written to {output}"
