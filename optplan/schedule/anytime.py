"""The `auto` scheduler: the best order found and a proven bound on the best order's peak,
within a time limit and, if given, a budget of work.

1. The quick orders (program, LPMF, BFS, DFS; `heuristics`): the best is the incumbent.
2. The bound (`bounds.cut_bounds`): a min-cut bound per op; the largest is proven. The
   tables and bit sets it needs are built once, in O(edges x words), inside the limit.
3. Beam search (`beam`), backwards and forwards, widths 1, 4, ... up to `FIRST_WIDTH`.
4. The key-order bound (`keyorder`): min cuts that agree on the order of a few key
   ops, chosen from the per-op bounds and the incumbent's fullest steps.
5. The exact search (`split`), window by window between cut ops, from the beam's order
   and ranked by the per-op bounds: it proves the optimum where the sets of ops it must
   visit are few, and where it stops it may still raise the bound.
6. Beam search again, wider, then windowed re-solves around the peak (`improve`) with
   what is left; then the key-order bound again, from the final order.

The beam's kernels are compiled by numba once per environment (`beam_ready`). Every
step ends the run as soon as the incumbent meets the bound (it is then proven
optimal). Each step gets a share of the time and, with `work`, of the work:

    step        share of the time   share of `work` (its unit)
    bound       15 %                1/4  (arcs the max-flows scan)
    key order   5 % then the rest   1/16, then up to 1/4 in all (arcs the max-flows
                                         scan, `keyorder.ARCS_PER_STEP` a step)
    beam        15 % then 25 %      1/4, then up to 1/2 in all (states the beam makes)
    exact       30 % (10 % beyond   1/64 (states expanded: one costs about as much
                EXACT_OPS ops)           as a few dozen beam states)
    improve     what is left        1/64 (states its window searches expand)

With `work`, every step stops on its work alone and the time limit is only an outer
guard, so the same graph and budget give the same order on any machine and at any
load. Without it, the steps stop on their share of the time.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from optplan.planners import jit
from optplan.schedule.beam import UNLIMITED, beam_orders, warm_kernels
from optplan.schedule.bounds import Bounds, cut_bounds
from optplan.schedule.graph import Graph, peak_bytes, step_bytes
from optplan.schedule.improve import improve
from optplan.schedule.keyorder import KEY_COUNTS, key_ops, key_order_bound
from optplan.schedule.split import exact_split
from optplan.schedule.tables import tables

BEAM = jit.BEAM
FIRST_WIDTH = 1024  # the widest beam before the exact search
EXACT_OPS = 150  # above this the exact search rarely ends: it gets a tenth of the time


@dataclass(frozen=True, slots=True)
class Outcome:
    """The order found, a proven bound, and which step proved the bound or found the
    order (for reports: 'quick', 'bound', 'beam', 'exact', 'improve')."""

    order: tuple[int, ...]
    bound: int
    found_by: str
    bounds: Bounds


def anytime(
    graph: Graph,
    start: Sequence[int],
    *,
    time_limit: float,
    work: int | None,
    use_exact: bool = True,
) -> Outcome:
    """The `auto` scheduler's run (module docstring)."""
    deadline = time.perf_counter() + time_limit
    compiled = beam_ready(work)
    run = _Run(graph, start, deadline, time_limit, work)
    if run.done():
        return run.outcome()
    if compiled:
        run.beam([4**k for k in range(6)], run.budget(1 / 4), run.until(0.15))  # 1 .. FIRST_WIDTH
        if run.done():
            return run.outcome()
    if run.key_bound(1 / 16, run.until(0.05)):
        return run.outcome()
    if use_exact and run.exact(0.30 if graph.ops <= EXACT_OPS else 0.10):
        return run.outcome()
    if compiled:
        run.beam([4**k for k in range(12)], run.budget(1 / 2) - run.beam_work, run.until(0.25))
        if run.done():
            return run.outcome()
    improved = improve(
        graph, run.order, time_limit=run.left(), work=run.budget(1 / 64) if work else None
    )
    run.offer(improved, peak_bytes(graph, improved), "improve")
    run.key_bound(1 / 4, run.deadline)
    return run.outcome()


