"""`memory_budget`: torch.compile's partition of a training step judged by its real peak.

Inside `with memory_budget(peak_bytes=...)` (or `fraction=...`), every joint graph that
AOTAutograd's min-cut partitioner (`inductor` and `aot_eager` alike) splits goes through
`choose`, which stands in for `torch._functorch.partitioners.choose_saved_values_set`:

1. Candidates, a fixed list in a fixed order (no clock, no seed): torch's own knapsack
   solvers (`dp`, `greedy`, and `ilp` where SciPy is present) at every
   `activation_memory_budget` from 0 to 1 in steps of 0.05; each gives a saved set.
2. Each distinct saved set is partitioned for real (`_extract_fwd_bwd_modules`, then
   the backward reordered as the partitioner does) and judged by the step's peak
   (`torch_graph.step_peak`: the forward, then the backward holding the saved tensors
   until their last reader) and by its extra compute in FLOPs (`torch_graph`).
3. The backward's model (`torch_exact`, CP-SAT, `MODEL_SHARE` of the work) finds the
   saved set of least peak from the lowest of torch's and, where the budget is above
   the proven bound, the saved set of least extra compute within it (and a bound on
   that compute); both are judged for real and join torch's. The budget in bytes (for `fraction`, that share of the peak of torch's default
   partition, which recomputes nothing beyond its cheap fused ops) ranks them: within
   it by extra compute, else by peak. optplan's own search (`torch_search.improve`)
   climbs from the best `STARTS` of them, moving one node at a time between saved and
   recomputed, to a lower peak than torch reaches or less compute within the budget;
   it stops on work counted in partitions. The best set found wins; none within the
   budget raises `InputError` naming the op at the least peak found and the tensors
   held there. A graph compiled later in the block (after a graph break) is judged
   with what the earlier graphs' forwards leave held under it (`_State.held_bytes`).
4. The report (`last_report()`, logged at INFO on "optplan.torch") names the saved and
   recomputed tensors, the planned peak and where it sits, and the lower bound on the
   backward's peak of every saved set the partitioner can split the step with: the
   larger of the model's (its least peak, or CP-SAT's bound on it) and the per-step
   cut bound in the partitioner's order (`torch_bound`). A budget below it is proven
   out of reach.

The budget and optplan's version enter AOTAutograd's cache key through the
`CustomKnapsackSolver.uuid()` set as the solver; the compile caches are off inside the
block so every compile is planned.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch import fx
from torch._functorch import config as fconfig
from torch._functorch import partitioners as parts

import optplan
from optplan.budget import Budget
from optplan.errors import InputError
from optplan.integrations.torch_bound import Timeline, order_bound
from optplan.integrations.torch_exact import INFEASIBLE, Facts, exact
from optplan.integrations.torch_graph import StepPeak, tensor_bytes
from optplan.integrations.torch_search import (
    SEARCH_GUARD_SECONDS,
    Candidate,
    Space,
    improve,
)

LOG = logging.getLogger("optplan.torch")

# torch's own settings, tried in this order: every candidate torch itself can reach.
TORCH_BUDGETS = tuple(round(0.05 * k, 2) for k in range(21))

# torch's candidates the search starts from, best first for the budget.
STARTS = 8

# The work of a compile by default (about a second of one core each), and the share of
# it the backward's model takes (`torch_exact`: half for the least peak, half for the
# least compute within the budget); the search takes the rest (120 partitions).
WORK = 90.0
MODEL_SHARE = 2 / 3


@dataclass(frozen=True, slots=True)
class Report:
    """What `memory_budget` chose for the last graph it partitioned."""

    budget_bytes: int
    peak_bytes: int
    where: StepPeak
    default_peak_bytes: int
    bound_bytes: int
    extra_flops: int
    extra_bound: int | None
    candidate: str
    candidates: int
    saved: tuple[str, ...]
    recomputed: tuple[str, ...]

    def summary(self) -> str:
        return (
            f"planned peak {self.peak_bytes} B within {self.budget_bytes} B "
            f"(default partition {self.default_peak_bytes} B, proven bound {self.bound_bytes} B), "
            f"extra compute {self.extra_flops} FLOPs{self._extra_gap()}, "
            f"from {self.candidate} of {self.candidates}; "
            f"peak in the {self.where.graph} at {self.where.op}; saved {len(self.saved)}, "
            f"recomputed {len(self.recomputed)}: {', '.join(self.recomputed[:8])}"
        )

    def _extra_gap(self) -> str:
        """The proven least extra compute within the budget, where the model gave one."""
        if self.extra_bound is None:
            return ""
        return f" (proven least {self.extra_bound} FLOPs)"


class _Key(parts.CustomKnapsackSolver):  # type: ignore[misc]
    """Stands in AOTAutograd's cache key for the budget; `choose` does the work."""

    def __init__(self, key: str) -> None:
        self.key = key

    def __call__(self, *args: Any) -> Any:
        raise RuntimeError("optplan.torch chooses the saved set itself")

    def uuid(self) -> str:
        return self.key


