"""Recomputation: fit a budget by freeing tensors early and computing them again.

A schedule is a sequence of steps, each running one op, where an op may run more than
once; its memory is `schedule.graph.step_bytes` (one instance per run, a read takes the
latest, an instance is held to its last reader's step), which is MOCCASIN's and
Checkmate's peak. `rematerialise(graph, Remat(budget))` chooses the order, what to make
again and every instance's offset in one arena of at most the budget, for the least
extra compute (the cost of every run after an op's first). Steps:

1. The proven memory bound (`bounds.memory_bound`): a budget below it is INFEASIBLE,
   with the reason. On graphs of up to `EXHAUSTIVE_OPS` ops that no quick order fits,
   the search of every schedule (`exhaustive.every_schedule`, briefly), where it runs
   to its end, proves that nothing fits (INFEASIBLE), or gives the least extra compute
   of any schedule: OPTIMAL where its schedule packs, else a bound on what follows.
   Where it does not end, it is run at budgets a fifth lower each time until one ends:
   that schedule, packed within the budget, is one more to beat (not optimal: the
   least at a lower budget). Where steps 2 to 4 find nothing, the traced bound
   (`bounds.traced`) may still prove that nothing fits: INFEASIBLE, with its reason.
2. Orders: the program order, the quick orders and the order search's best (at its
   work and at a thirtieth of it). One whose
   instances pack within the budget needs no recomputation: extra compute 0, optimal.
3. The heuristics from each order (`heuristic`: make again what is held across the
   peak, under each of its three ranks of moves; `walk`: evict and make again on
   demand), the cheapest schedule packed for real offsets (greedy, a search over its
   placement sequence, CP-SAT on the smaller ones). Where a packing exceeds the
   budget, the heuristic goes on with the whole live-bytes target tightened, and where
   that finds nothing, from the first schedule that did not pack with the target
   lowered only at the steps where its packing overflowed (`packing.relieve`). Then
   the heuristics go on from first-run orders drawn at random (`restarts`) until their
   share of the time is spent, keeping the cheapest (`anytime`); where they find
   nothing by half of it, the tabu rank runs from each start order at targets below the
   budget, each schedule met then through the packing rounds at that target (the deep
   pass: MOCCASIN's 500-node graph at 50 %, +609 % at 120 s). For graphs above
   `exact_ops` ops this is the anytime path. Where nothing packs and time is left, the
   nearest schedule found, if its live bytes are within the budget, is packed by CP-SAT
   for longer (`NEAREST_SHARE` of the time); where the time limit is long enough
   (`ROLLING_SHARE`), the cheapest schedule met in live bytes is then given slack and
   packed window by window from its end (`rolling`). Where nothing fits, the reason gives the
   arena of the nearest schedule found, with real offsets, and its extra compute.
4. The exact model (`model`) in Checkmate's and MOCCASIN's stages, once with the first
   runs in the searched order and once in the program order (MOCCASIN's own space),
   hinted with the best so far: first on live bytes, then its schedule packed; where
   the packing does not fit, the model with offsets (no-overlap-2D) is solved, hinted.
   Where nothing is found and time is left, the model is solved again with one more
   run of each op allowed (up to `copies` + 2).
   Its bound on the extra compute holds among schedules in those stages (first runs in
   one of those orders, each op at most as often as the model allowed, the runs again
   before a first run in that order's order); a space it proves empty bounds nothing.
   OPTIMAL means the least over every space the model searched (over every schedule
   where the exhaustive search ran to its end). A schedule cheaper than the model's
   bound lies outside its spaces (first runs in an order drawn at random), and that
   bound says nothing of it: FEASIBLE, bounded only by the exhaustive search.
5. The covering bound (`lower.covering_bound`), over every schedule: at each op's
   first run, what an ancestor made and a descendant reads is held unless its maker
   runs again; the least cost of makers run again that brings every such step within
   the budget (CP-SAT on the covering problem, on `bounding`'s work) bounds the extra
   compute of every schedule, and is the floor where the others are lower.

The best schedule found is never worse than the heuristics'; its offsets are judged by
`validate` on `problem_of(graph, steps)` with the budget as capacity.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

from optplan.problem import Problem
from optplan.problem.plan import Plan, Status
from optplan.schedule import Scheduler, best_quick
from optplan.schedule.graph import Graph, peak_bytes, problem_of
from optplan.schedule.remat.anytime import Call, Found, heuristics
from optplan.schedule.remat.bounds import MemoryBound, is_valid_steps, memory_bound, traced
from optplan.schedule.remat.exhaustive import Exhausted, every_schedule
from optplan.schedule.remat.heuristic import extra_cost, prune
from optplan.schedule.remat.lower import covering_bound
from optplan.schedule.remat.model import ModelResult, solve_model
from optplan.schedule.remat.packing import Nearest, fits, pack
from optplan.schedule.remat.rolling import rolled

# `every_schedule` is tried on graphs of up to 64 ops, for 20,000 states and a quarter of
# the time at most (the CNN training step at 50 % needs 56 states, the MLP step at 70 %
# 1,406 in about 0.4 s, at 60 % 2,761 in 0.8 s and at 50 % 15,964 in 2.5 s; TVM's
# attention step does not end within them). A block gets part of the program's time: at
# 30 s the MLP step's has 15 s, and a tenth of that (1.5 s) tipped the MLP step at 70 %
# to +10.9 % in two benchmark runs.
EXHAUSTIVE_OPS = 64
EXHAUSTIVE_WORK = 20_000
# Where the search does not end at the budget, it is run at budgets a fifth lower each
# time, for `LOWER_WORK` states each, until one ends: a larger budget lets more sets of
# buffers fit, and the MLP step at 90 % and 80 % does not end in 20,000 and 5,091 states,
# while at 72 % and 64 % it ends in 1,406, and its schedule (+0.76 %) fits 90 % and 80 %
# as well (the heuristics alone gave +2.04 % and +2.80 % there).
LOWER_WORK = 1_500
# Where no schedule packs after step 3, the nearest one whose live bytes are within the
# budget gets this share of the time limit of CP-SAT's packer: on MOCCASIN's 100-node
# graph at 60 % (30 s), a schedule of 198 instances that greedy packs in 28,759 bytes
# and 5 s of CP-SAT (the heuristics' packing) do not pack within 27,792 packs in 7 s,
# where its skyline search finds a placement; the exact model after it had found
# nothing in the 18 s left.
NEAREST_SHARE = 1 / 3
# Where `ROLLING_SHARE` of the time limit leaves `ROLLING_SECONDS` after
# `NEAREST_SECONDS` of CP-SAT, the cheapest schedule met in live bytes is packed window
# by window (`rolling`) in the rest of that share instead: on the 250-node graph at
# 60 %, which no CP-SAT packing fits, that took 83-167 s where it packed, and at a
# limit of 600 s `rematerialise` gives +25.85 % in 88,060-88,071 of 88,104 bytes (two runs).
ROLLING_SHARE = 1 / 2
NEAREST_SECONDS = 30.0
ROLLING_SECONDS = 90.0


@dataclass(frozen=True, slots=True)
class Remat:
    """Options: the budget in bytes (the block's `base_bytes` included), seconds, how many
    runs of one op the exact model allows, the largest graph it is tried on (above it
    the heuristics have all the time), the alignment of every offset, the order search's work (its states:
    1,000,000 finds the best orders known on MOCCASIN's random graphs of 100 to 1,000
    ops in 0.5-7 s, with the time limit only an outer guard), and the covering bound's
    work (`lower.covering_bound`: CP-SAT's deterministic time per solve, solves)."""

    budget_bytes: int
    time_limit: float = 10.0
    copies: int = 2
    exact_ops: int = 400
    alignment: int = 1
    order_work: int = 1_000_000
    bounding: tuple[float, int] = (1.0, 4)


@dataclass(frozen=True, slots=True)
class RematSchedule:
    """A schedule within the budget, or why there is none.

    `steps`: the ops run, in order (None: no schedule); `plan`: every instance's offset
    in `problem_of(graph, steps, alignment)` (capacity: the budget less `base_bytes`);
    `extra_cost` / `total_cost`: compute of the runs after each op's first / of one run
    of every op; `bound_cost`: proven lower bound on the extra compute, among schedules
    that run each op at most `copies` times where the exact model proved it, among all
    where the exhaustive search ran to its end or the covering bound
    (`lower.covering_bound`) gives it;
    `memory_bound`: no schedule holds less at its peak (no arena at the alignment is
    smaller, `base_bytes` added); `method`: what found it.
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


def rematerialise(
    graph: Graph, options: Remat, recomputable: Sequence[bool] | None = None
) -> RematSchedule:
    """The schedule of the module docstring; `recomputable[v]` False keeps op v to one run
    (ops with effects, in-place calls)."""
    began = time.perf_counter()
    deadline = began + options.time_limit
    allowed = list(recomputable) if recomputable is not None else [True] * graph.ops
    total = sum(graph.costs) if graph.costs else graph.ops
    bound = memory_bound(graph, allowed, options.alignment)
    if options.budget_bytes < bound.bytes:
        return _below_bound(options, bound, total, began)
    searched = _searched(graph, options)
    every = _exhaustive(graph, options, allowed, began) if searched else None
    if every is not None:
        found = _every(graph, options, every, total, bound, began)
        if found is not None:
            return found
    lower = _lower(graph, options, allowed, bound, began) if searched and every is None else None
    orders = _orders(graph, options)
    exact = graph.ops <= options.exact_ops
    share = began + (0.4 if exact else 1.0) * options.time_limit
    call = Call(
        graph,
        options.budget_bytes,
        options.alignment,
        allowed,
        Nearest(graph, options.alignment, options.budget_bytes),
    )
    best = heuristics(call, orders, max(share, time.perf_counter() + 0.1 * options.time_limit))
    if lower is not None and (best is None or lower.extra < best.extra):
        best = lower
    if best is None:
        best = _nearest_packed(graph, options, call.nearest, allowed, deadline)
    bounds: list[int] = []
    firsts = [orders[0]] + (
        [tuple(range(graph.ops))] if orders[0] != tuple(range(graph.ops)) else []
    )
    for copies in range(options.copies, options.copies + 3):
        if not exact or (best is not None and best.extra == 0):
            break
        for k, order in enumerate(firsts):
            seconds = (deadline - time.perf_counter()) / (len(firsts) - k)
            best, proven = _exact(
                graph, replace(options, copies=copies), allowed, best, order, max(0.5, seconds)
            )
            if proven is not None:
                bounds.append(proven)
        # Where the model's space holds nothing within the budget (it says so quickly on
        # small programs), a space with one more run of each op may.
        if best is not None or time.perf_counter() > deadline - 0.5:
            break
    floor = _floor(graph, options, allowed, every)
    if bounds and (best is None or best.extra >= min(bounds)):
        # A schedule cheaper than the models' bound lies outside their spaces (an order
        # drawn at random): their bound says nothing of its own.
        floor = max(floor, min(bounds))
    return _result(graph, options, best, floor, total, bound, began, call.nearest)


def _floor(graph: Graph, options: Remat, allowed: list[bool], every: Exhausted | None) -> int:
    """Bounds over every schedule: the exhaustive search's least extra compute, and the
    covering bound (step 5; its guard a fifth of the time limit)."""
    guard = max(1.0, options.time_limit / 5)
    cover = covering_bound(graph, options.budget_bytes, allowed, *options.bounding, guard)
    return max(every.cost if every is not None else 0, cover.cost)


def _below_bound(options: Remat, bound: MemoryBound, total: int, began: float) -> RematSchedule:
    """The answer where the budget is below the proven memory bound: INFEASIBLE, why."""
    reason = (
        f"no schedule fits {options.budget_bytes} bytes: at least {bound.bytes} are needed "
        f"({bound.reason})"
    )
    seconds = time.perf_counter() - began
    return RematSchedule(
        None, Status.INFEASIBLE, 0, 0, 0, total, 0, bound, None, "bound", reason, seconds
    )


def _nearest_packed(
    graph: Graph, options: Remat, nearest: Nearest, allowed: list[bool], deadline: float
) -> Found | None:
    """Step 3's last resort where nothing packed: the nearest schedule packed by CP-SAT
    for `NEAREST_SHARE` of the time limit; where `ROLLING_SHARE` leaves
    `ROLLING_SECONDS` after `NEAREST_SECONDS` of that, the cheapest schedule met in live
    bytes given slack and packed window by window (`rolling`) in the rest of it."""
    began = time.perf_counter()
    rolls = (
        nearest.met is not None
        and ROLLING_SHARE * options.time_limit >= NEAREST_SECONDS + ROLLING_SECONDS
    )
    end = min(began + (ROLLING_SHARE if rolls else NEAREST_SHARE) * options.time_limit, deadline)
    if nearest.steps is None or end - began < 1.0:
        return None
    plan = nearest.pack_again(options.budget_bytes, NEAREST_SECONDS if rolls else end - began)
    if plan is not None:
        return Found(nearest.steps, plan, extra_cost(graph, nearest.steps), "greedy")
    if not rolls or nearest.met is None:
        return None
    got = rolled(graph, nearest.met, options.budget_bytes, options.alignment, allowed, end)
    return None if got is None else Found(got[0], got[1], extra_cost(graph, got[0]), "rolling")


def _exhaustive(
    graph: Graph, options: Remat, allowed: list[bool], began: float
) -> Exhausted | None:
    """Step 1's search of every schedule, or None where it did not end."""
    return every_schedule(
        graph, options.budget_bytes, allowed, began + 0.25 * options.time_limit, EXHAUSTIVE_WORK
    )


def _lower(
    graph: Graph, options: Remat, allowed: list[bool], bound: MemoryBound, began: float
) -> Found | None:
    """Where the search did not end at the budget: the search at budgets a fifth lower
    each time (`LOWER_WORK`), down to the memory bound; the first that ends with a
    schedule gives it, without the runs the budget does not need, packed within the
    budget. It is the least at that lower budget, not at this one: not optimal. None
    where none ends with one that packs."""
    deadline = began + 0.4 * options.time_limit
    budget = options.budget_bytes - max(1, options.budget_bytes // 5)
    while budget >= bound.bytes and time.perf_counter() < deadline:
        every = every_schedule(graph, budget, allowed, deadline, LOWER_WORK)
        if every is not None:
            if every.steps is None:  # nothing fits there, nor any lower
                return None
            steps = prune(graph, every.steps, options.budget_bytes)
            plan = pack(graph, steps, options.budget_bytes, options.alignment, deadline + 1.0)
            return (
                None if plan is None else Found(steps, plan, extra_cost(graph, steps), "exhaustive")
            )
        budget -= max(1, options.budget_bytes // 5)
    return None


def _searched(graph: Graph, options: Remat) -> bool:
    """Whether step 1's search runs: on a small graph that no quick order fits (where
    one does, none need be searched)."""
    return (
        graph.ops <= EXHAUSTIVE_OPS and peak_bytes(graph, best_quick(graph)) > options.budget_bytes
    )


def _every(
    graph: Graph, options: Remat, every: Exhausted, total: int, bound: MemoryBound, began: float
) -> RematSchedule | None:
    """Step 1's exhaustive search, run to its end: INFEASIBLE where it found no schedule;
    OPTIMAL where its schedule (without the runs it does not need) packs; else None."""
    if every.steps is None:
        # The traced bound's reason, where it finds one, is one a reader can follow.
        searched = f"a search of every schedule ({every.states} sets of buffers held after a step) finds none"
        proof = traced(
            graph,
            options.budget_bytes,
            deadline=time.perf_counter() + 1.0,
            alignment=options.alignment,
        )
        proof = proof or MemoryBound(options.budget_bytes + 1, searched)
        reason = f"no schedule fits {options.budget_bytes} bytes: {proof.reason}"
        seconds = time.perf_counter() - began
        return RematSchedule(
            None, Status.INFEASIBLE, 0, 0, 0, total, 0, proof, None, "bound", reason, seconds
        )
    steps = prune(graph, every.steps, options.budget_bytes)
    plan = pack(
        graph, steps, options.budget_bytes, options.alignment, began + 0.3 * options.time_limit
    )
    if plan is None:
        return None
    found = Found(steps, plan, extra_cost(graph, steps), "exhaustive", True)
    return _result(graph, options, found, every.cost, total, bound, began)


def _orders(graph: Graph, options: Remat) -> list[tuple[int, ...]]:
    """Step 2's start orders, distinct, lowest peak first: the program order, the quick
    orders' best, and the order search's best at its full work and at a thirtieth of it
    (a start whose peak is a little higher may still lead lower: on MOCCASIN's 250-node
    graph at 60 %, only the second does)."""
    program = tuple(range(graph.ops))
    quick = best_quick(graph)
    seconds = max(0.5, 0.3 * options.time_limit)
    searched = Scheduler("auto", time_limit=seconds, work=options.order_work)(graph).order
    rough = Scheduler("auto", time_limit=seconds / 4, work=max(1, options.order_work // 30))(
        graph
    ).order
    orders = dict.fromkeys([program, quick, searched, rough])
    return sorted(orders, key=lambda order: peak_bytes(graph, order))


def _exact(
    graph: Graph,
    options: Remat,
    allowed: list[bool],
    best: Found | None,
    order: tuple[int, ...],
    seconds: float,
) -> tuple[Found | None, int | None]:
    """Step 4 with the first runs in `order`: the better schedule and the model's bound
    (None where the model proves that its space holds no schedule within the budget: an
    empty space bounds nothing, and the model with offsets, a restriction of it, need
    not run)."""
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
            if result.infeasible:
                return best, None
            bound = max(bound, result.bound)
        if result.steps is None or not is_valid_steps(graph, result.steps, allowed):
            if not offsets:
                continue
            break
        extra = extra_cost(graph, result.steps)
        if best is not None and extra >= best.extra:
            break
        plan = (
            _model_plan(graph, options, result)
            if offsets
            else pack(graph, result.steps, options.budget_bytes, options.alignment, end)
        )
        if plan is not None:
            return Found(
                result.steps, plan, extra, "cp-sat", result.optimal and room == options.budget_bytes
            ), bound
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
    return plan if fits(problem, plan) else None


def _nearest_words(graph: Graph, nearest: Nearest | None, total: int) -> str:
    """What the nearest schedule found that did not pack needs, for the reason where
    nothing fits: its arena with real offsets and its extra compute (of `total`)."""
    if nearest is None or nearest.steps is None or nearest.plan is None:
        return ""
    extra = 100.0 * extra_cost(graph, nearest.steps) / total if total else 0.0
    arena = nearest.plan.arena + graph.base_bytes
    return f"; the nearest schedule found fits {arena} bytes with real offsets, at +{extra:.3f} % extra compute"


def _instance_offsets(graph: Graph, found: Found) -> list[int]:
    problem = problem_of(graph, found.steps)
    return [found.plan.offsets.get(b.id, 0) for b in problem.buffers]


def _result(
    graph: Graph,
    options: Remat,
    best: Found | None,
    model_bound: int,
    total: int,
    bound: MemoryBound,
    began: float,
    nearest: Nearest | None = None,
) -> RematSchedule:
    if best is None:
        # Nothing found: perhaps nothing fits, which the traced bound may prove (within
        # a second of the limit: on MOCCASIN's 1,000-node graph its work took 6 s).
        proof = traced(
            graph,
            options.budget_bytes,
            deadline=max(began + options.time_limit, time.perf_counter()) + 1.0,
            alignment=options.alignment,
        )
        if proof is not None:
            reason = f"no schedule fits {options.budget_bytes} bytes: {proof.reason}"
            seconds = time.perf_counter() - began
            return RematSchedule(
                None, Status.INFEASIBLE, 0, 0, 0, total, 0, proof, None, "bound", reason, seconds
            )
    seconds = time.perf_counter() - began
    if best is None:
        reason = (
            f"no schedule within {options.budget_bytes} bytes found in {seconds:.1f} s of the "
            f"{options.time_limit:.1f} s limit (the proven memory bound is {bound.bytes})"
        ) + _nearest_words(graph, nearest, total)
        return RematSchedule(
            None, Status.UNKNOWN, 0, 0, 0, total, model_bound, bound, None, "none", reason, seconds
        )
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


__all__ = [
    "MemoryBound",
    "Remat",
    "RematSchedule",
    "is_valid_steps",
    "memory_bound",
    "rematerialise",
]
