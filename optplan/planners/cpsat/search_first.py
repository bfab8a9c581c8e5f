"""Step 2 of the CP-SAT planner: the exact skyline search (`optplan.planners.search`)
before CP-SAT, part by part, its placement adopted where it is lower.

Until numba has compiled the search in this environment (`optplan.planners.jit`; an
install by pip does it ahead), CP-SAT plans alone and the plan's detail says `"search":
"compiling"`; the planner takes the search up if the compile lands in time. Pinned classes, classes off a multiple of
their alignment and parts of more than SEARCH_MAX_PART rectangles skip the search.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

from optplan.budget import Clock
from optplan.planners import jit
from optplan.planners.common import Form, Rect, top
from optplan.planners.cpsat import shares
from optplan.planners.cpsat.part import Settings, part_top
from optplan.planners.cpsat.progress import hearing, is_stopped, report_progress
from optplan.planners.search import Packing, SearchStatus, ask, lowest, prepare
from optplan.problem.plan import Status

# Above this many rectangles in one part the skyline search explores too few nodes a
# second to be worth its share of the time; such parts go to CP-SAT directly.
SEARCH_MAX_PART = 2000


def search_first(
    form: Form,
    offsets: list[int],
    bound: int,
    deadline: float,
    options: Settings,
    clock: Clock,
) -> tuple[Status | None, int, dict[str, object]]:
    """Run the exact skyline search before CP-SAT, until `deadline` (a `clock` reading);
    adopt its placement where it is lower.

    The search always takes the form's parts (whether or not CP-SAT splits). Without a
    capacity it minimises the peak (asking at the lower bound first); with one it asks
    whether the buffers fit. Returns INFEASIBLE when it proved that nothing fits under
    the capacity, the proven bound, and what it did for the plan's detail (without a
    capacity: `search_parts`, the parts it placed anew; `search_arena`, the arena after
    it; `search_bound`, the bound it proved, which CP-SAT takes up where the arena is
    still above it). `offsets` (one per rectangle) is updated in place with the better
    placement.
    """
    rects = form.rects
    # The search places a class at multiples of its alignment only: pinned classes, and
    # classes whose aliases shift their allowed offsets off zero, are CP-SAT's alone.
    placed_apart = any(r.pin is not None or r.residue for r in rects)
    if placed_apart or max(map(len, form.parts), default=0) > SEARCH_MAX_PART:
        return None, bound, {"search": "skipped"}
    if not jit.ready(jit.SEARCH):
        # Compiling would eat the time limit: CP-SAT plans alone until it is done
        # (`cpsat.planner` takes the search up when it lands).
        jit.compile_in_background(jit.SEARCH)
        return None, bound, {"search": "compiling"}
    capacity = form.capacity
    if capacity is None:
        proven, found = _search_parts(form, offsets, bound, (deadline, clock), options)
        arena = top(rects, offsets)
        return None, proven, {"search_parts": found, "search_arena": arena, "search_bound": proven}
    packing = prepare(rects, form.parts, options.random_seed)
    stop = functools.partial(is_stopped, options)
    left = max(deadline - clock.now(), 0.0)
    answer = ask(packing, capacity, time_limit=left, stop=stop, clock=clock)
    if answer.status is SearchStatus.INFEASIBLE:
        return Status.INFEASIBLE, max(bound, capacity + 1), {"search": "infeasible"}
    if answer.placement is not None and top(rects, answer.placement) < top(rects, offsets):
        offsets[:] = answer.placement
    return None, bound, {"search": answer.status.value, "search_arena": top(rects, offsets)}


def _search_parts(
    form: Form,
    offsets: list[int],
    bound: int,
    until: tuple[float, Clock],
    options: Settings,
) -> tuple[int, int]:
    """The search, part by part, until the deadline of `until` (a reading of its clock). The arena is the highest part, so every part aims at the
    same target, the bound, and one part's proven bound is the whole problem's. Parts the
    same up to a shift in time (a trace chained with itself) are solved once, and each
    kind's arrays are built once for all the capacities it is asked at.

    1. Each kind of part above the bound asks whether it fits under the bound, with
       the share "first_ask" of its share of the time.
    2. The kinds that missed share what is left: half of each one's share asks again
       (when that is longer than the first ask ran at the same capacity), the rest
       minimises its own peak from the best placement so far.

    Returns the proven bound and how many parts got a better placement; `offsets` is
    updated in place.
    """
    seed, stop = options.random_seed, functools.partial(is_stopped, options)
    deadline, clock = until
    kinds: dict[tuple[object, ...], list[list[Rect]]] = {}
    for part in sorted(form.parts, key=lambda part: -part_top(part, offsets)):
        if part_top(part, offsets) > bound:
            key, ordered = _shape(part)
            kinds.setdefault(key, []).append(ordered)
    improved = 0
    missed: list[_Missed] = []
    for position, copies in enumerate(kinds.values()):
        left = max(deadline - clock.now(), 0.0) / (len(kinds) - position)
        share = shares.share("first_ask") * left
        packing = prepare(copies[0], [copies[0]], seed)
        answer = ask(packing, bound, time_limit=share, stop=stop, clock=clock)
        if answer.status is SearchStatus.INFEASIBLE:
            bound += 1  # this part, and so the arena, needs more than the bound
        if answer.placement is None:
            missed.append(_Missed(copies, packing, answer.capacity, answer.seconds))
            continue
        improved += _place_copies(copies, answer.placement, offsets)
        report_progress(options, form.rects, offsets, bound, "search")
    for position, kind in enumerate(missed):
        bound, placed = _ask_again(
            form, kind, offsets, bound, until, len(missed) - position, options
        )
        improved += placed
    return bound, improved


@dataclass(frozen=True, slots=True)
class _Missed:
    """A kind of part the first ask did not place: its copies, its search arrays, the
    capacity asked and the seconds that ask ran."""

    copies: list[list[Rect]]
    packing: Packing
    asked: int
    walked: float


def _ask_again(
    form: Form,
    kind: _Missed,
    offsets: list[int],
    bound: int,
    until: tuple[float, Clock],
    kinds_left: int,
    options: Settings,
) -> tuple[int, int]:
    """Step 2 for one kind, with its share of the time (the time left over the kinds
    left): half asks the bound again, the rest bisects from the best placement so far.
    Returns the bound and the copies placed anew."""
    stop = functools.partial(is_stopped, options)
    deadline, clock = until
    share = max(deadline - clock.now(), 0.0) / kinds_left
    copies = kind.copies
    # Turns are counted in nodes: asking the same capacity again for no longer than
    # the first ask ran would walk the same nodes and answer nothing new.
    fresh = kind.asked != bound or share / 2 > kind.walked
    again = (
        ask(kind.packing, bound, time_limit=share / 2, stop=stop, clock=clock) if fresh else None
    )
    placed = 0
    if again is not None and again.placement is not None:
        placed = _place_copies(copies, again.placement, offsets)
    else:
        upper = part_top(copies[0], offsets)
        # The bound was asked already: go straight to a packing and bisect from there.
        result = lowest(
            kind.packing,
            time_limit=max(deadline - clock.now(), 0.0) / kinds_left,
            clock=clock,
            upper=upper,
            first_share=0.0,
            stop=stop,
            heard=hearing(options, form.rects, offsets, copies, bound, "search"),
        )
        bound = max(bound, result.bound)
        if result.placement is not None and result.peak < upper:
            placed = _place_copies(copies, result.placement, offsets)
    report_progress(options, form.rects, offsets, bound, "search")
    return bound, placed


def _place_copies(copies: list[list[Rect]], placement: Sequence[int], offsets: list[int]) -> int:
    """Give every copy of a kind of part the placement found for its first copy (one
    offset per rectangle of the first copy); the copies' rectangles correspond in the
    order `_shape` gives them."""
    for ordered in copies:
        for rect, offset in zip(ordered, placement):
            offsets[rect.index] = offset
    return len(copies)


def _shape(part: Sequence[Rect]) -> tuple[tuple[object, ...], list[Rect]]:
    """A key equal for parts that are the same up to a shift in time, and the part's
    rectangles in an order in which such parts correspond one to one."""
    origin = min(r.start for r in part)

    def signature(rect: Rect) -> tuple[object, ...]:
        live = tuple((iv.start - origin, iv.end - origin) for iv in rect.live)
        return (live, rect.size, rect.modulus, rect.residue)

    ordered = sorted(part, key=lambda r: (signature(r), r.index))
    return tuple(signature(r) for r in ordered), ordered
