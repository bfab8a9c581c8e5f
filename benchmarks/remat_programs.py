"""The training programs of `benchmarks/graphs/training.py` (forward, backward, SGD)
and the training steps TVM's own gradient pass wrote (`tests/data/training`, read as
TVMScript; named `relax/...`) under budgets: each rewritten by `passes.recompute`, planned by cpsat within the
budget (alignment 64), and replayed in that arena bit for bit against the original
program's unplanned run."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.graphs.training import cnn_train, mlp_train, transformer_train
from optplan.analysis.liveness import build_memory
from optplan.frontends import load
from optplan.ir import Program
from optplan.passes.recompute import recompute
from optplan.planners import get_planner
from optplan.problem import Problem, lower_bound, one_arena
from optplan.problem.plan import validate
from optplan.runtime.replay import compare, make_inputs, planned_run, reference_run

TRAINING = Path(__file__).resolve().parent.parent / "tests" / "data" / "training"
PROGRAMS: dict[str, Callable[[], Program]] = {
    "mlp_train": mlp_train, "cnn_train": cnn_train, "transformer_train": transformer_train,
}  # fmt: skip
for _path in sorted(TRAINING.glob("*.py")):
    PROGRAMS[f"relax/{_path.stem}"] = lambda path=_path: _loaded(path)


def _loaded(path: Path) -> Program:
    program = load(str(path)).program
    assert program is not None, f"{path}: no program"
    return program


def program_rows(
    shares: list[float], limit: float, in_work: bool = False, guard: float = 600.0
) -> list[dict[str, object]]:
    """A row per program and share; with `in_work`, `limit` is units of work for the
    rewrite and for cpsat's plan (the same rows on any machine), `guard` seconds each."""
    seconds, work = (guard, limit) if in_work else (limit, None)
    rows = []
    for name, make in PROGRAMS.items():
        program = make()
        peak = lower_bound(build_memory(program, alignment=64).problem)
        inputs = make_inputs(program, seed=0)
        reference = reference_run(program, inputs)
        for share in shares:
            capacity = math.ceil(peak * share)
            began = time.perf_counter()
            result = recompute(program, capacity, time_limit=seconds, work=work)
            row: dict[str, object] = {
                "program": name, "share": share, "capacity": capacity,
                "limit": f"work {limit}" if in_work else f"{limit} s", "status": result.status.value,
            }  # fmt: skip
            if result.status.has_plan:
                memory = build_memory(result.program, alignment=64)
                problem = Problem(
                    memory.problem.buffers, memory.problem.aliases, memories=one_arena(capacity)
                )
                plan = get_planner("cpsat", work=work, time_limit=seconds)(problem)
                fits = plan.status.has_plan and not validate(problem, plan)
                replayed = (
                    compare(reference, planned_run(result.program, memory, plan, inputs))
                    if fits
                    else "-"
                )
                row.update(
                    extra_pct=f"{result.extra_percent:.3f}",
                    bound_pct=f"{100 * result.bound_cost / result.total_cost:.3f}"
                    if result.total_cost
                    else "0",
                    recomputed=len(result.copies),
                    arena=plan.arena if fits else "-",
                    fits="yes" if fits else "no",
                    replay="bit for bit" if replayed is None else str(replayed),
                )
            else:
                row["reason"] = result.reason
            row["seconds"] = round(time.perf_counter() - began, 1)
            rows.append(row)
            print(" | ".join(f"{k}={v}" for k, v in row.items()), flush=True)
    return rows
