"""Recomputation under a budget: optplan beside MOCCASIN on MOCCASIN's graphs.

For every graph of the set and every budget (a share of the program order's peak, as
MOCCASIN sets it: `ceil(peak * share)`, the program order being `graph['order']` where
the file gives one, else networkx's topological sort, which this script computes the
way networkx 3.1 does: generations of nodes in file order):

1. optplan (`schedule.remat.rematerialise`, alignment 1) chooses order, recomputation
   and offsets: its extra compute (% of one run of every node, by `cost_cpu`), the
   proven bound on it (`bound`: in the exact model's spaces too), the lower bound over
   every schedule (`lower`, with `lower_reason`: how it was got or why it is 0) and the
   gap (extra - lower) / extra, the arena of its real offsets and whether it is within
   the budget (every plan judged by `validate`), or why there is no schedule;
2. MOCCASIN (its `main.py`, run as an external command from a copy outside this
   repository, at the same time limit per solve and 2 workers), when given: its extra
   compute, whether its schedule's peak (by optplan's `step_bytes`) is within the
   budget, and whether its schedule packs into a real arena of the budget (optplan's
   greedy, then cpsat for up to 10 s).

    .venv/bin/python benchmarks/remat.py --graphs DIR [--moccasin "PYTHON MAIN.PY"]
        [--time-limit 30] [--retry-limit 120,600] [--set icml|all|rest] [--shares 0.9,0.8,0.7,0.6,0.5]
        [--only n100] [--heldout 500,1000] [--out benchmarks/results/remat.csv]
    .venv/bin/python benchmarks/remat.py --programs   # the training programs alone
    .venv/bin/python benchmarks/remat.py --graphs DIR --reach   # how low each heuristic gets

`--in-work` counts optplan's limits in units of work (`Remat.work`, as `optplan
reorder --capacity` runs; seconds only an outer guard), so its rows do not depend on the
machine's load (`--guard`, default 600 s, raised on a loaded machine so that the work
ends each run, not the guard); MOCCASIN's limits stay seconds.

`--heldout 500,1000` runs, instead of MOCCASIN's graphs, the held-out layered graphs of
those sizes (`reorder_heldout.py`'s seeds 6-10, drawn with MOCCASIN's parameters), and
adds their rows to `--out`. The `half` column says which graphs the recomputation was
tuned on: "tuning" (MOCCASIN's ICML cases), "heldout" (those drawn graphs), "peer"
(MOCCASIN's other graphs, `remat_all.csv`: never tuned on, re-run at every change).

With `--only` (or `--shares` other than the default), the cases run replace their own
rows of the CSV (graph and share) and its other rows are kept; `limit` says "work 30.0"
or "30.0 s". `--set rest` runs MOCCASIN's graphs other than the ICML cases (written to
`--out benchmarks/results/remat_all.csv`).

A case where optplan finds neither a schedule nor a proof at `--time-limit` runs again,
optplan and MOCCASIN both, at each of `--retry-limit`'s limits in turn until one gives an
answer, each in a row of its own (`limit` says which).

`--reach` bisects the budget from the best order's peak down to the proven memory bound
for each heuristic alone from the order search's best order: `heuristic.greedy` under
each of its ranks (make again what is held across the peak), and under its tabu rank,
which `rematerialise` does not run; `walk.evict` (evict and make again on demand). The
bisection stops at 1/200 of the program order's peak, each probe at the time limit:
`benchmarks/results/remat_reach.csv` (the lowest share each found a schedule at; a
bisection, so a lower budget may still be met where a probe in between failed).

DIR holds MOCCASIN's graphs (its `data/` folder; or the environment variable
OPTPLAN_PEER_GRAPHS); without it the set is skipped, saying why. The MOCCASIN command
may also come from OPTPLAN_MOCCASIN; without it MOCCASIN's columns are left empty, or
taken from an earlier run's CSV (`--moccasin-from FILE`: the row of the same graph,
share and limit; MOCCASIN's answers there do not change with optplan's). The
training graphs of `benchmarks/graphs/training.py` and the training steps TVM's
gradient pass wrote (`tests/data/training`) run as programs through
`passes.recompute` (costs estimated from the op table), at the same shares of their
program order's peak (`--programs`, `benchmarks/results/remat_programs.csv`). Prints
a table and writes `benchmarks/results/remat.csv`. MOCCASIN's copy needs small fixes to
run at all (package imports in main.py, no `rockmate` import, networkx < 3.2 for
`node_link_graph`'s `attrs`, lists for `AddCumulative`, `ClearObjective` and
`Solve(model, callback)` for `SolveWithSolutionCallback` in OR-Tools 9.15, the worker
count from MOCCASIN_WORKERS, default 2) and a last line printing its result as JSON:
`RESULT {"status", "schedule", "budget", "topo_mem", "topo_order", "nodes"}`.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.reorder_heldout import COUNT, cases, write_graph
from optplan.budget import GUARD_SECONDS
from optplan.frontends.graphs import read_graph
from optplan.planners import get_planner
from optplan.problem import Problem, one_arena
from optplan.problem.plan import Status, validate
from optplan.schedule import Scheduler
from optplan.schedule.graph import Graph, peak_bytes, problem_of
from optplan.schedule.remat import Remat, memory_bound, rematerialise
from optplan.schedule.remat.heuristic import RANKS, TABU, extra_cost, greedy
from optplan.schedule.remat.walk import evict

# MOCCASIN's ICML cases: its README's commands.
ICML = (
    "random_layered_n100_w0.27_nlv0.75_ed0.2_scd0.14",
    "fcn_8_vgg (MLSys)_32_(416, 608, 3)_train_nx",
    "ResNet50 (MLSys)_256_(224, 224, 3)_train_nx",
    "random_layered_n250_w0.43_nlv0.75_ed0.2_scd0.14",
    "random_layered_n500_w0.36_nlv0.75_ed0.2_scd0.14",
    "random_layered_n1000_w0.31_nlv0.75_ed0.2_scd0.14",
)
COLUMNS = (
    "graph", "half", "nodes", "share", "budget", "limit", "optplan_status", "optplan_extra_pct", "optplan_bound_pct",
    "optplan_lower_pct", "optplan_gap_pct", "optplan_arena", "optplan_fits", "optplan_method",
    "optplan_seconds", "moccasin_status", "moccasin_extra_pct", "moccasin_peak_fits",
    "moccasin_arena_fits", "moccasin_seconds", "reason", "lower_reason",
)  # fmt: skip


SHARES = (0.9, 0.8, 0.7, 0.6, 0.5)  # the default budgets, as shares of the program order's peak
# What an infeasible row says in `lower_reason`: no bound on extra compute exists there.
INFEASIBLE_LOWER = "none: no schedule fits the budget (reason), so no extra compute to bound"


def networkx_order(data: dict) -> list[object]:  # type: ignore[type-arg]
    """networkx 3.1's `topological_sort` of a node-link graph: generations of nodes with
    no unvisited predecessor, each in the order the file lists nodes and links."""
    key = "id" if data["nodes"] and "id" in data["nodes"][0] else "name"
    nodes = [n.get(key, i) for i, n in enumerate(data["nodes"])]
    pairs = [(e.get("source", e.get("0")), e.get("target", e.get("1"))) for e in data["links"]]
    children: dict[object, list[object]] = {v: [] for v in nodes}
    waiting = dict.fromkeys(nodes, 0)
    for u, v in pairs:
        if v not in children[u]:
            children[u].append(v)
            waiting[v] += 1
    generation = [v for v in nodes if waiting[v] == 0]
    order: list[object] = []
    while generation:
        order.extend(generation)
        following = []
        for u in generation:
            for v in children[u]:
                waiting[v] -= 1
                if waiting[v] == 0:
                    following.append(v)
        generation = following
    return order


def in_order(path: Path) -> tuple[Graph, list[object]]:
    """The graph with MOCCASIN's program order as op order, and that order's node ids."""
    data = json.loads(path.read_text())
    if "order" not in data.get("graph", {}):
        data.setdefault("graph", {})["order"] = networkx_order(data)
    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / path.name
        copy.write_text(json.dumps(data))
        peer = read_graph(copy)
    return peer.graph, list(peer.nodes)


def run_optplan(
    graph: Graph, budget: int, limit: float, in_work: bool = False, guard: float = GUARD_SECONDS
) -> dict[str, object]:
    """optplan's answer at `limit` seconds, or with `in_work` at `limit` units of work
    (the seconds then only the outer guard, as `optplan reorder --capacity` runs)."""
    options = (
        Remat(budget, time_limit=guard, work=limit) if in_work else Remat(budget, time_limit=limit)
    )
    result = rematerialise(graph, options)
    row: dict[str, object] = {
        "optplan_status": result.status.value,
        "optplan_method": result.method,
        "optplan_seconds": round(result.seconds, 1),
        "reason": result.reason,
        "lower_reason": result.lower_reason,
    }
    if result.status is not Status.INFEASIBLE and result.total_cost:
        row["optplan_lower_pct"] = f"{100 * result.lower_bound / result.total_cost:.3f}"
    if result.status is Status.INFEASIBLE:
        row["lower_reason"] = INFEASIBLE_LOWER
    if result.steps is None or result.plan is None:
        return row
    row["optplan_gap_pct"] = f"{result.gap_percent:.1f}"
    problem = Problem(problem_of(graph, result.steps).buffers, memories=one_arena(budget))
    faults = validate(problem, result.plan)
    row.update(
        optplan_extra_pct=f"{result.extra_percent:.3f}",
        optplan_bound_pct=f"{100 * result.bound_cost / result.total_cost:.3f}"
        if result.total_cost
        else "0",
        optplan_arena=result.arena_bytes,
        optplan_fits="yes" if not faults and result.arena_bytes <= budget else f"NO: {faults[:1]}",
    )
    return row


def run_moccasin(
    command: str,
    path: Path,
    share: float,
    limit: float,
    graph: Graph,
    ids: list[object],
    budget: int,
) -> dict[str, object]:
    """MOCCASIN's main.py on one case; its schedule judged by optplan."""
    # main.py halves the time of graphs below 500 nodes, and each of its two solves gets it.
    given = limit if graph.ops >= 500 else 2 * limit
    began = time.perf_counter()
    with tempfile.TemporaryDirectory() as out:
        args = [
            *shlex.split(command),
            "-g",
            str(path),
            "-m",
            str(share),
            "-t",
            str(math.ceil(given)),
            "-o",
            out,
        ]
        try:
            done = subprocess.run(
                args, capture_output=True, text=True, timeout=4 * limit + 120, cwd=out, check=False
            )
        except subprocess.TimeoutExpired:
            return {
                "moccasin_status": "killed",
                "moccasin_seconds": round(time.perf_counter() - began, 1),
            }
    seconds = round(time.perf_counter() - began, 1)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if not lines:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"moccasin_status": f"failed: {tail[:80]}", "moccasin_seconds": seconds}
    result = json.loads(lines[-1][len("RESULT ") :])
    row: dict[str, object] = {
        "moccasin_status": str(result["status"]).lower(),
        "moccasin_seconds": seconds,
    }
    if result.get("budget") != budget:
        row["moccasin_status"] += f" (its budget {result.get('budget')})"
    schedule = result.get("schedule")
    if not schedule:
        return row
    op_of = {str(node): k for k, node in enumerate(ids)}
    nodes = [str(v) for v in result["nodes"]]
    # MOCCASIN relabels nodes by their place in its order when ids are not 0..n-1.
    relabel = (
        max(int(v) for v in nodes) >= len(nodes)
        if all(v.lstrip("-").isdigit() for v in nodes)
        else True
    )
    steps = tuple(k if relabel else op_of[str(v)] for v in schedule for k in [int(v)])
    row["moccasin_extra_pct"] = f"{100 * extra_cost(graph, steps) / (sum(graph.costs) or 1):.3f}"
    row["moccasin_peak_fits"] = (
        "yes" if peak_bytes(graph, steps) <= budget else f"no ({peak_bytes(graph, steps)})"
    )
    problem = Problem(problem_of(graph, steps).buffers, memories=one_arena(budget))
    plan = get_planner("greedy")(problem)
    if not plan.status.has_plan:
        plan = get_planner("cpsat", work=None, time_limit=10)(problem)
    row["moccasin_arena_fits"] = (
        "yes" if plan.status.has_plan and not validate(problem, plan) else "no"
    )
    return row


