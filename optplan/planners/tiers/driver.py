"""Planning a problem of several memories with heuristics, and the plan they make.

Every planner takes a problem judged by traffic here (`Problem.objective`; one judged
by its arena it packs as it always has). Steps (`plan_heuristics`):

1. The form (`form.make_tier_form`); a point where the tensors confined to some memories
   cannot fit in them (`form.crowded`) makes the plan INFEASIBLE, naming the point and
   the tensors.
2. Each residency rule (`Rule`: `fill` by size or density, `spill`, everything in the
   dearest memory) says where every track is at every point, under each bounded memory's
   limit in bytes live at once. Each memory's buffers are then packed by the planner's
   own packer (greedy, naive, ...). Alignment padding and fragmentation can make a
   packing overflow a limit the live bytes kept; the rule then runs again with every
   limit lowered (`SHRINK`), until it packs.
3. The rule with the least traffic wins; its plan has the floor of `stays.floor_traffic`
   as its proven bound (every access in the cheapest memory the tensor may use), and is
   OPTIMAL when it meets it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from optplan.planners.tiers.belady import spill
from optplan.planners.tiers.fill import KEYS, Loads, fill
from optplan.planners.tiers.form import TierForm, crowded, make_tier_form
from optplan.planners.tiers.stays import (
    Packed,
    Packer,
    Stays,
    assemble,
    floor_traffic,
    no_plan,
    pack,
    static,
    traffic,
)
from optplan.problem import Problem, lower_bound
from optplan.problem.outcome import Plan, Status

# Each bounded memory's limit, as a share of its capacity, on successive tries.
SHRINK = (1.0, 0.97, 0.94, 0.9, 0.85, 0.8, 0.7, 0.6, 0.5, 0.35, 0.2)

Rule = Callable[[TierForm, Sequence[int | None]], Stays | None]


@dataclass(frozen=True, slots=True)
class Found:
    """A residency that packed: its stays, offsets, traffic, and the rule that made it."""

    stays: Stays
    packed: Packed
    traffic: int
    rule: str


def fill_rule(key: str) -> Rule:
    def rule(form: TierForm, limits: Sequence[int | None]) -> Stays | None:
        choice = fill(form, limits, key)
        return None if choice is None else static(form, choice)

    return rule


def dearest_rule(form: TierForm, limits: Sequence[int | None]) -> Stays | None:
    """Every track in the dearest memory it may use that has room (all in slow memory)."""
    loads = Loads(form, limits)
    choice = []
    for track in form.tracks:
        for memory in reversed(track.allowed):
            if loads.fits(memory, track.points, track.size):
                loads.add(memory, track.points, track.size)
                choice.append(memory)
                break
        else:
            return None
    return static(form, choice)


RULES: dict[str, Rule] = {
    **{f"fill-{key}": fill_rule(key) for key in KEYS},
    "spill": spill,
    "dearest": dearest_rule,
}


def plan_heuristics(
    problem: Problem, name: str, rules: Sequence[str], packer: Packer, *, started: float
) -> Plan:
    """Steps 1-3 of the module with `rules` (names in RULES), packed by `packer`."""
    form = make_tier_form(problem)
    reason = crowded(form)
    if reason is not None:
        return no_plan(form, name, Status.INFEASIBLE, reason, time.perf_counter() - started)
    found = best_found(form, [(rule, RULES[rule]) for rule in rules], packer)
    floor = floor_traffic(form)
    if found is None:
        reason = "no residency the rules made could be packed within the capacities"
        return no_plan(form, name, Status.UNKNOWN, reason, time.perf_counter() - started, floor)
    return found_plan(form, found, name, started=started, bound=floor)


def best_found(form: TierForm, rules: Sequence[tuple[str, Rule]], packer: Packer) -> Found | None:
    """The packed residency of least traffic over `rules` (the first on a tie)."""
    best: Found | None = None
    for label, rule in rules:
        found = tighten(form, rule, packer, label)
        if found is not None and (best is None or found.traffic < best.traffic):
            best = found
    return best


def tighten(form: TierForm, rule: Rule, packer: Packer, label: str) -> Found | None:
    """`rule`'s residency at the first limits (SHRINK) whose memories pack."""
    for share in SHRINK:
        limits = [None if m.capacity is None else int(m.capacity * share) for m in form.memories]
        stays = rule(form, limits)
        if stays is None:
            return None
        packed = pack(form, stays, packer)
        if packed.failed is None:
            return Found(stays, packed, traffic(form, stays), label)
        if all(m.capacity is None for m in form.memories):
            return None
    return None


def found_plan(
    form: TierForm, found: Found, name: str, *, started: float, bound: int, optimal: bool = False
) -> Plan:
    """The plan of `found`: OPTIMAL when its traffic meets `bound` (or `optimal`)."""
    status = Status.OPTIMAL if optimal or found.traffic <= bound else Status.FEASIBLE
    detail: dict[str, object] = {"residency": found.rule}
    return assemble(
        form,
        found.stays,
        found.packed,
        status=status,
        planner=name,
        lower_bound=lower_bound(form.problem),
        seconds=time.perf_counter() - started,
        traffic_bound=min(bound, found.traffic),
        detail=detail,
    )
