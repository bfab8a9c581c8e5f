"""Step 3 of `rematerialise` (the anytime path): the heuristics from each start order,
their schedules packed for real offsets, and the orders drawn at random after them.

From one order (`fit`): the peak heuristic meets the live-bytes target under its ranks
(and the walk evicts on demand); the schedule met is packed (`packing.packed`). Where
it does not pack, the whole target is tightened (`_tightened`) on a ladder where the
first schedule met costs at most the graph's compute again (each rung's schedule
recreated by ruin and recreate (`recreate`), the rungs close, the tabu rank at each);
where it costs more, that schedule is recreated with a local ruin (`_dear`). Where
neither packs, the packing rounds lower the target only at the steps where the packing
overflowed (`packing.relieve`); off the ladder, once they pack, they go again in the
time left with a local ruin inside each round (`ROUND_WORK`). A schedule that packs is
made cheaper by ruin and recreate within its live bytes, kept where that packs too, or
where the packing rounds from it bring one that packs and is still cheaper (`cheaper`).
A start order is passed over once a schedule it meets costs as much as the best, and
the time the start orders leave goes to ruin and recreate from the best while it gets
cheaper.
Every packing that did not fit, every start order's own packing and every schedule the
peak heuristic gave up on is offered to `Call.nearest`: where nothing
fits, the caller reports how much memory the nearest schedule found needs. Where nothing
packs by half the time left for the orders drawn at random, the deep pass (`deep`): the
tabu search from the start orders at live-bytes targets below the budget, each schedule
met then through the packing rounds at that target.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from optplan.budget import now
from optplan.problem.plan import Plan
from optplan.schedule.graph import Graph, peak_bytes
from optplan.schedule.remat.bounds import direct_bytes
from optplan.schedule.remat.heuristic import (
    RANKS,
    TABU,
    extra_cost,
    greedy,
    profile_of,
    prune,
    relieved,
    total_cost,
)
from optplan.schedule.remat.packing import Nearest, Unpacked, packed, relieve
from optplan.schedule.remat.recreate import RECREATE, recreate, relieved_again
from optplan.schedule.remat.restarts import freeing_orders
from optplan.schedule.remat.walk import evict

# Orders drawn in a row without a cheaper schedule, after which the draws stop: on
# mlp_train the cheapest came within a few dozen, and where nothing better is found
# (FCN-8 at 90-70 %) the draws otherwise take the heuristics' whole share of the time.
RESTARTS_IDLE = 100
# The deep pass's live-bytes targets, as shares of the budget, tried in turn from each
# start order (never below what the op needing most at once holds). On MOCCASIN's
# 500-node graph at 50 %, which no other pass meets in a packing, from the searched
# order (peak 250,020 bytes): at 90 % the tabu search meets the target in 22 s (3,538
# steps) and the packing rounds pack it in 18 s more; at 95 % in 13 s and 67 s; both
# +609 % extra compute. From the program order (284,439) neither is met in 120 s.
DEEP_TARGETS = (0.9, 0.95)
# The least time the deep pass needs at half the time left for the draws: shorter limits
# keep the draws as they were (MOCCASIN's 500-node graph at 60 % is met by them at 30 s).
DEEP_SECONDS = 30.0
# The work of ruin and recreate at each rung of a ladder (`_tightened`), before the schedule
# met there is packed (half of what is left at most). Without it each rung goes on from
# a dearer schedule, and the next jumps further: on MOCCASIN's 500-node graph at 60 %,
# +34.1 % at the budget, then +94.1 % at 91 %; with it +22.4 % at the budget, +30.5,
# +50.3, +44.5 and +41.6 % at 95-90 %, then +41.3 % at 89.5 %, which packs.
RUNG_WORK = 3.0
# The most extra compute, in shares of the graph's, of the first schedule met at which
# the tightening is a ladder. Above it the ladder's rungs cost more and take the time the
# packing rounds need: on MOCCASIN's 1,000-node graph at 50 % (+157 % first) the ladder
# packs nothing in 30 units, and the packing rounds find +183 % from the first schedule
# and +147.5 % from it recreated (`_dear`).
LADDER_EXTRA = 1.0
# The work in which a first schedule dearer than that is recreated (`_dear`; half of what
# is left at most) before the packing rounds go on from it. Fixed, so that more time
# does not change the schedule they start from: on MOCCASIN's 1,000-node graph at 50 %,
# a quarter of the time left recreated it to +80.7 % at 30 units and the rounds packed
# +147.5 %; to +62.8 % at 60 units, and the rounds from it packed nothing in 33 units.
DEAR_WORK = 5.0
# Off the ladder, once the packing rounds from that schedule pack, the same rounds again
# with each round's schedule recreated by a local ruin for this much work (the time
# left), kept where they pack it cheaper. On MOCCASIN's 1,000-node graph at 50 %, from
# +80.7 %: the plain rounds pack +147.5 % in 11 units; these go +111.8, +108.2, ...,
# +86.5 % (round 5), then 0.2-2.5 % over the budget until round 12 packs +90.0 %, 24
# units in all (at 30 units there is not the time: the answer is the plain rounds').
ROUND_WORK = 1.0


@dataclass(frozen=True, slots=True)
class Call:
    """What every step of one `rematerialise` call shares: the graph, the budget in bytes
    (`base_bytes` included), the alignment of every offset, which ops may run again,
    the nearest schedule found that did not pack, and a bound on the extra compute of
    every schedule (a schedule that meets it is the least: the search stops there)."""

    graph: Graph
    budget: int
    alignment: int
    allowed: list[bool]
    nearest: Nearest
    least: int = 0


@dataclass(frozen=True, slots=True)
class Found:
    """A schedule that packs within the budget: its steps, plan, extra compute, what
    found it, and whether it is the least there is."""

    steps: tuple[int, ...]
    plan: Plan
    extra: int
    method: str
    optimal: bool = False


def heuristics(call: Call, orders: list[tuple[int, ...]], deadline: float) -> Found | None:
    """Step 3 from every order, the cheapest schedule: first the peak heuristic's
    cheapest moves (and the walk), and only where that finds nothing from any order,
    its other ranks (which reach lower budgets at a dearer extra compute); then the
    orders drawn at random. Its tabu search (`heuristic.TABU`) runs only in the deep
    pass, where the draws find nothing by half their time (`DEEP_SECONDS`): run before
    them on MOCCASIN's 500-node graph, it took the time in which they meet 60 % (+86.3 %
    at 30 s, met then only at 120 s)."""
    best: Found | None = None
    for order in orders:
        if peak_bytes(call.graph, order) > call.budget:
            call.nearest.pack(order)
    for ranks in (RANKS[:1], RANKS[1:]):
        for order in orders:
            found = fit(call, order, deadline, ranks, best.extra if best else None)
            if found is not None and (best is None or found.extra < best.extra):
                best = found
            if best is not None and best.extra <= call.least:
                return best
        if best is not None:
            break
    while best is not None and not best.optimal and now() < deadline:
        # The time the start orders left: ruin and recreate again from the best.
        again = cheaper(call, best, deadline)
        if again.extra >= best.extra:
            break
        best = again
    draws = freeing_orders(call.graph)
    half = now() + (deadline - now()) / 2
    if best is None and deadline - half >= DEEP_SECONDS:
        best = _restarts(call, draws, deadline, None, half)
        if best is not None:  # found before half their time: the draws ran to their end
            return best
        best = deep(call, orders, deadline)
    return _restarts(call, draws, deadline, best)


def _restarts(
    call: Call,
    draws: Iterator[tuple[int, ...]],
    deadline: float,
    best: Found | None,
    empty: float | None = None,
) -> Found | None:
    """Step 3's rest: the heuristics from orders drawn at random (`draws`, from
    `restarts.freeing_orders`) until the deadline, or until `empty` where nothing packs
    by then; the cheapest schedule that packs, `best` or one of theirs; once there is
    one, they stop after `RESTARTS_IDLE` orders in a row that give none cheaper."""
    idle = 0
    for order in draws:
        if now() > deadline or (
            best is not None and (best.extra <= call.least or idle >= RESTARTS_IDLE)
        ):
            break
        found = fit(call, order, deadline, RANKS)
        idle += 1
        if found is not None and (best is None or found.extra < best.extra):
            best, idle = found, 0
        if best is None and empty is not None and now() > empty:
            break
    return best


def deep(call: Call, orders: list[tuple[int, ...]], deadline: float) -> Found | None:
    """The deep pass: from each start order (lowest peak first), the tabu search's
    schedule at each of `DEEP_TARGETS` (never below what the op needing most at once
    holds), packed, else through the packing rounds at that target; the first that
    packs, or None."""
    graph = call.graph
    need = graph.base_bytes + max((direct_bytes(graph, v) for v in range(graph.ops)), default=0)
    targets = dict.fromkeys(max(need, int(call.budget * share)) for share in DEEP_TARGETS)
    for order in orders:
        for target in targets:
            if now() > deadline:
                return None
            met = relieved(
                graph,
                order,
                target,
                call.allowed,
                deadline,
                TABU,
                np.zeros(len(order), dtype=np.int64),
            )
            if met is None:
                continue
            plan, _, tops = packed(
                graph, met[0], call.budget, call.alignment, deadline, nearest=call.nearest
            )
            if plan is not None:
                return cheaper(call, Found(met[0], plan, extra_cost(graph, met[0]), TABU), deadline)
            unpacked = Unpacked((met[0], TABU), tops, target)
            packs = relieve(
                graph, unpacked, call.budget, call.alignment, call.allowed, deadline, call.nearest
            )
            if packs is not None:
                found = Found(packs[0], packs[1], extra_cost(graph, packs[0]), TABU)
                return cheaper(call, found, deadline, (target, packs[2]))
    return None


def fit(
    call: Call,
    order: tuple[int, ...],
    deadline: float,
    ranks: Sequence[str],
    dearer: int | None = None,
) -> Found | None:
    """Step 3 from one order: tighten the live-bytes target until the instances pack;
    where that finds nothing, the packing rounds (`packing.relieve`) from the first
    schedule met that did not pack (off the ladder, once they pack, the same rounds
    again with a local recreate in each, `ROUND_WORK`, kept where cheaper). None at
    once where the schedule met at the budget costs `dearer` or more (a lower target
    costs more still)."""
    graph = call.graph
    if peak_bytes(graph, order) <= call.budget:
        # An order that fits needs no recomputation: packing it is worth a little time
        # even where the heuristics' share is spent (a loaded machine).
        plan, _, _ = packed(
            graph,
            order,
            call.budget,
            call.alignment,
            max(deadline, now() + 2.0),
            nearest=call.nearest,
        )
        if plan is not None:
            return Found(order, plan, 0, "order", True)
    found, unpacked = _tightened(call, order, deadline, ranks, dearer)
    if found is not None or unpacked is None:
        return None if found is None else cheaper(call, found, deadline)
    # The packing rounds from the schedule met, else from the one before it (`_dear`).
    start: Unpacked | None = unpacked
    packs = None
    while packs is None and start is not None:
        unpacked, start = start, start.before
        packs = relieve(
            graph, unpacked, call.budget, call.alignment, call.allowed, deadline, call.nearest
        )
    if packs is None:
        return None
    if unpacked.before is not None:  # off the ladder (`_dear`): the rounds again, slower
        slow = relieve(
            graph,
            unpacked,
            call.budget,
            call.alignment,
            call.allowed,
            deadline,
            call.nearest,
            again=ROUND_WORK,
        )
        if slow is not None and extra_cost(graph, slow[0]) < extra_cost(graph, packs[0]):
            packs = slow
    found = Found(packs[0], packs[1], extra_cost(graph, packs[0]), "greedy")
    return cheaper(call, found, deadline, (unpacked.target, packs[2]))


def cheaper(
    call: Call, found: Found, deadline: float, relief: tuple[int, np.ndarray] | None = None
) -> Found:
    """`found`, or a cheaper schedule that packs: ruin and recreate (`recreate`) within
    the live bytes `found` holds at its peak (or at `relief`'s target, less each step's
    relief, where the packing rounds found it), in half the time left at most, packed."""
    graph = call.graph
    if found.extra <= call.least or found.optimal:
        return found
    if relief is None:
        peak = int(profile_of(graph, found.steps).max(initial=0))
        relief = (peak, np.zeros(len(found.steps), dtype=np.int64))
    until = now() + (deadline - now()) / 2
    target, each = relief
    steps = relieved_again(graph, (found.steps, each), target, call.allowed, until)[0]
    extra = extra_cost(graph, steps)
    if extra >= found.extra:
        return found
    plan, _, tops = packed(
        graph, steps, call.budget, call.alignment, deadline, nearest=call.nearest
    )
    if plan is not None:
        return Found(steps, plan, extra, RECREATE)
    # Cheaper in live bytes but not packed: the packing rounds from it, in half of what
    # is left at most (on MOCCASIN's 500-node graph at 60 %, +51.9 % against +55.1 %,
    # 195 bytes over the budget).
    until = now() + (deadline - now()) / 2
    unpacked = Unpacked((steps, RANKS[0]), tops, target)
    packs = relieve(graph, unpacked, call.budget, call.alignment, call.allowed, until, call.nearest)
    if packs is None or extra_cost(graph, packs[0]) >= found.extra:
        return found
    return Found(packs[0], packs[1], extra_cost(graph, packs[0]), RECREATE)


def _tightened(
    call: Call,
    order: tuple[int, ...],
    deadline: float,
    ranks: Sequence[str],
    dearer: int | None = None,
) -> tuple[Found | None, Unpacked | None]:
    """`fit`'s tightening of the target: the schedule that packs, or None; and the first
    schedule met by the peak heuristic that did not pack, or None. Where the first
    schedule met costs at most `LADDER_EXTRA` times the graph's compute, a ladder of
    targets: each rung met by the ranks that met the rung above and, below the first,
    the tabu rank (the cheaper taken), recreated for `RUNG_WORK` before it is packed,
    and the next target lower by half what the packing lost to fragmentation, at least
    a two-hundredth of the room. Where it costs more, `_dear`."""
    graph = call.graph
    target, steps = call.budget, order
    unpacked: Unpacked | None = None
    floor = graph.base_bytes  # below every target the heuristics may still meet
    missed = None  # the lowest target met whose schedule did not pack
    while target > floor:
        every = _found_by(call, steps, target, deadline, ranks)
        if missed is not None:
            tabu = _tabu_by(call, steps, target, deadline, recreated=False)
            every = sorted(every + tabu, key=_extra(graph))
        found = every[0] if every else None
        if found is None:
            if missed is None or missed - floor <= max(1, call.budget // 1000):
                return None, unpacked
            # Nothing at this target from here: try halfway back to the one met.
            floor, target = target, (target + missed) // 2
            continue
        cost = extra_cost(graph, found[0])
        if dearer is not None and cost >= dearer:
            return None, None
        if missed is None and cost > LADDER_EXTRA * total_cost(graph):
            return _dear(call, found, target, deadline)
        until = now() + min(RUNG_WORK, (deadline - now()) / 2)
        found = recreate(graph, found[0], target, call.allowed, until), found[1]
        plan, over, tops = packed(
            graph, found[0], call.budget, call.alignment, deadline, nearest=call.nearest
        )
        if plan is not None:
            return _packed(graph, found[0], plan), unpacked
        if found[1] != "walk" and unpacked is None:  # met by the peak heuristic
            unpacked = Unpacked(found, tops, target)
        # The next rung goes on from this schedule with the ranks of the peak heuristic
        # that met this target, cheapest first.
        missed, steps = target, found[0]
        kept = [rank for _, rank in every if rank not in ("walk", TABU)]
        ranks = kept or (ranks if found[1] == TABU else RANKS[:1])
        step = max(1, (target - graph.base_bytes) // 200, over // 2)
        lower = max(floor + 1, target - step)
        if lower >= target or now() > deadline:
            return None, unpacked  # met at every target tried, packed at none
        target = lower
    return None, unpacked


def _dear(
    call: Call, found: tuple[tuple[int, ...], str], target: int, deadline: float
) -> tuple[Found | None, Unpacked | None]:
    """Off the ladder (the first schedule met dearer than `LADDER_EXTRA`): that schedule
    packed; else recreated with a local ruin for `DEAR_WORK` and packed; where that does
    not pack, the packing rounds go on from it under the rank "ratio" (under "cost",
    which met it, their first lower target is not met on MOCCASIN's 1,000-node graph at
    50 %), and where they find nothing, from the first schedule as met (`fit`). There
    they start from +80.7 % instead of +157.4 % and find +147.5 % where they found
    +183.4 %; a ladder from it (rungs +77 to +104 %, 4-7 % over) packed nothing in 30
    units."""
    graph, (steps, rank) = call.graph, found
    plan, _, tops = packed(
        graph, steps, call.budget, call.alignment, deadline, nearest=call.nearest
    )
    if plan is not None:
        return _packed(graph, steps, plan), None
    met = Unpacked((steps, RANKS[0] if rank == "walk" else rank), tops, target)
    until = now() + min(DEAR_WORK, (deadline - now()) / 2)
    steps = recreate(graph, steps, target, call.allowed, until, local=True)
    plan, _, tops = packed(
        graph, steps, call.budget, call.alignment, deadline, nearest=call.nearest
    )
    if plan is not None:
        return _packed(graph, steps, plan), None
    return None, Unpacked((steps, RANKS[1]), tops, target, met)


def _packed(graph: Graph, steps: tuple[int, ...], plan: Plan) -> Found:
    """A schedule the tightening packed, as found: the order itself where it runs no op
    again (the least there is), else the peak heuristic's."""
    extra = extra_cost(graph, steps)
    return Found(steps, plan, extra, "order" if extra == 0 else "greedy", extra == 0)


