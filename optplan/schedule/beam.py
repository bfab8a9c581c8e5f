"""Beam search over the sets of ops run, forwards from the first step or backwards from
the last, in widening rounds: good orders on graphs too large to search exactly.

What is held between steps depends only on the set of ops run so far (`exact`), so an
order is a path through sets; the beam keeps, at every depth, the `width` best sets.

1. Forwards, a state is the set D of ops run; its successors run one ready op v (every
   predecessor in D): the step holds held(D) plus what v makes, and held(D + v) frees
   every buffer whose last reader was v (or that v made and nobody reads).
2. Backwards, a state is the set R of ops still to run before the steps already chosen
   (the order's suffix); its successors choose which op v of R runs last among them (no
   successor of v in R). The step of v holds held(R - v) plus what v makes. Backwards
   the beam decides the end of the order first, where the peak of most training and
   layered graphs lies, while it still holds many alternatives.
3. A state's rank is the largest step on its path, then what it holds now. Children of
   all states are ranked together; of several paths to one set (same hash of its ops)
   the best is kept, then the `width` best sets survive. Ties keep the order in which
   children were made, so a run is a function of the graph and the width alone.
4. `beam_orders` runs widths 1, 4, 16, ... both ways while the work budget (children
   made) and the time allow, and keeps the best order; each round's work is known
   before it starts from the last round's, so a round that would overrun the budget is
   not begun and the result does not depend on the machine. Without a budget, a round
   is not begun when the last round's pace says it would end after the deadline.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from optplan.planners.jit import njit
from optplan.schedule.tables import Tables

UNLIMITED = 1 << 62  # a work budget that never runs out


@dataclass(frozen=True, slots=True)
class Beamed:
    """What `beam_orders` found: the best order and its peak, the work it spent, its
    pace (seconds per state of its widest run), the widest width it completed and the
    directions still worth running (False: backwards, True: forwards)."""

    order: tuple[int, ...]
    peak: int
    work: int
    pace: float
    widest: int
    directions: tuple[bool, ...]


def beam_orders(
    t: Tables,
    incumbent: Sequence[int],
    incumbent_peak: int,
    *,
    work: int,
    deadline: float,
    widths: Sequence[int] = (),
    bound: int = 0,
    pace: float = 0.0,
    directions: Sequence[bool] = (False, True),
) -> Beamed:
    """The best order: the incumbent unless a beam run beats it. Stops once an order
    meets `bound` (a proven lower bound: nothing can beat it). `pace` is seconds per
    state of the widest run so far, handed from call to call.

    From width 64 on, a direction whose last run did worse than the other's is dropped
    (a run that beats nothing counts as worst): on graphs whose peak lies at the end the
    forward beam never wins, and it would take half of the time."""
    best, best_peak, spent, widest = tuple(incumbent), incumbent_peak, 0, 0
    per_state = 0.0
    timed = work >= UNLIMITED  # no budget: a round that cannot end in time is not begun
    directions = list(directions)
    for width in widths or _widths():
        results = {}
        for forward in directions:
            if best_peak <= bound or (per_state and spent + per_state * width * t.ops > work):
                return Beamed(best, best_peak, spent, pace, widest, tuple(directions))
            if timed and time.perf_counter() + pace * width * t.ops > deadline:
                return Beamed(best, best_peak, spent, pace, widest, tuple(directions))
            began = time.perf_counter()
            found, peak, made = beam(t, width, forward, best_peak, deadline)
            spent += made
            per_state = max(per_state, made / max(1, width * t.ops))
            # The pace of the widest run so far: narrow runs are dominated by fixed costs.
            pace = (time.perf_counter() - began) / max(1, width * t.ops)
            results[forward] = peak if found is not None else 1 << 62
            if found is not None and peak < best_peak:
                best, best_peak = found, peak
            if time.perf_counter() > deadline or spent >= work:
                return Beamed(best, best_peak, spent, pace, widest, tuple(directions))
        widest = width
        if width >= 64 and len(results) == 2 and results[False] != results[True]:
            directions = [min(results, key=lambda d: results[d])]
    return Beamed(best, best_peak, spent, pace, widest, tuple(directions))


def _widths() -> list[int]:
    return [4**k for k in range(12)]


def beam(
    t: Tables, width: int, forward: bool, below: int, deadline: float
) -> tuple[tuple[int, ...] | None, int, int]:
    """One beam run: (an order peaking below `below`, or None; its peak; children made)."""
    n, words = t.ops, t.words
    masks = np.zeros((1, words), dtype=np.uint64)
    if not forward:
        for v in range(n):
            masks[0, v >> 6] |= np.uint64(1) << np.uint64(v & 63)
    ready = _initial_ready(t, masks[0], forward)[None, :]
    costs = np.zeros(1, dtype=np.int64)
    helds = np.array([t.start_held if forward else t.end_held], dtype=np.int64)
    hashes = np.zeros(1, dtype=np.uint64)
    parents = np.zeros((max(n, 1), width), dtype=np.int32)
    chosen = np.zeros((max(n, 1), width), dtype=np.int32)
    made = 0
    for depth in range(n):
        if depth % 16 == 15 and time.perf_counter() > deadline:
            return None, below, made
        masks, ready, costs, helds, hashes, count = _step(
            forward, width, below, depth, masks, ready, costs, helds, hashes, parents, chosen,
            t.pred_mask, t.succ_mask, t.pred_ptr, t.pred_idx, t.succ_ptr, t.succ_idx, t.made,
            t.sizes, t.live_out, t.reader_mask, t.creates_ptr, t.creates_idx, t.reads_ptr,
            t.reads_idx, t.zobrist,
        )  # fmt: skip
        made += count
        if len(costs) == 0:
            return None, below, made
    if n == 0:
        return (), max(t.start_held, t.end_held), made
    order = _path(parents, chosen, n)
    return (order if forward else order[::-1]), int(costs[0]), made


def _initial_ready(t: Tables, mask: np.ndarray, forward: bool) -> np.ndarray:
    """Forwards: ops with no predecessor; backwards: ops with no successor."""
    ready = np.zeros(t.words, dtype=np.uint64)
    ptr = t.pred_ptr if forward else t.succ_ptr
    for v in range(t.ops):
        if ptr[v + 1] == ptr[v]:
            ready[v >> 6] |= np.uint64(1) << np.uint64(v & 63)
    return ready


def _path(parents: np.ndarray, chosen: np.ndarray, n: int) -> tuple[int, ...]:
    """The ops chosen along the best state's path (state 0 at the last depth)."""
    out = []
    k = 0
    for depth in range(n - 1, -1, -1):
        out.append(int(chosen[depth, k]))
        k = int(parents[depth, k])
    return tuple(reversed(out))


