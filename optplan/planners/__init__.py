"""Planners: from a `Problem` to a `Plan`, by name.

A planner is a frozen dataclass of options with a `name`, derived from `base.Declared`:
calling it on a problem builds the one input form every planner packs
(`common.make_form`: the rectangles of alias classes, split into parts) and hands it to
the planner's `arena`, or, for a problem of several memories, hands the problem to its
`memories` (`base.Declared` holds that one fork). Planners know
only `optplan.problem` and `optplan.problem.plan`; they never import the IR. `cpsat` also takes a
`watch.Watch`, which hears of its progress and can stop it (its best plan so far).

    >>> plan = get_planner("greedy", orders=("size",))(problem)

Every plan fills `lower_bound` (live bytes), `bound` (the best bound the planner proved,
at least `lower_bound`), `seconds` and `status`. `greedy` and `cpsat` return UNKNOWN with
no offsets when the best arena they found exceeds the problem's capacity, INFEASIBLE when
they proved that nothing fits.

A problem judged by traffic (`Problem.objective`) goes to `tiers`: each planner decides
where every tensor is at every point (`naive` and `tokens`: all in the dearest memory;
`greedy`: filling the cheapest first; `spill`: Belady's rule; `cpsat`: one CP-SAT model
of residency, copies and offsets) and packs each memory with its own packer.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar, Protocol

from optplan.budget import Budget
from optplan.planners.base import configured
from optplan.planners.common import Form
from optplan.planners.cpsat import CpSat
from optplan.planners.greedy import Greedy
from optplan.planners.naive import Naive
from optplan.planners.spill import Spill
from optplan.planners.tokens import TokensPlanner
from optplan.planners.watch import Watch
from optplan.problem import Problem
from optplan.problem.plan import Plan


class Planner(Protocol):
    """Called on a problem, a planner builds the form and plans; `plan(form)` plans on a
    form already built (several planners on one problem share it). What it takes (a
    budget of work, a watch) it declares (`base.Declared`). Adding a planner: a module
    with a `Declared` subclass that defines `arena` and `memories`, and a row in
    `PLANNERS`."""

    takes_work: ClassVar[bool]
    takes_watch: ClassVar[bool]
    takes_copies: ClassVar[bool]

    @property
    def name(self) -> str: ...

    def __call__(self, problem: Problem) -> Plan: ...

    def plan(self, form: Form) -> Plan: ...


PLANNERS: dict[str, Planner] = {
    "naive": Naive(),
    "tokens": TokensPlanner(),
    "greedy": Greedy(),
    "cpsat": CpSat(),
    "spill": Spill(),
}


def drive(
    problem: Problem,
    planner: str | Planner,
    budget: Budget | None = None,
    *,
    watch: Watch | None = None,
    form: Form | None = None,
) -> Plan:
    """Plan `problem` (or its `form`, already built) with `planner` (a name or options),
    given `budget` and `watch` where it takes them (`base.configured`). With a budget
    that counts work, the plan is the same on any machine unless the guard cut it (detail
    `"cut"`)."""
    chosen = get_planner(planner) if isinstance(planner, str) else planner
    chosen = configured(chosen, budget, watch)  # type: ignore[type-var]
    return chosen(problem) if form is None else chosen.plan(form)


def get_planner(name: str, **options: object) -> Planner:
    """The planner called `name`, with `options` replacing its defaults.

    Raises ValueError naming the planner or option that does not exist.
    """
    if name not in PLANNERS:
        raise ValueError(f"unknown planner {name!r}; choose from {', '.join(sorted(PLANNERS))}")
    planner = PLANNERS[name]
    known = {f.name for f in dataclasses.fields(planner)} - {"name"}  # type: ignore[arg-type]
    for option in options:
        if option not in known:
            raise ValueError(
                f"planner {name!r} has no option {option!r}; it takes {', '.join(sorted(known)) or 'none'}"
            )
    return dataclasses.replace(planner, **options)  # type: ignore[type-var]


__all__ = [
    "PLANNERS",
    "CpSat",
    "Greedy",
    "Naive",
    "Planner",
    "Spill",
    "TokensPlanner",
    "get_planner",
]
