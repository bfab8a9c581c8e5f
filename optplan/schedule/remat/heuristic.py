"""The heuristic baseline and anytime path: free a tensor early and compute it again.

From a start order (a plain schedule) under a memory target, steps:

1. Evaluate the schedule: every computed instance, its span and its readers
   (`schedule.graph.instances`), and the bytes at every step.
2. At the step of the peak, every instance held there and not read there whose op may
   run again is a candidate: its readers after the peak read a new instance instead,
   made by running its op again just before the first of them. The new step extends
   the lives of that op's own inputs to it, unless (recursively, a level at a time)
   those are made again too.
3. Each candidate is ranked by the profile made again alone gives, computed from the
   profile directly; the best six are tried with their dead inputs made again to
   several depths (every other candidate where none of those helps). Of the moves that
   bring the profile nearer the target (its peak, then the steps at the peak, then the
   bytes over the target summed over the steps), one is taken: the cheapest, the most
   bytes removed per unit of extra compute, or the nearest (`greedy`'s `rank`).
   Repeat from 1 until the peak is within the target, or nothing helps (no schedule
   found from this start). Under the rank "tabu", where nothing helps, the nearest of
   the others is taken, unless its op was made again in the last few such moves, and
   the search gives up only after many moves in a row bring the profile no nearer
   than it has been.
4. Prune: drop every recomputation that is no longer needed, dearest first.

    step:     0    1    2    3    4    5         a is read at 1 and at 5
    a:        [=========================]        held across the peak at 3
    after:    [=========]          [====]        a made again just before step 5

`relieved` lowers the target at chosen steps (each step counts its `relief` beyond the
bytes it holds, and a step made again before step r counts r's): the packing rounds
lower it where a packing of the schedule overflowed the budget.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from optplan.budget import now, spend
from optplan.schedule.graph import Graph, instances
from optplan.schedule.remat.kernel import Flat, chain_key, distance, levels, move_keys

# The work of one candidate move, per step of the schedule it is tried on (its chain's
# key over the profile), and of evaluating the schedule a move gives, per step: about a
# second of one core a unit with the compiled kernels (one run on MOCCASIN's 500- and
# 1,000-node graphs at 50-60 %: 0.05-1.2 s of one core, which 2e-6 counted as 1-46 units).
CANDIDATE_WORK = 1e-7
MOVE_WORK = 1e-7


@dataclass(frozen=True, slots=True)
class _State:
    """One schedule evaluated (step 1): `kernel.instances` of its steps, and the bytes."""

    steps: tuple[int, ...]
    buffer: np.ndarray  # instance -> its buffer
    start: np.ndarray
    end: np.ndarray
    read_ptr: np.ndarray  # instance k's readers: read_steps[read_ptr[k]:read_ptr[k + 1]]
    read_steps: np.ndarray
    made_ptr: np.ndarray  # buffer b's instances in the order made: made[made_ptr[b]:...]
    made: np.ndarray
    profile: np.ndarray  # bytes held at each step
    crossing: np.ndarray  # bytes held from step r - 1 into step r (index r)
    first: np.ndarray  # op -> the step of its first run
    relief: np.ndarray  # bytes counted at each step beyond those held (`greedy`'s `relief`)

    def readers(self, k: int) -> np.ndarray:
        return self.read_steps[self.read_ptr[k] : self.read_ptr[k + 1]]


def evaluate(
    graph: Graph, steps: Sequence[int], flat: Flat | None = None, relief: np.ndarray | None = None
) -> _State:
    flat = flat or Flat(graph)
    array = np.array(steps, dtype=np.int64)
    relief = np.zeros(len(array), dtype=np.int64) if relief is None else relief
    buffer, start, end, read_ptr, read_steps, made_ptr, made, ok = flat.instances(array)
    if not ok:
        instances(graph, steps)  # raises with the step and the buffer
    n = len(steps)
    sizes = flat.sizes[buffer]
    change = np.zeros(n + 2, dtype=np.int64)
    np.add.at(change, start, sizes)
    np.add.at(change, end, -sizes)
    profile = graph.base_bytes + np.cumsum(change)[:n] + relief
    across = np.zeros(n + 2, dtype=np.int64)
    long = end > start + 1
    np.add.at(across, start[long] + 1, sizes[long])
    np.add.at(across, end[long], -sizes[long])
    crossing = graph.base_bytes + np.cumsum(across)[: n + 1]
    first = np.full(graph.ops, -1, dtype=np.int64)
    ran, at = np.unique(array, return_index=True)
    first[ran] = at
    return _State(
        tuple(steps),
        buffer,
        start,
        end,
        read_ptr,
        read_steps,
        made_ptr,
        made,
        profile,
        crossing,
        first,
        relief,
    )


def profile_of(graph: Graph, steps: Sequence[int]) -> np.ndarray:
    """The bytes held at each step, as `evaluate` counts them, without the rest of its
    state: the trial schedules of steps 3 and 4 need only this (`kernel.Flat`, which a
    search builds once and calls instead)."""
    return Flat(graph)(steps)


def total_cost(graph: Graph) -> int:
    """The compute of one run of every op (each op costs 1 without costs): what extra
    compute is reported as a share of."""
    return sum(graph.costs) if graph.costs else graph.ops


def extra_cost(graph: Graph, steps: Sequence[int]) -> int:
    """The compute of every run after an op's first (each op costs 1 without costs)."""
    seen: set[int] = set()
    total = 0
    for v in steps:
        if v in seen:
            total += graph.costs[v] if graph.costs else 1
        seen.add(v)
    return total


