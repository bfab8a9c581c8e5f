"""How long a unit of the skyline search's work lasts, by the size of the part it searches.

    python benchmarks/skyline_work.py [--units 2] [--out benchmarks/results/skyline_work.csv]

For each instance (MiniMalloc's 11 hard instances where `../shared/data` holds them,
idealloc's resnet50 trace likewise; parts of one sliding window of rectangles, seeded;
the schedules the peak heuristic meets at 70 % of the program order's peak on the
seeded layered graphs of 500 and 1,000 ops): the search alone (`search.ask`) on its
largest part, at that part's live bytes, for `--units` units of work. A row per
instance: rectangles, incidences (a rectangle over a section, one each), nodes walked,
wall seconds, nodes a second, and the seconds a unit lasts with a node counted as one
(`as_one`) and as `budget.node_work` counts it by the part's size (`counted`): both
from the same run's rate, so their ratio does not depend on the machine's load.

Times are wall seconds of one run on a shared 2-core machine.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.remat import write
from benchmarks.work import DATA, layered
from optplan.budget import NODES_PER_UNIT, Budget, node_work
from optplan.planners.common import make_form
from optplan.planners.search import ask, prepare
from optplan.problem import Buffer, Interval, Problem, read_csv
from optplan.schedule.graph import peak_bytes, problem_of
from optplan.schedule.remat.heuristic import greedy

COLUMNS = (
    "instance",
    "rectangles",
    "incidences",
    "nodes",
    "seconds",
    "nodes_per_s",
    "as_one_s_per_unit",
    "counted_s_per_unit",
)
RESULTS = ROOT / "benchmarks" / "results" / "skyline_work.csv"


def sliding(rectangles: int, span: int, seed: int) -> Problem:
    """Rectangle k live over [k, k + span), its size drawn from `seed`: one part."""
    draw = random.Random(seed)
    return Problem(
        tuple(
            Buffer(f"b{k}", draw.randint(1, 64), (Interval(k, k + span),))
            for k in range(rectangles)
        )
    )


def schedule(nodes: int) -> Problem | None:
    """The peak heuristic's schedule of the seeded layered graph at 70 %, or None."""
    graph = layered(nodes)
    order = tuple(range(graph.ops))
    target = int(0.7 * peak_bytes(graph, order))
    steps = greedy(graph, order, target, [True] * graph.ops, time.perf_counter() + 600)
    return None if steps is None else problem_of(graph, steps)


def instances() -> list[tuple[str, Problem]]:
    found = []
    folder = DATA / "minimalloc" / "challenging"
    if folder.is_dir():
        found += [(p.name.split(".")[0], read_csv(p)) for p in sorted(folder.glob("*.csv"))]
    else:
        print(f"skipping MiniMalloc's instances: {folder} is absent", file=sys.stderr)
    trace = DATA / "idealloc" / "resnet50.csv"
    if trace.is_file():
        found.append(("resnet50", read_csv(trace)))
    else:
        print(f"skipping idealloc's resnet50: {trace} is absent", file=sys.stderr)
    for rectangles, span in ((400, 50), (400, 100), (800, 200), (1600, 200)):
        found.append((f"sliding {rectangles}x{span}", sliding(rectangles, span, seed=3)))
    for nodes in (500, 1000):
        problem = schedule(nodes)
        if problem is not None:
            found.append((f"layered_{nodes}@70% schedule", problem))
    return found


def row(name: str, problem: Problem, units: float) -> dict[str, object]:
    form = make_form(problem)
    packing = prepare(form.rects, form.parts, 0)
    part = max(packing.parts, key=lambda p: p.incidences)
    incidences = part.incidences
    one = prepare(tuple(part.rects), (tuple(part.rects),), 0)
    clock = Budget(work=units, seconds=3_000.0).clock()
    started = time.perf_counter()
    found = ask(one, one.live_bytes, time_limit=units, clock=clock)
    seconds = time.perf_counter() - started
    rate = found.nodes / seconds if seconds > 0 else 0.0
    as_one = NODES_PER_UNIT / rate if rate else 0.0
    counted = 1 / (node_work(incidences) * rate) if rate else 0.0
    return {
        "instance": name,
        "rectangles": len(part.rects),
        "incidences": incidences,
        "nodes": found.nodes,
        "seconds": f"{seconds:.2f}",
        "nodes_per_s": f"{rate:.0f}",
        "as_one_s_per_unit": f"{as_one:.2f}",
        "counted_s_per_unit": f"{counted:.2f}",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=float, default=2.0, help="work units per search")
    parser.add_argument("--out", default=str(RESULTS), help="the CSV written")
    args = parser.parse_args()
    rows = []
    for name, problem in instances():
        rows.append(row(name, problem, args.units))
        print(" | ".join(str(rows[-1][c]) for c in COLUMNS), flush=True)
    write(rows, args.out, COLUMNS)


if __name__ == "__main__":
    main()