def graph_rows(
    args: argparse.Namespace, folder: Path, heldout: bool = False
) -> list[dict[str, object]]:
    """One row per graph of the set (every graph in `folder` where `heldout`), share and
    limit run."""
    every = tuple(sorted(p.stem for p in folder.glob("*.json")))
    names = (
        every
        if heldout
        else {
            "icml": ICML,
            "all": every,
            "rest": tuple(name for name in every if name not in ICML),
        }[args.set]
    )
    command = args.moccasin or os.environ.get("OPTPLAN_MOCCASIN", "")
    if not command:
        print(
            "MOCCASIN not run: give --moccasin or OPTPLAN_MOCCASIN (its main.py, as a command)",
            file=sys.stderr,
        )
    earlier = _moccasin_rows(args.moccasin_from)
    rows = []
    for name in names:
        if args.only and not any(part in name for part in args.only.split(",")):
            continue
        path = folder / f"{name}.json"
        graph, ids = in_order(path)
        peak = peak_bytes(graph, tuple(range(graph.ops)))
        for share in args.shares:
            budget = math.ceil(peak * share)
            limits = [args.time_limit] + [
                limit for limit in args.retry_limit if limit > args.time_limit
            ]
            for limit in limits:
                row: dict[str, object] = {
                    "graph": name,
                    "half": "heldout" if heldout else "tuning" if name in ICML else "peer",
                    "nodes": graph.ops,
                    "share": share,
                    "budget": budget,
                }
                row["limit"] = f"work {limit}" if args.in_work else f"{limit} s"
                row.update(run_optplan(graph, budget, limit, args.in_work, args.guard))
                if command:
                    row.update(run_moccasin(command, path, share, limit, graph, ids, budget))
                else:
                    row.update(earlier.get((name, str(share), _seconds(str(limit))), {}))
                rows.append(row)
                print(" | ".join(str(row.get(c, "")) for c in COLUMNS[:-1]), flush=True)
                # So far: a long run cut short keeps its rows; with --only, the file's
                # rows of the cases not run again are kept.
                write(_merged(args, rows), args.out)
                if row["optplan_status"] != "unknown":
                    break
    return rows


