"""cpsat for several memories: the heuristics first, then one CP-SAT model of residency,
copies and offsets, never worse than the best heuristic, with a proven bound on traffic.

Steps (`plan_exact`):
1. The form; a point that proves no plan can exist makes it INFEASIBLE (`form.crowded`).
2. The heuristics (`fill` by size and by density, `spill`), each packed by greedy; the
   best is the starting point and the fallback. Meeting the floor (every access in the
   cheapest memory it may use) it is OPTIMAL at once.
3. The model (`model.solve_tiers`), hinted with it, in the time left. A better solution
   replaces it: the bounded memories' offsets come from the model, the others are packed
   by greedy. The solver's bound, or the floor if higher, is the proven bound on traffic.
4. OPTIMAL when the traffic meets the bound; FEASIBLE with the gap otherwise; INFEASIBLE
   when the model proves that nothing fits (the most crowded point named); UNKNOWN when
   nothing was found. A model past MODEL_MAX_BOOLS residency bools is not built.
"""

from __future__ import annotations

import time

from optplan.budget import Clock
from optplan.planners.tiers.driver import RULES, Found, best_found, found_plan
from optplan.planners.tiers.form import TierForm, crowded, make_tier_form
from optplan.planners.tiers.stays import Packer, floor_traffic, no_plan, pack, traffic
from optplan.planners.watch import Watch
from optplan.problem import Problem
from optplan.problem.outcome import Plan, Status

HEURISTICS = ("fill-size", "fill-density", "spill")

# Above this many residency bools the model is not built (the heuristics' plan stands).
MODEL_MAX_BOOLS = 400_000


def plan_exact(
    problem: Problem,
    name: str,
    packer: Packer,
    *,
    started: float,
    clock: Clock,
    workers: int,
    seed: int,
    watch: Watch | None = None,
    copies: bool = True,
) -> Plan:
    """Steps 1-4 of the module, the model within what is left of `clock`; without
    `copies`, each tensor stays in one memory."""
    form = make_tier_form(problem, copies=copies)
    reason = crowded(form)
    if reason is not None:
        return no_plan(form, name, Status.INFEASIBLE, reason, time.perf_counter() - started)
    best = best_found(form, [(rule, RULES[rule]) for rule in HEURISTICS], packer)
    floor = floor_traffic(form)
    if best is not None and best.traffic <= floor:
        return found_plan(form, best, name, started=started, bound=floor)
    left = clock.left()
    stopped = watch is not None and watch.stopped
    if model_size(form) > MODEL_MAX_BOOLS or left <= 0 or stopped:
        return _fallback(form, best, name, started, floor, "the model was not run")
    from optplan.planners.tiers.model import solve_tiers  # OR-Tools: only when solving

    hint = None if best is None else (best.stays, best.packed.offsets)
    solved = solve_tiers(
        form, hint, units=left, clock=clock, workers=workers, seed=seed, watch=watch
    )
    bound = max(floor, solved.bound)
    if solved.status == "infeasible":
        reason = (
            "no residency and offsets fit the memories' capacities (proven by CP-SAT); "
            + _busiest(form)
        )
        return no_plan(form, name, Status.INFEASIBLE, reason, time.perf_counter() - started)
    if solved.stays is not None and (best is None or solved.traffic < best.traffic):
        packed = pack(form, solved.stays, packer, given=solved.offsets)
        if packed.failed is None:
            assert traffic(form, solved.stays) == solved.traffic
            best = Found(solved.stays, packed, solved.traffic, "cp-sat")
    if best is None:
        return no_plan(
            form,
            name,
            Status.UNKNOWN,
            f"CP-SAT found nothing ({solved.status})",
            time.perf_counter() - started,
            bound,
        )
    plan = found_plan(
        form, best, name, started=started, bound=bound, optimal=solved.status == "optimal"
    )
    if watch is not None and watch.stopped:  # Ctrl-C: the best so far
        plan.detail["interrupted"] = True
    return plan


def model_size(form: TierForm) -> int:
    """The model's residency bools: one per track, point and memory it may use (one per
    memory for a fixed track)."""
    return sum((1 if t.fixed else len(t.points)) * len(t.allowed) for t in form.tracks)


def _fallback(
    form: TierForm, best: Found | None, name: str, started: float, floor: int, why: str
) -> Plan:
    if best is None:
        return no_plan(
            form,
            name,
            Status.UNKNOWN,
            f"the heuristics found nothing and {why}",
            time.perf_counter() - started,
            floor,
        )
    return found_plan(form, best, name, started=started, bound=floor)


def _busiest(form: TierForm) -> str:
    """The point with the most bytes live, and the tensors live there."""
    live: dict[int, list[str]] = {}
    bytes_at: dict[int, int] = {}
    for track in form.tracks:
        for point in track.points:
            live.setdefault(point, []).append(track.name)
            bytes_at[point] = bytes_at.get(point, 0) + track.size
    if not bytes_at:
        return "nothing is live"
    point = max(sorted(bytes_at), key=bytes_at.__getitem__)
    return (
        f"the most crowded point is {point}, {bytes_at[point]} bytes live: {', '.join(live[point])}"
    )
