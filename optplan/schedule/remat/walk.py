"""A second heuristic: run the ops in a given order within the budget, evicting what will
be needed furthest ahead and cheapest to make again, and making it again when needed
(after DTR's dynamic rematerialisation, with the future known). Steps of `evict`:

1. Walk the order. Before op v runs, each input of v not held is made again by running
   its op, whose own missing inputs are made again first (recursively).
2. Before any run, while the bytes held plus the run's new buffers exceed the budget,
   evict the held instance with the least cost / (bytes x steps to its next use) among
   those the run does not read, that are made by an op that may run again, and that
   are not live out. Nothing to evict: no schedule from this order.
3. After v, every instance no later op of the order reads is freed.

Held here is never less than what `schedule.graph.instances` holds for the same steps
(an evicted instance has had its last read), so the steps' peak is within the budget.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from optplan.budget import now, spend
from optplan.schedule.graph import Graph

# The work of running one op in the walk, per tensor it creates.
WALK_WORK = 3e-5


class _Stuck(Exception):
    """Nothing can be evicted (step 2)."""


class _Walk:
    """The state of one walk: what is held, the steps so far."""

    def __init__(
        self,
        graph: Graph,
        order: Sequence[int],
        budget: int,
        recomputable: Sequence[bool],
        deadline: float,
    ) -> None:
        self.graph, self.budget, self.recomputable, self.deadline = (
            graph,
            budget,
            recomputable,
            deadline,
        )
        self.creator = {b: v for v, bufs in enumerate(graph.creates) for b in bufs}
        self.uses: list[list[int]] = [[] for _ in graph.sizes]
        for i, v in enumerate(order):
            for b in graph.reads[v]:
                self.uses[b].append(i)
        self.held: dict[int, int] = {b: graph.sizes[b] for b in graph.live_in}
        self.bytes = graph.base_bytes + sum(self.held.values())
        self.steps: list[int] = []
        self.now = 0

    def next_use(self, b: int) -> int | None:
        uses = self.uses[b]
        i = bisect.bisect_left(uses, self.now)
        return uses[i] if i < len(uses) else None

    def run(self, w: int, pinned: set[int]) -> None:
        """Step 2, then run w (a walk that thrashes, making the same tensors again and
        again, gives up after three runs per op)."""
        if len(self.steps) > 3 * self.graph.ops or now() > self.deadline:
            raise _Stuck
        spend(len(self.graph.creates[w]) * WALK_WORK)
        for b in self.graph.creates[w]:
            self.bytes -= self.held.pop(b, 0)  # a superseded instance had its last read
        new = sum(self.graph.sizes[b] for b in self.graph.creates[w])
        while self.bytes + new > self.budget:
            self._evict(pinned | set(self.graph.reads[w]))
        self.steps.append(w)
        for b in self.graph.creates[w]:
            self.held[b] = self.graph.sizes[b]
        self.bytes += new

    def _evict(self, pinned: set[int]) -> None:
        best: tuple[float, int] | None = None
        for b, size in self.held.items():
            v = self.creator.get(b)
            if (
                b in pinned
                or v is None
                or not self.recomputable[v]
                or b in self.graph.live_out
                or not size
            ):
                continue
            after = self.next_use(b)
            distance = (after - self.now + 1) if after is not None else 1 << 40
            cost = self.graph.costs[v] if self.graph.costs else 1
            score = cost / (size * distance)
            if best is None or score < best[0]:
                best = (score, b)
        if best is None:
            raise _Stuck
        self.bytes -= self.held.pop(best[1])

    def ensure(self, a: int, pinned: set[int], depth: int = 0) -> None:
        """Step 1: make buffer a again (its missing inputs first)."""
        w = self.creator.get(a)
        if w is None or not self.recomputable[w] or depth > 200:
            raise _Stuck
        keep = pinned | set(self.graph.reads[w])
        for x in self.graph.reads[w]:
            if x not in self.held:
                self.ensure(x, keep, depth + 1)
        self.run(w, keep)

    def free_dead(self) -> None:
        """Step 3."""
        for b in list(self.held):
            if b not in self.graph.live_out and self.next_use(b) is None:
                self.bytes -= self.held.pop(b)


def evict(
    graph: Graph, order: Sequence[int], budget: int, recomputable: Sequence[bool], deadline: float
) -> tuple[int, ...] | None:
    """The steps of the module docstring, or None when the walk gets stuck."""
    walk = _Walk(graph, order, budget, recomputable, deadline)
    try:
        for i, v in enumerate(order):
            if now() > deadline:
                return None
            walk.now = i
            pinned = set(graph.reads[v])
            for a in graph.reads[v]:
                if a not in walk.held:
                    walk.ensure(a, pinned)
            walk.run(v, pinned)
            walk.now = i + 1
            walk.free_dead()
    except _Stuck:
        return None
    return tuple(walk.steps)
