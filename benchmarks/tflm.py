"""optplan inside TensorFlow Lite Micro: six int8 models run with TFLite Micro's own
arena plan and with optplan's offline plan, each at the smallest arena it runs in.

Steps, per model of `tests/data/tflite/` (built by `benchmarks/tflm_models.py`):

1. Read it with optplan's `.tflite` frontend and plan it with cpsat (16-byte alignment,
   sizes rounded to 16, inputs and outputs in the arena, as TFLite Micro plans).
2. Write the plan into the model as its `OfflineMemoryAllocation` metadata.
3. Find, by bisection to the byte, the smallest arena in which TFLite Micro's Python
   interpreter (`pip install tflite-micro`) runs the model as it was (TFLite Micro's
   GreedyMemoryPlanner) and the planned model, each probe in a child process; record the
   head (planned section) and tail (persistent records) at that size.
4. Compare both runs' outputs byte for byte on the same random int8 input.
5. Print a table and write benchmarks/results/tflm.csv. `saved_pct` is on the whole
   arena, `head_saved_pct` on the planned section alone.

    python benchmarks/tflm.py [--models ds_cnn,resnet8] [--time-limit 60]
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from collections.abc import Sequence
from dataclasses import astuple, dataclass, fields
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from optplan.frontends import load
from optplan.integrations.tflm import planned_model
from optplan.integrations.tflm_run import compare_in_tflm
from optplan.planners import get_planner, jit
from optplan.problem import lower_bound

MODELS = ROOT / "tests" / "data" / "tflite"
RESULTS = ROOT / "benchmarks" / "results" / "tflm.csv"
ORDER = ("ds_cnn", "mobilenet_v1_025", "resnet8", "autoencoder", "mobilenet_v2_035", "transformer")


@dataclass(frozen=True)
class Row:
    model: str
    tensors: int
    tflm_arena_bytes: int
    optplan_arena_bytes: int
    bound_bytes: int
    saved_pct: float
    outputs_equal: bool
    tflm_head_bytes: int
    optplan_head_bytes: int
    head_saved_pct: float
    tflm_tail_bytes: int
    optplan_tail_bytes: int
    status: str
    plan_seconds: float
    total_seconds: float


def measure(name: str, time_limit: float) -> Row:
    started = time.perf_counter()
    path = MODELS / f"{name}.tflite"
    loaded = load(str(path))
    plan = get_planner("cpsat", work=None, time_limit=time_limit)(loaded.problem)
    bound = lower_bound(loaded.problem)
    found = compare_in_tflm(path.read_bytes(), planned_model(loaded, plan), bound)
    own, planned = found.own.run, found.planned.run
    return Row(
        model=name,
        tensors=len(loaded.problem.buffers),
        tflm_arena_bytes=own.arena_bytes,
        optplan_arena_bytes=planned.arena_bytes,
        bound_bytes=bound,
        saved_pct=round(100 * (1 - planned.arena_bytes / own.arena_bytes), 1),
        outputs_equal=found.outputs_equal,
        tflm_head_bytes=own.head_bytes,
        optplan_head_bytes=planned.head_bytes,
        head_saved_pct=round(100 * (1 - planned.head_bytes / own.head_bytes), 1),
        tflm_tail_bytes=own.tail_bytes,
        optplan_tail_bytes=planned.tail_bytes,
        status=plan.status.value,
        plan_seconds=round(plan.seconds, 2),
        total_seconds=round(time.perf_counter() - started, 1),
    )


def print_table(rows: Sequence[Row]) -> None:
    names = [f.name for f in fields(Row)]
    widths = [
        max(len(n), *(len(str(v)) for v in (astuple(r)[i] for r in rows)))
        for i, n in enumerate(names)
    ]
    print("  ".join(n.rjust(w) for n, w in zip(names, widths)))
    for row in rows:
        print("  ".join(str(v).rjust(w) for v, w in zip(astuple(row), widths)))


def write_csv(rows: Sequence[Row], path: Path) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow([f.name for f in fields(Row)])
        writer.writerows(astuple(r) for r in rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default=",".join(ORDER))
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--csv", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    jit.warm("optplan.planners.search")  # compile once here, not inside a time limit
    rows = []
    for name in args.models.split(","):
        rows.append(measure(name, args.time_limit))
        print(f"{name}: done in {rows[-1].total_seconds} s", file=sys.stderr)
    print_table(rows)
    write_csv(rows, args.csv)
    print(f"written to {args.csv}")
    return (
        0
        if all(r.outputs_equal and r.optplan_arena_bytes <= r.tflm_arena_bytes for r in rows)
        else 1
    )


if __name__ == "__main__":
    raise SystemExit(main())
