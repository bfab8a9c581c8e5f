"""`optplan lower` and `optplan show`: the program lowered onto a plan, and the arena
as a picture.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from optplan.cli.budget import does_not_fit, with_capacity
from optplan.cli.files import PICTURES, check_output, write_text
from optplan.cli.inputs import load_input, reorder_target
from optplan.cli.options import Commands, add_input, budget_of
from optplan.cli.records import headline
from optplan.cli.solving import report_faults, solve
from optplan.errors import InputError
from optplan.problem.plan import validate


def _cmd_lower(args: argparse.Namespace) -> int:
    from optplan.frontends.script import print_program
    from optplan.passes import plan_memory

    check_output(args.output)
    loaded = with_capacity(args, reorder_target(args, load_input(args)))
    if (line := does_not_fit(args, loaded)) is not None:
        print(line)
        return 1
    if loaded.program is None or loaded.memory is None:
        raise InputError(
            "a CSV problem has no program to lower; give a .py or .onnx", file=args.program
        )
    plan = solve(loaded.problem, args.planner, budget_of(args), quiet=True)
    faults = validate(loaded.problem, plan)
    if faults or not plan.status.has_plan:
        report_faults(plan, faults)
        return 1
    try:
        text = print_program(plan_memory(loaded.program, loaded.memory, plan))
    except ValueError as error:
        raise InputError(f"cannot print the lowered program: {error}", file=args.program) from None
    if args.output:
        write_text(args.output, text)
        print(f"lowered program written to {args.output}")
    else:
        print(text)
    return 0


def add(commands: Commands) -> None:
    lower = commands.add_parser(
        "lower", help="print the program lowered onto a plan (alloc_storage, alloc_tensor, kills)"
    )
    add_input(lower, json=False)
    lower.add_argument("--planner", default="cpsat", help="planner to use (default: cpsat)")
    lower.add_argument("-o", "--output", help="write the lowered TVMScript here")
    lower.set_defaults(handler=_cmd_lower)
    show = commands.add_parser("show", help="draw the planned arena as a picture")
    add_input(show, json=False)
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


def _cmd_show(args: argparse.Namespace) -> int:
    from optplan.cli.picture import arena_html, draw_arena

    page = args.html or args.output.lower().endswith(".html")
    check_output(args.output, (".html",) if args.html else (*PICTURES, ".html"))
    loaded = with_capacity(args, reorder_target(args, load_input(args)))
    if (line := does_not_fit(args, loaded)) is not None:
        print(line)
        return 1
    plan = solve(loaded.problem, args.planner, budget_of(args), quiet=True)
    faults = validate(loaded.problem, plan)
    if faults or not plan.status.has_plan:
        report_faults(plan, faults)
        return 1
    title = f"{Path(args.program).name}: {headline(plan)}"
    if page:
        write_text(args.output, arena_html(loaded.problem, plan, title=title))
    else:
        draw_arena(loaded.problem, plan, args.output, title=title, labels=args.labels)
    print(f"{args.output}: {headline(plan)}")
    return 0
