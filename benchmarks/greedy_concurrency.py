"""Greedy as concurrency grows: random traces with about 10 to 10,000 buffers live at once,
beside idealloc in the same run.

    python benchmarks/greedy_concurrency.py --idealloc PATH/TO/idealloc
                                            [--sizes 10000,100000,1000000]
                                            [--live 10,100,1000,10000] [--guard 600]
                                            [--limit-only]

Steps:
1. `generate(buffers, live, seed)`: buffer k starts at point k and lives 2 to 2 * live
   points (so about `live` are live at once); sizes log-uniform in 1 B to 1 MiB; seed 0.
   Lifetimes of at least 2 points: idealloc's reader takes MiniMalloc's CSV with both
   ends exclusive (`ex-csv`), and a buffer living one point panics it ("cannot sample
   empty range"). Combinations with `live` above the buffers are dropped.
2. Each trace, read once with `read_csv` (alignment 1): greedy with no limit but the
   `--guard` (its plan's seconds, the CSV already read; `cut` says whether the guard
   cut it), greedy with `time_limit=1` (its seconds must stay
   within a second of the limit; `cut` says whether the guard cut a run), both checked
   with `validate`; then idealloc's binary (built from its own repository, default
   settings: one try) on the same CSV, its arena and its own "Total allocation time"
   (also read after the CSV), with a timeout of 3x greedy's seconds (120 to 300 s) and
   8 GB of memory.
3. Rows (instance, planner, arena bytes, bound, gap % over the live-bytes bound,
   seconds, cut, note; idealloc's row has greedy's seconds over idealloc's in
   `vs_idealloc`) are printed as they come and written after each trace to
   `benchmarks/results/greedy_concurrency.csv`, updated by instance and planner (a run
   over a few traces keeps the others' rows; `--limit-only` runs the `--time-limit 1`
   row alone).

The machine is shared and noisy: read the ratio of the two planners' seconds in one run.
"""

from __future__ import annotations

import argparse
import csv
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from optplan.planners.greedy import Greedy, warm_kernels
from optplan.problem import Problem, lower_bound, read_csv
from optplan.problem.plan import validate

RESULTS = ROOT / "benchmarks" / "results" / "greedy_concurrency.csv"
COLUMNS = (
    "instance",
    "planner",
    "arena",
    "bound",
    "gap_pct",
    "seconds",
    "cut",
    "vs_idealloc",
    "note",
)
MEMORY = 8 << 30  # idealloc's address space, in bytes


def generate(buffers: int, live: int, seed: int = 0) -> str:
    rng = np.random.default_rng(seed)
    start = np.arange(buffers)
    end = start + rng.integers(2, 2 * live + 1, buffers)
    size = np.exp(rng.uniform(0, np.log(1 << 20), buffers)).astype(np.int64) + 1
    rows = (f"{k},{s},{e},{z}\n" for k, (s, e, z) in enumerate(zip(start, end, size)))
    return "id,lower,upper,size\n" + "".join(rows)


def greedy_row(
    problem: Problem, bound: int, name: str, limit: float | None, guard: float | None = None
) -> list[object]:
    began = time.perf_counter()
    plan = Greedy(time_limit=limit or guard)(problem)
    seconds = time.perf_counter() - began
    faults = validate(problem, plan)
    cut = "yes" if plan.detail.get("cut") else "no"
    note = "INVALID" if faults else f"won by {plan.detail.get('order')}"
    label = "greedy" if limit is None else f"greedy --time-limit {limit:g}"
    gap = 100 * (plan.arena - bound) / bound
    return [name, label, plan.arena, bound, f"{gap:.2f}", f"{seconds:.2f}", cut, "", note]


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def idealloc_row(
    path: Path, name: str, binary: str, bound: int, greedy_seconds: float
) -> list[object]:
    timeout = min(max(120.0, 3 * greedy_seconds), 300.0)
    arena: object = ""
    seconds: object = ""
    try:
        done = subprocess.run(
            [binary, "-i", str(path), "ex-csv"],
            check=False,
            capture_output=True,
            text=True,
            timeout=timeout,
            preexec_fn=_limit_memory,
        )
        note = "ok" if done.returncode == 0 else f"exit {done.returncode}"
        for line in done.stdout.splitlines():
            if line.startswith("Makespan:"):
                arena = int(line.split()[1])
            if line.startswith("Total allocation time:"):
                seconds = int(line.split()[3]) / 1e6
        if "panicked" in done.stderr:
            note = "panicked: " + done.stderr.split("panicked at", 1)[1].split("\n")[1].strip()
        elif "memory allocation" in done.stderr:
            note = f"out of memory ({MEMORY >> 30} GB)"
    except subprocess.TimeoutExpired:
        note = f"no answer in {timeout:.0f} s"
    gap = f"{100 * (arena - bound) / bound:.2f}" if isinstance(arena, int) else ""
    bounded = f"< {greedy_seconds / timeout:.3f}"
    ratio = f"{greedy_seconds / seconds:.3f}" if isinstance(seconds, float) else bounded
    shown = f"{seconds:.2f}" if isinstance(seconds, float) else f"> {timeout:.0f}"
    if not isinstance(seconds, float) and not note.startswith("no answer"):
        ratio, shown = "", ""
    return [name, "idealloc", arena, bound, gap, shown, "", ratio, note]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--live", default="10,100,1000,10000")
    parser.add_argument("--idealloc", help="idealloc's binary (needed unless --limit-only)")
    parser.add_argument("--limit-only", action="store_true", help="only greedy --time-limit 1")
    parser.add_argument("--guard", type=float, default=600.0, help="seconds for greedy's own row")
    args = parser.parse_args()
    if not args.limit_only and not args.idealloc:
        parser.error("--idealloc is needed unless --limit-only")
    warm_kernels()
    rows: list[list[object]] = []
    with tempfile.TemporaryDirectory() as folder:
        for buffers in map(int, args.sizes.split(",")):
            for live in map(int, args.live.split(",")):
                if live > buffers:
                    continue
                name = f"n{buffers}_live{live}"
                path = Path(folder) / f"{name}.csv"
                path.write_text(generate(buffers, live))
                problem = read_csv(path, alignment=1)
                bound = lower_bound(problem)
                found = [greedy_row(problem, bound, name, 1.0)]
                if not args.limit_only:
                    full = greedy_row(problem, bound, name, None, args.guard)
                    found.insert(0, full)
                    found.append(idealloc_row(path, name, args.idealloc, bound, float(full[5])))
                for row in found:
                    print(*row, sep="\t", flush=True)
                rows.extend(found)
                _write(rows)


def _write(rows: list[list[object]]) -> None:
    """The rows, after those of other instances and planners already in the file."""
    fresh = {(row[0], row[1]) for row in rows}
    kept: list[list[object]] = []
    if RESULTS.exists():
        with RESULTS.open(newline="") as old:
            kept = [row for row in list(csv.reader(old))[1:] if (row[0], row[1]) not in fresh]
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    with RESULTS.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(COLUMNS)
        writer.writerows(kept + rows)


if __name__ == "__main__":
    main()