def _extra(graph: Graph) -> Callable[[tuple[tuple[int, ...], str]], int]:
    return lambda found: extra_cost(graph, found[0])


def _tabu_by(
    call: Call, steps: tuple[int, ...], target: int, deadline: float, recreated: bool = True
) -> list[tuple[tuple[int, ...], str]]:
    """Where no rank meets a lower target from a schedule met above it (or at every rung
    of a ladder): the tabu rank, in a quarter of the time left at most, its schedule
    made cheaper by ruin and recreate at that target in a quarter of what is then left
    unless `recreated` is False (on MOCCASIN's 500-node graph at 60 %, from a schedule
    met at 94 % of the budget, 90 % is met at +74.9 % and recreated to +40.6 %, which
    packs)."""
    graph = call.graph
    until = now() + (deadline - now()) / 4
    met = greedy(graph, steps, target, call.allowed, until, TABU, call.nearest.pack)
    if met is None:
        return []
    if not recreated:
        return [(met, TABU)]
    return [(recreate(graph, met, target, call.allowed, now() + (deadline - now()) / 4), TABU)]


def _found_by(
    call: Call, steps: tuple[int, ...], target: int, deadline: float, ranks: Sequence[str]
) -> list[tuple[tuple[int, ...], str]]:
    """The schedules the heuristics find from `steps` (the peak heuristic under each of
    `ranks`, and the walk from a plain order where "cost" is among them), cheapest first,
    each with what found it. Each stops at the deadline, so a later one may not run at
    all. A schedule the peak heuristic gives up on is offered to `call.nearest`."""
    graph, allowed = call.graph, call.allowed
    found: list[tuple[tuple[int, ...], str]] = []
    for rank in ranks:
        schedule = greedy(graph, steps, target, allowed, deadline, rank, call.nearest.pack)
        if schedule is not None:
            found.append((schedule, rank))
    if len(steps) == graph.ops and RANKS[0] in ranks:
        walked = evict(graph, steps, target, allowed, deadline)
        if walked is not None:
            found.append((prune(graph, walked, target), "walk"))
    return sorted(found, key=_extra(graph))
