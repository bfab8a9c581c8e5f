"""How far the packing of a recomputation schedule lies above its live bytes: what stops
MOCCASIN's layered graphs at 50 % (docs/remat.md, "Fourth round").

For each case (a graph of MOCCASIN's and a share of its program order's peak, the
budget): the order search's best order, the peak heuristic's schedule met at the budget
from it (its cheapest rank where that meets it, else the tabu rank), recreated with the
local ruin (`recreate.LOCAL`) for `--recreate` units of work; then its instances packed
by greedy (every order and fit), `tries.descend` from greedy's plan (`--moves`) and
the cpsat planner (`--cpsat`, units of work each). The bound is the schedule's live
bytes at its peak (no packing is lower); gap = (arena - bound) / arena. Every step stops
on work, so the arenas are the same on any machine (the seconds are one loaded run's).
Its CP-SAT rows ran on seconds until the skyline search counted a node by its part's
size (`budget.node_work`) and CP-SAT's presolve merge was bounded (`budget.MERGE_WORK`):
before those, 20 units on these 1,000-2,000 rectangles ran for more than ten minutes.

    .venv/bin/python benchmarks/remat_packing.py --graphs DIR [--cases n1000:0.5,n500:0.5]
        [--recreate 6] [--moves 3000] [--cpsat 20,60]
        [--out benchmarks/results/remat_packing.csv]

DIR holds MOCCASIN's graphs (its `data/` folder, or $OPTPLAN_PEER_GRAPHS); without it
the run stops, saying why.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.remat import in_order, write
from optplan.budget import Budget, now, running
from optplan.planners import get_planner
from optplan.planners.greedy.tries import descend
from optplan.problem import Problem, one_arena
from optplan.problem.plan import Plan
from optplan.schedule import Scheduler
from optplan.schedule.graph import Graph, peak_bytes, problem_of
from optplan.schedule.remat import Remat
from optplan.schedule.remat.heuristic import (
    RANKS,
    TABU,
    extra_cost,
    greedy,
    profile_of,
    total_cost,
)
from optplan.schedule.remat.recreate import recreate

COLUMNS = (
    "instance", "planner", "arena", "bound", "gap_pct", "seconds", "share", "budget",
    "extra_pct", "instances",
)  # fmt: skip
GUARD = 3_000.0  # seconds: only an outer guard, the work ends every step


def schedule(graph: Graph, budget: int, units: float) -> tuple[tuple[int, ...], str]:
    """The schedule met at the budget, recreated with the local ruin, and its rank."""
    order = Scheduler("auto", time_limit=GUARD, work=Remat(budget).order_work)(graph).order
    allowed = [True] * graph.ops
    for rank in (RANKS[0], TABU):
        met = greedy(graph, order, budget, allowed, now() + GUARD, rank)
        if met is not None:
            return recreate(graph, met, budget, allowed, now() + units, local=True), rank
    raise SystemExit(f"remat_packing.py: no rank meets {budget} bytes in live bytes")


def packings(problem: Problem, moves: int, cpsat: list[float]) -> list[tuple[str, Plan, float]]:
    """Each packer's plan of `problem` (its capacity the room) and its wall seconds."""
    whole = Problem(problem.buffers)
    found = [_timed("greedy", lambda: get_planner("greedy")(whole))]
    first = found[0][1]
    found.append(
        _timed(f"descend {moves} moves", lambda: descend(problem, first, now() + GUARD, work=moves))
    )
    for units in cpsat:
        cpsat_plan = partial(get_planner("cpsat", work=units, time_limit=GUARD), whole)
        found.append(_timed(f"cpsat {units:g} units", cpsat_plan))
    return found


def _timed(name: str, run: Callable[[], Plan]) -> tuple[str, Plan, float]:
    began = time.perf_counter()
    plan = run()
    return name, plan, time.perf_counter() - began


def rows(path: Path, share: float, args: argparse.Namespace) -> list[dict[str, object]]:
    graph, _ = in_order(path)
    budget = math.ceil(peak_bytes(graph, tuple(range(graph.ops))) * share)
    with running(Budget(1e9, GUARD).clock()):
        steps, rank = schedule(graph, budget, args.recreate)
        live = int(profile_of(graph, steps).max(initial=0)) - graph.base_bytes
        buffers = problem_of(graph, steps, 1).buffers
        problem = Problem(buffers, memories=one_arena(budget - graph.base_bytes))
        extra = 100 * extra_cost(graph, steps) / total_cost(graph)
        found = packings(problem, args.moves, args.cpsat)
    name = f"{path.stem.split('_w')[0]} @ {share:g} ({rank})"
    return [
        {
            "instance": name,
            "planner": planner,
            "arena": plan.arena if plan.status.has_plan else "",
            "bound": live,
            "gap_pct": f"{100 * (plan.arena - live) / plan.arena:.2f}" if plan.arena else "",
            "seconds": f"{seconds:.1f}",
            "share": share,
            "budget": budget,
            "extra_pct": f"{extra:.2f}",
            "instances": len(problem.buffers),
        }
        for planner, plan, seconds in found
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--graphs", default=os.environ.get("OPTPLAN_PEER_GRAPHS", ""))
    parser.add_argument("--cases", default="n1000:0.5,n500:0.5", help="graph part:share, ...")
    parser.add_argument("--recreate", type=float, default=6.0, help="units of the local ruin")
    parser.add_argument("--moves", type=int, default=3_000, help="tries.descend's moves")
    parser.add_argument("--cpsat", default="20,60", help="the cpsat planner's units of work, each")
    parser.add_argument("--out", default=str(ROOT / "benchmarks/results/remat_packing.csv"))
    args = parser.parse_args()
    args.cpsat = [float(units) for units in args.cpsat.split(",") if units]
    folder = Path(args.graphs)
    if not args.graphs or not folder.is_dir():
        parser.exit(2, "remat_packing.py: give --graphs DIR (MOCCASIN's data/ folder)\n")
    table: list[dict[str, object]] = []
    for case in args.cases.split(","):
        part, share = case.split(":")
        paths = sorted(p for p in folder.glob("*.json") if f"_{part}_" in p.name)
        if not paths:
            parser.exit(2, f"remat_packing.py: no graph named *_{part}_* in {folder}\n")
        for row in rows(paths[0], float(share), args):
            print(" | ".join(str(row[column]) for column in COLUMNS), flush=True)
            table.append(row)
    write(table, args.out, COLUMNS)


if __name__ == "__main__":
    main()
