"""Operator order: how much memory each scheduler saves, on graphs where order matters.

For every graph (the repository's benchmark graphs in `benchmarks/graphs/`, the models in
`examples/`, the training steps TVM's gradient pass wrote into `tests/data/training/`,
and TVM's high-level dumps in `../shared/data/tvm/highlevel/` when present):

1. the live-bytes peak at program order and at each of Inductor's three orders (LPMF,
   BFS, DFS);
2. `auto` (the exact search, proven optimal where it finishes; windowed re-solves
   beyond) and, up to `--cpsat-ops` ops, the joint CP-SAT model of order and placement;
3. the proven lower bound on the best order's peak;
4. the arena cpsat plans at program order, at the heuristic orders (the least of the
   three) and at the reordered order (alignment 1, so arenas compare with peaks in bytes), and a replay of
   the reordered plan bit for bit against the original program's unplanned run.

    .venv/bin/python benchmarks/reorder.py [--time-limit 30] [--only inception,unet]

Prints a table and writes `benchmarks/results/reorder.csv`.

`--graphs` runs the computation-graph set instead (`graph_set.py`): the peers' graphs
(Checkmate's 14 and MOCCASIN's random layered graphs, from a fetched copy named by
`--peers DIR` or `$OPTPLAN_PEER_GRAPHS`; skipped, saying why, when absent) and our own
random layered graphs of 1,000 and 3,000 ops, each on the default work (60 units, as
`optplan reorder G.json` runs it), into `benchmarks/results/reorder_graphs.csv`.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.graphs import GRAPHS
from optplan.analysis.liveness import build_memory
from optplan.frontends import load
from optplan.ir import Program
from optplan.passes.reorder import Reordered, reorder
from optplan.planners import get_planner, jit
from optplan.problem.plan import validate
from optplan.runtime.replay import compare, make_inputs, planned_run, reference_run
from optplan.schedule import Scheduler

HIGHLEVEL = ROOT.parent / "shared" / "data" / "tvm" / "highlevel"
# Training steps written by TVM's own gradient pass (graphs/relax_training.py).
TRAINING = ROOT / "tests" / "data" / "training"
HEURISTICS = ("lpmf", "bfs", "dfs")
COLUMNS = (
    "graph", "ops", "program", "lpmf", "bfs", "dfs", "cpsat", "reordered", "bound", "optimal",
    "reduction", "arena_program", "arena_heuristic", "arena_reordered", "replay", "seconds",
)  # fmt: skip


def corpus() -> dict[str, Callable[[], Program]]:
    graphs: dict[str, Callable[[], Program]] = dict(GRAPHS)
    for path in sorted((ROOT / "examples").glob("*.py")):
        graphs[path.stem] = lambda path=path: load(str(path)).program
    for path in sorted(TRAINING.glob("*.py")):
        graphs[f"relax/{path.stem}"] = lambda path=path: load(str(path)).program
    if HIGHLEVEL.is_dir():
        for path in sorted(HIGHLEVEL.glob("*.py")):
            graphs[f"tvm/{path.stem}"] = lambda path=path: load(str(path)).program
    else:
        print(f"skipping TVM's models: {HIGHLEVEL} is absent", file=sys.stderr)
    return graphs


def arena(program: Program, time_limit: float) -> int:
    memory = build_memory(program, alignment=1)
    plan = get_planner("cpsat", work=None, time_limit=time_limit)(memory.problem)
    assert validate(memory.problem, plan) == [], "invalid plan"
    return plan.arena


def replays(original: Program, reordered: Program, time_limit: float) -> bool:
    """The reordered program, planned, against the original's unplanned run."""
    memory = build_memory(reordered, alignment=1)
    plan = get_planner("cpsat", work=None, time_limit=time_limit)(memory.problem)
    inputs = make_inputs(original)
    return (
        compare(reference_run(original, inputs), planned_run(reordered, memory, plan, inputs))
        is None
    )


def measure(name: str, program: Program, args: argparse.Namespace) -> dict[str, object]:
    peaks: dict[str, Reordered] = {
        s: reorder(program, Scheduler(s)) for s in ("program", *HEURISTICS)
    }
    began = time.perf_counter()
    best = reorder(program, Scheduler("auto", time_limit=args.time_limit))
    seconds = time.perf_counter() - began
    ops = sum(len(s.order) for s in best.blocks)
    joint = "-"
    if ops <= args.cpsat_ops:
        joint = str(reorder(program, Scheduler("cpsat", time_limit=args.time_limit)).peak_bytes)
    base = best.original_peak_bytes
    return {
        "graph": name,
        "ops": ops,
        "program": base,
        **{h: peaks[h].peak_bytes for h in HEURISTICS},
        "cpsat": joint,
        "reordered": best.peak_bytes,
        "bound": best.bound_bytes,
        "optimal": "yes" if best.optimal else "no",
        "reduction": f"{1 - best.peak_bytes / base:.1%}" if base else "0.0%",
        "arena_program": arena(program, args.time_limit),
        "arena_heuristic": min(arena(peaks[h].program, args.time_limit) for h in HEURISTICS),
        "arena_reordered": arena(best.program, args.time_limit),
        "replay": "equal" if replays(program, best.program, args.time_limit) else "DIFFERS",
        "seconds": f"{seconds:.2f}",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--time-limit", type=float, default=30.0, help="seconds per scheduler and planner"
    )
    parser.add_argument(
        "--cpsat-ops", type=int, default=60, help="run the joint CP-SAT model up to this many ops"
    )
    parser.add_argument("--only", default="", help="comma-separated graph names")
    parser.add_argument("--graphs", action="store_true", help="the computation-graph set instead")
    parser.add_argument(
        "--peers",
        default=os.environ.get("OPTPLAN_PEER_GRAPHS", ""),
        help="folder of the peers' graphs",
    )
    args = parser.parse_args()
    if args.graphs:
        from benchmarks.graph_set import run_graph_set

        run_graph_set(args)
        return
    jit.warm("optplan.schedule.beam")  # compile once here, not inside a time limit
    jit.warm("optplan.planners.search")
    wanted = {n for n in args.only.split(",") if n}
    rows = []
    print("  ".join(COLUMNS))
    for name, make in corpus().items():
        if wanted and name not in wanted:
            continue
        row = measure(name, make(), args)
        rows.append(row)
        print("  ".join(str(row[c]) for c in COLUMNS), flush=True)
    out = ROOT / "benchmarks" / "results" / "reorder.csv"
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    print(f"written {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