RANKS = ("cost", "ratio", "key")  # how step 3 chooses among the moves that help
# The nearest moves, and where none brings the profile nearer, the nearest of the others
# whose op was not made again in the last `TABU_TENURE` moves (a tabu search). On
# MOCCASIN's 500-node graph, where every rank stops at 54.5 % of the program order's
# peak (no move helps), it meets 50 % in 443 moves and 46.4 % in 3,000 (about 70 s).
TABU = "tabu"
TABU_TENURE = 15
# Moves in a row that bring the profile no nearer, after which it gives up: from the
# searched order of the 500-node graph, 1,000 gave up short of 90 % of the budget at
# 50 % of the peak, where 10,000 meets it in 22 s.
TABU_IDLE = 10_000
TABU_STEPS = 8  # a schedule longer than this many steps an op is pruned to its own peak


@dataclass(frozen=True, slots=True)
class _Search:
    """What one run of `greedy` holds fixed."""

    graph: Graph
    flat: Flat
    target: int
    recomputable: np.ndarray  # op -> whether it may run again (bool)
    deadline: float
    rank: str


def greedy(
    graph: Graph,
    start: Sequence[int],
    target: int,
    recomputable: Sequence[bool],
    deadline: float,
    rank: str = "cost",
    stuck: Callable[[tuple[int, ...]], None] | None = None,
) -> tuple[int, ...] | None:
    """A schedule from `start` whose peak is at most `target` (module docstring), or None.
    `rank` is how step 3 chooses among the moves that bring the profile nearer the
    target: "cost", the cheapest; "ratio", the most bytes over the target removed per
    unit of compute; "key", the nearest, whatever it costs. No one of them reaches every
    budget the others do: on MOCCASIN's graphs, "cost" alone meets the 1,000-node graph
    at 50 %, "key" alone the 100-node graph at 60 % and the 500-node one at 55 %.
    Where it gives up, the schedule it reached goes to `stuck`."""
    relief = np.zeros(len(start), dtype=np.int64)
    found = relieved(graph, start, target, recomputable, deadline, rank, relief, stuck)
    return None if found is None else found[0]


def relieved(
    graph: Graph,
    start: Sequence[int],
    target: int,
    recomputable: Sequence[bool],
    deadline: float,
    rank: str,
    relief: np.ndarray,
    stuck: Callable[[tuple[int, ...]], None] | None = None,
) -> tuple[tuple[int, ...], np.ndarray] | None:
    """`greedy` with a target lower by `relief[t]` at step t of `start` (the bytes by
    which a packing of `start` exceeded the budget there): the schedule, and the relief
    of each of its steps (the steps a move makes again before step r take r's). Where
    no move helps or the deadline passes, the schedule reached goes to `stuck`."""
    allowed = np.array(recomputable, dtype=np.bool_).reshape(graph.ops)
    search = _Search(graph, Flat(graph), target, allowed, deadline, rank)
    state: _State | None = evaluate(graph, start, search.flat, relief)
    tabu = _Tabu() if rank == TABU else None
    while state is not None and int(state.profile.max(initial=0)) > target:
        found = _next_move(search, state, tabu) if now() < deadline else None
        if found is None:
            if stuck is not None:
                stuck(state.steps)
            return None
        spend(len(state.steps) * MOVE_WORK)
        state = evaluate(graph, found[0], search.flat, found[1])
        state = tabu.kept(search, state) if tabu is not None else state
    return None if state is None else _pruned(graph, state.steps, target, search.flat, state.relief)


