"""The exact planner: OR-Tools CP-SAT, started from the best greedy plan.

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

Steps:
1. Rectangles from alias classes; pins and alignments are checked first (INFEASIBLE).
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
   Until numba has compiled the search in this environment (once, 10-50 s, in a
   background process that the first call starts), CP-SAT plans alone and the plan's
   detail says `"search": "compiling"`.
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
   gigabytes and minutes, so greedy tries in perturbed orders (`greedy_tries`) and then
   `lns.improve`, which re-solves small bands of offsets around the rectangles at its
   top, share the time instead; they prove nothing.
6. While time is left and a round improved some part, another round follows: the parts
   still above their target share what is left, hinted with their best placement.
7. The arena is the maximum over parts of the better of the solver's and greedy's
   placement, so it is never worse than greedy. OPTIMAL when it meets G; FEASIBLE when
   the time ran out first, with `bound` = G; INFEASIBLE when a capacity is proven too
   small; UNKNOWN when nothing was found under the capacity in time.

Determinism: a fixed random seed, and step 5a, which counts work rather than seconds on
a single worker, so any part it settles gets the same offsets on every run. A part that
needs the parallel steps may vary with thread timing, as any run ending on a clock does.
(`interleave_search`, CP-SAT's deterministic parallel mode, aborts inside OR-Tools 9.15
on some of these models, so it is not used.)
"""

from __future__ import annotations

import bisect
import itertools
from dataclasses import dataclass, field

from ortools.sat.python import cp_model

from optplan.plan import Plan, Status
from optplan.planners import jit
from optplan.planners.common import (
    Rect,
    live_peak,
    make_plan,
    no_plan,
    now,
    pin_fault,
    rectangles,
    split,
    top,
)
from optplan.planners.greedy import best_offsets
from optplan.planners.greedy_tries import tries
from optplan.planners.lns import improve
from optplan.planners.search import SearchStatus, minimise, search
from optplan.problem import Problem


@dataclass(frozen=True, slots=True)
class CpSat:
    """Options of the CP-SAT planner.

    `time_limit` is in seconds for the whole problem; `first_pass` is the work budget
    (CP-SAT deterministic time, roughly seconds) of the single-worker pass that comes
    first; `decide_first` asks whether the lower bound is reachable before minimising;
    `split` solves independent parts apart; `symmetry` orders identical classes;
    `search_share` is the share of the time limit given first to the exact skyline search
    (0 turns it off).
    """

    name: str = "cpsat"
    time_limit: float = 30.0
    num_workers: int = 2
    random_seed: int = 0
    decide_first: bool = True
    split: bool = True
    symmetry: bool = True
    first_pass: float = 1.0
    search_share: float = 0.75

    def __call__(self, problem: Problem) -> Plan:
        return plan_cpsat(problem, self)


