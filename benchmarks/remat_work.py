"""How long a unit of recomputation's work lasts, stage by stage.

    python benchmarks/remat_work.py [--units 30] [--cases 1000:7:0.6,1000:10:0.8]
        [--out benchmarks/results/remat_work.csv]

For each case (a held-out layered graph of `reorder_heldout.py`, nodes and seed, and a
share of its program order's peak, the budget): `rematerialise` with `--units` units of
work, and for each of its stages the calls, the CPU seconds of this process and the
units the stage counted on the run's clock. The stages nest: "start orders", "covering
bound", "heuristics" (inside it "moves": the peak heuristic's runs, and "packings":
greedy, `tries.descend` and CP-SAT on a schedule's instances), "nearest packed",
"models" and "answer" (inside it the traced bound, where nothing was found); "total" is
the whole call. seconds_per_unit = cpu_s / units: a unit is meant to be about a second
of one core, and a stage that counts no work shows none.

CPU seconds, not wall: they move little with the load of a shared 2-core machine.
"""

from __future__ import annotations

import argparse
import importlib
import math
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.remat import in_order, write
from benchmarks.reorder_heldout import write_graph
from optplan.budget import Budget, active, running
from optplan.schedule.graph import peak_bytes
from optplan.schedule.remat import Remat, rematerialise

COLUMNS = ("instance", "units", "stage", "calls", "cpu_s", "counted", "seconds_per_unit")
RESULTS = ROOT / "benchmarks" / "results" / "remat_work.csv"
STAGES = (
    ("start orders", "optplan.schedule.remat", "_orders"),
    ("covering bound", "optplan.schedule.remat", "_covering"),
    ("heuristics", "optplan.schedule.remat.anytime", "heuristics"),
    ("moves", "optplan.schedule.remat.heuristic", "relieved"),
    ("packings", "optplan.schedule.remat.packing", "packed"),
    ("nearest packed", "optplan.schedule.remat", "_nearest_packed"),
    ("models", "optplan.schedule.remat", "_models"),
    ("answer", "optplan.schedule.remat.answer", "answer"),
    ("traced bound", "optplan.schedule.remat.bounds", "traced"),
)


class Tally:
    """Per stage: calls, CPU seconds and units counted (the outermost call of each)."""

    def __init__(self) -> None:
        self.rows: dict[str, list[float]] = {}
        self.depth: dict[str, int] = {}

    def timed(self, stage: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            if self.depth.get(stage):
                return function(*args, **kwargs)
            clock, began = active(), time.process_time()
            spent = clock.spent if clock is not None else 0.0
            self.depth[stage] = 1
            try:
                return function(*args, **kwargs)
            finally:
                self.depth[stage] = 0
                row = self.rows.setdefault(stage, [0, 0.0, 0.0])
                row[0] += 1
                row[1] += time.process_time() - began
                row[2] += (clock.spent - spent) if clock is not None else 0.0

        return run


@contextmanager
def tallied(tally: Tally) -> Iterator[None]:
    """Every reference to a stage's function in optplan's modules timed by `tally`."""
    replaced: list[tuple[object, str, object]] = []
    for stage, module, name in STAGES:
        function = getattr(importlib.import_module(module), name)
        timed = tally.timed(stage, function)
        for held in [m for key, m in sys.modules.items() if key.startswith("optplan")]:
            for attribute, value in list(vars(held).items()):
                if value is function:
                    replaced.append((held, attribute, value))
                    setattr(held, attribute, timed)
    try:
        yield
    finally:
        for held, attribute, value in replaced:
            setattr(held, attribute, value)


def rows(nodes: int, seed: int, share: float, units: float) -> list[dict[str, object]]:
    with tempfile.TemporaryDirectory() as folder:
        write_graph(Path(folder), nodes, seed)
        (path,) = Path(folder).glob("*.json")
        graph, _ = in_order(path)
    budget = math.ceil(peak_bytes(graph, tuple(range(graph.ops))) * share)
    tally, outer = Tally(), Budget(work=1e9).clock()  # the run counts its work on `outer` too
    began = time.process_time()
    with tallied(tally), running(outer):
        rematerialise(graph, Remat(budget, time_limit=3_000.0, work=units))
    tally.rows["total"] = [1, time.process_time() - began, outer.spent]
    name = f"{path.stem} @ {share:g}"
    return [
        {
            "instance": name,
            "units": units,
            "stage": stage,
            "calls": int(calls),
            "cpu_s": f"{cpu:.1f}",
            "counted": f"{counted:.2f}",
            "seconds_per_unit": f"{cpu / counted:.2f}" if counted > 0.005 else "not counted",
        }
        for stage, (calls, cpu, counted) in tally.rows.items()
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--units", type=float, default=30.0)
    parser.add_argument("--cases", default="1000:7:0.6,1000:10:0.8")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args()
    table: list[dict[str, object]] = []
    for case in args.cases.split(","):
        nodes, seed, share = case.split(":")
        for row in rows(int(nodes), int(seed), float(share), args.units):
            print(" | ".join(str(row[column]) for column in COLUMNS), flush=True)
            table.append(row)
    write(table, args.out, COLUMNS)


if __name__ == "__main__":
    main()
