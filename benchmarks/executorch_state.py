"""Shared state across methods: a decoder with a KV cache, `prefill` and `decode` sharing it.

1. Export it with ExecuTorch's `MemoryPlanningPass(share_mutable_buffers=True)` (greedy),
   and with `optplan.executorch.shared_state_pass` over one memory and over two (a fast
   memory of 64, 128 and 256 KiB beside a slow one costing 10 per byte, the cache in the
   slow one).
2. Run each `.pte` in ExecuTorch's runtime (its methods share their arenas) over a prefill
   and ten decode steps; outputs must equal greedy's bit for bit.
3. Bytes as the runtime allocates them with shared arenas: per memory id the largest
   method's buffer, summed. With two memories, the activations' traffic per method (bytes
   written and read times the memory's cost; the cache's own traffic is the same in every
   plan and left out) beside the same activations all in the slow memory, which is where
   greedy's one activation buffer must go when it does not fit the fast one.
4. Print a table and write benchmarks/results/integrations_executorch_state.csv.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import executorch_decoder
import torch

import optplan.executorch as oet
from optplan.problem import Memory

RESULTS = ROOT / "benchmarks" / "results" / "integrations_executorch_state.csv"
FIELDS = ["plan", "fast_bytes", "ids", "shared_bytes", "greedy_bytes", "same_outputs",
          "traffic_prefill", "traffic_decode", "traffic_all_slow_prefill",
          "traffic_all_slow_decode", "fits"]  # fmt: skip


def shared_bytes(program: object) -> tuple[int, list[int]]:
    """Step 3: per id the largest method's buffer, and their sum."""
    sizes = [list(p.non_const_buffer_sizes) for p in program.executorch_program.execution_plan]
    widest = [max(s[k] if k < len(s) else 0 for s in sizes) for k in range(max(map(len, sizes)))]
    return sum(widest), widest


def main() -> None:
    from executorch.exir.passes import MemoryPlanningPass

    greedy = executorch_decoder.export(MemoryPlanningPass(share_mutable_buffers=True))
    want = executorch_decoder.run(greedy)
    theirs, ids = shared_bytes(greedy)
    rows = [{"plan": "greedy", "fast_bytes": "", "ids": ids, "shared_bytes": theirs, "greedy_bytes": theirs,
                 "same_outputs": True, "fits": ""}]  # fmt: skip
    setups = [("optplan one memory", None, [Memory("ram")], "ram")]
    for fast in (64 * 1024, 128 * 1024, 256 * 1024):
        memories = [Memory("fast", fast), Memory("slow", cost=10)]
        setups.append(("optplan fast+slow", fast, memories, "slow"))
    for label, fast, memories, state in setups:
        reports: list[oet.PlanReport] = []
        planning = oet.shared_state_pass(memories, state=state, report=reports.append)
        program = executorch_decoder.export(planning)
        got = executorch_decoder.run(program)
        total, ids = shared_bytes(program)
        row = {"plan": label, "fast_bytes": fast or "", "ids": ids, "shared_bytes": total,
                   "greedy_bytes": theirs, "same_outputs": all(map(torch.equal, want, got)),
                   "fits": all(r.fits for r in reports)}  # fmt: skip
        if fast is not None:  # reports come in the order the methods were exported
            methods = [r for r in reports if r.graph == "method"]
            by_name = dict(zip(executorch_decoder.inputs(), methods))
            for name, report in by_name.items():
                row[f"traffic_{name}"] = report.traffic
                row[f"traffic_all_slow_{name}"] = report.traffic_all_in_slow
        rows.append(row)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    with RESULTS.open("w", newline="") as out:
        writer = csv.DictWriter(out, FIELDS)
        writer.writeheader()
        writer.writerows(rows)
    for row in rows:
        print(" | ".join(f"{k}={row.get(k, '')}" for k in FIELDS))


if __name__ == "__main__":
    main()
