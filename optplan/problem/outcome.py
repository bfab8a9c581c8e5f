"""What a planner returns: a `Plan` with its `Status`, where each buffer resides
(`Residence`) and what it copies (`Copy`); `Violation` is what the judge finds wrong.

A plan gives every buffer a `Residence` in each memory it uses (one offset there, and the
points it is held there) and lists the `Copy` steps that move its bytes between memories;
`offsets` and `arena` are views of them. A plan that lists no residences keeps every
buffer in the problem's first memory all its life, at its offset: the plan of one arena,
spelled compactly (a million buffers need no million records); `residences_of` gives its
residences all the same, and `bytes_used` what each memory holds, for any plan.

    point:        0    1    2    3    4    5
    x in fast     [=========)         [====)     written in fast at 0, read at 1 and 5
    x in slow          [==============)          spilled at 1, prefetched at 4
    copies             ^ fast->slow   ^ slow->fast

A copy at point p runs before the op of point p, so both memories hold the buffer at p.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from optplan.problem.buffers import Interval

if TYPE_CHECKING:
    from optplan.problem.core import Problem


class Status(enum.Enum):
    OPTIMAL = "optimal"
    FEASIBLE = "feasible"
    INFEASIBLE = "infeasible"
    UNKNOWN = "unknown"

    @property
    def has_plan(self) -> bool:
        return self in (Status.OPTIMAL, Status.FEASIBLE)


@dataclass(frozen=True, slots=True, order=True)
class Residence:
    """Buffer `buffer` held in memory `memory` at `offset` over the points `live`."""

    buffer: str
    memory: str
    offset: int
    live: tuple[Interval, ...]


@dataclass(frozen=True, slots=True, order=True)
class Copy:
    """At `point`, before its op runs, the bytes of `buffer` are copied from memory
    `source` into memory `target`."""

    buffer: str
    point: int
    source: str
    target: str


@dataclass(frozen=True, slots=True)
class Plan:
    """Where every buffer resides, and how the planner got there (see the module).

    `residences` and `copies`: where each buffer is held and what moves between memories;
    none listed means every buffer in the first memory all its life (`residences_of`).
    `offsets`: each buffer's offset where it is written (its residence at its first
    point; with no residences listed, its one offset). `arena`: the bytes the plan uses
    in the problem's first memory (at least every residence there ends inside it).
    `storages` cuts the arena into separate storages, as (offset, size in bytes) pairs,
    for planners that allocate several (TVM's tokens); empty means one storage.

    What the status and gap speak of is the problem's objective (`Problem.objective`):
    the arena, with `lower_bound` the live-bytes bound and `bound` the best bound on the
    arena the planner proved (at least `lower_bound`); or the traffic, with `traffic`
    what the plan claims (`optplan.problem.plan.traffic`) and `traffic_bound` the least
    traffic the planner proved any plan needs (`traffic` None: the arena is judged). A
    planner that found nothing returns status INFEASIBLE or UNKNOWN with empty offsets
    and arena 0.
    """

    offsets: dict[str, int]
    arena: int
    status: Status
    planner: str
    lower_bound: int
    seconds: float = 0.0
    bound: int = 0
    detail: dict[str, object] = field(default_factory=dict)
    storages: tuple[tuple[int, int], ...] = ()
    residences: tuple[Residence, ...] = ()
    copies: tuple[Copy, ...] = ()
    traffic: int | None = None
    traffic_bound: int = 0

    @property
    def gap(self) -> float:
        """How far the plan is above the best proven bound, as a fraction of the bound:
        the arena's bytes, or for a plan of several memories its traffic."""
        if self.traffic is not None:
            if not self.status.has_plan or self.traffic_bound <= 0:
                return 0.0
            return (self.traffic - self.traffic_bound) / self.traffic_bound
        best = max(self.bound, self.lower_bound)
        if not self.status.has_plan or best == 0:
            return 0.0
        return (self.arena - best) / best


def residences_of(problem: Problem, plan: Plan) -> tuple[Residence, ...]:
    """The plan's residences: those it lists, or, for a plan that lists none, one per
    buffer in the problem's first memory at its offset over its whole life."""
    if plan.residences or not plan.status.has_plan:
        return plan.residences
    home = problem.memories[0].name
    return tuple(
        Residence(b.id, home, plan.offsets[b.id], tuple(b.live))
        for b in problem.buffers
        if b.id in plan.offsets
    )


def bytes_used(problem: Problem, plan: Plan) -> dict[str, int]:
    """The bytes the plan uses in each of the problem's memories, by name: where its
    residences there end (the first memory's is the arena of a plan listing none)."""
    used = dict.fromkeys((m.name for m in problem.memories), 0)
    if not plan.residences:
        used[problem.memories[0].name] = plan.arena
        return used
    sizes = {b.id: b.size for b in problem.buffers}
    for r in plan.residences:
        if r.memory in used and r.buffer in sizes:
            used[r.memory] = max(used[r.memory], r.offset + sizes[r.buffer])
    return used


@dataclass(frozen=True, slots=True)
class Violation:
    """One thing wrong with a plan, naming the buffers involved."""

    kind: str
    buffers: tuple[str, ...]
    message: str

    def __str__(self) -> str:
        return self.message
