"""What a planner returns: a `Plan` with its `Status`, and the records of a plan of
several memories (`Residence`, `Copy`); `Violation` is what the judge finds wrong.

A plan of one memory gives every buffer one offset for its whole life (`offsets`, within
`arena` bytes). A plan of several gives every buffer a `Residence` in each memory it uses
(one offset there, and the points it is held there) and lists the `Copy` steps that move
its bytes between memories:

    point:        0    1    2    3    4    5
    x in fast     [=========)         [====)     written in fast at 0, read at 1 and 5
    x in slow          [==============)          spilled at 1, prefetched at 4
    copies             ^ fast->slow   ^ slow->fast

A copy at point p runs before the op of point p, so both memories hold the buffer at p.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from optplan.problem.buffers import Interval


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
    """Offsets for every buffer, the arena they fit in, and how the planner got there.

    `lower_bound` is the live-bytes bound of the problem; `bound` the best lower bound on
    the optimal arena that the planner proved (at least `lower_bound`). A planner that found
    nothing returns status INFEASIBLE or UNKNOWN with empty offsets and arena 0.
    `storages` cuts the arena into separate storages, as (offset, size in bytes) pairs, for
    planners that allocate several (TVM's tokens); empty means one storage, the arena.

    A plan of several memories also holds every buffer's `residences` and the `copies`
    between them; `offsets` then gives each buffer's offset where it is written (its
    residence at its first point), `arena` the bytes used in the problem's first memory,
    `traffic` the traffic the plan claims (`optplan.problem.plan.traffic`) and
    `traffic_bound` the least traffic the planner proved any plan needs; its status
    and gap speak of traffic. A plan of one memory has neither (`traffic` None).
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


@dataclass(frozen=True, slots=True)
class Violation:
    """One thing wrong with a plan, naming the buffers involved."""

    kind: str
    buffers: tuple[str, ...]
    message: str

    def __str__(self) -> str:
        return self.message
