"""MiniMalloc's 11 hard instances: how close does optplan's skyline search get?

    python benchmarks/minimalloc.py [--time-limit 60] [--instances A,B] [--data DIR]

For each instance: buffers, live-bytes lower bound, MiniMalloc's peak, the greedy
planner's arena (when optplan has one), the peak the search reaches (`minimise`, lower
bound first), the best bound it proved, status, seconds. Every plan is checked with
optplan.plan.validate. Writes benchmarks/results/minimalloc.csv. Exits 0 with a message
when the data are absent, 1 when a plan is invalid.
"""

from __future__ import annotations

import argparse
import csv
import importlib
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from optplan.plan import Plan, Status, validate
from optplan.planners.search import minimise
from optplan.problem import Problem, lower_bound, read_csv

DATA = ROOT.parent / "shared" / "data" / "minimalloc" / "challenging"
RESULTS = ROOT / "benchmarks" / "results" / "minimalloc.csv"
CAPACITY = 1048576

# The peaks MiniMalloc reaches (release build, 2-core machine, 60 s each), from the table
# "Capacity / peak: what was published, and what we measured" in
# shared/data/minimalloc/README.md: the lower bound on all but D and J.
MINIMALLOC_PEAK = {
    "A": 1048576,
    "B": 1048576,
    "C": 1039360,
    "D": 1045504,
    "E": 1048576,
    "F": 1048576,
    "G": 1048576,
    "H": 1048576,
    "I": 1048576,
    "J": 1048576,
    "K": 1048576,
}

COLUMNS = (
    "instance",
    "buffers",
    "lower_bound",
    "minimalloc_peak",
    "greedy",
    "search_peak",
    "proven_bound",
    "status",
    "seconds",
)


def greedy_arena(problem: Problem) -> int | None:
    """The greedy planner's arena, when optplan has a greedy planner."""
    try:
        module = importlib.import_module("optplan.planners.greedy")
    except ImportError:
        return None
    plan = module.plan_greedy(problem)
    return plan.arena if plan.status.has_plan else None


def run(name: str, path: Path, time_limit: float) -> dict[str, object]:
    problem = read_csv(path)
    bound = lower_bound(problem)
    greedy = greedy_arena(problem)
    started = time.perf_counter()
    result = minimise(problem, time_limit=time_limit, upper=CAPACITY)
    seconds = time.perf_counter() - started
    if result.offsets is None:
        status = "unknown"
    else:
        status = "optimal" if result.optimal else "feasible"
        plan = Plan(result.offsets, result.peak, Status.FEASIBLE, "search", bound)
        faults = validate(problem, plan)
        if faults:
            status = f"INVALID: {faults[0]}"
    return {
        "instance": name,
        "buffers": len(problem.buffers),
        "lower_bound": bound,
        "minimalloc_peak": MINIMALLOC_PEAK.get(name, ""),
        "greedy": "" if greedy is None else greedy,
        "search_peak": result.peak if result.offsets is not None else "",
        "proven_bound": result.bound,
        "status": status,
        "seconds": f"{seconds:.1f}",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-limit", type=float, default=60.0, help="seconds per instance")
    parser.add_argument("--instances", default="", help="comma-separated names, e.g. A,B")
    parser.add_argument("--data", type=Path, default=DATA, help="folder of {A..K}.1048576.csv")
    args = parser.parse_args(argv)
    if not args.data.is_dir():
        print(f"no MiniMalloc instances at {args.data}; nothing to run")
        return 0
    names = [n.strip() for n in args.instances.split(",") if n.strip()] or sorted(MINIMALLOC_PEAK)
    rows = []
    widths = (8, 7, 11, 10, 10, 10, 10, 9, 7)
    print(
        " ".join(
            c[:w].rjust(w)
            for c, w in zip(
                (
                    "instance",
                    "buffers",
                    "lower bnd",
                    "minimalloc",
                    "greedy",
                    "search",
                    "proven",
                    "status",
                    "seconds",
                ),
                widths,
            )
        )
    )
    for name in names:
        path = args.data / f"{name}.{CAPACITY}.csv"
        if not path.exists():
            print(f"{name}: no file {path}; skipped")
            continue
        row = run(name, path, args.time_limit)
        rows.append(row)
        print(" ".join(str(row[c]).rjust(w) for c, w in zip(COLUMNS, widths)), flush=True)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    with RESULTS.open("w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {RESULTS.relative_to(ROOT)}")
    return 1 if any(str(row["status"]).startswith("INVALID") for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
