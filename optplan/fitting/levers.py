"""The levers `fit` pulls, each the existing pass or planner that holds it, and one plan
of what a lever leaves within the capacity.

    lever                 how                                            costs
    as is                 the program as written                         nothing
    in place              passes.use_inplace_calls                       nothing
    order                 passes.reorder (schedule.Scheduler("auto"))    nothing
    order + in place      reorder, then use_inplace_calls                nothing
    recompute             passes.recompute (schedule.remat)              extra compute
    recompute + in place  use_inplace_calls, then recompute              extra compute
    second memory         the memories given, planned by the planners    slow-memory traffic
    order + in place + second memory                                     slow-memory traffic

Steps of `attempt(form, ...)`: the form's problem at the capacity (or across the
memories); its live bytes first (above the capacity no plan fits, so none is sought);
then greedy, then CP-SAT for the lever's share of the time; the plan is kept only where
`validate` finds nothing wrong.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from optplan.analysis.liveness import MemoryFacts, build_memory
from optplan.ir import Program
from optplan.planners import get_planner
from optplan.problem import Memory, Problem, lower_bound, one_arena
from optplan.problem.outcome import bytes_used
from optplan.problem.plan import Plan, traffic, validate
from optplan.schedule.remat.packing import cpsat_within

# Cost classes, cheapest first: a lever of a later class is chosen only where no lever of
# an earlier one fits.
FREE, COMPUTE, TRAFFIC = 0, 1, 2
CLASS_NAMES = ("free", "extra compute", "slow-memory traffic")  # by class


@dataclass(frozen=True, slots=True)
class Form:
    """A program as a lever leaves it: the rewritten program, what it computes again
    (`copies`: new variable -> original), and that compute against the whole."""

    lever: str
    cost_class: int
    program: Program | None
    changed: str
    copies: dict[str, str] = field(default_factory=dict)
    extra_cost: int = 0
    total_cost: int = 0
    memories: tuple[Memory, ...] | None = None

    @property
    def extra_percent(self) -> float:
        return 100.0 * self.extra_cost / self.total_cost if self.total_cost else 0.0


@dataclass(frozen=True, slots=True)
class Tried:
    """One lever tried: whether its plan fits, what it costs and the bytes it needs
    (`needs_bytes`: the live-bytes peak of its form; `arena_bytes`: its plan's arena, or
    of several memories the first's bytes in use). `note`: why it does not fit."""

    lever: str
    cost_class: int
    fits: bool
    needs_bytes: int | None
    arena_bytes: int | None
    extra_percent: float
    slow_traffic: int
    note: str
    seconds: float
    form: Form | None = None
    problem: Problem | None = None
    memory: MemoryFacts | None = None
    plan: Plan | None = None

    @classmethod
    def of(cls, *, form: Form, **fields: Any) -> Tried:
        """A lever tried on `form`: its name, cost class and extra compute from the form."""
        return cls(
            form.lever, form.cost_class, extra_percent=form.extra_percent, form=form, **fields
        )

    @classmethod
    def none(cls, lever: str, cost_class: int, reason: str) -> Tried:
        """A lever that made no form (recomputation found no program): it does not fit."""
        return cls(lever, cost_class, False, None, None, 0.0, 0, reason, 0.0)

    @property
    def cost(self) -> float:
        """The figure compared within a cost class (0 for the free levers)."""
        return self.extra_percent if self.cost_class == COMPUTE else float(self.slow_traffic)


@dataclass(frozen=True, slots=True)
class Setting:
    """What every lever shares: the capacity, the memories given, how programs are read
    into problems, and the seconds each lever may take."""

    capacity: int
    alignment: int = 64
    plan_outputs: bool = False
    memories: tuple[Memory, ...] | None = None
    seconds: float = 2.0

    def facts(self, program: Program, memories: tuple[Memory, ...] | None) -> MemoryFacts:
        return build_memory(
            program, plan_outputs=self.plan_outputs, alignment=self.alignment, memories=memories
        )


def attempt(form: Form, setting: Setting, problem: Problem | None = None) -> Tried:
    """`form` planned within the capacity (module docstring); `problem` stands in for a
    form without a program (a CSV problem)."""
    began = time.perf_counter()
    memory = None
    if form.program is not None:
        memory = setting.facts(form.program, form.memories)
        problem = memory.problem
    assert problem is not None
    problem = _bounded(problem, setting.capacity, form.memories)
    needs = lower_bound(problem)
    plan = None
    if form.memories is not None or needs <= setting.capacity:
        plan = pack(problem, setting.seconds)
    seconds = time.perf_counter() - began
    tried = Tried.of(
        form=form,
        problem=problem,
        memory=memory,
        seconds=seconds,
        needs_bytes=needs,
        fits=False,
        arena_bytes=None,
        slow_traffic=0,
        note=form.changed,
    )
    if plan is None:
        note = (
            f"{needs} bytes live at once > {setting.capacity}"
            if needs > setting.capacity and form.memories is None
            else f"no plan found within {setting.capacity} bytes in {seconds:.1f} s"
        )
        return dataclasses.replace(tried, note=note)
    arena = _first_memory_bytes(problem, plan)
    traffic = slow_traffic(problem, plan)
    return dataclasses.replace(tried, fits=True, arena_bytes=arena, slow_traffic=traffic, plan=plan)


def pack(problem: Problem, seconds: float) -> Plan | None:
    """A valid plan of `problem` (its capacities kept): greedy's, else CP-SAT's."""
    tries: list[Callable[[Problem], Plan]] = [get_planner("greedy")]
    tries.append(lambda problem: cpsat_within(problem, max(0.2, seconds)))
    for planner in tries:
        plan = planner(problem)
        if plan.status.has_plan and not validate(problem, plan):
            return plan
    return None


def slow_traffic(problem: Problem, plan: Plan) -> int:
    """The traffic of every memory but the first (bytes accessed there times its cost,
    and every copy): the judge's count with the first memory's cost set to 0 (so 0 for a
    problem of one memory)."""
    first, *rest = problem.memories
    free = dataclasses.replace(problem, memories=(dataclasses.replace(first, cost=0), *rest))
    return traffic(free, plan)


def _bounded(problem: Problem, capacity: int, memories: tuple[Memory, ...] | None) -> Problem:
    """The problem in one memory of `capacity` bytes, or in `memories`."""
    if memories is None:
        return Problem(problem.buffers, problem.aliases, memories=one_arena(capacity))
    return Problem(problem.buffers, problem.aliases, memories=memories)


def _first_memory_bytes(problem: Problem, plan: Plan) -> int:
    return bytes_used(problem, plan)[problem.memories[0].name]


def with_fast_memory(capacity: int, given: tuple[Memory, ...]) -> tuple[Memory, ...]:
    """The memories of the second-memory lever, fastest first. One memory given is the
    second: a fast memory of `capacity` bytes goes before it. Of several, the first is the
    fast one, holding at most `capacity` bytes (as `plan --capacity --memory` reads them)."""
    if len(given) == 1:
        names = {m.name for m in given}
        name = next(n for n in ("fast", "fast_0", "fast_1") if n not in names)
        return (Memory(name, capacity), *given)
    first = given[0]
    size = capacity if first.capacity is None else min(first.capacity, capacity)
    return (dataclasses.replace(first, capacity=size), *given[1:])
