"""Real traces of 1,000 to 1,000,000 buffers: idealloc's suite, MiniMalloc's 11, generated.

    python benchmarks/idealloc.py [--time-limit 60] [--sets idealloc,minimalloc,generated]
                                  [--instances S_1,Y_1] [--stages 10000,100000,1000000]
                                  [--tables plans,orders,stages]

Steps:
1. Instances: every CSV in `../shared/data/idealloc/` (real traces from idealloc's
   benchmark suite), MiniMalloc's 11 hard instances, and generated ones of 1,000,000
   buffers (`generate`: seeded, about 100 buffers live at once, sizes up to 1 MiB).
   Alignment 1, as the peers' figures are.
2. For each: `greedy` and `cpsat` (`--time-limit` seconds), both checked with
   `optplan.problem.plan.validate`; the peers' arenas from the data READMEs beside them (idealloc
   default and with 30-40 s of tries; MiniMalloc), every arena as % over the live-bytes
   lower bound.
3. An order table (`order_row`): every greedy order with every fit alone, on every
   instance but the generated one, as % over the bound, and which run wins: which
   orders win on which traces (greedy itself makes only a few of them on large parts).
4. A stage table: read, lower bound, split, greedy, validate and write, timed on
   generated instances of each `--stages` size, to show how each grows; then `optplan
   plan --planner greedy -o plan.csv` on the same file in a new process, end to end, with
   its wall and CPU seconds and peak memory from `/usr/bin/time -v`.
5. The tables asked for (`--tables`) are printed and written to
   `benchmarks/results/idealloc.csv`, `idealloc_orders.csv` (both updated by instance,
   so a run on a few instances keeps the others' rows) and `idealloc_stages.csv`.
   Exit 1 when a plan is invalid.

Times are wall seconds of one run on a shared 2-core machine: read the ratios.
"""

from __future__ import annotations

import argparse
import csv
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from optplan.planners import get_planner, jit
from optplan.planners.common import make_form, split_columns
from optplan.planners.greedy import FITS, ORDERS
from optplan.planners.greedy.kernel import Compiled
from optplan.problem import Problem, columns_of, lower_bound, read_csv, write_csv
from optplan.problem.plan import Plan, validate

DATA = ROOT.parent / "shared" / "data"
RESULTS = ROOT / "benchmarks" / "results"

# Peers' arenas, from ../shared/data/idealloc/README.md (None: no answer) and, for
# MiniMalloc's own instances, ../shared/data/minimalloc/README.md.
IDEALLOC = {  # instance: (idealloc default, idealloc with tries, MiniMalloc)
    "G_1": (3039277202, 3034335573, 3030937746),
    "S_1": (1542556726, 1515710388, None),
    "Y_1": (499031546849, None, None),
    "pangu_2.6B": (5714911295, 5654470719, None),
    "resnet50": (1525214892, 1517706884, 1515472556),
}
MINIMALLOC_PEAK = {name: 1048576 for name in "ABEFGHIJK"} | {"C": 1039360, "D": 1045504}

COLUMNS = (
    "instance",
    "buffers",
    "lower_bound",
    "greedy",
    "greedy_pct",
    "greedy_s",
    "cpsat",
    "cpsat_pct",
    "bound",
    "status",
    "cpsat_s",
    "idealloc",
    "idealloc_pct",
    "idealloc_tries",
    "tries_pct",
    "minimalloc",
    "minimalloc_pct",
)
STAGES = ("read", "lower_bound", "split", "greedy", "validate", "write")
END_TO_END = ("cli_s", "cli_cpu_s", "cli_mb", "cli_exit")


def generate(buffers: int, seed: int = 0) -> str:
    """A CSV of `buffers` buffers, about 100 live at once: buffer k starts near point k
    and lives 1-199 points; sizes 1 B to 1 MiB."""
    rng = np.random.default_rng(seed)
    start = np.arange(buffers) + rng.integers(0, 50, buffers)
    end = start + rng.integers(1, 200, buffers)
    size = rng.integers(1, 1 << 20, buffers)
    rows = "".join(
        f"{k},{s},{e},{z}\n"
        for k, s, e, z in zip(range(buffers), start.tolist(), end.tolist(), size.tolist())
    )
    return "id,lower,upper,size\n" + rows


def percent(arena: int | None, bound: int) -> str:
    return "" if arena is None or not bound else f"{100 * (arena - bound) / bound:.3f}"


def timed(planner: str, problem: Problem, time_limit: float) -> tuple[Plan, float, str]:
    """A plan, its wall seconds, and its status (INVALID with the first fault)."""
    started = time.perf_counter()
    options = {"time_limit": time_limit, "work": None} if planner == "cpsat" else {}
    plan = get_planner(planner, **options)(problem)
    seconds = time.perf_counter() - started
    faults = validate(problem, plan) if plan.status.has_plan else []
    status = f"INVALID: {faults[0]}" if faults else plan.status.value
    return plan, seconds, status