def plan_cpsat(problem: Problem, options: CpSat = CpSat()) -> Plan:
    started = now()
    deadline = started + options.time_limit
    rects = rectangles(problem)
    fault = pin_fault(rects)
    if fault is not None:
        return _no_plan(problem, options, rects, started, 0, Status.INFEASIBLE, fault)
    # Runs past the deadline are skipped: a time limit covers greedy too.
    greedy, greedy_detail = best_offsets(rects, deadline=deadline)
    capacity = problem.capacity
    offsets = list(greedy)
    parts = split(rects) if options.split else [[r for r in rects if r.size > 0]]
    floors = {id(part): part_floor(part) for part in parts}
    # Zero-size classes sit at their residue and are left out of the parts.
    empty_top = max((o for r, o in zip(rects, greedy) if r.size == 0), default=0)
    bound = max([empty_top, *floors.values()])
    if capacity is not None and bound > capacity:
        reason = f"{bound} bytes are live at once, more than the capacity {capacity}"
        return _no_plan(problem, options, rects, started, bound, Status.INFEASIBLE, reason)
    search_detail: dict[str, object] = {}
    if options.search_share > 0 and top(rects, offsets) > bound:
        search_deadline = started + options.search_share * options.time_limit
        status, bound, search_detail = _search_first(
            problem, rects, offsets, parts, bound, search_deadline, options
        )
        if status is not None:
            reason = f"the search proved that nothing fits under capacity {capacity}"
            return _no_plan(problem, options, rects, started, bound, status, reason)
    solved = rounds = 0
    improved = True
    while improved and now() < deadline and top(rects, offsets) > min(bound, capacity or bound):
        # Each round takes the parts by their current arena, highest first, and shares the
        # time left among those above their target; a later round gives what is left to
        # the parts that still set the arena, starting from their best placement so far.
        rounds += 1
        improved = False
        pending = sorted(parts, key=lambda part: -_part_top(part, offsets))
        descending = [-_part_top(part, offsets) for part in pending]
        achieved = 0  # the highest arena of the parts done so far: no need to go below it
        for position, part in enumerate(pending):
            arena = -descending[position]
            fits = capacity is None or arena <= capacity
            target = max(bound, achieved)
            if arena <= target and fits:
                continue
            good_enough = target if capacity is None else min(target, capacity)
            waiting = bisect.bisect_left(descending, -good_enough) - position
            budget = max(deadline - now(), 0.0) / max(waiting, 1)
            upper = arena if fits else capacity
            assert upper is not None
            floor = max(bound, floors[id(part)])
            if len(part) > MODEL_MAX_PART and fits:
                result = _improve_part(part, offsets, floor, budget, options)
            else:
                result = solve_part(
                    part, offsets, floor, max(target, floor), upper, budget, options
                )
            solved += 1
            if result.status == Status.INFEASIBLE:
                reason = f"no placement fits under capacity {capacity}"
                return _no_plan(problem, options, rects, started, bound, Status.INFEASIBLE, reason)
            bound = max(bound, result.bound)
            if result.offsets is not None and (not fits or _part_top(part, result.offsets) < arena):
                for rect in part:
                    offsets[rect.index] = result.offsets[rect.index]
                improved = True
            elif not fits:
                reason = f"nothing found under capacity {capacity} in time"
                return _no_plan(problem, options, rects, started, bound, Status.UNKNOWN, reason)
            achieved = max(achieved, _part_top(part, offsets))
    detail = {
        "greedy_arena": top(rects, greedy),
        "greedy_order": greedy_detail["order"],
        "parts": len(parts),
        "parts_solved": solved,
        "rounds": rounds,
        **search_detail,
    }
    return make_plan(
        problem, options.name, rects, offsets, started=started, bound=bound, detail=detail
    )


# Above this many rectangles one CP-SAT model of a part takes gigabytes (3.4-3.9 GiB at
# 10k-19k rectangles, 10.7 GiB and growing on S_1's 28,526) and minutes before its first
# solution; such parts are improved by large-neighbourhood search (`lns`) instead.
MODEL_MAX_PART = 4000
# Of a large part's time, the share for greedy tries: on S_1 one perturbed lifetime/best
# run in a dozen beat the best fixed order by 1 % (`greedy_tries`), while the bands LNS
# re-solves had found nothing below S_1's top.
TRIES_SHARE = 0.7


def _improve_part(
    part: list[Rect], offsets: list[int], floor: int, budget: float, options: CpSat
) -> PartResult:
    """The part's placement improved within `budget` by greedy tries in perturbed orders
    (`greedy_tries`, TRIES_SHARE of it), then by `lns.improve`; proves nothing."""
    deadline = now() + budget
    seed = (options.random_seed, _part_top(part, offsets))  # a new draw each round
    tried = tries(part, offsets, now() + TRIES_SHARE * budget, seed=seed)
    improved = improve(
        part, tried, floor, deadline, seed=options.random_seed, workers=options.num_workers
    )
    return PartResult(Status.FEASIBLE, improved, floor, {"lns": True})


SEARCH = "optplan.planners.search"