def beam_ready(work: int | None) -> bool:
    """Whether the beam's kernels are compiled. numba compiles them once per environment
    (10-50 s): with a work budget that happens here, before the clock starts, so the
    order does not depend on it; without one the compile starts in a background process
    and this run goes without the beam (`planners.jit`)."""
    if work is not None:
        jit.warm(BEAM)
    elif not jit.ready(BEAM):
        jit.compile_in_background(BEAM)
        return False
    warm_kernels()  # loads numba's cached machine code (seconds on a loaded machine)
    return True


class _Run:
    """One run's incumbent, bound and limits."""

    def __init__(
        self,
        graph: Graph,
        start: Sequence[int],
        deadline: float,
        time_limit: float,
        work: int | None,
    ) -> None:
        self.graph, self.deadline, self.time_limit, self.work = graph, deadline, time_limit, work
        self.tables = tables(graph)
        self.order, self.peak, self.found_by = tuple(start), peak_bytes(graph, start), "quick"
        self.bounds = cut_bounds(self.tables, budget=self.budget(1 / 4), deadline=self.until(0.15))
        self.bound = self.bounds.best
        self.beam_work = 0
        self.pace = 0.0
        self.widest = 0
        self.directions: tuple[bool, ...] = (False, True)
        self.keyed: tuple[int, ...] = ()  # the order the key-order bound last read
        self.key_counts: set[int] = set()  # the key counts asked of that order
        self.key_work = 0

    def until(self, share: float) -> float:
        """The deadline of a step given `share` of the time; with a work budget the
        steps stop on work and the time limit is only the outer guard."""
        if self.work is not None:
            return self.deadline
        return min(self.deadline, time.perf_counter() + share * self.time_limit)

    def budget(self, fraction: float) -> int:
        return UNLIMITED if self.work is None else max(1, int(self.work * fraction))

    def left(self) -> float:
        return max(0.0, self.deadline - time.perf_counter())

    def done(self) -> bool:
        return self.peak <= self.bound

    def offer(self, order: tuple[int, ...], peak: int, found_by: str) -> None:
        if peak < self.peak:
            self.order, self.peak, self.found_by = order, peak, found_by

    def beam(self, widths: list[int], work: int, deadline: float) -> None:
        """Beam rounds of the `widths` wider than any completed so far."""
        beamed = beam_orders(
            self.tables, self.order, self.peak,
            work=UNLIMITED if self.work is None else max(0, work), deadline=deadline,
            widths=[w for w in widths if w > self.widest], bound=self.bound, pace=self.pace,
            directions=self.directions,
        )  # fmt: skip
        self.pace, self.widest = beamed.pace, max(self.widest, beamed.widest)
        self.directions = beamed.directions
        self.beam_work += beamed.work
        self.offer(beamed.order, beamed.peak, "beam")

    def exact(self, share: float) -> bool:
        """The exact search from the incumbent; whether it settled the run."""
        found = exact_split(
            self.graph,
            self.order,
            time_limit=max(0.0, self.until(share) - time.perf_counter()),
            max_states=self.budget(1 / 64) if self.work is not None else 2_000_000,
            bounds=self.bounds.per_op,
        )
        self.offer(found.order, found.peak, "exact")
        self.bound = max(self.bound, min(found.bound, self.peak))
        if found.proven:
            self.bound = self.peak
        return self.done()

    def key_bound(self, fraction: float, deadline: float) -> bool:
        """The key-order bound (`keyorder`) from the incumbent's fullest steps, with
        more key ops while its share of the work (arcs scanned) lasts; whether the run
        is settled. Each call takes up to `fraction` of `work` less what the earlier
        calls spent."""
        if self.order != self.keyed:
            self.keyed, self.key_counts = self.order, set()
        steps = step_bytes(self.graph, self.order)
        for count in KEY_COUNTS:
            left = self.budget(fraction) - self.key_work
            if left <= 0 or self.done() or time.perf_counter() > deadline:
                break
            if count in self.key_counts:
                continue
            self.key_counts.add(count)
            keys = key_ops(self.bounds.per_op, steps, self.order, count)
            found = key_order_bound(self.tables, keys, cap=self.peak, work=left, deadline=deadline)
            self.key_work += found.work
            self.bound = max(self.bound, found.bound)
        return self.done()

    def outcome(self) -> Outcome:
        return Outcome(self.order, min(self.bound, self.peak), self.found_by, self.bounds)
