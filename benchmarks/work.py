"""The default budget counted in work beside a budget of seconds, on the same instances.

    python benchmarks/work.py [--work 60] [--seconds 60] [--sets minimalloc,idealloc,remat,orders]
                              [--instances D,J] [--repeat 2] [--busy 2]

For each instance (MiniMalloc's 11 hard instances; idealloc's real traces; for `remat`,
seeded layered graphs of 250 and 500 ops at 70 % and 50 % of their program order's peak,
recomputed by `rematerialise`, the arena column then its extra compute in %; for `orders`,
seeded layered graphs of 250, 500 and 1,000 ops reordered by `auto`, the arena column then
the order's peak): `cpsat` with `--work` units and a guard of `--guard` seconds (10 times
`--seconds` unless given; mode `work`), then `cpsat` stopped by the clock after
`--seconds` (mode `seconds`: the behaviour before budgets were counted),
each `--repeat` times, every plan judged by `validate`. A row per instance, mode and run:
arena bytes, proven bound, gap, seconds, and whether the run's arena equals the first
run's (`same`: the mode's reproducibility, which only the work mode promises). Every run
after the first runs beside `--busy` processes that spin (a loaded machine). Writes
`benchmarks/results/work.csv` and prints a table; a summary line counts the instances
where the work mode's arena is at or below the seconds mode's.

Times are wall seconds of one run on a shared 2-core machine.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from optplan.budget import Budget
from optplan.planners import drive, jit
from optplan.problem import read_csv
from optplan.problem.plan import validate
from optplan.schedule.graph import Graph

DATA = ROOT.parent / "shared" / "data"
SETS: dict[str, tuple[Path, str]] = {
    "minimalloc": (DATA / "minimalloc" / "challenging", "*.1048576.csv"),
    "idealloc": (DATA / "idealloc", "*.csv"),
}
RESULTS = ROOT / "benchmarks" / "results" / "work.csv"
COLUMNS = ("instance", "buffers", "mode", "run", "arena", "bound", "gap", "seconds", "same")


def instances(sets: list[str], only: set[str]) -> list[tuple[str, Path]]:
    found = []
    for name in sets:
        if name not in SETS:
            continue  # remat: the cases are generated
        folder, pattern = SETS[name]
        if not folder.is_dir():
            print(f"skipping {name}: {folder} is absent", file=sys.stderr)
            continue
        for path in sorted(folder.glob(pattern)):
            label = path.name.split(".")[0]
            if not only or label in only:
                found.append((label, path))
    return found


def layered(nodes: int) -> Graph:
    """The seeded layered graph of `nodes` ops that the recomputation and order cases use."""
    import tempfile

    from benchmarks.graphs.layered import write_layered
    from optplan.frontends.graphs import read_graph

    with tempfile.TemporaryDirectory() as folder:
        return read_graph(write_layered(Path(folder) / "g.json", nodes, seed=7)).graph


REMAT_CASES = ((250, 0.7), (250, 0.5), (500, 0.7), (500, 0.5))


def remat_row(nodes: int, share: float, mode: str, budget: Budget, run: int) -> dict[str, object]:
    """One recomputation case: extra compute % in the arena column, the memory bound."""
    import math

    from optplan.schedule.graph import peak_bytes
    from optplan.schedule.remat import Remat, rematerialise

    graph = layered(nodes)
    capacity = int(share * peak_bytes(graph, range(graph.ops)))
    guard = budget.seconds or math.inf
    started = time.perf_counter()
    result = rematerialise(graph, Remat(capacity, time_limit=guard, work=budget.work))
    seconds = time.perf_counter() - started
    found = result.steps is not None
    return {
        "instance": f"layered_{nodes}@{share:.0%}",
        "buffers": graph.ops,
        "mode": mode + (" (cut)" if result.cut else ""),
        "run": run,
        "arena": f"+{result.extra_percent:.3f}%" if found else result.status.value,
        "bound": result.memory_bound.bytes,
        "gap": "",
        "seconds": f"{seconds:.1f}",
        "same": "",
    }


ORDER_CASES = (250, 500, 1000)


def order_row(nodes: int, mode: str, budget: Budget, run: int) -> dict[str, object]:
    """One order case: the peak of `auto`'s order, its proven bound and gap."""
    from optplan.budget import order_steps
    from optplan.schedule import Scheduler

    graph = layered(nodes)
    steps = None if budget.work is None else order_steps(budget.work)
    started = time.perf_counter()
    found = Scheduler("auto", time_limit=budget.seconds or 600.0, work=steps)(graph)
    seconds = time.perf_counter() - started
    gap = (found.peak_bytes - found.bound_bytes) / found.peak_bytes
    return {
        "instance": f"order_{nodes}",
        "buffers": graph.ops,
        "mode": mode,
        "run": run,
        "arena": found.peak_bytes,
        "bound": found.bound_bytes,
        "gap": f"{100 * gap:.3f}%",
        "seconds": f"{seconds:.1f}",
        "same": "",
    }