@dataclass(slots=True)
class _Tabu:
    """The rank "tabu"'s memory in one run of `relieved`: the moves made, the move until
    which each op made again past the target may not be made again, the nearest
    distance so far and the moves since."""

    moves: int = 0
    until: dict[int, int] = field(default_factory=dict)
    nearest: tuple[int, int, int] | None = None
    since: int = 0

    def move(
        self, search: _Search, state: _State, ranked: tuple[list[int], list[int]]
    ) -> tuple[tuple[int, ...], np.ndarray] | None:
        """The nearest move of the best 30 of `ranked` (by their op alone) whose op may be
        made again, near or not: its steps and relief."""
        ks, rs = ranked
        creator, buffer = search.flat.creator, state.buffer
        tried = [
            (k, r)
            for k, r in zip(ks[:30], rs[:30])
            if self.until.get(int(creator[buffer[k]]), -1) < self.moves
        ]
        found = _chosen(search, state, tried, nearer=False)
        if found is None:
            return None
        self.until[found[2]] = self.moves + TABU_TENURE
        return found[0], found[1]

    def kept(self, search: _Search, state: _State) -> _State | None:
        """`state` after one more move, pruned to its own peak when long; None once
        `TABU_IDLE` moves in a row brought the profile no nearer."""
        self.moves += 1
        key = distance(state.profile, search.target)
        self.since = 0 if self.nearest is None or key < self.nearest else self.since + 1
        self.nearest = key if self.since == 0 else self.nearest
        if self.since > TABU_IDLE:
            return None
        graph = search.graph
        if len(state.steps) > TABU_STEPS * graph.ops:
            peak = int(state.profile.max(initial=0))
            steps, relief = _pruned(graph, state.steps, peak, search.flat, state.relief)
            state = evaluate(graph, steps, search.flat, relief)
        return state


def _next_move(
    search: _Search, state: _State, tabu: _Tabu | None
) -> tuple[tuple[int, ...], np.ndarray] | None:
    """The steps and relief after the move taken from `state`: the best that helps, else
    under the rank "tabu" its move; None where there is none."""
    ranked = _ranked_moves(search, state)
    found = _best_move(search, state, ranked)
    if found is None and tabu is not None:
        found = tabu.move(search, state, ranked)
    return found


def _best_move(
    search: _Search, state: _State, ranked: tuple[list[int], list[int]]
) -> tuple[tuple[int, ...], np.ndarray] | None:
    """Steps 2 and 3: the steps after the best move, or None when no move helps. The
    best-ranked candidates are tried first; where none of them helps, every other one
    (on MOCCASIN's 500-node graph at 60 %, the first six stop helping long before the
    budget is met, and the rest reach it)."""
    # `ranked` (`_ranked_moves`) by making v alone again; a move that does not help may
    # once v's inputs are made again too, so the first few are tried with those as well.
    scored = list(zip(*ranked))
    for tried in (scored[:6], scored[6:]):
        found = _chosen(search, state, tried)
        if found is not None:
            return found[0], found[1]
    return None


def _ranked_moves(search: _Search, state: _State) -> tuple[list[int], list[int]]:
    """The moves at the peak (`kernel.move_keys`), nearest first: their ks and rs."""
    p = int(np.argmax(state.profile))
    flat = search.flat
    keys, ks, rs = move_keys(
        p,
        state.profile,
        state.crossing,
        state.relief,
        state.buffer,
        state.start,
        state.end,
        state.read_ptr,
        state.read_steps,
        state.made_ptr,
        state.made,
        flat.creator,
        search.recomputable,
        flat.sizes,
        flat.reads_ptr,
        flat.reads_idx,
        flat.creates_ptr,
        flat.creates_idx,
        search.target,
    )
    ranked = np.lexsort((ks, keys[:, 2], keys[:, 1], keys[:, 0]))
    return ks[ranked].tolist(), rs[ranked].tolist()


