"""The least arena of a small problem, by exhaustive search, sharing nothing with planners.

It tries every order of the alias classes and drops each, in turn, to the lowest offset
its members' alignments allow that clears the classes already placed and live with it.
That is exact: in an optimal placement, take the free classes by offset; dropping each one
in that order never lifts it above where it was (everything placed before it and live with
it sits no higher than before and ended below it; pinned classes never move), so some
order reproduces an arena no larger than the optimum.

A class is one allocation: its rectangle (the members' deltas and sizes) is reserved over
the union of its members' lifetimes. `None` means no placement exists at all (pins that
contradict each other, the alignments or each other); a capacity is not applied here.
"""

from __future__ import annotations

import itertools

from optplan.problem import AliasClass, Interval, Problem, alias_classes

Placed = tuple[int, int, tuple[Interval, ...]]  # offset, size, lifetime


def brute_force(problem: Problem) -> int | None:
    """The smallest arena of any valid placement; None when there is none."""
    classes = alias_classes(problem)
    alignment = {b.id: b.alignment for b in problem.buffers}

    def aligned(cls: AliasClass, offset: int) -> bool:
        return all((offset + delta) % alignment[name] == 0 for name, delta in cls.members)

    def clear(offset: int, size: int, live: tuple[Interval, ...], placed: list[Placed]) -> list[int]:
        return [
            low + height
            for low, height, other in placed
            if low < offset + size and offset < low + height and _meet(live, other)
        ]

    def lowest(cls: AliasClass, placed: list[Placed]) -> int:
        offset = 0
        while True:
            if not aligned(cls, offset):
                offset += 1
                continue
            blockers = clear(offset, cls.size, cls.live, placed)
            if not blockers:
                return offset
            offset = max(blockers)

    pinned: list[Placed] = []
    for cls in classes:
        if len(cls.pins) > 1 or (cls.pins and (cls.pins[0] < 0 or not aligned(cls, cls.pins[0]))):
            return None
        if cls.pins and cls.size:
            if clear(cls.pins[0], cls.size, cls.live, pinned):
                return None
            pinned.append((cls.pins[0], cls.size, cls.live))
    for cls in classes:
        if not any(aligned(cls, offset) for offset in range(_lcm(cls, alignment))):
            return None
    free = [c for c in classes if not c.pins and c.size > 0]
    floor = max([low + size for low, size, _ in pinned], default=0)
    floor = max([floor] + [lowest(c, []) for c in classes if not c.pins and c.size == 0])
    floor = max([floor] + [c.pins[0] for c in classes if c.pins and c.size == 0])
    best: int | None = None
    for order in itertools.permutations(free):
        placed = list(pinned)
        arena = floor
        for cls in order:
            offset = lowest(cls, placed)
            placed.append((offset, cls.size, cls.live))
            arena = max(arena, offset + cls.size)
            if best is not None and arena >= best:
                break
        best = arena if best is None else min(best, arena)
    return floor if best is None else best


def _meet(a: tuple[Interval, ...], b: tuple[Interval, ...]) -> bool:
    return any(x.overlaps(y) for x in a for y in b)


def _lcm(cls: AliasClass, alignment: dict[str, int]) -> int:
    result = 1
    for name, _ in cls.members:
        result = result * alignment[name] // _gcd(result, alignment[name])
    return result


def _gcd(a: int, b: int) -> int:
    while b:
        a, b = b, a % b
    return a
