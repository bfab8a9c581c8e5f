"""optplan inside TVM: six models compiled with TVM's StaticPlanBlockMemory and with
`optplan.tvm.PlanBlockMemory`, run in the Relax VM, compared.

Steps, per model (`tests/tvm_models.py` at its "real" scale unless `--scale tiny`):

1. Build it with TVM (relax.frontend.nn, or onnx.helper through TVM's ONNX frontend) and
   lower it with TVM's CPU pipeline up to memory planning.
2. Plan it both ways: TVM's pass, and optplan's (cpsat with `--time-limit`, 64-byte
   alignment as TVM's runtime needs); total the `alloc_storage` bytes of each.
3. Unless `--no-run`: finish TVM's pipeline both ways, build with LLVM, run `main` in the
   Relax VM on the CPU with the same random arguments, and compare the outputs byte for
   byte.
4. Print a table and write benchmarks/results/integrations.csv.

With `--executorch` instead: the models of `tests/executorch_models.py` (CNNs, a U-Net, an
MLP with skips, a GRU, a random DAG, encoder layers, `cond`, `map`, a KV-cache step with
mutable buffers, the same step through the reinplace pass, MobileNet-like blocks through
XNNPACK, a dynamic batch, a model where greedy misses the bound; GPT-2, BERT, ViT and
LLaMA from `transformers` configs with random weights, at the tests' sizes) are lowered by
ExecuTorch with its default planner and with `optplan.executorch.algorithm()`, run in
ExecuTorch's runtime (several calls in order for a model with state), and compared with
each other and with eager torch; the table (with the bound optplan proved and the gap to
it) goes to benchmarks/results/integrations_executorch.csv.

    python benchmarks/integrations.py [--models gpt2,resnet50] [--time-limit 30] [--no-run]
                                      [--plan-only llama_fp16]
    python benchmarks/integrations.py --executorch

Real scales: MLP 784-2048x4-10 at batch 128; GPT-2 small (12 layers, d=768, vocab
50257) at sequence 128; LLaMA-style fp16 at TinyLlama's widths (d=2048, 32 heads, ffn
5632, vocab 32000), 2 layers, sequence 32 (TVM's untuned fp16 kernels are slow on a
CPU); ResNet-50 and MobileNetV2 at 224x224; a UNet (widths 64-1024) at 256x256.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from collections.abc import Sequence
from dataclasses import astuple, dataclass, fields
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import tvm_models

RESULTS = ROOT / "benchmarks" / "results" / "integrations.csv"
RESULTS_EXECUTORCH = ROOT / "benchmarks" / "results" / "integrations_executorch.csv"


@dataclass(frozen=True)
class Row:
    model: str
    tensors: int
    tvm_bytes: int
    optplan_bytes: int
    bound_bytes: int
    saved_pct: float
    status: str
    plan_seconds: float
    outputs_equal: str
    total_seconds: float


def measure(name: str, scale: str, time_limit: float, run: bool) -> Row:
    import tvm
    from tvm import relax

    from optplan.tvm import Options, plan_module, storage_bytes

    started = time.perf_counter()
    model = tvm_models.BUILDERS[name](scale)
    if run:
        compiled = tvm_models.compile_both(model, time_limit=time_limit)
        reports, tvm_bytes, ours = compiled.reports, compiled.tvm_bytes, compiled.optplan_bytes
        equal, seconds = str(compiled.same_outputs), compiled.seconds_plan
    else:
        target = tvm.target.Target("llvm")
        low = tvm_models.lowered(model.mod, target)
        tvm_bytes = sum(storage_bytes(relax.transform.StaticPlanBlockMemory()(low)).values())
        planned_at = time.perf_counter()
        planned, reports = plan_module(low, Options(time_limit=time_limit))
        seconds = time.perf_counter() - planned_at
        ours, equal = sum(storage_bytes(planned).values()), "not run"
    (report,) = reports
    return Row(
        name,
        report.tensors,
        tvm_bytes,
        ours,
        report.bound_bytes,
        round(100 * (tvm_bytes - ours) / tvm_bytes, 1) if tvm_bytes else 0.0,
        report.status if report.kept is None else f"kept TVM's: {report.kept}",
        round(seconds, 2),
        equal,
        round(time.perf_counter() - started, 1),
    )


@dataclass(frozen=True)
class ExecuTorchRow:
    model: str
    specs: int
    executorch_bytes: int
    optplan_bytes: int
    bound_bytes: int
    saved_pct: float
    gap_pct: float
    status: str
    plan_seconds: float
    outputs_equal: bool
    total_seconds: float


def measure_executorch(name: str, time_limit: float) -> ExecuTorchRow:
    """One model lowered both ways and run: ExecuTorch's bytes and optplan's, the bound
    optplan proved (the method's, after its submodules' plans), and whether the outputs
    equal ExecuTorch's plan's bit for bit and eager torch's within 1e-4."""
    import executorch_models
    import torch

    import optplan.executorch

    started = time.perf_counter()
    case = executorch_models.BUILDERS[name]()
    reports: list[optplan.executorch.PlanReport] = []
    default = executorch_models.lower(case, None)
    algo = optplan.executorch.algorithm(time_limit=time_limit, report=reports.append)
    ours = executorch_models.lower(case, [algo])
    expected, got = executorch_models.run(default, case), executorch_models.run(ours, case)
    reference = executorch_models.eager(case)
    equal = all(
        len(want) == len(have) == len(eager)
        and all(torch.equal(a, b) for a, b in zip(want, have))
        and all(torch.allclose(b, e, rtol=1e-4, atol=1e-5) for b, e in zip(have, eager))
        for want, have, eager in zip(expected, got, reference)
    )
    theirs, mine = executorch_models.buffer_bytes(default), executorch_models.buffer_bytes(ours)
    method = reports[-1]
    return ExecuTorchRow(
        name,
        sum(r.specs for r in reports),
        theirs,
        mine,
        method.bound_bytes,
        round(100 * (theirs - mine) / theirs, 1) if theirs else 0.0,
        round(100 * method.gap, 1),
        method.status,
        round(sum(r.seconds for r in reports), 2),
        equal,
        round(time.perf_counter() - started, 1),
    )


