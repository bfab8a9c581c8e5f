"""`optplan fuzz`: search for inputs on which a planner's plan is wrong."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from optplan.cli.options import Commands
from optplan.errors import InputError


def add(commands: Commands) -> None:
    fuzz = commands.add_parser(
        "fuzz", help="search for inputs on which a planner's plan is wrong, and shrink them"
    )
    fuzz.add_argument(
        "target", nargs="?", help="a planner (greedy, cpsat, ...), module:function, or tvm"
    )
    fuzz.add_argument(
        "--command",
        help='a MiniMalloc-CSV planner: "prog --capacity={capacity} '
        '--input={input} --output={output}"',
    )
    fuzz.add_argument(
        "--memories",
        action="store_true",
        help="draw problems of several memories (capacities, costs, spills and prefetches), "
        "judged on residences, copies and traffic; for a planner or module:function target "
        "returning a Plan",
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


def _cmd_fuzz(args: argparse.Namespace) -> int:
    try:
        from optplan.fuzz import Budget, RayCluster, parse_target, run_campaign
    except ImportError as error:
        raise InputError(f"optplan fuzz needs hypothesis: pip install 'optplan[fuzz]' ({error})")
    for name in ("examples", "time", "workers", "time_limit"):
        value = getattr(args, name)
        if value is not None and value <= 0:
            raise InputError(f"--{name.replace('_', '-')} must be positive, got {value:g}")
    if args.target and ":" in args.target and os.getcwd() not in map(os.path.abspath, sys.path):
        # As `python -m` does, so that `optplan fuzz mymodule:plan` finds ./mymodule.py;
        # last, so that it shadows no installed module (spawned workers inherit it).
        sys.path.append(os.getcwd())
    spec = parse_target(args.target, args.command, args.time_limit, args.memories)
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
