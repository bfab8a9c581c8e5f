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
3. Two kinds of op run where they cost least, so the search need not try them
   elsewhere. A source (it reads nothing and follows no op; no op follows it but by
   reading it) runs only just before an op that reads its buffers: one run earlier
   holds them longer for nothing. An op that makes no buffer runs for the first time
   as soon as its reads are held and the ops it follows have run: its step holds no
   more than the state before it, and later its reads may be gone.
4. States are taken cheapest first by their extra compute plus a lower bound on what
   is still to pay (A*): every op run already must run again whose buffer is still to
   be read, by an op not yet run or after the block, but is no longer held, or is held
   but cannot stay held across an op still to run before that read. An op runs again
   only to make a buffer not held that may still be read (directly, or to make one
   that is). A state no better than one already found is dropped. The first with every op run and the
   live-out buffers held ends the search: its steps are a schedule of the least extra
   compute of all whose every step holds at most the budget. Every arena of a schedule
   holds at least that, so no schedule that packs within the budget costs less.
5. A search that runs out of states has proven that no schedule fits the budget.

The answer holds only for a search run to its end: at `work` states taken or at the
deadline it stops and proves nothing. On the benchmarks' CNN training step (21 ops) at
half its peak it ends in 56 states (899 without steps 3 and 4), and on the MLP step
(35 ops) at 70 % in 1,406; on TVM's attention step (65 ops) at 50 to 90 % of its peak
it does not end in 20 s (the orders of its first runs are too many), nor on MOCCASIN's
random graphs.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Sequence
from dataclasses import dataclass, field

from optplan.budget import now, spend
from optplan.schedule.graph import Graph
from optplan.schedule.remat.bounds import followers

# The work of one state taken from the heap, of one move from it, and of one kept state
# a state found is compared with (on VGG16's training graph at 90 %, one state's moves
# were compared with hundreds of thousands of kept states: minutes on no counted work).
STATE_WORK = 5e-5
MOVE_WORK = 5e-6
COMPARE_WORK = 1e-7


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
    made_before: int
    creator: tuple[int, ...]  # of each buffer; -1 for one made before the block
    sources: int  # ops that read nothing, follow no op, make buffers others read, and
    # that no op follows but by reading them
    sourced: int  # the buffers the sources make
    sinks: tuple[int, ...]  # ops that make no buffer
    every: int  # all ops
    readers: tuple[int, ...]  # of each buffer
    before: tuple[int, ...]  # of each op, the ops whose first run comes before its own
    evicts: tuple[int, ...]  # of each buffer, the ops whose step cannot also hold it
    live_out: int
    sources_of: tuple[int, ...]  # of each buffer, it and the buffers it is made from
    # Bytes of every set of 8 buffers in turn (buffers 8i to 8i+7 by mask); `_wanted`,
    # `_useful` and `_unkept` by the ops run, and `_least_sets` by its arguments.
    # Profiled on the MLP step at 50 %, counting the bits of masks took a fifth of the
    # search; of its calls of `_least_sets`, 95 % had been made before, and most sets
    # of ops run recur.
    octets: tuple[tuple[int, ...], ...]
    wanted: dict[int, int] = field(default_factory=dict, compare=False)
    useful: dict[int, int] = field(default_factory=dict, compare=False)
    unkept: dict[int, int] = field(default_factory=dict, compare=False)
    least: dict[tuple[int, int], list[int]] = field(default_factory=dict, compare=False)

    def bytes(self, mask: int) -> int:
        total = 0
        for sums in self.octets:
            total += sums[mask & 255]
            mask >>= 8
            if not mask:
                break
        return total


