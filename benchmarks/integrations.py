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

With `--dynamic` instead: GPT-2- and LLaMA-style decoders from `relax.frontend.nn`
(`tests/tvm_models.py` `decoder`: 2 layers, hidden 256, fp32 and fp16) whose prefill and
decode (with a KV cache) have a symbolic length bounded at 512 and at 2048, planned both
ways at the bound, run at lengths 1, 17 and the bound, and the same function planned with
its length fixed at the bound (`fixed_bytes`, which optplan's arena must equal); the table
goes to benchmarks/results/integrations_dynamic.csv.

With `--executorch` instead: the models of `tests/executorch_models.py` (CNNs, a U-Net,
an MLP with skips, a GRU, a random DAG, encoder layers, `cond`, `map`, a KV-cache step
with mutable buffers, the same step through the reinplace pass, MobileNet-like blocks
through XNNPACK, a dynamic batch, a model where greedy misses the bound and one where no
plan reaches it; GPT-2, BERT, ViT and LLaMA from `transformers` configs with random
weights, at the tests' sizes) are lowered by ExecuTorch with its default planner and with
`optplan.executorch.algorithm()`, run in ExecuTorch's runtime (several calls in order for
a model with state), and compared with each other and with eager torch; the table (with
the bound optplan proved and the gap to it) goes to
benchmarks/results/integrations_executorch.csv.

With `--executorch --tiers`: fast and slow memory ids. Each model gets a fast memory of
25 % and of 50 % of the bytes ExecuTorch's own plan takes in one buffer and an unbounded
slow one at 10x the cost per byte; in one export ExecuTorch's `BankedGreedy` (its own
capacity-aware planner: fastest bank first, largest spec first), optplan's `greedy` (fill
the fast memory by size or by access density) and `algorithm(memories=...)` (cpsat, static
placement) plan the same specs, each judged by `optplan.executorch.judge`; the `.pte`
holds cpsat's plan and runs against ExecuTorch's own. Traffic is summed over the planned
graphs (a `cond`'s branches and a `map`'s body once each); the table goes to
benchmarks/results/integrations_executorch_tiers.csv.

    python benchmarks/integrations.py [--models gpt2,resnet50] [--time-limit 30] [--no-run]
                                      [--plan-only llama_fp16]
    python benchmarks/integrations.py --executorch [--tiers]
    python benchmarks/integrations.py --dynamic [--bounds 512,2048] [--models gpt2_float16]

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
RESULTS_TIERS = ROOT / "benchmarks" / "results" / "integrations_executorch_tiers.csv"
FAST_SHARES = (25, 50)  # the fast memory, in % of ExecuTorch's own one-buffer plan
SLOW_COST = 10
RESULTS_DYNAMIC = ROOT / "benchmarks" / "results" / "integrations_dynamic.csv"
DECODERS = ("gpt2_float32", "gpt2_float16", "llama_float32", "llama_float16")


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
class DynamicRow:
    model: str
    function: str
    bound: int
    tensors: int
    tvm_bytes: int
    optplan_bytes: int
    bound_bytes: int | None
    fixed_bytes: int
    saved_pct: float
    status: str
    left_to_tvm: int
    equal_at_1: str
    equal_at_17: str
    equal_at_bound: str
    total_seconds: float


def measure_dynamic(name: str, bound: int, time_limit: float, run: bool) -> list[DynamicRow]:
    """One row per function with a symbolic length (prefill, decode) of decoder `name`."""
    started = time.perf_counter()
    arch, dtype = name.split("_")
    model = tvm_models.decoder(arch, dtype, bound, "small")
    both = tvm_models.decoder_both(model, time_limit=time_limit, build=run)
    rows = []
    for function in tvm_models.DECODER_FUNCTIONS:
        report, theirs = both.reports[function], both.tvm_bytes[function]
        fixed = tvm_models.fixed_at_bound(model, function, time_limit=time_limit)
        equal = [str(both.same_at(function, n)) if run else "not run" for n in (1, 17, bound)]
        ours = both.optplan_bytes[function]
        rows.append(DynamicRow(
            name, function, bound, report.tensors, theirs, ours, report.bound_bytes,
            fixed.arena_bytes, round(100 * (theirs - ours) / theirs, 1) if theirs else 0.0,
            report.status if report.kept is None else f"kept TVM's: {report.kept}",
            len(report.left), *equal, round(time.perf_counter() - started, 1),
        ))  # fmt: skip
    return rows


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


@dataclass(frozen=True)
class TiersRow:
    model: str
    fast_pct: int
    fast_capacity: int
    specs: int
    all_in_slow: int
    banked_greedy: str
    optplan_greedy: int
    cpsat: int
    bound: int
    gap_pct: float
    saved_vs_banked_pct: str
    status: str
    fast_used: int
    slow_used: int
    plan_seconds: float
    outputs_equal: bool
    total_seconds: float


