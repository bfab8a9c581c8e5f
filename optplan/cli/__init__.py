"""The command line: one module per command, each adding its parser to `main`'s.

    optplan plan PROGRAM [--planner cpsat] [--time-limit S] [--alignment B] [--json] [-o OUT]
    optplan compare PROGRAM [--planners naive,greedy,cpsat] [--json]
    optplan run PROGRAM [--planner cpsat] [--plan FILE] [--inputs FILE.npz]
    optplan lower PROGRAM [--planner cpsat] [-o OUT]
    optplan show PROGRAM [--planner cpsat] -o arena.png
    optplan check PLANNED_PROGRAM
    optplan reorder PROGRAM [--reorder auto] [-o OUT.py]
    optplan fit PROGRAM --capacity SIZE [--memory NAME[=SIZE]] [--levers] [-o OUT.json|OUT.py]
    optplan fuzz TARGET [--examples N | --time S] [--seed S] [--workers N] [--ray | --ray-address ADDR]

`--reorder [auto|program|exact|cpsat|heuristic]` on plan, compare, run, lower and show
first runs each dataflow block in the order that needs the least memory.

Exit status: 0 on success; 1 when a check fails (a plan is invalid, a replay differs);
2 for bad input, printed as one line `file:line:col: what is wrong`.

The options every command takes are in `options`; a new command is a module with an
`add(commands)` that registers its parser and handler, listed in `COMMANDS`.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence

from optplan import __version__
from optplan.cli import check, fit, fuzz, lower, plan, reorder, run
from optplan.cli.options import Parser
from optplan.errors import InputError

COMMANDS = (plan, run, lower, check, reorder, fit, fuzz)


def main(argv: Sequence[str] | None = None) -> int:
    parser = make_parser()
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
    """`optplan` as a program. A reader that closes the pipe (`optplan lower X | head -1`)
    wants no more: the exit is quiet, with 141 (128 + SIGPIPE) as a Unix tool's."""
    try:
        status = main()
        sys.stdout.flush()  # here, so that a closed pipe is seen now and not at shutdown
    except BrokenPipeError:
        # Python's own flush at shutdown would fail again: stdout now goes nowhere.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        status = 128 + signal.SIGPIPE
    sys.exit(status)


def make_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="optplan",
        description="Plan the memory of a tensor program (a TVMScript .py, an ONNX .onnx, a "
        "TFLite .tflite, a MiniMalloc .csv problem, or a node-link .json graph) into one arena "
        "of minimum size, and check the plan.",
    )
    parser.add_argument("--version", action="version", version=f"optplan {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for command in COMMANDS:
        command.add(commands)
    return parser