# Above this many rectangles in one part the skyline search explores too few nodes a
# second to be worth its share of the time; such parts go to CP-SAT directly.
SEARCH_MAX_PART = 2000
# The share of a part's search time spent asking whether it fits under the lower bound.
FIRST_ASK = 0.4


def _search_first(
    problem: Problem,
    rects: list[Rect],
    offsets: list[int],
    parts: list[list[Rect]],
    bound: int,
    deadline: float,
    options: CpSat,
) -> tuple[Status | None, int, dict[str, object]]:
    """Run the exact skyline search before CP-SAT; adopt its placement where it is lower.

    Without a capacity it minimises the peak (asking at the lower bound first); with one
    it asks whether the buffers fit. Returns INFEASIBLE when it proved that nothing fits
    under the capacity, the proven bound, and what it did for the plan's detail. `offsets`
    (one per rectangle) is updated in place with the better placement.
    """
    # The search places a class at multiples of its alignment only: pinned classes, and
    # classes whose aliases shift their allowed offsets off zero, are CP-SAT's alone.
    placed_apart = any(r.pin is not None or r.residue for r in rects)
    if placed_apart or max(map(len, parts), default=0) > SEARCH_MAX_PART:
        return None, bound, {"search": "skipped"}
    if not jit.ready(SEARCH):
        # Compiling would eat the time limit: CP-SAT plans alone until it is done.
        jit.compile_in_background(SEARCH)
        return None, bound, {"search": "compiling"}
    capacity = problem.capacity
    if capacity is None:
        proven, found = _search_parts(problem, offsets, parts, bound, deadline, options.random_seed)
        return None, proven, {"search_parts": found, "search_arena": top(rects, offsets)}
    answer = search(
        problem, capacity, time_limit=max(deadline - now(), 0.0), seed=options.random_seed
    )
    if answer.status is SearchStatus.INFEASIBLE:
        return Status.INFEASIBLE, max(bound, capacity + 1), {"search": "infeasible"}
    if answer.offsets is not None:
        placed = [answer.offsets[r.members[0][0]] - r.members[0][1] for r in rects]
        if top(rects, placed) < top(rects, offsets):
            offsets[:] = placed
    return None, bound, {"search": answer.status.value, "search_arena": top(rects, offsets)}


def _search_parts(
    problem: Problem,
    offsets: list[int],
    parts: list[list[Rect]],
    bound: int,
    deadline: float,
    seed: int,
) -> tuple[int, int]:
    """The search, part by part. The arena is the highest part, so every part aims at the
    same target, the bound, and one part's proven bound is the whole problem's. Parts the
    same up to a shift in time (a trace chained with itself) are solved once.

    1. Each kind of part above the bound asks whether it fits under the bound, with
       FIRST_ASK of its share of the time.
    2. The kinds that missed share what is left: half of each one's share asks again,
       the rest minimises its own peak from the best placement so far.

    Returns the proven bound and how many parts got a better placement; `offsets` is
    updated in place.
    """
    kinds: dict[tuple[object, ...], list[list[Rect]]] = {}
    for part in sorted(parts, key=lambda part: -_part_top(part, offsets)):
        if _part_top(part, offsets) > bound:
            key, ordered = _shape(part)
            kinds.setdefault(key, []).append(ordered)
    improved = 0
    missed: list[list[list[Rect]]] = []
    for position, copies in enumerate(kinds.values()):
        share = FIRST_ASK * max(deadline - now(), 0.0) / (len(kinds) - position)
        answer = search(_sub_problem(problem, copies[0]), bound, time_limit=share, seed=seed)
        if answer.status is SearchStatus.INFEASIBLE:
            bound += 1  # this part, and so the arena, needs more than the bound
        if answer.offsets is None:
            missed.append(copies)
            continue
        improved += _place_copies(copies, answer.offsets, offsets)
    for position, copies in enumerate(missed):
        share = max(deadline - now(), 0.0) / (len(missed) - position)
        sub = _sub_problem(problem, copies[0])
        answer = search(sub, bound, time_limit=share / 2, seed=seed)
        if answer.offsets is not None:
            improved += _place_copies(copies, answer.offsets, offsets)
            continue
        upper = _part_top(copies[0], offsets)
        # The bound was asked already: go straight to a packing and bisect from there.
        result = minimise(
            sub,
            time_limit=max(deadline - now(), 0.0) / (len(missed) - position),
            seed=seed,
            upper=upper,
            first_share=0.0,
        )
        bound = max(bound, result.bound)
        if result.offsets is not None and result.peak < upper:
            improved += _place_copies(copies, result.offsets, offsets)
    return bound, improved


