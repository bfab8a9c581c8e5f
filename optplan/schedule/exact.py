"""The exact scheduler: the least peak over all valid orders, by a best-first search over
the sets of ops already run (dynamic programming over downsets, as SERENITY does).

What is held after a set S of ops has run depends only on S, not on the order within
it, so a state is S (a bit mask) and its cost is the least peak of any order of S.

1. Start from the best quick order (`heuristics`): its peak is the incumbent, and any
   state whose cost reaches it is pruned (only strictly better orders are looked for).
2. Pop states cheapest first (a Dijkstra search in which a path's cost is its largest
   step, not its sum). Running ready op v from S costs max(cost(S), held(S) + new(v)).
   Every state is expanded once, at its least cost (memoisation on S). A state is ranked
   by its cost raised to what the ops still to run must hold in every order
   (`op_bounds`), an A* estimate that never overstates, so the ranking stays exact and
   states that cannot beat the incumbent are dropped before they are expanded.
3. A free move: when a ready op makes no more bytes than it frees and its step fits under
   the cost so far, running it at once is never worse than later (every step it is
   delayed over holds the bytes it would free), so it is the only successor tried.
4. The first complete set popped is optimal. If the heap runs dry, the incumbent was.
   At the state or time limit the cost of the cheapest unexpanded state is a proven
   lower bound on the optimum, and the incumbent is returned as feasible.

The state limit is the work budget: the same limit gives the same answer on any machine;
the time limit is only an outer guard.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Sequence
from dataclasses import dataclass

from optplan.schedule.graph import Graph, op_bounds, peak_bytes


@dataclass(frozen=True, slots=True)
class Found:
    """What a search found: the order, its peak, whether it is proven optimal, a proven
    lower bound on the optimal peak, and the states expanded (its work)."""

    order: tuple[int, ...]
    peak: int
    proven: bool
    bound: int
    states: int = 0


def exact_search(
    graph: Graph,
    incumbent: Sequence[int],
    *,
    time_limit: float = 10.0,
    max_states: int = 2_000_000,
    bounds: Sequence[int] | None = None,
) -> Found:
    """The best order of `graph`, or the incumbent and a proven bound at the limits.
    `bounds[v]`, when given, is a proven lower bound on the bytes held at op v's step."""
    tables = _Tables(graph, bounds)
    best_order = tuple(incumbent)
    best = peak_bytes(graph, best_order)
    full = (1 << graph.ops) - 1
    start_held = tables.held_at_start
    cost: dict[int, int] = {0: start_held if graph.ops == 0 else 0}
    parent: dict[int, tuple[int, int]] = {}
    heap: list[tuple[int, int, int, int, int]] = [
        (tables.rank(0, cost[0]), 0, start_held, 0, cost[0])
    ]
    deadline = time.perf_counter() + time_limit
    expanded = 0
    while heap:
        rank, depth, held, mask, g = heapq.heappop(heap)
        if g > cost.get(mask, g) or rank >= best and mask != full:
            continue
        if mask == full:
            return Found(_path(parent, full), g, True, g, expanded)
        expanded += 1
        if expanded > max_states or (expanded & 15 == 0 and time.perf_counter() > deadline):
            return Found(best_order, best, False, min(rank, best), expanded)
        for v in tables.successors(mask, held, g):
            after = mask | (1 << v)
            step = held + tables.made[v]
            new_g = max(g, step)
            new_rank = tables.rank(after, new_g)
            if new_rank >= best or new_g >= cost.get(after, new_g + 1):
                continue
            cost[after] = new_g
            parent[after] = (mask, v)
            left = held + tables.made[v] - tables.freed(v, after)
            heapq.heappush(heap, (new_rank, depth - 1, left, after, new_g))
    return Found(best_order, best, True, best, expanded)


class _Tables:
    """Per-op bit masks and byte counts the search reads at every state."""

    __slots__ = (
        "bounds",
        "by_bound",
        "graph",
        "held_at_start",
        "made",
        "pred_mask",
        "reader_mask",
        "touch",
    )

    def __init__(self, graph: Graph, bounds: Sequence[int] | None) -> None:
        self.graph = graph
        self.made = [sum(graph.sizes[b] for b in bufs) for bufs in graph.creates]
        self.pred_mask = [sum(1 << u for u in set(preds)) for preds in graph.preds]
        self.reader_mask = [sum(1 << v for v in readers) for readers in graph.readers()]
        # The buffers op v may free: what it reads and what it makes.
        self.touch = [
            tuple(b for b in (*graph.reads[v], *graph.creates[v]) if b not in graph.live_out)
            for v in range(graph.ops)
        ]
        self.held_at_start = graph.base_bytes + sum(graph.sizes[b] for b in graph.live_in)
        self.bounds = list(bounds) if bounds is not None else op_bounds(graph)
        self.by_bound = sorted(range(graph.ops), key=lambda v: -self.bounds[v])

    def rank(self, mask: int, cost: int) -> int:
        """`cost` raised to the largest bound of an op not yet run."""
        for v in self.by_bound:
            if not mask >> v & 1:
                return max(cost, self.bounds[v])
        return cost

    def freed(self, v: int, after: int) -> int:
        """Bytes freed once v has run and the set run is `after`."""
        mask = self.reader_mask
        return sum(self.graph.sizes[b] for b in self.touch[v] if mask[b] & after == mask[b])

    def successors(self, mask: int, held: int, cost: int) -> list[int]:
        ready = [
            v
            for v in range(self.graph.ops)
            if not mask >> v & 1 and self.pred_mask[v] & mask == self.pred_mask[v]
        ]
        for v in ready:
            made = self.made[v]
            if held + made <= cost and made <= self.freed(v, mask | (1 << v)):
                return [v]
        return ready


def _path(parent: dict[int, tuple[int, int]], mask: int) -> tuple[int, ...]:
    order = []
    while mask:
        mask, v = parent[mask]
        order.append(v)
    return tuple(reversed(order))
