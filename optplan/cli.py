"""The command line: plan, compare, run.

    optplan plan PROGRAM [--planner cpsat] [--time-limit S] [--alignment B] [--json] [-o OUT]
    optplan compare PROGRAM [--planners naive,greedy,cpsat] [--json]
    optplan run PROGRAM [--planner cpsat] [--plan FILE] [--inputs FILE.npz]
    optplan lower PROGRAM [--planner cpsat] [-o OUT]
    optplan show PROGRAM [--planner cpsat] -o arena.png
    optplan check PLANNED_PROGRAM
    optplan reorder PROGRAM [--reorder auto] [-o OUT.py]
    optplan fuzz TARGET [--examples N | --time S] [--seed S] [--workers N] [--ray | --ray-address ADDR]

`--reorder [auto|program|exact|cpsat|heuristic]` on plan, compare, run, lower and show
first runs each dataflow block in the order that needs the least memory.

Exit status: 0 on success; 1 when a check fails (a plan is invalid, a replay differs);
2 for bad input, printed as one line `file:line:col: what is wrong`.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import numpy as np

from optplan import __version__
from optplan.errors import InputError
from optplan.frontends import Loaded, frontend_of, load, read_plan
from optplan.plan import Plan, validate
from optplan.problem import Problem, write_csv

if TYPE_CHECKING:
    from optplan.passes.reorder import Reordered
    from optplan.planners.common import Form
    from optplan.planners.watch import Watch

DEFAULT_PLANNERS = "naive,tokens,greedy,cpsat"
REORDERS = ("auto", "program", "exact", "cpsat", "heuristic", "improve", "lpmf", "bfs", "dfs")


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as done:  # --help, or a usage fault already printed in one line
        return done.code if isinstance(done.code, int) else 2
    try:
        return int(args.handler(args))
    except InputError as error:
        print(f"optplan: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("optplan: interrupted", file=sys.stderr)
        return 130


def entry() -> None:
    sys.exit(main())


# ---------------------------------------------------------------------------- arguments


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage fault reported as one line and exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see '{self.prog} --help')\n")


def _positive_seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not math.isfinite(seconds) or seconds <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text!r}")
    return seconds


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text!r}")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="optplan",
        description="Plan the memory of a tensor program (TVMScript .py, ONNX .onnx, or a "
        "MiniMalloc .csv problem) into one arena of minimum size, and check the plan.",
    )
    parser.add_argument("--version", action="version", version=f"optplan {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    plan = commands.add_parser("plan", help="plan one program and print or write the plan")
    _add_input(plan)
    plan.add_argument("--planner", default="cpsat", help="planner to use (default: cpsat)")
    plan.add_argument("-o", "--output", help="write the plan here (.json, or .csv for MiniMalloc)")
    plan.set_defaults(handler=_cmd_plan)

    compare = commands.add_parser("compare", help="run several planners and tabulate them")
    _add_input(compare)
    compare.add_argument(
        "--planners", default=DEFAULT_PLANNERS, help=f"comma-separated (default: {DEFAULT_PLANNERS})"
    )
    compare.set_defaults(handler=_cmd_compare)

    run = commands.add_parser("run", help="replay the planned program in one arena, bit for bit")
    _add_input(run, json=False)
    run.add_argument("--planner", default="cpsat", help="planner to use (default: cpsat)")
    run.add_argument("--plan", help="replay this plan (JSON with 'offsets') instead of planning")
    run.add_argument("--inputs", help=".npz of input values by parameter name (others are random)")
    run.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default: 0)")
    run.add_argument(
        "--expect",
        help=".npz whose 'output' (or 'output_0', 'output_1', ...) the reference run must match",
    )
    run.add_argument("--rtol", type=float, default=1e-4, help="relative tolerance of --expect")
    run.add_argument("--atol", type=float, default=1e-5, help="absolute tolerance of --expect")
    run.set_defaults(handler=_cmd_run)

    lower = commands.add_parser(
        "lower", help="print the program lowered onto a plan (alloc_storage, alloc_tensor, kills)"
    )
    _add_input(lower, json=False)
    lower.add_argument("--planner", default="cpsat", help="planner to use (default: cpsat)")
    lower.add_argument("-o", "--output", help="write the lowered TVMScript here")
    lower.set_defaults(handler=_cmd_lower)

    show = commands.add_parser("show", help="draw the planned arena as a picture")
    _add_input(show, json=False)
    show.add_argument("--planner", default="cpsat", help="planner to use (default: cpsat)")
    show.add_argument(
        "-o", "--output", required=True, help="picture to write (.png, .svg, .pdf, or .html)"
    )
    show.add_argument(
        "--html",
        action="store_true",
        help="write a self-contained page where hovering a tensor names it (for large plans)",
    )
    show.add_argument(
        "--labels", type=int, default=12, help="name this many of the largest tensors (default 12)"
    )
    show.set_defaults(handler=_cmd_show)

    check = commands.add_parser(
        "check", help="extract, validate and replay the plan of an already planned program"
    )
    check.add_argument("program", help="a planned TVMScript .py (alloc_storage, alloc_tensor)")
    check.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default: 0)")
    check.add_argument("--json", action="store_true", help="print JSON instead of text")
    check.set_defaults(handler=_cmd_check)

    reorder = commands.add_parser(
        "reorder", help="run each dataflow block in the order that needs the least memory"
    )
    _add_input(reorder)
    reorder.add_argument("-o", "--output", help="write the reordered program here (.py, or .onnx)")
    reorder.set_defaults(handler=_cmd_reorder)
    _add_fuzz(commands)
    return parser


def _add_fuzz(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    fuzz = commands.add_parser(
        "fuzz", help="search for inputs on which a planner's plan is wrong, and shrink them"
    )
    fuzz.add_argument(
        "target", nargs="?", help="a planner (greedy, cpsat, ...), module:function, or tvm"
    )
    fuzz.add_argument(
        "--command", help='a MiniMalloc-CSV planner: "prog --capacity={capacity} '
        '--input={input} --output={output}"'
    )
    budget = fuzz.add_mutually_exclusive_group()
    budget.add_argument("--examples", type=int, help="examples to try in all (default: 1000)")
    budget.add_argument("--time", type=float, help="seconds to run instead of --examples")
    fuzz.add_argument("--seed", type=int, default=0, help="seed of the campaign (default: 0)")
    fuzz.add_argument(
        "--workers",
        type=int,
        help="local processes (default: 1); with --ray, shards run at once (default: "
        "one per CPU of the cluster)",
    )
    fuzz.add_argument(
        "--time-limit", type=float, default=10.0, help="seconds per example (default: 10)"
    )
    fuzz.add_argument(
        "--out", default="fuzz-failures", help="folder for reproducers (default: fuzz-failures)"
    )
    fuzz.add_argument(
        "--keep-going", action="store_true", help="go on after a failure (one per property)"
    )
    fuzz.add_argument(
        "--ray",
        action="store_true",
        help="run the shards as Ray tasks (pip install 'optplan[ray]'): on the cluster "
        "RAY_ADDRESS names or `ray start` left on this machine, else on a local one",
    )
    fuzz.add_argument(
        "--ray-address", metavar="ADDR", help="run on the Ray cluster at ADDR (implies --ray)"
    )
    fuzz.set_defaults(handler=_cmd_fuzz)


def _add_input(parser: argparse.ArgumentParser, *, json: bool = True) -> None:
    parser.add_argument("program", help="a TVMScript .py, an ONNX .onnx or a MiniMalloc .csv")
    parser.add_argument(
        "--alignment",
        type=_positive_int,
        help="byte alignment of every offset (default: 64 for programs, as TVM's and TFLite's "
        "CPU runtimes; 1 for a .csv problem, whose sizes are exact byte counts)",
    )
    parser.add_argument(
        "--time-limit",
        type=_positive_seconds,
        default=60.0,
        help="seconds per planner (default: 60)",
    )
    parser.add_argument(
        "--plan-outputs", action="store_true", help="also plan the function's outputs"
    )
    parser.add_argument(
        "--dim",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="fix a symbolic dimension of an ONNX model's inputs; for 'run', the size to "
        "replay at, up to its bound (repeatable)",
    )
    parser.add_argument(
        "--bound",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="upper bound of a symbolic dimension: tensors are planned at it (repeatable)",
    )
    parser.add_argument(
        "--inplace",
        action="store_true",
        help="first let elementwise ops write over inputs that die there (DataflowUseInplaceCalls)",
    )
    if json:
        parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument(
        "--reorder",
        nargs="?",
        const="auto",
        choices=REORDERS,
        help="first reorder each dataflow block for the least memory (default scheduler: auto)",
    )


# ---------------------------------------------------------------------------- commands


def _cmd_plan(args: argparse.Namespace) -> int:
    _check_output(args.output)
    loaded = _target(args, _load(args))
    plan, interrupted = _solve_watched(loaded.problem, args.planner, args.time_limit, quiet=args.json)
    faults = validate(loaded.problem, plan)
    if faults:
        _report_faults(plan, faults)
        return 1
    record = _record(loaded, plan, args)
    if args.output:
        _write_plan(args.output, loaded.problem, plan, record)
    if args.json:
        print(json.dumps(record, indent=1))
    else:
        print(_summary(loaded, plan, args))
        if args.output:
            print(f"plan written to {args.output}")
    if interrupted:
        print(INTERRUPTED, file=sys.stderr)
        return 130
    return 0 if plan.status.has_plan else 1


def _cmd_compare(args: argparse.Namespace) -> int:
    from optplan.planners.common import make_form

    names = _planner_names(args.planners)
    loaded = _load(args)
    records, failed = [], False
    targets = [(loaded, None)]
    if args.reorder:
        targets.append((_target(args, loaded), args.reorder))
    interrupted = False
    for target, reordered in targets:
        form = make_form(target.problem)  # built once, planned by every planner
        for name in names:
            if interrupted:
                break  # Ctrl-C: the rows finished so far, and the interrupted one's best
            plan, interrupted = _solve_watched(
                target.problem, name, args.time_limit, quiet=args.json, form=form
            )
            faults = validate(target.problem, plan)
            if faults:
                _report_faults(plan, faults)
                failed = True
            records.append(_record(target, plan, args, reorder=reordered))
    if args.json:
        print(json.dumps(records, indent=1))
    else:
        print(_bounds_note(loaded) + _table(loaded, records, args))
    if interrupted:
        print(INTERRUPTED, file=sys.stderr)
        return 130
    return 1 if failed else 0


def _cmd_run(args: argparse.Namespace) -> int:
    from optplan import executor

    loaded = _load(args)
    if loaded.program is None or loaded.memory is None:
        raise InputError("a CSV problem has no program to replay; give a .py or .onnx", file=args.program)
    # The reordered program replays against the original program's reference run.
    target = _target(args, loaded)
    if args.plan:
        plan = read_plan(args.plan, target.problem)
    else:
        plan = _solve(target.problem, args.planner, args.time_limit, quiet=True)
    faults = validate(target.problem, plan)
    for fault in faults:
        print(f"invalid plan: {fault}", file=sys.stderr)
    replay = _replay_program(loaded, args)
    if replay is not loaded:
        assert replay.program is not None and replay.memory is not None
        if getattr(args, "reorder", None):
            raise InputError(
                "--reorder with --dim replays is not supported: the order is chosen at the "
                "bounds; replay at the bounds, or leave out --reorder",
                file=args.program,
            )
        target = replay
        print(f"{args.program}: planned at {_values(loaded.bounds)}, replayed at {_values(replay.bounds)}")
        faults = validate(replay.problem, plan)
        for fault in faults:
            print(f"invalid plan at the replayed size: {fault}", file=sys.stderr)
        loaded = replay
    assert loaded.program is not None and loaded.memory is not None
    inputs = {**executor.make_inputs(loaded.program, seed=args.seed), **loaded.weights}
    if args.inputs:
        given = _read_npz(args.inputs)
        unknown = sorted(set(given) - set(inputs) - _expected_names(args, given))
        if unknown:
            raise InputError(
                f"{', '.join(map(repr, unknown))} is no parameter of the program "
                f"(its parameters: {', '.join(inputs) or 'none'})",
                file=args.inputs,
            )
        inputs.update(given)
    try:
        reference = executor.reference_run(loaded.program, inputs)
    except executor.KernelFailure as error:
        raise error.located(args.program) from None
    except InputError as error:
        # The program is already checked, so what is wrong here is a given input value.
        raise error.located(args.inputs or args.program) from None
    if args.expect:
        mismatch = _expected_outputs(reference.outputs, args)
        if mismatch:
            print(f"{args.program}: {mismatch}")
            return 1
    assert target.program is not None and target.memory is not None
    planned = executor.planned_run(target.program, target.memory, plan, inputs)
    difference = executor.compare(reference, planned)
    if difference is not None:
        print(f"{args.program}: replay differs: {difference}")
        return 1
    tensors = len(target.memory.placements)
    order = f", reordered by {args.reorder}" if args.reorder else ""
    print(
        f"{args.program}: replay bit-for-bit equal to the reference run "
        f"({tensors} planned values in an arena of {plan.arena} bytes, plan by {plan.planner}{order})"
    )
    return 1 if faults else 0


def _replay_program(loaded: Loaded, args: argparse.Namespace) -> Loaded:
    """The program at the sizes `--dim` asks for, when they differ from the planned ones."""
    from optplan.frontends import load_replay

    dims = _dims(args.dim)
    if not dims or all(loaded.bounds.get(n) == v for n, v in dims.items()):
        return loaded
    return load_replay(
        loaded, dims, alignment=args.alignment, plan_outputs=args.plan_outputs, inplace=args.inplace
    )


def _values(values: dict[str, int]) -> str:
    return ", ".join(f"{name}={value}" for name, value in sorted(values.items()))


def _expected_names(args: argparse.Namespace, given: dict[str, np.ndarray]) -> set[str]:
    """The outputs in an --inputs file that is also the --expect file (one .npz with both)."""
    if not args.expect or Path(args.expect).resolve() != Path(args.inputs).resolve():
        return set()
    return {name for name in given if name == "output" or name.startswith("output_")}


def _expected_outputs(outputs: tuple[object, ...], args: argparse.Namespace) -> str | None:
    """Why the reference outputs differ from the expected ones, or None if they agree."""
    expected = _read_npz(args.expect)
    names = ["output"] if "output" in expected else [f"output_{i}" for i in range(len(outputs))]
    if len(names) != len(outputs) or any(n not in expected for n in names):
        raise InputError(
            f"expected {len(outputs)} output(s) named {', '.join(names)}", file=args.expect
        )
    worst = 0.0
    for name, got in zip(names, outputs):
        want = np.asarray(expected[name])
        got = np.asarray(got)
        if want.shape != got.shape:
            return f"{name} has shape {list(got.shape)}, {args.expect} has {list(want.shape)}"
        close = np.isclose(got, want, rtol=args.rtol, atol=args.atol, equal_nan=True)
        if not close.all():
            index = np.unravel_index(int(np.argmin(close)), close.shape)
            return (
                f"{name} differs from {args.expect} at {list(map(int, index))}: "
                f"{got[index]!r} against {want[index]!r} (rtol {args.rtol:g}, atol {args.atol:g})"
            )
        diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
        worst = max(worst, float(diff.max(initial=0.0)))
    print(
        f"{args.program}: outputs match {args.expect} within rtol {args.rtol:g}, "
        f"atol {args.atol:g} (largest difference {worst:.3g})"
    )
    return None


def _cmd_lower(args: argparse.Namespace) -> int:
    from optplan.passes import plan_memory
    from optplan.script import print_program

    _check_output(args.output)
    loaded = _target(args, _load(args))
    if loaded.program is None or loaded.memory is None:
        raise InputError("a CSV problem has no program to lower; give a .py or .onnx", file=args.program)
    plan = _solve(loaded.problem, args.planner, args.time_limit, quiet=True)
    faults = validate(loaded.problem, plan)
    if faults or not plan.status.has_plan:
        _report_faults(plan, faults)
        return 1
    try:
        text = print_program(plan_memory(loaded.program, loaded.memory, plan))
    except ValueError as error:
        raise InputError(f"cannot print the lowered program: {error}", file=args.program) from None
    if args.output:
        _write_text(args.output, text)
        print(f"lowered program written to {args.output}")
    else:
        print(text)
    return 0


def _cmd_show(args: argparse.Namespace) -> int:
    from optplan.report import arena_html, draw_arena

    page = args.html or args.output.lower().endswith(".html")
    _check_output(args.output, (".html",) if page else PICTURES)
    loaded = _target(args, _load(args))
    plan = _solve(loaded.problem, args.planner, args.time_limit, quiet=True)
    faults = validate(loaded.problem, plan)
    if faults or not plan.status.has_plan:
        _report_faults(plan, faults)
        return 1
    title = f"{Path(args.program).name}: {_headline(plan)}"
    if page:
        _write_text(args.output, arena_html(loaded.problem, plan, title=title))
    else:
        draw_arena(loaded.problem, plan, args.output, title=title, labels=args.labels)
    print(f"{args.output}: {_headline(plan)}")
    return 0


def _headline(plan: Plan) -> str:
    return f"{plan.planner} {plan.status.value}, {plan.arena} bytes, lower bound {plan.lower_bound}"


def _cmd_reorder(args: argparse.Namespace) -> int:
    from optplan.passes.reorder import reorder
    from optplan.schedule import Scheduler
    from optplan.script import print_program

    _check_output(args.output)
    loaded = _load(args)
    if loaded.program is None:
        raise InputError("a CSV problem has no operator order to change; give a .py or .onnx", file=args.program)
    scheduler = Scheduler(args.reorder or "auto", time_limit=args.time_limit)
    result = reorder(loaded.program, scheduler, plan_outputs=args.plan_outputs)
    output = args.output or ""
    if output.lower().endswith(".onnx"):
        if not args.program.lower().endswith(".onnx"):
            raise InputError("an .onnx output needs an .onnx model as input", file=args.program)
        from optplan.passes.reorder_onnx import write_reordered_onnx

        write_reordered_onnx(args.program, result.program, output, _dims(args.dim))
    else:
        try:
            text = print_program(result.program)
        except ValueError as error:
            raise InputError(f"cannot print the reordered program: {error}", file=args.program) from None
        if output:
            _write_text(output, text)
        elif not args.json:
            print(text)
    if args.json:
        print(json.dumps(_reorder_record(loaded, result, scheduler.name), indent=1))
    else:
        note = f"{loaded.path}: {_reorder_note(result)}"
        print(note + (f"; written to {output}" if output else ""), file=sys.stdout if output else sys.stderr)
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
            {"ops": len(s.order), "peak_bytes": s.peak_bytes, "bound_bytes": s.bound_bytes, "seconds": round(s.seconds, 4)}
            for s in result.blocks
        ],
        "seconds": round(result.seconds, 4),
    }


def _cmd_check(args: argparse.Namespace) -> int:
    from optplan.check import check_program
    from optplan.script import load as load_script

    try:
        report = check_program(load_script(args.program), path=args.program, seed=args.seed)
    except InputError as error:
        raise error.located(args.program) from None
    if not report.storages:
        raise InputError(
            "no plan in this program (no R.memory.alloc_storage holds a tensor); "
            "'optplan lower' prints one planned",
            file=args.program,
        )
    print(json.dumps(report.as_dict(), indent=1) if args.json else report.summary())
    return 0 if report.valid else 1


def _cmd_fuzz(args: argparse.Namespace) -> int:
    try:
        from optplan.fuzz import Budget, RayCluster, parse_target, run_campaign
    except ImportError as error:
        raise InputError(f"optplan fuzz needs hypothesis: pip install 'optplan[fuzz]' ({error})")
    for name in ("examples", "time", "workers", "time_limit"):
        value = getattr(args, name)
        if value is not None and value <= 0:
            raise InputError(f"--{name.replace('_', '-')} must be positive, got {value:g}")
    spec = parse_target(args.target, args.command, args.time_limit)
    examples = args.examples if args.examples or args.time else 1000
    cluster = RayCluster(args.ray_address) if args.ray or args.ray_address else None
    workers = args.workers or (0 if cluster else 1)
    budget = Budget(examples, args.time, args.seed, workers, args.keep_going)
    outcome = run_campaign(spec, budget, Path(args.out), cluster)
    for found in outcome.found:
        print(
            f"{found.path}: {found.failure} (shrunk to size {found.size}, seed {found.seed}, "
            f"found and shrunk after {found.seconds:.1f} s)"
        )
    print(outcome.summary(spec.kind if spec.kind in ("tvm", "command") else spec.name))
    return 1 if outcome.found else 0


# ---------------------------------------------------------------------------- helpers


def _load(args: argparse.Namespace) -> Loaded:
    # A missing file is `load`'s to report.
    frontend = frontend_of(args.program) if Path(args.program).is_file() else None
    if args.alignment is None:
        args.alignment = frontend.default_alignment if frontend else 64
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
        dims={} if replay_dims else _dims(args.dim),
        bounds=_dims(args.bound, "--bound"),
    )


def _target(args: argparse.Namespace, loaded: Loaded) -> Loaded:
    """`loaded` with its dataflow blocks reordered when `--reorder` asks for it (and made
    in place again, when `--inplace`, since the new order may let more ops run in place)."""
    if not getattr(args, "reorder", None):
        return loaded
    from optplan.analysis.liveness import build_memory
    from optplan.passes.reorder import reorder
    from optplan.schedule import Scheduler

    if loaded.program is None:
        raise InputError("a CSV problem has no operator order to change; give a .py or .onnx", file=args.program)
    result = reorder(
        loaded.program, Scheduler(args.reorder, time_limit=args.time_limit), plan_outputs=args.plan_outputs
    )
    program = result.program
    if args.inplace:
        from optplan.passes import use_inplace_calls

        program = use_inplace_calls(program)
    if not getattr(args, "json", False):
        print(f"{loaded.path}: {_reorder_note(result)}", file=sys.stderr)
    memory = build_memory(program, plan_outputs=args.plan_outputs, alignment=args.alignment)
    return Loaded(loaded.path, memory.problem, program, memory, loaded.weights)


def _reorder_note(result: Reordered) -> str:
    saved = 1 - result.peak_bytes / result.original_peak_bytes if result.original_peak_bytes else 0.0
    proof = "optimal" if result.optimal else f"proven bound {result.bound_bytes}"
    return (
        f"reordered: live-bytes peak {result.original_peak_bytes} -> {result.peak_bytes} bytes "
        f"({saved:.1%} less, {proof}; {len(result.blocks)} dataflow blocks, {result.seconds:.2f} s)"
    )


def _dims(pairs: list[str], flag: str = "--dim") -> dict[str, int]:
    dims: dict[str, int] = {}
    for pair in pairs:
        name, _, value = pair.partition("=")
        if not name or not value.isdigit() or int(value) < 1:
            raise InputError(f"{flag} expects NAME=VALUE with a positive integer, got {pair!r}")
        dims[name] = int(value)
    return dims


def _planner_names(text: str) -> list[str]:
    from optplan.planners import PLANNERS

    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise InputError(f"--planners names no planner; choose from {', '.join(sorted(PLANNERS))}")
    for name in names:
        if name not in PLANNERS:
            raise InputError(f"unknown planner {name!r}; choose from {', '.join(sorted(PLANNERS))}")
    return names


INTERRUPTED = "optplan: interrupted: the best plan found before Ctrl-C is shown (exit status 130)"


def _solve_watched(
    problem: Problem, name: str, time_limit: float, *, quiet: bool, form: Form | None = None
) -> tuple[Plan, bool]:
    """`_solve` where Ctrl-C returns the best plan so far (and says so: True); on a
    terminal, and not `quiet`, one line on stderr shows the planner's progress."""
    from optplan.terminal import run_planner

    def call(watch: Watch) -> Plan:
        return _solve(problem, name, time_limit, quiet=quiet, watch=watch, form=form)

    outcome = run_planner(call, name, show=not quiet and sys.stderr.isatty())
    assert outcome.plan is not None  # a planner that fails raises; a second Ctrl-C too
    return outcome.plan, outcome.interrupted


