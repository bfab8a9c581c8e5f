"""`optplan check`: extract, validate and replay the plan of a planned program."""

from __future__ import annotations

import argparse
import json

from optplan.cli.options import Commands
from optplan.errors import InputError


def _cmd_check(args: argparse.Namespace) -> int:
    from optplan.frontends.script import load as load_script
    from optplan.runtime.check import check_program

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


def add(commands: Commands) -> None:
    check = commands.add_parser(
        "check", help="extract, validate and replay the plan of an already planned program"
    )
    check.add_argument("program", help="a planned TVMScript .py (alloc_storage, alloc_tensor)")
    check.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default: 0)")
    check.add_argument("--json", action="store_true", help="print JSON instead of text")
    check.set_defaults(handler=_cmd_check)
