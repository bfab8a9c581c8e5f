"""optplan's own saved sets for a training step: single moves judged by the real peak.

torch's knapsack solvers propose saved sets by a proxy (summed sizes); this search walks
from the best of them one node at a time, each neighbour partitioned for real:

1. A `Space` holds the joint graph and what may move: a forward node may be recomputed
   in the backward unless the partitioner must keep it (`MUST_SAVE`, a random op, a
   mutation that must stay in the forward, a value that is not one tensor).
2. `Space.judge(saved)` partitions the joint graph with that saved set
   (`_extract_fwd_bwd_modules`, then the backward reordered as the partitioner does),
   and returns its step peak (`torch_graph.step_peak`) and extra FLOPs; a saved set the
   partitioner cannot extract is None. A backward that would run a random op again
   (dropout: on CPU a new mask, gradients unlike eager's; torch's own knapsack sets at
   low budgets do it) saves what it reads of that op instead, and is split again. Results are cached by the saved names, and every
   partition (cache misses only) counts one evaluation.
3. Moves from a saved set: *recompute* a saved tensor (drop it; whichever of its inputs
   the backward cannot already compute is saved instead, or in a second pass computed
   again as well, its own inputs saved) and *save* a recomputed tensor
   (the partitioner then drops the saved inputs nobody reads). Over the budget, the
   tensors held at the peak are tried first, largest first; within it, the saves of the
   costliest recomputations first.
4. `improve` climbs from each start in turn: the first neighbour that is better (within
   the budget and cheaper; else a lower peak) becomes the current set, until none is
   better or the work is spent. Work is evaluations, `EVALS_PER_UNIT` to a unit
   (`optplan.budget`), seconds only a guard: the same graph gives the same set.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import fx
from torch._functorch import partitioners as parts
from torch.utils.checkpoint import CheckpointPolicy

from optplan.budget import Budget, Clock
from optplan.integrations.torch_graph import (
    StepPeak,
    graph_cost,
    node_cost,
    step_peak,
    tensor_bytes,
)

# Partitions judged in a unit of work: one took 0.4 to 0.65 s on a loaded core for the
# 2-layer Llama-style step of benchmarks/torch_training.py (237 in 153 s).
EVALS_PER_UNIT = 4

# Rounds of saving what a random op run again would have drawn (step 2).
_ROUNDS = 4

# The search's default work and its guard.
SEARCH_WORK = 30.0
SEARCH_GUARD_SECONDS = 600.0


@dataclass(frozen=True, slots=True)
class Candidate:
    """One saved set, partitioned and judged."""

    label: str
    saved: tuple[fx.Node, ...]
    peak: StepPeak
    extra_flops: int
    recomputed: tuple[str, ...]

    def key(self, budget: int) -> tuple[int, int, int]:
        """Smaller is better: within the budget by extra compute, else by peak."""
        if self.peak.bytes <= budget:
            return (0, self.extra_flops, self.peak.bytes)
        return (1, self.peak.bytes, self.extra_flops)


@dataclass
class Space:
    """The joint graph of one training step and the cache of its judged saved sets."""

    joint_graph: fx.Graph
    node_info: Any
    num_fwd_outputs: int
    outputs_held: bool = True
    base_bytes: int = 0
    joint_cost: int = 0
    evaluations: int = 0
    cache: dict[tuple[str, ...], Candidate | None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.joint_cost = graph_cost(self.joint_graph)
        self.order = {n: i for i, n in enumerate(self.joint_graph.nodes)}
        self.by_name = {n.name: n for n in self.joint_graph.nodes}
        self.forward = {n for n in self.joint_graph.nodes if _is_forward(n, self.node_info)}
        # A call copied into the forward or backward keeps its joint name and its cost.
        self.costs = {n.name: node_cost(n) for n in self.joint_graph.nodes}

    def judge(self, saved: Iterable[fx.Node], label: str) -> Candidate | None:
        """Step 2: the saved set partitioned and judged (None: not a valid partition)."""
        ordered = tuple(sorted(set(saved), key=self.order.__getitem__))
        names = tuple(n.name for n in ordered)
        if names not in self.cache:
            self.evaluations += 1
            self.cache[names] = self._partition(ordered, label)
        return self.cache[names]

    def _partition(self, saved: tuple[fx.Node, ...], label: str) -> Candidate | None:
        split = self._split(saved)
        for _ in range(_ROUNDS):
            if split is None:
                return None  # a saved set the partitioner cannot split the step with
            drawn = self._drawn_again(split[1], saved)
            if not drawn:
                break
            saved = tuple(sorted(set(saved) | drawn, key=self.order.__getitem__))
            split = self._split(saved)
        else:
            return None
        fw, bw = split
        fw_calls = {n.name for n in fw.graph.nodes if n.op == "call_function"}
        recomputed = tuple(
            n.name for n in bw.graph.nodes if n.op == "call_function" and n.name in fw_calls
        )
        extra = max(self._cost(fw) + self._cost(bw) - self.joint_cost, 0)
        kept = tuple(n for n in saved if n in {x for kind in _kinds(saved) for x in kind})
        return Candidate(
            label,
            kept,
            step_peak(fw, bw, self.num_fwd_outputs, self.outputs_held, self.base_bytes),
            extra,
            recomputed,
        )

    def _split(self, saved: tuple[fx.Node, ...]) -> tuple[fx.GraphModule, fx.GraphModule] | None:
        """The forward and the backward the partitioner makes of `saved` (None: none)."""
        values, syms, opaque = _kinds(saved)
        owner = self.joint_graph.owning_module
        assert owner is not None  # the partitioner's joint graph belongs to its module
        try:
            fw, bw = parts._extract_fwd_bwd_modules(
                owner,
                values,
                saved_sym_nodes=syms,
                saved_opaque_nodes=opaque,
                num_fwd_outputs=self.num_fwd_outputs,
                static_lifetime_input_nodes=self.node_info.static_lifetime_input_nodes,
            )
            return fw, parts.reordering_to_mimic_autograd_engine(bw)
        except (AssertionError, RuntimeError, KeyError):
            return None

    def _drawn_again(self, bw: fx.GraphModule, saved: tuple[fx.Node, ...]) -> set[fx.Node]:
        """Step 2: what to save instead of running a random op again in the backward
        (on CPU it would draw a new mask): the op's tensor, or the items of it the
        backward reads; empty when the backward runs no random op."""
        drawn = {n.name for n in bw.graph.nodes if n.op == "call_function" and draws_random(n)}
        if not drawn:
            return set()
        items = {
            self.by_name[n.name]
            for n in bw.graph.nodes
            if n.target is operator.getitem and n.args[0].name in drawn  # type: ignore[union-attr]
        }
        tensors = {self.by_name[d] for d in drawn} - {i.args[0] for i in items}
        more = items | {t for t in tensors if isinstance(t.meta.get("val"), torch.Tensor)}
        return more - set(saved) or set()

    def _cost(self, gm: fx.GraphModule) -> int:
        calls = (n for n in gm.graph.nodes if n.op == "call_function")
        return sum(self.costs[n.name] if n.name in self.costs else node_cost(n) for n in calls)

    def movable(self, node: fx.Node) -> bool:
        """Step 1: whether the search may have the backward compute `node` again."""
        return self.may_run_again(node) and isinstance(node.meta.get("val"), torch.Tensor)

    def may_run_again(self, node: fx.Node) -> bool:
        """Whether any partition may run `node` twice: a forward call the partitioner
        may recompute (backward calls, random ops, mutations and `MUST_SAVE` run once)."""
        if node not in self.forward or node.op != "call_function":
            return False
        if node.meta.get("recompute") == CheckpointPolicy.MUST_SAVE:
            return False
        return not (parts._must_be_in_forward(node) or draws_random(node))

    def available(self, saved: set[fx.Node]) -> set[fx.Node]:
        """The forward nodes the backward can compute from `saved` alone."""
        have = set(saved)
        for node in self.joint_graph.nodes:
            if node in have or node not in self.forward or node.op != "call_function":
                continue
            if parts._must_be_in_forward(node) or draws_random(node):
                continue
            if all(a in have for a in node.all_input_nodes):
                have.add(node)
        return have


def _kinds(saved: tuple[fx.Node, ...]) -> tuple[list[fx.Node], list[fx.Node], list[fx.Node]]:
    """A saved set as the partitioner takes it: tensors, symbolic sizes, opaque values."""
    values = [n for n in saved if not parts.is_sym_node(n) and not parts.is_opaque_node(n)]
    syms = [n for n in saved if parts.is_sym_node(n) and not parts._is_assert_only_symbool(n)]
    opaque = [n for n in saved if parts.is_opaque_node(n)]
    return values, syms, opaque


def _is_forward(node: fx.Node, node_info: Any) -> bool:
    if node.op == "placeholder":
        return not node.name.startswith("tangents")
    return bool(node_info.is_required_fw(node))


def draws_random(node: fx.Node) -> bool:
    """Whether a call draws random numbers its result depends on: a random op, unless
    its dropout probability (`p`, `dropout_p`) is zero (attention with no dropout)."""
    target = node.target
    if torch.Tag.nondeterministic_seeded not in getattr(target, "tags", ()):
        return False
    schema = getattr(target, "_schema", None)
    for i, arg in enumerate(schema.arguments if schema is not None else ()):
        if arg.name in ("p", "dropout_p"):
            given = node.args[i] if i < len(node.args) else node.kwargs.get(arg.name)
            value = arg.default_value if given is None else given
            return not (isinstance(value, int | float) and value == 0)
    return True


def recompute(
    space: Space, saved: tuple[fx.Node, ...], node: fx.Node, depth: int = 0
) -> set[fx.Node] | None:
    """Step 3: `saved` without `node`, and with each input of it the backward lacks;
    to `depth` levels such an input is computed again too, where it may be."""
    if not space.movable(node):
        return None
    rest = set(saved) - {node}
    have = space.available(rest)
    todo, level = [node], 0
    while todo:
        lacking = [a for n in todo for a in n.all_input_nodes if a not in have]
        todo = []
        for arg in dict.fromkeys(lacking):
            if level < depth and space.movable(arg):
                todo.append(arg)
            elif arg.op == "call_function" and not isinstance(arg.meta.get("val"), torch.Tensor):
                return None  # a tuple: its op would have to run again as well
            else:
                rest.add(arg)
                have.add(arg)
        level += 1
    return rest


def moves(space: Space, current: Candidate, budget: int) -> Iterator[tuple[str, set[fx.Node]]]:
    """Step 3: the neighbours of `current`, in the order step 3 gives."""
    held = {name for name, _ in current.peak.held}
    size = {n: tensor_bytes(n.meta.get("val")) for n in current.saved}
    drops = sorted(current.saved, key=lambda n: (n.name not in held, -size[n], space.order[n]))
    # Only a tensor can be saved: a tuple-valued op (layer norm's) is saved by its items.
    recomputed = [
        space.by_name[r]
        for r in current.recomputed
        if r in space.by_name and isinstance(space.by_name[r].meta.get("val"), torch.Tensor)
    ]
    adds = sorted(recomputed, key=lambda n: (-node_cost(n), space.order[n]))
    over = current.peak.bytes > budget
    recomputes = [
        (
            f"recompute {n.name}" + " and its inputs" * depth,
            recompute(space, current.saved, n, depth),
        )
        for depth in (0, 1)
        for n in drops
    ]
    saves = [(f"save {n.name}", set(current.saved) | {n}) for n in adds]
    for label, saved in (*recomputes, *saves) if over else (*saves, *recomputes):
        if saved is not None:
            yield label, saved


def improve(
    space: Space, starts: list[Candidate], budget: int, work: Budget | None = None
) -> Candidate:
    """Step 4: the best set reached by first-improvement climbs from `starts`."""
    clock = (work or Budget(SEARCH_WORK, SEARCH_GUARD_SECONDS)).clock()
    best = min(starts, key=lambda c: c.key(budget))
    base = space.evaluations
    for start in starts:
        current, steps = start, 0
        while not _spent(space, clock, base):
            step = _better(space, current, budget, clock, base)
            if step is None:
                break
            steps += 1
            current = Candidate(
                f"{start.label} +{steps} moves",
                step.saved,
                step.peak,
                step.extra_flops,
                step.recomputed,
            )
        if current.key(budget) < best.key(budget):
            best = current
    return best


def _spent(space: Space, clock: Clock, base: int) -> bool:
    clock.spent = (space.evaluations - base) / EVALS_PER_UNIT
    return clock.past(clock.end)


def _better(
    space: Space, current: Candidate, budget: int, clock: Clock, base: int
) -> Candidate | None:
    for label, saved in moves(space, current, budget):
        if _spent(space, clock, base):
            return None
        found = space.judge(saved, label)
        if found is not None and found.key(budget) < current.key(budget):
            return found
    return None