def _place_copies(copies: list[list[Rect]], found: dict[str, int], offsets: list[int]) -> int:
    """Give every copy of a kind of part the placement found for its first copy (by
    buffer id); the copies' rectangles correspond in the order `_shape` gives them."""
    first = [found[r.members[0][0]] - r.members[0][1] for r in copies[0]]
    for ordered in copies:
        for rect, offset in zip(ordered, first):
            offsets[rect.index] = offset
    return len(copies)


def _shape(part: list[Rect]) -> tuple[tuple[object, ...], list[Rect]]:
    """A key equal for parts that are the same up to a shift in time, and the part's
    rectangles in an order in which such parts correspond one to one."""
    origin = min(r.start for r in part)

    def signature(rect: Rect) -> tuple[object, ...]:
        live = tuple((iv.start - origin, iv.end - origin) for iv in rect.live)
        return (live, rect.size, rect.modulus, rect.residue)

    ordered = sorted(part, key=lambda r: (signature(r), r.index))
    return tuple(signature(r) for r in ordered), ordered


def _sub_problem(problem: Problem, part: list[Rect]) -> Problem:
    """The buffers of `part` (and the aliases among them) as a problem of their own."""
    names = {name for rect in part for name, _ in rect.members}
    buffers = tuple(b for b in problem.buffers if b.id in names)
    aliases = tuple(a for a in problem.aliases if a.view in names)
    return Problem(buffers, aliases)


def _no_plan(
    problem: Problem,
    options: CpSat,
    rects: list[Rect],
    started: float,
    bound: int,
    status: Status,
    reason: str,
) -> Plan:
    return no_plan(
        problem, options.name, rects, started=started, status=status, reason=reason, bound=bound
    )


# ---------------------------------------------------------------------------- parts


def part_floor(part: list[Rect]) -> int:
    """No arena for `part` is below its live bytes at any point or its highest pin."""
    pins = max((r.pin + r.size for r in part if r.pin is not None), default=0)
    return max(live_peak(part), pins)


def _part_top(part: list[Rect], offsets: list[int]) -> int:
    return max((offsets[r.index] + r.size for r in part), default=0)


# ---------------------------------------------------------------------------- solving


@dataclass(frozen=True, slots=True)
class PartResult:
    """What the solver made of one part: offsets (by rect index) if found, and a bound."""

    status: Status
    offsets: list[int] | None
    bound: int
    notes: dict[str, object] = field(default_factory=dict)


