"""A budget of effort: work counted in units that do not depend on the machine, with
seconds only as an outer guard.

A compiler pass must give the same output for the same input, so a search that ends on
the clock gives a plan that moves with the machine's load. Every stage of a planner
that searches therefore counts what it did in work units and stops on them:

    stage                    what it counts                 one unit
    CP-SAT solves            deterministic time, 1 worker   1/CPSAT_WORK_PER_SECOND of it
    the skyline search       nodes (more on large parts)    NODES_PER_UNIT nodes
    greedy runs and tries    rectangles placed              RECTS_PER_UNIT rectangles
    LNS                      CP-SAT's deterministic time    as CP-SAT's

A unit is about a second of one core on the machines the benchmarks ran on; the figure
that matters is only that it is the same everywhere. The seconds of a `Budget` are a
guard: a run the guard cut may differ from run to run, and says so (`Clock.cut`).

A `Clock` is one run's reading of its budget: `now()` is the work spent so far (or, with
no work budget, the seconds elapsed: the old behaviour), so code that shares out "the
time left" shares out work without change, and `past(deadline)` is the one test of
whether a stage must stop. It is the one mutable piece: each run makes its own.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

# The work a planner that searches gets by default: about a minute of one core on
# MiniMalloc's instances (benchmarks/results/work.csv).
DEFAULT_WORK = 60.0

# The guard on a search counted in work, where no time limit is given: far above what the
# default work takes, so that only a machine many times slower is cut.
GUARD_SECONDS = 600.0

# Work units in one deterministic second of CP-SAT on one worker: it takes about this many
# seconds of one core on the no-overlap-2D models of a part (MiniMalloc's D: 1.25 in 15.5 s).
CPSAT_WORK_PER_SECOND = 12.0

# The recomputation models (the stage model, the window packing) take about this many
# times a no-overlap-2D part's seconds per deterministic second (a 250-node layered graph
# at 70 %: 12 units of them took 47 s).
MODEL_SCALE = 4.0

# CP-SAT's presolve merges the no-overlap constraints a no-overlap-2D with fixed times
# splits into, and counts none of that work in its deterministic time. Left at its default
# (1e12) it ran 46 s of a solve counted 5 units on a recomputation schedule of 2,246
# instances (1,092 no-overlaps, 254,761 intervals); bounded as CP-SAT bounds its merge of
# at-most-ones by default, it takes under a second there, and MiniMalloc's 11 presolve to
# the same models as before.
MERGE_WORK = 1e8

# The order search (`schedule.anytime`) takes about this many of its steps a second (a
# 500-node layered graph: 10,000,000 in 12 s, 50,000,000 in 62 s).
ORDER_STEPS_PER_UNIT = 1_000_000


def order_steps(units: float) -> int:
    """`units` of work as steps of the order search (at least one)."""
    return max(1, int(units * ORDER_STEPS_PER_UNIT))


# The skyline search walks about this many nodes in a second of one core; the rate moves
# with the instance (MiniMalloc's D 21,000 a second, I 26,000, J 5,700, K 38,000), and K
# needs 213,000 nodes to reach its optimum (benchmarks/results/work.csv).
NODES_PER_UNIT = 30_000
# That rate holds up to parts of this many incidences (a rectangle over a section, one
# each; MiniMalloc's largest part, J, has 16,452). A node's cost grows with them: the
# search walks 130-330 million node-incidences a second on MiniMalloc's 11 and on
# recomputation schedules of 500-1,840 rectangles (65,000-294,000 incidences), where a
# node counted as one made a unit 36 seconds. Above it a node counts in proportion.
NODE_INCIDENCES = 16_500


def node_work(incidences: int) -> float:
    """The work of one node of the skyline search on a part of `incidences`."""
    return max(1.0, incidences / NODE_INCIDENCES) / NODES_PER_UNIT


# Greedy places about this many rectangles a second in one run with its orders' keys
# (idealloc's S_1, 28,526 rectangles, thousands live at once: a perturbed run 0.37 s).
RECTS_PER_UNIT = 80_000


@dataclass(frozen=True, slots=True)
class Budget:
    """`work` units of work (None: no count, the seconds alone end the run), and at most
    `seconds` of wall time (None: no guard)."""

    work: float | None = None
    seconds: float | None = None

    def __post_init__(self) -> None:
        if self.work is not None and not self.work > 0:
            raise ValueError(f"work must be a positive number of units, got {self.work}")
        if self.seconds is not None and not self.seconds > 0:
            raise ValueError(f"the time limit must be a positive number, got {self.seconds}")

    @property
    def counted(self) -> bool:
        """Whether the run stops on work, and so gives the same plan on any machine."""
        return self.work is not None

    def clock(self) -> Clock:
        return Clock(self)


class Clock:
    """Where one run stands against its `Budget`: the work spent, the wall time elapsed,
    and whether the guard cut it."""

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self.started = time.perf_counter()
        self.spent = 0.0
        self.cut = False

    @property
    def counted(self) -> bool:
        return self.budget.counted

    def now(self) -> float:
        """Work spent so far, or seconds elapsed when the budget counts no work."""
        if self.budget.work is not None:
            return self.spent
        return time.perf_counter() - self.started

    @property
    def end(self) -> float:
        """The reading of `now()` at which the whole budget is spent."""
        if self.budget.work is not None:
            return self.budget.work
        return self.budget.seconds if self.budget.seconds is not None else float("inf")

    def left(self) -> float:
        return max(self.end - self.now(), 0.0)

    def spend(self, units: float) -> None:
        """Count `units` of work done (nothing when the budget counts no work)."""
        if self.budget.work is not None:
            self.spent += max(units, 0.0)

    def guard_left(self) -> float:
        """Seconds until the guard (inf without one)."""
        if self.budget.seconds is None:
            return float("inf")
        return max(self.budget.seconds - (time.perf_counter() - self.started), 0.0)

    def guarded(self) -> bool:
        """Whether the guard has run out; once it has, the run is cut (`cut`)."""
        if self.guard_left() <= 0.0:
            self.cut = self.cut or self.counted
            return True
        return False

    def past(self, deadline: float) -> bool:
        """Whether a stage that must end at `deadline` (a `now()` reading) must stop."""
        return self.now() >= deadline or self.guarded()

    def seconds(self) -> float:
        return time.perf_counter() - self.started

    def limit(
        self,
        parameters: Any,
        units: float,
        *,
        workers: int,
        seed: int,
        single: bool = False,
        interleave: bool = False,
    ) -> None:
        """Set a CP-SAT solve's `parameters` to `units` of this clock: counted (or
        `single`), CP-SAT's deterministic time (the same answer on any machine) on one
        worker, or with `interleave` on `workers` workers taking turns in a fixed order
        (`interleave_search`), the guard as its seconds; else `units` seconds on `workers`
        workers."""
        parameters.random_seed = seed
        parameters.merge_no_overlap_work_limit = MERGE_WORK
        if self.counted or single:
            parameters.num_workers = workers if interleave else 1
            parameters.interleave_search = interleave
            parameters.max_deterministic_time = max(units / CPSAT_WORK_PER_SECOND, 0.001)
        else:
            parameters.num_workers = workers
        seconds = self.guard_left() if self.counted else units
        if seconds != float("inf"):
            parameters.max_time_in_seconds = max(seconds, 0.01)

    def solved(self, solver: Any, scale: float = 1.0) -> None:
        """Count a finished CP-SAT solve's deterministic time (`scale` times a no-overlap-2D
        part's work), and whether the guard (not the work) ended it."""
        self.spend(solver.deterministic_time * CPSAT_WORK_PER_SECOND * scale)
        self.guarded()


