"""The options every command shares, and argparse set to report a fault in one line."""

from __future__ import annotations

import argparse
import math
from typing import NoReturn

from optplan.errors import InputError

# The subcommands' registry argparse hands each command module's `add`.
Commands = argparse._SubParsersAction  # type: ignore[type-arg]

REORDERS = ("auto", "program", "exact", "cpsat", "heuristic", "improve", "lpmf", "bfs", "dfs")


class Parser(argparse.ArgumentParser):
    """argparse, with a usage fault reported as one line and exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see '{self.prog} --help')\n")


def positive_seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not math.isfinite(seconds) or seconds <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text!r}")
    return seconds


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text!r}")
    return value


_UNITS = {"": 1, "b": 1, "kib": 1024, "mib": 1024**2, "gib": 1024**3}


def parse_bytes(text: str) -> int:
    """A size in bytes: `1048576`, `64KiB`, `1.5 MiB` (B, KiB, MiB, GiB; a whole number
    of bytes)."""
    number = text.strip().rstrip("BbIiKkMmGg ")
    unit = text.strip()[len(number) :].strip().lower()
    try:
        value = float(number) * _UNITS[unit]
    except (ValueError, KeyError):
        raise argparse.ArgumentTypeError(f"expected bytes (e.g. 1048576, 64KiB, 1.5MiB), got {text!r}") from None
    if not math.isfinite(value) or value < 0 or value != int(value):
        raise argparse.ArgumentTypeError(f"must be a whole, non-negative number of bytes, got {text!r}")
    return int(value)


def add_input(parser: argparse.ArgumentParser, *, json: bool = True) -> None:
    parser.add_argument("program", help="a TVMScript .py, an ONNX .onnx or a MiniMalloc .csv")
    parser.add_argument(
        "--alignment",
        type=positive_int,
        help="byte alignment of every offset (default: 64 for programs, as TVM's and TFLite's "
        "CPU runtimes; 1 for a .csv problem, whose sizes are exact byte counts)",
    )
    parser.add_argument(
        "--time-limit",
        type=positive_seconds,
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
        "--capacity",
        type=parse_bytes,
        metavar="BYTES",
        help="the arena may hold at most this many bytes (KiB, MiB accepted)",
    )
    parser.add_argument(
        "--reorder",
        nargs="?",
        const="auto",
        choices=REORDERS,
        help="first reorder each dataflow block for the least memory (default scheduler: auto)",
    )


def parse_dims(pairs: list[str], flag: str = "--dim") -> dict[str, int]:
    dims: dict[str, int] = {}
    for pair in pairs:
        name, _, value = pair.partition("=")
        if not name or not value.isdigit() or int(value) < 1:
            raise InputError(f"{flag} expects NAME=VALUE with a positive integer, got {pair!r}")
        dims[name] = int(value)
    return dims
