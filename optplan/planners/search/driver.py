"""Driving the kernels: configurations take turns on each part (`_solve_part`, `_turn`),
`ask` answers one capacity, `lowest` bisects for the smallest peak, and `warm_kernels`
compiles everything once.

Steps:
1. `prepare(rects, parts)` takes rectangles from the planners' form (`common.Form`):
   every rectangle an answer places, and the parts (of non-zero size) they are split
   into. It checks that the search can place them (no pins, offsets at multiples of the
   alignment) and holds each part's arrays, built once (`parts.Prepared`).
2. `ask(packing, capacity)` runs the configurations on each part at one capacity; an
   answer gives one offset per rectangle, in the order of `packing.rects`.
3. `lowest(packing)` asks at several capacities, reusing the arrays every time.

`search(problem, ...)` and `minimise(problem, ...)` do all three for a whole problem and
give offsets by buffer id too.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from math import gcd

from optplan.budget import WALL, Clock, node_work
from optplan.planners.common import Rect, expand, live_peak, make_form
from optplan.planners.search.floor import floor_runner
from optplan.planners.search.order import order_runner
from optplan.planners.search.parts import (
    _CONFIGS,
    _EXHAUSTED,
    _FLOOR_SEARCH,
    _FOUND,
    _ORDER_RECTANGLES,
    _ORDER_SEARCH,
    _OVERFLOW,
    _ROOMIEST,
    _RUNNING,
    Prepared,
    _build_part,
    prepare_part,
)
from optplan.planners.search.runner import Runner
from optplan.problem import Interval, Problem

_SLICE_NODES = 2_000  # nodes per configuration's turn
_FIRST_CHUNK = 64  # nodes per kernel call at first; then sized to take about...
_CHUNK_SECONDS = 0.01  # ...this long, so the clock is read that often


class SearchStatus(enum.Enum):
    FOUND = "found"
    INFEASIBLE = "infeasible"  # proven: nothing fits under the capacity
    TIMEOUT = "timeout"


@dataclass(frozen=True, slots=True)
class SearchResult:
    """The answer at one capacity; when FOUND, `placement` (one offset per rectangle of
    the packing, in its order) and `offsets` (per buffer id)."""

    status: SearchStatus
    capacity: int
    offsets: dict[str, int] | None
    peak: int
    nodes: int
    seconds: float
    placement: tuple[int, ...] | None = None


@dataclass(frozen=True, slots=True)
class Packing:
    """Rectangles ready for the search, asked at any capacity without building again.

    `rects` are what an answer places; `parts` their parts of non-zero size, in order of
    time; `step` divides every canonical packing's peak (`granularity`); `live_bytes` is
    their live-bytes bound and `ceiling` the peak of stacking them all (`naive`), which
    always fits.
    """

    rects: tuple[Rect, ...]
    parts: tuple[Prepared, ...]
    step: int
    live_bytes: int
    ceiling: int


def prepare(rects: Sequence[Rect], parts: Sequence[Sequence[Rect]], seed: int = 0) -> Packing:
    """`rects` and their `parts` (as `common.split` gives them) ready for the search.

    Raises ValueError on a pinned rectangle or one whose offsets are off a multiple of
    its alignment (a view at an odd delta): the search places neither."""
    for rect in rects:
        if rect.pins:
            raise ValueError("the skyline search does not place pinned buffers; use cpsat")
        if rect.residue != 0:
            raise ValueError(
                f"the skyline search places alias class {rect.root!r} only at multiples of "
                f"its alignment, which its members' alignments forbid; use cpsat"
            )
    prepared = sorted(
        (prepare_part(part, seed) for part in parts),
        key=lambda p: (p.rects[0].start, p.rects[0].end),
    )
    ceiling = 0
    for rect in sorted(rects, key=lambda r: r.index):
        ceiling = rect.lift(ceiling) + rect.size
    return Packing(tuple(rects), tuple(prepared), granularity(rects), live_peak(rects), ceiling)


def granularity(rects: Sequence[Rect]) -> int:
    """A step every packing's peak is a multiple of (when it sits on the search's
    canonical form): the gcd of all sizes and of every alignment above 1."""
    step = 0
    for rect in rects:
        step = gcd(step, rect.size)
        if rect.modulus > 1:
            step = gcd(step, rect.modulus)
    return max(step, 1)


# ---------------------------------------------------------------------------- driver


@dataclass(frozen=True, slots=True)
class _Outcome:
    status: SearchStatus
    offsets: tuple[int, ...]
    nodes: int


def _never() -> bool:
    return False


def _solve_part(
    part: Prepared, capacity: int, deadline: float, stop: Callable[[], bool], clock: Clock
) -> _Outcome:
    """Run every configuration in turn, a slice of nodes each, until one answers.

    Searches of this kind are heavy-tailed: a configuration that is lost for minutes on
    one instance answers another in milliseconds. Taking turns costs at most a factor of
    the number of configurations, and the turns are counted in nodes, not seconds, so
    the answer does not depend on the machine's speed. A configuration is only set up
    when its first turn comes, so an easy part costs one. `stop` ends it as the clock
    does (its caller wants an answer now). `deadline` is a `clock` reading.
    """

    def past() -> bool:
        return clock.past(deadline) or stop()

    if int(part.arrays().section_bytes.max(initial=0)) > capacity:
        return _Outcome(SearchStatus.INFEASIBLE, (), 0)
    configs = configurations(len(part.rects))
    weight = node_work(part.incidences)
    runners: list[Runner] = []
    nodes = 0
    while True:
        for k, (kind, order, rule, mirror) in enumerate(configs):
            if k == len(runners):
                if runners and past():
                    return _Outcome(SearchStatus.TIMEOUT, (), nodes)  # set-up costs too
                arrays = part.arrays(bool(mirror))
                if kind == _ORDER_SEARCH:
                    runners.append(order_runner(arrays, capacity, order))
                else:
                    runners.append(floor_runner(arrays, capacity, order, rule))
            runner = runners[k]
            code = _turn(runner, past, clock, weight)
            nodes = sum(r.nodes for r in runners)
            if code == _FOUND:
                offsets = tuple(int(o) for o in runner.offsets)
                return _Outcome(SearchStatus.FOUND, offsets, nodes)
            if code == _EXHAUSTED:
                return _Outcome(SearchStatus.INFEASIBLE, (), nodes)
            if past():
                return _Outcome(SearchStatus.TIMEOUT, (), nodes)
        if all(r.code == _OVERFLOW for r in runners):
            return _Outcome(SearchStatus.TIMEOUT, (), nodes)


def configurations(rectangles: int) -> tuple[tuple[int, int, int, int], ...]:
    """The configurations (search, order, section rule, mirrored) that take turns on a
    part of `rectangles`: all of them, or the floor search's alone on parts too large
    for the order search's scan of every rectangle at every node."""
    if rectangles > _ORDER_RECTANGLES:
        return tuple(config for config in _CONFIGS if config[0] == _FLOOR_SEARCH)
    return _CONFIGS