def _step(
    forward, width, below, depth, masks, ready, costs, helds, hashes, parents, chosen,
    pred_mask, succ_mask, pred_ptr, pred_idx, succ_ptr, succ_idx, made, sizes, live_out,
    reader_mask, creates_ptr, creates_idx, reads_ptr, reads_idx, zobrist,
):  # fmt: skip
    """One depth of the beam: every child of every state, ranked; the best `width`
    distinct sets survive (module docstring, step 3). Returns the new states and the
    number of children made."""
    c_parent, c_op, c_cost, c_held, c_hash, total = _children(
        forward, below, masks, ready, costs, helds, hashes, made, sizes, live_out, reader_mask,
        creates_ptr, creates_idx, reads_ptr, reads_idx, zobrist,
    )  # fmt: skip
    keep = _survivors(c_cost, c_held, c_hash, width)
    states = _advance(
        forward, depth, keep, c_parent, c_op, masks, ready, parents, chosen, pred_mask,
        succ_mask, pred_ptr, pred_idx, succ_ptr, succ_idx,
    )  # fmt: skip
    return (*states, c_cost[keep], c_held[keep], c_hash[keep], total)


@njit(cache=True)
def _children(
    forward, below, masks, ready, costs, helds, hashes, made, sizes, live_out, reader_mask,
    creates_ptr, creates_idx, reads_ptr, reads_idx, zobrist,
):  # fmt: skip
    """Every child of every state below `below`: (parent, op, cost, held, hash) arrays
    and how many children were looked at (module docstring, steps 1 and 2)."""
    states, words = masks.shape
    total = 0
    for s in range(states):
        for w in range(words):
            total += _popcount(ready[s, w])
    c_parent = np.empty(total, dtype=np.int32)
    c_op = np.empty(total, dtype=np.int32)
    c_cost = np.empty(total, dtype=np.int64)
    c_held = np.empty(total, dtype=np.int64)
    c_hash = np.empty(total, dtype=np.uint64)
    k = 0
    for s in range(states):
        mask = masks[s]
        for w in range(words):
            bits = ready[s, w]
            while bits:
                low = bits & (~bits + np.uint64(1))
                v = w * 64 + _popcount(low - np.uint64(1))
                bits ^= low
                if forward:
                    freed = _freed(
                        v, mask, sizes, live_out, reader_mask, creates_ptr, creates_idx,
                        reads_ptr, reads_idx,
                    )  # fmt: skip
                    after = helds[s] + made[v] - freed
                    step = helds[s] + made[v]
                else:
                    after = helds[s] + _unheld(
                        v, mask, sizes, live_out, reader_mask, creates_ptr, creates_idx,
                        reads_ptr, reads_idx,
                    )  # fmt: skip
                    step = after + made[v]
                cost = max(costs[s], step)
                if cost >= below:
                    continue
                c_parent[k], c_op[k], c_cost[k], c_held[k] = s, v, cost, after
                c_hash[k] = hashes[s] ^ zobrist[v]
                k += 1
    return c_parent[:k], c_op[:k], c_cost[:k], c_held[:k], c_hash[:k], total


