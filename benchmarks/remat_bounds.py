"""The covering bound on extra compute (`schedule.remat.lower.covering_bound`) beside
`rematerialise`'s answer: the gap between them, on random layered graphs.

MOCCASIN's own graphs are not in this repository; the graphs here are drawn by
`benchmarks/graphs/layered.py` (the same family: layered, 100 to 1,000 nodes, unit
compute costs) with fixed seeds, at budgets of a share of the program order's peak
(`ceil(peak * share)`, as MOCCASIN sets them). For each case: the proven memory bound,
the covering bound (in 12 units of work, the default; the seconds it took), and `rematerialise`'s answer at `--time-limit` with its
`lower_bound` (the covering bound in its share) and the gap (extra - bound) / extra.

    .venv/bin/python benchmarks/remat_bounds.py [--sizes 100,250,500,1000] [--seed 1]
        [--shares 0.9,0.8,0.7,0.6,0.5] [--time-limit 10] [--bound-only]
        [--out benchmarks/results/remat_bounds.csv]
    .venv/bin/python benchmarks/remat_bounds.py --graphs DIR [--work 12]

`--graphs DIR` (MOCCASIN's `data/`, as `benchmarks/remat.py` takes it): the bound over
every schedule as `rematerialise` states it (`lower.covered`, after the memory bound
and the best order), on MOCCASIN's 30 ICML cases, counted in work (`--work`: the share
"covering" of the default budget of 60 units), so the same on any machine; beside it
the extra compute `benchmarks/results/remat.csv` holds for the case (its last row) and
the gap: `benchmarks/results/remat_bounds_moccasin.csv`.
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.graphs.layered import write_layered
from optplan.frontends.graphs import read_graph
from optplan.schedule.graph import Graph, peak_bytes
from optplan.schedule.remat import Remat, memory_bound, rematerialise
from optplan.schedule.remat.lower import covering_bound

COLUMNS = (
    "graph", "nodes", "seed", "share", "budget", "memory_bound", "covering_bound",
    "covering_rows", "covering_optimal", "covering_seconds", "limit", "status", "extra",
    "bound", "gap_pct", "seconds",
)  # fmt: skip


def layered(nodes: int, seed: int) -> Graph:
    with tempfile.TemporaryDirectory() as folder:
        return read_graph(write_layered(Path(folder) / "g.json", nodes, seed=seed)).graph


def case(graph: Graph, share: float, limit: float, bound_only: bool) -> dict[str, object]:
    budget = math.ceil(peak_bytes(graph, range(graph.ops)) * share)
    began = time.perf_counter()
    cover = covering_bound(graph, budget, None, 12.0)
    row: dict[str, object] = {
        "share": share,
        "budget": budget,
        "memory_bound": memory_bound(graph).bytes,
        "covering_bound": "infeasible" if cover.unmet else cover.cost,
        "covering_rows": cover.rows,
        "covering_optimal": cover.optimal,
        "covering_seconds": round(time.perf_counter() - began, 2),
        "limit": limit,
    }
    if bound_only or cover.unmet:
        return row
    result = rematerialise(graph, Remat(budget, time_limit=limit))
    row.update(status=result.status.value, seconds=round(result.seconds, 1))
    if result.steps is not None:
        row.update(extra=result.extra_cost, bound=result.lower_bound)
        row.update(gap_pct=f"{result.gap_percent:.1f}")
    return row


MOCCASIN_COLUMNS = (
    "graph", "nodes", "share", "budget", "lower", "lower_pct", "work", "seconds",
    "remat_csv_status", "remat_csv_extra_pct", "gap_pct", "lower_reason",
)  # fmt: skip


def moccasin_rows(folder: Path, shares: list[float], work: float) -> list[dict[str, object]]:
    """`--graphs`: the bound of each ICML case beside the committed answer's extra."""
    from benchmarks.remat import ICML, in_order
    from optplan.budget import Budget, running
    from optplan.schedule import Scheduler
    from optplan.schedule.remat.lower import covered

    with open(ROOT / "benchmarks/results/remat.csv") as handle:
        answers = {(r["graph"], float(r["share"])): r for r in csv.DictReader(handle)}
    rows: list[dict[str, object]] = []
    for name in ICML:
        graph, _ = in_order(folder / f"{name}.json")
        total = sum(graph.costs) or graph.ops
        budget_of = peak_bytes(graph, range(graph.ops))
        searched = Scheduler("auto", time_limit=600.0, work=Remat(0).order_work)(graph)
        for share in shares:
            budget = math.ceil(budget_of * share)
            row: dict[str, object] = {"graph": name, "nodes": graph.ops, "share": share}
            row.update(budget=budget, work=work)
            answer = answers.get((name, share), {})
            row.update(remat_csv_status=answer.get("optplan_status", ""))
            if budget < memory_bound(graph).bytes:
                row["lower_reason"] = "below the memory bound: nothing fits"
                rows.append(row)
                continue
            began, clock = time.perf_counter(), Budget(work, 600.0).clock()
            with running(clock):
                peaks = (searched.peak_bytes, searched.bound_bytes)  # best order's, every one's
                lower = covered(graph, budget, None, peaks, work)
            row.update(lower=lower.cost, lower_pct=f"{100 * lower.cost / total:.3f}")
            row.update(seconds=round(time.perf_counter() - began, 1), lower_reason=lower.reason)
            row["remat_csv_extra_pct"] = answer.get("optplan_extra_pct", "")
            row["gap_pct"] = _gap(answer.get("optplan_extra_pct", ""), 100 * lower.cost / total)
            rows.append(row)
            print(" | ".join(str(row.get(c, "")) for c in MOCCASIN_COLUMNS), flush=True)
    return rows


def _gap(extra: str, lower_pct: float) -> str:
    """(extra - lower) / extra in %, from remat.csv's extra rounded to 3 decimals."""
    if not extra or float(extra) <= 0:
        return ""
    above = float(extra) - lower_pct
    if -5e-4 <= above < 0:
        above = 0.0  # the bound meets the answer within that rounding
    return f"{100 * above / float(extra):.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,250,500,1000")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--shares", default="0.9,0.8,0.7,0.6,0.5")
    parser.add_argument("--time-limit", type=float, default=10.0)
    parser.add_argument("--bound-only", action="store_true")
    parser.add_argument("--out", default=str(ROOT / "benchmarks/results/remat_bounds.csv"))
    parser.add_argument("--graphs", default="", help="MOCCASIN's data/: its 30 ICML cases")
    parser.add_argument("--work", type=float, default=12.0)
    args = parser.parse_args()
    if args.graphs:
        shares = [float(s) for s in args.shares.split(",")]
        rows = moccasin_rows(Path(args.graphs), shares, args.work)
        with open(ROOT / "benchmarks/results/remat_bounds_moccasin.csv", "w", newline="") as out:
            writer = csv.DictWriter(out, fieldnames=MOCCASIN_COLUMNS)
            writer.writeheader()
            writer.writerows(rows)
        return
    rows = []
    for nodes in (int(s) for s in args.sizes.split(",")):
        graph = layered(nodes, args.seed)
        for share in (float(s) for s in args.shares.split(",")):
            row = {"graph": f"layered_{nodes}_s{args.seed}", "nodes": graph.ops, "seed": args.seed}
            row.update(case(graph, share, args.time_limit, args.bound_only))
            rows.append(row)
            print(",".join(str(row.get(c, "")) for c in COLUMNS), flush=True)
    with open(args.out, "w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)


if __name__ == "__main__":
    main()
