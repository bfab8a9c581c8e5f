"""optplan inside ExecuTorch: a memory-planning algorithm for its MemoryPlanningPass.

    from executorch.exir.memory_planning import MemoryPlanningAlgorithmSuite
    from executorch.exir.passes import MemoryPlanningPass
    import optplan.executorch

    suite = MemoryPlanningAlgorithmSuite(algo_list=[optplan.executorch.algorithm()])
    edge.to_executorch(ExecutorchBackendConfig(memory_planning_pass=MemoryPlanningPass(
        memory_planning_algo=suite)))

ExecuTorch calls an algorithm with `(alignment, specs, graph_module, graph_signature,
extra_padding)` and expects a `MemoryAlgoResult`: where each TensorSpec goes (mem_id,
mem_obj_id, mem_offset) and the size of every buffer. Steps:

1. Group the specs by memory id (a spec without one goes to buffer 1, as ExecuTorch's
   greedy does) and round each up to `alignment` (`TensorSpec.realign`).
2. Per buffer, one optplan Buffer per spec: its size the aligned bytes, live over the
   half-open `[lifetime[0], lifetime[1] + 1)` (ExecuTorch's lifetimes are inclusive). A
   storage-backed spec (an in-place or view output, `storage_base`) is an `Alias` of its
   base at `storage_base_offset`, so it shares its base's bytes as ExecuTorch requires;
   a spec object that several nodes share (in place) is one buffer already.
3. Plan with optplan (cpsat by default); the independent validator judges the plan, and
   an invalid or missing plan is an error, never a silent fallback.
4. Offsets start after the bytes a control-flow submodule set aside
   (`graph_module.input_mem_buffer_sizes`); each buffer's size is that plus the arena
   plus `extra_padding`. Every spec of a buffer gets the same `mem_obj_id`, so
   ExecuTorch's verifier, which asks that specs sharing bytes share an object, agrees.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from optplan.planners import get_planner
from optplan.problem import Alias, Buffer, Interval, Problem
from optplan.problem.plan import validate

__all__ = ["algorithm", "plan_specs"]


def algorithm(planner: str = "cpsat", time_limit: float = 10.0) -> Callable[..., Any]:
    """The algorithm to put in `MemoryPlanningAlgorithmSuite(algo_list=[...])`."""
    get_planner(planner)  # a wrong name fails here, not in the middle of an export
    algo = functools.partial(plan_specs, planner=planner, time_limit=time_limit)
    algo.__name__ = f"optplan_{planner}"  # type: ignore[attr-defined]
    return algo


def plan_specs(
    alignment: int,
    specs: Iterable[Any],
    graph_module: Any,
    graph_signature: Any,
    extra_padding: int = 0,
    *,
    planner: str = "cpsat",
    time_limit: float = 10.0,
) -> Any:
    """Steps 1-4: ExecuTorch's algorithm signature, returning its `MemoryAlgoResult`."""
    from executorch.exir.memory_planning import MemoryAlgoResult, SpecAllocResult

    by_buffer: dict[int, list[Any]] = defaultdict(list)
    for spec in specs:
        spec.realign(alignment)
        by_buffer[1 if spec.mem_id is None else spec.mem_id].append(spec)
    reserved = list(getattr(graph_module, "input_mem_buffer_sizes", None) or [])
    sizes = [0] * max([2, len(reserved), *(m + 1 for m in by_buffer)])
    result = MemoryAlgoResult({}, sizes)
    for mem_id, group in sorted(by_buffer.items()):
        base = reserved[mem_id] if mem_id < len(reserved) else 0
        offsets, arena = _plan(group, alignment, planner, time_limit)
        for spec, offset in zip(group, offsets):
            result.spec_dict[spec] = SpecAllocResult(mem_id, 0, base + offset)
        sizes[mem_id] = base + arena + extra_padding
    for mem_id, size in enumerate(reserved):
        sizes[mem_id] = max(sizes[mem_id], size)
    return result


def _plan(
    group: list[Any], alignment: int, planner: str, time_limit: float
) -> tuple[list[int], int]:
    """Offsets of `group`'s specs in one buffer, and the buffer's bytes (step 2-3)."""
    index = {id(spec): k for k, spec in enumerate(group)}
    buffers = tuple(
        Buffer(str(k), spec.allocated_memory, (_interval(spec),), alignment)
        for k, spec in enumerate(group)
        if spec.allocated_memory > 0  # an empty tensor has no bytes to place
    )
    aliases = tuple(
        Alias(str(index[id(spec.storage_base)]), str(k), spec.storage_base_offset)
        for k, spec in enumerate(group)
        if getattr(spec, "storage_base", None) is not None
        and id(spec.storage_base) in index
        and spec.allocated_memory > 0
    )
    if not buffers:
        return [0] * len(group), 0
    problem = Problem(buffers, aliases)
    plan = _planner(planner, time_limit)(problem)
    if not plan.status.has_plan:
        raise RuntimeError(f"optplan's {planner} found no memory plan ({plan.status.value})")
    violations = validate(problem, plan)
    if violations:
        raise RuntimeError(f"optplan's {planner} made an invalid plan: {violations[0]}")
    return [plan.offsets.get(str(k), 0) for k in range(len(group))], plan.arena


def _interval(spec: Any) -> Interval:
    start, last = spec.lifetime
    if start is None or last is None:
        raise ValueError(f"ExecuTorch handed over a spec without a lifetime: {spec}")
    return Interval(int(start), int(last) + 1)


def _planner(name: str, time_limit: float) -> Any:
    import dataclasses

    planner = get_planner(name)
    if "time_limit" in {f.name for f in dataclasses.fields(planner)}:  # type: ignore[arg-type]
        return get_planner(name, time_limit=time_limit)
    return planner