def _solve(
    problem: Problem,
    name: str,
    time_limit: float,
    *,
    quiet: bool,
    watch: Watch | None = None,
    form: Form | None = None,
) -> Plan:
    from optplan.planners import PLANNERS, get_planner

    if name not in PLANNERS:
        raise InputError(f"unknown planner {name!r}; choose from {', '.join(sorted(PLANNERS))}")
    options = set(getattr(PLANNERS[name], "__dataclass_fields__", {}))
    chosen: dict[str, object] = {"time_limit": time_limit} if "time_limit" in options else {}
    if watch is not None and "watch" in options:
        chosen["watch"] = watch
    planner = get_planner(name, **chosen)
    if not quiet and "time_limit" in options:
        print(f"planning with {name} (time limit {time_limit:g} s)...", file=sys.stderr, flush=True)
    plan = planner(problem) if form is None else planner.plan(form)
    if plan.detail.get("search") == "compiling":
        print(
            "optplan: note: the exact search is being compiled for first use in the background "
            "(10-50 s, once); this plan was made without it",
            file=sys.stderr,
        )
    return plan


def _record(
    loaded: Loaded, plan: Plan, args: argparse.Namespace, *, reorder: str | None = "args"
) -> dict[str, object]:
    return {
        "program": loaded.path,
        "planner": plan.planner,
        "reorder": getattr(args, "reorder", None) if reorder == "args" else reorder,
        "status": plan.status.value,
        "arena_bytes": plan.arena,
        "lower_bound_bytes": plan.lower_bound,
        "bound_bytes": max(plan.bound, plan.lower_bound),
        "gap": round(plan.gap, 6),
        "naive_bytes": loaded.problem.naive_bytes,
        "buffers": len(loaded.problem.buffers),
        "alignment": args.alignment,
        "outputs_planned": bool(args.plan_outputs) and loaded.program is not None,
        "inplace": bool(args.inplace),
        "seconds": round(plan.seconds, 4),
        "offsets": dict(plan.offsets),
        **({"interrupted": True} if plan.detail.get("interrupted") else {}),
        **({"bounds": loaded.bounds, "sized_by": loaded.sized_by} if loaded.bounds else {}),
    }


