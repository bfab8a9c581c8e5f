"""Greedy planners: place alias classes one at a time, each as low as it fits.

Steps:
1. Each alias class becomes one rectangle (`common.make_form`); pinned ones are placed
   first, at their pins.
2. The others are taken in one of several orders:
   - `size`: largest first, earlier start first on ties (TFLite's greedy-by-size);
   - `start`: earliest start first (what an online allocator sees);
   - `lifetime`: longest-lived first;
   - `area`: largest size x lifetime first;
   - `xla`: largest first, longer-lived first on ties (XLA's global decreasing size).
3. Each rectangle goes to the lowest allowed offset that clears every placed rectangle
   live at the same time (`first` fit), or to the smallest hole it fits in, else on top
   (`best` fit, as TFLite's arena and XLA's best-fit heap do).
4. The problem is cut into independent parts (`common.split`: no class live across the
   cut), since the arena is the maximum over them. On each part `greedy` runs every
   order with every fit, plus the naive stack (so that it is never
   worse than `naive`, which alignment padding could otherwise make it), and keeps the
   lowest arena; `plan.detail` says which run won and what each reached. Orders that
   sort a part's rectangles identically are run once, and a part stops as soon as its
   arena is under the whole problem's live bytes (it can no longer raise the arena).
   Parts may thus be won by different runs: `detail["order"]` names the run that won the
   part with the highest arena.
5. Every order wins somewhere. On idealloc's real traces (arena above the live-bytes
   bound, alignment 1): G_1 area/first 0.00 %, resnet50 start/best 0.30 %, pangu_2.6B
   size/first 0.76 %, S_1 size/best 1.58 %, Y_1 lifetime/best 0.35 % (the others 0.4-40 %).
   So parts up to LARGE_PART rectangles get every run; larger ones, where a run costs
   seconds, only LARGE_RUNS, the winners on the large traces; so do parts whose run
   would read more than LARGE_READS placed intervals (many live at once: 10,000
   buffers with 1,000 live took 10 s for every run, 1.1 s for these, the same arena).
6. `work` ends the runs after the one that spends it (counted in rectangles placed);
   a time limit or a stop request cuts the run under way within a second
   (`greedy.stop`) and the plan says so. Without a cut the plan depends on the input
   (and the work) alone.

Finding the rectangles live at the same time is the cost. Time is compressed to the ranks
of its end points and cut into buckets about one typical lifetime wide; a placed
rectangle is listed in every bucket its lifetime touches. A query reads only the buckets
under its own lifetime, keeps the entries that really overlap it in time, sorts them by
offset and sweeps for the first (or best) hole:

    bucket:    |  0  |  1  |  2  |  3  |
    placed a   [=====)                      listed in 0
    placed b         [===========)          listed in 1, 2
    query c             [====)              reads 1 (and 2): sees b, never a

With lifetimes short next to the whole run, as in real models, each query reads a few
dozen entries, so a run is O(n log n) for the ordering plus O(n k log k) for k rectangles
live at once.

When numba is importable and the problem has COMPILED_FROM rectangles or more (or
fewer, crowded enough that Python would read COMPILED_WORK neighbours), `greedy.kernel`
runs the same placement compiled, and the orders sorted by `np.lexsort`; it gives the
same offsets for every order and fit (`tests/test_greedy_scaling.py`,
`tests/test_columns.py`). The loop suits the trace's shape: merged busy ranges in a
segment tree over time (a query reads O(log T) short lists however many rectangles are
live) where thousands are live at once and some live for most of the run, as on
idealloc's traces (size/first on pangu_2.6B: 12.5 s with buckets in Python, 0.5 s with
the tree); compiled buckets kept sorted by offset where lifetimes are short
(`greedy.buckets`; the generated 100,000-buffer trace: 0.5 s a run against the tree's
3-4 s).

A problem without aliases or pins whose buffers have one interval each, as every CSV
problem is, skips the rectangles: `greedy.columns` plans it from its columns
(`optplan.problem.columns`), with the same runs and the same offsets.

The plain-Python `place` below stays as the fallback and as the reference.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from optplan.budget import Budget, Clock
from optplan.planners.base import Declared
from optplan.planners.common import Form, Rect, gc_paused, make_form, make_plan, no_plan, now, top
from optplan.planners.greedy.buckets import reads, shift_for
from optplan.planners.greedy.columns import plan_columns
from optplan.planners.greedy.kernel import COMPILED, Compiled
from optplan.planners.greedy.runs import FITS, ORDERS, Interpreted, best_runs, check_runs
from optplan.planners.greedy.stop import Limits, guarded, limited
from optplan.planners.naive import stack
from optplan.planners.tiers import plan_heuristics
from optplan.planners.tiers.fill import KEYS as FILL_KEYS
from optplan.planners.watch import Watch
from optplan.problem import Problem
from optplan.problem.plan import Plan, Status

# Problems with fewer rectangles are placed in plain Python: loading the compiled loop
# from numba's cache costs ~0.3 s once per process (compiling it happens when pip
# installs optplan: `optplan.planners.jit`), more than all greedy runs on 2,000 buffers take in Python (0.01 s on the
# TVM and ResNet chains, 0.3 s on the dense MiniMalloc chain; compiled: 0.006-0.017 s).
COMPILED_FROM = 2000
COMPILED_WORK = 400_000


@dataclass(frozen=True, slots=True)
class Greedy(Declared):
    """Options: which orders and fits to try; the best arena among them wins. On a
    problem of several memories, `fill` names the orders in which tensors fill the
    cheapest memory first, each staying in one memory (`tiers.fill`); the least traffic
    wins, and each memory is packed by the orders and fits above.

    `work` (units, `budget`; None: every run) ends the runs after the one that spends
    it, the same on any machine; `time_limit` (seconds) and `watch`'s stop are the
    outer guard: they cut the run under way within a second (`greedy.stop`), and the
    plan says so (detail `"cut"`, or `"interrupted"` for a stop)."""

    takes_work: ClassVar[bool] = True
    takes_watch: ClassVar[bool] = True
    name: str = "greedy"
    orders: tuple[str, ...] = ORDERS
    fits: tuple[str, ...] = FITS
    fill: tuple[str, ...] = FILL_KEYS
    work: float | None = None
    time_limit: float | None = None
    watch: Watch | None = field(default=None, compare=False, repr=False)

    def whole(self, problem: Problem, started: float) -> Plan:
        check_runs(self.orders, self.fits)
        with gc_paused(), limited(Budget(self.work, self.time_limit), self.watch) as limits:
            if len(problem.buffers) >= COMPILED_FROM:
                # A problem held as columns is planned from them, with no form at all.
                plan = plan_columns(problem, self.orders, self.fits, self.name, started, limits)
                if plan is not None:
                    return plan
            return _plan_form(make_form(problem), self, started, limits)

    def arena(self, form: Form, started: float) -> Plan:
        with gc_paused(), limited(Budget(self.work, self.time_limit), self.watch) as limits:
            return _plan_form(form, self, started, limits)

    def memories(self, problem: Problem, started: float) -> Plan:
        """Each tensor in one memory, the cheapest filled first in each `fill` order."""
        check_runs(self.orders, self.fits)
        rules = [f"fill-{key}" for key in self.fill]
        return plan_heuristics(problem, self.name, rules, pack_with(self), started=started)


def plan_greedy(form: Form, options: Greedy = Greedy(), *, started: float | None = None) -> Plan:
    """Greedy's plan of one arena (`form.problem.objective` "arena")."""
    return options.arena(form, now() if started is None else started)


