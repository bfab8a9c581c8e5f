"""`optplan plan` and `optplan compare`: plan with one planner, or tabulate several."""

from __future__ import annotations

import argparse
import json
import sys

from optplan.cli.budget import does_not_fit, with_capacity
from optplan.cli.files import check_output, check_tflite_output, write_plan
from optplan.cli.inputs import load_input, planner_names, reorder_target
from optplan.cli.options import Commands, add_input, budget_of
from optplan.cli.records import bounds_note, plan_record, reasons, summary, table
from optplan.cli.solving import INTERRUPTED, report_faults, solve_watched
from optplan.cli.terminal import say
from optplan.frontends import Loaded
from optplan.problem.core import Objective
from optplan.problem.plan import validate

# The planners compared by default, by what the problem's plans are judged by
# (`Problem.objective`): judged by traffic, tokens is naive again (all in the dearest
# memory), and spill, greedy on one arena, joins.
COMPARED: dict[Objective, str] = {
    "arena": "naive,tokens,greedy,cpsat",
    "traffic": "naive,greedy,spill,cpsat",
}


def add(commands: Commands) -> None:
    plan = commands.add_parser("plan", help="plan one program and print or write the plan")
    add_input(plan)
    plan.add_argument("--planner", default="cpsat", help="planner to use (default: cpsat)")
    plan.add_argument(
        "-o",
        "--output",
        help="write the plan here (.json; .csv for MiniMalloc; .tflite: the model with "
        "the plan as its offline plan)",
    )
    plan.set_defaults(handler=_cmd_plan)
    compare = commands.add_parser("compare", help="run several planners and tabulate them")
    add_input(compare)
    compare.add_argument(
        "--planners",
        help=f"comma-separated (default: {COMPARED['arena']}; with several memories "
        f"{COMPARED['traffic']})",
    )
    compare.set_defaults(handler=_cmd_compare)


def _cmd_plan(args: argparse.Namespace) -> int:
    check_output(args.output)
    check_tflite_output(args.output, args.program, args.alignment, args.reorder)
    loaded = with_capacity(args, reorder_target(args, load_input(args)))
    line = does_not_fit(args, loaded)
    if line:
        print(
            json.dumps({"program": loaded.path, "status": "infeasible", "reason": line})
            if args.json
            else line
        )
        return 1
    plan, interrupted = solve_watched(
        loaded.problem, args.planner, budget_of(args), quiet=args.json
    )
    faults = validate(loaded.problem, plan)
    if faults:
        report_faults(plan, faults)
        return 1
    record = plan_record(loaded, plan, args)
    if args.output:
        write_plan(args.output, loaded, plan, record)
    if args.json:
        say(json.dumps(record, indent=1))
    else:
        say(summary(loaded, plan, args))
        if args.output:
            print(f"plan written to {args.output}")
    if interrupted:
        print(INTERRUPTED, file=sys.stderr)
        return 130
    return 0 if plan.status.has_plan else 1


def _cmd_compare(args: argparse.Namespace) -> int:
    from optplan.planners.common import make_form

    loaded = load_input(args)
    names = planner_names(args.planners or COMPARED[loaded.problem.objective])
    records, failed = [], False
    targets = [(loaded, None)]
    if args.reorder:
        targets.append((reorder_target(args, loaded), args.reorder))
    interrupted = False
    for target, reordered in targets:
        target = with_capacity(args, target)
        line = does_not_fit(args, target)
        if line:
            print(line, file=sys.stderr)
            failed = True
            records.extend(_refused(target, reordered, names, line))
            continue
        form = make_form(target.problem)  # built once, planned by every planner
        for name in names:
            if interrupted:
                break  # Ctrl-C: the rows finished so far, and the interrupted one's best
            plan, interrupted = solve_watched(
                target.problem, name, budget_of(args), quiet=args.json, form=form
            )
            faults = validate(target.problem, plan)
            if faults:
                report_faults(plan, faults)
                failed = True
            records.append(plan_record(target, plan, args, reorder=reordered))
    if args.json:
        say(json.dumps(records, indent=1))
    elif planned := [r for r in records if "arena_bytes" in r]:  # refused rows: on stderr
        say(bounds_note(loaded) + table(loaded, planned, args) + reasons(planned))
    if interrupted:
        print(INTERRUPTED, file=sys.stderr)
        return 130
    return 1 if failed else 0


def _refused(
    target: Loaded, reordered: str | None, names: list[str], line: str
) -> list[dict[str, object]]:
    """One row per planner when the order's live bytes exceed `--capacity`: none can fit."""
    return [
        {
            "program": target.path,
            "planner": name,
            "reorder": reordered,
            "status": "infeasible",
            "reason": line,
        }
        for name in names
    ]