def run(name: str, problem: Problem, time_limit: float, peers: tuple) -> dict[str, object]:
    bound = lower_bound(problem)
    greedy, greedy_s, greedy_status = timed("greedy", problem, time_limit)
    row: dict[str, object] = {
        "instance": name,
        "buffers": len(problem.buffers),
        "lower_bound": bound,
        "greedy": greedy.arena,
        "greedy_pct": percent(greedy.arena, bound),
        "greedy_s": f"{greedy_s:.2f}",
    }
    if time_limit > 0:
        plan, seconds, status = timed("cpsat", problem, time_limit)
        row |= {
            "cpsat": plan.arena if plan.status.has_plan else "",
            "cpsat_pct": percent(plan.arena, bound) if plan.status.has_plan else "",
            "bound": max(plan.bound, plan.lower_bound),
            "status": status,
            "cpsat_s": f"{seconds:.1f}",
        }
    if greedy_status.startswith("INVALID"):
        row["status"] = f"greedy {greedy_status}"
    idealloc, tries, minimalloc = peers
    row |= {
        "idealloc": idealloc or "",
        "idealloc_pct": percent(idealloc, bound),
        "idealloc_tries": tries or "",
        "tries_pct": percent(tries, bound),
        "minimalloc": minimalloc or "",
        "minimalloc_pct": percent(minimalloc, bound),
    }
    return row


def instances(sets: list[str], only: set[str]) -> list[tuple[str, Callable[[], Problem], tuple]]:
    """(name, reader, peers' arenas) of every instance asked for that is present."""
    found: list[tuple[str, Callable[[], Problem], tuple]] = []
    if "idealloc" in sets:
        for path in sorted((DATA / "idealloc").glob("*.csv")):
            peers = IDEALLOC.get(path.stem, (None, None, None))
            found.append((path.stem, lambda p=path: read_csv(p), peers))
    if "minimalloc" in sets:
        for path in sorted((DATA / "minimalloc" / "challenging").glob("*.csv")):
            name = path.name.split(".")[0]
            peak = MINIMALLOC_PEAK.get(name)
            found.append((name, lambda p=path: read_csv(p), (None, None, peak)))
    if "generated" in sets:
        text = generate(1_000_000)
        found.append(("generated-1M", lambda: read_csv("generated.csv", text=text), (None,) * 3))
    return [item for item in found if not only or item[0] in only]


def order_row(name: str, problem: Problem) -> dict[str, object]:
    """Each greedy order with each fit alone on `problem`, all of them even on parts
    where greedy itself makes only LARGE_RUNS: its arena as % over the live-bytes bound,
    and which run wins (ties to the earlier, as greedy breaks them)."""
    form = make_form(problem)
    bound = lower_bound(problem)
    runners = [Compiled.build(list(part)) for part in form.parts]
    row: dict[str, object] = {"instance": name, "buffers": len(problem.buffers)}
    arenas: dict[str, int] = {}
    started = time.perf_counter()
    for order in ORDERS:
        for fit in FITS:
            run = f"{order}/{fit}"
            tops = [r.top(r.whole(r.sequence(order), fit)) for r in runners if r is not None]
            arenas[run] = max(tops, default=0)
            row[run] = percent(arenas[run], bound)
    row["wins"] = min(arenas, key=lambda run: arenas[run])
    row["seconds"] = f"{time.perf_counter() - started:.1f}"
    return row


def stage_times(buffers: int) -> dict[str, object]:
    """Wall seconds of each stage of `optplan plan --planner greedy` on a generated CSV,
    then the command itself, end to end, with its peak memory (`/usr/bin/time -v`)."""
    row: dict[str, object] = {"buffers": buffers}
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "big.csv"
        path.write_text(generate(buffers, seed=1))
        row |= in_process(path)
        row |= end_to_end(path, Path(folder) / "plan.csv")
    return row


def in_process(path: Path) -> dict[str, object]:
    """Each stage timed on its own, in this process."""
    row: dict[str, object] = {}

    def clock(stage: str, work: Callable[[], object]) -> object:
        started = time.perf_counter()
        result = work()
        row[stage] = f"{time.perf_counter() - started:.2f}"
        return result

    problem = clock("read", lambda: read_csv(path))
    assert isinstance(problem, Problem)
    clock("lower_bound", lambda: lower_bound(problem))
    columns = columns_of(problem)
    assert columns is not None
    clock("split", lambda: split_columns(columns))
    plan = clock("greedy", lambda: get_planner("greedy")(problem))
    assert isinstance(plan, Plan)
    faults = clock("validate", lambda: validate(problem, plan))
    clock("write", lambda: write_csv(problem, plan.offsets))
    row["arena_pct"] = percent(plan.arena, plan.lower_bound)
    row["valid"] = not faults
    return row


