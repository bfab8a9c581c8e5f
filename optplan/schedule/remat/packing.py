"""Offsets for a schedule's instances within the budget, and the packing rounds.

`pack` places every instance of a schedule (`schedule.graph.problem_of`) in one arena
of the budget: greedy, `tries.descend` where greedy is over and the schedule small
enough, CP-SAT briefly where it is smaller still or greedy is near. `relieve` is what
the recomputation heuristics do when a schedule they met does not pack and a lower
target everywhere brings none that does: where the packing overflows at a step, that
step's target is lowered, and the heuristic goes on.

    the packing's top at each step
           │         ▒▒▒▒             ▒: above the budget at steps 3-4, though the
    budget ┼─────────████────────     bytes held there are within it (the holes
           │   ┌─────████──┐          between instances are not). Those steps'
           │ ┌─┘           └──┐       target goes down by the overflow and a little;
           └─┴────────────────┴──     the heuristic meets it, and the schedule is
             0  1  2  3  4  5  6  step    packed again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from optplan.budget import Budget, active, now, spend
from optplan.planners import drive, get_planner
from optplan.planners.greedy.tries import descend
from optplan.problem import Buffer, Problem, one_arena
from optplan.problem.plan import Plan, validate
from optplan.schedule.graph import Graph, problem_of
from optplan.schedule.remat.bounds import direct_bytes
from optplan.schedule.remat.heuristic import extra_cost, profile_of, relieved
from optplan.schedule.remat.recreate import relieved_again

CPSAT_PACKS = 500  # the most instances `pack` gives CP-SAT whatever greedy's gap
CPSAT_SECONDS = 5.0  # the most time `pack` gives CP-SAT
DESCENT_WORK = 1_000  # moves of `tries.descend` a packing above the budget is given
DESCENT_PACKS = 990  # the most instances it is given to (each move places them all)
# Packing rounds in a row that bring the packing no lower, after which `relieve` stops.
# The overflow moves up and down from round to round: on MOCCASIN's 1,000-node graph at
# 50 % it went 10,051 bytes, ..., 2,191 (round 7), then 3,141, 2,510, 9,000, 5,321,
# 5,501, 2,231 and 0 (round 14). Five idle rounds stopped it at round 12 with 72 of its
# 120 s left, and nothing else answered.
RELIEF_IDLE = 10
# In those rounds CP-SAT packs a schedule too large for `tries.descend` only where greedy
# is within 1/RELIEF_NEAR of the budget (on the 1,000-node graph at 50 % its 5 s at 1-2 %
# over never closed it, and the next round did).
RELIEF_NEAR = 200


@dataclass(slots=True)
class Nearest:
    """Of the schedules found whose instances did not pack within the budget, the one
    whose packing came lowest: its steps and that packing (valid, its arena above the
    budget), or None until one is offered. What a caller reports where nothing fits:
    how much memory the nearest schedule found needs with real offsets."""

    graph: Graph
    alignment: int
    budget: int
    steps: tuple[int, ...] | None = None
    plan: Plan | None = None
    # Of the schedules offered, the cheapest whose live bytes are within the budget: the
    # nearest in arena may hold more (on MOCCASIN's 250-node graph at 60 %, after 240 s of
    # the heuristics one of +46.3 % against one of +16.4 % met in live bytes).
    met: tuple[int, ...] | None = None

    def offer(self, steps: Sequence[int], plan: Plan) -> None:
        if plan.status.has_plan and (self.plan is None or plan.arena < self.plan.arena):
            self.steps, self.plan = tuple(steps), plan
        if int(profile_of(self.graph, steps).max(initial=0)) <= self.budget and (
            self.met is None or extra_cost(self.graph, steps) < extra_cost(self.graph, self.met)
        ):
            self.met = tuple(steps)

    def pack_again(self, budget: int, seconds: float) -> Plan | None:
        """The nearest schedule's instances packed within the budget by CP-SAT for
        `seconds` (its skyline search first), or None: where none was offered, its live
        bytes exceed the budget, or it has more than `CPSAT_PACKS` instances."""
        if self.steps is None or int(profile_of(self.graph, self.steps).max(initial=0)) > budget:
            return None
        buffers = problem_of(self.graph, self.steps, self.alignment).buffers
        if len(buffers) > CPSAT_PACKS:
            return None
        problem = Problem(buffers, memories=one_arena(budget - self.graph.base_bytes))
        plan = cpsat_within(problem, seconds)
        return plan if fits(problem, plan) else None

    def pack(self, steps: Sequence[int]) -> None:
        """Offer a schedule's packing (an order's, or one a heuristic gave up on) where
        its live bytes are below the nearest arena so far: greedy's one run that wins
        most often on recomputed schedules (on a schedule of MOCCASIN's 500-node graph
        of 3,036 instances, 0.1 s where all of greedy's runs take 2 s)."""
        held = int(profile_of(self.graph, steps).max(initial=0)) - self.graph.base_bytes
        if self.plan is None or held < self.plan.arena:
            problem = problem_of(self.graph, steps, self.alignment)
            spend(len(problem.buffers) * GREEDY_WORK / 10)
            self.offer(steps, get_planner("greedy", orders=("lifetime",), fits=("first",))(problem))


@dataclass(frozen=True, slots=True)
class Unpacked:
    """A schedule met at `target` in live bytes, with the rank of moves that met it,
    whose packing's top at each step (`tops`) is over the budget somewhere; and where
    the packing rounds from it find nothing, the one they go on from (`before`)."""

    found: tuple[tuple[int, ...], str]
    tops: np.ndarray
    target: int
    before: Unpacked | None = None


def relieve(
    graph: Graph,
    unpacked: Unpacked,
    budget: int,
    alignment: int,
    allowed: list[bool],
    deadline: float,
    nearest: Nearest | None = None,
    again: float = 0.0,
) -> tuple[tuple[int, ...], Plan, np.ndarray] | None:
    """Step 3's packing rounds from a schedule met at a target that did not pack: where
    a packing of it exceeds the budget at a step, that step's target is
    lowered by as much and a little more (`heuristic.relieved`), and the heuristic that
    found it goes on from it; the first schedule that packs, or None once
    `RELIEF_IDLE` rounds in a row bring no packing lower or a lowered target is not met.
    A step's target never goes below what its op needs at once (the search would fail
    on it). On MOCCASIN's 1,000-node graph at 50 %, no lower target everywhere brings a
    schedule that packs; the rounds from the first one met (2,996 steps, 10,051 bytes
    over) bring one in 14 rounds. The schedule that packs, its plan and the relief of
    its steps, or None. With `again`, each round's schedule is then recreated with a
    local ruin (`recreate.relieved_again`, each step's relief kept) for that much work."""
    (steps, rank), tops, target = unpacked.found, unpacked.tops, unpacked.target
    room = budget - graph.base_bytes
    need = graph.base_bytes + np.array(
        [direct_bytes(graph, v) for v in range(graph.ops)], dtype=np.int64
    )
    relief = np.zeros(len(steps), dtype=np.int64)
    lowest, idle, rounds = None, 0, 0
    while idle < RELIEF_IDLE and now() < deadline:
        rounds += 1
        over = np.maximum(0, tops - room)
        more = over + np.where(over > 0, max(1, room // 200), 0)
        relief = np.clip(relief + more, 0, np.maximum(0, target - need[list(steps)]))
        found = relieved(
            graph, steps, target, allowed, deadline, rank, relief, nearest.pack if nearest else None
        )
        if found is None:
            return None
        steps, relief = found
        if again:
            until = min(deadline, now() + again)
            steps, relief = relieved_again(
                graph, (steps, relief), target, allowed, until, seed=rounds, local=True
            )
        plan, excess, tops = packed(
            graph, steps, budget, alignment, deadline, near=RELIEF_NEAR, nearest=nearest
        )
        if plan is not None:
            return steps, plan, relief
        lowest, idle = (excess, 0) if lowest is None or excess < lowest else (lowest, idle + 1)
    return None


def pack(
    graph: Graph, steps: Sequence[int], budget: int, alignment: int, deadline: float
) -> Plan | None:
    """Offsets of every instance within the budget (greedy, then CP-SAT briefly), or None."""
    return packed(graph, steps, budget, alignment, deadline)[0]


def packed(
    graph: Graph,
    steps: Sequence[int],
    budget: int,
    alignment: int,
    deadline: float,
    near: int = 50,
    nearest: Nearest | None = None,
) -> tuple[Plan | None, int, np.ndarray]:
    """`pack`'s plan, the bytes by which its packing before CP-SAT exceeds the budget
    (0 when it fits), and the highest byte that packing uses at each step. Where nothing
    fits, that packing is offered to `nearest`.
    Greedy's packing above the budget goes to `tries.descend`, bounded
    by `DESCENT_WORK` moves (not seconds, so that the rounds after it take the same path
    on every run), up to `DESCENT_PACKS` instances: on MOCCASIN's 500-node graph at 60 %
    the rounds reach a schedule of 941 instances that it packs within the budget (their
    schedules there have up to 988); on its 1,000-node graph, whose every schedule has
    1,000 instances or more, a move takes about 20 ms: 1,000 of them would take 20 s of
    the rounds' time on a plain order alone. CP-SAT's few
    seconds are tried where there are at most `CPSAT_PACKS` instances, or where the
    search was not run and greedy is within 2 % of the budget: on MOCCASIN's 250-node
    graph at 70 % (265 instances) they close more than 10 %; on its 500-node graph at
    60 % (674) 0.4 % of 12.3 % in 10 s, and after the search 5 s of it did not bring a
    schedule of 988 instances, 1.9 % over, within the budget; on its
    1,000-node graph at 90 % and 80 % they pack schedules the rounds would otherwise
    take lower (+0.57 and +4.20 % extra compute against +0.77 and +4.70 %)."""
    room = budget - graph.base_bytes
    buffers = problem_of(graph, steps, alignment).buffers
    problem = Problem(buffers, memories=one_arena(room))
    plan = get_planner("greedy")(Problem(buffers))
    spend(len(buffers) * GREEDY_WORK)
    searched = plan.arena > room and len(buffers) <= DESCENT_PACKS
    if searched:
        plan = descend(problem, plan, deadline, work=DESCENT_WORK)
    over = max(0, plan.arena - room)
    before = plan  # the packing before CP-SAT, offered to `nearest` where nothing fits
    tops = tops_of(buffers, plan, len(steps))
    if over and (len(buffers) <= CPSAT_PACKS or (not searched and over <= room // near)):
        left = min(CPSAT_SECONDS, deadline - now())
        if left > 0.2:
            plan = cpsat_within(problem, left)
    good = fits(problem, plan)
    if not good and over and nearest is not None:
        nearest.offer(steps, before)
    return (plan if good else None), over, tops


# The work of greedy's runs (its orders and fits, and what it builds first) per buffer
# of a schedule's problem; one run alone is a tenth of it.
GREEDY_WORK = 2e-4


def cpsat_within(problem: Problem, units: float) -> Plan:
    """The cpsat planner's plan of `problem` within `units` of the running clock: work,
    counted on it, where it counts work; else `units` seconds."""
    clock = active()
    if clock is None or not clock.counted:
        return get_planner("cpsat", work=None, time_limit=units)(problem)
    guard = clock.guard_left()
    budget = Budget(max(units, 0.01), None if guard == float("inf") else max(guard, 0.01))
    plan = drive(problem, "cpsat", budget)
    spend(float(plan.detail.get("work", 0.0)))  # type: ignore[arg-type]
    return plan


def fits(problem: Problem, plan: Plan) -> bool:
    """Whether `plan` has offsets and they are valid, its arena within the problem's
    capacity (the budget less `base_bytes`) among the checks."""
    return plan.status.has_plan and not validate(problem, plan)


def tops_of(buffers: Sequence[Buffer], plan: Plan, steps: int) -> np.ndarray:
    """The highest byte in use at each step under `plan` (0 where it has no offsets)."""
    tops = np.zeros(steps + 1, dtype=np.int64)
    for buffer in buffers:
        offset = plan.offsets.get(buffer.id)
        if offset is None:
            continue
        for span in buffer.live:
            np.maximum(
                tops[span.start : span.end], offset + buffer.size, out=tops[span.start : span.end]
            )
    return tops[:steps]
