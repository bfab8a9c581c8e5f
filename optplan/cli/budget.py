"""`--capacity`: the budget on every command, the one line that says why a program does
not fit, and recomputation (`reorder --capacity`, `run --capacity`).

When the fixed order's live bytes exceed the capacity no plan can fit, so instead of
planning the command prints one line: the program point of the peak, the tensors live
there, and what would fit it, as `optplan fit` finds it (its levers at a short time
limit): the lever and the `optplan fit` command that writes its plan, or the proof that
none can and the command with a second memory; and exits with status 1.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shlex
import sys
from typing import TYPE_CHECKING

from optplan.budget import ORDER_STEPS_PER_UNIT
from optplan.cli.options import guard_seconds
from optplan.cli.records import counted
from optplan.cli.terminal import say
from optplan.errors import InputError
from optplan.frontends import Loaded
from optplan.problem import Problem, live_profile, lower_bound, one_arena

if TYPE_CHECKING:
    from optplan.passes.recompute import Recomputed
    from optplan.schedule.remat import RematSchedule


def with_capacity(args: argparse.Namespace, loaded: Loaded) -> Loaded:
    """`loaded` whose problem has `--capacity` (unchanged without it); of several memories
    (`--memory`), the first, fastest one holds at most `--capacity`."""
    if getattr(args, "capacity", None) is None:
        return loaded
    memories = loaded.problem.memories
    if len(memories) > 1:
        first = memories[0]
        size = args.capacity if first.capacity is None else min(first.capacity, args.capacity)
        fast = dataclasses.replace(first, capacity=size)
        problem = dataclasses.replace(loaded.problem, memories=(fast, *memories[1:]))
        return dataclasses.replace(loaded, problem=problem)
    problem = Problem(
        loaded.problem.buffers, loaded.problem.aliases, memories=one_arena(args.capacity)
    )
    return dataclasses.replace(loaded, problem=problem)


def over_capacity(args: argparse.Namespace, loaded: Loaded) -> bool:
    """Whether the live bytes of this order exceed `--capacity` (with several memories
    the planners place what the first cannot hold, so never)."""
    capacity = getattr(args, "capacity", None)
    if capacity is None or len(loaded.problem.memories) > 1:
        return False
    return lower_bound(loaded.problem) > capacity


def does_not_fit(args: argparse.Namespace, loaded: Loaded) -> str | None:
    """The one line when the live bytes of this order exceed `--capacity`, else None."""
    if not over_capacity(args, loaded):
        return None
    capacity = args.capacity
    peak = lower_bound(loaded.problem)
    point = max(live_profile(loaded.problem), key=lambda pair: pair[1])[0]
    live = sorted(
        (b for b in loaded.problem.buffers if any(iv.start <= point < iv.end for iv in b.live)),
        key=lambda b: -b.size,
    )
    shown = ", ".join(f"{b.id} ({b.size})" for b in live[:6]) + (
        f" and {len(live) - 6} more" if len(live) > 6 else ""
    )
    where = _binding_at(loaded, point)
    return (
        f"{loaded.path}: does not fit --capacity {capacity}: {peak} bytes are live at point {point}{where}: "
        f"{shown}; {what_fits(args, loaded, capacity)}"
    )


def _binding_at(loaded: Loaded, point: int) -> str:
    if loaded.memory is None:
        return ""
    names = [name for name, p in loaded.memory.points.items() if p == point]
    return f" ({names[0]})" if names else ""


def what_fits(args: argparse.Namespace, loaded: Loaded, capacity: int) -> str:
    """What would fit it, found by `optplan fit` itself (its levers at a short time limit),
    with the `optplan fit` command that gives the plan."""
    if loaded.graph is not None:
        return _what_fits_graph(args, loaded, capacity)
    from optplan.cli.fit import FIT_WORK, cost_words, kib
    from optplan.fitting import CANNOT, FITS, fit

    command = fit_command(args, capacity)
    found = fit(
        _as_written(args),
        capacity,
        alignment=args.alignment,
        plan_outputs=args.plan_outputs,
        time_limit=guard_seconds(args),
        work=FIT_WORK,
    )
    if found.status == FITS and found.best is not None:
        arena = kib(found.best.arena_bytes or 0)
        return f"{found.best.lever} fits it ({cost_words(found.best)}, arena {arena}): {command}"
    second = f"; a second memory would hold the rest: {command} --memory slow"
    if found.status == CANNOT and found.proof is not None:
        return found.proof.short(capacity) + second
    return (
        f"no lever found a plan in {found.seconds:.1f} s (every one needs at least "
        f"{found.bound_bytes} bytes): {command} --work 60 tries longer{second}"
    )


def _as_written(args: argparse.Namespace) -> Loaded:
    """The program as the file has it: without --inplace, --reorder or --memory."""
    from optplan.cli.inputs import load_input

    plain = argparse.Namespace(**{**vars(args), "inplace": False, "memory": None})
    return load_input(plain)


def fit_command(args: argparse.Namespace, capacity: int) -> str:
    """`optplan fit` with the flags that read the program as this command did."""
    words = ["optplan fit", shlex.quote(args.program), "--capacity", str(capacity)]
    frontend = _frontend_alignment(args.program)
    if args.alignment is not None and args.alignment != frontend:
        words += ["--alignment", str(args.alignment)]
    if args.plan_outputs and not args.program.lower().endswith(".tflite"):
        words.append("--plan-outputs")
    for flag, values in (("--dim", args.dim), ("--bound", args.bound)):
        words += [f"{flag} {shlex.quote(value)}" for value in values]
    return " ".join(words)


def _frontend_alignment(path: str) -> int | None:
    from optplan.frontends import frontend_of

    try:
        return frontend_of(path).default_alignment
    except InputError:
        return None


def _what_fits_graph(args: argparse.Namespace, loaded: Loaded, capacity: int) -> str:
    """A peer's graph: another order, or recomputation (`reorder --capacity`)."""
    from optplan.schedule import Scheduler
    from optplan.schedule.remat import memory_bound

    assert loaded.graph is not None
    graph = loaded.graph
    # The hint's search is short and counted, so the hint is the same on any machine.
    hinted = Scheduler("auto", time_limit=guard_seconds(args), work=HINT_ORDER_STEPS)
    reordered = hinted(graph).peak_bytes
    if reordered <= capacity and not getattr(args, "reorder", None):
        return f"another order would fit it (--reorder: {reordered} bytes)"
    bound = memory_bound(graph, alignment=args.alignment)
    if bound.bytes <= capacity:
        return (
            f"the best order needs {reordered}; recomputation may fit it (optplan reorder "
            f"{shlex.quote(args.program)} --capacity {capacity}; no schedule needs less than "
            f"{bound.bytes})"
        )
    return f"no order nor recomputation can ({bound.reason})"


