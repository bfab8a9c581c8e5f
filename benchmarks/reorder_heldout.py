"""Order gaps on graphs the search never saw: random layered graphs of MOCCASIN's shape.

1. For each size (250, 500 and 1,000 nodes) draw `--count` graphs with the parameters
   of MOCCASIN's published file of that size (`graphs/layered.py`, `moccasin_like`:
   `w` 0.43, 0.36, 0.31; `nlv` 0.75, `ed` 0.2, `scd` 0.14), seeds 1 to `--count`. The
   first half of the seeds is the tuning half (the search and the bounds may be tuned
   on it), the second half is held out (measured, never tuned on).
2. Run `auto` as `optplan reorder G.json` does by default: the default work (60 units,
   `budget.DEFAULT_WORK`, counted in search steps, the same on any machine) and the
   outer guard of 600 s (`--guard`: on a machine so loaded that 60 units take longer,
   a higher guard keeps the figures those of the work; `cut` says when it ran out).
3. Record the program order's peak, the peak found, the proven bound, the gap
   (peak - bound) / peak and the seconds, one row per graph as it comes.

    .venv/bin/python benchmarks/reorder_heldout.py [--half tuning|heldout|both]
        [--sizes 250,500,1000] [--count 10] [--seeds 6,1,7] [--work 60] [--append]
        [--out benchmarks/results/reorder_heldout.csv]

Prints a table and writes the CSV (`--append` adds rows to it; a graph already in it is
run again and its row replaced), and puts the same rows, with their `half`, into
`benchmarks/results/reorder_graphs.csv` beside the peers' graphs (`graph_set.py`).
"""

from __future__ import annotations

import argparse
import csv
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.graphs.layered import write_layered
from optplan.budget import DEFAULT_WORK, GUARD_SECONDS, order_steps
from optplan.frontends.graphs import read_graph
from optplan.planners import jit
from optplan.schedule import Scheduler
from optplan.schedule.graph import peak_bytes

WIDTHS = {250: 0.43, 500: 0.36, 1000: 0.31}  # MOCCASIN's files' `w` at each size
COUNT = 10  # graphs per size, both halves: seeds 1-5 tuning, 6-10 held out
COLUMNS = ("graph", "half", "nodes", "seed", "edges", "program", "peak", "bound", "gap",
           "seconds", "work", "cut")  # fmt: skip


def cases(
    sizes: list[int], count: int, half: str, seeds: list[int] | None = None
) -> list[tuple[str, int, int]]:
    """(half, nodes, seed) of every graph asked for: seeds 1..count (or `seeds`, in
    that order), the first half tuning, the rest held out."""
    chosen = []
    for nodes in sizes:
        for seed in seeds or range(1, count + 1):
            which = "tuning" if seed <= count // 2 else "heldout"
            if half in ("both", which):
                chosen.append((which, nodes, seed))
    return chosen


def write_graph(folder: Path, nodes: int, seed: int) -> Path:
    """The layered graph of `nodes` and `seed` with MOCCASIN's parameters, written to
    `folder` under its name (`layered_n500_w0.36_s6.json`)."""
    name = f"layered_n{nodes}_w{WIDTHS[nodes]}_s{seed}.json"
    return write_layered(folder / name, nodes, seed, width=WIDTHS[nodes], moccasin_like=True)


def measure(
    folder: Path, which: str, nodes: int, seed: int, work: float, guard: float
) -> dict[str, object]:
    path = write_graph(folder, nodes, seed)
    name = path.stem
    graph = read_graph(path).graph
    began = time.perf_counter()
    found = Scheduler("auto", time_limit=guard, work=order_steps(work))(graph)
    seconds = time.perf_counter() - began
    gap = 1 - found.bound_bytes / found.peak_bytes if found.peak_bytes else 0.0
    return {
        "graph": name, "half": which, "nodes": nodes, "seed": seed,
        "edges": sum(len(p) for p in graph.preds),
        "program": peak_bytes(graph, range(graph.ops)), "peak": found.peak_bytes,
        "bound": found.bound_bytes, "gap": f"{gap:.2%}", "seconds": f"{seconds:.1f}",
        "work": work, "cut": "yes" if seconds >= guard else "no",
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--half", choices=("tuning", "heldout", "both"), default="both")
    parser.add_argument("--sizes", default="250,500,1000")
    parser.add_argument("--count", type=int, default=COUNT, help="graphs per size (both halves)")
    parser.add_argument("--seeds", default="", help="comma-separated seeds, run in that order")
    parser.add_argument("--work", type=float, default=DEFAULT_WORK, help="units, as --work")
    parser.add_argument("--guard", type=float, default=GUARD_SECONDS, help="seconds")
    parser.add_argument("--append", action="store_true", help="add to the CSV, replacing rows")
    parser.add_argument(
        "--out", default=str(ROOT / "benchmarks" / "results" / "reorder_heldout.csv")
    )
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    if any(s not in WIDTHS for s in sizes):
        parser.error(f"--sizes: each of {', '.join(map(str, WIDTHS))}")
    jit.warm("optplan.schedule.beam")  # compile once here, not inside a run
    out = Path(args.out)
    kept = _read(out) if args.append else []
    print("  ".join(COLUMNS))
    with tempfile.TemporaryDirectory() as folder:
        for which, nodes, seed in cases(
            sizes, args.count, args.half, [int(x) for x in args.seeds.split(",") if x]
        ):
            row = measure(Path(folder), which, nodes, seed, args.work, args.guard)
            kept = [r for r in kept if r["graph"] != row["graph"]] + [row]
            _write(out, kept)
            _into_graph_set(kept)
            print("  ".join(str(row[c]) for c in COLUMNS), flush=True)
    print(f"written {out}")


def _into_graph_set(rows: list[dict[str, object]]) -> None:
    """The rows in `reorder_graphs.csv`, replacing that file's tuning and held-out rows."""
    from benchmarks.graph_set import COLUMNS as SET_COLUMNS

    out = ROOT / "benchmarks" / "results" / "reorder_graphs.csv"
    kept = [r for r in _read(out) if r.get("half") not in ("tuning", "heldout")]
    for r in kept:
        r.setdefault("half", "own" if str(r["graph"]).startswith("layered_") else "public")
    mapped = [
        {
            "graph": r["graph"], "ops": r["nodes"], "program": r["program"],
            "reordered": r["peak"], "bound": r["bound"], "gap": r["gap"],
            "seconds": r["seconds"], "limit": f"work {r['work']}", "half": r["half"],
        }
        for r in rows
    ]  # fmt: skip
    with out.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=SET_COLUMNS, restval="")
        writer.writeheader()
        writer.writerows(kept + mapped)


def _read(out: Path) -> list[dict[str, object]]:
    if not out.exists():
        return []
    with out.open(newline="") as handle:
        return list(csv.DictReader(handle))


def _write(out: Path, rows: list[dict[str, object]]) -> None:
    order = {"tuning": 0, "heldout": 1}
    rows = sorted(rows, key=lambda r: (order[str(r["half"])], int(r["nodes"]), int(r["seed"])))  # type: ignore[call-overload]
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)


if __name__ == "__main__":
    main()