def measure(label: str, path: Path, mode: str, budget: Budget, run: int) -> dict[str, object]:
    problem = read_csv(path)
    started = time.perf_counter()
    plan = drive(problem, "cpsat", budget)
    seconds = time.perf_counter() - started
    faults = validate(problem, plan)
    if faults:
        raise SystemExit(f"{label} ({mode}): invalid plan: {faults[0]}")
    bound = max(plan.bound, plan.lower_bound)
    gap = (plan.arena - bound) / plan.arena if plan.arena else 0.0
    cut = " (cut)" if plan.detail.get("cut") else ""
    return {
        "instance": label,
        "buffers": len(problem.buffers),
        "mode": mode + cut,
        "run": run,
        "arena": plan.arena,
        "bound": bound,
        "gap": f"{100 * gap:.3f}%",
        "seconds": f"{seconds:.1f}",
        "same": "",
    }


@contextlib.contextmanager
def busy(count: int):  # type: ignore[no-untyped-def]
    """`count` processes spinning on the CPU while the block runs."""
    spinning = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield
    finally:
        for process in spinning:
            process.kill()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=float, default=60.0, help="units of the work mode")
    parser.add_argument("--seconds", type=float, default=60.0, help="seconds of the clock mode")
    parser.add_argument("--guard", type=float, default=0.0, help="work mode's guard (10 x seconds)")
    parser.add_argument("--sets", default="minimalloc,idealloc,remat")
    parser.add_argument("--instances", default="", help="comma-separated labels, e.g. D,J")
    parser.add_argument("--repeat", type=int, default=2, help="runs of each mode")
    parser.add_argument("--busy", type=int, default=2, help="spinning processes after run 1")
    args = parser.parse_args(argv)
    only = {name for name in args.instances.split(",") if name}
    jit.warm(jit.SEARCH)
    modes = {
        "work": Budget(args.work, args.guard or 10 * args.seconds),
        "seconds": Budget(None, args.seconds),
    }
    rows: list[dict[str, object]] = []
    print(" ".join(f"{c:>10}" for c in COLUMNS))
    cases: list[tuple[str, object]] = list(instances(args.sets.split(","), only))
    if "remat" in args.sets.split(","):
        cases += [(f"layered_{n}@{s:.0%}", (n, s)) for n, s in REMAT_CASES]
    if "orders" in args.sets.split(","):
        cases += [(f"order_{n}", n) for n in ORDER_CASES]
    cases = [(label, case) for label, case in cases if not only or label in only]
    for label, case in cases:
        for mode, budget in modes.items():
            first = None
            for run in range(1, args.repeat + 1):
                with busy(args.busy if run > 1 else 0):
                    if isinstance(case, Path):
                        row = measure(label, case, mode, budget, run)
                    elif isinstance(case, int):
                        row = order_row(case, mode, budget, run)
                    else:
                        nodes, share = case  # type: ignore[misc]
                        row = remat_row(nodes, share, mode, budget, run)
                first = row["arena"] if first is None else first
                row["same"] = "yes" if row["arena"] == first else "no"
                rows.append(row)
                print(" ".join(f"{row[c]!s:>10}" for c in COLUMNS), flush=True)
    RESULTS.parent.mkdir(exist_ok=True)
    rows = _kept(rows)
    with RESULTS.open("w", newline="") as file:
        writer = csv.DictWriter(file, COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    _summary(rows)
    return 0


def _kept(rows: list[dict[str, object]]) -> list[dict[str, object]]:
    """`rows` with the committed file's rows of the instances not run again."""
    if not RESULTS.exists():
        return rows
    ran = {row["instance"] for row in rows}
    with RESULTS.open(newline="") as file:
        old = [row for row in csv.DictReader(file) if row["instance"] not in ran]
    return old + rows  # type: ignore[operator]


def _summary(rows: list[dict[str, object]]) -> None:
    """Per instance, the work mode's first arena against the seconds mode's best."""
    work: dict[str, int] = {}
    seconds: dict[str, int] = {}
    for row in rows:
        if not str(row["arena"]).isdigit():
            continue  # a recomputation row: extra compute, not bytes
        label, arena = str(row["instance"]), int(str(row["arena"]))
        if str(row["mode"]).startswith("work") and row["run"] == 1:
            work[label] = arena
        elif str(row["mode"]).startswith("seconds"):
            seconds[label] = min(seconds.get(label, arena), arena)
    worse = [f"{k}: {work[k]} against {seconds[k]}" for k in work if work[k] > seconds[k]]
    print(f"work at or below seconds on {len(work) - len(worse)} of {len(work)} instances")
    for line in worse:
        print(f"  worse: {line}")


if __name__ == "__main__":
    sys.exit(main())