HINT_ORDER_STEPS = 10 * ORDER_STEPS_PER_UNIT  # about 10 s of the order search


def recomputed(args: argparse.Namespace, loaded: Loaded) -> Recomputed:
    """The program rewritten to fit `--capacity` (`passes.recompute`)."""
    from optplan.passes.recompute import recompute

    assert loaded.program is not None
    allow = None
    if args.program.lower().endswith(".onnx"):
        from optplan.cli.options import parse_dims
        from optplan.frontends.onnx_write import node_variables

        allow = node_variables(args.program, parse_dims(args.dim)).__contains__
    return recompute(
        loaded.program,
        args.capacity,
        time_limit=guard_seconds(args),
        work=args.work,
        plan_outputs=args.plan_outputs,
        alignment=args.alignment,
        allow=allow,
    )


def recomputed_loaded(args: argparse.Namespace, loaded: Loaded, result: Recomputed) -> Loaded:
    from optplan.analysis.liveness import build_memory

    memory = build_memory(result.program, plan_outputs=args.plan_outputs, alignment=args.alignment)
    problem = Problem(
        memory.problem.buffers, memory.problem.aliases, memories=one_arena(args.capacity)
    )
    return Loaded(loaded.path, problem, result.program, memory, loaded.weights)


def recompute_note(result: Recomputed, capacity: int) -> str:
    if not result.status.has_plan:
        return f"no program within --capacity {capacity}: {result.reason}"
    bound = f"proven bound {result.bound_cost}" if result.bound_cost else "no bound proven"
    bound += (
        f", lower bound over every schedule {result.lower_bound}, gap {result.gap_percent:.1f} %"
    )
    return (
        f"recomputed within --capacity {capacity}: live-bytes peak {result.original_peak_bytes} -> "
        f"{result.peak_bytes} bytes; {counted(len(result.copies), 'value')} computed again "
        f"({', '.join(f'{new} of {old}' for new, old in list(result.copies.items())[:6])}"
        f"{', ...' if len(result.copies) > 6 else ''}); extra compute {result.extra_cost} "
        f"({result.extra_percent:.2f} %, {bound}); {result.seconds:.2f} s"
    )


def remat_graph(args: argparse.Namespace, loaded: Loaded) -> int:
    """`reorder --capacity` on a peer's graph: the schedule, its offsets, and a JSON file."""
    from optplan.schedule.remat import Remat, rematerialise

    assert loaded.graph is not None
    result = rematerialise(
        loaded.graph,
        Remat(
            args.capacity,
            time_limit=guard_seconds(args),
            work=args.work,
            alignment=args.alignment,
        ),
    )
    record = _graph_record(loaded, result, args.capacity)
    if args.output:
        from optplan.cli.files import write_text

        write_text(args.output, json.dumps(record, indent=1) + "\n")
    if args.json:
        say(json.dumps(record, indent=1))
    elif result.steps is None:
        print(f"{loaded.path}: {result.status.value}: {result.reason}{_below_words(result)}")
    else:
        print(
            f"{loaded.path}: {result.status.value}: {counted(len(result.steps), 'step')} for {counted(loaded.graph.ops, 'node')}, "
            f"extra compute {result.extra_cost} of {result.total_cost} ({result.extra_percent:.3f} %, "
            f"{_bound_words(result)}); live-bytes peak {result.peak_bytes}, arena {result.arena_bytes} <= "
            f"{args.capacity} (real offsets, validated); by {result.method} in {result.seconds:.2f} s"
            + (f"; written to {args.output}" if args.output else "")
        )
    return 0 if result.steps is not None else 1


