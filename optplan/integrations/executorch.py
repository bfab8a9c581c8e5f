"""optplan inside ExecuTorch: a memory-planning algorithm for its MemoryPlanningPass.

    from executorch.exir.memory_planning import MemoryPlanningAlgorithmSuite, greedy
    from executorch.exir.passes import MemoryPlanningPass
    import optplan.executorch

    suite = MemoryPlanningAlgorithmSuite(algo_list=[optplan.executorch.algorithm(), greedy])
    edge.to_executorch(ExecutorchBackendConfig(memory_planning_pass=MemoryPlanningPass(
        memory_planning_algo=suite)))

`algorithm(planner, work=, time_limit=, report=)` checks its arguments at once and returns
an `Algorithm`: a frozen value whose `__name__` names its configuration
(`optplan_cpsat`, `optplan_cpsat_3w`, `optplan_greedy`), since ExecuTorch's MemoryPlanningAlgorithmSuite
keys each algorithm's result by that name and keeps the smallest. ExecuTorch calls it with
`(alignment, specs, graph_module, graph_signature, extra_padding)`, once per method and
once per control-flow submodule (a `cond` branch, a `map` body) before the graph holding
it, and expects a `MemoryAlgoResult`: where each TensorSpec goes (mem_id, mem_obj_id,
mem_offset) and the size of every buffer. Steps:

1. Group the specs by memory id (a spec without one goes to buffer 1, as ExecuTorch's
   greedy does; a storage-backed spec goes with its root, whatever its own id) and round
   each up to `alignment` (`TensorSpec.realign`). A storage-backed spec whose base is not
   among the specs is an error that names it.
2. Per buffer, `to_problem`: one optplan Buffer per spec, its size the aligned bytes, live
   over the half-open `[lifetime[0], lifetime[1] + 1)` (ExecuTorch's lifetimes are
   inclusive). A storage-backed spec (an in-place or view output, `storage_base`) is an
   `Alias` of its base at `storage_base_offset`, so it shares its base's bytes as
   ExecuTorch requires; a spec object that several nodes share (in place) is one buffer
   already. This is the one place where specs become a Problem.
3. Plan with optplan (cpsat by default); the independent validator judges the plan, and
   an invalid or missing plan is an error, never a silent fallback.
4. `offsets_of` gives each spec its offset back: after the bytes a control-flow submodule
   set aside (`graph_module.input_mem_buffer_sizes`); each buffer's size is that plus the
   arena plus `extra_padding` (64 bytes when an XNNPACK delegate may read past a tensor).
   Objects (`mem_obj_id`, `executorch_objects`): with `allow_overlapping_allocations`
   (the default, as greedy's) each buffer is cut into objects wherever no spec crosses;
   without, specs are grouped into objects none of whose specs are alive together, each
   spec at its object's start, objects one after another, for the least total bytes.
5. A `PlanReport` per call: the planner, status, buffer bytes, the proven bound on them,
   the gap, seconds, and ExecuTorch's own greedy on the same specs beside them; handed to
   `report` and logged at INFO on this module's logger (`optplan.integrations.executorch`).

With `memories` (`algorithm(memories=[Memory("tcm", 256 * 1024), Memory("psram",
cost=10)])`) the planner chooses each spec's memory id instead, within every memory's
capacity, for the least traffic (`executorch_memories`); its report adds each id's bytes,
capacity and traffic, and a capacity no plan meets is its status (logged as a warning).
`judge` judges any algorithm's result over such memories.
"""

from __future__ import annotations

