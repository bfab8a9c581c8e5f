"""Does cpsat keep its time limit? Wall seconds against `--time-limit` on hard instances.

    python benchmarks/time_limits.py [--limits 1,5] [--instances A,J] [--data DIR ...]

The promise: a plan within the limit plus 10 % or 0.2 s, whichever is larger, on any
instance, whatever the search or CP-SAT are doing when the clock runs out. For each
instance and limit: buffers, the limit, the wall seconds of the whole planner call, the
overrun, whether the promise held, and the arena. The search is compiled first, so no
row pays numba's one-time compile. Every plan is checked with optplan.problem.plan.validate.
Writes benchmarks/results/time_limits.csv. Exits 0 with a message when no data is there.
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
from optplan.problem import read_csv
from optplan.problem.plan import validate

SHARED = ROOT.parent / "shared" / "data"
DATA = [SHARED / "minimalloc" / "challenging", SHARED / "idealloc"]
RESULTS = ROOT / "benchmarks" / "results" / "time_limits.csv"
COLUMNS = ("instance", "buffers", "limit_s", "wall_s", "over_s", "kept", "arena", "status")


def allowance(limit: float) -> float:
    """How far past the limit a plan may come: 10 % or 0.2 s, whichever is larger."""
    return max(0.1 * limit, 0.2)


def run(path: Path, limit: float) -> dict[str, object]:
    problem = read_csv(path)
    started = time.perf_counter()
    plan = get_planner("cpsat", work=None, time_limit=limit)(problem)
    wall = time.perf_counter() - started
    if validate(problem, plan):
        raise SystemExit(f"{path.name}: the cpsat plan is invalid")
    over = max(wall - limit, 0.0)
    return {
        "instance": path.stem.split(".")[0],
        "buffers": len(problem.buffers),
        "limit_s": limit,
        "wall_s": round(wall, 2),
        "over_s": round(over, 2),
        "kept": "yes" if over <= allowance(limit) else "NO",
        "arena": plan.arena,
        "status": plan.status.value,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limits", default="1,5", help="comma-separated seconds (default 1,5)")
    parser.add_argument("--instances", default="", help="comma-separated names, e.g. A,J,S_1")
    parser.add_argument("--data", type=Path, action="append", help="folders of .csv instances")
    args = parser.parse_args(argv)
    folders = [d for d in (args.data or DATA) if d.is_dir()]
    if not folders:
        print("no instances found (the shared data is absent); nothing to run")
        return 0
    wanted = {n.strip() for n in args.instances.split(",") if n.strip()}
    paths = sorted(
        p for d in folders for p in d.glob("*.csv") if not wanted or p.stem.split(".")[0] in wanted
    )
    limits = [float(x) for x in args.limits.split(",")]
    jit.warm("optplan.planners.search")  # compile once here, not inside a limit
    rows = []
    print("  ".join(COLUMNS))
    for path in paths:
        for limit in limits:
            row = run(path, limit)
            rows.append(row)
            print("  ".join(str(row[c]) for c in COLUMNS), flush=True)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    with RESULTS.open("w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    kept = sum(row["kept"] == "yes" for row in rows)
    print(f"limit kept in {kept} of {len(rows)} runs; written to {RESULTS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