def _below_words(result: RematSchedule) -> str:
    """Where no schedule was found but one may fit: what any of them costs at least
    (an INFEASIBLE answer has no bound: nothing fits)."""
    if not result.lower_bound or not result.total_cost:
        return ""
    percent = 100 * result.lower_bound / result.total_cost
    return f"; no schedule costs less than {result.lower_bound} extra compute ({percent:.3f} %)"


def _bound_words(result: RematSchedule) -> str:
    """The bound over every schedule and the gap to it, or why the bound is 0; the
    models' bound where it is higher (it speaks only for their spaces)."""
    words = f"lower bound {result.lower_bound}, gap {result.gap_percent:.1f} %"
    if result.extra_cost and not result.lower_bound and result.lower_reason:
        words += f": {result.lower_reason}"
    if result.bound_cost > result.lower_bound:
        words += f"; the models' spaces hold none below {result.bound_cost}"
    return words


def _graph_record(loaded: Loaded, result: RematSchedule, capacity: int) -> dict[str, object]:
    graph = loaded.graph
    assert graph is not None
    # Node names are unique (a label two nodes share gets each node's id), and name the
    # instances of `offsets` too (`name@k` for the k-th run).
    names = graph.names or tuple(str(v) for v in range(graph.ops))
    return {
        "program": loaded.path,
        "capacity_bytes": capacity,
        "status": result.status.value,
        "reason": result.reason,
        "steps": [names[v] for v in result.steps] if result.steps else None,
        "extra_cost": result.extra_cost,
        "total_cost": result.total_cost,
        "bound_cost": result.bound_cost,
        "lower_bound": result.lower_bound,
        "lower_bound_reason": result.lower_reason,
        "gap_percent": round(result.gap_percent, 3),
        "memory_bound_bytes": result.memory_bound.bytes,
        "peak_bytes": result.peak_bytes,
        "arena_bytes": result.arena_bytes,
        "offsets": dict(result.plan.offsets) if result.plan is not None else {},
        "method": result.method,
        "seconds": round(result.seconds, 4),
    }


def refuse_capacity_without_program(args: argparse.Namespace, loaded: Loaded) -> None:
    if loaded.program is None and loaded.graph is None:
        raise InputError(
            "a CSV problem has no operator order to change; give a .py, .onnx or .json",
            file=args.program,
        )


def recompute_program(args: argparse.Namespace, loaded: Loaded) -> int:
    """`reorder --capacity`: the schedule of a graph, or the program rewritten."""
    refuse_capacity_without_program(args, loaded)
    if loaded.graph is not None:
        return remat_graph(args, loaded)
    from optplan.frontends.script import print_program

    result = recomputed(args, loaded)
    note = f"{loaded.path}: {recompute_note(result, args.capacity)}"
    if not result.status.has_plan:
        print(json.dumps(_program_record(loaded, result, args.capacity)) if args.json else note)
        return 1
    output = args.output or ""
    if output.lower().endswith(".onnx"):
        if not args.program.lower().endswith(".onnx"):
            raise InputError("an .onnx output needs an .onnx model as input", file=args.program)
        from optplan.cli.options import parse_dims
        from optplan.frontends.onnx_write import write_recomputed_onnx

        write_recomputed_onnx(
            args.program, result.program, result.copies, output, parse_dims(args.dim)
        )
    else:
        try:
            text = print_program(result.program)
        except ValueError as error:
            raise InputError(
                f"cannot print the recomputing program: {error}", file=args.program
            ) from None
        if output:
            from optplan.cli.files import write_text

            write_text(output, text)
        elif not args.json:
            print(text)
    if args.json:
        say(json.dumps(_program_record(loaded, result, args.capacity), indent=1))
    else:
        print(
            note + (f"; written to {output}" if output else ""),
            file=sys.stdout if output else sys.stderr,
        )
    return 0


def _program_record(loaded: Loaded, result: Recomputed, capacity: int) -> dict[str, object]:
    return {
        "program": loaded.path,
        "capacity_bytes": capacity,
        "status": result.status.value,
        "program_order_peak_bytes": result.original_peak_bytes,
        "peak_bytes": result.peak_bytes,
        "copies": result.copies,
        "extra_cost": result.extra_cost,
        "total_cost": result.total_cost,
        "bound_cost": result.bound_cost,
        "lower_bound": result.lower_bound,
        "gap_percent": round(result.gap_percent, 3),
        "seconds": round(result.seconds, 4),
        **({} if result.status.has_plan else {"reason": result.reason}),
    }