def _plan_form(form: Form, options: Greedy, started: float, limits: Limits) -> Plan:
    """`plan_greedy` within `limits`."""
    if form.fault is not None:
        return no_plan(
            form, options.name, started=started, status=Status.INFEASIBLE, reason=form.fault
        )
    offsets, detail = best_offsets(
        form,
        options.orders,
        options.fits,
        deadline=limits.deadline,
        clock=limits.clock,
        stop=limits.stop,
    )
    detail.update(limits.detail(bool(detail.pop("cut", False))))
    return make_plan(form, options.name, offsets, started=started, detail=detail)


def pack_with(options: Greedy) -> Callable[[Problem], Plan]:
    """Greedy as the packer of one memory's buffers."""

    def pack(problem: Problem) -> Plan:
        return plan_greedy(make_form(problem), options)

    return pack


def best_offsets(
    form: Form,
    orders: tuple[str, ...] = ORDERS,
    fits: tuple[str, ...] = FITS,
    *,
    deadline: float | None = None,
    clock: Clock | None = None,
    stop: np.ndarray | None = None,
) -> tuple[list[int], dict[str, object]]:
    """The lowest-arena offsets over every order and fit (and the naive stack).

    Assumes the form has no fault. Ties go to the earlier run, so the result
    depends only on the input. Past `deadline` (a `clock` reading, else a `now()` time)
    each part makes no run after its first. A raised `stop` (`greedy.stop`; without one,
    a flag raised at `clock`'s guard) drops the run under way and starts no other: each
    part keeps its best complete run, `detail["cut"]` is True and the clock is cut.
    """
    check_runs(orders, fits)
    seconds = clock.guard_left() if clock is not None and stop is None else None
    with gc_paused(), guarded(seconds, None) as flag:
        offsets, detail = _best_of_parts(
            form, orders, fits, (deadline, clock), flag if stop is None else stop
        )
    if detail.get("cut") and clock is not None:
        clock.cut = True
    return offsets, detail


