"""The report of one call of `optplan.executorch.algorithm()`, and what it sets beside it:
ExecuTorch's own greedy on the same specs, and whether the graph is a method's.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from optplan.integrations.executorch_specs import MemoryUse

LOG = logging.getLogger("optplan.integrations.executorch")


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
    memories: tuple[MemoryUse, ...] = ()
    traffic: int | None = None
    traffic_bound: int | None = None
    traffic_all_in_slow: int | None = None
    reason: str = ""

    @property
    def gap(self) -> float:
        """How far `buffer_bytes` is above `bound_bytes`, as a fraction of the bound."""
        return (
            (self.buffer_bytes - self.bound_bytes) / self.bound_bytes if self.bound_bytes else 0.0
        )

    @property
    def traffic_gap(self) -> float:
        """How far `traffic` is above `traffic_bound`, as a fraction of the bound (0 for
        a report of one memory id, or of no plan within the capacities)."""
        if self.traffic is None or not self.traffic_bound:
            return 0.0
        return (self.traffic - self.traffic_bound) / self.traffic_bound

    @property
    def fits(self) -> bool:
        """Every memory id within its capacity."""
        return all(use.fits for use in self.memories)

    def summary(self) -> str:
        theirs = "n/a" if self.executorch_bytes is None else str(self.executorch_bytes)
        line = (
            f"{self.graph}: {self.planner} {self.status}, {self.buffer_bytes} bytes "
            f"(bound {self.bound_bytes}, gap {self.gap:.1%}; ExecuTorch's greedy {theirs}), "
            f"{self.specs} specs, {self.seconds:.2f} s"
        )
        if self.traffic is None:
            return line
        uses = "; ".join(use.summary() for use in self.memories)
        proven = (
            ""
            if self.traffic_bound is None
            else f"bound {self.traffic_bound}, gap {self.traffic_gap:.1%}; "
        )
        line += f"; traffic {self.traffic} ({proven}all in slow memory {self.traffic_all_in_slow}); {uses}"
        return line + (f"; no plan within the capacities: {self.reason}" if self.reason else "")


def executorch_bytes(
    alignment: int,
    specs: list[Any],
    graph_module: Any,
    graph_signature: Any,
    extra_padding: int,
    overlap: bool = True,
) -> int | None:
    """ExecuTorch's own greedy on the same specs (with `allow_overlapping_allocations` as
    given), for the report; it writes nothing back onto them. None when it fails on them:
    the report is no reason to stop an export."""
    from executorch.exir.memory_planning import greedy

    graph = (graph_module, graph_signature, extra_padding)
    try:
        return int(
            sum(greedy(alignment, specs, *graph, allow_overlapping_allocations=overlap).bufsizes)
        )
    except Exception as failure:  # noqa: BLE001 - any failure of theirs leaves ours standing
        LOG.info("ExecuTorch's greedy failed on these specs: %s", failure)
        return None


def graph_kind(graph_module: Any, graph_signature: Any) -> str:
    """`method` for a method's own graph, `submodule` for a control-flow branch or body
    (whose inputs are not the method's)."""
    nodes = getattr(getattr(graph_module, "graph", None), "nodes", ())
    inputs = {node.name for node in nodes if node.op == "placeholder"}
    if graph_signature is None:
        return "graph"
    names = {getattr(spec.arg, "name", None) for spec in graph_signature.input_specs}
    return "method" if inputs <= names else "submodule"
