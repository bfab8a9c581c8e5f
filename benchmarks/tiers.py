"""Fast and slow memory: the least slow-memory traffic, proven, on MLPerf-Tiny-class models.

For every model (MLPerf Tiny's four reference networks written in `graphs/tiny.py`, and
the zoo's CNNs and transformers in tests/data/zoo/*.onnx) and every fast memory (25, 50
and 75 % of the model's one-arena lower bound, and 128, 256 and 512 KiB), beside a slow
memory without limit at ten times the cost per byte:

1. the traffic with every tensor in slow memory (`naive`), `greedy` (each tensor in one
   memory, fast first, by size or access density, the better), `spill` (Belady's rule),
   and `cpsat` (residency, copies and offsets in one model, `--time-limit` seconds) with
   its proven bound and gap; beside it `cpsat` at its default budget counted in work
   (`work`, `work_status`, `work_seconds`: the plan any machine gives, the guard unhit);
2. every plan judged by `validate`, and replayed in one array per memory, copies
   included, against the unplanned run bit for bit (`replay equal`: all three plans).

Offsets keep a 16-byte alignment, as TFLite Micro rounds every tensor. Prints a table and
writes benchmarks/results/tiers.csv.

    python benchmarks/tiers.py [--time-limit 60] [--only resnet]
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from collections.abc import Iterator
from dataclasses import astuple, dataclass, fields
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np

from benchmarks.graphs.tiny import TINY
from optplan.analysis.liveness import build_memory
from optplan.analysis.memory import MemoryFacts
from optplan.frontends import load
from optplan.ir import Call, Program, iter_bindings
from optplan.planners import get_planner
from optplan.problem import Memory, lower_bound
from optplan.problem.plan import Plan, Status, validate
from optplan.problem.tiers import all_in
from optplan.runtime.replay import Run, compare, make_inputs, planned_run, reference_run

RESULTS = ROOT / "benchmarks" / "results" / "tiers.csv"
ZOO = ROOT / "tests" / "data" / "zoo"
ALIGNMENT = 16
SHARES = (0.25, 0.5, 0.75)
KIB = (128, 256, 512)
SLOW_COST = 10


@dataclass
class Row:
    model: str
    ops: int
    fast_bytes: int
    all_in_slow: int
    greedy: int
    spill: int
    cpsat: int
    proven_bound: int
    gap: str
    seconds: float
    replay_equal: str
    cpsat_status: str
    copies: int
    work: int
    work_status: str
    work_seconds: float


@dataclass(frozen=True)
class Model:
    name: str
    program: Program
    weights: dict[str, np.ndarray]
    load: object  # memories -> MemoryFacts


def models(only: str) -> Iterator[Model]:
    for name, make in TINY.items():
        program = make()

        def facts(memories: tuple[Memory, ...] | None, program: Program = program) -> MemoryFacts:
            return build_memory(program, alignment=ALIGNMENT, memories=memories)

        yield Model(name, program, {}, facts)
    for path in sorted(ZOO.glob("*.onnx")):
        loaded = load(str(path), alignment=ALIGNMENT)
        assert loaded.program is not None

        def facts(memories: tuple[Memory, ...] | None, path: Path = path) -> MemoryFacts:
            again = load(str(path), alignment=ALIGNMENT, memories=memories, with_weights=False)
            assert again.memory is not None
            return again.memory

        yield Model(path.stem, loaded.program, loaded.weights, facts)


def fast_sizes(least: int) -> list[int]:
    return [int(least * share) // ALIGNMENT * ALIGNMENT for share in SHARES] + [
        k * 1024 for k in KIB
    ]


def run_case(
    model: Model, fast: int, reference: Run, inputs: dict[str, np.ndarray], limit: float
) -> Row:
    memories = (Memory("fast", fast, 1, 1), Memory("slow", None, 1, SLOW_COST))
    facts: MemoryFacts = model.load(memories)  # type: ignore[operator]
    problem = facts.problem
    plans: dict[str, Plan] = {}
    started = time.perf_counter()
    for name in ("greedy", "spill", "cpsat"):
        options = {"time_limit": limit, "work": None} if name == "cpsat" else {}
        if name == "cpsat":
            started = time.perf_counter()
        plans[name] = get_planner(name, **options)(problem)
    seconds = time.perf_counter() - started
    equal = "yes"
    for name, plan in plans.items():
        if not plan.status.has_plan or validate(problem, plan):
            equal = f"{name}: invalid"
            break
        if compare(reference, planned_run(model.program, facts, plan, inputs)) is not None:
            equal = f"{name}: differs"
            break
    cpsat = plans["cpsat"]
    started = time.perf_counter()
    counted = get_planner("cpsat")(problem)
    work_seconds = time.perf_counter() - started
    if not counted.status.has_plan or validate(problem, counted):
        equal = "cpsat at its work budget: invalid"
    return Row(
        model.name,
        sum(isinstance(b.value, Call) for b in iter_bindings(model.program.main.body)),
        fast,
        all_in(problem, "slow"),
        _traffic(plans["greedy"]),
        _traffic(plans["spill"]),
        _traffic(cpsat),
        cpsat.traffic_bound,
        f"{cpsat.gap:.2%}" if cpsat.status.has_plan else "-",
        round(seconds, 2),
        equal,
        cpsat.status.value,
        len(cpsat.copies),
        _traffic(counted),
        counted.status.value + (" (cut)" if counted.detail.get("cut") else ""),
        round(work_seconds, 2),
    )


def _traffic(plan: Plan) -> int:
    return plan.traffic if plan.traffic is not None and plan.status != Status.UNKNOWN else -1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-limit", type=float, default=60.0, help="seconds for cpsat")
    parser.add_argument("--only", default="", help="models whose name holds this")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    names = [f.name for f in fields(Row)]
    widths = [24, 4, 8, 11, 10, 10, 10, 10, 7, 7, 6, 9, 6]
    print(" ".join(n[:w].rjust(w) for n, w in zip(names, widths)), flush=True)
    rows: list[Row] = []
    failed = 0
    for model in models(args.only):
        if args.only and args.only not in model.name:
            continue
        inputs = {**make_inputs(model.program), **model.weights}
        reference = reference_run(model.program, inputs)
        least = lower_bound(model.load(None).problem)  # type: ignore[operator]
        for fast in fast_sizes(least):
            row = run_case(model, fast, reference, inputs, args.time_limit)
            rows.append(row)
            baselines = [t for t in (row.greedy, row.spill) if t >= 0]
            failed += row.replay_equal != "yes" or any(row.cpsat > t for t in baselines)
            print(" ".join(str(v)[:w].rjust(w) for v, w in zip(astuple(row), widths)), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(names)
        writer.writerows(astuple(row) for row in rows)
    optimal = sum(r.cpsat_status == "optimal" for r in rows)
    worse = [r for r in rows if r.work > r.cpsat]
    print(
        f"wrote {args.out}: {len(rows)} cases, cpsat optimal on {optimal}, {failed} failing a "
        f"check; the work budget at or below {args.time_limit:g} s on {len(rows) - len(worse)}"
    )
    for r in worse:
        print(f"  worse counted in work: {r.model} fast {r.fast_bytes}: {r.work} against {r.cpsat}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
