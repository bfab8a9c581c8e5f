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
   lowered only at the steps where its packing overflowed (`packing.relieve`); where
   no rank meets a lower target, the tabu rank does, once. Every schedule that packs
   is made cheaper by ruin and recreate within its live bytes (`recreate`) where the
   cheaper one packs too (or the packing rounds from it bring one that does); an order
   whose schedules cost as much as the best is passed over, and the time the start
   orders leave goes to ruin and recreate from the best. Then
   the heuristics go on from first-run orders drawn at random (`restarts`) until their
   share of the time is spent, keeping the cheapest (`anytime`); where they find
   nothing by half of it, the tabu rank runs from each start order at targets below the
   budget, each schedule met then through the packing rounds at that target (the deep
   pass: MOCCASIN's 500-node graph at 50 %, +609 % at 120 s). For graphs above
   `exact_ops` ops this is the anytime path. Where nothing packs and time is left, the
   nearest schedule found, if its live bytes are within the budget, is packed by CP-SAT
   for longer (`shares`: "nearest"); where the limit is long enough ("rolling"), the
   cheapest schedule met in live bytes is then given slack and
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
5. Between steps 2 and 3, the bound over every schedule (`lower_bound`): the search of
   every schedule's least where it ran to its end, else the covering bound
   (`lower.covered`) in its share of the limit ("covering"), its own work counted
   (CP-SAT's deterministic time, GLOP's iterations, the flows' arcs), or the cheapest
   run again where step 2's order search proved every order's peak above the budget
   (`lower.forced`), the larger. It is 0 where an order fits the budget in live
   bytes; where its rows cannot be met, or no order fits and nothing that makes a
   buffer may run again, nothing fits: INFEASIBLE. It raises the floor of step 4's
   status (OPTIMAL where it is met), and the heuristics stop, and step 4 does not run,
   where a schedule found meets it.

The best schedule found is never worse than the heuristics'; its offsets are judged by
`validate` on `problem_of(graph, steps)` with the budget as capacity.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from optplan.budget import GUARD_SECONDS, Budget, active, now, running, spend
from optplan.problem import Problem, one_arena
from optplan.problem.plan import Plan, Status
from optplan.schedule import Scheduler, best_quick
from optplan.schedule.graph import Graph, peak_bytes, problem_of
from optplan.schedule.remat.answer import Remat, RematSchedule, answer, below_bound, infeasible
from optplan.schedule.remat.anytime import Call, Found, heuristics
from optplan.schedule.remat.bounds import MemoryBound, is_valid_steps, memory_bound, traced
from optplan.schedule.remat.exhaustive import Exhausted, every_schedule
from optplan.schedule.remat.heuristic import extra_cost, prune, total_cost
from optplan.schedule.remat.lower import Lower, covered
from optplan.schedule.remat.model import ModelResult, solve_model
from optplan.schedule.remat.packing import Nearest, fits, pack
from optplan.schedule.remat.rolling import rolled
from optplan.schedule.remat.shares import share

# The search of every schedule: graphs of up to this many ops, this many states (the
# MLP step at 50 % needs 15,964), and at budgets a fifth lower, this many each.
EXHAUSTIVE_OPS = 64
EXHAUSTIVE_WORK = 20_000
LOWER_WORK = 1_500
# The nearest schedule's CP-SAT packing, and what window-by-window packing needs after it.
NEAREST_SECONDS = 30.0
ROLLING_SECONDS = 90.0


def rematerialise(
    graph: Graph, options: Remat, recomputable: Sequence[bool] | None = None
) -> RematSchedule:
    """The schedule of the module docstring; `recomputable[v]` False keeps op v to one run
    (ops with effects, in-place calls). With `options.work`, every stage stops on work
    (`budget.running`), and the answer is the same on any machine unless the time limit,
    then a guard, cut it (`RematSchedule.cut`); the stages' shares of "the time" are then
    shares of the work. `seconds` are the wall seconds it took."""
    clock = Budget(options.work, options.time_limit).clock()
    within = replace(options, time_limit=clock.end)  # the stages' limit, on the clock
    with running(clock):
        found = _rematerialise(graph, within, recomputable)
    spend(clock.spent)  # on the clock of the caller's run, if any
    return replace(found, seconds=clock.seconds(), cut=clock.cut)


def _rematerialise(
    graph: Graph, options: Remat, recomputable: Sequence[bool] | None
) -> RematSchedule:
    began = now()
    deadline = began + options.time_limit
    allowed = list(recomputable) if recomputable is not None else [True] * graph.ops
    total = total_cost(graph)
    bound = memory_bound(graph, allowed, options.alignment)
    if options.budget_bytes < bound.bytes:
        return below_bound(options, bound, total, began)
    searched = _searched(graph, options)
    every = _exhaustive(graph, options, allowed, began) if searched else None
    if every is not None:
        found = _every(graph, options, every, total, bound, began)
        if found is not None:
            return found
    lower = _lower(graph, options, allowed, bound, began) if searched and every is None else None
    orders, order_bound = _orders(graph, options)
    covering = _covering(graph, options, allowed, (orders[0], order_bound), every)
    if covering.unmet:
        reason = f"no schedule fits {options.budget_bytes} bytes: {covering.reason}"
        return infeasible(
            MemoryBound(options.budget_bytes + 1, covering.reason), reason, total, began
        )
    exact = graph.ops <= options.exact_ops
    until = began + (share("heuristics") if exact else 1.0) * options.time_limit
    call = Call(
        graph,
        options.budget_bytes,
        options.alignment,
        allowed,
        Nearest(graph, options.alignment, options.budget_bytes),
        covering.cost,
    )
    least = now() + share("heuristics_least") * options.time_limit
    best = heuristics(call, orders, max(until, least))
    if lower is not None and (best is None or lower.extra < best.extra):
        best = lower
    if best is None:
        best = _nearest_packed(graph, options, call.nearest, allowed, deadline)
    best, bounds = _models(graph, options, allowed, best, orders, (covering.cost, deadline))
    # The exhaustive search's least extra compute holds for every schedule.
    floor = every.cost if every is not None else 0
    if bounds and (best is None or best.extra >= min(bounds)):
        # A schedule cheaper than the models' bound lies outside their spaces (an order
        # drawn at random): their bound says nothing of its own.
        floor = max(floor, min(bounds))
    return answer(graph, options, best, (floor, covering), total, bound, began, call.nearest)


def _models(
    graph: Graph,
    options: Remat,
    allowed: list[bool],
    best: Found | None,
    orders: list[tuple[int, ...]],
    until: tuple[int, float],
) -> tuple[Found | None, list[int]]:
    """Step 4 on graphs of up to `exact_ops` ops: the better schedule and the models'
    bounds, with the first runs in the best order and in the program order; none where
    the schedule found meets `until`'s bound over every schedule (before its deadline)."""
    least, deadline = until
    bounds: list[int] = []
    firsts = [orders[0]] + (
        [tuple(range(graph.ops))] if orders[0] != tuple(range(graph.ops)) else []
    )
    for copies in range(options.copies, options.copies + 3):
        if graph.ops > options.exact_ops or (best is not None and best.extra <= least):
            break
        for k, order in enumerate(firsts):
            seconds = (deadline - now()) / (len(firsts) - k)
            best, proven = _exact(
                graph, replace(options, copies=copies), allowed, best, order, max(0.5, seconds)
            )
            if proven is not None:
                bounds.append(proven)
        # Where the model's space holds nothing within the budget (it says so quickly on
        # small programs), a space with one more run of each op may.
        if best is not None or now() > deadline - 0.5:
            break
    return best, bounds


def _covering(
    graph: Graph,
    options: Remat,
    allowed: list[bool],
    order: tuple[tuple[int, ...], int],
    every: Exhausted | None,
) -> Lower:
    """Step 5, the bound over every schedule: the search of every schedule's least,
    where it ran to its end; else the covering bound in its share of the limit, beside
    what the order search proved (`order`: the best start order and the bound on every
    order's peak)."""
    if every is not None:
        return _least(every)
    units = share("covering") * options.time_limit
    peak = peak_bytes(graph, order[0])
    return covered(graph, options.budget_bytes, allowed, (peak, order[1]), units)


def _nearest_packed(
    graph: Graph, options: Remat, nearest: Nearest, allowed: list[bool], deadline: float
) -> Found | None:
    """Step 3's last resort where nothing packed: the nearest schedule packed by CP-SAT
    for the share "nearest" of the limit; where the share "rolling" leaves
    `ROLLING_SECONDS` after `NEAREST_SECONDS` of that, the cheapest schedule met in live
    bytes given slack and packed window by window (`rolling`) in the rest of it."""
    began = now()
    rolls = (
        nearest.met is not None
        and share("rolling") * options.time_limit >= NEAREST_SECONDS + ROLLING_SECONDS
    )
    end = min(began + share("rolling" if rolls else "nearest") * options.time_limit, deadline)
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
        graph,
        options.budget_bytes,
        allowed,
        began + share("exhaustive") * options.time_limit,
        EXHAUSTIVE_WORK,
    )


def _lower(
    graph: Graph, options: Remat, allowed: list[bool], bound: MemoryBound, began: float
) -> Found | None:
    """Where the search did not end at the budget: the search at budgets a fifth lower
    each time (`LOWER_WORK`), down to the memory bound; the first that ends with a
    schedule gives it, without the runs the budget does not need, packed within the
    budget. It is the least at that lower budget, not at this one: not optimal. None
    where none ends with one that packs."""
    deadline = began + share("lower") * options.time_limit
    budget = options.budget_bytes - max(1, options.budget_bytes // 5)
    while budget >= bound.bytes and now() < deadline:
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
            deadline=now() + 1.0,
            alignment=options.alignment,
        )
        proof = proof or MemoryBound(options.budget_bytes + 1, searched)
        reason = f"no schedule fits {options.budget_bytes} bytes: {proof.reason}"
        return infeasible(proof, reason, total, began)
    steps = prune(graph, every.steps, options.budget_bytes)
    until = began + share("exhaustive_pack") * options.time_limit
    plan = pack(graph, steps, options.budget_bytes, options.alignment, until)
    if plan is None:
        return None
    found = Found(steps, plan, extra_cost(graph, steps), "exhaustive", True)
    return answer(graph, options, found, (every.cost, _least(every)), total, bound, began)


def _least(every: Exhausted) -> Lower:
    return Lower(every.cost, "the least of every schedule (its search ran to its end)")


def _orders(graph: Graph, options: Remat) -> tuple[list[tuple[int, ...]], int]:
    """Step 2's start orders, distinct, lowest peak first: the program order, the quick
    orders' best, and the order search's best at its full work and at a thirtieth of it
    (a start whose peak is a little higher may still lead lower: on MOCCASIN's 250-node
    graph at 60 %, only the second does); and the higher of the two searches' proven
    bounds on every order's peak."""
    program = tuple(range(graph.ops))
    quick = best_quick(graph)
    seconds = max(0.5, share("orders") * options.time_limit)
    clock = active()
    if clock is not None and clock.counted:
        seconds = min(clock.guard_left(), GUARD_SECONDS)  # they stop on work: the guard
    searched = Scheduler("auto", time_limit=seconds, work=options.order_work)(graph)
    rough = Scheduler("auto", time_limit=seconds / 4, work=max(1, options.order_work // 30))(graph)
    orders = dict.fromkeys([program, quick, searched.order, rough.order])
    bound = max(searched.bound_bytes, rough.bound_bytes)
    return sorted(orders, key=lambda order: peak_bytes(graph, order)), bound


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
    end = now() + seconds
    room = options.budget_bytes
    bound = 0
    for offsets in (False, False, True):
        left = end - now()
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
    problem = Problem(problem.buffers, memories=one_arena(options.budget_bytes - graph.base_bytes))
    offsets_by_name = {b.id: off for b, off in zip(problem.buffers, result.offsets)}
    arena = max((off + b.size for b, off in zip(problem.buffers, result.offsets)), default=0)
    plan = Plan(offsets_by_name, arena, Status.FEASIBLE, "remat-cpsat", 0)
    return plan if fits(problem, plan) else None


def _instance_offsets(graph: Graph, found: Found) -> list[int]:
    problem = problem_of(graph, found.steps)
    return [found.plan.offsets.get(b.id, 0) for b in problem.buffers]


__all__ = [
    "MemoryBound",
    "Remat",
    "RematSchedule",
    "is_valid_steps",
    "memory_bound",
    "rematerialise",
]
