"""The CP-SAT model of one part, and `solve_part`, which asks it in up to three passes.

The model, for a set of alias-class rectangles and an arena interval [target, upper]:

    slot[c]      integer in [0, (upper - size[c] - residue[c]) / modulus[c]]
    offset[c]    = residue[c] + modulus[c] * slot[c]    (every member stays aligned;
                                                          a pinned class is a constant)
    time[c#j]    fixed interval: the j-th live interval of class c
    bytes[c]     interval [offset[c], offset[c] + size[c])
    NoOverlap2D  over the pairs (time[c#j], bytes[c]): live together => bytes apart
    arena        integer in [target, upper];  offset[c] + size[c] <= arena
    symmetry     classes with the same size, lifetime and alignment are interchangeable,
                 so their offsets are ordered: offset[a] + size <= offset[b]
    search       lowest slot first, lowest value first (bottom-left), for the worker
                 that follows a fixed strategy; the greedy offsets are the hint

Time intervals are fixed, so one rectangle per live interval carries the whole schedule;
a class live over two branches of an If gets two rectangles that share one offset.

`solve_part`: a single-worker pass limited by CP-SAT's deterministic time, then (if the
target is not met) whether the target is reachable at all, then a minimisation with every
worker, run as a chain of solves of at most SOLVE_CHUNK seconds (one long solve keeps
growing in memory), each hinted with the best placement so far. With a `Watch` (`watch.py`) each
solution is reported, and `stop()` ends the solve.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ortools.sat.python import cp_model

from optplan.budget import Clock
from optplan.planners.common import Rect
from optplan.planners.cpsat.part import PartResult, Settings, part_top
from optplan.planners.cpsat.progress import REPORT_SECONDS, is_stopped
from optplan.planners.cpsat.shares import share
from optplan.planners.watch import Watch
from optplan.problem.plan import Status


def solve_part(
    part: Sequence[Rect],
    hint: list[int],
    between: tuple[int, int, int],
    budget: float,
    options: Settings,
    clock: Clock,
    heard: Callable[[int, int], None] | None = None,
) -> PartResult:
    """A placement of `part` with an arena in [target, upper] (`between`: floor, target,
    upper; any arena up to `target` is as good: another part already needs that much),
    found within `budget` of `clock` (work units, or seconds when it counts none).

    `floor` <= `target` is a bound the caller has proven; the result's bound is proven
    too, which `target` is not unless it equals `floor`. `heard` gets the part's arena at
    each solution CP-SAT finds, when `options.watch` is set.
    """
    floor, target, upper = between
    if floor > upper:
        return PartResult(Status.INFEASIBLE, None, floor)
    started = clock.now()
    target = min(target, upper)
    model = Model.build(part, target, upper, hint, options.symmetry)
    if model is None:
        return PartResult(Status.INFEASIBLE, None, floor)
    # One worker counting work, not seconds, gives the same answer on a busy machine as on
    # an idle one; small parts end here, proven.
    status, best, found = model.solve(
        min(budget, options.first_pass), options, clock, minimise=True, first=True, heard=heard
    )
    proven = _proven(found, target, floor)
    if status in (Status.OPTIMAL, Status.INFEASIBLE):
        return PartResult(status, best, proven)
    if best is not None:
        upper = min(upper, part_top(part, best))
        hint = best  # indexed like `hint`, and right wherever this part's rects are
    if upper <= target:
        return PartResult(Status.FEASIBLE, best, proven)
    if options.decide_first:
        model = Model.build(part, target, target, hint, options.symmetry)
        remaining = max(budget - (clock.now() - started), 0.0)
        status, offsets, _ = (
            model.solve(share("decide") * remaining, options, clock, minimise=False, heard=heard)
            if model is not None
            else (Status.INFEASIBLE, None, 0)
        )
        if offsets is not None:
            return PartResult(Status.FEASIBLE, offsets, proven)
        if status == Status.INFEASIBLE:
            # Nothing fits under `target`: that proves the part, and so the whole
            # problem, needs more.
            target += 1
            proven = max(proven, target)
    until = started + budget
    status, offsets, found = _minimise(part, (target, upper), hint, until, options, clock, heard)
    proven = max(proven, _proven(found, target, floor))
    if offsets is None:
        return PartResult(Status.FEASIBLE if best else Status.UNKNOWN, best, proven)
    return PartResult(status, offsets, proven)


# One CP-SAT solve of a large part grows by about 100 MB a second for as long as it runs
# (resnet50's 1,042 rectangles: 1.0 GB after 30 s, 3.8 GB after 60 s) and gives it back
# only when it ends, so long minimisations run as a chain of solves this long, each
# hinted with the best placement so far (resnet50 at 60 s: 553 MB, and the same arena).
SOLVE_CHUNK = 12.0


def _minimise(
    part: Sequence[Rect],
    between: tuple[int, int],
    hint: list[int],
    deadline: float,
    options: Settings,
    clock: Clock,
    heard: Callable[[int, int], None] | None,
) -> tuple[Status, list[int] | None, int]:
    """The lowest arena in [target, upper] (`between`) found by `deadline` (a `clock`
    reading), by solves of at most SOLVE_CHUNK each: status, offsets (or None) and the
    highest bound a solve proved. `hint` must fit under `upper`."""
    target, upper = between
    status, best, bound = Status.UNKNOWN, None, 0
    while True:
        model = Model.build(part, target, upper, hint, options.symmetry)
        assert model is not None  # the hint fits under `upper`
        left = deadline - clock.now()
        status, offsets, found = model.solve(
            min(left, SOLVE_CHUNK), options, clock, minimise=True, heard=heard
        )
        bound = max(bound, found)
        if offsets is not None:
            best, hint, upper = offsets, offsets, part_top(part, offsets)
        if status in (Status.OPTIMAL, Status.INFEASIBLE) or upper <= max(target, bound):
            break
        if left <= SOLVE_CHUNK or clock.guarded() or is_stopped(options):
            break
    if best is not None and status is not Status.OPTIMAL:
        status = Status.FEASIBLE
    return status, best, bound


def integer_bound(value: float) -> int:
    """CP-SAT's bound on an integer objective, as the integer it is.

    CP-SAT reports it as a float that can sit just below the integer (42 as
    41.99999999999999), and `int()` would then claim one byte less than it proved.
    """
    return round(value)


def _proven(found: int, target: int, floor: int) -> int:
    """What a solver bound `found` on an arena variable held >= `target` proves about the
    part: above `target` it bounds the part's own arena; at `target` it proves nothing
    beyond `floor`, since any placement under `target` also meets it."""
    return found if found > target else floor


@dataclass(frozen=True, slots=True)
class Model:
    """A CP-SAT model of one part, with the variables needed to read a solution back."""

    model: cp_model.CpModel
    rects: tuple[Rect, ...]
    slots: tuple[cp_model.IntVar, ...]
    arena: cp_model.IntVar

    @staticmethod
    def build(
        part: Sequence[Rect], floor: int, upper: int, hint: list[int], symmetry: bool
    ) -> Model | None:
        """The model with arena in [floor, upper]; None if some class cannot fit at all."""
        model = cp_model.CpModel()
        arena = model.new_int_var(floor, upper, "arena")
        slots, times, spaces = [], [], []
        hinted = _symmetric_hint(part, hint) if symmetry else hint
        for rect in part:
            assert rect.residue is not None
            if rect.pin is not None:
                if rect.pin + rect.size > upper:
                    return None
                low = high = (rect.pin - rect.residue) // rect.modulus
            else:
                low, high = 0, (upper - rect.size - rect.residue) // rect.modulus
                if high < 0:
                    return None
            slot = model.new_int_var(low, high, f"slot[{rect.root}]")
            offset = rect.residue + rect.modulus * slot
            space = model.new_fixed_size_interval_var(offset, rect.size, f"bytes[{rect.root}]")
            for j, iv in enumerate(rect.live):
                times.append(
                    model.new_fixed_size_interval_var(
                        iv.start, iv.end - iv.start, f"time[{rect.root}#{j}]"
                    )
                )
                spaces.append(space)
            model.add(offset + rect.size <= arena)
            model.add_hint(
                slot, min(max((hinted[rect.index] - rect.residue) // rect.modulus, low), high)
            )
            slots.append(slot)
        model.add_no_overlap_2d(times, spaces)
        # Lowest offset first: the bottom-left rule of packing, for the fixed-search worker.
        model.add_decision_strategy(slots, cp_model.CHOOSE_LOWEST_MIN, cp_model.SELECT_MIN_VALUE)
        model.add_hint(arena, min(max(part_top(part, hinted), floor), upper))
        if symmetry:
            _order_identical(model, part, slots)
        return Model(model, tuple(part), tuple(slots), arena)

    def solve(
        self,
        units: float,
        options: Settings,
        clock: Clock,
        *,
        minimise: bool,
        first: bool = False,
        heard: Callable[[int, int], None] | None = None,
    ) -> tuple[Status, list[int] | None, int]:
        """Status, offsets by rect index (a full-length list) if found, and proven bound,
        within `units` of `clock` (`Clock.limit`). The `first` pass is one worker limited
        by CP-SAT's deterministic time whatever the clock counts.
        With `options.watch`, Ctrl-C is the watch's to handle (CP-SAT would otherwise take
        the signal and end this solve alone), `stop()` ends the solve, and `heard` gets the
        arena of each solution found.
        """
        if minimise:
            self.model.minimize(self.arena)
        solver = cp_model.CpSolver()
        seed, workers = options.random_seed, options.num_workers
        clock.limit(solver.parameters, units, workers=workers, seed=seed, single=first)
        if not minimise:
            # The feasibility-jump worker, which the second worker runs when there is no
            # objective, took 1.9 GB in 12 s on resnet50's 1,042 rectangles (the solve
            # peaks at 336 MB without it).
            solver.parameters.use_feasibility_jump = False
        watch = options.watch
        if watch is None:
            code = solver.solve(self.model)
        elif watch.stopped:
            return Status.UNKNOWN, None, 0
        else:
            code = watch.solve(solver, self.model, _Heard(watch, self.arena, heard))
        clock.solved(solver)
        found = code in (cp_model.OPTIMAL, cp_model.FEASIBLE)
        if code == cp_model.INFEASIBLE:
            return Status.INFEASIBLE, None, 0
        bound = integer_bound(solver.best_objective_bound) if minimise and found else 0
        if not found:
            return Status.UNKNOWN, None, bound
        size = max(r.index for r in self.rects) + 1
        offsets = [0] * size
        for rect, slot in zip(self.rects, self.slots):
            offsets[rect.index] = rect.residue + rect.modulus * solver.value(slot)  # type: ignore[operator]
        status = Status.OPTIMAL if code == cp_model.OPTIMAL else Status.FEASIBLE
        return status, offsets, bound


def _identical_groups(part: Sequence[Rect]) -> list[list[Rect]]:
    """Unpinned classes with the same size, lifetime and alignment, in index order."""
    groups: dict[tuple[object, ...], list[Rect]] = {}
    for rect in part:
        if rect.pin is None:
            key = (rect.size, rect.live, rect.modulus, rect.residue)
            groups.setdefault(key, []).append(rect)
    return [group for group in groups.values() if len(group) > 1]


def _order_identical(model: cp_model.CpModel, part: Sequence[Rect], slots: list) -> None:
    """Interchangeable classes are live together, so one sits wholly below the next."""
    slot_of = {rect.index: slot for rect, slot in zip(part, slots)}
    for group in _identical_groups(part):
        for lower, higher in itertools.pairwise(group):
            model.add(
                lower.modulus * slot_of[lower.index] + lower.size
                <= higher.modulus * slot_of[higher.index]
            )


def _symmetric_hint(part: Sequence[Rect], hint: list[int]) -> list[int]:
    """The greedy offsets, permuted within each group of identical classes to match the
    order that symmetry breaking imposes (the same placement, relabelled)."""
    hinted = list(hint)
    for group in _identical_groups(part):
        for rect, offset in zip(group, sorted(hint[r.index] for r in group)):
            hinted[rect.index] = offset
    return hinted


class _Heard(cp_model.CpSolverSolutionCallback):
    """At each solution: end the solve if the watch was stopped, else pass the arena on
    (at most every REPORT_SECONDS)."""

    def __init__(
        self, watch: Watch, arena: cp_model.IntVar, heard: Callable[[int, int], None] | None
    ) -> None:
        super().__init__()
        self.watch, self.arena, self.heard = watch, arena, heard

    def on_solution_callback(self) -> None:
        if self.watch.stopped:
            self.stop_search()
        elif self.heard is not None and self.watch.quiet_for(REPORT_SECONDS):
            self.heard(int(self.value(self.arena)), 0)