def solve_part(
    part: list[Rect],
    hint: list[int],
    floor: int,
    target: int,
    upper: int,
    budget: float,
    options: CpSat,
) -> PartResult:
    """A placement of `part` with an arena in [target, upper] (any arena up to `target` is
    as good: another part already needs that much), found within `budget` seconds.

    `floor` <= `target` is a bound the caller has proven; the result's bound is proven
    too, which `target` is not unless it equals `floor`.
    """
    if floor > upper:
        return PartResult(Status.INFEASIBLE, None, floor)
    started = now()
    target = min(target, upper)
    model = Model.build(part, target, upper, hint, options.symmetry)
    if model is None:
        return PartResult(Status.INFEASIBLE, None, floor)
    # One worker counting work, not seconds, gives the same answer on a busy machine as on
    # an idle one; small parts end here, proven.
    status, best, found = model.solve(budget, options, minimise=True, work=options.first_pass)
    proven = _proven(found, target, floor)
    if status in (Status.OPTIMAL, Status.INFEASIBLE):
        return PartResult(status, best, proven)
    if best is not None:
        upper = min(upper, _part_top(part, best))
        hint = best  # indexed like `hint`, and right wherever this part's rects are
    if upper <= target:
        return PartResult(Status.FEASIBLE, best, proven)
    if options.decide_first:
        model = Model.build(part, target, target, hint, options.symmetry)
        remaining = max(budget - (now() - started), 0.0)
        status, offsets, _ = (
            model.solve(remaining / 4, options, minimise=False)
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
    remaining = max(budget - (now() - started), 0.0)
    model = Model.build(part, target, upper, hint, options.symmetry)
    assert model is not None  # `best` or the greedy hint fits under `upper`
    status, offsets, found = model.solve(remaining, options, minimise=True)
    proven = max(proven, _proven(found, target, floor))
    if offsets is None:
        return PartResult(Status.FEASIBLE if best else Status.UNKNOWN, best, proven)
    return PartResult(status, offsets, proven)


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
        part: list[Rect], floor: int, upper: int, hint: list[int], symmetry: bool
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
        model.add_hint(arena, min(max(_part_top(part, hinted), floor), upper))
        if symmetry:
            _order_identical(model, part, slots)
        return Model(model, tuple(part), tuple(slots), arena)

    def solve(
        self, seconds: float, options: CpSat, *, minimise: bool, work: float = 0.0
    ) -> tuple[Status, list[int] | None, int]:
        """Status, offsets by rect index (a full-length list) if found, and proven bound.

        With `work` > 0 the search is one worker limited by CP-SAT's deterministic time.
        """
        if minimise:
            self.model.minimize(self.arena)
        solver = cp_model.CpSolver()
        solver.parameters.max_time_in_seconds = max(seconds, 0.01)
        solver.parameters.num_workers = 1 if work > 0 else options.num_workers
        if work > 0:
            solver.parameters.max_deterministic_time = work
        solver.parameters.random_seed = options.random_seed
        code = solver.solve(self.model)
        found = code in (cp_model.OPTIMAL, cp_model.FEASIBLE)
        if code == cp_model.INFEASIBLE:
            return Status.INFEASIBLE, None, 0
        bound = int(solver.best_objective_bound) if minimise and found else 0
        if not found:
            return Status.UNKNOWN, None, bound
        size = max(r.index for r in self.rects) + 1
        offsets = [0] * size
        for rect, slot in zip(self.rects, self.slots):
            offsets[rect.index] = rect.residue + rect.modulus * solver.value(slot)  # type: ignore[operator]
        status = Status.OPTIMAL if code == cp_model.OPTIMAL else Status.FEASIBLE
        return status, offsets, bound


def _identical_groups(part: list[Rect]) -> list[list[Rect]]:
    """Unpinned classes with the same size, lifetime and alignment, in index order."""
    groups: dict[tuple[object, ...], list[Rect]] = {}
    for rect in part:
        if rect.pin is None:
            key = (rect.size, rect.live, rect.modulus, rect.residue)
            groups.setdefault(key, []).append(rect)
    return [group for group in groups.values() if len(group) > 1]


def _order_identical(model: cp_model.CpModel, part: list[Rect], slots: list) -> None:
    """Interchangeable classes are live together, so one sits wholly below the next."""
    slot_of = {rect.index: slot for rect, slot in zip(part, slots)}
    for group in _identical_groups(part):
        for lower, higher in itertools.pairwise(group):
            model.add(
                lower.modulus * slot_of[lower.index] + lower.size
                <= higher.modulus * slot_of[higher.index]
            )


def _symmetric_hint(part: list[Rect], hint: list[int]) -> list[int]:
    """The greedy offsets, permuted within each group of identical classes to match the
    order that symmetry breaking imposes (the same placement, relabelled)."""
    hinted = list(hint)
    for group in _identical_groups(part):
        for rect, offset in zip(group, sorted(hint[r.index] for r in group)):
            hinted[rect.index] = offset
    return hinted
