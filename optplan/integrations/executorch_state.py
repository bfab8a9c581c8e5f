"""State shared across methods, beside several memories: a MemoryPlanningPass for it.

    from optplan.problem import Memory
    import optplan.executorch as oet

    planning = oet.shared_state_pass(
        [Memory("sram", 512 * 1024), Memory("dram", cost=10)], state="dram")
    edge.to_executorch(ExecutorchBackendConfig(memory_planning_pass=planning))

ExecuTorch's own `MemoryPlanningPass(share_mutable_buffers=True)` plans each method's
activations without the mutable buffers, then (`run_multimethod`) puts every mutable
buffer in memory id 2 at one offset for all methods; it refuses any plan that uses an id
other than 1 ("Cannot share mutable state if not using default memory ids"), so several
memories and shared state do not go together there. Its runtime, loaded with
`share_memory_arenas=True`, gives every method the same buffers for ids 1 and 2, each
sized by the largest method, and fresh buffers per method for any id above 2. Hence:

1. `shared_state_pass(memories, state=name)`: memories fast first take ids 1, 2, ...;
   the state's memory must be id 1 or 2, the ids the runtime shares across methods.
2. Per method (`run`): the bytes of the method's own mutable buffers are held back from
   the state memory's capacity; optplan's algorithm plans the activations over all the
   memories within what is left, for the least traffic (`executorch_memories`); the
   mutable buffers are recorded by name, as ExecuTorch's pass does.
3. After every method (`run_multimethod`): the state goes once into its memory, after
   the largest method's activations there (so no method's activations reach it), every
   buffer at the same offset in every method; each method's size for that id becomes
   the state's end, and a state that overflows the capacity is a ValueError.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence
from typing import Any

from optplan.integrations.executorch import Algorithm, algorithm
from optplan.problem import Memory

__all__ = ["shared_state_pass", "state_bytes"]

# The memory ids ExecuTorch's runtime shares across methods with share_memory_arenas=True.
SHARED_IDS = (1, 2)


def shared_state_pass(
    memories: Sequence[Memory], *, state: str, planner: str = "cpsat", **options: Any
) -> Any:
    """Step 1: a MemoryPlanningPass placing shared mutable state in memory `state` and
    each method's activations over `memories` (fast first); `options` go to
    `algorithm()` (`report`, a time limit) except `alignment`, the pass's."""
    alignment = options.pop("alignment", None)
    algo = algorithm(planner, memories=list(memories), **options)
    ids = {memory.name: mem_id for mem_id, memory in algo.memories}
    if state not in ids:
        raise ValueError(f"state: no memory is named {state!r}; choose from {sorted(ids)}")
    if ids[state] not in SHARED_IDS:
        raise ValueError(
            f"state: {state!r} is memory id {ids[state]}, but ExecuTorch's runtime shares "
            f"only ids {SHARED_IDS} across methods; list it first or second"
        )
    extra = {} if alignment is None else {"alignment": alignment}
    return _pass_class()(algo, ids[state], **extra)


def state_bytes(graph_module: Any, graph_signature: Any, alignment: int) -> dict[str, int]:
    """The aligned bytes of each mutable buffer of one method, by its name."""
    from executorch.exir.passes.memory_planning_pass import _get_spec_from_node, _is_mutable_buffer

    found: dict[str, int] = {}
    for node in graph_module.graph.nodes:
        mutable, fqn = _is_mutable_buffer(node, graph_signature)
        if mutable and fqn is not None:
            found[fqn] = _get_spec_from_node(node).realign(alignment)
    return found


def _held_back(algo: Algorithm, state_id: int, held: int) -> Algorithm:
    """Step 2: `algo` with `held` bytes less room in the state's memory."""
    memories = []
    for mem_id, memory in algo.memories:
        if mem_id == state_id and memory.capacity is not None:
            if memory.capacity <= held:
                raise ValueError(
                    f"the shared state needs {held} bytes, but memory {memory.name!r} "
                    f"holds {memory.capacity}: choose a larger memory for the state"
                )
            memory = dataclasses.replace(memory, capacity=memory.capacity - held)
        memories.append((mem_id, memory))
    return dataclasses.replace(algo, memories=tuple(memories))


