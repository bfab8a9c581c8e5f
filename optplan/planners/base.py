"""What a planner takes, declared once in its class rather than found out by callers.

    takes_work    it searches, and stops on a `budget.Budget`: its options hold `work`
                  (units) and `time_limit` (seconds, the guard)
    takes_watch   it reports progress to a `watch.Watch` and stops when the watch does
    takes_copies  of several memories, it may copy a tensor between them (`copies`
                  False: each stays in one memory, as banked planners place them)

`configured` gives a planner a budget and a watch where it takes them; nothing else
reads a planner's fields to find out what it takes.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar, TypeVar

from optplan.budget import Budget
from optplan.planners.watch import Watch


class Declared:
    """The base of every planner's options: what the planner takes (none, by default)."""

    __slots__ = ()
    takes_work: ClassVar[bool] = False
    takes_watch: ClassVar[bool] = False
    takes_copies: ClassVar[bool] = False


P = TypeVar("P", bound=Declared)


def configured(planner: P, budget: Budget | None = None, watch: Watch | None = None) -> P:
    """`planner` with `budget` (its work and guard) and `watch`, where it takes them."""
    changes: dict[str, object] = {}
    if budget is not None and planner.takes_work:
        changes["work"] = budget.work
        changes["time_limit"] = budget.seconds
    if watch is not None and planner.takes_watch:
        changes["watch"] = watch
    return dataclasses.replace(planner, **changes) if changes else planner  # type: ignore[type-var]