import dataclasses
import enum
import logging
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from optplan.budget import Budget
from optplan.integrations.executorch_arguments import (
    check,
    check_memories,
    check_overlapping,
    check_planner,
    check_work,
    has_time_limit,
    limited_planners,
)
from optplan.integrations.executorch_memories import Outcome, plan_memories
from optplan.integrations.executorch_objects import number_result, numbered, place
from optplan.integrations.executorch_report import PlanReport, executorch_bytes, graph_kind
from optplan.integrations.executorch_specs import (
    Ids,
    Judgement,
    MemoryUse,
    check_bases,
    root,
    spec_interval,
    storage_offset,
)
from optplan.integrations.executorch_specs import judge as judge_ids
from optplan.planners import PLANNERS, get_planner
from optplan.problem import Alias, Buffer, Memory, Problem
from optplan.problem.plan import Plan, Status, validate

__all__ = [
    "DEFAULT_TIME_LIMIT_S",
    "DEFAULT_WORK",
    "Algorithm",
    "Judgement",
    "MemoryUse",
    "PlanReport",
    "algorithm",
    "judge",
    "offsets_of",
    "plan_specs",
    "to_problem",
]

LOG = logging.getLogger(__name__)

# Seconds per planned graph for planners that take a limit (cpsat), unless told otherwise:
# an outer guard; what ends the search is its work, so that the same program gives the
# same .pte on any machine.
DEFAULT_TIME_LIMIT_S = 60.0
# Units of work per planned graph: ExecuTorch's graphs are small, most proven optimal at
# once (benchmarks/results/integrations_executorch.csv).
DEFAULT_WORK = 10.0


class _Default(enum.Enum):
    """`algorithm()`'s time limit when none is given: the planner's own default."""

    TIME_LIMIT = "the planner's default"


