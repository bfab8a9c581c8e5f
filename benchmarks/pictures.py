"""The documentation's pictures of order and recomputation, drawn from optplan's answers.

    python benchmarks/pictures.py [--work 5]

1. `docs/order_profile.png`: the memory at every step of a seeded layered graph of 250
   ops (`graphs/layered.py`, seed 3), in the program order and in the order the order
   search finds, with the search's proven lower bound on any order's peak.
2. `docs/remat_curve.png`: recomputation's peak against its extra compute on the same
   graph: for budgets of 90 % down to 50 % of the program order's peak,
   the least extra compute `rematerialise` finds within `--work` units (every schedule
   packed with real offsets), and the proven memory bound below which nothing fits.
   The points are written to `benchmarks/results/remat_curve.csv`.

Counted in work, so the pictures are the same on any machine.
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from benchmarks.graphs.layered import write_layered
from optplan.budget import order_steps
from optplan.frontends.graphs import read_graph
from optplan.schedule import Scheduler
from optplan.schedule.graph import Graph, peak_bytes, step_bytes
from optplan.schedule.remat import Remat, memory_bound, rematerialise

DOCS = ROOT / "docs"
CURVE = ROOT / "benchmarks" / "results" / "remat_curve.csv"


def layered(nodes: int, seed: int) -> Graph:
    with tempfile.TemporaryDirectory() as folder:
        return read_graph(write_layered(Path(folder) / "g.json", nodes, seed)).graph


def order_profile(graph: Graph, work: float) -> None:
    schedule = Scheduler("auto", time_limit=600, work=order_steps(work))(graph)
    program = step_bytes(graph, range(graph.ops))
    found = step_bytes(graph, schedule.order)
    figure, axes = plt.subplots(figsize=(8, 3.6))
    axes.plot([b / 1024 for b in program], lw=1, label=f"program order (peak {max(program):,} B)")
    axes.plot([b / 1024 for b in found], lw=1, label=f"order found (peak {max(found):,} B)")
    axes.axhline(schedule.bound_bytes / 1024, ls="--", c="grey", label="proven bound, any order")
    axes.set(xlabel="step", ylabel="KiB held", title="The order search on a 250-op graph")
    axes.legend(loc="lower center", fontsize=8)
    figure.tight_layout()
    figure.savefig(DOCS / "order_profile.png", dpi=120)


def remat_curve(graph: Graph, work: float) -> list[dict[str, object]]:
    program_peak = peak_bytes(graph, range(graph.ops))
    bound = memory_bound(graph).bytes
    rows = []
    for share in (0.9, 0.8, 0.7, 0.6, 0.5):
        budget = int(share * program_peak)
        if budget < bound:
            continue
        found = rematerialise(graph, Remat(budget, time_limit=math.inf, work=work))
        rows.append(
            {
                "budget_bytes": budget,
                "share_of_program_peak": round(budget / program_peak, 3),
                "status": found.status.value,
                "extra_percent": round(found.extra_percent, 3) if found.steps else "",
                "arena_bytes": found.arena_bytes if found.steps else "",
                "memory_bound_bytes": bound,
            }
        )
        print(rows[-1], flush=True)
    met = [r for r in rows if r["extra_percent"] != ""]
    figure, axes = plt.subplots(figsize=(6, 4))
    axes.plot(
        [r["extra_percent"] for r in met],
        [int(str(r["budget_bytes"])) / 1024 for r in met],
        "o-",
        label="least extra compute found",
    )
    axes.axhline(bound / 1024, ls="--", c="grey", label="proven memory bound")
    axes.set(xlabel="extra compute (%)", ylabel="peak budget (KiB)")
    axes.set_title("Recomputation on a 250-op graph: memory for compute")
    axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(DOCS / "remat_curve.png", dpi=120)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=float, default=5.0, help="units per search")
    args = parser.parse_args(argv)
    graph = layered(250, seed=3)
    order_profile(graph, args.work)
    rows = remat_curve(graph, args.work)
    with CURVE.open("w", newline="") as file:
        writer = csv.DictWriter(file, list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