WALL = Budget()
"""No work count and no guard: callers that pass their own deadlines in seconds."""


def work_detail(clock: Clock) -> dict[str, object]:
    """What a plan says of its budget: the work it spent and, where the guard cut a
    counted run (the one case where the plan may differ from run to run), `cut`."""
    detail: dict[str, object] = {}
    if clock.counted:
        detail["work"] = round(clock.spent, 3)
    if clock.cut:
        detail["cut"] = True
    return detail


# ---------------------------------------------------------------------------- the ambient clock
#
# The recomputation pipeline shares out "the time left" across a dozen modules by
# deadlines compared with the time. Under `running(clock)` those modules read `now()` and
# count with `spend()` instead of reading the time: with a clock that counts work, their
# deadlines are readings of work, and the pipeline's answer depends on the input alone.
# Outside `running`, `now()` is the time, as before.

_ACTIVE: ContextVar[Clock | None] = ContextVar("optplan_clock", default=None)


@contextmanager
def running(clock: Clock) -> Iterator[Clock]:
    """Make `clock` the one `now()` and `spend()` read in this context."""
    token = _ACTIVE.set(clock)
    try:
        yield clock
    finally:
        _ACTIVE.reset(token)


def active() -> Clock | None:
    return _ACTIVE.get()


def now() -> float:
    """`time.perf_counter()`, or under `running(clock)` the clock's reading on the same
    scale: its start plus the work spent (or the seconds elapsed). Once the clock's guard
    has run out, a reading past every deadline its run can have set."""
    clock = _ACTIVE.get()
    if clock is not None and clock.guarded():
        return clock.started + clock.end + PAST + clock.spent
    return reading()


def reading() -> float:
    """`now()` as a report states it: the clock's start plus the work spent (or the
    seconds elapsed), with no jump once the guard has run out."""
    clock = _ACTIVE.get()
    if clock is None:
        return time.perf_counter()
    return clock.started + clock.now()


def spend(units: float) -> None:
    """Count `units` of work on the running clock (nothing outside `running`)."""
    clock = _ACTIVE.get()
    if clock is not None:
        clock.spend(units)


# A reading this far past a run's end is past every deadline its stages set.
PAST = 1e6


def limit_solver(
    parameters: Any, units: float, *, workers: int, seed: int = 0, scale: float = 1.0
) -> None:
    """A CP-SAT solve's `parameters` for `units` of the running clock (`Clock.limit`), or
    outside `running`, `units` seconds on `workers` workers. `scale`: how many times a
    no-overlap-2D part's deterministic second this model's takes on one core."""
    clock = _ACTIVE.get()
    if clock is None:
        parameters.max_time_in_seconds = max(units, 0.01)
        parameters.num_workers = workers
        parameters.random_seed = seed
        parameters.merge_no_overlap_work_limit = MERGE_WORK
    else:
        clock.limit(parameters, units / scale, workers=workers, seed=seed)


def solver_done(solver: Any, scale: float = 1.0) -> None:
    """Count a finished CP-SAT solve on the running clock (`Clock.solved`), its work
    `scale` times a no-overlap-2D part's."""
    clock = _ACTIVE.get()
    if clock is not None:
        clock.solved(solver, scale)


def callee(units: float) -> tuple[float | None, float]:
    """`units` of the running clock for a callee that takes its own budget: (its work, the
    seconds of its guard) where the clock counts work, else (None, `units` seconds)."""
    clock = _ACTIVE.get()
    if clock is not None and clock.counted:
        return max(units, 0.01), max(clock.guard_left(), 0.01)
    return None, max(units, 0.01)
