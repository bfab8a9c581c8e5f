"""optplan inside ExecuTorch: a memory-planning algorithm for its MemoryPlanningPass.

    from executorch.exir.memory_planning import MemoryPlanningAlgorithmSuite, greedy
    from executorch.exir.passes import MemoryPlanningPass
    import optplan.executorch

    suite = MemoryPlanningAlgorithmSuite(algo_list=[optplan.executorch.algorithm(), greedy])
    edge.to_executorch(ExecutorchBackendConfig(memory_planning_pass=MemoryPlanningPass(
        memory_planning_algo=suite)))

`algorithm(planner, time_limit=, report=)` checks its arguments at once and returns an
`Algorithm`: a frozen value whose `__name__` names its configuration
(`optplan_cpsat_10s`, `optplan_greedy`), since ExecuTorch's MemoryPlanningAlgorithmSuite
keys each algorithm's result by that name and keeps the smallest. ExecuTorch calls it with
`(alignment, specs, graph_module, graph_signature, extra_padding)`, once per method and
once per control-flow submodule (a `cond` branch, a `map` body) before the graph holding
it, and expects a `MemoryAlgoResult`: where each TensorSpec goes (mem_id, mem_obj_id,
mem_offset) and the size of every buffer. Steps:

1. Group the specs by memory id (a spec without one goes to buffer 1, as ExecuTorch's
   greedy does) and round each up to `alignment` (`TensorSpec.realign`).
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
   Every spec of a buffer gets the same `mem_obj_id`, so ExecuTorch's verifier, which
   asks that specs sharing bytes share an object, agrees.
5. A `PlanReport` per call: the planner, status, buffer bytes, the proven bound on them,
   the gap, seconds, and ExecuTorch's own greedy on the same specs beside them; handed to
   `report` and logged at INFO on this module's logger (`optplan.integrations.executorch`).
"""

from __future__ import annotations

import dataclasses
import enum
import logging
import math
import numbers
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from optplan.planners import PLANNERS, get_planner
from optplan.problem import Alias, Buffer, Interval, Problem
from optplan.problem.plan import Plan, Status, validate

__all__ = [
    "DEFAULT_TIME_LIMIT_S",
    "Algorithm",
    "PlanReport",
    "algorithm",
    "offsets_of",
    "plan_specs",
    "to_problem",
]

LOG = logging.getLogger(__name__)

# Seconds per planned graph for planners that take a limit (cpsat), unless told otherwise.
DEFAULT_TIME_LIMIT_S = 10.0


class _Default(enum.Enum):
    """`algorithm()`'s time limit when none is given: the planner's own default."""

    TIME_LIMIT = "the planner's default"


@dataclass(frozen=True, slots=True)
class PlanReport:
    """One call of the algorithm: a method's graph, or a control-flow submodule's.

    Byte figures are what ExecuTorch's buffers total (every memory id, the bytes a
    submodule set aside and the padding included), so they compare directly:
    `buffer_bytes` is optplan's plan, `bound_bytes` the least any plan of these specs can
    total as optplan proved it, `executorch_bytes` ExecuTorch's greedy on the same specs
    (None when nobody listened, or its greedy failed on them). In a suite, ExecuTorch
    keeps whichever algorithm totals least; this report is optplan's entry.
    """

    graph: str
    planner: str
    status: str
    specs: int
    buffer_bytes: int
    bound_bytes: int
    executorch_bytes: int | None
    seconds: float
    detail: dict[str, object] = field(default_factory=dict, compare=False)

    @property
    def gap(self) -> float:
        """How far `buffer_bytes` is above `bound_bytes`, as a fraction of the bound."""
        return (
            (self.buffer_bytes - self.bound_bytes) / self.bound_bytes if self.bound_bytes else 0.0
        )

    def summary(self) -> str:
        theirs = "n/a" if self.executorch_bytes is None else str(self.executorch_bytes)
        return (
            f"{self.graph}: {self.planner} {self.status}, {self.buffer_bytes} bytes "
            f"(bound {self.bound_bytes}, gap {self.gap:.1%}; ExecuTorch's greedy {theirs}), "
            f"{self.specs} specs, {self.seconds:.2f} s"
        )