@dataclass
class _State:
    peak_bytes: int | None
    fraction: float | None
    work: Budget
    outputs_held: bool = True
    num_fwd_outputs: int = 0
    report: Report | None = None
    # What the forwards of the graphs partitioned so far leave held: a graph compiled
    # later in the block runs inside their steps (a graph break: the body, then the loss).
    held_bytes: int = 0


_ACTIVE: list[_State] = []
_LAST: list[Report] = []


def last_report() -> Report | None:
    """The report of the last graph partitioned under a budget, or None."""
    return _LAST[-1] if _LAST else None


@contextlib.contextmanager
def memory_budget(
    *,
    peak_bytes: int | None = None,
    fraction: float | None = None,
    work: float = WORK,
    outputs_held: bool = True,
) -> Iterator[None]:
    """Partition every training graph compiled inside the block within the budget,
    searching saved sets for at most `work` units (`torch_search`). `outputs_held`:
    the caller keeps the model's outputs through the backward (`out = model(x);
    out.loss.backward()`); False when it keeps only the loss (`model(x).loss`), so the
    outputs the backward does not read (logits) are freed after the forward."""
    if (peak_bytes is None) == (fraction is None):
        raise InputError("memory_budget takes one of peak_bytes= or fraction=")
    if peak_bytes is not None and peak_bytes <= 0:
        raise InputError(f"peak_bytes must be positive, not {peak_bytes}")
    if fraction is not None and not 0 < fraction <= 1:
        raise InputError(f"fraction must be in (0, 1], not {fraction}")
    if not work > 0:
        raise InputError(f"work must be a positive number of units, not {work}")
    key = (
        f"optplan-{optplan.__version__}-bytes={peak_bytes}-fraction={fraction}-work={work}"
        f"-held={outputs_held}"
    )
    state = _State(peak_bytes, fraction, Budget(work, SEARCH_GUARD_SECONDS), outputs_held)
    original_choose, original_classify = parts.choose_saved_values_set, parts.classify_nodes

    def classify(joint_module: fx.GraphModule, static: list[int], num_fwd_outputs: int) -> Any:
        state.num_fwd_outputs = num_fwd_outputs
        return original_classify(joint_module, static, num_fwd_outputs)

    def chosen(joint_graph: fx.Graph, node_info: Any, memory_budget: float = 1) -> list[fx.Node]:
        return choose(state, original_choose, joint_graph, node_info)

    _ACTIVE.append(state)
    parts.choose_saved_values_set, parts.classify_nodes = chosen, classify  # type: ignore[assignment]
    try:
        with (
            fconfig.patch(activation_memory_budget_solver=_Key(key), enable_autograd_cache=False),
            torch._inductor.config.patch(fx_graph_cache=False),
        ):
            yield
    finally:
        parts.choose_saved_values_set, parts.classify_nodes = original_choose, original_classify
        _ACTIVE.remove(state)


def _solvers() -> tuple[str, ...]:
    if importlib.util.find_spec("scipy") is None:
        return ("dp", "greedy")
    return ("dp", "greedy", "ilp")


def candidates(original: Any, space: Space) -> list[Candidate]:
    """Steps 1 and 2: every distinct saved set of torch's settings, judged for real."""
    found: list[Candidate] = []
    for budget in (1.0, *TORCH_BUDGETS[:-1]):
        for solver in _solvers():
            with fconfig.patch(activation_memory_budget_solver=solver):
                saved = original(space.joint_graph, space.node_info, memory_budget=budget)
            before = space.evaluations
            judged = space.judge(saved, f"{solver}@{budget:.2f}")
            if judged is not None and space.evaluations > before:
                found.append(judged)
    return found