@dataclass(frozen=True, slots=True)
class Algorithm:
    """An optplan memory-planning algorithm for ExecuTorch; build it with `algorithm()`.

    `time_limit` is seconds per planned graph for a planner that takes one (cpsat), and
    None for one that does not: a guard, since its `work` (units per graph) ends the
    search and makes the plan the same on any machine; `report` hears one PlanReport per call; `memories`, as
    (mem_id, Memory) pairs, are the memory ids the planner chooses among (empty: each
    spec keeps the id ExecuTorch gave it, 1 unless a pass pinned it).
    """

    planner: str = "cpsat"
    time_limit: float | None = DEFAULT_TIME_LIMIT_S
    report: Callable[[PlanReport], object] | None = field(default=None, compare=False)
    memories: Ids = ()
    work: float | None = DEFAULT_WORK
    allow_overlapping_allocations: bool = True

    def __post_init__(self) -> None:
        check(self.planner, self.time_limit, self.report)
        check_overlapping(self.allow_overlapping_allocations, self.memories)
        if self.work is not None and not PLANNERS[self.planner].takes_work:
            raise ValueError(f"work: the {self.planner} planner takes no work; leave it out")
        if self.work is not None:
            Budget(self.work, self.time_limit)  # a ValueError naming what is not positive
        if self.memories:
            if len({mem_id for mem_id, _ in self.memories}) != len(self.memories):
                raise ValueError("memories: a mem_id appears twice")
            check_memories(dict(self.memories), self.planner)

    @property
    def __name__(self) -> str:
        """The suite's key: one name per configuration, so no entry overwrites another.
        It names the work and the guard only where they are not the defaults."""
        name = f"optplan_{self.planner}"
        if self.work is not None and self.work != DEFAULT_WORK:
            name += f"_{self.work:g}w"
        if self.time_limit is not None and self.time_limit != DEFAULT_TIME_LIMIT_S:
            name += f"_guard{self.time_limit:g}s"
        if not self.allow_overlapping_allocations:
            name += "_no_overlap"
        for mem_id, memory in self.memories:
            name += f"_{mem_id}{memory.name}" + (
                "" if memory.capacity is None else f"{memory.capacity}"
            )
        return name

    def __call__(
        self,
        alignment: int,
        specs: Iterable[Any],
        graph_module: Any,
        graph_signature: Any,
        extra_padding: int = 0,
        *,
        allow_overlapping_allocations: bool | None = None,
    ) -> Any:
        """Steps 1-5: ExecuTorch's algorithm signature, returning its `MemoryAlgoResult`;
        `allow_overlapping_allocations` as greedy's keyword (for `functools.partial`)."""
        overlap = allow_overlapping_allocations
        if overlap is not None and overlap != self.allow_overlapping_allocations:
            again = dataclasses.replace(self, allow_overlapping_allocations=overlap)
            return again(alignment, specs, graph_module, graph_signature, extra_padding)
        started = time.perf_counter()
        specs = list(specs)
        if self.memories:
            return self._place(
                started, alignment, specs, graph_module, graph_signature, extra_padding
            )
        result, plans, bounds = _plan_buffers(self, alignment, specs, graph_module, extra_padding)
        if self.report is None and not LOG.isEnabledFor(logging.INFO):
            return result
        theirs = executorch_bytes(
            alignment, specs, graph_module, graph_signature, extra_padding,
            self.allow_overlapping_allocations,
        )  # fmt: skip
        report = PlanReport(
            graph=graph_kind(graph_module, graph_signature),
            planner=self.planner,
            status=_status(plans.values()).value,
            specs=len(specs),
            buffer_bytes=sum(result.bufsizes),
            bound_bytes=sum(bounds),
            executorch_bytes=theirs,
            seconds=round(time.perf_counter() - started, 3),
            detail={str(mem_id): plan.detail for mem_id, plan in plans.items()},
        )
        self._tell(report)
        return result

    def _place(
        self,
        started: float,
        alignment: int,
        specs: list[Any],
        graph_module: Any,
        graph_signature: Any,
        extra_padding: int,
    ) -> Any:
        """Each spec's memory id chosen among `memories` (`executorch_memories`)."""
        for spec in specs:
            spec.realign(alignment)
        options = _options(self)
        result, outcome = plan_memories(
            self.planner, options, self.memories, alignment, specs, graph_module, extra_padding
        )
        number_result(result)
        quiet = self.report is None and not LOG.isEnabledFor(logging.INFO)
        if quiet and outcome.status.has_plan:
            return result
        theirs = executorch_bytes(alignment, specs, graph_module, graph_signature, extra_padding)
        graph = (graph_module, graph_signature, extra_padding)
        report = _memories_report(self, outcome, result, specs, graph)
        report = dataclasses.replace(
            report, executorch_bytes=theirs, seconds=round(time.perf_counter() - started, 3)
        )
        self._tell(report)
        return result

    def _tell(self, report: PlanReport) -> None:
        """Log the report (a warning when no plan met the capacities) and hand it over."""
        LOG.log(logging.WARNING if report.reason else logging.INFO, "%s", report.summary())
        if self.report is not None:
            self.report(report)


def algorithm(
    planner: str = "cpsat",
    *,
    time_limit: float | _Default = _Default.TIME_LIMIT,
    work: float | _Default = _Default.TIME_LIMIT,
    report: Callable[[PlanReport], object] | None = None,
    memories: Sequence[Memory] | Mapping[int, Memory] | None = None,
    allow_overlapping_allocations: bool = True,
) -> Algorithm:
    """The algorithm to put in `MemoryPlanningAlgorithmSuite(algo_list=[...])`.

    `planner` is one of optplan's planners by name; `work` (units per planned graph,
    default 10: the same .pte on any machine) and `time_limit` (seconds per planned graph,
    an outer guard, default 60) are for a planner that takes them (cpsat); `report` is called with a
    PlanReport for every planned graph. `memories` (Memory values, fast first, for mem_ids
    1, 2, ...; or a dict {mem_id: Memory}) makes the planner choose each spec's memory
    id within the memories' capacities, for the least traffic; give such an algorithm
    alone in its suite (the suite keeps the plan of fewest bytes, blind to capacities
    and costs). `allow_overlapping_allocations` as ExecuTorch's greedy takes it: False
    (Vulkan's) groups specs into objects none of whose specs are alive together, for
    backends that bind each object's tensors at its start. Every argument is checked here, before any export work: a wrong one is a
    TypeError or ValueError that names it.
    """
    check_planner(planner)
    ids: Ids = () if memories is None else check_memories(memories, planner)
    limited = has_time_limit(planner)
    if time_limit is _Default.TIME_LIMIT:
        time_limit_s = DEFAULT_TIME_LIMIT_S if limited else None
    elif not limited:
        raise ValueError(
            f"time_limit: the {planner} planner has no time limit (only "
            f"{', '.join(limited_planners())} takes one); leave time_limit out"
        )
    else:
        time_limit_s = time_limit
    if work is _Default.TIME_LIMIT:
        units = DEFAULT_WORK if limited else None
    elif not limited:
        raise ValueError(f"work: the {planner} planner takes no work; leave work out")
    else:
        check_work(work)
        units = work
    return Algorithm(planner, time_limit_s, report, ids, units, allow_overlapping_allocations)


