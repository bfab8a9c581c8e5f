"""Every planner's arena and offsets on a fixed corpus: proof that a refactoring of the
planners changed nothing.

    python benchmarks/arenas.py [--time-limit 5] [--out FILE] [--against FILE] [--only FAMILY]

Families: `examples` (examples/*.py), `zoo` (tests/data/zoo/*.onnx), `tvm` (TVM's dumps
in ../shared/data/tvm before planning), `random` (seeded problems with aliases at odd
deltas, alignments, pins, If-like lifetimes and capacities) and `minimalloc` (the 11 hard
instances). Planners: naive, tokens, greedy, cpsat (with `--time-limit` seconds) and, on
the families it can take, `search` (the bare skyline search's `minimise`).

For each (instance, planner): status, arena, proven bound and a digest of the offsets.
Writes benchmarks/results/arenas.csv (or `--out`); with `--against OLD.csv`, prints the
rows whose arena or digest differ from OLD and exits 1 if any do. Runs that end on a
clock (cpsat or search cut by its limit: status `feasible`) may differ between runs of
the same code; the table marks them.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import random
import sys
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from optplan.planners import get_planner, jit
from optplan.planners.search import minimise
from optplan.problem import Alias, Buffer, Interval, Problem, lower_bound, one_arena, read_csv
from optplan.problem.plan import Plan, Status, validate

SHARED = ROOT.parent / "shared" / "data"
RESULTS = ROOT / "benchmarks" / "results" / "arenas.csv"
COLUMNS = ("family", "instance", "planner", "status", "arena", "bound", "digest", "seconds")
PLANNERS = ("naive", "tokens", "greedy", "cpsat", "search")


def corpus(only: str) -> Iterator[tuple[str, str, Problem]]:
    """(family, instance, problem) for every instance of the families asked for."""
    from optplan.frontends import load

    families = {
        "examples": sorted((ROOT / "examples").glob("*.py")),
        "zoo": sorted((ROOT / "tests" / "data" / "zoo").glob("*.onnx")),
        "tvm": sorted((SHARED / "tvm").glob("*.[23]_*.py")),
    }
    for family, paths in families.items():
        if only and family != only:
            continue
        for path in paths:
            yield family, path.name, load(str(path)).problem
    if not only or only == "random":
        for seed in range(150):
            yield "random", f"seed{seed}", random_problem(seed)
    if not only or only == "minimalloc":
        for path in sorted((SHARED / "minimalloc" / "challenging").glob("*.csv")):
            yield "minimalloc", path.name, read_csv(path)


def random_problem(seed: int) -> Problem:
    """A small awkward problem: lifetimes of one or two intervals, alignments, aliases
    (some at deltas off the view's alignment), now and then a pin or a capacity."""
    rng = random.Random(seed)
    buffers = []
    for k in range(rng.randint(1, 12)):
        start = rng.randint(0, 10)
        live = [Interval(start, start + rng.randint(1, 4))]
        if rng.random() < 0.2:
            later = live[0].end + rng.randint(1, 3)
            live.append(Interval(later, later + rng.randint(1, 3)))
        pinned = rng.random() < 0.05
        buffers.append(
            Buffer(
                f"b{k}",
                rng.choice((0, 1, 3, 8, 16, 24, 40, 64)),
                tuple(live),
                alignment=rng.choice((1, 1, 2, 4, 8, 16)),
                offset=rng.choice((0, 16, 64)) if pinned else None,
            )
        )
    aliases = []
    for k in range(1, len(buffers)):
        if rng.random() < 0.15:
            aliases.append(Alias(f"b{rng.randrange(k)}", f"b{k}", rng.choice((0, 0, 4, 6, 16))))
    capacity = rng.choice((None,) * 8 + (64, 128))
    return Problem(tuple(buffers), tuple(aliases), memories=one_arena(capacity))


def digest(plan: Plan) -> str:
    text = ",".join(f"{name}={offset}" for name, offset in sorted(plan.offsets.items()))
    return hashlib.sha1(text.encode()).hexdigest()[:10]


def run_search(problem: Problem, time_limit: float) -> Plan | None:
    """The bare search's `minimise`, where it applies (no pins, no odd residues)."""
    try:
        result = minimise(problem, time_limit=time_limit)
    except ValueError:
        return None
    status = Status.OPTIMAL if result.optimal else Status.FEASIBLE
    if result.offsets is None:
        status = Status.UNKNOWN
    return Plan(
        result.offsets or {},
        result.peak,
        status,
        "search",
        lower_bound(problem),
        bound=result.bound,
    )


def rows(
    family: str, name: str, problem: Problem, time_limit: float
) -> Iterator[dict[str, object]]:
    for planner in PLANNERS:
        started = time.perf_counter()
        if planner == "search":
            if family not in ("random", "minimalloc") or problem.memories[0].capacity is not None:
                continue
            plan = run_search(problem, time_limit)
            if plan is None:
                continue
        elif planner == "cpsat":
            plan = get_planner("cpsat", work=None, time_limit=time_limit)(problem)
        else:
            plan = get_planner(planner)(problem)
        seconds = time.perf_counter() - started
        status = plan.status.value
        if validate(problem, plan):
            status = "INVALID"
        yield {
            "family": family,
            "instance": name,
            "planner": planner,
            "status": status,
            "arena": plan.arena,
            "bound": max(plan.bound, plan.lower_bound),
            "digest": digest(plan),
            "seconds": f"{seconds:.2f}",
        }


def compare(new: list[dict[str, object]], old_path: Path) -> int:
    """Print rows whose arena or offsets differ from `old_path`'s; how many differ."""
    with old_path.open() as handle:
        old = {(r["family"], r["instance"], r["planner"]): r for r in csv.DictReader(handle)}
    differ = 0
    for row in new:
        before = old.get((row["family"], row["instance"], row["planner"]))
        if before is None:
            continue
        same_arena = str(row["arena"]) == before["arena"]
        if same_arena and str(row["digest"]) == before["digest"]:
            continue
        differ += 1
        clock = " (ended on the clock)" if "feasible" in (row["status"], before["status"]) else ""
        print(
            f"{row['family']}/{row['instance']} {row['planner']}: arena {before['arena']} -> "
            f"{row['arena']}, offsets {'same' if row['digest'] == before['digest'] else 'differ'}, "
            f"status {before['status']} -> {row['status']}{clock}"
        )
    print(f"{len(new)} rows, {differ} differ from {old_path.name}")
    return differ


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--time-limit", type=float, default=5.0, help="seconds for cpsat and search"
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--against", type=Path, help="an earlier CSV to compare with")
    parser.add_argument("--only", default="", help="one family")
    args = parser.parse_args(argv)
    jit.warm("optplan.planners.search")  # compile once here, not inside a time limit
    table: list[dict[str, object]] = []
    invalid = 0
    for family, name, problem in corpus(args.only):
        for row in rows(family, name, problem, args.time_limit):
            table.append(row)
            invalid += row["status"] == "INVALID"
            print(
                " ".join(
                    str(row[c]).rjust(w) for c, w in zip(COLUMNS, (10, 34, 7, 10, 9, 9, 11, 7))
                ),
                flush=True,
            )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(table)
    print(f"wrote {args.out}")
    differ = compare(table, args.against) if args.against else 0
    return 1 if invalid or differ else 0


if __name__ == "__main__":
    sys.exit(main())
