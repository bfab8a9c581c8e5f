"""How the models of `executorch_models` are lowered and run: a `Case` is a module, its
example inputs, the inputs to run it on in order (a module with state runs several
steps), and how to lower it (dynamic shapes, an XNNPACK partitioner, the reinplace pass).
`lower(case, algos)` exports and lowers it with the given memory-planning algorithms
(ExecuTorch's default greedy when None); `run(program, case)` runs the `.pte` in
ExecuTorch's runtime pybindings; `eager(case)` runs a copy of the module in torch on the
same inputs.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Case:
    """A model to lower and run: `runs` are the inputs of each call, in order (the example
    inputs once when empty); `needs` is a package the case needs besides torch."""

    name: str
    module: Any
    inputs: tuple[Any, ...]
    runs: tuple[tuple[Any, ...], ...] = ()
    dynamic_shapes: Any = None
    xnnpack: bool = False
    reinplace: bool = False
    needs: str = ""

    @property
    def calls(self) -> tuple[tuple[Any, ...], ...]:
        return self.runs or (self.inputs,)


def frozen(module: Any) -> Any:
    """Eval mode, no parameter asking for gradients (the reinplace pass writes buffers)."""
    module.eval()
    for parameter in module.parameters():
        parameter.requires_grad_(False)
    return module


def lower(case: Case, algos: list[Any] | None) -> Any:
    """Export and lower to an ExecuTorch program; `algos` for MemoryPlanningAlgorithmSuite
    (ExecuTorch's default planning when None)."""
    import torch
    from executorch.exir import ExecutorchBackendConfig, to_edge, to_edge_transform_and_lower
    from executorch.exir.memory_planning import MemoryPlanningAlgorithmSuite
    from executorch.exir.passes import MemoryPlanningPass

    exported = torch.export.export(case.module, case.inputs, dynamic_shapes=case.dynamic_shapes)
    if case.xnnpack:
        from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner

        edge = to_edge_transform_and_lower(exported, partitioner=[XnnpackPartitioner()])
    else:
        edge = to_edge(exported)
    options: dict[str, Any] = {}
    if case.reinplace:
        from executorch.exir.dialects._ops import ops

        # index_put becomes index_put_ (the cache's own spec); slice_scatter, which has no
        # in-place form, is stored inside the window (a storage-backed spec).
        options = {"run_reinplace_pass": True,
                   "reinplace_extra_ops": frozenset({ops.edge.aten.slice_scatter.default})}  # fmt: skip
    if algos is not None:
        suite = MemoryPlanningAlgorithmSuite(algo_list=algos)
        options["memory_planning_pass"] = MemoryPlanningPass(memory_planning_algo=suite)
    return edge.to_executorch(ExecutorchBackendConfig(**options))


def buffer_bytes(program: Any) -> int:
    """The non-constant buffer bytes of the program's first execution plan."""
    return sum(program.executorch_program.execution_plan[0].non_const_buffer_sizes)


def run(program: Any, case: Case) -> list[list[Any]]:
    """The outputs of every call of `case`, in order, in one loaded method (state kept)."""
    from executorch.extension.pybindings.portable_lib import _load_for_executorch_from_buffer

    method = _load_for_executorch_from_buffer(program.buffer)
    return [list(method.forward(inputs)) for inputs in case.calls]


def eager(case: Case) -> list[list[Any]]:
    """The same calls in torch, on a copy of the module (its buffers start as exported)."""
    import torch

    module = copy.deepcopy(case.module)
    outputs = []
    with torch.no_grad():
        for inputs in case.calls:
            out = module(*inputs)
            outputs.append(list(out) if isinstance(out, (tuple, list)) else [out])
    return outputs