@functools.cache
def _pass_class() -> type:
    """The pass, defined once ExecuTorch is imported."""
    from executorch.exir.memory_planning import (
        MemoryPlanningAlgorithmSuite,
        Verifier,
        apply_algo,
    )
    from executorch.exir.pass_base import PassResult
    from executorch.exir.passes import MemoryPlanningPass
    from executorch.exir.passes.memory_planning_pass import _insert_mutable_buffer_specs

    class SharedStatePass(MemoryPlanningPass):  # type: ignore[misc]
        """ExecuTorch's pass with shared state in a memory the user chose (steps 2-3)."""

        def __init__(self, algo: Algorithm, state_id: int, **kwargs: Any) -> None:
            super().__init__(memory_planning_algo=algo, share_mutable_buffers=True, **kwargs)
            self.optplan_algorithm, self.optplan_state_id = algo, state_id

        def run(self, graph_module: Any, graph_signature: Any = None) -> Any:
            """Step 2: one method's activations; its state recorded, not planned."""
            self._set_alloc_node_spec(graph_module)
            held = 0
            if graph_signature is not None:
                held = sum(state_bytes(graph_module, graph_signature, self.alignment).values())
            algo = _held_back(self.optplan_algorithm, self.optplan_state_id, held)
            suite = MemoryPlanningAlgorithmSuite(algo_list=[algo])
            apply_algo(suite, graph_module, self.alignment, graph_signature,
                       self.alloc_graph_input, self.alloc_graph_output, False,
                       self.enable_non_cpu_memory_planning)  # fmt: skip
            if graph_signature is not None:
                self.state.graph_modules.append(graph_module)
                _insert_mutable_buffer_specs(self.state, graph_module, graph_signature)
            Verifier(graph_module, self.alloc_graph_input, self.alloc_graph_output, False,
                     graph_signature).verify_graph_input_output()  # fmt: skip
            return PassResult(graph_module, True)

        def run_multimethod(self) -> None:
            """Step 3: the state once, at the same place in every method."""
            place_state(self.state, self.optplan_algorithm, self.optplan_state_id, self.alignment)

    return SharedStatePass


def place_state(state: Any, algo: Algorithm, state_id: int, alignment: int) -> None:
    """Step 3 on ExecuTorch's record of the methods and their mutable buffers."""
    memory = dict(algo.memories)[state_id]
    step = math.lcm(alignment, memory.alignment)
    sizes = [list(gm.meta["non_const_buffer_sizes"]) for gm in state.graph_modules]
    widest = max((s[state_id] if state_id < len(s) else 0 for s in sizes), default=0)
    start = -(-widest // step) * step
    end = start
    first = _objects_in(state, state_id)
    for k, (fqn, specs) in enumerate(state.mutable_buffers.items()):
        together = [*specs, *state.maybe_mutable_buffers.get(fqn, ())]
        for spec in together:
            spec.mem_id, spec.mem_obj_id, spec.mem_offset = state_id, first + k, end
            spec.realign(alignment)
        end += -(-together[0].allocated_memory // step) * step
    if memory.capacity is not None and end > memory.capacity:
        raise ValueError(
            f"the shared state ends at byte {end} of memory {memory.name!r}, past its "
            f"capacity {memory.capacity}: give the state a larger memory"
        )
    for gm in state.graph_modules:  # in place: the emitter holds these very lists
        size = gm.meta["non_const_buffer_sizes"]
        size.extend([0] * (state_id + 1 - len(size)))
        size[state_id] = end


def _objects_in(state: Any, state_id: int) -> int:
    """The first object id after every method's activations in the state's memory id:
    each buffer of the state is an object of its own (`mem_obj_id`)."""
    held = {
        id(spec)
        for fqn, specs in state.mutable_buffers.items()
        for spec in [*specs, *state.maybe_mutable_buffers.get(fqn, ())]
    }
    found = [-1]
    for gm in state.graph_modules:
        for node in getattr(getattr(gm, "graph", None), "nodes", ()):
            specs = node.meta.get("spec")
            for spec in specs if isinstance(specs, (list, tuple)) else [specs]:
                obj = getattr(spec, "mem_obj_id", None)
                if (
                    id(spec) not in held
                    and getattr(spec, "mem_id", None) == state_id
                    and isinstance(obj, int)
                ):
                    found.append(obj)
    return max(found) + 1