def _best_of_parts(
    form: Form,
    orders: tuple[str, ...],
    fits: tuple[str, ...],
    until: tuple[float | None, Clock | None],
    stop: np.ndarray,
) -> tuple[list[int], dict[str, object]]:
    """The best run on each independent part; the part with the highest arena names the
    winner. A part stops trying runs once it is under the whole problem's live bytes,
    since it can no longer raise the arena."""
    offsets = [r.pin if r.pin is not None else r.lift(0) for r in form.rects]
    floor = form.live_bytes
    parts = [list(part) for part in form.parts]
    compiled = len(form.rects) >= COMPILED_FROM or _crowded(form.rects)
    detail: dict[str, object] = {"order": "naive", "arenas": {}}
    highest = -1
    cut = False
    for part in parts:
        placed, runs = _best_of(part, orders, fits, floor, compiled, until, stop)
        for rect, offset in zip(part, placed):
            offsets[rect.index] = offset
        arena = top(part, placed)
        cut = cut or "cut_run" in runs
        if arena > highest:
            highest, detail = arena, runs
    detail["parts"] = len(parts)
    if cut:
        detail["cut"] = True
    return offsets, detail


def _crowded(rects: Sequence[Rect]) -> bool:
    """Whether the plain-Python runs would read so many placed neighbours that loading
    the compiled loop pays: rectangles x neighbours a query reads, COMPILED_WORK or more
    (resnet50, 1,042 buffers, ~1,000 live at once: 3.3 s in Python, 0.1 s compiled)."""
    if not COMPILED or len(rects) < 2:
        return False
    spans = [(iv.start, iv.end) for r in rects if r.size for iv in r.live]
    _, ranks = np.unique(np.array(spans, dtype=np.int64), return_inverse=True)
    ranks = ranks.reshape(-1, 2)
    starts, ends = ranks[:, 0].copy(), ranks[:, 1].copy()
    return len(rects) * reads(starts, ends, shift_for(starts, ends))[0] >= COMPILED_WORK


def _best_of(
    part: list[Rect],
    orders: tuple[str, ...],
    fits: tuple[str, ...],
    floor: int,
    compiled: bool,
    until: tuple[float | None, Clock | None],
    stop: np.ndarray,
) -> tuple[list[int], dict[str, object]]:
    """Offsets for `part` (in its order) from the best run, stopping at `floor` (or when
    `stop` is raised); placed by the compiled loop if `compiled` and it can take the part."""
    fast = Compiled.build(part) if compiled else None
    runner: Compiled | Interpreted = fast if fast is not None else Interpreted.build(part)
    naive = fast.stack() if fast is not None else stack(part)
    best, runs = best_runs(runner, naive, len(part), orders, fits, floor, *until, stop)
    return [int(offset) for offset in best], runs