@dataclass(frozen=True, slots=True)
class Algorithm:
    """An optplan memory-planning algorithm for ExecuTorch; build it with `algorithm()`.

    `time_limit` is seconds per planned graph for a planner that takes one (cpsat), and
    None for one that does not; `report` hears one PlanReport per call.
    """

    planner: str = "cpsat"
    time_limit: float | None = DEFAULT_TIME_LIMIT_S
    report: Callable[[PlanReport], object] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        _check(self.planner, self.time_limit, self.report)

    @property
    def __name__(self) -> str:
        """The suite's key: one name per configuration, so no entry overwrites another."""
        if self.time_limit is None:
            return f"optplan_{self.planner}"
        return f"optplan_{self.planner}_{self.time_limit:g}s"

    def __call__(
        self,
        alignment: int,
        specs: Iterable[Any],
        graph_module: Any,
        graph_signature: Any,
        extra_padding: int = 0,
    ) -> Any:
        """Steps 1-5: ExecuTorch's algorithm signature, returning its `MemoryAlgoResult`."""
        started = time.perf_counter()
        specs = list(specs)
        result, plans, bounds = _plan_buffers(self, alignment, specs, graph_module, extra_padding)
        if self.report is None and not LOG.isEnabledFor(logging.INFO):
            return result
        theirs = _executorch_bytes(alignment, specs, graph_module, graph_signature, extra_padding)
        report = PlanReport(
            graph=_graph_kind(graph_module, graph_signature),
            planner=self.planner,
            status=_status(plans.values()).value,
            specs=len(specs),
            buffer_bytes=sum(result.bufsizes),
            bound_bytes=sum(bounds),
            executorch_bytes=theirs,
            seconds=round(time.perf_counter() - started, 3),
            detail={str(mem_id): plan.detail for mem_id, plan in plans.items()},
        )
        LOG.info("%s", report.summary())
        if self.report is not None:
            self.report(report)
        return result