def end_to_end(path: Path, out: Path) -> dict[str, object]:
    """`optplan plan PATH --planner greedy -o OUT` in a new process: wall seconds, CPU
    seconds and peak resident memory (MB), as `/usr/bin/time -v` reports them."""
    command = [
        sys.executable,
        "-m",
        "optplan",
        "plan",
        str(path),
        "--planner",
        "greedy",
        "-o",
        str(out),
    ]
    if not Path("/usr/bin/time").exists():
        return {}
    done = subprocess.run(
        ["/usr/bin/time", "-v", *command], capture_output=True, text=True, check=False
    )
    facts = dict(
        line.strip().rsplit(": ", 1)
        for line in done.stderr.splitlines()
        if ": " in line and line.startswith("\t")
    )
    user = float(facts.get("User time (seconds)", "nan")) + float(
        facts.get("System time (seconds)", "nan")
    )
    wall = facts.get("Elapsed (wall clock) time (h:mm:ss or m:ss)", "")
    minutes, _, seconds = wall.rpartition(":")
    return {
        "cli_s": f"{60 * float(minutes or 0) + float(seconds or 'nan'):.1f}",
        "cli_cpu_s": f"{user:.1f}",
        "cli_mb": int(facts.get("Maximum resident set size (kbytes)", "0")) // 1024,
        "cli_exit": done.returncode,
    }


def table(rows: list[dict[str, object]], columns: tuple[str, ...]) -> str:
    widths = [max(len(c), *(len(str(r.get(c, ""))) for r in rows)) for c in columns]
    lines = [" ".join(c.rjust(w) for c, w in zip(columns, widths))]
    lines += [" ".join(str(r.get(c, "")).rjust(w) for c, w in zip(columns, widths)) for r in rows]
    return "\n".join(lines)


def merged(path: Path, rows: list[dict[str, object]]) -> list[dict[str, object]]:
    """The rows of `path` with `rows` in place of those of the same instance, and any
    new instance last: a run on some instances updates the file, not replaces it."""
    if not path.exists():
        return rows
    with path.open(newline="") as old:
        kept: list[dict[str, object]] = list(csv.DictReader(old))
    fresh = {row["instance"]: row for row in rows}
    updated = [fresh.pop(str(row["instance"]), row) for row in kept]
    return updated + list(fresh.values())


def write(path: Path, rows: list[dict[str, object]], columns: tuple[str, ...]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {path.relative_to(ROOT)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-limit", type=float, default=60.0, help="cpsat seconds (0: skip)")
    parser.add_argument("--sets", default="idealloc,minimalloc,generated")
    parser.add_argument("--instances", default="", help="comma-separated names, e.g. S_1,Y_1")
    parser.add_argument(
        "--tables",
        default="plans,orders,stages",
        help="which tables to make: plans (greedy and cpsat against the peers), orders "
        "(each greedy order and fit alone), stages (each stage from 10k to 1M buffers)",
    )
    parser.add_argument("--stages", default="10000,100000,1000000", help="sizes ('' to skip)")
    args = parser.parse_args(argv)
    sets = [s.strip() for s in args.sets.split(",") if s.strip()]
    only = {n.strip() for n in args.instances.split(",") if n.strip()}
    jit.warm("optplan.planners.search")  # compile once here, not inside a time limit
    tables = {t.strip() for t in args.tables.split(",") if t.strip()}
    rows = []
    for name, read, peers in instances(sets, only) if "plans" in tables else ():
        rows.append(run(name, read(), args.time_limit, peers))
        print(table(rows[-1:], COLUMNS).splitlines()[1], flush=True)
    if rows:
        print(table(rows, COLUMNS))
        write(RESULTS / "idealloc.csv", merged(RESULTS / "idealloc.csv", rows), COLUMNS)
    if "orders" in tables:
        real = [name for name in sets if name != "generated"]
        ordered = [order_row(name, read()) for name, read, _ in instances(real, only)]
        columns = (
            "instance",
            "buffers",
            *(f"{o}/{f}" for o in ORDERS for f in FITS),
            "wins",
            "seconds",
        )
        print(table(ordered, columns))
        write(
            RESULTS / "idealloc_orders.csv",
            merged(RESULTS / "idealloc_orders.csv", ordered),
            columns,
        )
    sizes = args.stages.split(",") if "stages" in tables else []
    stages = [stage_times(int(n)) for n in sizes if n.strip()]
    if stages:
        columns = ("buffers", *STAGES, "arena_pct", "valid", *END_TO_END)
        print(table(stages, columns))
        write(RESULTS / "idealloc_stages.csv", stages, columns)
    invalid = any("INVALID" in str(r.get("status", "")) for r in rows)
    failed = not all(r["valid"] and r.get("cli_exit", 0) == 0 for r in stages)
    return 1 if invalid or failed else 0


if __name__ == "__main__":
    sys.exit(main())
