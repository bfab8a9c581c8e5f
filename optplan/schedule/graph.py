"""The scheduling problem of one block: ops, the buffers they make and read, and the
order constraints between them; and the peak memory of an order.

A `Graph` knows no IR (the reorder pass builds it), as a `Problem` knows none. Ops are
numbered 0..n-1 in program order, buffers 0..m-1. Memory of an order, step by step:

1. Before the first op, the buffers in `live_in` are held (made before the block) and
   `base_bytes` more that are live across the whole block whatever the order.
2. At step t the op `order[t]` runs: every held buffer is still held, and the op's own
   new buffers (`creates`) take their bytes too. That sum is the step's memory.
3. After step t, a buffer whose last reader has run is freed, unless it is in
   `live_out` (read after the block). A buffer nobody reads in the block and that is not
   live out is freed right after the op that made it.

       step:      0      1      2      3
       op:        a      b      c      d       a makes x; b, d read x; c makes y
       x:         [===========================]  x is live over [0, 4)
       y:                       [==]            y (never read) over [2, 3)

The peak is the most memory at any step. This is the live-bytes bound of the reordered
block as `optplan.problem.lower_bound` counts it: a tensor defined at d and last read at u
is live over [d, u + 1).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from optplan.problem import Buffer, Interval, Problem


@dataclass(frozen=True, slots=True)
class Graph:
    """One block to schedule.

    - `sizes[b]`: bytes of buffer b; `names[b]` its name (for messages).
    - `creates[v]` / `reads[v]`: buffers op v makes / reads (views make none and read
      their source's buffers).
    - `preds[v]`: ops that must run before v (data, in-place and effect order).
    - `live_in`: buffers made before the block and read in it (or live out: one neither
      read nor live out belongs in `base_bytes`); `live_out`: buffers read after the
      block (held to its end); `base_bytes`: bytes live across the whole block
      that no op in it reads.
    - `labels[v]`: the op's name (for messages).
    - `costs[v]`: what running op v once costs (compute time in any unit, e.g. the
      `cost_cpu` of Checkmate's graphs); empty when unknown. Recomputation minimises it.
    """

    sizes: tuple[int, ...]
    creates: tuple[tuple[int, ...], ...]
    reads: tuple[tuple[int, ...], ...]
    preds: tuple[tuple[int, ...], ...]
    live_in: tuple[int, ...] = ()
    live_out: frozenset[int] = frozenset()
    base_bytes: int = 0
    names: tuple[str, ...] = ()
    labels: tuple[str, ...] = ()
    costs: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        n = len(self.creates)
        if len(self.reads) != n or len(self.preds) != n:
            raise ValueError("creates, reads and preds need one entry per op")
        if self.costs and (len(self.costs) != n or min(self.costs) < 0):
            raise ValueError("costs need one non-negative entry per op")
        made = [b for bufs in self.creates for b in bufs]
        if len(set(made)) != len(made) or set(made) & set(self.live_in):
            raise ValueError("every buffer is made once: by one op or before the block")
        if any(len(set(reads)) != len(reads) for reads in self.reads):
            raise ValueError("an op reads each buffer once")
        read = {b for reads in self.reads for b in reads}
        for b in self.live_in:
            if b not in read and b not in self.live_out:
                raise ValueError(
                    f"buffer {b} is live in but nothing reads it nor is it live out: count it in base_bytes"
                )
        for v, preds in enumerate(self.preds):
            if any(not 0 <= u < n or u == v for u in preds):
                raise ValueError(f"op {v} has a predecessor out of range: {preds}")

    @property
    def ops(self) -> int:
        return len(self.creates)

    def succs(self) -> tuple[tuple[int, ...], ...]:
        out: list[list[int]] = [[] for _ in range(self.ops)]
        for v, preds in enumerate(self.preds):
            for u in preds:
                out[u].append(v)
        return tuple(tuple(s) for s in out)

    def readers(self) -> tuple[tuple[int, ...], ...]:
        """For every buffer, the ops that read it."""
        out: list[list[int]] = [[] for _ in self.sizes]
        for v, reads in enumerate(self.reads):
            for b in reads:
                out[b].append(v)
        return tuple(tuple(r) for r in out)


def is_valid_order(graph: Graph, order: Sequence[int]) -> bool:
    """Whether `order` runs every op once, each after all its predecessors."""
    if sorted(order) != list(range(graph.ops)):
        return False
    position = {v: t for t, v in enumerate(order)}
    return all(position[u] < position[v] for v in range(graph.ops) for u in graph.preds[v])


def step_bytes(graph: Graph, order: Sequence[int]) -> list[int]:
    """The memory at every step of `order` (module docstring, steps 1 to 3); `order` may
    run an op more than once (a schedule with recomputation, `instances`)."""
    if len(order) > graph.ops:
        return _instance_step_bytes(graph, order)
    readers = graph.readers()
    left = [len(r) for r in readers]
    held = graph.base_bytes + sum(graph.sizes[b] for b in graph.live_in)
    steps = []
    for v in order:
        made = sum(graph.sizes[b] for b in graph.creates[v])
        steps.append(held + made)
        held += made
        for b in set(graph.reads[v]):
            left[b] -= 1
        for b in set(graph.reads[v]) | set(graph.creates[v]):
            if left[b] == 0 and b not in graph.live_out:
                held -= graph.sizes[b]
                left[b] = -1  # freed once
    return steps


def peak_bytes(graph: Graph, order: Sequence[int]) -> int:
    """The most memory at any step of `order`; `base_bytes` plus what is live in for an
    empty block."""
    return max(
        step_bytes(graph, order),
        default=graph.base_bytes + sum(graph.sizes[b] for b in graph.live_in),
    )


def live_spans(graph: Graph, order: Sequence[int]) -> list[tuple[int, int]]:
    """Every buffer's steps `[start, end)` in `order`, as `step_bytes` holds it: from the
    step that makes it (0 for one live in) to its last reader's step inclusive (the end
    of the order for one live out; its own step for one nobody reads).

    Where `order` runs an op more than once, one span per computed instance, in the order
    `instances` lists them (entry b is still buffer b's first instance)."""
    if len(order) > graph.ops:
        return instances(graph, order)[1]
    position = {v: t for t, v in enumerate(order)}
    spans = [(0, 1) for _ in graph.sizes]  # what no op makes is held from the first step
    for v, bufs in enumerate(graph.creates):
        for b in bufs:
            spans[b] = (position[v], position[v] + 1)
    for v, reads in enumerate(graph.reads):
        for b in reads:
            start, end = spans[b]
            spans[b] = (start, max(end, position[v] + 1))
    for b in graph.live_out:
        spans[b] = (spans[b][0], len(order))
    return spans


def instances(graph: Graph, steps: Sequence[int]) -> tuple[list[int], list[tuple[int, int]]]:
    """The computed instances of a schedule whose `steps` may run an op more than once:
    for each, its buffer and its steps `[start, end)`.

    Each run of an op makes a new instance of each of its buffers; a read takes the
    latest instance made before its step; an instance is held from its step to its last
    reader's step inclusive (its own step only when nothing reads it), and the last
    instance of a buffer live out to the end. Instance b is buffer b's first (made by the
    op's first run; at step 0 for one live in), later ones follow in the order made.
    Raises ValueError when a step reads a buffer no earlier step made."""
    first: list[list[int] | None] = [None] * len(graph.sizes)
    extra: list[tuple[int, list[int]]] = []
    latest: dict[int, list[int]] = {}
    for b in graph.live_in:
        latest[b] = first[b] = [0, 1]
    for t, v in enumerate(steps):
        for b in graph.reads[v]:
            span = latest.get(b)
            if span is None:
                raise ValueError(
                    f"step {t} runs op {v}, which reads buffer {b} before any step makes it"
                )
            span[1] = max(span[1], t + 1)
        for b in graph.creates[v]:
            latest[b] = [t, t + 1]
            if first[b] is None:
                first[b] = latest[b]
            else:
                extra.append((b, latest[b]))
    for b in graph.live_out:
        if b in latest:
            latest[b][1] = max(latest[b][1], len(steps))
    if any(span is None for span in first):
        missing = next(b for b, span in enumerate(first) if span is None)
        raise ValueError(f"no step makes buffer {missing}")
    buffers = list(range(len(graph.sizes))) + [b for b, _ in extra]
    spans = [(s[0], s[1]) for s in first if s is not None] + [(s[0], s[1]) for _, s in extra]
    return buffers, spans


def _instance_step_bytes(graph: Graph, steps: Sequence[int]) -> list[int]:
    buffers, spans = instances(graph, steps)
    change = [0] * (len(steps) + 1)
    for b, (start, end) in zip(buffers, spans):
        change[start] += graph.sizes[b]
        change[end] -= graph.sizes[b]
    out, held = [], graph.base_bytes
    for t in range(len(steps)):
        held += change[t]
        out.append(held)
    return out


def problem_of(graph: Graph, order: Sequence[int], alignment: int = 1) -> Problem:
    """The allocation problem of `order`: one buffer per computed instance, live over its
    `live_spans`; its lower bound is `peak_bytes(graph, order)` less `base_bytes`. A
    buffer's first instance has its name, its k-th recomputation `name@k+1`."""
    buffers, spans = (
        instances(graph, order)
        if len(order) > graph.ops
        else (list(range(len(graph.sizes))), live_spans(graph, order))
    )
    names = graph.names or tuple(f"b{b}" for b in range(len(graph.sizes)))
    seen = [0] * len(graph.sizes)
    out = []
    for b, span in zip(buffers, spans):
        seen[b] += 1
        name = names[b] if seen[b] == 1 else f"{names[b]}@{seen[b]}"
        out.append(Buffer(name, graph.sizes[b], (Interval(*span),), alignment))
    return Problem(tuple(out))


def lower_bound(graph: Graph) -> int:
    """A peak no order can go below: the largest of `op_bounds`."""
    return max(op_bounds(graph), default=peak_bytes(graph, ()))


def op_bounds(graph: Graph) -> list[int]:
    """For every op, bytes held at its step in every order.

    While op v runs, these are all held: its reads and new buffers; every buffer made by
    an ancestor of v (or before the block) that a descendant of v reads or that is live
    out (it cannot be freed before v).
    """
    ancestors = closure(graph.preds)
    descendants = closure(graph.succs())
    readers = graph.readers()
    creator = {b: v for v, bufs in enumerate(graph.creates) for b in bufs}
    bounds = []
    for v in range(graph.ops):
        held = set(graph.reads[v]) | set(graph.creates[v])
        for b, size in enumerate(graph.sizes):
            if b in held or size == 0:
                continue
            made_before = b not in creator or creator[b] in ancestors[v]
            needed_after = b in graph.live_out or any(r in descendants[v] for r in readers[b])
            if made_before and needed_after:
                held.add(b)
        bounds.append(graph.base_bytes + sum(graph.sizes[b] for b in held))
    return bounds


def closure(edges: tuple[tuple[int, ...], ...]) -> list[set[int]]:
    """For every op, all ops reachable along `edges` (not the op itself)."""
    memo: list[set[int] | None] = [None] * len(edges)
    for v in range(len(edges)):
        _iterative_reach(edges, v, memo)
    return [m or set() for m in memo]


def _iterative_reach(
    edges: tuple[tuple[int, ...], ...], start: int, memo: list[set[int] | None]
) -> None:
    """Fill `memo` for `start` and everything below it without deep recursion."""
    stack = [(start, False)]
    while stack:
        v, expanded = stack.pop()
        if memo[v] is not None:
            continue
        if not expanded:
            stack.append((v, True))
            stack.extend((u, False) for u in edges[v] if memo[u] is None)
            continue
        found: set[int] = set()
        for u in edges[v]:
            found.add(u)
            found |= memo[u] or set()
        memo[v] = found