def algorithm(
    planner: str = "cpsat",
    *,
    time_limit: float | _Default = _Default.TIME_LIMIT,
    report: Callable[[PlanReport], object] | None = None,
) -> Algorithm:
    """The algorithm to put in `MemoryPlanningAlgorithmSuite(algo_list=[...])`.

    `planner` is one of optplan's planners by name; `time_limit` (seconds per planned
    graph, default 10) is for a planner that takes one (cpsat); `report` is called with a
    PlanReport for every planned graph. Every argument is checked here, before any
    export work: a wrong one is a TypeError or ValueError that names it.
    """
    _check_planner(planner)
    limited = _has_time_limit(planner)
    if time_limit is _Default.TIME_LIMIT:
        time_limit_s = DEFAULT_TIME_LIMIT_S if limited else None
    elif not limited:
        raise ValueError(
            f"time_limit: the {planner} planner has no time limit (only "
            f"{', '.join(_limited_planners())} takes one); leave time_limit out"
        )
    else:
        time_limit_s = time_limit
    return Algorithm(planner, time_limit_s, report)


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
        Buffer(str(k), spec.allocated_memory, (_interval(spec),), alignment)
        for k, spec in enumerate(group)
        if spec.allocated_memory > 0
    )
    aliases = tuple(
        Alias(str(index[id(spec.storage_base)]), str(k), spec.storage_base_offset)
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

    by_buffer: dict[int, list[Any]] = defaultdict(list)
    for spec in specs:
        spec.realign(alignment)
        by_buffer[1 if spec.mem_id is None else spec.mem_id].append(spec)
    reserved = list(getattr(graph_module, "input_mem_buffer_sizes", None) or [])
    reserved += [0] * (max([2, *(m + 1 for m in by_buffer)]) - len(reserved))
    result = MemoryAlgoResult({}, list(reserved))
    bounds, plans = list(reserved), {}
    for mem_id, group in sorted(by_buffer.items()):
        problem = to_problem(group, alignment)
        plan = _solve(algo, problem) if problem.buffers else None
        offsets = [0] * len(group) if plan is None else offsets_of(group, plan)
        for spec, offset in zip(group, offsets):
            result.spec_dict[spec] = SpecAllocResult(mem_id, 0, reserved[mem_id] + offset)
        arena, best = (0, 0) if plan is None else (plan.arena, max(plan.bound, plan.lower_bound))
        result.bufsizes[mem_id] = reserved[mem_id] + arena + extra_padding
        bounds[mem_id] = reserved[mem_id] + best + extra_padding
        if plan is not None:
            plans[mem_id] = plan
    return result, plans, bounds


def _solve(algo: Algorithm, problem: Problem) -> Plan:
    """Step 3: the plan, judged by the validator; no plan or a wrong one is an error."""
    options = {} if algo.time_limit is None else {"time_limit": algo.time_limit}
    plan = get_planner(algo.planner, **options)(problem)
    if not plan.status.has_plan:
        raise RuntimeError(f"optplan's {algo.planner} found no memory plan ({plan.status.value})")
    violations = validate(problem, plan)
    if violations:
        raise RuntimeError(f"optplan's {algo.planner} made an invalid plan: {violations[0]}")
    return plan


def _status(plans: Iterable[Plan]) -> Status:
    """Optimal when every memory id's plan is proven optimal."""
    return Status.OPTIMAL if all(p.status is Status.OPTIMAL for p in plans) else Status.FEASIBLE


def _executorch_bytes(
    alignment: int, specs: list[Any], graph_module: Any, graph_signature: Any, extra_padding: int
) -> int | None:
    """ExecuTorch's own greedy on the same specs, for the report (it writes nothing back
    onto them). None when it fails on them: the report is no reason to stop an export."""
    from executorch.exir.memory_planning import greedy

    try:
        return int(
            sum(greedy(alignment, specs, graph_module, graph_signature, extra_padding).bufsizes)
        )
    except Exception as failure:  # noqa: BLE001 - any failure of theirs leaves ours standing
        LOG.info("ExecuTorch's greedy failed on these specs: %s", failure)
        return None


def _graph_kind(graph_module: Any, graph_signature: Any) -> str:
    """`method` for a method's own graph, `submodule` for a control-flow branch or body
    (whose inputs are not the method's)."""
    nodes = getattr(getattr(graph_module, "graph", None), "nodes", ())
    inputs = {node.name for node in nodes if node.op == "placeholder"}
    if graph_signature is None:
        return "graph"
    names = {getattr(spec.arg, "name", None) for spec in graph_signature.input_specs}
    return "method" if inputs <= names else "submodule"


def _interval(spec: Any) -> Interval:
    start, last = spec.lifetime
    if start is None or last is None:
        raise ValueError(f"ExecuTorch handed over a spec without a lifetime: {spec}")
    return Interval(int(start), int(last) + 1)


def _check(planner: object, time_limit: object, report: object) -> None:
    """Every argument, in order, each fault one error naming the argument."""
    _check_planner(planner)
    assert isinstance(planner, str)
    if _has_time_limit(planner):
        _check_time_limit(time_limit)
    elif time_limit is not None:
        raise ValueError(
            f"time_limit: the {planner} planner has no time limit; give None or leave it out"
        )
    if report is not None and not callable(report):
        raise TypeError(
            f"report must be a callable that takes a PlanReport, got {type(report).__name__} "
            f"{report!r}"
        )


def _check_planner(planner: object) -> None:
    names = ", ".join(sorted(PLANNERS))
    if not isinstance(planner, str):
        hint = ""
        if isinstance(planner, numbers.Real) and not isinstance(planner, bool):
            hint = f"; a time limit is a keyword: algorithm(time_limit={planner!r})"
        raise TypeError(
            f"planner must be a planner's name ({names}), got {type(planner).__name__} "
            f"{planner!r}{hint}"
        )
    if planner not in PLANNERS:
        raise ValueError(f"planner: unknown planner {planner!r}; choose from {names}")


def _check_time_limit(time_limit: object) -> None:
    if isinstance(time_limit, bool) or not isinstance(time_limit, numbers.Real):
        raise TypeError(
            f"time_limit must be a number of seconds, got {type(time_limit).__name__} "
            f"{time_limit!r}"
        )
    if not math.isfinite(float(time_limit)) or time_limit <= 0:
        raise ValueError(f"time_limit must be a positive number of seconds, got {time_limit!r}")


def _has_time_limit(planner: str) -> bool:
    return "time_limit" in {f.name for f in dataclasses.fields(PLANNERS[planner])}  # type: ignore[arg-type]


def _limited_planners() -> list[str]:
    return sorted(name for name in PLANNERS if _has_time_limit(name))
