"""Anytime improvement of an order for graphs too large to search whole: windowed
exact re-solves around the peak.

1. Start from the best quick order.
2. Find a step with the most memory. Take a window of `width` consecutive steps
   around it (centred, then shifted by half a window either way). The ops inside may
   run in any valid order among themselves while everything outside stays put; that is
   a small `Graph` of its own (`window_graph`): what is held on entering the window is
   its `live_in` and `base_bytes`, what is read after it its `live_out`.
3. Solve the window with the exact search (a short time limit). Steps outside the
   window keep their memory, so the whole order's peak is the larger of the outside
   peak and the window's; keep the new window order when that is lower, or equal but
   reached at fewer steps.
4. Repeat; when no window around any peak step improves, widen the windows by half
   (20 ops, then 30, 45, ...) until they cover the whole order, the work budget (states
   the window searches expand, `work`) is spent, or the time is up. Each window search
   stops on its states alone (the deadline is an outer guard), so the same budget gives
   the same order on any machine.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from optplan.schedule.exact import exact_search
from optplan.schedule.graph import Graph, step_bytes

WINDOW_STATES = 200_000  # states one window search may expand


def improve(
    graph: Graph,
    start: Sequence[int],
    *,
    time_limit: float = 10.0,
    width: int = 20,
    work: int | None = None,
) -> tuple[int, ...]:
    order = tuple(start)
    deadline = time.perf_counter() + time_limit
    budget = [work if work is not None else 1 << 62]
    while time.perf_counter() < deadline and budget[0] > 0:
        better = _improve_once(graph, order, width, deadline, budget)
        if better is not None:
            order = better
        elif width >= len(order):
            break
        else:
            width = min(len(order), width * 3 // 2)
    return order


def _score(graph: Graph, order: Sequence[int]) -> tuple[int, int]:
    """The peak, then how many steps reach it: lowering one of several equal peaks is
    progress towards lowering the peak."""
    steps = step_bytes(graph, order)
    peak = max(steps, default=0)
    return peak, steps.count(peak)


def _improve_once(
    graph: Graph, order: tuple[int, ...], width: int, deadline: float, budget: list[int]
) -> tuple[int, ...] | None:
    """A better order from one window re-solve around a step at the peak, or None."""
    steps = step_bytes(graph, order)
    if not steps:
        return None
    score = _score(graph, order)
    for top in [t for t, used in enumerate(steps) if used == score[0]]:
        for lo in _window_starts(top, len(order), width):
            if time.perf_counter() > deadline or budget[0] <= 0:
                return None
            candidate = _resolve(graph, order, lo, min(len(order), lo + width), deadline, budget)
            if candidate is not None and _score(graph, candidate) < score:
                return candidate
    return None


def _window_starts(top: int, n: int, width: int) -> list[int]:
    starts = [top - width // 2, top - width + 1, top, top - width // 4, top - 3 * width // 4]
    clipped = [min(max(0, s), max(0, n - width)) for s in starts]
    return list(dict.fromkeys(clipped))


def _resolve(
    graph: Graph, order: tuple[int, ...], lo: int, hi: int, deadline: float, budget: list[int]
) -> tuple[int, ...] | None:
    """The order with steps [lo, hi) re-solved, or None when nothing changed; the states
    expanded are taken from `budget` (one mutable count shared by the whole run)."""
    sub, ops = window_graph(graph, order, lo, hi)
    left = max(0.0, deadline - time.perf_counter())
    found = exact_search(
        sub, range(sub.ops), time_limit=left, max_states=min(WINDOW_STATES, budget[0])
    )
    budget[0] -= found.states
    sub_order = found.order
    if list(sub_order) == list(range(sub.ops)):
        return None
    return order[:lo] + tuple(ops[i] for i in sub_order) + order[hi:]


def window_graph(graph: Graph, order: Sequence[int], lo: int, hi: int) -> tuple[Graph, list[int]]:
    """The ops at steps [lo, hi) of `order` as a Graph, and its op i's number in `graph`."""
    ops = list(order[lo:hi])
    local = {v: i for i, v in enumerate(ops)}
    before = set(order[:lo])
    after = set(order[hi:])
    readers = graph.readers()
    creator = {b: v for v, bufs in enumerate(graph.creates) for b in bufs}
    touched = sorted({b for v in ops for b in (*graph.reads[v], *graph.creates[v])})
    ids = {b: i for i, b in enumerate(touched)}

    def made_before(b: int) -> bool:
        return b not in creator or creator[b] in before

    def needed_after(b: int) -> bool:
        return b in graph.live_out or any(r in after for r in readers[b])

    live_in = tuple(ids[b] for b in touched if made_before(b))
    live_out = frozenset(ids[b] for b in touched if needed_after(b))
    base = sum(
        size
        for b, size in enumerate(graph.sizes)
        if b not in ids
        and (b in creator or b in graph.live_in)
        and made_before(b)
        and needed_after(b)
    )
    sub = Graph(
        sizes=tuple(graph.sizes[b] for b in touched),
        creates=tuple(tuple(ids[b] for b in graph.creates[v]) for v in ops),
        reads=tuple(tuple(ids[b] for b in graph.reads[v]) for v in ops),
        preds=tuple(tuple(local[u] for u in set(graph.preds[v]) if u in local) for v in ops),
        live_in=live_in,
        live_out=live_out,
        base_bytes=graph.base_bytes + base,
    )
    return sub, ops
