"""Every schedule of a small graph at once: the least extra compute of any schedule
within a budget, however often it runs each op, or a proof that none fits.

A state is what holds after some step: the buffers held (each one's latest instance)
and the ops run at least once. Steps:

1. From a state, op v may run when its reads are held and, for its first run, the ops
   before it in the graph's order have run (an op not recomputable runs once).
2. Before v runs, held buffers other than its reads may be freed. The step holds what
   is kept, the instances v reads and v's new buffers (`schedule.graph.instances`
   counts an old instance v reads beside v's new one of the same buffer); it must fit
   the budget. A state is no better than one with the same ops run, more buffers held
   and no more extra compute (what the first does, the second does after freeing), so
   only the largest sets that fit are kept: one per least set of buffers to free.
3. States are taken cheapest first (Dijkstra on the extra compute); one no better than
   a state already found is dropped. The first with every op run and the live-out
   buffers held ends the search: its steps are a schedule of the least extra compute
   of all whose every step holds at most the budget. Every arena of a schedule holds
   at least that, so no schedule that packs within the budget costs less.
4. A search that runs out of states has proven that no schedule fits the budget.

The answer holds only for a search run to its end: at `work` states taken or at the
deadline it stops and proves nothing. On the benchmarks' CNN training step (21 ops) at
half its peak it ends in 899 states, where the heuristics and the exact model found
nothing in 15 s; on TVM's attention step (65 ops) it does not end in 30 s, and on
MOCCASIN's random graphs the orders of the first runs alone are too many.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Sequence
from dataclasses import dataclass

from optplan.schedule.graph import Graph

WORK = 200_000  # states taken, at most


@dataclass(frozen=True, slots=True)
class Exhausted:
    """A search run to its end: `steps`, a schedule of the least extra compute `cost`
    within the budget, or None where no schedule fits; `states`, the states taken."""

    steps: tuple[int, ...] | None
    cost: int
    states: int


@dataclass(frozen=True, slots=True)
class _Masks:
    """The graph as bit masks: each op's reads, new buffers and predecessors."""

    reads: tuple[int, ...]
    outs: tuple[int, ...]
    preds: tuple[int, ...]
    sizes: tuple[int, ...]
    costs: tuple[int, ...]
    allowed: tuple[bool, ...]

    def bytes(self, mask: int) -> int:
        return sum(self.sizes[b] for b in _bits(mask))


def every_schedule(
    graph: Graph, budget: int, recomputable: Sequence[bool], deadline: float, work: int = WORK
) -> Exhausted | None:
    """The search of the module docstring, or None where it stopped before its end."""
    masks = _masks(graph, recomputable)
    room = budget - graph.base_bytes
    full, live_out = (1 << graph.ops) - 1, _mask(graph.live_out)
    start = (_mask(graph.live_in), 0)
    came: dict[tuple[int, int], tuple[tuple[int, int], int] | None] = {start: None}
    kept: dict[int, list[tuple[int, int]]] = {0: [(start[0], 0)]}  # ops run -> (held, cost)
    heap = [(0, start)]
    taken = 0
    while heap:
        cost, state = heapq.heappop(heap)
        held, done = state
        if (held, cost) not in kept.get(done, ()):
            continue  # a better state replaced it
        taken += 1
        if taken > work or time.perf_counter() > deadline:
            return None
        if done == full and held & live_out == live_out:
            return Exhausted(_steps(came, state), cost, taken)
        # Buffers live in are held at the first step, read or not.
        for v, after, extra in _moves(masks, held, done, room, start[0] if not done else 0):
            found = (after, done | 1 << v)
            if _better(kept, found, cost + extra):
                came[found] = (state, v)
                heapq.heappush(heap, (cost + extra, found))
    return Exhausted(None, 0, taken)


def _moves(masks: _Masks, held: int, done: int, room: int, pinned: int) -> list[tuple[int, int, int]]:
    """Steps 1 and 2 from one state: (op, buffers held after it, its extra compute); the
    `pinned` buffers may not be freed before it."""
    moves = []
    for v, reads in enumerate(masks.reads):
        first = not done >> v & 1
        if reads & held != reads or (first and masks.preds[v] & done != masks.preds[v]):
            continue
        if not first and not masks.allowed[v]:
            continue
        outs = masks.outs[v]
        kept = reads | (held & pinned)
        spare = held & ~kept & ~outs
        over = masks.bytes(spare | kept) + masks.bytes(outs) - room
        if masks.bytes(kept) + masks.bytes(outs) > room:
            continue
        extra = 0 if first else masks.costs[v]
        for freed in _least_sets(masks, spare, over):
            moves.append((v, (spare & ~freed) | kept | outs, extra))
    return moves


def _least_sets(masks: _Masks, spare: int, over: int) -> list[int]:
    """Every least set of the buffers in `spare` whose bytes reach `over` (no buffer of it
    may stay): the empty set where nothing need be freed."""
    if over <= 0:
        return [0]
    items = sorted(_bits(spare), key=lambda b: -masks.sizes[b])
    left = [0] * (len(items) + 1)
    for i in range(len(items) - 1, -1, -1):
        left[i] = left[i + 1] + masks.sizes[items[i]]
    found: list[int] = []

    def choose(i: int, chosen: list[int], total: int) -> None:
        if total >= over:
            if all(total - masks.sizes[b] < over for b in chosen):
                found.append(_mask(chosen))
            return
        if i == len(items) or total + left[i] < over:
            return
        chosen.append(items[i])
        choose(i + 1, chosen, total + masks.sizes[items[i]])
        chosen.pop()
        choose(i + 1, chosen, total)

    choose(0, [], 0)
    return found


def _better(kept: dict[int, list[tuple[int, int]]], state: tuple[int, int], cost: int) -> bool:
    """Whether `state` at `cost` is no worse than every kept state with its ops run
    (step 3); if so it is kept, and those it is better than are dropped."""
    held, done = state
    others = kept.get(done, [])
    if any(other & held == held and paid <= cost for other, paid in others):
        return False
    kept[done] = [(other, paid) for other, paid in others if not (held & other == other and cost <= paid)]
    kept[done].append((held, cost))
    return True


def _steps(came: dict[tuple[int, int], tuple[tuple[int, int], int] | None], state: tuple[int, int]) -> tuple[int, ...]:
    steps = []
    link = came[state]
    while link is not None:
        state, v = link
        steps.append(v)
        link = came[state]
    return tuple(reversed(steps))


def _masks(graph: Graph, recomputable: Sequence[bool]) -> _Masks:
    return _Masks(
        tuple(_mask(reads) for reads in graph.reads),
        tuple(_mask(outs) for outs in graph.creates),
        tuple(_mask(preds) for preds in graph.preds),
        graph.sizes,
        graph.costs or (1,) * graph.ops,
        tuple(recomputable),
    )


def _mask(items: Sequence[int] | frozenset[int]) -> int:
    mask = 0
    for item in items:
        mask |= 1 << item
    return mask


def _bits(mask: int) -> list[int]:
    out, b = [], 0
    while mask:
        if mask & 1:
            out.append(b)
        mask >>= 1
        b += 1
    return out
