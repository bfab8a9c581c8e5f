"""Recomputation: fit a budget by freeing tensors early and computing them again.

A schedule is a sequence of steps, each running one op, where an op may run more than
once; its memory is `schedule.graph.step_bytes` (one instance per run, a read takes the
latest, an instance is held to its last reader's step), which is MOCCASIN's and
Checkmate's peak. `rematerialise(graph, Remat(budget))` chooses the order, what to make
again and every instance's offset in one arena of at most the budget, for the least
extra compute (the cost of every run after an op's first). Steps:

1. The proven memory bound (`bounds.memory_bound`): a budget below it is INFEASIBLE,
   with the reason. Where steps 2 to 4 find nothing, the traced bound
   (`bounds.traced`) may still prove that nothing fits: INFEASIBLE, with its reason.
2. Orders: the program order, the quick orders and the order search's best. One whose
   instances pack within the budget needs no recomputation: extra compute 0, optimal.
3. The heuristics from each order (`heuristic`: make again what is held across the
   peak; `walk`: evict and make again on demand), each schedule packed for real offsets;
   a packing above the budget tightens the live-bytes target and goes on. For graphs
   above `exact_ops` ops this is the anytime path.
4. The exact model (`model`) in Checkmate's and MOCCASIN's stages, once with the first
   runs in the searched order and once in the program order (MOCCASIN's own space),
   hinted with the best so far: first on live bytes, then its schedule packed; where
   the packing does not fit, the model with offsets (no-overlap-2D) is solved, hinted.
   Where nothing is found and time is left, the model is solved again with one more
   run of each op allowed (up to `copies` + 2).
   Its bound on the extra compute holds among schedules in those stages (first runs in
   one of those orders, each op at most as often as the model allowed, the runs again
   before a first run in that order's order); OPTIMAL means the least over every space
   searched.

The best schedule found is never worse than the heuristics'; its offsets are judged by
`validate` on `problem_of(graph, steps)` with the budget as capacity.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

from optplan.planners import get_planner
from optplan.problem import Problem
from optplan.problem.plan import Plan, Status, validate
from optplan.schedule import Scheduler, best_quick
from optplan.schedule.graph import Graph, peak_bytes, problem_of
from optplan.schedule.remat.bounds import MemoryBound, is_valid_steps, memory_bound, traced
from optplan.schedule.remat.heuristic import extra_cost, greedy, prune
from optplan.schedule.remat.model import ModelResult, solve_model
from optplan.schedule.remat.walk import evict


@dataclass(frozen=True, slots=True)
class Remat:
    """Options: the budget in bytes (the block's `base_bytes` included), seconds, how many
    runs of one op the exact model allows, the largest graph it is tried on (above it
    the heuristics have all the time), the alignment of every offset, and the order search's work (its states:
    1,000,000 finds the best orders known on MOCCASIN's random graphs of 100 to 1,000
    ops in 0.5-7 s, with the time limit only an outer guard)."""

    budget_bytes: int
    time_limit: float = 10.0
    copies: int = 2
    exact_ops: int = 400
    alignment: int = 1
    order_work: int = 1_000_000


@dataclass(frozen=True, slots=True)
class RematSchedule:
    """A schedule within the budget, or why there is none.

    `steps`: the ops run, in order (None: no schedule); `plan`: every instance's offset
    in `problem_of(graph, steps, alignment)` (capacity: the budget less `base_bytes`);
    `extra_cost` / `total_cost`: compute of the runs after each op's first / of one run
    of every op; `bound_cost`: proven lower bound on the extra compute, among schedules
    that run each op at most `copies` times where the exact model proved it;
    `memory_bound`: no schedule holds less at its peak; `method`: what found it.
    """

    steps: tuple[int, ...] | None
    status: Status
    peak_bytes: int
    arena_bytes: int
    extra_cost: int
    total_cost: int
    bound_cost: int
    memory_bound: MemoryBound
    plan: Plan | None
    method: str
    reason: str
    seconds: float

    @property
    def extra_percent(self) -> float:
        return 100.0 * self.extra_cost / self.total_cost if self.total_cost else 0.0


def rematerialise(graph: Graph, options: Remat, recomputable: Sequence[bool] | None = None) -> RematSchedule:
    """The schedule of the module docstring; `recomputable[v]` False keeps op v to one run
    (ops with effects, in-place calls)."""
    began = time.perf_counter()
    deadline = began + options.time_limit
    allowed = list(recomputable) if recomputable is not None else [True] * graph.ops
    total = sum(graph.costs) if graph.costs else graph.ops
    bound = memory_bound(graph)
    if options.budget_bytes < bound.bytes:
        reason = f"no schedule fits {options.budget_bytes} bytes: at least {bound.bytes} are needed ({bound.reason})"
        return RematSchedule(None, Status.INFEASIBLE, 0, 0, 0, total, 0, bound, None, "bound", reason, time.perf_counter() - began)
    best: _Found | None = None
    orders = _orders(graph, options)
    exact = graph.ops <= options.exact_ops
    for order in orders:
        share = 0.4 if exact else 1.0
        found = _fit(graph, order, options, allowed, began + share * options.time_limit)
        if found is not None and (best is None or found.extra < best.extra):
            best = found
        if best is not None and best.extra == 0:
            break
    bounds: list[int] = []
    firsts = [orders[0]] + ([tuple(range(graph.ops))] if orders[0] != tuple(range(graph.ops)) else [])
    for copies in range(options.copies, options.copies + 3):
        if not exact or (best is not None and best.extra == 0):
            break
        for k, order in enumerate(firsts):
            seconds = (deadline - time.perf_counter()) / (len(firsts) - k)
            best, proven = _exact(graph, replace(options, copies=copies), allowed, best, order, max(0.5, seconds))
            bounds.append(proven)
        # Where the model's space holds nothing within the budget (it says so quickly on
        # small programs), a space with one more run of each op may.
        if best is not None or time.perf_counter() > deadline - 0.5:
            break
    return _result(graph, options, best, min(bounds) if bounds else 0, total, bound, began)


@dataclass(frozen=True, slots=True)
class _Found:
    steps: tuple[int, ...]
    plan: Plan
    extra: int
    method: str
    optimal: bool = False


def _orders(graph: Graph, options: Remat) -> list[tuple[int, ...]]:
    """Step 2's start orders, distinct, lowest peak first."""
    program = tuple(range(graph.ops))
    quick = best_quick(graph)
    seconds = max(0.5, 0.3 * options.time_limit)
    searched = Scheduler("auto", time_limit=seconds, work=options.order_work)(graph).order
    orders = dict.fromkeys([program, quick, searched])
    return sorted(orders, key=lambda order: peak_bytes(graph, order))