def choose(state: _State, original: Any, joint_graph: fx.Graph, node_info: Any) -> list[fx.Node]:
    """Steps 3 and 4: the candidate of least extra compute within the budget."""
    space = Space(
        joint_graph, node_info, state.num_fwd_outputs, state.outputs_held, state.held_bytes
    )
    found = candidates(original, space)
    default = found[0]
    budget = state.peak_bytes
    if budget is None:
        budget = int(default.peak.bytes * (state.fraction or 1.0))
    proven = _model(state, space, found, budget)
    found.extend(proven.candidates)
    bound = proven.bound
    for c in found:
        LOG.debug("candidate %s: peak %d B, extra %d FLOPs", c.label, c.peak.bytes, c.extra_flops)
    starts = sorted(found, key=lambda c: c.key(budget))[:STARTS]
    best = improve(space, starts, budget, _share(state.work, 1 - MODEL_SHARE))
    if best.peak.bytes > budget:
        judged = [c for c in space.cache.values() if c is not None]
        least = min(judged, key=lambda c: c.peak.bytes)
        raise InputError(_infeasible(budget, least, bound, state.held_bytes))
    report = Report(
        budget_bytes=budget,
        peak_bytes=best.peak.bytes,
        where=best.peak,
        default_peak_bytes=default.peak.bytes,
        bound_bytes=bound,
        extra_flops=best.extra_flops,
        extra_bound=proven.extra_bound,
        candidate=best.label,
        candidates=space.evaluations,
        saved=tuple(n.name for n in best.saved),
        recomputed=best.recomputed,
    )
    _LAST[:] = [report]
    state.held_bytes += best.peak.forward_end_bytes
    LOG.info("optplan.torch: %s", report.summary())
    return list(best.saved)


@dataclass(frozen=True, slots=True)
class _Proven:
    """What the backward's model found and proved for one graph."""

    candidates: list[Candidate]
    bound: int  # bytes: no saved set's peak is below it
    extra_bound: int | None  # FLOPs: none within the budget computes less again


def _model(state: _State, space: Space, found: list[Candidate], budget: int) -> _Proven:
    """The saved set of least peak by the backward's model (`torch_exact`), from the
    lowest of torch's; where the budget is above the proven bound, the saved set of
    least extra compute within it, from the best so far. Both judged for real. The
    bound on the peak is the larger of the model's and the order's (`torch_bound`).
    The model takes `MODEL_SHARE` of the work, half for each solve."""
    line = Timeline(space.joint_graph, space.forward, space.outputs_held, space.num_fwd_outputs)
    again, held = space.may_run_again, state.held_bytes
    order = order_bound(line, again, held)
    lowest = min(found, key=lambda c: c.peak.bytes)
    share = _share(state.work, MODEL_SHARE / 2)
    facts = Facts(line, again, held)
    least = exact(facts, share, hint=lowest.saved)
    judged = [space.judge(least.saved, "the model's least peak")] if least.saved else []
    bound = max(order.bytes, least.bound)
    extra_bound = None
    if budget >= bound:
        start = min([*found, *(c for c in judged if c)], key=lambda c: c.key(budget))
        cheap = exact(facts, share, hint=start.saved, budget=budget)
        if cheap.saved is not None:
            judged.append(space.judge(cheap.saved, "the model's least compute"))
        extra_bound = max(cheap.bound, 0) if cheap.bound != INFEASIBLE else None
        bound = max(bound, budget + 1) if cheap.bound == INFEASIBLE else bound
    return _Proven([c for c in judged if c is not None], bound, extra_bound)


def _share(work: Budget, share: float) -> Budget:
    return Budget((work.work or WORK) * share, work.seconds)


def _infeasible(budget: int, least: Candidate, bound: int, earlier: int) -> str:
    held = ", ".join(f"{name} ({size} B)" for name, size in least.peak.held)
    if earlier:
        held += (
            f", and {earlier} B that graphs compiled before it in the block hold "
            "while it runs (a graph break in the step)"
        )
    proof = (
        f"proven: every saved set holds at least {bound} bytes"
        if bound > budget
        else f"proven lower bound {bound} bytes"
    )
    return (
        f"no partition of this training step fits {budget} bytes: the least peak found is "
        f"{least.peak.bytes} bytes, in the {least.peak.graph} at op '{least.peak.op}' "
        f"holding {held} ({proof}); raise the budget to at least "
        f"{least.peak.bytes} bytes"
    )


__all__ = ["Report", "last_report", "memory_budget", "tensor_bytes"]
