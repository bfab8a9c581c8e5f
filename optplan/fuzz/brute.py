"""An exhaustive planner for tiny problems, sharing no code with optplan's planners.

Steps:

1. Alias classes are rectangles: the union of the members' lifetimes by the class's
   height (max of delta + size); a class's root offset must put every member on a
   multiple of its alignment (`optplan.strategies.problems.first_offset`).
2. Pinned classes sit where their pins say; pins that contradict each other, the
   alignments, or another pinned class mean no placement exists (INFEASIBLE).
3. For every order of the other classes, drop each in turn to the lowest offset that
   meets its alignments and clears every class already placed and live with it.
4. The best arena over all orders is optimal: in an optimal placement, take the classes
   by offset; dropping them in that order never lifts one above where it was.

Exponential in the number of classes: use it only up to `BRUTE_CLASSES` of them.
"""

from __future__ import annotations

import itertools
import math

from optplan.problem import AliasClass, Problem, alias_classes, lower_bound
from optplan.problem.plan import Plan, Status
from optplan.strategies.problems import first_offset

BRUTE_CLASSES = 8  # 8! orders, most cut short once they reach the best arena


def brute_force(problem: Problem) -> Plan:
    """The optimal plan of a problem of at most `BRUTE_CLASSES` classes (capacity ignored);
    INFEASIBLE, with no offsets, when no placement exists at all: pins that contradict
    each other, the alignments, or another pinned class live at the same time."""
    classes = alias_classes(problem)
    if len(classes) > BRUTE_CLASSES:
        raise ValueError(f"{len(classes)} classes is too many for the brute force")
    sizes = {b.id: b.size for b in problem.buffers}
    aligns = {b.id: b.alignment for b in problem.buffers}
    nothing = Plan({}, 0, Status.INFEASIBLE, "brute force", lower_bound(problem))
    placed_pins: list[tuple[AliasClass, int]] = []
    for cls in classes:
        members = [(aligns[name], delta) for name, delta in cls.members]
        if not _aligned_somewhere(members):
            return nothing
        if cls.pins:
            root = cls.pins[0]
            if len(cls.pins) > 1 or root < 0 or first_offset(root, members) != root:
                return nothing
            if any(_clash(cls, root, other, at) for other, at in placed_pins):
                return nothing
            placed_pins.append((cls, root))
    free = [c for c in classes if not c.pins]
    best: dict[str, int] | None = None
    best_arena = 0
    floor = max([0, *(root + _height(c, sizes) for c, root in placed_pins)])
    for order in itertools.permutations(range(len(free))):
        placed = list(placed_pins)
        arena = floor
        for index in order:
            cls = free[index]
            members = [(aligns[name], delta) for name, delta in cls.members]
            root = _drop(cls, members, placed)
            placed.append((cls, root))
            arena = max(arena, root + _height(cls, sizes))
            if best is not None and arena >= best_arena:
                break  # this order cannot beat the best one any more
        if best is None or arena < best_arena:
            best = {name: root + delta for c, root in placed for name, delta in c.members}
            best_arena = arena
    return Plan(best or {}, best_arena, Status.OPTIMAL, "brute force", lower_bound(problem))


def _aligned_somewhere(members: list[tuple[int, int]]) -> bool:
    """Whether some root offset puts every member on a multiple of its alignment."""
    for (a, d), (b, e) in itertools.combinations(members, 2):
        if (d - e) % math.gcd(a, b):
            return False
    return True


def _clash(a: AliasClass, at: int, b: AliasClass, bt: int) -> bool:
    """Whether two placed classes share a byte while both are live."""
    share = at < bt + b.size and bt < at + a.size and a.size and b.size
    return bool(share) and _meet(a, b)


def _height(cls: AliasClass, sizes: dict[str, int]) -> int:
    return max(delta + sizes[name] for name, delta in cls.members)


def _drop(cls: AliasClass, members: list[tuple[int, int]], placed: list) -> int:  # type: ignore[type-arg]
    """The lowest aligned root offset at which `cls` clears every placed class it meets."""
    live = [other for other in placed if _meet(cls, other[0])]
    offset = first_offset(0, members)
    while True:
        clash = [
            root + other.size
            for other, root in live
            if root < offset + cls.size and offset < root + other.size and cls.size and other.size
        ]
        if not clash:
            return offset
        offset = first_offset(max(clash), members)


def _meet(a: AliasClass, b: AliasClass) -> bool:
    return any(x.overlaps(y) for x in a.live for y in b.live)
