"""First-run orders drawn at random, for the heuristics beside the orders searched.

The peak heuristic keeps an order's first runs and adds runs again; which budgets it
meets, and at what extra compute, depends on that order in ways its peak does not show.
On TVM's attention training step at half its peak, every heuristic stops at 52.7 % from
the searched orders, yet from about one order in a hundred drawn here it meets 50 %;
on the MLP training step at 90 and 80 % the searched orders give +8.4 and +16.8 % extra
compute (optimal in the exact model's stage spaces), orders drawn here +2.0 and +2.8 %.
The orders that do well run soon the ops whose run frees a large tensor, whatever their
peak. So each ready op is drawn with weight one plus the bytes its run frees beyond
those it makes, in units of a quarter of the mean tensor. The draws are seeded: the
same graph gives the same orders.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from optplan.schedule.graph import Graph

REPEATS = 100  # draws in a row that give no new order, after which the orders end


def freeing_orders(graph: Graph, seed: int = 0) -> Iterator[tuple[int, ...]]:
    """Orders of the graph's first runs, drawn as the module docstring says, each once,
    until `REPEATS` draws in a row give none new (none where the graph's order has a
    cycle)."""
    rng = random.Random(seed)
    users: list[set[int]] = [set() for _ in range(graph.ops)]
    for v, preds in enumerate(graph.preds):
        for u in preds:
            users[u].add(v)
    readers = [len(ops) for ops in graph.readers()]
    sized = [s for s in graph.sizes if s > 0]
    unit = max(1.0, sum(sized) / len(sized) / 4) if sized else 1.0
    seen: set[tuple[int, ...]] = set()
    again = 0  # draws in a row of orders given before: a small graph has few
    while again < REPEATS:
        order = _draw(graph, rng, users, readers, unit)
        if len(order) < graph.ops:
            return
        if order in seen:
            again += 1
            continue
        again = 0
        seen.add(order)
        yield order


def _draw(
    graph: Graph, rng: random.Random, users: list[set[int]], readers: list[int], unit: float
) -> tuple[int, ...]:
    waiting = [len(set(preds)) for preds in graph.preds]
    ready = [v for v in range(graph.ops) if not waiting[v]]
    left = list(readers)  # per buffer, its readers not yet drawn
    order: list[int] = []
    while ready:
        weights = []
        for v in ready:
            freed = sum(
                graph.sizes[b] for b in graph.reads[v] if left[b] == 1 and b not in graph.live_out
            )
            made = sum(graph.sizes[b] for b in graph.creates[v])
            weights.append(1.0 + max(0, freed - made) / unit)
        v = ready.pop(rng.choices(range(len(ready)), weights=weights)[0])
        order.append(v)
        for b in graph.reads[v]:
            left[b] -= 1
        for w in users[v]:
            waiting[w] -= 1
            if not waiting[w]:
                ready.append(w)
    return tuple(order)