def measure_tiers(name: str, time_limit: float) -> list[TiersRow]:
    """One model at each share of FAST_SHARES: three planners on the same specs, cpsat's
    plan lowered and run against ExecuTorch's own and eager torch."""
    import executorch_models

    case = executorch_models.BUILDERS[name]()
    default = executorch_models.lower(case, None)
    theirs = executorch_models.buffer_bytes(default)
    reference = executorch_models.run(default, case)
    eager = executorch_models.eager(case)
    return [
        _tiers_row(
            name,
            case,
            share,
            theirs * share // 100 // 16 * 16,
            time_limit,
            (default, reference, eager),
        )
        for share in FAST_SHARES
    ]


def _tiers_row(
    name: str, case: Any, share: int, fast: int, time_limit: float, seen: tuple[Any, ...]
) -> TiersRow:
    import executorch_banked
    import executorch_models

    import optplan.executorch as oet
    from optplan.problem import Memory

    started = time.perf_counter()
    memories = [Memory("fast", fast), Memory("slow", None, cost=SLOW_COST)]
    reports: list[oet.PlanReport] = []
    cpsat = oet.algorithm(memories=memories, time_limit=time_limit, report=reports.append)
    baselines = {
        "banked": executorch_banked.banked_greedy(memories),
        "greedy": oet.algorithm("greedy", memories=memories),
    }
    beside = executorch_banked.Beside(cpsat, memories, baselines)
    program = executorch_models.lower(case, [beside])
    _, reference, eager = seen
    equal = _same(executorch_models.run(program, case), reference, eager)
    banked = [row["banked"] for row in beside.calls]
    banked_traffic = (
        None if any(isinstance(b, Exception) for b in banked) else sum(b.traffic for b in banked)
    )
    ours = sum(r.traffic or 0 for r in reports)
    bound = sum(r.traffic_bound or 0 for r in reports)
    statuses = {r.status for r in reports}
    method = reports[-1]
    return TiersRow(
        name, share, fast, sum(r.specs for r in reports),
        sum(r.traffic_all_in_slow or 0 for r in reports),
        "failed" if banked_traffic is None else str(banked_traffic),
        sum(row["greedy"].traffic for row in beside.calls), ours, bound,
        round(100 * (ours - bound) / bound, 1) if bound else 0.0,
        "n/a" if not banked_traffic else f"{100 * (banked_traffic - ours) / banked_traffic:.1f}",
        next((s for s in ("infeasible", "unknown", "feasible") if s in statuses), "optimal"),
        method.memories[0].buffer_bytes, method.memories[1].buffer_bytes,
        round(sum(r.seconds for r in reports), 2), equal, round(time.perf_counter() - started, 1),
    )  # fmt: skip


def _same(got: list[list[Any]], expected: list[list[Any]], reference: list[list[Any]]) -> bool:
    """Outputs equal to ExecuTorch's plan's bit for bit and to eager torch's within 1e-4."""
    import torch

    return all(
        len(want) == len(have) == len(eager)
        and all(torch.equal(a, b) for a, b in zip(want, have))
        and all(torch.allclose(b, e, rtol=1e-4, atol=1e-5) for b, e in zip(have, eager))
        for want, have, eager in zip(expected, got, reference)
    )


def print_table(rows: Sequence[Any]) -> None:
    names = [f.name for f in fields(rows[0])]
    table = [names] + [[str(v) for v in astuple(row)] for row in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(names))]
    for line in table:
        print("  ".join(cell.rjust(width) for cell, width in zip(line, widths)))


def _results_path(args: argparse.Namespace) -> Path:
    if args.executorch:
        return RESULTS_TIERS if args.tiers else RESULTS_EXECUTORCH
    return RESULTS_DYNAMIC if args.dynamic else RESULTS


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", help="comma-separated names (default: every model)")
    parser.add_argument("--scale", choices=("tiny", "real"), default="real")
    parser.add_argument("--time-limit", type=float, default=30.0)
    parser.add_argument("--no-run", action="store_true", help="plan only; do not build or run")
    parser.add_argument("--plan-only", default="", help="models to plan but not build or run")
    parser.add_argument("--executorch", action="store_true", help="ExecuTorch's models instead")
    parser.add_argument("--tiers", action="store_true", help="with --executorch: fast and slow ids")
    parser.add_argument("--dynamic", action="store_true", help="symbolic-length decoders instead")
    parser.add_argument("--bounds", default="512,2048", help="with --dynamic: the length bounds")
    parser.add_argument("--csv", type=Path)
    args = parser.parse_args(argv)
    rows: list[Any] = []
    path = args.csv or _results_path(args)
    plan_only = set(args.plan_only.split(","))
    if args.dynamic:
        for bound in (int(b) for b in args.bounds.split(",")):
            for name in args.models.split(",") if args.models else DECODERS:
                run = not args.no_run and name not in plan_only
                rows += measure_dynamic(name, bound, args.time_limit, run)
                write_csv(rows, path)
    elif args.executorch:
        import executorch_models

        from optplan.planners import jit

        jit.warm("optplan.planners.search")  # compiled up front: no time limit pays for it
        for name in args.models.split(",") if args.models else executorch_models.BUILDERS:
            if args.tiers:
                rows += measure_tiers(name, args.time_limit)
            else:
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
