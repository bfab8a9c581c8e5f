"""One part as the CP-SAT planner sees it, apart from its model: what a part's solve
reads of the options (`Settings`), what it gives back (`PartResult`), and the part's top.

The model itself (`model`) imports OR-Tools, half a second of start-up with the pandas it
pulls in, so the planner imports it only when it solves a part; greedy, naive and tokens
never do.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from optplan.planners.common import Rect
from optplan.planners.watch import Watch
from optplan.problem.plan import Status


class Settings(Protocol):
    """What a part's solve reads of the planner's options (`cpsat.CpSat` has them)."""

    @property
    def decide_first(self) -> bool: ...
    @property
    def symmetry(self) -> bool: ...
    @property
    def first_pass(self) -> float: ...
    @property
    def num_workers(self) -> int: ...
    @property
    def random_seed(self) -> int: ...
    @property
    def watch(self) -> Watch | None: ...


@dataclass(frozen=True, slots=True)
class PartResult:
    """What the solver made of one part: offsets (by rect index) if found, and a bound."""

    status: Status
    offsets: list[int] | None
    bound: int
    notes: dict[str, object] = field(default_factory=dict)


def part_top(part: Sequence[Rect], offsets: Sequence[int]) -> int:
    """The highest byte of `part` with `offsets` (one per rectangle index)."""
    return max((offsets[r.index] + r.size for r in part), default=0)
