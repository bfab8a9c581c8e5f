"""Plans and the one independent judge of them.

A `Plan` gives every buffer of a `Problem` a byte offset in one arena. `validate` checks a
plan against its problem and shares no code with any planner: it is short, does its own
alias grouping, and compares buffers by a plain sweep over time.

Checks, in order: a status without a plan has no offsets to check; every buffer has an
offset, that offset is >= 0, a multiple of the buffer's alignment, and equal to the pin if
the buffer is pinned; the buffer ends inside the arena (and the arena inside the capacity);
every alias equation holds; no two buffers live at the same point share a byte unless
they are tied by aliases (a view and its base do share bytes).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from optplan.problem import Problem


class Status(enum.Enum):
    OPTIMAL = "optimal"
    FEASIBLE = "feasible"
    INFEASIBLE = "infeasible"
    UNKNOWN = "unknown"

    @property
    def has_plan(self) -> bool:
        return self in (Status.OPTIMAL, Status.FEASIBLE)


@dataclass(frozen=True, slots=True)
class Plan:
    """Offsets for every buffer, the arena they fit in, and how the planner got there.

    `lower_bound` is the live-bytes bound of the problem; `bound` the best lower bound on
    the optimal arena that the planner proved (at least `lower_bound`). A planner that found
    nothing returns status INFEASIBLE or UNKNOWN with empty offsets and arena 0.
    """

    offsets: dict[str, int]
    arena: int
    status: Status
    planner: str
    lower_bound: int
    seconds: float = 0.0
    bound: int = 0
    detail: dict[str, object] = field(default_factory=dict)

    @property
    def gap(self) -> float:
        """How far the arena is above the best proven bound, as a fraction of the bound."""
        best = max(self.bound, self.lower_bound)
        if not self.status.has_plan or best == 0:
            return 0.0
        return (self.arena - best) / best


@dataclass(frozen=True, slots=True)
class Violation:
    """One thing wrong with a plan, naming the buffers involved."""

    kind: str
    buffers: tuple[str, ...]
    message: str

    def __str__(self) -> str:
        return self.message


def validate(problem: Problem, plan: Plan) -> list[Violation]:
    """Everything wrong with `plan` as a placement of `problem`; empty when it is valid."""
    if not plan.status.has_plan:
        return []
    faults: list[Violation] = []
    offsets = plan.offsets
    known = {b.id for b in problem.buffers}
    for name in offsets:
        if name not in known:
            faults.append(Violation("unknown", (name,), f"offset given for unknown buffer {name!r}"))
    if plan.arena < 0:
        faults.append(Violation("arena", (), f"arena {plan.arena} is negative"))
    if problem.capacity is not None and plan.arena > problem.capacity:
        faults.append(
            Violation("capacity", (), f"arena {plan.arena} exceeds capacity {problem.capacity}")
        )
    for b in problem.buffers:
        offset = offsets.get(b.id)
        if offset is None:
            faults.append(Violation("missing", (b.id,), f"buffer {b.id!r} has no offset"))
        elif offset < 0:
            faults.append(Violation("negative", (b.id,), f"buffer {b.id!r} at negative offset {offset}"))
        elif offset % b.alignment:
            faults.append(
                Violation(
                    "alignment",
                    (b.id,),
                    f"buffer {b.id!r} at offset {offset} is not a multiple of {b.alignment}",
                )
            )
        if offset is not None and b.offset is not None and offset != b.offset:
            faults.append(
                Violation("pinned", (b.id,), f"buffer {b.id!r} is pinned at {b.offset}, placed at {offset}")
            )
        if offset is not None and offset + b.size > plan.arena:
            faults.append(
                Violation(
                    "arena",
                    (b.id,),
                    f"buffer {b.id!r} ends at byte {offset + b.size}, past the arena of {plan.arena}",
                )
            )
    for alias in problem.aliases:
        base, view = offsets.get(alias.base), offsets.get(alias.view)
        if base is not None and view is not None and view != base + alias.delta:
            faults.append(
                Violation(
                    "alias",
                    (alias.base, alias.view),
                    f"view {alias.view!r} at {view} should be at {alias.base!r} + {alias.delta} = "
                    f"{base + alias.delta}",
                )
            )
    faults.extend(_overlaps(problem, offsets))
    return faults


def _tied_groups(problem: Problem) -> dict[str, int]:
    """A group number per buffer; buffers tied by aliases share one."""
    neighbours: dict[str, list[str]] = {b.id: [] for b in problem.buffers}
    for alias in problem.aliases:
        neighbours[alias.base].append(alias.view)
        neighbours[alias.view].append(alias.base)
    group: dict[str, int] = {}
    for start in neighbours:
        if start in group:
            continue
        group[start] = len(group)
        number = group[start]
        stack = [start]
        while stack:
            for other in neighbours[stack.pop()]:
                if other not in group:
                    group[other] = number
                    stack.append(other)
    return group


def _overlaps(problem: Problem, offsets: dict[str, int]) -> list[Violation]:
    """Pairs of buffers live at one point whose bytes intersect, by a sweep over time.

    Intervals are half-open, so at equal points an end is handled before a start: a buffer
    ending at t and one starting at t never conflict.
    """
    group = _tied_groups(problem)
    events: list[tuple[int, int, int, str]] = []
    for b in problem.buffers:
        if b.id not in offsets or b.size == 0:
            continue
        for number, iv in enumerate(b.live):
            events.append((iv.start, 1, number, b.id))
            events.append((iv.end, 0, number, b.id))
    events.sort()
    active: dict[tuple[str, int], None] = {}
    reported: set[tuple[str, str]] = set()
    faults: list[Violation] = []
    for _, is_start, number, name in events:
        key = (name, number)
        if not is_start:
            active.pop(key, None)
            continue
        low = offsets[name]
        high = low + problem.buffer(name).size
        for other, _ in active:
            if other == name or group[other] == group[name]:
                continue
            other_low = offsets[other]
            other_high = other_low + problem.buffer(other).size
            pair = (min(name, other), max(name, other))
            if low < other_high and other_low < high and pair not in reported:
                reported.add(pair)
                faults.append(
                    Violation(
                        "overlap",
                        pair,
                        f"buffers {pair[0]!r} and {pair[1]!r} are live at the same time and share "
                        f"bytes [{max(low, other_low)}, {min(high, other_high)})",
                    )
                )
        active[key] = None
    return faults