def _fit(
    graph: Graph, order: tuple[int, ...], options: Remat, allowed: list[bool], deadline: float
) -> _Found | None:
    """Step 3 from one order: tighten the live-bytes target until the instances pack."""
    target, steps = options.budget_bytes, order
    if peak_bytes(graph, order) <= target:
        # An order that fits needs no recomputation: packing it is worth a little time
        # even where the heuristics' share is spent (a loaded machine).
        plan = pack(graph, order, options, max(deadline, time.perf_counter() + 2.0))
        if plan is not None:
            return _Found(order, plan, 0, "order", True)
    while target >= graph.base_bytes:
        found = _best_of(graph, steps, target, allowed, deadline)
        if found is None:
            return None
        plan = pack(graph, found, options, deadline)
        extra = extra_cost(graph, found)
        if plan is not None:
            return _Found(found, plan, extra, "order" if extra == 0 else "greedy", extra == 0)
        steps = found
        over = peak_bytes(graph, found) - graph.base_bytes
        # Lower by what the greedy packing lost to fragmentation at least: on MOCCASIN's
        # 1,000-node graph at 70 % it was 6.5 %, three 2 % steps of 8-15 s each.
        lost = _fragmented(graph, found, options)
        target = min(target - 1, target - max(1, (target - graph.base_bytes) // 50, over // 100, lost))
    return None


def _fragmented(graph: Graph, steps: Sequence[int], options: Remat) -> int:
    """Bytes by which greedy's packing of `steps` exceeds the budget (0 when it fits)."""
    problem = problem_of(graph, steps, options.alignment)
    plan = get_planner("greedy")(Problem(problem.buffers))
    return max(0, plan.arena - (options.budget_bytes - graph.base_bytes)) if plan.status.has_plan else 0


def _best_of(
    graph: Graph, steps: tuple[int, ...], target: int, allowed: list[bool], deadline: float
) -> tuple[int, ...] | None:
    """The cheaper of the two heuristics' schedules from `steps` (None: neither found one)."""
    found = [greedy(graph, steps, target, allowed, deadline)]
    if len(steps) == graph.ops:
        walked = evict(graph, steps, target, allowed, deadline)
        found.append(prune(graph, walked, target) if walked is not None else None)
    schedules = [s for s in found if s is not None]
    return min(schedules, key=lambda s: extra_cost(graph, s)) if schedules else None


def pack(graph: Graph, steps: Sequence[int], options: Remat, deadline: float) -> Plan | None:
    """Offsets of every instance within the budget: greedy, then CP-SAT briefly."""
    room = options.budget_bytes - graph.base_bytes
    problem = problem_of(graph, steps, options.alignment)
    problem = Problem(problem.buffers, capacity=room)
    plan = get_planner("greedy")(problem)
    if not plan.status.has_plan:
        left = min(5.0, deadline - time.perf_counter())
        if left > 0.2:
            plan = get_planner("cpsat", time_limit=left)(problem)
    return plan if plan.status.has_plan and not validate(problem, plan) else None


def _exact(
    graph: Graph,
    options: Remat,
    allowed: list[bool],
    best: _Found | None,
    order: tuple[int, ...],
    seconds: float,
) -> tuple[_Found | None, int]:
    """Step 4 with the first runs in `order`: the better schedule and the model's bound."""
    end = time.perf_counter() + seconds
    room = options.budget_bytes
    bound = 0
    for offsets in (False, False, True):
        left = end - time.perf_counter()
        if left < 0.2:
            break
        result = solve_model(
            graph,
            room,
            allowed,
            copies=options.copies,
            hint=best.steps if best is not None else None,
            hint_offsets=_instance_offsets(graph, best) if best is not None and offsets else None,
            time_limit=left if offsets else 0.6 * left,
            alignment=options.alignment,
            order=order,
            offsets=offsets,
        )
        if room == options.budget_bytes:
            bound = max(bound, result.bound)
        if result.steps is None or not is_valid_steps(graph, result.steps, allowed):
            if not offsets:
                continue
            break
        extra = extra_cost(graph, result.steps)
        if best is not None and extra >= best.extra:
            break
        plan = _model_plan(graph, options, result) if offsets else pack(graph, result.steps, options, end)
        if plan is not None:
            return _Found(result.steps, plan, extra, "cp-sat", result.optimal and room == options.budget_bytes), bound
        # The live bytes fit but the instances do not pack: ask again a little lower.
        room -= max(1, (peak_bytes(graph, result.steps) - graph.base_bytes) // 50)
    return best, bound


def _model_plan(graph: Graph, options: Remat, result: ModelResult) -> Plan | None:
    """The model's own offsets as a Plan, if the judge accepts them."""
    assert result.steps is not None
    problem = problem_of(graph, result.steps, options.alignment)
    problem = Problem(problem.buffers, capacity=options.budget_bytes - graph.base_bytes)
    offsets_by_name = {b.id: off for b, off in zip(problem.buffers, result.offsets)}
    arena = max((off + b.size for b, off in zip(problem.buffers, result.offsets)), default=0)
    plan = Plan(offsets_by_name, arena, Status.FEASIBLE, "remat-cpsat", 0)
    return None if validate(problem, plan) else plan


def _instance_offsets(graph: Graph, found: _Found) -> list[int]:
    problem = problem_of(graph, found.steps)
    return [found.plan.offsets.get(b.id, 0) for b in problem.buffers]


def _result(
    graph: Graph,
    options: Remat,
    best: _Found | None,
    model_bound: int,
    total: int,
    bound: MemoryBound,
    began: float,
) -> RematSchedule:
    if best is None:
        # Nothing found: perhaps nothing fits, which the traced bound may prove.
        proof = traced(graph, options.budget_bytes)
        if proof is not None:
            reason = f"no schedule fits {options.budget_bytes} bytes: {proof.reason}"
            seconds = time.perf_counter() - began
            return RematSchedule(None, Status.INFEASIBLE, 0, 0, 0, total, 0, proof, None, "bound", reason, seconds)
    seconds = time.perf_counter() - began
    if best is None:
        reason = (
            f"no schedule within {options.budget_bytes} bytes found in {seconds:.1f} s of the "
            f"{options.time_limit:.1f} s limit (the proven memory bound is {bound.bytes})"
        )
        return RematSchedule(None, Status.UNKNOWN, 0, 0, 0, total, model_bound, bound, None, "none", reason, seconds)
    # The least of the models' bounds holds over every space they searched; a model that
    # proved its own space optimal says nothing of the other. No recomputation is optimal.
    proven = 0 if best.extra == 0 else model_bound
    status = Status.OPTIMAL if best.extra <= proven else Status.FEASIBLE
    return RematSchedule(
        best.steps,
        status,
        peak_bytes(graph, best.steps),
        best.plan.arena + graph.base_bytes,
        best.extra,
        total,
        min(proven, best.extra),
        bound,
        best.plan,
        best.method,
        "",
        seconds,
    )


__all__ = ["MemoryBound", "Remat", "RematSchedule", "is_valid_steps", "memory_bound", "rematerialise"]
