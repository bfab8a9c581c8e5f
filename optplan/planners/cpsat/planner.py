"""The exact planner: OR-Tools CP-SAT, started from the best greedy plan.

Each part goes to one CP-SAT model (`cpsat.model`): offsets as integer variables, fixed
time intervals, no-overlap-2D, the arena minimised.

Steps:
1. The planners' form (`common.make_form`): rectangles of alias classes, split into
   parts; pins and alignments are checked first (INFEASIBLE).
2. The best greedy plan (`greedy.best_offsets`) is the starting point and the fallback.
   Unless it already meets the lower bound, the exact skyline search
   (`optplan.planners.search`) gets `search_share` of the time first, part by part
   (`_search_parts`): every part aims at the same target, the lower bound, since the
   arena is the highest part; parts that are the same up to a shift in time are solved
   once; a part that misses asks again and then minimises its own peak. Its placement
   replaces the greedy one where it is lower; a search that answers "nothing fits under
   C" proves a bound. This is what reaches MiniMalloc's peaks on its hard instances, where a
   no-overlap-2D model alone stays 3-29 % above them after a minute: CP-SAT's search has
   no notion of canonical packings or of section-by-section pruning. CP-SAT then starts
   from that placement with the time left, and settles what the search left open.
   pip compiles the search's kernels when it installs optplan (`optplan.planners.jit`).
   Where they are not compiled for this environment, the first call starts a compile in
   a background process and CP-SAT works alone, in slices of COMPILE_POLL_S; at the end
   of the first slice after the compile has landed the search joins with its share of
   the time left (detail `search_joined_s`), else the plan's detail says `"search":
   "compiling"`.
   Problems with pinned buffers or with classes whose offsets must sit off a multiple of
   their alignment (a view at an odd delta), or parts of more than SEARCH_MAX_PART
   rectangles, skip the search.
3. The classes are split into independent parts: a part ends where no class is live
   across a point (a class live over several intervals ties the parts it touches).

       point:  0   1   2   3   4   5   6
       a       [=======)
       b           [===)
       c                   [=======)      a, b | c: solved apart, arena = max of parts
       d                       [=======)

4. The global bound G starts at the live-bytes lower bound. Parts are taken by greedy
   arena, highest first; since the arena is the maximum over parts, a part need not go
   below max(G, the highest arena of the parts already done), its target, and a part
   whose greedy arena meets its target is skipped. (The target is not a proven bound;
   only solver bounds above it, or a proof that nothing fits under it, raise G.)
5. For each remaining part, with its share of the remaining time:
   a. minimise the arena in [target, min(greedy arena, capacity)] with one worker and a
      budget of CP-SAT's deterministic time (`first_pass`): small and easy parts end
      here, proven, with the same answer however busy the machine is;
   b. ask whether the target is reachable: the same model with the arena fixed and no
      objective, a quarter of what is left. Yes: the part is done. Proven no: the target,
      and G with it, rise by one;
   c. otherwise minimise again with every worker, hinted with the best placement so far;
      the solver's best objective bound raises G.
   A part of more than MODEL_MAX_PART rectangles skips a-c: one model of it takes
   gigabytes and minutes, so greedy tries in perturbed orders (`greedy.tries`) and then
   `lns.improve`, which re-solves small bands of offsets around the rectangles at its
   top, share the time instead; they prove nothing.
6. While time is left and a round improved some part, another round follows: the parts
   still above their target share what is left, hinted with their best placement.
7. The arena is the maximum over parts of the better of the solver's and greedy's
   placement, so it is never worse than greedy. OPTIMAL when it meets G; FEASIBLE when
   the time ran out first, with `bound` = G; INFEASIBLE when a capacity is proven too
   small; UNKNOWN when nothing was found under the capacity in time.
8. With a `watch` (`watch.Watch`), every better arena or bound is reported (phase
   `greedy`, `search`, `cp-sat`, then `done`), and once the watch is stopped the search
   and the solve under way end, no part is started, and the plan so far is returned
   (FEASIBLE unless it meets the bound; detail `"interrupted"`).

Determinism: a fixed random seed, and step 5a, which counts work rather than seconds on
a single worker, so any part it settles gets the same offsets on every run. A part that
needs the parallel steps may vary with thread timing, as any run ending on a clock does.
(`interleave_search`, CP-SAT's deterministic parallel mode, aborts inside OR-Tools 9.15
on some of these models, so it is not used.)
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import ClassVar

from optplan.budget import DEFAULT_WORK, RECTS_PER_UNIT, Budget, Clock, work_detail
from optplan.planners import jit
from optplan.planners.base import Declared
from optplan.planners.common import (
    Form,
    Rect,
    crowded_at,
    live_peak,
    make_plan,
    no_plan,
    now,
    top,
)
from optplan.planners.cpsat.part import PartResult, part_top
from optplan.planners.cpsat.progress import hearing, is_stopped, report_progress
from optplan.planners.cpsat.search_first import search_first
from optplan.planners.cpsat.shares import share
from optplan.planners.greedy import Greedy, best_offsets
from optplan.planners.greedy.planner import pack_with
from optplan.planners.greedy.tries import tries
from optplan.planners.tiers.exact import plan_exact
from optplan.planners.watch import Watch
from optplan.problem import Problem
from optplan.problem.plan import Plan, Status


@dataclass(frozen=True, slots=True)
class CpSat(Declared):
    """Options of the CP-SAT planner.

    `work` is the budget of the whole problem in work units (`budget`: the same plan on
    any machine; None: the time limit alone ends the search, which then moves with the
    machine's load); `time_limit` is in seconds, the outer guard (a plan it cut says so:
    detail `"cut": True`); `first_pass` is the work budget (CP-SAT deterministic time) of
    the single-worker pass that comes first on each part; `decide_first` asks whether the lower bound is reachable before minimising;
    `split` solves independent parts apart; `symmetry` orders identical classes;
    `search_share` is the share of the time limit given first to the exact skyline search
    (0 turns it off); `watch`, if given, hears of every better arena or bound, and its
    `stop()` makes the planner return its best plan so far (detail `"interrupted"`).
    `copies`: on a problem of several memories, whether tensors may be copied between
    them (False: each stays in one memory all its life, as banked planners place them).
    """

    takes_work: ClassVar[bool] = True
    takes_watch: ClassVar[bool] = True
    takes_copies: ClassVar[bool] = True
    name: str = "cpsat"
    time_limit: float | None = 30.0
    work: float | None = DEFAULT_WORK
    num_workers: int = 2
    random_seed: int = 0
    decide_first: bool = True
    split: bool = True
    symmetry: bool = True
    first_pass: float = 12.0
    search_share: float = share("search")
    watch: Watch | None = field(default=None, compare=False, repr=False)
    copies: bool = True

    def arena(self, form: Form, started: float) -> Plan:
        return plan_cpsat(form, self, started=started)

    def memories(self, problem: Problem, started: float) -> Plan:
        """`tiers.exact`: residency, copies and offsets in one model, each memory without
        a capacity packed by greedy."""
        clock = self.budget().clock()
        plan = plan_exact(
            problem,
            self.name,
            pack_with(Greedy()),
            started=started,
            clock=clock,
            workers=self.num_workers,
            seed=self.random_seed,
            watch=self.watch,
            copies=self.copies,
        )
        plan.detail.update(work_detail(clock))
        return plan

    def __post_init__(self) -> None:
        if self.work is None and self.time_limit is None:
            raise ValueError("cpsat needs work or a time limit: with neither it never ends")
        self.budget()  # a work or a time limit that is not positive is refused here

    def budget(self) -> Budget:
        return Budget(self.work, self.time_limit)


def plan_cpsat(form: Form, options: CpSat = CpSat(), *, started: float | None = None) -> Plan:
    """The steps of the module's docstring: the form's fault (1), greedy and the search
    (2), the parts and the bound (3, 4), rounds of CP-SAT (5, 6), the plan (7), for the
    problem of one arena (`CpSat.memories` plans several). Every plan, found or not,
    says what work it spent and whether the guard cut it (`work_detail`)."""
    started = now() if started is None else started
    clock = options.budget().clock()
    plan = _planned(form, options, started, clock)
    plan.detail.update(work_detail(clock))
    return plan


def _planned(form: Form, options: CpSat, started: float, clock: Clock) -> Plan:
    if form.fault is not None:
        return _no_plan(form, options, started, 0, Status.INFEASIBLE, form.fault)
    rects, capacity = form.rects, form.capacity
    if clock.counted and options.search_share > 0 and not jit.ready(jit.SEARCH):
        jit.warm(jit.SEARCH)  # counted work cannot wait on a compile in the background
    # Runs past the end are skipped: the budget covers greedy too.
    greedy, greedy_detail = best_offsets(form, deadline=clock.end, clock=clock)
    offsets = list(greedy)
    report_progress(options, rects, offsets, form.live_bytes, "greedy")
    parts = form.parts if options.split else (tuple(r for r in rects if r.size > 0),)
    floors = {id(part): part_floor(part) for part in parts}
    bound = _first_bound(rects, greedy, floors.values())
    if capacity is not None and bound > capacity:
        crowded = crowded_at(rects, capacity) if form.live_bytes > capacity else None
        reason = crowded or f"{bound} bytes are live at once, more than the capacity {capacity}"
        return _no_plan(form, options, started, bound, Status.INFEASIBLE, reason)
    search_deadline = clock.now() + options.search_share * clock.left()
    work = _Work(form, parts, floors, clock.end, options, clock)
    failure, bound, search_detail = _search_step(work, offsets, bound, search_deadline)
    if failure is None and search_detail.get("search") == "compiling":
        failure, bound, search_detail = _until_compiled(work, offsets, bound, started)
    if failure is not None:
        return _no_plan(form, options, started, bound, failure.status, failure.reason)
    report_progress(options, rects, offsets, bound, "cp-sat", force=True)
    total, rounds = _solve_rounds(work, offsets, bound)
    if total.failure is not None:
        failure = total.failure
        return _no_plan(form, options, started, total.bound, failure.status, failure.reason)
    detail: dict[str, object] = {
        "greedy_arena": top(rects, greedy),
        "greedy_order": greedy_detail["order"],
        "parts": len(parts),
        "parts_solved": total.solved,
        "rounds": rounds,
        **search_detail,
    }
    if is_stopped(options):
        detail["interrupted"] = True
    report_progress(options, rects, offsets, total.bound, "done", force=True)
    return make_plan(form, options.name, offsets, started=started, bound=total.bound, detail=detail)


@dataclass(frozen=True, slots=True)
class _Failure:
    """Why a step found no plan: INFEASIBLE (proven) or UNKNOWN (out of time)."""

    status: Status
    reason: str


@dataclass(frozen=True, slots=True)
class _Work:
    """What every round works on: the form, the parts CP-SAT takes (split or whole), each
    part's floor (by the part's id), the deadline (a reading of `clock`), the options and
    the clock of the run."""

    form: Form
    parts: Sequence[Sequence[Rect]]
    floors: dict[int, int]
    deadline: float  # a `clock` reading
    options: CpSat
    clock: Clock


@dataclass(frozen=True, slots=True)
class _Rounds:
    """What rounds of part solves did: the bound proven, whether the last round gave some
    part a lower placement, how many part solves ran, and the failure that ended them."""

    bound: int
    improved: bool
    solved: int
    failure: _Failure | None = None


def _first_bound(rects: Sequence[Rect], greedy: Sequence[int], floors: Iterable[int]) -> int:
    """Step 4's G: the highest part floor. Zero-size classes sit at their residue and
    are left out of the parts, but the arena reaches them."""
    empty_top = max((o for r, o in zip(rects, greedy) if r.size == 0), default=0)
    return max([empty_top, *floors])


def _search_step(
    work: _Work, offsets: list[int], bound: int, search_deadline: float
) -> tuple[_Failure | None, int, dict[str, object]]:
    """Step 2's search, until `search_deadline`, unless it is off, the arena already
    meets the bound, or the watch is stopped: its failure, if it proved one, the bound
    and its detail."""
    form, options = work.form, work.options
    rects = form.rects
    if options.search_share <= 0 or top(rects, offsets) <= bound or is_stopped(options):
        return None, bound, {}
    report_progress(options, rects, offsets, bound, "search", force=True)
    status, bound, detail = search_first(form, offsets, bound, search_deadline, options, work.clock)
    if status is not None:
        reason = f"the search proved that nothing fits under capacity {form.capacity}"
        return _Failure(status, reason), bound, detail
    report_progress(options, rects, offsets, bound, "search", force=True)
    return None, bound, detail


# While the search compiles in the background, CP-SAT works in slices this long, and the
# search joins at the first slice's end after the compile has landed.
COMPILE_POLL_S = 5.0


def _until_compiled(
    work: _Work, offsets: list[int], bound: int, started: float
) -> tuple[_Failure | None, int, dict[str, object]]:
    """Step 2 late, when the search was still compiling: CP-SAT rounds in slices of
    COMPILE_POLL_S until the compile lands (`jit.ready`), then the search with its share
    of the time left (detail `search_joined_s`: when), or until the time is up, the
    arena meets the bound or the watch is stopped (detail `"search": "compiling"`)."""
    rects, options, clock = work.form.rects, work.options, work.clock
    while not clock.past(work.deadline) and top(rects, offsets) > bound:
        if is_stopped(options):
            break
        if jit.ready(jit.SEARCH):
            joined = clock.now()
            search_deadline = joined + options.search_share * (work.deadline - joined)
            failure, bound, detail = _search_step(work, offsets, bound, search_deadline)
            return failure, bound, {**detail, "search_joined_s": round(now() - started, 1)}
        report_progress(options, rects, offsets, bound, "cp-sat", force=True)
        sliced = replace(work, deadline=min(work.deadline, clock.now() + COMPILE_POLL_S))
        total, _ = _solve_rounds(sliced, offsets, bound)
        bound = total.bound
        if total.failure is not None:
            return total.failure, bound, {"search": "compiling"}
    return None, bound, {"search": "compiling"}


def _solve_rounds(work: _Work, offsets: list[int], bound: int) -> tuple[_Rounds, int]:
    """Steps 5 and 6: rounds while time is left, the arena is above the bound (or the
    capacity) and the last round improved; and how many rounds ran. `offsets` is
    updated in place."""
    rects, capacity = work.form.rects, work.form.capacity
    total = _Rounds(bound, True, 0)
    rounds = 0
    while total.improved and not work.clock.past(work.deadline):
        if top(rects, offsets) <= min(total.bound, capacity or total.bound):
            break
        if is_stopped(work.options):
            break
        rounds += 1
        done = _round(work, offsets, total.bound)
        total = replace(done, solved=total.solved + done.solved)
        if done.failure is not None:
            break
    return total, rounds


def _round(work: _Work, offsets: list[int], bound: int) -> _Rounds:
    """One round: the parts by their current arena, highest first, share the time left
    among those above their target; a later round gives what is left to the parts that
    still set the arena, starting from their best placement so far."""
    from optplan.planners.cpsat.model import solve_part  # OR-Tools: only when solving

    form, options, capacity = work.form, work.options, work.form.capacity
    pending = sorted(work.parts, key=lambda part: -part_top(part, offsets))
    descending = [-part_top(part, offsets) for part in pending]
    achieved = 0  # the highest arena of the parts done so far: no need to go below it
    improved, solved = False, 0
    for position, part in enumerate(pending):
        arena = -descending[position]
        fits = capacity is None or arena <= capacity
        target = max(bound, achieved)
        if arena <= target and fits or is_stopped(options):
            continue
        good_enough = target if capacity is None else min(target, capacity)
        waiting = bisect.bisect_left(descending, -good_enough) - position
        budget = max(work.deadline - work.clock.now(), 0.0) / max(waiting, 1)
        upper = arena if fits else capacity
        assert upper is not None
        floor = max(bound, work.floors[id(part)])
        if len(part) > MODEL_MAX_PART and fits:
            result = _improve_part(part, offsets, floor, budget, work)
        else:
            heard = hearing(options, form.rects, offsets, [part], bound, "cp-sat")
            between = (floor, max(target, floor), upper)
            result = solve_part(part, offsets, between, budget, options, work.clock, heard)
        solved += 1
        if result.status == Status.INFEASIBLE:
            failure = _Failure(Status.INFEASIBLE, f"no placement fits under capacity {capacity}")
            return _Rounds(bound, improved, solved, failure)
        bound = max(bound, result.bound)
        if result.offsets is not None and (not fits or part_top(part, result.offsets) < arena):
            for rect in part:
                offsets[rect.index] = result.offsets[rect.index]
            improved = True
        elif not fits:
            failure = _Failure(Status.UNKNOWN, f"nothing found under capacity {capacity} in time")
            return _Rounds(bound, improved, solved, failure)
        achieved = max(achieved, part_top(part, offsets))
        report_progress(options, form.rects, offsets, bound, "cp-sat")
    return _Rounds(bound, improved, solved)


# Above this many rectangles one CP-SAT model of a part takes gigabytes (3.4-3.9 GiB at
# 10k-19k rectangles, 10.7 GiB and growing on S_1's 28,526) and minutes before its first
# solution; such parts are improved by large-neighbourhood search (`lns`) instead.
MODEL_MAX_PART = 4000


def _improve_part(
    part: Sequence[Rect], offsets: list[int], floor: int, budget: float, work: _Work
) -> PartResult:
    """The part's placement improved within `budget` by greedy tries in perturbed orders
    (`greedy.tries`, the share "tries" of it), then by `lns.improve`; proves nothing. Nothing
    starts when the budget is shorter than one greedy run on the part (at 1,000,000
    rectangles a run takes 2 s, and a second round used to start one with 1 s left)."""
    from optplan.planners.lns import improve  # OR-Tools: only when improving

    options, clock = work.options, work.clock
    if budget < len(part) / RECTS_PER_UNIT:
        return PartResult(Status.FEASIBLE, None, floor)
    deadline = clock.now() + budget
    seed = (options.random_seed, part_top(part, offsets))  # a new draw each round
    tried_until = clock.now() + share("tries") * budget
    tried = tries(part, offsets, tried_until, clock=clock, seed=seed, watch=options.watch)
    between = (floor, deadline)
    improved = improve(
        list(part),
        tried,
        between,
        clock,
        seed=options.random_seed,
        workers=options.num_workers,
        watch=options.watch,
    )
    return PartResult(Status.FEASIBLE, improved, floor, {"lns": True})


def _no_plan(
    form: Form,
    options: CpSat,
    started: float,
    bound: int,
    status: Status,
    reason: str,
) -> Plan:
    return no_plan(form, options.name, started=started, status=status, reason=reason, bound=bound)


def part_floor(part: Sequence[Rect]) -> int:
    """No arena for `part` is below its live bytes at any point or its highest pin."""
    pins = max((r.pin + r.size for r in part if r.pin is not None), default=0)
    return max(live_peak(part), pins)
