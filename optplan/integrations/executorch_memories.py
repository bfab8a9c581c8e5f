"""Fast and slow memory ids for ExecuTorch: `algorithm(memories=...)` chooses each spec's
`mem_id` within every memory's capacity, for the least slow traffic.

ExecuTorch's runtime takes one planned buffer per memory id (its `HierarchicalAllocator`
gets one span per id: `mem_id` k is span k - 1, sized by `MethodMeta::
memory_planned_buffer_size(k - 1)`), so a device puts span 0 in its tightly coupled memory
and span 1 in external RAM. A memory-planning algorithm returns a `SpecAllocResult(mem_id,
mem_obj_id, mem_offset)` per spec, and ExecuTorch's `MemoryPlanningAlgorithmSuite`
writes the `mem_id` back onto the spec: the choice of id is the algorithm's. A spec keeps
one id and one offset for the whole method (the runtime never copies between ids), so
this is static placement: `planners.placement`, cpsat with copies off. Steps:

1. The memories, fast first, become ids 1, 2, ... (or a dict gives each its id), every
   argument checked before any export work (`executorch_arguments.check_memories`).
2. The specs as one Problem over every memory id (`executorch_specs`: where each spec is
   written and read, a spec pinned by a custom pool pass kept in its id, each bounded
   memory's capacity less the bytes a control-flow submodule set aside and the padding).
3. `plan_memories`: the planner's plan (cpsat with copies off, greedy filling the
   cheapest memory first, ...), judged by `validate` and read back as buffer -> (memory,
   offset) by `planners.placement`. No plan within the capacities is a status, not an
   exception: the reason (the point and the tensors live there) goes to the report, and
   the specs are planned again with the dearest memory unbounded (every memory, if that
   is not enough), so the export completes with buffers that show what each memory
   would need; the runtime refuses a buffer smaller than the program asks for.
4. `write_back`: each spec's (mem_id, offset) in ExecuTorch's result, after the bytes
   set aside in its id; the result is judged again (`executorch_specs.judge`) and its
   per-id bytes, capacities and traffic go to the report.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from optplan.integrations.executorch_specs import (
    Ids,
    Judgement,
    Specs,
    derive,
    judge,
    rooms_of,
    root,
)
from optplan.planners import get_planner
from optplan.planners.placement import placement
from optplan.problem import Problem
from optplan.problem.plan import Plan, Status, validate
from optplan.problem.tiers import all_in


@dataclass(frozen=True, slots=True)
class Outcome:
    """One planned graph: the plan within the capacities (its status and, without one,
    the reason), the least traffic proven, the traffic of everything in the dearest
    declared memory, and the judgement of the result written back."""

    status: Status
    reason: str
    traffic_bound: int
    traffic_all_in_slow: int
    judgement: Judgement
    plan: Plan


# ---------------------------------------------------------------------------- planning


def plan_memories(
    planner: str,
    options: Mapping[str, object],
    ids: Ids,
    alignment: int,
    specs: Sequence[Any],
    graph_module: Any,
    extra_padding: int,
) -> tuple[Any, Outcome]:
    """Steps 2-4: ExecuTorch's `MemoryAlgoResult` for `specs` (already realigned) over
    the memories `ids`, and the outcome for the report."""
    given = derive(ids, alignment, specs, graph_module, extra_padding)
    rooms = rooms_of(given)
    problem = given.problem(rooms)
    plan = _solve(planner, options, problem)
    reason, placed = "", (problem, plan)
    if not plan.status.has_plan:
        reason = str(
            plan.detail.get("reason") or f"no plan within the capacities ({plan.status.value})"
        )
        reason = given.seen.where(reason)
        placed = _relaxed(planner, options, given, rooms)
    result = write_back(given, placement(*placed))
    judgement = judge(ids, alignment, specs, graph_module, result)
    if judgement.violations:
        raise RuntimeError(
            f"optplan's {planner} wrote an invalid plan back: {judgement.violations[0]}"
        )
    if plan.traffic is not None:
        bound = plan.traffic_bound
    else:  # one memory: every spec is in it, so the traffic is what it is
        bound = judgement.traffic if plan.status.has_plan else 0
    status = plan.status
    if status.has_plan and not judgement.fits:  # a submodule's bytes alone overflow an id
        status, reason = Status.INFEASIBLE, _set_aside(given, judgement)
    slow = all_in(problem, given.by_id[_dearest(ids)].name) if problem.buffers else 0
    return result, Outcome(status, reason, bound, slow, judgement, plan)


def _set_aside(given: Specs, judgement: Judgement) -> str:
    """Why ids overflow that the plan kept within their room: the bytes set aside."""
    return "; ".join(
        f"mem_id {use.mem_id} ({use.name}) needs {use.buffer_bytes} bytes, more than its "
        f"capacity {use.capacity}: the control-flow submodules planned before this graph set "
        f"aside {given.reserved[use.mem_id]} bytes there"
        for use in judgement.uses
        if not use.fits
    )


def _dearest(ids: Ids) -> int:
    """The mem_id of the dearest declared memory (the last listed of the dearest)."""
    return max(reversed(ids), key=lambda pair: pair[1].cost)[0]


def _solve(planner: str, options: Mapping[str, object], problem: Problem) -> Plan:
    """The planner's plan of `problem`, each spec in one memory; a plan `validate` finds
    wrong, or one that copies, is an error (never written back)."""
    if not problem.buffers:
        return Plan({}, 0, Status.OPTIMAL, planner, 0, traffic=0)
    plan = get_planner(planner, **options)(problem)
    if plan.status.has_plan:
        faults = validate(problem, plan)
        if faults:
            raise RuntimeError(f"optplan's {planner} made an invalid plan: {faults[0]}")
        if plan.copies:
            raise RuntimeError(f"optplan's {planner} copied tensors between memories")
    return plan


def _relaxed(
    planner: str, options: Mapping[str, object], given: Specs, rooms: Mapping[int, int | None]
) -> tuple[Problem, Plan]:
    """Step 4 without a plan: the dearest declared memory unbounded, then every memory."""
    for lifted in ({**rooms, _dearest(given.ids): None}, {m: None for m in rooms}):
        problem = given.problem(lifted)
        plan = _solve(planner, options, problem)
        if plan.status.has_plan:
            return problem, plan
    raise RuntimeError(f"optplan's {planner} found no plan even with every memory unbounded")


def write_back(given: Specs, where: Mapping[str, tuple[str, int]]) -> Any:
    """Each spec's (mem_id, offset) as ExecuTorch's result; each id's buffer is the bytes
    set aside before it, its plan, and the padding when it holds any spec."""
    from executorch.exir.memory_planning import MemoryAlgoResult, SpecAllocResult

    id_of = {memory.name: mem_id for mem_id, memory in given.by_id.items()}
    tops: dict[int, int] = {}
    result = MemoryAlgoResult({}, [])
    for spec, name in zip(given.group, given.names):
        if name in where:
            memory, offset = where[name]
            mem_id = id_of[memory]
            tops[mem_id] = max(tops.get(mem_id, 0), offset + spec.allocated_memory)
        else:  # no bytes: nothing to place, in the first memory or where it is pinned
            pin = root(spec).mem_id
            mem_id, offset = (given.ids[0][0] if pin is None else pin), 0
        result.spec_dict[spec] = SpecAllocResult(mem_id, 0, given.start(mem_id) + offset)
    sizes = list(given.reserved) + [0] * (max(2, max(given.by_id) + 1) - len(given.reserved))
    for mem_id, top in tops.items():
        sizes[mem_id] = given.start(mem_id) + top + given.padding
    result.bufsizes = sizes
    return result
