"""The computation-graph set of `benchmarks/reorder.py --graphs`: every graph read as
node-link JSON, its peak at program order and at Inductor's three orders, `auto`'s order
and proven bound on the default work, and which bound proves what:

- `static`: the largest op plus what every path forces (`bounds.static_bounds`);
- `cut`: the per-op min-cut bound (`bounds.cut_bounds`), computed alone, to the end;
- `proof`: `static` or `cut` when that bound meets the order found, `search` when only
  the exact search proved it, `-` when the gap stays open;
- `published`: the reduction a paper reports for the same model, where one does;
- `half`: `public` for the peers' graphs, `own` for ours; `tuning` and `heldout` for the
  rows `reorder_heldout.py` adds (graphs of MOCCASIN's shape with other seeds: the
  search may be tuned on the first half, never on the second).

Graphs: the peers' (a folder given by `--peers` or `$OPTPLAN_PEER_GRAPHS`: Checkmate's
train and test graphs of seven networks and MOCCASIN's random layered graphs of 100 to
1,000 nodes, extracted from a fetched copy of MOCCASIN's repository; never copied
here), and ours (`graphs/layered.py`: 1,000 and 3,000 nodes). `--only` measures some
again and keeps the other rows.
"""

from __future__ import annotations

import argparse
import csv
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.graphs.layered import write_layered
from optplan.budget import DEFAULT_WORK, GUARD_SECONDS, order_steps
from optplan.frontends.graphs import read_graph
from optplan.planners import jit
from optplan.schedule import Scheduler
from optplan.schedule.bounds import cut_bounds, static_bounds
from optplan.schedule.tables import ancestor_masks, descendant_masks, tables

ROOT = Path(__file__).resolve().parent.parent
COLUMNS = (
    "graph", "ops", "program", "lpmf", "bfs", "dfs", "reordered", "bound", "gap", "static",
    "cut", "proof", "seconds", "limit", "published", "half",
)  # fmt: skip
# Reductions of the peak that papers report for the same model (none reorders these
# exact graphs): PyTorch Inductor's reorder_for_peak_memory PR measured 1.10-1.19x on
# AlexNet, VGG16 and DeBERTa.
PUBLISHED = {"VGG16": "Inductor 1.10-1.19x (AlexNet, VGG16, DeBERTa)"}


def graph_files(args: argparse.Namespace, folder: Path) -> list[tuple[str, Path]]:
    files: list[tuple[str, Path]] = []
    peers = Path(args.peers) if args.peers else None
    if peers is not None and peers.is_dir():
        files += [(p.stem.removesuffix("_nx"), p) for p in sorted(peers.glob("*.json"))]
    else:
        print(f"skipping the peers' graphs: no folder given or {peers} is absent "
              "(--peers DIR or $OPTPLAN_PEER_GRAPHS)", file=sys.stderr)  # fmt: skip
    for nodes in (1000, 3000):
        files.append(
            (f"layered_{nodes}", write_layered(folder / f"layered_{nodes}.json", nodes, seed=1))
        )
    return files


def measure(name: str, path: Path, work: float) -> dict[str, object]:
    """One row: `auto` as `optplan reorder G.json` runs it, on `work` units (the guard
    raised to GUARD_SECONDS so that the work, not the clock, ends the run)."""
    graph = read_graph(path).graph
    peaks = {s: Scheduler(s)(graph).peak_bytes for s in ("program", "lpmf", "bfs", "dfs")}
    began = time.perf_counter()
    best = Scheduler("auto", time_limit=GUARD_SECONDS, work=order_steps(work))(graph)
    seconds = time.perf_counter() - began
    t = tables(graph)
    static = int(static_bounds(t, ancestor_masks(t), descendant_masks(t)).max())
    cut = cut_bounds(t, budget=1 << 62, deadline=time.perf_counter() + 600).best
    proof = (
        "static"
        if best.peak_bytes <= static
        else "cut"
        if best.peak_bytes <= cut
        else "search"
        if best.optimal
        else "-"
    )
    published = next((text for model, text in PUBLISHED.items() if name.startswith(model)), "-")
    return {
        "graph": name, "ops": graph.ops, **peaks, "reordered": best.peak_bytes,
        "bound": best.bound_bytes, "gap": f"{1 - best.bound_bytes / best.peak_bytes:.2%}" if best.peak_bytes else "0.00%",
        "static": static, "cut": cut, "proof": proof, "seconds": f"{seconds:.2f}", "limit": f"work {work}",
        "published": published, "half": "own" if name.startswith("layered_") else "public",
    }  # fmt: skip


def run_graph_set(args: argparse.Namespace) -> None:
    jit.warm("optplan.schedule.beam")  # compile once here, not inside a time limit
    wanted = {n for n in args.only.split(",") if n}
    rows = []
    print("  ".join(COLUMNS))
    with tempfile.TemporaryDirectory() as folder:
        for name, path in graph_files(args, Path(folder)):
            if wanted and not any(name.startswith(w) for w in wanted):
                continue
            row = measure(name, path, DEFAULT_WORK)
            rows.append(row)
            print("  ".join(str(row[c]) for c in COLUMNS), flush=True)
    out = ROOT / "benchmarks" / "results" / "reorder_graphs.csv"
    if out.exists():  # keep every row not measured again (the held-out set's among them)
        measured = {row["graph"] for row in rows}
        with out.open(newline="") as handle:
            rows += [r for r in csv.DictReader(handle) if r["graph"] not in measured]
    with out.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS, restval="")
        writer.writeheader()
        writer.writerows(rows)
    print(f"written {out.relative_to(ROOT)}")
