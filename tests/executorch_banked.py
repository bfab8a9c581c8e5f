"""ExecuTorch's own capacity-aware planner beside optplan's, on the same specs in one export,
for tests/test_executorch_memories.py and `benchmarks/integrations.py --executorch`.

ExecuTorch 1.5 ships `exir.banked_memory_planning.BankedGreedy`: given a `TargetMemoryMap`
of banks (a name, a size, a mem_id), it offers every spec, largest first, to the fastest
bank that can still take it, and fails the export when none can. That is the greedy
fast-first baseline a user has today. `Beside(algo, memories)` is an algorithm for
ExecuTorch's suite that, on every call (each control-flow submodule, then the method),
first runs the baselines on the specs it is given, then `algo`, judges every result with
`optplan.executorch.judge` over the same memories, and returns `algo`'s: the `.pte` holds
optplan's plan, and `calls` holds one row per call, label -> Judgement (or the exception a
baseline raised).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

# A bank has a size: an unbounded memory gets one no test model comes near.
UNBOUNDED_BANK = 1 << 40


def banked_greedy(memories: Sequence[Any]) -> Any:
    """ExecuTorch's BankedGreedy over `memories` (fast first, mem_ids 1, 2, ...)."""
    from executorch.exir.banked_memory_planning import Bank, BankedGreedy, TargetMemoryMap

    banks = [
        Bank(m.name, UNBOUNDED_BANK if m.capacity is None else m.capacity, mem_id)
        for mem_id, m in enumerate(memories, start=1)
    ]
    return BankedGreedy(TargetMemoryMap(banks))


class Beside:
    """`algo` in the suite, with `baselines` (label -> algorithm) run and judged first."""

    def __init__(
        self, algo: Any, memories: Sequence[Any], baselines: dict[str, Callable[..., Any]]
    ) -> None:
        self.algo, self.memories, self.baselines = algo, list(memories), baselines
        self.calls: list[dict[str, Any]] = []
        self.__name__ = f"beside_{algo.__name__}"

    def __call__(
        self, alignment: int, specs: Any, module: Any, signature: Any, padding: int = 0
    ) -> Any:
        import optplan.executorch as oet

        specs = list(specs)
        row: dict[str, Any] = {}
        for label, baseline in self.baselines.items():
            try:
                result = baseline(alignment, specs, module, signature, padding)
            except Exception as failure:  # noqa: BLE001 - a baseline that gives up is a finding
                row[label] = failure
                continue
            row[label] = oet.judge(self.memories, alignment, specs, module, result)
        result = self.algo(alignment, specs, module, signature, padding)
        row["optplan"] = oet.judge(self.memories, alignment, specs, module, result)
        self.calls.append(row)
        return result