def kept(rows: list[dict[str, object]], out: str) -> list[dict[str, object]]:
    """The rows of `out` (read now: another run may have written it since), those of
    each case (graph, share) in `rows` replaced by `rows`' own, in the file's order."""
    if not os.path.exists(out):
        return rows
    with open(out, newline="") as handle:
        old: list[dict[str, object]] = list(csv.DictReader(handle))
    new = {(str(r["graph"]), str(r["share"])) for r in rows}
    merged: list[dict[str, object]] = []
    for r in old:
        key = (str(r["graph"]), str(r["share"]))
        if key not in new:
            merged.append(r)
        elif not any((str(m["graph"]), str(m["share"])) == key for m in merged):
            merged.extend(m for m in rows if (str(m["graph"]), str(m["share"])) == key)
    done = {(str(r["graph"]), str(r["share"])) for r in merged}
    return merged + [r for r in rows if (str(r["graph"]), str(r["share"])) not in done]


def _merged(args: argparse.Namespace, rows: list[dict[str, object]]) -> list[dict[str, object]]:
    """What a run writes: its rows, and with `--only` or other `--shares` the file's
    rows of the cases it did not run (`kept`)."""
    some = args.only or args.heldout or tuple(args.shares) != SHARES
    return kept(rows, args.out) if some else rows


