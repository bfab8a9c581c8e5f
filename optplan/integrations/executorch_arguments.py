"""Every argument of `optplan.executorch.algorithm()`, checked before any export work.

Each fault is one TypeError or ValueError whose message starts with the argument it names
(`planner`, `time_limit`, `work`, `report`, `memories`, `allow_overlapping_allocations`)
and says what to give instead: an unknown planner, a time limit that is not a positive
number of seconds or work that is not a positive number of units, either given to a
planner that takes none, a report that cannot be called, memories that are not `Memory` values, a
capacity that is not a positive number of bytes, a cost or an alignment out of range, a
name or a mem_id given twice, mem_id 0 (ExecuTorch's constants), and a planner that
copies tensors between memories (`spill`), which a spec's one mem_id cannot follow.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence

from optplan.integrations.executorch_specs import Ids
from optplan.planners import PLANNERS
from optplan.problem import Memory

# Planners whose plans of several memories copy tensors between them: a spec cannot move.
COPYING = ("spill",)

_MEMORY_HINT = "Memory('tcm', 256 * 1024), Memory('psram', cost=10)"


def check(planner: object, time_limit: object, report: object) -> None:
    """Every argument, in order, each fault one error naming the argument."""
    check_planner(planner)
    assert isinstance(planner, str)
    if has_time_limit(planner):
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


def check_overlapping(allow: object, memories: Ids) -> None:
    """`allow_overlapping_allocations` is a bool, and True with `memories`, whose plan
    over several ids is cut into objects (objects without overlap are for one id each)."""
    if not isinstance(allow, bool):
        raise TypeError(
            f"allow_overlapping_allocations must be True or False, got {type(allow).__name__} "
            f"{allow!r}"
        )
    if not allow and memories:
        raise ValueError(
            "allow_overlapping_allocations: False is not supported with memories; leave "
            "memories out, or allow overlapping allocations"
        )


def check_planner(planner: object) -> None:
    """`planner` is the name of one of optplan's planners."""
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
    _check_positive("time_limit", time_limit, "seconds")


def check_work(work: object) -> None:
    """`work` is a positive, finite number of units."""
    _check_positive("work", work, "units")


def _check_positive(name: str, value: object, unit: str) -> None:
    """`value` of the argument `name` is a positive, finite number of `unit`."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number of {unit}, got {type(value).__name__} {value!r}")
    if not math.isfinite(float(value)) or value <= 0:
        raise ValueError(f"{name} must be a positive number of {unit}, got {value!r}")


def has_time_limit(planner: str) -> bool:
    """Whether the planner takes a time limit (cpsat)."""
    return PLANNERS[planner].takes_work


def limited_planners() -> list[str]:
    return sorted(name for name in PLANNERS if has_time_limit(name))


def check_memories(memories: object, planner: str | None = None) -> Ids:
    """`memories` (a sequence of Memory, ids 1, 2, ...; or a dict mem_id -> Memory) as
    (mem_id, Memory) pairs; a TypeError or ValueError naming the fault otherwise."""
    if isinstance(memories, Memory):
        raise TypeError(f"memories must be a list of memories, got one: memories=[{memories!r}]")
    if isinstance(memories, Mapping):
        pairs = list(memories.items())
    elif isinstance(memories, Sequence) and not isinstance(memories, (str, bytes)):
        pairs = list(enumerate(memories, start=1))
    else:
        raise TypeError(
            f"memories must be a list of Memory values, fast first ({_MEMORY_HINT}), or a "
            f"dict {{mem_id: Memory}}, got {type(memories).__name__} {memories!r}"
        )
    if not pairs:
        raise ValueError("memories: give at least one memory")
    if planner is not None and planner in COPYING:
        raise ValueError(
            f"planner: {planner} copies tensors between memories, and ExecuTorch keeps each "
            "spec in one mem_id; with memories choose cpsat, greedy, naive or tokens"
        )
    names: set[str] = set()
    for mem_id, memory in pairs:
        _check_one(mem_id, memory)
        if memory.name in names:
            raise ValueError(f"memories: memory {memory.name!r} appears twice")
        names.add(memory.name)
    return (
        tuple(sorted(pairs, key=lambda pair: pair[0]))
        if isinstance(memories, Mapping)
        else tuple(pairs)
    )


def _check_one(mem_id: object, memory: object) -> None:
    if isinstance(mem_id, bool) or not isinstance(mem_id, int):
        raise TypeError(f"memories: a mem_id is an int, got {type(mem_id).__name__} {mem_id!r}")
    if mem_id < 1:
        raise ValueError(
            f"memories: mem_id {mem_id} is not a planned buffer (mem_id 0 holds ExecuTorch's "
            "constants); planned memory ids start at 1"
        )
    if not isinstance(memory, Memory):
        raise TypeError(
            f"memories: mem_id {mem_id} must be an optplan.problem.Memory ({_MEMORY_HINT}), "
            f"got {type(memory).__name__} {memory!r}"
        )
    if not memory.name:
        raise ValueError(f"memories: mem_id {mem_id} has a memory with an empty name")
    capacity = memory.capacity
    if capacity is not None and (not _is_int(capacity) or capacity <= 0):
        raise ValueError(
            f"memories: memory {memory.name!r} has capacity {capacity!r}; a capacity is a "
            "positive number of bytes, or None for unbounded"
        )
    if not _is_int(memory.cost) or memory.cost < 0:
        raise ValueError(
            f"memories: memory {memory.name!r} has cost {memory.cost!r}; a cost per byte is an "
            "int >= 0"
        )
    if not _is_int(memory.alignment) or memory.alignment < 1:
        raise ValueError(
            f"memories: memory {memory.name!r} has alignment {memory.alignment!r}; an "
            "alignment is an int >= 1"
        )


def _is_int(value: object) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)
