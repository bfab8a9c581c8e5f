"""Quick orders: the program's own, and three greedy topological orders after PyTorch
Inductor's `reorder_for_peak_memory` (LPMF, BFS, DFS), which are the baselines.

- `program_order`: ops as written.
- `lpmf` (least peak memory first): keep the ops whose predecessors have all run; run the
  one whose step needs the least memory (held bytes plus its new buffers), then the one
  that frees the most, then the earliest written.
- `bfs`: ops by level (one more than their deepest predecessor), earliest written first
  within a level: every branch advances together.
- `dfs`: from each sink in written order, run an op's missing predecessors depth first,
  the predecessor whose subgraph makes the most bytes first, so the big branch finishes
  (and frees) before the next one starts.
"""

from __future__ import annotations

import heapq

import numpy as np

from optplan.schedule.graph import Graph
from optplan.schedule.tables import ancestor_masks, tables, unpack


def program_order(graph: Graph) -> tuple[int, ...]:
    return tuple(range(graph.ops))


def lpmf(graph: Graph) -> tuple[int, ...]:
    readers = graph.readers()
    left = [len(r) for r in readers]
    waiting = [len(set(p)) for p in graph.preds]
    succs = graph.succs()
    ready = {v for v in range(graph.ops) if waiting[v] == 0}
    held = 0
    order: list[int] = []
    while ready:
        v = min(ready, key=lambda u: _lpmf_key(graph, u, held, left))
        ready.remove(v)
        order.append(v)
        held += sum(graph.sizes[b] for b in graph.creates[v])
        for b in set(graph.reads[v]):
            left[b] -= 1
        for b in set(graph.reads[v]) | set(graph.creates[v]):
            if left[b] == 0 and b not in graph.live_out:
                held -= graph.sizes[b]
                left[b] = -1
        for w in set(succs[v]):
            waiting[w] -= 1
            if waiting[w] == 0:
                ready.add(w)
    return tuple(order)


def _lpmf_key(graph: Graph, v: int, held: int, left: list[int]) -> tuple[int, int, int]:
    made = sum(graph.sizes[b] for b in graph.creates[v])
    freed = sum(graph.sizes[b] for b in graph.reads[v] if left[b] == 1 and b not in graph.live_out)
    return (held + made, made - freed, v)


def bfs(graph: Graph) -> tuple[int, ...]:
    level = [0] * graph.ops
    for v in _kahn(graph):
        level[v] = max((level[u] + 1 for u in graph.preds[v]), default=0)
    return tuple(sorted(range(graph.ops), key=lambda v: (level[v], v)))


def dfs(graph: Graph) -> tuple[int, ...]:
    weight = _subgraph_bytes(graph)
    done = [False] * graph.ops
    order: list[int] = []
    succs = graph.succs()
    sinks = [v for v in range(graph.ops) if not succs[v]]
    for sink in sinks:
        stack = [(sink, False)]
        while stack:
            v, expanded = stack.pop()
            if done[v]:
                continue
            if expanded:
                done[v] = True
                order.append(v)
                continue
            stack.append((v, True))
            # Pushed lightest first, so the heaviest predecessor is run first.
            for u in sorted(set(graph.preds[v]), key=lambda u: (weight[u], -u)):
                if not done[u]:
                    stack.append((u, False))
    return tuple(order)


def _subgraph_bytes(graph: Graph) -> list[int]:
    """Bytes made by each op and all its ancestors (ancestors as bit sets: no set per op
    grows with the op count)."""
    t = tables(graph)
    if t.ops == 0:
        return []
    ancestors = unpack(ancestor_masks(t), t.ops)
    return [int(x) for x in t.made + ancestors.astype(np.int64) @ t.made]


def _kahn(graph: Graph) -> list[int]:
    """A topological order, earliest written first among ready ops."""
    waiting = [len(set(p)) for p in graph.preds]
    succs = graph.succs()
    ready = [v for v in range(graph.ops) if waiting[v] == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        v = heapq.heappop(ready)
        order.append(v)
        for w in set(succs[v]):
            waiting[w] -= 1
            if waiting[w] == 0:
                heapq.heappush(ready, w)
    return order