def print_table(rows: Sequence[Any]) -> None:
    names = [f.name for f in fields(rows[0])]
    table = [names] + [[str(v) for v in astuple(row)] for row in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(names))]
    for line in table:
        print("  ".join(cell.rjust(width) for cell, width in zip(line, widths)))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", help="comma-separated names (default: every model)")
    parser.add_argument("--scale", choices=("tiny", "real"), default="real")
    parser.add_argument("--time-limit", type=float, default=30.0)
    parser.add_argument("--no-run", action="store_true", help="plan only; do not build or run")
    parser.add_argument("--plan-only", default="", help="models to plan but not build or run")
    parser.add_argument("--executorch", action="store_true", help="ExecuTorch's models instead")
    parser.add_argument("--csv", type=Path)
    args = parser.parse_args(argv)
    rows: list[Any] = []
    path = args.csv or (RESULTS_EXECUTORCH if args.executorch else RESULTS)
    plan_only = set(args.plan_only.split(","))
    if args.executorch:
        import executorch_models

        from optplan.planners import jit

        jit.warm("optplan.planners.search")  # compiled up front: no time limit pays for it
        for name in args.models.split(",") if args.models else executorch_models.BUILDERS:
            rows.append(measure_executorch(name, args.time_limit))
            write_csv(rows, path)
    else:
        for name in args.models.split(",") if args.models else tvm_models.BUILDERS:
            run = not args.no_run and name not in plan_only
            rows.append(measure(name, args.scale, args.time_limit, run))
            write_csv(rows, path)
    print_table(rows)
    return 0


def write_csv(rows: Sequence[Any], path: Path) -> None:
    """The rows so far (a long run keeps what it has measured)."""
    print(f"{rows[-1]}", file=sys.stderr, flush=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow([f.name for f in fields(rows[0])])
        writer.writerows(astuple(row) for row in rows)


if __name__ == "__main__":
    sys.exit(main())
