"""`optplan reorder`: each dataflow block in the order that needs the least memory."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from optplan.cli.files import check_output, write_text
from optplan.cli.inputs import load_input, reorder_note
from optplan.cli.options import Commands, add_input, guard_seconds, order_steps, parse_dims
from optplan.cli.terminal import say
from optplan.errors import InputError
from optplan.frontends import Loaded

if TYPE_CHECKING:
    from optplan.passes.reorder import Reordered


def _cmd_reorder(args: argparse.Namespace) -> int:
    from optplan.frontends.script import print_program
    from optplan.passes.reorder import reorder
    from optplan.schedule import Scheduler

    check_output(args.output)
    if (args.output or "").lower().endswith(".tflite"):
        raise InputError(
            "a reordered .tflite is not written (its operators keep the file's order); "
            "-o OUT.py writes the reordered program as TVMScript",
            file=args.output,
        )
    loaded = load_input(args)
    if args.capacity is not None:
        from optplan.cli.budget import recompute_program

        return recompute_program(args, loaded)
    scheduler = Scheduler(
        args.reorder or "auto", time_limit=guard_seconds(args), work=order_steps(args)
    )
    if loaded.graph is not None:
        from optplan.cli.reorder_graph import reorder_graph

        return reorder_graph(args, loaded, scheduler)
    if loaded.program is None:
        raise InputError(
            "a CSV problem has no operator order to change; give a .py or .onnx", file=args.program
        )
    result = reorder(loaded.program, scheduler, plan_outputs=args.plan_outputs)
    output = args.output or ""
    if output.lower().endswith(".onnx"):
        if not args.program.lower().endswith(".onnx"):
            raise InputError("an .onnx output needs an .onnx model as input", file=args.program)
        from optplan.frontends.onnx_write import write_reordered_onnx

        write_reordered_onnx(args.program, result.program, output, parse_dims(args.dim))
    else:
        try:
            text = print_program(result.program)
        except ValueError as error:
            raise InputError(
                f"cannot print the reordered program: {error}", file=args.program
            ) from None
        if output:
            write_text(output, text)
        elif not args.json:
            print(text)
    if args.json:
        say(json.dumps(_reorder_record(loaded, result, scheduler.name), indent=1))
    else:
        note = f"{loaded.path}: {reorder_note(result)}"
        print(
            note + (f"; written to {output}" if output else ""),
            file=sys.stdout if output else sys.stderr,
        )
    return 0


def _reorder_record(loaded: Loaded, result: Reordered, scheduler: str) -> dict[str, object]:
    return {
        "program": loaded.path,
        "reorder": scheduler,
        "program_order_peak_bytes": result.original_peak_bytes,
        "peak_bytes": result.peak_bytes,
        "bound_bytes": result.bound_bytes,
        "optimal": result.optimal,
        "blocks": [
            {
                "ops": len(s.order),
                "peak_bytes": s.peak_bytes,
                "bound_bytes": s.bound_bytes,
                "seconds": round(s.seconds, 4),
            }
            for s in result.blocks
        ],
        "seconds": round(result.seconds, 4),
    }


def add(commands: Commands) -> None:
    reorder = commands.add_parser(
        "reorder", help="run each dataflow block in the order that needs the least memory"
    )
    add_input(reorder, memory=False)
    reorder.add_argument(
        "-o",
        "--output",
        help="write the reordered program here (.py, or .onnx); for a graph (.json), the graph "
        "with its new order as graph['order']",
    )
    reorder.set_defaults(handler=_cmd_reorder)