@njit(cache=True)
def _freed(v, mask, sizes, live_out, reader_mask, creates_ptr, creates_idx, reads_ptr, reads_idx):
    """Forwards: bytes freed once v has run after the set `mask` (its last reads, and
    what it makes that nobody reads)."""
    freed = 0
    for i in range(reads_ptr[v], reads_ptr[v + 1]):
        b = reads_idx[i]
        if not live_out[b] and _covered(reader_mask[b], mask, v):
            freed += sizes[b]
    for i in range(creates_ptr[v], creates_ptr[v + 1]):
        b = creates_idx[i]
        if not live_out[b] and _covered(reader_mask[b], mask, v):
            freed += sizes[b]
    return freed


@njit(cache=True)
def _unheld(v, mask, sizes, live_out, reader_mask, creates_ptr, creates_idx, reads_ptr, reads_idx):
    """Backwards: held(R - v) - held(R), R = `mask`: v's own buffers held in R are
    no longer made; its reads all of whose readers are in R were not held and now are."""
    change = 0
    for i in range(creates_ptr[v], creates_ptr[v + 1]):
        b = creates_idx[i]
        if live_out[b] or not _within(reader_mask[b], mask):
            change -= sizes[b]
    for i in range(reads_ptr[v], reads_ptr[v + 1]):
        b = reads_idx[i]
        if not live_out[b] and _within(reader_mask[b], mask):
            change += sizes[b]
    return change


@njit(cache=True)
def _survivors(c_cost, c_held, c_hash, width):
    """Indices of the best `width` children by (cost, held), one per set (hash); ties
    in the order the children were made."""
    k = len(c_cost)
    rank = np.argsort(c_held, kind="mergesort")
    rank = rank[np.argsort(c_cost[rank], kind="mergesort")]
    size = 1
    while size < 2 * k + 2:
        size *= 2
    table = np.zeros(size, dtype=np.uint64)
    used = np.zeros(size, dtype=np.bool_)
    keep = np.empty(min(k, width), dtype=np.int64)
    kept = 0
    for r in rank:
        if kept == width:
            break
        h = c_hash[r]
        slot = np.int64(h & np.uint64(size - 1))
        seen = False
        while used[slot]:
            if table[slot] == h:
                seen = True
                break
            slot = (slot + 1) & (size - 1)
        if not seen:
            used[slot] = True
            table[slot] = h
            keep[kept] = r
            kept += 1
    return keep[:kept]


@njit(cache=True)
def _advance(
    forward, depth, keep, c_parent, c_op, masks, ready, parents, chosen, pred_mask, succ_mask,
    pred_ptr, pred_idx, succ_ptr, succ_idx,
):  # fmt: skip
    """The surviving children's sets and ready ops; their parents and ops are recorded
    at `depth` for the path back."""
    kept, words = len(keep), masks.shape[1]
    new_masks = np.empty((kept, words), dtype=np.uint64)
    new_ready = np.empty((kept, words), dtype=np.uint64)
    for j in range(kept):
        s, v = c_parent[keep[j]], c_op[keep[j]]
        parents[depth, j], chosen[depth, j] = s, v
        bit = np.uint64(1) << np.uint64(v & 63)
        new_masks[j] = masks[s]
        new_ready[j] = ready[s]
        new_ready[j, v >> 6] &= ~bit
        if forward:
            new_masks[j, v >> 6] |= bit
            for i in range(succ_ptr[v], succ_ptr[v + 1]):
                x = succ_idx[i]
                if _within(pred_mask[x], new_masks[j]):
                    new_ready[j, x >> 6] |= np.uint64(1) << np.uint64(x & 63)
        else:
            new_masks[j, v >> 6] &= ~bit
            for i in range(pred_ptr[v], pred_ptr[v + 1]):
                x = pred_idx[i]
                if _disjoint(succ_mask[x], new_masks[j]):
                    new_ready[j, x >> 6] |= np.uint64(1) << np.uint64(x & 63)
    return new_masks, new_ready


@njit(cache=True)
def _popcount(x):
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return np.int64((x * np.uint64(0x0101010101010101)) >> np.uint64(56))


@njit(cache=True)
def _within(sub, mask):
    """Whether every op of `sub` is in `mask`."""
    for w in range(sub.shape[0]):
        if sub[w] & ~mask[w]:
            return False
    return True


@njit(cache=True)
def _disjoint(a, b):
    for w in range(a.shape[0]):
        if a[w] & b[w]:
            return False
    return True


@njit(cache=True)
def _covered(sub, mask, v):
    """Whether every op of `sub` is in `mask` or is `v`."""
    vw = v >> 6
    vbit = np.uint64(1) << np.uint64(v & 63)
    for w in range(sub.shape[0]):
        rest = sub[w] & ~mask[w]
        if w == vw:
            rest &= ~vbit
        if rest:
            return False
    return True


def warm_kernels() -> None:
    """Compile the kernels: one run each way on a graph of three ops."""
    from optplan.schedule.graph import Graph
    from optplan.schedule.tables import tables

    graph = Graph(
        sizes=(2, 1, 3),
        creates=((0,), (1,), (2,)),
        reads=((), (0,), (0, 1)),
        preds=((), (0,), (0, 1)),
    )
    t = tables(graph)
    for forward in (True, False):
        beam(t, 2, forward, 1 << 40, time.perf_counter() + 60)