def _seconds(limit: str) -> str:
    """A limit column's number of seconds or units ("work 30.0", "30.0 s", "30.0": 30.0)."""
    return str(float(limit.replace("work", "").replace("s", "").strip()))


def _moccasin_rows(path: str) -> dict[tuple[str, str, str], dict[str, str]]:
    """MOCCASIN's columns of an earlier run, by (graph, share, limit)."""
    if not path:
        return {}
    with open(path, newline="") as handle:
        return {
            (r["graph"], r["share"], _seconds(r["limit"])): {
                c: r[c] for c in COLUMNS if c.startswith("moccasin_") and c in r
            }
            for r in csv.DictReader(handle)
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graphs", default=os.environ.get("OPTPLAN_PEER_GRAPHS", ""))
    parser.add_argument("--moccasin", default="")
    parser.add_argument(
        "--moccasin-from", default="", help="an earlier CSV to take MOCCASIN's columns from"
    )
    parser.add_argument("--time-limit", type=float, default=30.0)
    parser.add_argument(
        "--in-work",
        action="store_true",
        help="optplan's limits (--time-limit, --retry-limit) are units of work, not seconds",
    )
    parser.add_argument(
        "--guard", type=float, default=GUARD_SECONDS, help="with --in-work: the seconds guard"
    )
    parser.add_argument(
        "--retry-limit",
        type=lambda t: [float(x) for x in t.split(",")],
        default=[120.0, 600.0],
        help="comma-separated: a case with no answer at --time-limit runs again at each in turn (0: never)",
    )
    parser.add_argument(
        "--set",
        choices=("icml", "all", "rest"),
        default="icml",
        help="MOCCASIN's ICML cases, all its graphs, or all but the ICML cases",
    )
    parser.add_argument("--only", default="", help="comma-separated parts of graph names")
    parser.add_argument(
        "--shares",
        type=lambda t: [float(x) for x in t.split(",")],
        default=list(SHARES),
    )
    parser.add_argument(
        "--heldout",
        type=lambda t: [int(x) for x in t.split(",")],
        default=[],
        metavar="SIZES",
        help="comma-separated node counts: the held-out half of reorder_heldout.py's "
        "layered graphs of those sizes (nothing in the recomputation was tuned on them) "
        "instead of MOCCASIN's",
    )
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "remat.csv"))
    parser.add_argument("--programs", action="store_true", help="only the training programs")
    parser.add_argument(
        "--reach", action="store_true", help="how low each heuristic gets, by bisection"
    )
    args = parser.parse_args()
    if args.programs:
        from benchmarks.remat_programs import program_rows

        write(
            program_rows(args.shares, args.time_limit, args.in_work, args.guard),
            str(ROOT / "benchmarks" / "results" / "remat_programs.csv"),
        )
        return
    if args.heldout:
        with tempfile.TemporaryDirectory() as temporary:
            folder = Path(temporary)
            for _, nodes, seed in cases(args.heldout, COUNT, "heldout"):
                write_graph(folder, nodes, seed)
            write(_merged(args, graph_rows(args, folder, heldout=True)), args.out)
        return
    folder = Path(args.graphs) if args.graphs else None
    if folder is None or not folder.is_dir():
        print(
            f"MOCCASIN's graph set skipped: no folder given or {args.graphs!r} is absent (--graphs DIR)",
            file=sys.stderr,
        )
        return
    if args.reach:
        write(reach_rows(args, folder), str(ROOT / "benchmarks" / "results" / "remat_reach.csv"))
        return
    write(_merged(args, graph_rows(args, folder)), args.out)