def _turn(runner: Runner, past: Callable[[], bool], clock: Clock, weight: float) -> int:
    """One turn of `_SLICE_NODES` nodes, in chunks short enough to read the clock often
    (a node costs milliseconds on large parts, so a whole turn could overrun the time
    limit by seconds). The kernels stop after exactly the nodes asked and resume where
    they stopped, so the chunks change when the clock is read and nothing else. A clock
    that counts work counts the nodes, `weight` each (`budget.node_work`: more on large
    parts), in chunks of a fixed size, so that where the search stops does not depend on
    the machine."""
    target = runner.nodes + _SLICE_NODES
    chunk = _FIRST_CHUNK
    while True:
        began = time.perf_counter()
        before = runner.nodes
        code = runner.step(min(chunk, target - before))
        clock.spend((runner.nodes - before) * weight)
        if code != _RUNNING or runner.nodes >= target or runner.nodes == before:
            return code
        if past():
            return code
        if clock.counted:
            continue
        spent = time.perf_counter() - began
        if spent < _CHUNK_SECONDS / 2:
            chunk *= 2
        elif spent > _CHUNK_SECONDS * 2:
            chunk = max(1, chunk // 2)


def warm_kernels() -> None:
    """Compile every kernel (numba compiles a kernel with all it calls): one step of each
    kind of run on a small part that does not solve at once."""
    rects = [
        Rect(k, f"r{k}", ((f"r{k}", 0),), size, (Interval(k % 2, 3),), 1, 0, ())
        for k, size in enumerate((3, 2, 2, 1, 1))
    ]
    part = _build_part(rects, 0)
    floor_runner(part, 5, 0, _ROOMIEST).step(1)
    order_runner(part, 5, 3).step(1)


def ask(
    packing: Packing,
    capacity: int,
    *,
    time_limit: float,
    stop: Callable[[], bool] = _never,
    clock: Clock | None = None,
) -> SearchResult:
    """One offset per rectangle of `packing` within `capacity` bytes, or a proof that
    none exist, or TIMEOUT after `time_limit` of `clock` (seconds, or work units when it
    counts work; or once `stop()` says so). The result's `seconds` are the clock's."""
    clock = clock or WALL.clock()
    started = clock.now()
    deadline = started + time_limit
    placed: dict[int, int] = {}  # offset by rect index; rectangles of no size stay at 0
    status, nodes = SearchStatus.FOUND, 0
    for part in packing.parts:
        if status is SearchStatus.TIMEOUT and (clock.past(deadline) or stop()):
            break
        outcome = _solve_part(part, capacity, deadline, stop, clock)
        nodes += outcome.nodes
        if outcome.status is SearchStatus.INFEASIBLE:
            status = outcome.status
            break  # one part that cannot fit settles the whole
        if outcome.status is SearchStatus.TIMEOUT:
            status = outcome.status
            continue  # a later part may still prove the whole infeasible
        for rect, offset in zip(part.rects, outcome.offsets):
            placed[rect.index] = offset
    seconds = clock.now() - started
    if status is not SearchStatus.FOUND:
        return SearchResult(status, capacity, None, 0, nodes, seconds)
    placement = tuple(placed.get(rect.index, 0) for rect in packing.rects)
    peak = max((offset + rect.size for rect, offset in zip(packing.rects, placement)), default=0)
    offsets = expand(packing.rects, placement)
    return SearchResult(status, capacity, offsets, peak, nodes, seconds, placement)


def search(problem: Problem, capacity: int, *, time_limit: float, seed: int = 0) -> SearchResult:
    """Offsets for every buffer within `capacity` bytes, or a proof that none exist, or
    TIMEOUT after `time_limit` seconds. Raises ValueError where `prepare` does."""
    started = time.perf_counter()
    form = make_form(problem)
    packing = prepare(form.rects, form.parts, seed)
    left = time_limit - (time.perf_counter() - started)
    result = ask(packing, capacity, time_limit=left)
    return replace(result, seconds=time.perf_counter() - started)


# ---------------------------------------------------------------------------- minimising


@dataclass(frozen=True, slots=True)
class MinimiseResult:
    """The lowest peak found, the best lower bound proven, and every probe made;
    `placement` is by rectangle of the packing, `offsets` by buffer id."""

    offsets: dict[str, int] | None
    peak: int  # 0 when nothing was found
    bound: int  # no packing has a smaller peak
    probes: tuple[SearchResult, ...]
    seconds: float
    placement: tuple[int, ...] | None = None

    @property
    def optimal(self) -> bool:
        return self.offsets is not None and self.peak <= self.bound


def minimise(
    problem: Problem,
    *,
    time_limit: float,
    seed: int = 0,
    upper: int | None = None,
    first_share: float = 0.4,
) -> MinimiseResult:
    """The smallest peak the search reaches for `problem` within `time_limit` seconds
    (see `lowest`). Raises ValueError where `prepare` does."""
    started = time.perf_counter()
    form = make_form(problem)
    packing = prepare(form.rects, form.parts, seed)
    left = time_limit - (time.perf_counter() - started)
    result = lowest(packing, time_limit=left, upper=upper, first_share=first_share)
    return replace(result, seconds=time.perf_counter() - started)


def lowest(
    packing: Packing,
    *,
    time_limit: float,
    upper: int | None = None,
    first_share: float = 0.4,
    stop: Callable[[], bool] = _never,
    heard: Callable[[int, int], None] | None = None,
    clock: Clock | None = None,
) -> MinimiseResult:
    """The smallest peak the search reaches within `time_limit` of `clock` (seconds, or
    work units when it counts work; or until `stop()` says so); `heard(peak, bound)` is
    told of each probe once one has found a packing.

    1. Ask at the lower bound first (with `first_share` of the time): on these problems
       the optimum is usually there, and a yes proves it.
    2. Else find any packing (at `upper`, e.g. a greedy plan's arena, or with no cap).
    3. Then bisect between the best bound and the best peak; a probe that proves "no"
       raises the bound, one that times out only moves the bisection up (and the
       bisection starts again from the bound, with longer probes, while time lasts).
    """
    clock = clock or WALL.clock()
    started = clock.now()
    run = _Bisection(packing, started + time_limit, (stop, clock), heard)
    run.first_packing(time_limit * first_share, upper)
    run.bisect()
    seconds = clock.now() - started
    best, probes = run.best, tuple(run.probes)
    if best is None:
        return MinimiseResult(None, 0, run.bound, probes, seconds)
    return MinimiseResult(best.offsets, best.peak, run.bound, probes, seconds, best.placement)


class _Bisection:
    """The state of one `lowest`: the best packing found, the proven bound, the probes."""

    def __init__(
        self,
        packing: Packing,
        deadline: float,
        ends: tuple[Callable[[], bool], Clock],
        heard: Callable[[int, int], None] | None,
    ) -> None:
        self.packing, self.deadline, self.heard = packing, deadline, heard
        self.stop, self.clock = ends
        self.step = packing.step
        self.bound = _round_up(packing.live_bytes, self.step)
        self.probes: list[SearchResult] = []
        self.best: SearchResult | None = None

    def probe(self, capacity: int, seconds: float) -> SearchResult:
        limit = max(seconds, 0.0)
        result = ask(self.packing, capacity, time_limit=limit, stop=self.stop, clock=self.clock)
        self.probes.append(result)
        best = self.best
        if self.heard is not None and (best is not None or result.status is SearchStatus.FOUND):
            found = [r.peak for r in (best, result) if r is not None and r.offsets is not None]
            self.heard(min(found), self.bound)
        return result

    def first_packing(self, first_seconds: float, upper: int | None) -> None:
        """Steps 1 and 2: ask at the bound, else find any packing."""
        first = self.probe(self.bound, first_seconds)
        if first.status is SearchStatus.FOUND:
            self.best = first
            return
        if first.status is SearchStatus.INFEASIBLE:
            self.bound += self.step
        # Any packing will do now; a ceiling no higher than the bound just asked adds
        # nothing, and the naive stack always fits, so it is the last resort.
        ceilings = [self.packing.ceiling]
        if upper is not None and upper > first.capacity:
            ceilings.insert(0, upper)
        for k, ceiling in enumerate(ceilings):
            share = (self.deadline - self.clock.now()) / (len(ceilings) - k)
            dive = self.probe(max(ceiling, self.bound), share)
            if dive.status is SearchStatus.FOUND:
                self.best = dive
                return

    def bisect(self) -> None:
        """Step 3: between the bound and the best peak, while time lasts."""
        step = self.step
        low = self.bound  # below this nothing was found (proven only up to `bound`)
        while self.best is not None and self.best.peak > self.bound:
            left = self.deadline - self.clock.now()
            high = self.best.peak - step
            if left <= 0.05 or self.stop() or self.clock.guarded():
                break
            if low > high:
                if low == self.bound:
                    break
                low = self.bound  # timeouts moved it up: try again, now with longer probes
                continue
            capacity = _round_up((low + high) // 2, step)
            steps = max(1, (high - low) // step).bit_length()
            result = self.probe(capacity, max(left / steps, min(left, 0.5)))
            if result.status is SearchStatus.FOUND:
                self.best = result
            elif result.status is SearchStatus.INFEASIBLE:
                self.bound = max(self.bound, capacity + step)
                low = max(low, self.bound)
            else:
                low = capacity + step


def _round_up(value: int, step: int) -> int:
    return -(-value // step) * step