def _summary(loaded: Loaded, plan: Plan, args: argparse.Namespace) -> str:
    if not plan.status.has_plan:
        return f"{loaded.path}: {plan.planner} found no plan ({plan.status.value})"
    return _bounds_note(loaded) + (
        f"{loaded.path}: {plan.planner} {plan.status.value}: arena {plan.arena} bytes, "
        f"lower bound {plan.lower_bound}, proven bound {max(plan.bound, plan.lower_bound)} "
        f"(gap {plan.gap:.2%}); naive {loaded.problem.naive_bytes}; "
        f"{len(loaded.problem.buffers)} buffers, {_outputs_note(loaded, args)}; {plan.seconds:.2f} s"
    )


def _bounds_note(loaded: Loaded) -> str:
    """One line per symbolic dimension: its bound and the buffers it sizes."""
    lines = []
    for name, value in sorted(loaded.bounds.items()):
        if name not in loaded.sized_by:
            lines.append(f"{name} planned at its bound {value}\n")
            continue
        buffers = loaded.sized_by[name]
        shown = ", ".join(buffers[:8]) + (", ..." if len(buffers) > 8 else "")
        lines.append(f"{name} planned at its bound {value}: sizes {len(buffers)} buffers ({shown})\n")
    return "".join(lines)


def _outputs_note(loaded: Loaded, args: argparse.Namespace) -> str:
    if loaded.program is None:
        return "a bare allocation problem"
    return "function outputs planned" if args.plan_outputs else "function outputs not planned"