def every_schedule(
    graph: Graph, budget: int, recomputable: Sequence[bool], deadline: float, work: int = WORK
) -> Exhausted | None:
    """The search of the module docstring, or None where it stopped before its end."""
    room = budget - graph.base_bytes
    masks = _masks(graph, recomputable, room)
    start, first = _closed(masks, (_mask(graph.live_in), 0), room)
    came: dict[tuple[int, int], tuple[tuple[int, int], tuple[int, ...]] | None] = {start: None}
    kept = _Kept(start)
    # Of states alike in cost and bound, the one with the most ops run first.
    heap = [(0, 0, 0, start)]
    taken = 0
    while heap:
        _, _, cost, state = heapq.heappop(heap)
        held, done = state
        if not kept.holds(state, cost):
            continue  # a better state replaced it
        taken += 1
        spend(STATE_WORK)
        if taken > work or now() > deadline:
            return None
        if done == masks.every and held & masks.live_out == masks.live_out:
            return Exhausted(first + _steps(came, state), cost, taken)
        # Buffers live in are held at the first step, read or not.
        for ran, after, extra in _moves(masks, held, done, room, start[0] if not done else 0):
            spend(MOVE_WORK)
            if now() > deadline:
                return None
            found, closing = _closed(masks, (after, done | _mask(ran)), room)
            if kept.better(found, cost + extra):
                ahead = _ahead(masks, found)
                if ahead is not None:
                    came[found] = (state, ran + closing)
                    heapq.heappush(
                        heap, (cost + extra + ahead, -found[1].bit_count(), cost + extra, found)
                    )
    return Exhausted(None, 0, taken)


def _closed(
    masks: _Masks, state: tuple[int, int], room: int
) -> tuple[tuple[int, int], tuple[int, ...]]:
    """`state` after the first runs of every op that makes no buffer and whose reads are
    held, and the ops so run: such a run needs no byte more than the state holds (where
    that fits `room`: the buffers live in may not), and one any later is no better (its
    reads may be gone by then)."""
    held, done = state
    ran: list[int] = []
    progress = masks.bytes(held) <= room
    while progress:
        progress = False
        for v in masks.sinks:
            if (
                not done >> v & 1
                and masks.reads[v] & held == masks.reads[v]
                and masks.preds[v] & done == masks.preds[v]
            ):
                done |= 1 << v
                ran.append(v)
                progress = True
    return (held, done), tuple(ran)


def _moves(
    masks: _Masks, held: int, done: int, room: int, pinned: int
) -> list[tuple[tuple[int, ...], int, int]]:
    """Steps 1 and 2 from one state: (ops run, buffers held after them, their extra
    compute); the `pinned` buffers may not be freed before them. An op that reads nothing
    and follows no op (a source) runs only just before an op reading its buffers: one run
    any earlier holds them for nothing."""
    moves = []
    useful = _useful(masks, done)
    for v, reads in enumerate(masks.reads):
        if masks.sources >> v & 1:
            continue
        first = not done >> v & 1
        if not first and (not masks.allowed[v] or not masks.outs[v] & useful & ~held):
            continue  # a run again that makes what is held, or what nothing will read
        missing = reads & ~held
        if missing & ~masks.sourced:
            continue  # a read not held that no source makes
        feeders = _feeders(masks, missing, done) if missing else []
        if feeders is None:
            continue
        ran = done | _mask(feeders)
        if first and masks.preds[v] & ran != masks.preds[v]:
            continue
        fed = _mask([b for u in feeders for b in _bits(masks.outs[u])])
        outs = masks.outs[v] | fed
        kept = (reads & held) | (held & pinned)
        spare = held & ~kept & ~outs
        if masks.bytes(kept | outs) > room:
            continue
        over = masks.bytes(spare | kept | outs) - room
        extra = (0 if first else masks.costs[v]) + sum(
            masks.costs[u] for u in feeders if done >> u & 1
        )
        for freed in _least_sets(masks, spare, over):
            moves.append((tuple(feeders) + (v,), (spare & ~freed) | kept | outs, extra))
    return moves


def _wanted(masks: _Masks, done: int) -> int:
    """The buffers still to be read: by an op not yet run, or after the block."""
    wanted = masks.wanted.get(done)
    if wanted is None:
        wanted = masks.live_out
        for v in _bits(masks.every & ~done):
            wanted |= masks.reads[v]
        masks.wanted[done] = wanted
    return wanted


def _useful(masks: _Masks, done: int) -> int:
    """The buffers that may still be read: those `_wanted`, and the buffers any of them
    is made from, however far back."""
    found = masks.useful.get(done)
    if found is None:
        found = 0
        for b in _bits(_wanted(masks, done)):
            found |= masks.sources_of[b]
        masks.useful[done] = found
    return found


