"""Divide and conquer for the exact search: solve the stretches between cut ops apart.

An op is a cut when every other op is its ancestor or its descendant: it has the same
step in every valid order, and the ops between two cuts are the same set in every valid
order. So:

1. Find the cuts and their steps (the number of their ancestors).
2. Cut any valid order at them into windows [lo, hi), each ending at a cut (the last one
   ends at the end). What is held on entering a window depends only on the set of ops
   before it, so each window is a `Graph` of its own (`window_graph`).
3. Solve every window with the exact search. The work (states) and the time are shared
   among the windows left in proportion to their ops, so a window of one op does not
   take a third of the time from one of 248. The per-op bounds of the whole graph hold
   in every window (a window's steps hold what they hold in the whole order).
4. The order is the windows' orders one after the other; its peak, and a proven bound on
   the optimum, are the largest of the windows'. It is optimal when every window is.

       ops:   a b c | D | e f g h | I | j k      D and I are cuts
       steps: 0 1 2   3   4 5 6 7   8   9 10
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from optplan.schedule.exact import Found, exact_search
from optplan.schedule.graph import Graph, peak_bytes
from optplan.schedule.improve import window_graph
from optplan.schedule.tables import ancestor_masks, descendant_masks, tables


def windows(graph: Graph) -> list[tuple[int, int]]:
    """The windows [lo, hi) of steps between cuts, in step order (steps 1 and 2); the
    ancestor and descendant counts come from bit sets (`tables`), not Python sets."""
    n = graph.ops
    t = tables(graph)
    before = _counts(ancestor_masks(t), n)
    after = _counts(descendant_masks(t), n)
    cuts = sorted(int(before[v]) for v in range(n) if before[v] + after[v] + 1 == n)
    out, lo = [], 0
    for step in cuts:
        if step >= lo:
            out.append((lo, step + 1))
            lo = step + 1
    if lo < n:
        out.append((lo, n))
    return out


def _counts(masks: np.ndarray, n: int) -> np.ndarray:
    """How many ops each bit set holds."""
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    as_bytes = masks.astype("<u8").view(np.uint8).reshape(masks.shape[0], -1)
    return np.unpackbits(as_bytes, axis=1).sum(axis=1)


def exact_split(
    graph: Graph,
    start: Sequence[int],
    *,
    time_limit: float,
    max_states: int,
    bounds: Sequence[int] | None = None,
) -> Found:
    """The exact search window by window (module docstring); `bounds` as `exact_search`."""
    order = tuple(start)
    parts = windows(graph)
    if len(parts) <= 1:
        return exact_search(
            graph, order, time_limit=time_limit, max_states=max_states, bounds=bounds
        )
    deadline = time.perf_counter() + time_limit
    pieces: list[int] = []
    proven, bound, states = True, 0, 0
    for index, (lo, hi) in enumerate(parts):
        sub, ops = window_graph(graph, order, lo, hi)
        share = (hi - lo) / (graph.ops - lo)
        found = exact_search(
            sub,
            range(sub.ops),
            time_limit=max(0.01, share * (deadline - time.perf_counter())),
            max_states=max(1, int(share * (max_states - states))),
            bounds=None if bounds is None else [bounds[v] for v in ops],
        )
        states += found.states
        pieces.extend(ops[i] for i in found.order)
        proven = proven and found.proven
        bound = max(bound, found.bound)
    order = tuple(pieces)
    return Found(order, peak_bytes(graph, order), proven, bound, states)