def judge(
    memories: Sequence[Memory] | Mapping[int, Memory],
    alignment: int,
    specs: Iterable[Any],
    graph_module: Any,
    result: Any,
) -> Judgement:
    """Any memory-planning algorithm's `MemoryAlgoResult` (ExecuTorch's `greedy` or
    `BankedGreedy`, optplan's) judged over `memories` as `algorithm(memories=...)` sees
    them: what `validate` finds wrong with its offsets, and per memory id its bytes, the
    capacity and the traffic. Call it inside the algorithm's call, on the same specs."""
    return judge_ids(check_memories(memories), alignment, list(specs), graph_module, result)


def plan_specs(
    alignment: int,
    specs: Iterable[Any],
    graph_module: Any,
    graph_signature: Any,
    extra_padding: int = 0,
    *,
    planner: str = "cpsat",
) -> Any:
    """`algorithm(planner)` called once, with the planner's default time limit."""
    return algorithm(planner)(alignment, specs, graph_module, graph_signature, extra_padding)


def to_problem(group: Sequence[Any], alignment: int) -> Problem:
    """Step 2: the specs of one buffer as a Problem; buffer `str(k)` is `group[k]`.

    A spec with no bytes has nothing to place and is left out (it gets offset 0)."""
    index = {id(spec): k for k, spec in enumerate(group)}
    buffers = tuple(
        Buffer(str(k), spec.allocated_memory, (spec_interval(spec),), alignment)
        for k, spec in enumerate(group)
        if spec.allocated_memory > 0
    )
    aliases = tuple(
        Alias(str(index[id(spec.storage_base)]), str(k), storage_offset(spec, alignment))
        for k, spec in enumerate(group)
        if getattr(spec, "storage_base", None) is not None
        and id(spec.storage_base) in index
        and spec.allocated_memory > 0
    )
    return Problem(buffers, aliases)


def offsets_of(group: Sequence[Any], plan: Plan) -> list[int]:
    """Step 4: each spec's offset inside the buffer's planned bytes, in `group`'s order."""
    return [plan.offsets.get(str(k), 0) for k in range(len(group))]


