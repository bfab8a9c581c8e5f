"""The least traffic of a tiny problem of several memories, by trying every plan.

Shares no code with the planners. Steps:

1. Each alias class of several buffers, and each pinned buffer, stays in one memory all
   its life: one option per memory every member may use (every buffer, without copies).
2. Any other buffer may be held, at each live point, by any non-empty set of the
   memories it may use, with one memory at its first point and where it is written, and
   every memory entered at a point filled by a copy from one holding it at that point and
   the one before (the cheapest such).
3. Traffic, counted here: writes in the memory holding the buffer, reads from the
   cheapest holding it, each copy's bytes in its source and its target, times cost.
4. Combinations of options in order of traffic; the first whose every memory packs (the
   exhaustive `optplan.fuzz.brute.brute_force` on the buffers it holds, each live over
   the points held, within its capacity) is optimal. None: no combination packs.
"""

from __future__ import annotations

import itertools
import math

from optplan.fuzz.brute import brute_force
from optplan.problem import Alias, Buffer, Interval, Problem, alias_classes

Option = tuple[int, dict[str, dict[str, tuple[int, ...]]]]  # traffic, memory -> buffer -> points

# The most plans the fuzz judge lets the brute force weigh (`plans_to_weigh`): problems of
# three buffers over three points in two or three memories, a few seconds at most.
BRUTE_PLANS = 20_000


def plans_to_weigh(problem: Problem) -> int:
    """How many plans the brute force weighs, at most: a non-empty set of memories per
    buffer per live point."""
    per_point = 2 ** len(problem.memories) - 1
    return math.prod(per_point ** sum(iv.end - iv.start for iv in b.live) for b in problem.buffers)


def least_traffic(problem: Problem, *, copies: bool = True) -> int | None:
    """Without `copies`, every buffer stays in one memory all its life (step 1 for all)."""
    names = [m.name for m in problem.memories]
    cost = {m.name: m.cost for m in problem.memories}
    per_class = [
        _options(problem, names, cost, cls.members, copies) for cls in alias_classes(problem)
    ]
    combos = sorted(
        (sum(option[0] for option in combo), position, combo)
        for position, combo in enumerate(itertools.product(*per_class))
    )
    for total, _, combo in combos:
        if all(_packs(problem, memory, combo) for memory in problem.memories):
            return total
    return None


def _options(
    problem: Problem,
    names: list[str],
    cost: dict[str, int],
    members: tuple[tuple[str, int], ...],
    copies: bool,
) -> list[Option]:
    buffers = [problem.buffer(name) for name, _ in members]
    allowed = [n for n in names if all(not b.memories or n in b.memories for b in buffers)]
    if len(buffers) > 1 or buffers[0].offset is not None or not copies:
        return [
            (
                sum(_accesses(b) * b.size * cost[m] for b in buffers),
                {m: {b.id: _points(b) for b in buffers}},
            )
            for m in allowed
        ]
    b = buffers[0]
    points = _points(b)
    single = {b.start, *b.written_at}
    found = []
    subsets = [s for k in range(1, len(allowed) + 1) for s in itertools.combinations(allowed, k)]
    for held in itertools.product(subsets, repeat=len(points)):
        if any(len(h) > 1 and p in single for h, p in zip(held, points)):
            continue
        per_byte = _copies(held, cost)
        if per_byte is None:
            continue
        traffic = per_byte * b.size
        at = dict(zip(points, held))
        traffic += sum(b.size * cost[at[p][0]] for p in b.written_at)
        traffic += sum(b.size * min(cost[m] for m in at[p]) for p in b.read_at)
        where = {m: {b.id: tuple(p for p, h in zip(points, held) if m in h)} for m in allowed}
        found.append((traffic, {m: v for m, v in where.items() if v[b.id]}))
    return found


def _copies(held: tuple[tuple[str, ...], ...], cost: dict[str, int]) -> int | None:
    """The cost per byte of the copies a sequence of held sets needs; None if some
    memory is entered with no memory holding the buffer before and after."""
    total = 0
    for before, now in itertools.pairwise(held):
        for target in set(now) - set(before):
            sources = set(now) & set(before)
            if not sources:
                return None
            total += min(cost[s] for s in sources) + cost[target]
    return total


def _accesses(b: Buffer) -> int:
    return len(b.written_at) + len(b.read_at)


def _points(b: Buffer) -> tuple[int, ...]:
    return tuple(sorted({p for iv in b.live for p in range(iv.start, iv.end)}))


def _packs(problem: Problem, memory: object, combo: tuple[Option, ...]) -> bool:
    name, capacity, alignment = memory.name, memory.capacity, memory.alignment  # type: ignore[attr-defined]
    held: dict[str, tuple[int, ...]] = {}
    for _, where in combo:
        held.update(where.get(name, {}))
    if not held:
        return True
    buffers = []
    for buffer_id, points in held.items():
        b = problem.buffer(buffer_id)
        live = tuple(Interval(p, p + 1) for p in points)
        buffers.append(
            Buffer(b.id, b.size, _joined(live), math.lcm(b.alignment, alignment), b.offset)
        )
    aliases = tuple(
        Alias(a.base, a.view, a.delta) for a in problem.aliases if a.base in held and a.view in held
    )
    plan = brute_force(Problem(tuple(buffers), aliases))
    return plan.status.has_plan and (capacity is None or plan.arena <= capacity)


def _joined(unit: tuple[Interval, ...]) -> tuple[Interval, ...]:
    runs: list[Interval] = []
    for iv in unit:
        if runs and runs[-1].end == iv.start:
            runs[-1] = Interval(runs[-1].start, iv.end)
        else:
            runs.append(iv)
    return tuple(runs)
