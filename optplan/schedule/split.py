"""Divide and conquer for the exact search: solve the stretches between cut ops apart.

An op is a cut when every other op is its ancestor or its descendant: it has the same
step in every valid order, and the ops between two cuts are the same set in every valid
order. So:

1. Find the cuts and their steps (the number of their ancestors).
2. Cut any valid order at them into windows [lo, hi), each ending at a cut (the last one
   ends at the end). What is held on entering a window depends only on the set of ops
   before it, so each window is a `Graph` of its own (`window_graph`).
3. Solve every window with the exact search, sharing the time among the windows left.
4. The order is the windows' orders one after the other; its peak, and a proven bound on
   the optimum, are the largest of the windows'. It is optimal when every window is.

       ops:   a b c | D | e f g h | I | j k      D and I are cuts
       steps: 0 1 2   3   4 5 6 7   8   9 10
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from optplan.schedule.exact import exact_search
from optplan.schedule.graph import Graph, closure, peak_bytes
from optplan.schedule.improve import window_graph


def windows(graph: Graph) -> list[tuple[int, int]]:
    """The windows [lo, hi) of steps between cuts, in step order (steps 1 and 2)."""
    n = graph.ops
    ancestors = closure(graph.preds)
    descendants = closure(graph.succs())
    cuts = sorted(len(ancestors[v]) for v in range(n) if len(ancestors[v]) + len(descendants[v]) + 1 == n)
    out, lo = [], 0
    for step in cuts:
        if step >= lo:
            out.append((lo, step + 1))
            lo = step + 1
    if lo < n:
        out.append((lo, n))
    return out


def exact_split(
    graph: Graph, start: Sequence[int], *, time_limit: float, max_states: int
) -> tuple[tuple[int, ...], int, bool, int]:
    """(order, peak, proven optimal, proven lower bound on the optimal peak)."""
    order = tuple(start)
    parts = windows(graph)
    if len(parts) <= 1:
        return exact_search(graph, order, time_limit=time_limit, max_states=max_states)
    deadline = time.perf_counter() + time_limit
    pieces: list[int] = []
    proven, bound = True, 0
    for index, (lo, hi) in enumerate(parts):
        sub, ops = window_graph(graph, order, lo, hi)
        share = max(0.01, (deadline - time.perf_counter()) / (len(parts) - index))
        sub_order, _, sub_proven, sub_bound = exact_search(sub, range(sub.ops), time_limit=share, max_states=max_states)
        pieces.extend(ops[i] for i in sub_order)
        proven = proven and sub_proven
        bound = max(bound, sub_bound)
    found = tuple(pieces)
    return found, peak_bytes(graph, found), proven, bound