def _plan_buffers(
    algo: Algorithm, alignment: int, specs: list[Any], graph_module: Any, extra_padding: int
) -> tuple[Any, dict[int, Plan], list[int]]:
    """Steps 1-4: the MemoryAlgoResult, the plan of each memory id whose specs hold
    bytes, and each buffer's size had its plan met the proven bound."""
    from executorch.exir.memory_planning import MemoryAlgoResult, SpecAllocResult

    check_bases(specs, graph_module)
    by_buffer: dict[int, list[Any]] = defaultdict(list)
    for spec in specs:  # a storage-backed spec lives in its root's memory id
        spec.realign(alignment)
        pin = root(spec).mem_id
        by_buffer[1 if pin is None else pin].append(spec)
    reserved = list(getattr(graph_module, "input_mem_buffer_sizes", None) or [])
    reserved += [0] * (max([2, *(m + 1 for m in by_buffer)]) - len(reserved))
    result = MemoryAlgoResult({}, list(reserved))
    bounds, plans = list(reserved), {}
    for mem_id, group in sorted(by_buffer.items()):
        problem = to_problem(group, alignment)
        if algo.allow_overlapping_allocations:
            plan = _solve(algo, problem) if problem.buffers else None
            offsets = [0] * len(group) if plan is None else offsets_of(group, plan)
            objects = numbered(group, offsets)
        else:
            plan, objects, offsets = place(group, alignment, _budget(algo))
            _judged(algo, problem, plan)
        for spec, obj, offset in zip(group, objects, offsets):
            result.spec_dict[spec] = SpecAllocResult(mem_id, obj, reserved[mem_id] + offset)
        arena, best = (0, 0) if plan is None else (plan.arena, max(plan.bound, plan.lower_bound))
        result.bufsizes[mem_id] = reserved[mem_id] + arena + extra_padding
        bounds[mem_id] = reserved[mem_id] + best + extra_padding
        if plan is not None:
            plans[mem_id] = plan
    return result, plans, bounds


def _options(algo: Algorithm) -> dict[str, object]:
    """The planner's options: its time limit, and with memories no copies between them."""
    planner = PLANNERS[algo.planner]
    options: dict[str, object] = {}
    if planner.takes_work:
        options.update(time_limit=algo.time_limit, work=algo.work)
    if algo.memories and planner.takes_copies:
        options["copies"] = False
    return options


def _memories_report(
    algo: Algorithm,
    outcome: Outcome,
    result: Any,
    specs: list[Any],
    graph: tuple[Any, Any, int],
) -> PlanReport:
    """The report of a plan over memory ids: per id its bytes, capacity and traffic."""
    graph_module, graph_signature, extra_padding = graph
    # Every byte live at the busiest point is in some id, besides the bytes set aside.
    reserved = sum(getattr(graph_module, "input_mem_buffer_sizes", None) or [])
    floor = outcome.plan.lower_bound + (extra_padding if outcome.plan.lower_bound else 0)
    judged = outcome.judgement
    return PlanReport(
        graph=graph_kind(graph_module, graph_signature),
        planner=algo.planner,
        status=outcome.status.value,
        specs=len(specs),
        buffer_bytes=sum(result.bufsizes),
        bound_bytes=reserved + floor,
        executorch_bytes=None,
        seconds=0.0,
        detail=dict(outcome.plan.detail),
        memories=judged.uses,
        traffic=judged.traffic,
        traffic_bound=outcome.traffic_bound if outcome.status.has_plan else None,
        traffic_all_in_slow=outcome.traffic_all_in_slow,
        reason=outcome.reason,
    )


def _solve(algo: Algorithm, problem: Problem) -> Plan:
    """Step 3: the plan, judged by the validator; no plan or a wrong one is an error."""
    plan = get_planner(algo.planner, **_options(algo))(problem)
    if not plan.status.has_plan:
        raise RuntimeError(f"optplan's {algo.planner} found no memory plan ({plan.status.value})")
    return _judged(algo, problem, plan)


def _judged(algo: Algorithm, problem: Problem, plan: Plan) -> Plan:
    """The plan, if the validator finds nothing wrong with it; else an error."""
    violations = validate(problem, plan)
    if violations:
        raise RuntimeError(f"optplan's {plan.planner} made an invalid plan: {violations[0]}")
    return plan


def _budget(algo: Algorithm) -> Budget:
    """The search for objects: the algorithm's work (10 units for a planner without)."""
    return Budget(DEFAULT_WORK if algo.work is None else algo.work, algo.time_limit)


def _status(plans: Iterable[Plan]) -> Status:
    """Optimal when every memory id's plan is proven optimal."""
    return Status.OPTIMAL if all(p.status is Status.OPTIMAL for p in plans) else Status.FEASIBLE
