"""Reading a command's PROGRAM: the frontend, the alignment default, `--dim` and
`--bound`, and the order `--reorder` asks for.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from optplan.cli.options import guard_seconds, memories_of, order_steps, parse_dims
from optplan.cli.records import counted
from optplan.errors import InputError
from optplan.frontends import Loaded, frontend_of, load

if TYPE_CHECKING:
    from optplan.passes.reorder import Reordered
    from optplan.schedule import Schedule, Scheduler


def load_input(args: argparse.Namespace) -> Loaded:
    # A missing file is `load`'s to report.
    frontend = frontend_of(args.program) if Path(args.program).is_file() else None
    if args.alignment is None:
        args.alignment = frontend.default_alignment if frontend else 64
    if frontend is not None and frontend.outputs_planned:
        args.plan_outputs = True  # the runtime keeps them in the arena (TFLite Micro)
    replay_dims = frontend is not None and frontend.dims_at_replay
    if replay_dims and args.dim and args.command != "run":
        raise InputError(
            "--dim on a TVMScript program is the size 'optplan run' replays at; "
            "plans are made at the upper bounds (--bound)",
            file=args.program,
        )
    return load(
        args.program,
        alignment=args.alignment,
        plan_outputs=args.plan_outputs,
        inplace=args.inplace,
        dims={} if replay_dims else parse_dims(args.dim),
        bounds=parse_dims(args.bound, "--bound"),
        memories=memories_of(args),
    )


def reorder_target(args: argparse.Namespace, loaded: Loaded) -> Loaded:
    """`loaded` with its dataflow blocks reordered when `--reorder` asks for it (and made
    in place again, when `--inplace`, since the new order may let more ops run in place);
    a peer's graph (`.json`) gets its ops reordered and the problem of the new order."""
    if not getattr(args, "reorder", None):
        return loaded
    from optplan.analysis.liveness import build_memory
    from optplan.passes.reorder import reorder
    from optplan.schedule import Scheduler

    scheduler = Scheduler(args.reorder, time_limit=guard_seconds(args), work=order_steps(args))
    if loaded.graph is not None:
        return _reordered_graph(args, loaded, scheduler)
    if loaded.program is None:
        raise InputError(
            "a CSV problem has no operator order to change; give a .py or .onnx", file=args.program
        )
    result = reorder(loaded.program, scheduler, plan_outputs=args.plan_outputs)
    program = result.program
    if args.inplace:
        from optplan.passes import use_inplace_calls

        program = use_inplace_calls(program)
    if not getattr(args, "json", False):
        print(f"{loaded.path}: {reorder_note(result)}", file=sys.stderr)
    memory = build_memory(
        program,
        plan_outputs=args.plan_outputs,
        alignment=args.alignment,
        memories=memories_of(args),
    )
    return Loaded(loaded.path, memory.problem, program, memory, loaded.weights)


def _reordered_graph(args: argparse.Namespace, loaded: Loaded, scheduler: Scheduler) -> Loaded:
    from optplan.schedule.graph import peak_bytes, problem_of

    assert loaded.graph is not None
    graph = loaded.graph
    schedule = scheduler(graph)
    if not getattr(args, "json", False):
        note = graph_note(peak_bytes(graph, range(graph.ops)), schedule)
        print(f"{loaded.path}: {note}", file=sys.stderr)
    problem = problem_of(graph, schedule.order, args.alignment)
    return Loaded(loaded.path, problem, graph=graph)


def graph_note(program_peak: int, schedule: Schedule) -> str:
    """One line on a reordered graph: the peak before and after, and the proof."""
    saved = 1 - schedule.peak_bytes / program_peak if program_peak else 0.0
    proof = "optimal" if schedule.optimal else f"proven bound {schedule.bound_bytes}"
    return (
        f"reordered: peak {program_peak} -> {schedule.peak_bytes} bytes ({saved:.1%} less, "
        f"{proof}; {counted(len(schedule.order), 'op')}, {schedule.seconds:.2f} s)"
    )


def reorder_note(result: Reordered) -> str:
    saved = (
        1 - result.peak_bytes / result.original_peak_bytes if result.original_peak_bytes else 0.0
    )
    proof = "optimal" if result.optimal else f"proven bound {result.bound_bytes}"
    return (
        f"reordered: live-bytes peak {result.original_peak_bytes} -> {result.peak_bytes} bytes "
        f"({saved:.1%} less, {proof}; {counted(len(result.blocks), 'dataflow block')}, {result.seconds:.2f} s)"
    )


def planner_names(text: str) -> list[str]:
    from optplan.planners import PLANNERS

    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise InputError(f"--planners names no planner; choose from {', '.join(sorted(PLANNERS))}")
    for name in names:
        if name not in PLANNERS:
            raise InputError(f"unknown planner {name!r}; choose from {', '.join(sorted(PLANNERS))}")
    return names