def _table(loaded: Loaded, records: list[dict[str, object]], args: argparse.Namespace) -> str:
    """One row per planner; every gap is measured against the same bound, the best any of
    them proved (never below the live-bytes lower bound)."""
    best = max(int(r["bound_bytes"]) for r in records)  # type: ignore[call-overload]
    header = ("planner", "status", "arena bytes", "proven bound", "gap", "vs naive", "seconds")
    rows = [header]
    for r in records:
        naive = int(r["naive_bytes"]) or 1  # type: ignore[call-overload]
        arena = int(r["arena_bytes"])  # type: ignore[call-overload]
        has_plan = r["status"] in ("optimal", "feasible")
        rows.append(
            (
                str(r["planner"]) + (f" (reorder {r['reorder']})" if r.get("reorder") else ""),
                str(r["status"]),
                str(arena) if has_plan else "-",
                str(r["bound_bytes"]),
                f"{(arena - best) / best:.2%}" if has_plan and best else "-",
                f"{arena / naive:.1%}" if has_plan else "-",
                f"{float(r['seconds']):.2f}",  # type: ignore[arg-type]
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lower = records[0]["lower_bound_bytes"]
    title = (
        f"{loaded.path}: {len(loaded.problem.buffers)} buffers, alignment {args.alignment}, "
        f"{_outputs_note(loaded, args)}; lower bound {lower}, gaps against the best proven "
        f"bound {best}"
    )
    lines = [title]
    for row in rows:
        cells = (c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))
        lines.append("  ".join(cells))
    return "\n".join(lines)


def _report_faults(plan: Plan, faults: list) -> None:  # type: ignore[type-arg]
    print(f"optplan: the {plan.planner} plan is invalid:", file=sys.stderr)
    for fault in faults[:20]:
        print(f"  {fault}", file=sys.stderr)


def _write_plan(path: str, problem: Problem, plan: Plan, record: dict[str, object]) -> None:
    text = write_csv(problem, plan.offsets) if path.endswith(".csv") else json.dumps(record, indent=1)
    _write_text(path, text)


PICTURES = (".png", ".svg", ".pdf")


def _check_output(path: str | None, suffixes: tuple[str, ...] = ()) -> None:
    """Refuse an output path that cannot be written, before any work is done."""
    if path is None:
        return
    target = Path(path)
    if suffixes and target.suffix.lower() not in suffixes:
        raise InputError(f"cannot tell the file's format; name it {' or '.join(suffixes)}", file=path)
    if target.is_dir():
        raise InputError("is a directory; give a file name to write", file=path)
    if not target.parent.is_dir():
        raise InputError(f"directory {str(target.parent)!r} does not exist", file=path)


def _write_text(path: str, text: str) -> None:
    """Write through a temporary file, so an interrupted write leaves nothing half-done."""
    target = Path(path)
    partial = target.with_name(target.name + ".partial")
    try:
        partial.write_text(text + ("" if text.endswith("\n") else "\n"))
        partial.replace(target)
    except OSError as error:
        partial.unlink(missing_ok=True)
        raise InputError(f"cannot write: {error.strerror}", file=path) from None


def _read_npz(path: str) -> dict[str, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as data:
            return {name: data[name] for name in data.files}
    except OSError as error:
        raise InputError(f"cannot read: {error.strerror or error}", file=path) from None
    except (ValueError, AttributeError):
        raise InputError("not an .npz archive of arrays (numpy.savez)", file=path) from None
