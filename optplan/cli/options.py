"""The options every command shares, and argparse set to report a fault in one line."""

from __future__ import annotations

import argparse
import math
import re
from typing import NoReturn

from optplan.budget import DEFAULT_WORK, GUARD_SECONDS, Budget
from optplan.budget import order_steps as budget_order_steps
from optplan.errors import InputError
from optplan.problem import Memory

# The subcommands' registry argparse hands each command module's `add`.
Commands = argparse._SubParsersAction  # type: ignore[type-arg]

REORDERS = (
    "auto",
    "program",
    "exact",
    "beam",
    "cpsat",
    "heuristic",
    "improve",
    "lpmf",
    "bfs",
    "dfs",
)


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


def positive_work(text: str) -> float:
    try:
        units = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected units of work, got {text!r}") from None
    if not math.isfinite(units) or units <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of units, got {text!r}")
    return units


def budget_of(args: argparse.Namespace) -> Budget:
    """The budget of each planner that searches: `--work`, guarded by `--time-limit`."""
    return Budget(args.work, guard_seconds(args))


def order_steps(args: argparse.Namespace) -> int:
    """`--work` as steps of the order search (`schedule.anytime`)."""
    return budget_order_steps(args.work)


def guard_seconds(args: argparse.Namespace) -> float:
    """`--time-limit` as the guard of a search counted in work."""
    return float(args.time_limit or GUARD_SECONDS)


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text!r}")
    return value


# Units a size may carry; decimal kB and MB are refused, so that no one is off by 2.4 %.
UNITS = {"": 1, "b": 1, "kib": 1024, "mib": 1024**2, "gib": 1024**3}
_SIZE = re.compile(r"\s*([0-9]+)\s*([a-z]*)\s*", re.IGNORECASE)


def parse_bytes(text: str) -> int:
    """A size in bytes: `4096`, `256KiB`, `1 MiB`, `2GiB` (units B, KiB, MiB, GiB, any
    case). Raises argparse.ArgumentTypeError naming the fault, so that it serves as an
    argparse `type` and as a parser of its own."""
    found = _SIZE.fullmatch(text)
    if found is None:
        raise argparse.ArgumentTypeError(
            f"expected a size in bytes such as 4096 or 256KiB, got {text!r}"
        )
    number, unit = found.groups()
    if unit.lower() not in UNITS:
        hint = (
            " (sizes are in powers of 1024: write KiB, MiB or GiB)"
            if unit.lower() in ("k", "kb", "m", "mb", "g", "gb")
            else ""
        )
        raise argparse.ArgumentTypeError(
            f"unknown unit {unit!r} in {text!r}; use B, KiB, MiB or GiB{hint}"
        )
    return int(number) * UNITS[unit.lower()]


def positive_bytes(text: str) -> int:
    """`parse_bytes`, refusing 0: no tensor fits in an arena of no bytes."""
    size = parse_bytes(text)
    if size < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 byte, got {text!r}")
    return size


def parse_memory(text: str) -> Memory:
    """`NAME=SIZE[:cost=C][:alignment=A]`, or `NAME[:cost=C]...` for a memory without
    limit: one `--memory`. Raises argparse.ArgumentTypeError naming the fault."""
    head, *options = text.split(":")
    name, has_size, size = head.partition("=")
    name = name.strip()
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.-]*", name):
        raise argparse.ArgumentTypeError(
            f"expected NAME=SIZE[:cost=C] with a name of letters, digits and _, got {text!r}"
        )
    try:
        capacity = positive_bytes(size) if has_size else None
    except argparse.ArgumentTypeError as error:
        raise argparse.ArgumentTypeError(f"{error} in {text!r}") from None
    settings = {"cost": 1, "alignment": 1}
    for option in options:
        key, _, value = option.partition("=")
        key = key.strip().lower()
        if key not in settings or not value.strip().isdigit():
            raise argparse.ArgumentTypeError(
                f"expected cost=C or alignment=A (whole numbers) after ':', got {option!r} in {text!r}"
            )
        settings[key] = int(value)
    if settings["alignment"] < 1:
        raise argparse.ArgumentTypeError(f"alignment must be at least 1 in {text!r}")
    return Memory(name, capacity, settings["alignment"], settings["cost"])


def memories_of(args: argparse.Namespace) -> tuple[Memory, ...] | None:
    """The memories `--memory` names, in order (None: the one arena of old)."""
    given = getattr(args, "memory", None) or []
    if not given:
        return None
    names = [m.name for m in given]
    for name in names:
        if names.count(name) > 1:
            raise InputError(f"--memory names {name!r} twice")
    return tuple(given)


def add_input(parser: argparse.ArgumentParser, *, json: bool = True, memory: bool = True) -> None:
    parser.add_argument(
        "program",
        help="a TVMScript .py, an ONNX .onnx, a .tflite, a MiniMalloc .csv or a node-link graph .json",
    )
    parser.add_argument(
        "--alignment",
        type=positive_int,
        help="byte alignment of every offset (default: 64 for programs, as TVM's and TFLite's "
        "CPU runtimes; 1 for a .csv problem, whose sizes are exact byte counts)",
    )
    parser.add_argument(
        "--work",
        type=positive_work,
        default=DEFAULT_WORK,
        metavar="UNITS",
        help="effort of each search (about a second of one core a unit, default "
        f"{DEFAULT_WORK:g}), counted in work rather than seconds: the same input gives the "
        "same plan on any machine",
    )
    parser.add_argument(
        "--time-limit",
        type=positive_seconds,
        metavar="SECONDS",
        help="an outer guard in seconds on each search; a plan it cut says so and may differ "
        f"from run to run (default {GUARD_SECONDS:g})",
    )
    parser.add_argument(
        "--plan-outputs", action="store_true", help="also plan the function's outputs"
    )
    _add_dims(parser)
    parser.add_argument(
        "--inplace",
        action="store_true",
        help="first let elementwise ops write over inputs that die there (DataflowUseInplaceCalls)",
    )
    if json:
        parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument(
        "--capacity",
        type=positive_bytes,
        metavar="BYTES",
        help="the arena may hold at most this many bytes (KiB, MiB accepted)",
    )
    if memory:
        parser.add_argument(
            "--memory",
            action="append",
            type=parse_memory,
            metavar="NAME=SIZE[:cost=C][:alignment=A]",
            help="a memory the tensors may live in, fastest first (repeatable): a size in bytes, "
            "KiB, MiB or GiB, or none for no limit (NAME:cost=C); cost per byte accessed, "
            "default 1; alignment of every offset in it, default 1. With several, plans say "
            "where each tensor is at every point and what it copies between them, for the "
            "least traffic",
        )
    _add_order(parser)


def _add_dims(parser: argparse.ArgumentParser) -> None:
    """`--dim` and `--bound`: symbolic dimensions, as read and as planned."""
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


def _add_order(parser: argparse.ArgumentParser) -> None:
    """`--reorder` and the work budget of its search."""
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