def _feeders(masks: _Masks, missing: int, done: int) -> list[int] | None:
    """The sources to run for the `missing` buffers, every one a source's (`_moves`
    drops a move where one is not), or None where a source may not run again."""
    feeders = []
    for b in _bits(missing):
        u = masks.creator[b]
        if done >> u & 1 and not masks.allowed[u]:
            return None
        if u not in feeders:
            feeders.append(u)
    return feeders


def _ahead(masks: _Masks, state: tuple[int, int]) -> int | None:
    """A lower bound on the extra compute still to pay from `state`: every op run already
    must run again whose buffer is still to be read (by an op not yet run, or after the
    block) but is no longer held, or is held but cannot stay held across an op still to
    run before that read (the op's step with it is over the budget); None where one of
    them may not run again."""
    held, done = state
    wanted = _wanted(masks, done)
    again = wanted & (~held | _unkept(masks, done))
    if again & masks.made_before:
        return None
    runs = {masks.creator[b] for b in _bits(again)}
    runs = {v for v in runs if done >> v & 1}
    if any(not masks.allowed[v] for v in runs):
        return None
    return sum(masks.costs[v] for v in runs)


def _unkept(masks: _Masks, done: int) -> int:
    """The buffers still to be read that cannot stay held until then: an op still to run
    before a read of one cannot hold it beside its own."""
    found = masks.unkept.get(done)
    if found is None:
        pending = masks.every & ~done
        found = 0
        for b in _bits(_wanted(masks, done)):
            before = pending if masks.live_out >> b & 1 else 0
            for r in _bits(masks.readers[b] & pending):
                before |= masks.before[r]
            if before & pending & masks.evicts[b]:
                found |= 1 << b
        masks.unkept[done] = found
    return found


def _least_sets(masks: _Masks, spare: int, over: int) -> list[int]:
    """Every least set of the buffers in `spare` whose bytes reach `over` (no buffer of it
    may stay): the empty set where nothing need be freed."""
    if over <= 0:
        return [0]
    found = masks.least.get((spare, over))
    if found is None:
        found = masks.least[(spare, over)] = _least(masks, spare, over)
    return found


def _least(masks: _Masks, spare: int, over: int) -> list[int]:
    """`_least_sets` where `over` is positive."""
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


class _Kept:
    """The states kept (step 3), per set of ops run: their extra computes, ascending, and
    beside them their buffers held, since only a kept state no dearer can rule a new one
    out and only one no cheaper can be ruled out by it; and each state's extra compute by
    the state, since most states found again are found with the very buffers of one kept
    (on the MLP training step at 50 %, 191,000 of 192,000 ruled out), which a scan met
    only after 110 others."""

    def __init__(self, start: tuple[int, int]) -> None:
        self.by_ops: dict[int, tuple[list[int], list[int]]] = {start[1]: ([0], [start[0]])}
        self.cost: dict[tuple[int, int], int] = {start: 0}

    def holds(self, state: tuple[int, int], cost: int) -> bool:
        """Whether `state` is kept at `cost` (not replaced by a better one since)."""
        return self.cost.get(state) == cost

    def better(self, state: tuple[int, int], cost: int) -> bool:
        """Whether `state` at `cost` is no worse than every kept state with its ops run;
        if so it is kept, and those it is better than are dropped."""
        paid = self.cost.get(state)
        if paid is not None and paid <= cost:
            return False
        held, done = state
        costs, helds = self.by_ops.setdefault(done, ([], []))
        at = bisect.bisect_right(costs, cost)
        for k, other in enumerate(helds[:at]):
            if other & held == held:
                spend(COMPARE_WORK * (k + 1))
                return False
        start = bisect.bisect_left(costs, cost, 0, at)
        spend(COMPARE_WORK * (at + len(helds) - start))
        worse = [i for i in range(start, len(helds)) if held & helds[i] == helds[i]]
        for i in reversed(worse):
            del self.cost[(helds[i], done)]
            del costs[i]
            del helds[i]
        at -= sum(1 for i in worse if i < at)
        costs.insert(at, cost)
        helds.insert(at, held)
        self.cost[state] = cost
        return True