def _chosen(
    search: _Search, state: _State, tried: list[tuple[int, int]], nearer: bool = True
) -> tuple[tuple[int, ...], np.ndarray, int] | None:
    """Of making instance k again before step r, for each (k, r) of `tried`, with its
    dead inputs' ops made again to each depth: the steps of the one `search.rank`
    prefers among those that bring the profile nearer the target (among all, where not
    `nearer`), their relief and the op made again; or None."""
    graph, flat = search.graph, search.flat
    before = distance(state.profile, search.target)
    best: tuple[tuple[float, ...], list[int], int] | None = None
    for k, r in tried:
        if now() > search.deadline:
            break
        spend(len(state.steps) * CANDIDATE_WORK)
        v = int(flat.creator[state.buffer[k]])
        ops, ptr = _levels(search, state, v, r)
        previous = 0
        for depth in (0, 1, 2, 4, 8, 64):
            if depth and previous >= len(ptr) - 1:
                break  # the same chain as the depth before
            previous = depth
            upto = ops[: ptr[min(depth, len(ptr) - 1)]]
            chain = upto[np.argsort(state.first[upto], kind="stable")].tolist() + [v]
            peak, count, over = chain_key(
                np.array(chain, dtype=np.int64),
                r,
                state.profile,
                state.crossing,
                state.relief,
                state.buffer,
                state.start,
                state.end,
                state.read_ptr,
                state.read_steps,
                state.made_ptr,
                state.made,
                flat.sizes,
                flat.reads_ptr,
                flat.reads_idx,
                flat.creates_ptr,
                flat.creates_idx,
                flat.live_out,
                search.target,
            )
            key = (int(peak), int(count), int(over))
            if key < before or not nearer:
                cost = sum(graph.costs[u] if graph.costs else 1 for u in chain)
                rank = _rank(search.rank, cost, key, before)
                if best is None or rank < best[0]:
                    best = (rank, chain, r)
    if best is None:
        return None
    _, chain, r = best
    return (
        state.steps[:r] + tuple(chain) + state.steps[r:],
        _inserted(state.relief, r, len(chain)),
        chain[-1],
    )


def _inserted(relief: np.ndarray, r: int, count: int) -> np.ndarray:
    """The relief of a schedule with `count` steps inserted before step r: theirs is r's."""
    return np.concatenate((relief[:r], np.full(count, relief[r], dtype=np.int64), relief[r:]))


def _rank(
    rank: str, cost: int, key: tuple[int, int, int], before: tuple[int, int, int]
) -> tuple[float, ...]:
    """A move's place under `rank` (`greedy`'s docstring): smaller is preferred."""
    if rank == "cost":
        return (cost, *key)
    if rank in ("key", TABU):
        return (*key, cost)
    return (-(before[2] - key[2]) / (cost + 1), *key)


def _levels(search: _Search, state: _State, v: int, r: int) -> tuple[np.ndarray, np.ndarray]:
    """Ops to run again before v at step r so that v's inputs whose instances are dead by
    then are made again rather than kept, a level at a time (up to 64; `kernel.levels`:
    level d is `ops[ptr[d]:ptr[d + 1]]`): the first d levels, in an order that makes each
    one's inputs first (that of their first runs), are the chain of depth d. Each op is
    visited once: a walk of paths instead spent 530 s on one 250-node graph."""
    flat = search.flat
    return levels(  # type: ignore[no-any-return]
        v,
        r,
        flat.reads_ptr,
        flat.reads_idx,
        flat.creator,
        search.recomputable,
        state.made_ptr,
        state.made,
        state.start,
        state.end,
    )


def prune(
    graph: Graph, steps: Sequence[int], target: int, flat: Flat | None = None
) -> tuple[int, ...]:
    """Step 4: without each recomputation, dearest first, where the peak stays in target."""
    return _pruned(graph, steps, target, flat or Flat(graph), np.zeros(len(steps), dtype=np.int64))[
        0
    ]


def runs_again(steps: Sequence[int]) -> list[int]:
    """The steps that run an op after its first run."""
    seen: set[int] = set()
    again = []
    for t, v in enumerate(steps):
        if v in seen:
            again.append(t)
        seen.add(v)
    return again


def _pruned(
    graph: Graph, steps: Sequence[int], target: int, flat: Flat, relief: np.ndarray
) -> tuple[tuple[int, ...], np.ndarray]:
    """`prune` with each step's relief counted: the steps kept, and theirs."""
    array = np.array(steps, dtype=np.int64)
    kept = np.ones(len(array), dtype=np.bool_)
    again = runs_again(steps)
    for t in sorted(again, key=lambda t: -(graph.costs[steps[t]] if graph.costs else 1)):
        kept[t] = False
        if int((flat(array[kept]) + relief[kept]).max(initial=0)) > target:
            kept[t] = True
    return tuple(array[kept].tolist()), relief[kept]
