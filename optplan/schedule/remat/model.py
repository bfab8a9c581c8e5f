"""The exact model: order, recomputation and offsets in one CP-SAT model.

Retention intervals as in Checkmate and MOCCASIN, with the order free and each instance
given its bytes in the arena. Steps of `solve_model`:

1. Every op v has `copies` runs (one if it may not run again): run i is present
   (`run[v,i]`, the first always) at step `step[v,i]` in [0, horizon); runs of one op
   come in order, and two present runs never share a step. First runs keep the graph's
   order constraints. With an `order` given, the steps are Checkmate's and MOCCASIN's
   stages: stage s runs the s-th op of the order for the first time, after runs again
   of earlier ops of the order, in that order; step (s, k) is `s(s+1)/2 + k`, so first
   runs are fixed and every run again has a sparse domain of steps.
2. Every buffer b made by v has per run i an optional interval of steps
   [step[v,i], end[b,i]) and, when its size is not 0, an optional interval of bytes
   [offset[b,i], offset[b,i] + size). A run's instance is dead before the next run makes
   the buffer again, so a read always takes the latest instance (the meaning of
   `schedule.graph.instances`).
3. A present run j of v that reads b takes one of b's runs i (`take[v,j,b,i]`): present,
   made before, and held to v's step inclusive. A buffer live in is held from step 0 to
   its last reader; the last run of a buffer live out is held to the horizon.
4. The rectangles of steps x bytes do not overlap (no-overlap-2D) within the budget, and
   a cumulative over the same intervals makes the live-bytes bound visible.
5. Minimise the extra compute: the cost of every present run after the first. The
   search is hinted with the best schedule found so far.

Idle steps of the horizon hold no more than the next real step, so the schedule is the
present runs sorted by step; its bytes are read off the offsets.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from ortools.sat.python import cp_model

from optplan.budget import MODEL_SCALE, limit_solver, solver_done
from optplan.planners.cpsat.model import integer_bound
from optplan.schedule.graph import Graph, instances


@dataclass(frozen=True, slots=True)
class ModelResult:
    """The best schedule the model found (None: none), its offsets by instance (in the
    order `instances` lists them), the proven bound on extra compute among schedules of
    at most `copies` runs per op, and whether the model proved it optimal or infeasible."""

    steps: tuple[int, ...] | None
    offsets: tuple[int, ...]
    bound: int
    optimal: bool
    infeasible: bool


@dataclass(slots=True)
class _Vars:
    run: dict[tuple[int, int], cp_model.IntVar]
    step: dict[tuple[int, int], cp_model.IntVar]
    end: dict[tuple[int, int], cp_model.IntVar]
    offset: dict[tuple[int, int], cp_model.IntVar]


def solve_model(
    graph: Graph,
    budget: int,
    recomputable: Sequence[bool],
    *,
    copies: int,
    hint: Sequence[int] | None,
    hint_offsets: Sequence[int] | None,
    time_limit: float,
    alignment: int = 1,
    order: Sequence[int] | None = None,
    offsets: bool = True,
) -> ModelResult:
    n = graph.ops
    runs = [copies if recomputable[v] else 1 for v in range(n)]
    horizon = sum(runs) if order is None else n * (n + 1) // 2
    model = cp_model.CpModel()
    room = budget - graph.base_bytes
    if room < 0:
        return ModelResult(None, (), 0, False, True)
    names = graph.names or tuple(f"b{b}" for b in range(len(graph.sizes)))
    vars_ = _runs(model, graph, runs, horizon, order)
    times, rows, demands = _buffers(model, graph, runs, horizon, room, alignment, vars_, names)
    _reads(model, graph, runs, vars_, names)
    if times:
        if offsets:
            model.add_no_overlap_2d(times, rows)
        model.add_cumulative(times, demands, room)
    extra = [
        (graph.costs[v] if graph.costs else 1) * vars_.run[v, i]
        for v in range(n)
        for i in range(1, runs[v])
    ]
    model.minimize(sum(extra))
    if hint is not None:
        _hint(model, graph, (runs, horizon), vars_, hint, hint_offsets, alignment, order)
    solver = cp_model.CpSolver()
    limit_solver(solver.parameters, time_limit, workers=2, scale=MODEL_SCALE)
    status = solver.solve(model)
    solver_done(solver, MODEL_SCALE)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        bound = integer_bound(solver.best_objective_bound) if status == cp_model.UNKNOWN else 0
        return ModelResult(None, (), max(bound, 0), False, status == cp_model.INFEASIBLE)
    present = [
        (solver.value(vars_.step[v, i]), v)
        for v in range(n)
        for i in range(runs[v])
        if solver.value(vars_.run[v, i])
    ]
    steps = tuple(v for _, v in sorted(present))
    placed = _offsets(graph, steps, vars_, solver, alignment) if offsets else ()
    return ModelResult(
        steps, placed, integer_bound(solver.best_objective_bound), status == cp_model.OPTIMAL, False
    )


def _event(stage: int, k: int) -> int:
    return stage * (stage + 1) // 2 + k


def _runs(
    model: cp_model.CpModel,
    graph: Graph,
    runs: list[int],
    horizon: int,
    order: Sequence[int] | None,
) -> _Vars:
    """Step 1 of the module docstring."""
    vars_ = _Vars({}, {}, {}, {})
    unit = []
    position = {v: k for k, v in enumerate(order)} if order is not None else {}
    for v in range(graph.ops):
        label = graph.labels[v] if graph.labels else str(v)
        for i in range(runs[v]):
            run = model.new_constant(1) if i == 0 else model.new_bool_var(f"run[{label},{i}]")
            if order is None:
                step = model.new_int_var(0, horizon - 1, f"step[{label},{i}]")
            elif i == 0:
                step = model.new_constant(_event(position[v], position[v]))
            else:
                events = [_event(s, position[v]) for s in range(position[v] + 1, graph.ops)] or [
                    horizon - 1
                ]
                step = model.new_int_var_from_domain(
                    cp_model.Domain.from_values(events), f"step[{label},{i}]"
                )
            vars_.run[v, i], vars_.step[v, i] = run, step
            unit.append(
                model.new_optional_fixed_size_interval_var(step, 1, run, f"at[{label},{i}]")
            )
            if i:
                model.add_implication(run, vars_.run[v, i - 1])
                model.add(step > vars_.step[v, i - 1]).only_enforce_if(run)
    if order is None:
        model.add_no_overlap(unit)  # staged steps are distinct by construction
    for v, preds in enumerate(graph.preds):
        for u in preds:
            model.add(vars_.step[u, 0] < vars_.step[v, 0])
    return vars_


def _buffers(
    model: cp_model.CpModel,
    graph: Graph,
    runs: list[int],
    horizon: int,
    room: int,
    alignment: int,
    vars_: _Vars,
    names: Sequence[str],
) -> tuple[list[cp_model.IntervalVar], list[cp_model.IntervalVar], list[int]]:
    """Step 2 (and the live-in buffers of step 3): the rectangles."""
    times, rows, demands = [], [], []
    creator = {b: v for v, bufs in enumerate(graph.creates) for b in bufs}
    for b, size in enumerate(graph.sizes):
        v = creator.get(b)
        count = runs[v] if v is not None else 1
        for i in range(count):
            run = vars_.run[v, i] if v is not None else model.new_constant(1)
            start = vars_.step[v, i] if v is not None else model.new_constant(0)
            end = model.new_int_var(1, horizon, f"end[{names[b]},{i}]")
            vars_.end[b, i] = end
            model.add(end >= start + 1)
            if v is not None and i + 1 < count:
                model.add(end <= vars_.step[v, i + 1]).only_enforce_if(vars_.run[v, i + 1])
            if b in graph.live_out:
                last = [run] + (
                    [vars_.run[v, i + 1].Not()] if v is not None and i + 1 < count else []
                )
                model.add(end == horizon).only_enforce_if(last)
            if size == 0:
                continue
            if size > room:
                model.add(run == 0)
                continue
            slot = model.new_int_var(0, (room - size) // alignment, f"offset[{names[b]},{i}]")
            vars_.offset[b, i] = slot
            length = model.new_int_var(1, horizon, f"length[{names[b]},{i}]")
            times.append(
                model.new_optional_interval_var(start, length, end, run, f"steps[{names[b]},{i}]")
            )
            rows.append(
                model.new_optional_fixed_size_interval_var(
                    slot * alignment, size, run, f"bytes[{names[b]},{i}]"
                )
            )
            demands.append(size)
    return times, rows, demands


def _reads(
    model: cp_model.CpModel, graph: Graph, runs: list[int], vars_: _Vars, names: Sequence[str]
) -> None:
    """Step 3: every present run finds each buffer it reads held."""
    creator = {b: v for v, bufs in enumerate(graph.creates) for b in bufs}
    for v, reads in enumerate(graph.reads):
        for j in range(runs[v]):
            run, step = vars_.run[v, j], vars_.step[v, j]
            for b in reads:
                u = creator.get(b)
                if u is None:
                    model.add(vars_.end[b, 0] >= step + 1).only_enforce_if(run)
                    continue
                takes = []
                for i in range(runs[u]):
                    take = model.new_bool_var(f"take[{v},{j},{names[b]},{i}]")
                    model.add_implication(take, vars_.run[u, i])
                    model.add(vars_.step[u, i] < step).only_enforce_if(take)
                    model.add(vars_.end[b, i] >= step + 1).only_enforce_if(take)
                    takes.append(take)
                model.add_bool_or(takes).only_enforce_if(run)


def _hint(
    model: cp_model.CpModel,
    graph: Graph,
    sizes: tuple[list[int], int],
    vars_: _Vars,
    steps: Sequence[int],
    offsets: Sequence[int] | None,
    alignment: int,
    order: Sequence[int] | None,
) -> None:
    """Step 5: the hint, from a schedule (and its instances' offsets, when known)."""
    runs, horizon = sizes
    at = _steps_of(graph, steps, order)
    if at is None:
        return
    count = [0] * graph.ops
    for t, v in zip(at, steps):
        if count[v] >= runs[v]:
            return  # more runs than the model has: no hint
        if count[v]:
            model.add_hint(vars_.run[v, count[v]], 1)
        model.add_hint(vars_.step[v, count[v]], t)
        count[v] += 1
    for v in range(graph.ops):
        for i in range(max(count[v], 1), runs[v]):
            model.add_hint(vars_.run[v, i], 0)
    buffers, spans = instances(graph, steps)
    seen = [0] * len(graph.sizes)
    for k, (b, (_, end)) in enumerate(zip(buffers, spans)):
        i = seen[b]
        seen[b] += 1
        model.add_hint(vars_.end[b, i], at[end - 1] + 1 if end < len(steps) else horizon)
        if offsets is not None and (b, i) in vars_.offset:
            model.add_hint(vars_.offset[b, i], offsets[k] // alignment)


def _steps_of(graph: Graph, steps: Sequence[int], order: Sequence[int] | None) -> list[int] | None:
    """The model's step of each of `steps` (None when they do not fit the stages)."""
    if order is None:
        return list(range(len(steps)))
    position = {v: k for k, v in enumerate(order)}
    seen: set[int] = set()
    firsts = []
    for t, v in enumerate(steps):
        if v not in seen:
            seen.add(v)
            firsts.append(t)
    if [steps[t] for t in firsts] != list(order):
        return None
    # The stage of a step: that of the next first run (runs again come before it).
    stages = [0] * len(steps)
    k = 0
    for t in range(len(steps)):
        while firsts[k] < t:
            k += 1
        stages[t] = k
    at = [_event(stage, position[v]) for stage, v in zip(stages, steps)]
    return at if all(a < b for a, b in itertools.pairwise(at)) else None


def _offsets(
    graph: Graph, steps: Sequence[int], vars_: _Vars, solver: cp_model.CpSolver, alignment: int
) -> tuple[int, ...]:
    """Each instance's offset in bytes (0 for an empty one), in `instances` order."""
    buffers, _ = instances(graph, steps)
    seen = [0] * len(graph.sizes)
    out = []
    for b in buffers:
        i = seen[b]
        seen[b] += 1
        slot = vars_.offset.get((b, i))
        out.append(0 if slot is None else int(solver.value(slot)) * alignment)
    return tuple(out)
