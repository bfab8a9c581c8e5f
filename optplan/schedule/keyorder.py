"""A lower bound on the best order's peak over the orders of a few key ops: the min-cut
bound (`bounds`) asked with the order's precedence between several steps at once.

The min-cut bound of op v takes the least held set D before v's step, one op at a
time; different ops may take sets that no one order runs through. Here a few key ops
K are ordered among themselves, and at each of their steps the cut must agree with that
order:

1. Pick K: the ops with the largest per-op bounds, and the ops at the incumbent order's
   fullest steps (ties by op number); the caller tries 8, 16, 24, 32 and 48 of them
   in turn (`KEY_COUNTS`) and keeps the largest bound.
2. In every order, the key ops run one after another; let P be the key ops run before
   key op v. At v's step D holds v's predecessors and every op of P, and none of v or
   the other key ops (nor their descendants), so the step holds at least

       cut(P, v) = base_bytes + made(v) + min { held(D) : D closed under predecessors,
                                            preds(v) + P in D, v + (K - P - v) not in D }

   a minimum s-t cut in the network of `bounds` with those ops tied to the source and
   the sink. It depends on the set P, not on the order within it.
3. So every order's peak is at least the least, over the paths from {} to K through
   the sets of key ops closed under their precedence (one key op a step), of the
   largest cut(P, v) on the path: a bottleneck shortest path, searched cheapest first
   (Dijkstra, a path's cost its largest step). The first full set popped is the bound;
   a path whose cost reaches `cap` (the incumbent's peak) is not followed, since the
   bound need never pass the peak found. Where the work (arcs the max-flows scan) runs
   out first, the cost of the cheapest set not yet expanded is still a bound.

       key ops a, b (unordered in the graph): paths {} -a-> {a} -b-> {a,b}
                                                   {} -b-> {b} -a-> {a,b}
       bound = min( max(cut({}, a), cut({a}, b)), max(cut({}, b), cut({b}, a)) )

With one key op it is the min-cut bound of that op; with two or more it can only be
higher than each of their min-cut bounds.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from optplan.schedule.bounds import Network
from optplan.schedule.tables import Tables, ancestor_masks, unpack

KEY_COUNTS = (8, 16, 24, 32, 48)  # key ops tried in turn: the tuning half (reorder_heldout.csv)
ARCS_PER_STEP = 16  # arcs a max-flow scans in the time the beam makes one state (profiles)


@dataclass(frozen=True, slots=True)
class KeyBound:
    """The key-order bound, whether its search ended (else it stopped on work), the
    key ops and the work spent (search steps: arcs the max-flows scanned over
    `ARCS_PER_STEP`)."""

    bound: int
    complete: bool
    keys: tuple[int, ...]
    work: int


def key_ops(
    per_op: Sequence[int], steps: Sequence[int], order: Sequence[int], count: int
) -> list[int]:
    """Step 1: half of `count` key ops by their per-op bound, the rest by the
    incumbent's step bytes (`steps[t]` of the op `order[t]`), without repeats."""
    by_bound = sorted(range(len(per_op)), key=lambda v: (-per_op[v], v))
    by_step = [order[t] for t in sorted(range(len(order)), key=lambda t: (-steps[t], order[t]))]
    keys: list[int] = []
    for source, wanted in ((by_bound, count // 2), (by_step, count)):
        for v in source:
            if len(keys) >= wanted:
                break
            if v not in keys:
                keys.append(v)
    return keys


def key_order_bound(
    t: Tables, keys: Sequence[int], *, cap: int, work: int, deadline: float = math.inf
) -> KeyBound:
    """Steps 2 and 3 for the key ops `keys`: a proven lower bound on every order's
    peak, at most `cap`. The search stops on `work` (steps, `ARCS_PER_STEP` arcs
    each); `deadline` is an outer guard."""
    keys = list(keys)
    if not keys:
        return KeyBound(min(cap, t.start_held), True, (), 0)
    network = Network(t)
    ancestors = unpack(ancestor_masks(t), t.ops)
    key_preds = [sum(1 << j for j, u in enumerate(keys) if ancestors[v, u]) for v in keys]
    full = (1 << len(keys)) - 1
    spent = 0
    best = {0: 0}
    heap = [(0, 0)]
    while heap:
        cost, mask = heapq.heappop(heap)
        if cost > best.get(mask, cost):
            continue
        if mask == full:
            return KeyBound(min(cap, cost), True, tuple(keys), spent // ARCS_PER_STEP)
        if spent >= work * ARCS_PER_STEP or time.perf_counter() > deadline:
            return KeyBound(min(cap, cost), False, tuple(keys), spent // ARCS_PER_STEP)
        for i, v in enumerate(keys):
            if mask >> i & 1 or key_preds[i] & mask != key_preds[i]:
                continue
            step = _step(t, network, keys, mask, i)
            spent += network.arcs
            after, new = mask | 1 << i, max(cost, step)
            if new < cap and new < best.get(after, cap):
                best[after] = new
                heapq.heappush(heap, (new, after))
    return KeyBound(cap, True, tuple(keys), spent // ARCS_PER_STEP)


def _step(t: Tables, network: Network, keys: list[int], mask: int, i: int) -> int:
    """cut(P, v) of the module docstring, P the key ops in `mask`, v = keys[i]."""
    v = keys[i]
    before = [keys[j] for j in range(len(keys)) if mask >> j & 1]
    after = [keys[j] for j in range(len(keys)) if not mask >> j & 1]  # v among them
    preds = t.pred_idx[t.pred_ptr[v] : t.pred_ptr[v + 1]].tolist()
    sources = np.array(sorted(set(preds) | set(before)), dtype=np.int64)
    sinks = np.array(after, dtype=np.int64)
    return t.base_bytes + int(t.made[v]) + network.held(t, sources, sinks)
