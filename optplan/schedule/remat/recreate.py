"""Ruin and recreate: lower a schedule's extra compute while its peak stays in a target.

The peak heuristic (`heuristic.greedy`) makes one choice a move and never takes one
back: a run again taken early to lower the peak may be dear where a later move would
have covered the same step more cheaply. From a schedule within the target, steps of
`recreate`:

1. Ruin: drop a share of its runs again (between `RUIN_LOW` and `RUIN_HIGH` of them),
   drawn at random from a seeded generator; the first runs stay, so the schedule is
   still valid, and its peak is above the target again. A local ruin (`LOCAL`) drops
   fewer, next to each other in the schedule around one drawn, so that a round's
   repair is one stretch of steps.
2. Recreate: the peak heuristic from the ruined schedule, under the rank "ratio" or
   "cost" (drawn), back to the target; then pruned (`heuristic.prune`). Where the
   packing rounds lowered the target at some steps (`relieved_again`), each step
   keeps its relief.
3. Keep it where its extra compute is no higher than the kept one's (equal: a step on
   a plateau). Repeat from 1, `rounds` times at most, until `IDLE` rounds in a row
   bring none cheaper, or the deadline.

    kept:     0 1 2 a 3 4 b 5 6 a 7 8        a, b: runs again
    ruined:   0 1 2 3 4 b 5 6 7 8            a's run again dropped: over the target
    recreated 0 1 2 3 4 b 5 c 6 7 8          the heuristic covers it with c instead

Each round is the heuristic's own work (its moves and candidates) on the running
clock, and the draws are seeded, so the same schedule and target give the same result
under a clock counted in work. Every schedule kept is one the heuristic met within the
target (the test: `tests/test_remat_recreate.py`).
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np

from optplan.budget import now
from optplan.schedule.graph import Graph
from optplan.schedule.remat.heuristic import extra_cost, relieved, runs_again

RUIN_LOW = 0.05  # the least share of the runs again one round drops
RUIN_HIGH = 0.3  # the most
# A local ruin's least and most shares. From a dear schedule it goes lower: on MOCCASIN's
# 1,000-node graph at 50 %, from the cheapest rank's schedule at the budget (+157.4 %),
# 12 units bring +61 to +76 % (four seeds) where as many drawn anywhere bring +72 to
# +102 % (5-30 % of them: +87 %); on its 500-node graph at 50 %, from the tabu rank's
# +302.4 %, +100 and +121 % against +272 and +280 % (5-30 %). From the cheap schedules
# of a ladder's rungs (3 units) it lost MOCCASIN's 500-node graph at 60 % (nothing
# packed in 30 units, +41.3 % without).
LOCAL = (0.01, 0.1)
# Rounds in a row with none cheaper, after which it stops: on MOCCASIN's 1,000-node graph
# at 60 %, the cheapest came 90 rounds after the one before (benchmarks/results/remat.csv).
IDLE = 150
RANKS = ("ratio", "cost")  # the ranks a round recreates under, drawn
RECREATE = "recreate"  # the method of a schedule it gave, in an answer


def recreate(
    graph: Graph,
    steps: Sequence[int],
    target: int,
    recomputable: Sequence[bool],
    deadline: float,
    rounds: int = 1_000,
    seed: int = 0,
    local: bool = False,
) -> tuple[int, ...]:
    """A schedule within `target` no dearer than `steps` (which must be within it), by
    the module docstring's rounds (a local ruin where `local`): `steps` itself where
    none is cheaper."""
    relief = np.zeros(len(steps), dtype=np.int64)
    return relieved_again(
        graph, (tuple(steps), relief), target, recomputable, deadline, rounds, seed, local
    )[0]


def relieved_again(
    graph: Graph,
    start: tuple[tuple[int, ...], np.ndarray],
    target: int,
    recomputable: Sequence[bool],
    deadline: float,
    rounds: int = 1_000,
    seed: int = 0,
    local: bool = False,
) -> tuple[tuple[int, ...], np.ndarray]:
    """`recreate` with each step's relief counted (`heuristic.relieved`: the packing
    rounds' lower target at the steps where a packing overflowed): from `start`'s steps
    and relief, the kept schedule and its relief."""
    rng = random.Random(seed)
    kept, relief = start
    cost = extra_cost(graph, kept)
    idle = 0
    for _ in range(rounds):
        again = runs_again(kept)
        if not again or idle >= IDLE or now() > deadline:
            break
        drop = _ruined(rng, again, local)
        mask = np.array([t not in drop for t in range(len(kept))], dtype=np.bool_)
        ruined = tuple(np.array(kept, dtype=np.int64)[mask].tolist())
        rank = rng.choice(RANKS)
        found = relieved(graph, ruined, target, recomputable, deadline, rank, relief[mask])
        idle += 1
        if found is None:
            continue
        extra = extra_cost(graph, found[0])
        if extra <= cost:
            (kept, relief), idle = found, (0 if extra < cost else idle)
            cost = extra
    return kept, relief


def _ruined(rng: random.Random, again: list[int], local: bool) -> set[int]:
    """The runs again one round drops (step 1)."""
    low, high = LOCAL if local else (RUIN_LOW, RUIN_HIGH)
    many = max(1, int(len(again) * rng.uniform(low, high)))
    if not local:
        return set(rng.sample(again, many))
    first = min(max(0, rng.randrange(len(again)) - many // 2), len(again) - many)
    return set(again[first : first + many])
