"""MiniMalloc's 11 hard instances: does optplan reach MiniMalloc's peaks?

    python benchmarks/minimalloc.py [--time-limit 60] [--instances A,B] [--planner cpsat]

For each instance: buffers, live-bytes lower bound, MiniMalloc's peak, the greedy
planner's arena, the arena the `cpsat` planner reaches (greedy, then the skyline search,
then CP-SAT; `--planner search` runs the bare search's `minimise` instead), the best bound
it proved, status, seconds. Every plan is checked with
optplan.problem.plan.validate. Writes benchmarks/results/minimalloc.csv. Exits 0 with a message
when the data are absent, 1 when a plan is invalid.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from optplan.planners import get_planner, jit
from optplan.planners.search import minimise
from optplan.problem import lower_bound, read_csv
from optplan.problem.plan import Plan, Status, validate

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
    "planner",
    "arena",
    "proven_bound",
    "status",
    "seconds",
)
WIDTHS = (8, 7, 11, 10, 10, 7, 10, 10, 9, 7)


def run(name: str, path: Path, time_limit: float, planner: str) -> dict[str, object]:
    """One instance: greedy, then `planner` (the cpsat portfolio, or the bare search)."""
    problem = read_csv(path)
    greedy = get_planner("greedy")(problem)
    started = time.perf_counter()
    if planner == "search":
        result = minimise(problem, time_limit=time_limit, upper=CAPACITY)
        status = Status.OPTIMAL if result.optimal else Status.FEASIBLE
        plan = Plan(
            result.offsets or {},
            result.peak,
            status,
            "search",
            lower_bound(problem),
            bound=result.bound,
        )
        if result.offsets is None:
            plan = Plan({}, 0, Status.UNKNOWN, "search", lower_bound(problem), bound=result.bound)
    else:
        plan = get_planner("cpsat", work=None, time_limit=time_limit)(problem)
    seconds = time.perf_counter() - started
    status = plan.status.value
    for candidate in (greedy, plan):
        faults = validate(problem, candidate)
        if faults:
            status = f"INVALID ({candidate.planner}): {faults[0]}"
    return {
        "instance": name,
        "buffers": len(problem.buffers),
        "lower_bound": plan.lower_bound,
        "minimalloc_peak": MINIMALLOC_PEAK.get(name, ""),
        "greedy": greedy.arena,
        "planner": plan.planner,
        "arena": plan.arena if plan.status.has_plan else "",
        "proven_bound": max(plan.bound, plan.lower_bound),
        "status": status,
        "seconds": f"{seconds:.1f}",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-limit", type=float, default=60.0, help="seconds per instance")
    parser.add_argument("--instances", default="", help="comma-separated names, e.g. A,B")
    parser.add_argument("--data", type=Path, default=DATA, help="folder of {A..K}.1048576.csv")
    parser.add_argument(
        "--planner",
        choices=("cpsat", "search"),
        default="cpsat",
        help="the cpsat planner (a portfolio: greedy, search, CP-SAT) or the bare search",
    )
    args = parser.parse_args(argv)
    if not args.data.is_dir():
        print(f"no MiniMalloc instances at {args.data}; nothing to run")
        return 0
    names = [n.strip() for n in args.instances.split(",") if n.strip()] or sorted(MINIMALLOC_PEAK)
    jit.warm("optplan.planners.search")  # compile once here, not inside a time limit
    rows = []
    headers = (
        "instance",
        "buffers",
        "lower bnd",
        "minimalloc",
        "greedy",
        "planner",
        "arena",
        "proven",
        "status",
        "seconds",
    )
    print(" ".join(h.rjust(w) for h, w in zip(headers, WIDTHS)))
    for name in names:
        path = args.data / f"{name}.{CAPACITY}.csv"
        if not path.exists():
            print(f"{name}: no file {path}; skipped")
            continue
        row = run(name, path, args.time_limit, args.planner)
        rows.append(row)
        print(" ".join(str(row[c]).rjust(w) for c, w in zip(COLUMNS, WIDTHS)), flush=True)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    with RESULTS.open("w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {RESULTS.relative_to(ROOT)}")
    return 1 if any(str(row["status"]).startswith("INVALID") for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
