"""Memory objects (`mem_obj_id`) on the 19 models of integrations_executorch.csv: optplan
beside ExecuTorch's greedy, with `allow_overlapping_allocations` True and False.

Per model (`tests/executorch_models.py`), one export: an algorithm in ExecuTorch's suite
(`tests/executorch_objects_check.py` `Beside`) plans the very specs of every call (each
control-flow submodule, then the method) four ways (greedy and optplan, each with
overlapping allocations allowed and not), judges every result's objects with the
independent check there, and keeps optplan's objects without overlap in the program,
which then runs in ExecuTorch's runtime against eager torch. Bytes over objects are each
object's run of bytes, summed over the objects of every call; `no_overlap_bound` is the
least total optplan proved for objects without overlap (`optimal` when it reached it in
every call); with overlap allowed the least total is the least arena, proven in
integrations_executorch.csv. The table goes to
benchmarks/results/executorch_objects.csv.

    nice -n 10 python benchmarks/executorch_objects.py [--models cnn,gru] [--work 10]
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
RESULTS = ROOT / "benchmarks" / "results" / "executorch_objects.csv"


@dataclass(frozen=True)
class Row:
    model: str
    calls: int
    greedy_overlap_bytes: int
    optplan_overlap_bytes: int
    greedy_overlap_objects: int
    optplan_overlap_objects: int
    greedy_no_overlap_bytes: int
    optplan_no_overlap_bytes: int
    no_overlap_bound: int
    no_overlap_status: str
    greedy_no_overlap_objects: int
    optplan_no_overlap_objects: int
    saved_no_overlap_pct: float
    faults: int
    outputs_equal: bool
    seconds: float


def measure(name: str, work: float | None) -> Row:
    import executorch_models
    import torch
    from executorch_objects_check import Beside

    started = time.perf_counter()
    case = executorch_models.BUILDERS[name]()
    beside = Beside(keep=False, work=work)
    program = executorch_models.lower(case, [beside])
    got, want = executorch_models.run(program, case), executorch_models.eager(case)
    equal = all(
        len(have) == len(expected)
        and all(torch.allclose(h, e, rtol=1e-4, atol=1e-5) for h, e in zip(have, expected))
        for have, expected in zip(got, want)
    )

    def total(label: str, allow: bool, field: int) -> int:
        return sum(row[label, allow][field] for row in beside.calls)

    theirs, mine = total("greedy", False, 0), total("optplan", False, 0)
    return Row(
        name,
        len(beside.calls),
        total("greedy", True, 0),
        total("optplan", True, 0),
        total("greedy", True, 1),
        total("optplan", True, 1),
        theirs,
        mine,
        sum(int(d.get("objects_bound", 0)) for r in beside.reports for d in r.detail.values()),
        "optimal" if all(r.status == "optimal" for r in beside.reports) else "feasible",
        total("greedy", False, 1),
        total("optplan", False, 1),
        round(100 * (theirs - mine) / theirs, 1) if theirs else 0.0,
        sum(len(v[3]) for row in beside.calls for v in row.values()),
        equal,
        round(time.perf_counter() - started, 1),
    )


def main(argv: Sequence[str] | None = None) -> int:
    import executorch_models

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="", help="comma-separated (default: all 19)")
    parser.add_argument("--work", type=float, default=None, help="optplan's work per graph")
    parser.add_argument("-o", "--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    names = args.models.split(",") if args.models else list(executorch_models.BUILDERS)
    rows = []
    for name in names:
        case = executorch_models.BUILDERS[name]
        try:
            rows.append(measure(name, args.work))
        except ImportError as missing:  # a transformers model without transformers
            print(f"{name}: skipped ({missing})", flush=True)
            continue
        print(" ".join(f"{k}={v}" for k, v in asdict(rows[-1]).items()), flush=True)
        del case
    header = [f.name for f in fields(Row)]
    print("\n" + " | ".join(header))
    for row in rows:
        print(" | ".join(str(v) for v in asdict(row).values()))
    with args.output.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(header)
        writer.writerows([list(asdict(row).values()) for row in rows])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
