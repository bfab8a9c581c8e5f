"""What any schedule with recomputation needs: valid step sequences, and a proven lower
bound on the memory of every schedule however much it recomputes.

A schedule is a sequence of steps, each running one op; an op may run more than once
(`schedule.graph.instances`). It is valid when every op runs at least once, the first
runs keep the graph's order constraints, and every read finds an instance made before.

The bound, per op v (every op runs at least once, so the largest over ops holds):

1. At v's step its reads and its new buffers are held: `direct(v)`.
2. v's inputs made in the block are made by ops W. Of the instances v reads, take the
   one made last, by w: at that step of w, v's other inputs (made earlier by the other
   ops of W, or live in) are held, since v reads them later, and w's own reads and new
   buffers are held: `direct(w)` plus those other inputs that w does not read.
3. Whichever w it is, the peak is at least the least of 2 over W, and at least 1.

4. A buffer that cannot be made again (live in, or made by an op that may not run
   again) is held from its making to its last read: at the first run of any op v that
   must follow its maker and precede one of its readers (or that follows its maker,
   for a buffer live out), it is held beside v's reads and new buffers.

The bound is `base_bytes` plus the largest of these over all ops; the op (and the w, or
the buffers held) that sets it is the reason printed when a budget is below it. Where
every offset is a multiple of an alignment a, buffers held at once need more than their
bytes: in offset order, each but the highest takes its size rounded up to a, since the
next offset is a multiple of a at or above its end (`aligned_bytes`).

`traced(graph, budget, work)` goes on from 2 where no schedule was found: a set T of
buffers held at once at some step, all made before it (at first an op's reads). Of
T's instances, the one made last is made by some op x; at x's step, T's other buffers,
x's reads and x's outputs are all held, and x's reads with T's others form the next
set, held at once and made before that step. When, whichever x it is, either x's step
holds more than the budget or (recursively, each step earlier than the last) the next
set does, no schedule fits the budget. Sets are searched depth first, the most bytes
first, up to `work` of them and `DEPTH` deep; a set already on the path, or out of
work or depth, proves nothing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from optplan.budget import now, spend
from optplan.schedule.graph import Graph, instances

# The work of one buffer of a set the traced bound weighs (a maker's step: the set with the
# maker's reads and outputs). It walks about 4.5 million a second: on a held-out layered
# graph of 1,000 ops at 60 % its 1,000 sets of up to some 200 buffers took 19-24 s, counted
# 0.08 units when each set counted alike.
HELD_WORK = 5e-7


@dataclass(frozen=True, slots=True)
class MemoryBound:
    """`bytes`: no schedule of the graph, with any recomputation, holds less at its peak
    (with offsets at the alignment, no arena plus `base_bytes` is smaller); `reason`:
    why, in words a reader can check."""

    bytes: int
    reason: str


def is_valid_steps(
    graph: Graph, steps: Sequence[int], recomputable: Sequence[bool] | None = None
) -> bool:
    """Whether `steps` runs every op at least once, the first runs in an order the graph
    allows, and every read after a buffer is made (ops not `recomputable` run once)."""
    if any(not 0 <= v < graph.ops for v in steps) or set(steps) != set(range(graph.ops)):
        return False
    first: dict[int, int] = {}
    for t, v in enumerate(steps):
        if v in first and recomputable is not None and not recomputable[v]:
            return False
        first.setdefault(v, t)
    if any(first[u] > first[v] for v in range(graph.ops) for u in graph.preds[v]):
        return False
    try:
        instances(graph, steps)
    except ValueError:
        return False
    return True


def memory_bound(
    graph: Graph, recomputable: Sequence[bool] | None = None, alignment: int = 1
) -> MemoryBound:
    """The bound of the module docstring; `recomputable[v]` False where op v runs once;
    every offset a multiple of `alignment`."""
    creator = {b: v for v, bufs in enumerate(graph.creates) for b in bufs}
    best = MemoryBound(graph.base_bytes, "nothing to run")
    fixed = _held_fixed(graph, recomputable, creator)
    at_once = _AtOnce(graph, alignment)
    for v in range(graph.ops):
        need, reason = max(_need(at_once, v, creator), _fixed_need(at_once, v, fixed[v]))
        if graph.base_bytes + need > best.bytes:
            held = (
                f" plus {graph.base_bytes} bytes held across the block" if graph.base_bytes else ""
            )
            best = MemoryBound(graph.base_bytes + need, reason + held)
    return best


def direct_bytes(graph: Graph, v: int) -> int:
    """The bytes op v holds while it runs: its inputs and outputs (without the base)."""
    return sum(graph.sizes[b] for b in set(graph.reads[v]) | set(graph.creates[v]))


def aligned_bytes(sizes: Sequence[int], alignment: int) -> int:
    """The least arena holding buffers of `sizes` at once, each at a multiple of
    `alignment`: every size rounded up to it, less the largest rounding (the highest
    buffer needs none)."""
    rounded = [-(-size // alignment) * alignment for size in sizes]
    return sum(rounded) - max((r - size for r, size in zip(rounded, sizes)), default=0)


@dataclass(frozen=True, slots=True)
class _AtOnce:
    """The least arena of a set of the graph's buffers held at once, at the alignment;
    and the words that say so where it is above their bytes."""

    graph: Graph
    alignment: int

    def arena(self, buffers: AbstractSet[int]) -> int:
        return aligned_bytes([self.graph.sizes[b] for b in buffers], self.alignment)

    def direct(self, v: int) -> int:
        return self.arena(set(self.graph.reads[v]) | set(self.graph.creates[v]))

    def words(self, total: int, buffers: AbstractSet[int]) -> str:
        plain = sum(self.graph.sizes[b] for b in buffers)
        return f"{total} bytes" + (
            f" at offsets on multiples of {self.alignment}" if total > plain else ""
        )


def _need(at_once: _AtOnce, v: int, creator: dict[int, int]) -> tuple[int, str]:
    """Steps 1 to 3 of the module docstring for op v: bytes and the reason."""
    graph = at_once.graph
    own = set(graph.reads[v]) | set(graph.creates[v])
    direct = at_once.arena(own)
    label = _label(graph, v)
    found = (direct, f"{label} needs its inputs and outputs at once: {at_once.words(direct, own)}")
    makers = sorted({creator[b] for b in graph.reads[v] if b in creator})
    if not makers:
        return found
    least: tuple[int, str] | None = None
    for w in makers:
        others = {b for b in graph.reads[v] if creator.get(b) != w and b not in graph.reads[w]}
        together = set(graph.reads[w]) | set(graph.creates[w]) | others
        total = at_once.arena(together)
        if least is None or total < least[0]:
            reason = (
                f"while the last of {label}'s inputs is made (by {_label(graph, w)} at best: "
                f"{at_once.direct(w)} bytes for its inputs and outputs), its other inputs are held: "
                f"{at_once.words(total, together)}"
            )
            least = (total, reason)
    assert least is not None
    return least if least[0] > direct else found


def _held_fixed(
    graph: Graph, recomputable: Sequence[bool] | None, creator: dict[int, int]
) -> list[set[int]]:
    """Step 4: per op, the buffers that cannot be made again and are held at its first
    run (none where the graph's order has a cycle)."""
    after = followers(graph)
    held: list[set[int]] = [set() for _ in range(graph.ops)]
    if after is None:
        return held
    readers = graph.readers()
    for b in range(len(graph.sizes)):
        maker = creator.get(b)
        if maker is not None and (recomputable is None or recomputable[maker]):
            continue
        for v in range(graph.ops):
            made = maker is None or v in after[maker]
            if made and (
                b in graph.live_out and maker is not None or any(r in after[v] for r in readers[b])
            ):
                held[v].add(b)
    return held


def followers(graph: Graph) -> list[set[int]] | None:
    """Per op, the ops whose first run must come after its own (the order's closure), or
    None where the order has a cycle."""
    users: list[list[int]] = [[] for _ in range(graph.ops)]
    waiting = [len(set(preds)) for preds in graph.preds]
    for v, preds in enumerate(graph.preds):
        for u in set(preds):
            users[u].append(v)
    order = [v for v in range(graph.ops) if not waiting[v]]
    for v in order:
        for w in users[v]:
            waiting[w] -= 1
            if not waiting[w]:
                order.append(w)
    if len(order) < graph.ops:
        return None
    after: list[set[int]] = [set() for _ in range(graph.ops)]
    for v in reversed(order):
        for w in users[v]:
            after[v] |= after[w] | {w}
    return after


def _fixed_need(at_once: _AtOnce, v: int, fixed: set[int]) -> tuple[int, str]:
    """Step 4 for op v: its reads and new buffers beside the buffers held at its run."""
    graph = at_once.graph
    own = set(graph.reads[v]) | set(graph.creates[v])
    extra = sorted(fixed - own)
    if not extra:
        return 0, ""
    total = at_once.arena(own | fixed)
    names = ", ".join(graph.names[b] if graph.names else f"buffer {b}" for b in extra[:4])
    more = f" and {len(extra) - 4} more" if len(extra) > 4 else ""
    verb = "is" if len(extra) == 1 else "are"
    reason = (
        f"{_label(graph, v)} needs its inputs and outputs ({at_once.direct(v)} bytes) while {names}{more} {verb} "
        f"held (live in, or made by an op that may not run again, and read after it): {at_once.words(total, own | fixed)}"
    )
    return total, reason


def _label(graph: Graph, v: int) -> str:
    return repr(graph.labels[v]) if graph.labels else f"op {v}"


def traced(
    graph: Graph,
    budget: int,
    work: int = 1_000,
    per_op: int = 250,
    deadline: float = math.inf,
    alignment: int = 1,
) -> MemoryBound | None:
    """A proof, as the module docstring's last paragraph, that every schedule holds more
    than `budget` bytes at some step, or None where none was found within `work` sets
    (`per_op` from each op, the ops whose one-step bound is highest first) or by the
    `deadline` (`now()`'s), every offset a multiple of `alignment`."""
    creator = {b: v for v, bufs in enumerate(graph.creates) for b in bufs}
    search = _Trace(graph, budget, 0, _AtOnce(graph, alignment), deadline)
    for v in sorted(range(graph.ops), key=lambda v: -_need(search.at_once, v, creator)[0]):
        if search.sets >= work or now() > deadline:
            break
        search.work = min(work, search.sets + per_op)
        if search.over(frozenset(graph.reads[v]) | frozenset(graph.creates[v])) or search.proves(
            frozenset(graph.reads[v])
        ):
            reason = (
                f"while {_label(graph, v)}'s inputs are made, traced back through the last input made at each step "
                f"({search.sets} sets of tensors held at once), some step holds more than {budget} bytes"
            )
            return MemoryBound(budget + 1, reason)
    return None


DEPTH = 64  # the longest chain of sets traced back (Python's recursion stays shallow)


class _Trace:
    """The depth-first search of `traced`: which sets are proven, which are on the path."""

    def __init__(
        self, graph: Graph, budget: int, work: int, at_once: _AtOnce, deadline: float
    ) -> None:
        self.graph, self.budget, self.work, self.at_once = graph, budget, work, at_once
        self.deadline = deadline
        self.creator = {b: v for v, bufs in enumerate(graph.creates) for b in bufs}
        self.proven: set[frozenset[int]] = set()
        self.failed: set[frozenset[int]] = set()
        self.path: set[frozenset[int]] = set()
        self.sets = 0

    def over(self, held: frozenset[int]) -> bool:
        return self.graph.base_bytes + self.at_once.arena(held) > self.budget

    def proves(self, made: frozenset[int]) -> bool:
        """Whether every schedule that holds `made` at once, all made before, holds more
        than the budget at some step."""
        if self.over(made) or made in self.proven:
            return True
        if (
            made in self.failed
            or made in self.path
            or self.sets >= self.work
            or len(self.path) >= DEPTH
            or now() > self.deadline
        ):
            return False
        self.sets += 1
        makers = sorted({self.creator[b] for b in made if b in self.creator})
        self.path.add(made)
        steps = [(made | set(self.graph.reads[x]) | set(self.graph.creates[x]), x) for x in makers]
        spend(HELD_WORK * sum(len(held) for held, _ in steps))
        # A maker whose step is within the budget needs the deeper proof; those whose
        # step holds the most are tried first (the likeliest proofs).
        deeper = [
            x
            for held, x in sorted(steps, key=lambda s: -self.at_once.arena(s[0]))
            if not self.over(held)
        ]
        ok = bool(makers) and all(
            self.proves((made - set(self.graph.creates[x])) | set(self.graph.reads[x]))
            for x in deeper
        )
        self.path.discard(made)
        (self.proven if ok else self.failed).add(made)
        return ok