def _steps(
    came: dict[tuple[int, int], tuple[tuple[int, int], tuple[int, ...]] | None],
    state: tuple[int, int],
) -> tuple[int, ...]:
    runs = []
    link = came[state]
    while link is not None:
        state, ran = link
        runs.append(ran)
        link = came[state]
    return tuple(v for ran in reversed(runs) for v in ran)


def _masks(graph: Graph, recomputable: Sequence[bool], room: int) -> _Masks:
    creator = [-1] * len(graph.sizes)
    for v, outs in enumerate(graph.creates):
        for b in outs:
            creator[b] = v
    read = {b for reads in graph.reads for b in reads}
    # An op that follows a source without reading its buffers would wait for it forever.
    ordered = {
        u
        for v in range(graph.ops)
        for u in graph.preds[v]
        if not set(graph.creates[u]) & set(graph.reads[v])
    }
    sources = [
        v
        for v in range(graph.ops)
        if not graph.reads[v]
        and not graph.preds[v]
        and graph.creates[v]
        and v not in ordered
        and set(graph.creates[v]) <= read
        and not set(graph.creates[v]) & graph.live_out
    ]
    return _Masks(
        tuple(_mask(reads) for reads in graph.reads),
        tuple(_mask(outs) for outs in graph.creates),
        tuple(_mask(preds) for preds in graph.preds),
        graph.sizes,
        graph.costs or (1,) * graph.ops,
        tuple(recomputable),
        _mask(graph.live_in),
        tuple(creator),
        _mask(sources),
        _mask([b for v in sources for b in graph.creates[v]]),
        tuple(v for v in range(graph.ops) if not graph.creates[v]),
        (1 << graph.ops) - 1,
        *_order_masks(graph, room),
        _mask(graph.live_out),
        _made_from(graph, creator),
        _octets(graph.sizes),
    )


def _octets(sizes: Sequence[int]) -> tuple[tuple[int, ...], ...]:
    """`_Masks.octets`."""
    tables = []
    for low in range(0, len(sizes), 8):
        own = sizes[low : low + 8]
        sums = [0] * 256
        for mask in range(1, 256):
            b = (mask & -mask).bit_length() - 1
            sums[mask] = sums[mask & (mask - 1)] + (own[b] if b < len(own) else 0)
        tables.append(tuple(sums))
    return tuple(tables)


def _made_from(graph: Graph, creator: list[int]) -> tuple[int, ...]:
    """`_Masks.sources_of`."""
    found: list[int | None] = [None] * len(graph.sizes)

    def of(b: int) -> int:
        # The graph's order is acyclic where the search runs: its first runs need it.
        if found[b] is None:
            found[b] = 1 << b
            c = creator[b]
            for a in graph.reads[c] if c >= 0 else ():
                found[b] |= of(a)  # type: ignore[operator]
        return found[b]  # type: ignore[return-value]

    return tuple(of(b) for b in range(len(graph.sizes)))


def _order_masks(
    graph: Graph, room: int
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """`_Masks`'s readers, before and evicts."""
    readers = [_mask(ops) for ops in graph.readers()]
    after = followers(graph) or [set() for _ in range(graph.ops)]
    before = [0] * graph.ops
    for v, later in enumerate(after):
        for w in later:
            before[w] |= 1 << v
    evicts = [0] * len(graph.sizes)
    for v in range(graph.ops):
        own = set(graph.reads[v]) | set(graph.creates[v])
        direct = sum(graph.sizes[b] for b in own)
        for b in range(len(graph.sizes)):
            if b not in own and direct + graph.sizes[b] > room:
                evicts[b] |= 1 << v
    return tuple(readers), tuple(before), tuple(evicts)


def _mask(items: Sequence[int] | frozenset[int]) -> int:
    mask = 0
    for item in items:
        mask |= 1 << item
    return mask


def _bits(mask: int) -> list[int]:
    """The set bits of `mask`, lowest first (one step per set bit, not per position)."""
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out