REACH_RANKS = (*RANKS, TABU)
REACH_COLUMNS = (
    "graph",
    "nodes",
    "memory_bound",
    "best_order",
    *(f"greedy_{rank}" for rank in REACH_RANKS),
    "walk",
    "seconds",
)


def reach_rows(args: argparse.Namespace, folder: Path) -> list[dict[str, object]]:
    """`--reach`: per graph, the shares of the program order's peak of the memory bound,
    the best order, and the lowest budget each heuristic met."""
    rows: list[dict[str, object]] = []
    for name in ICML:
        if args.only and not any(part in name for part in args.only.split(",")):
            continue
        began = time.perf_counter()
        graph, _ = in_order(folder / f"{name}.json")
        program = peak_bytes(graph, tuple(range(graph.ops)))
        order = Scheduler("auto", time_limit=args.time_limit, work=Remat(0).order_work)(graph).order
        low, high = memory_bound(graph).bytes, peak_bytes(graph, order)
        row: dict[str, object] = {
            "graph": name,
            "nodes": graph.ops,
            "memory_bound": f"{low / program:.3f}",
        }
        row["best_order"] = f"{high / program:.3f}"
        searches = {f"greedy_{rank}": partial(greedy, rank=rank) for rank in REACH_RANKS}
        for method, search in {**searches, "walk": evict}.items():
            fails, fits = low - 1, high  # bisection: a budget of `fits` is met
            while fits - fails > max(1, program // 200):
                budget = (fails + fits) // 2
                found = search(
                    graph, order, budget, [True] * graph.ops, time.perf_counter() + args.time_limit
                )
                fails, fits = (fails, budget) if found is not None else (budget, fits)
            row[method] = f"{fits / program:.3f}"
        row["seconds"] = round(time.perf_counter() - began, 1)
        rows.append(row)
        print(" | ".join(str(v) for v in row.values()), flush=True)
    return rows


PROGRAM_COLUMNS = (
    "program", "share", "capacity", "limit", "status", "extra_pct", "bound_pct", "recomputed", "arena", "fits",
    "replay",
    "seconds", "reason",
)  # fmt: skip


def write(rows: list[dict[str, object]], out: str, columns: Sequence[str] | None = None) -> None:
    """`rows` as CSV to `out`, under `columns` (else this script's own, by the rows)."""
    columns = columns or (
        PROGRAM_COLUMNS
        if rows and "program" in rows[0]
        else REACH_COLUMNS
        if rows and "walk" in rows[0]
        else COLUMNS
    )
    with open(out, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
