"""A lower bound on the peak of every saved set, in the order torch's partitioner runs.

Whatever set of forward tensors the partitioner saves, the backward runs the joint
graph's backward calls once each, in the joint graph's order from the first call that
reads a tangent (`reordering_to_mimic_autograd_engine`; the calls before it run when
a later one needs them), and computes again, just before they are needed, the forward
calls it did not save. So at the step of each such anchor call `a`:

1. Held without choice: what `a` reads and makes (with its kernel's scratch,
   `torch_workspace`), every tensor a backward call made at or before `a` that a later
   backward call reads or that the backward returns (the gradients), every tangent a
   later call reads, and what the step holds throughout (the loss's gradient, earlier
   graphs' tensors).
2. Held by choice: the forward tensors the backward reads after `a` must each be
   held at `a`, or computed again after it from what is held. Forward calls the
   partitioner never runs twice (random ops, mutations, `MUST_SAVE`) are computed from
   nothing: a tensor of theirs needed later is held. The least such held set is one
   minimum cut: a node pair per forward storage (an arc of its bytes between them), a
   node per call that may run again (arcs in from the storages it reads, out to the
   storages it makes), the source into every storage of a call that may not, every
   storage needed later into the sink, and the source into every storage of step 1
   (held already, so free).
3. The bound is the largest over anchors of 1 plus 2. Views share their source's
   storage (a view held holds its source); parameters and inputs are the caller's and
   cost nothing. The forward's own steps are not bounded here (a smaller bound, still
   one). It does not follow which storages the search chose: it holds for every saved
   set the partitioner can split the step with, so a budget below it is infeasible.

Each cut is one max-flow (OR-Tools' `SimpleMaxFlow`, built once; a query only changes
the capacities at the source and the sink).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from ortools.graph.python import max_flow  # type: ignore[import-untyped, import-not-found, unused-ignore]
from torch import fx

from optplan.integrations.torch_graph import elements, is_view, storages_behind, tensor_bytes
from optplan.integrations.torch_workspace import footprints

# A storage: the call that makes it and which item of its output.
Storage = tuple[str, int]


@dataclass(frozen=True, slots=True)
class OrderBound:
    """`bytes`: no saved set's step holds less at its peak; `op`: the backward call at
    whose step it is held; `held`: the largest storages held there by 1 and 2."""

    bytes: int
    op: str
    held: tuple[tuple[str, int], ...] = ()


@dataclass
class _Storages:
    """Step 3: the storages behind every node of the joint graph, and their bytes."""

    graph: fx.Graph
    free: Callable[[fx.Node], bool]
    of: dict[str, tuple[Storage, ...]] = field(default_factory=dict)
    size: dict[Storage, int] = field(default_factory=dict)
    views: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.by_name = {n.name: n for n in self.graph.nodes}
        for node in self.graph.nodes:
            if node.op == "placeholder":
                self._placeholder(node)
            elif node.op == "call_function":
                self._call(node)

    def _placeholder(self, node: fx.Node) -> None:
        if self.free(node):
            self.of[node.name] = ()
            return
        self.of[node.name] = ((node.name, 0),)
        self.size[node.name, 0] = tensor_bytes(node.meta.get("val"))

    def _call(self, node: fx.Node) -> None:
        self.of[node.name] = storages_behind(node, self.of, self.views, self._made).keys

    def _made(self, node: fx.Node, index: int, count: int, item: object) -> Storage:
        self.size[node.name, index] = max(tensor_bytes(item), 1)
        return node.name, index

    def bytes_of(self, storages: set[Storage]) -> int:
        return sum(self.size[s] for s in storages)

    def node(self, storage: Storage) -> fx.Node:
        return self.by_name[storage[0]]

    def largest(self, storages: set[Storage]) -> tuple[tuple[str, int], ...]:
        named = ((_label(s), self.size[s]) for s in storages)
        return tuple(sorted(named, key=lambda x: (-x[1], x[0]))[:6])


def _label(storage: Storage) -> str:
    return storage[0] if storage[1] == 0 else f"{storage[0]}[{storage[1]}]"


def _returned(graph: fx.Graph, storages: _Storages) -> set[Storage]:
    """The storages behind what the joint graph returns."""
    return {
        s
        for node in graph.find_nodes(op="output")
        for a in node.all_input_nodes
        for s in storages.of.get(a.name, ())
    }


@dataclass
class _Backward:
    """When each backward call runs: the index of the anchor at whose step it has run
    (an anchor's own, or the first anchor that needs it); never needed: not run."""

    graph: fx.Graph
    forward: set[fx.Node]
    anchors: list[fx.Node] = field(default_factory=list)
    time: dict[fx.Node, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        calls = [n for n in self.graph.nodes if n.op == "call_function" and n not in self.forward]
        tangent_users = [n for n in calls if any(_is_tangent(a) for a in n.all_input_nodes)]
        if not tangent_users:
            return
        first = calls.index(tangent_users[0])
        self.anchors = calls[first:]
        for k, anchor in enumerate(self.anchors):
            self._run(anchor, k)
        for node in self.graph.find_nodes(op="output"):
            for needed in node.all_input_nodes:  # returned, needed by no anchor: at the end
                self._run(needed, len(self.anchors))

    def _run(self, node: fx.Node, k: int) -> None:
        todo = [node]
        while todo:
            n = todo.pop()
            if n in self.time or n.op != "call_function" or n in self.forward:
                continue
            self.time[n] = k
            todo.extend(n.all_input_nodes)


def _is_tangent(node: fx.Node) -> bool:
    return node.op == "placeholder" and node.name.startswith("tangents")


def order_bound(
    line: Timeline, may_run_again: Callable[[fx.Node], bool], base_bytes: int = 0
) -> OrderBound:
    """The module's bound for the joint graph of `line`; calls for which
    `may_run_again` is False are never computed in the backward."""
    joint_graph = line.graph
    base = base_bytes + line.throughout
    if not line.runs.anchors:
        return OrderBound(base, "(none)")
    cut = _Cut(joint_graph, line.storages, may_run_again, line.forward_made)
    scratch = footprints(n for n in line.runs.anchors if n in line.reads)
    best = OrderBound(base, "(none)")
    for k, anchor in enumerate(line.runs.anchors):
        if anchor not in line.reads:
            continue  # a view: no step of its own
        fixed, forced, later = line.held_at(k, anchor)
        made = line.storages.bytes_of(set(line.storages.of[anchor.name]))
        work = max(scratch.get(anchor, 0) - made, 0)
        held = line.storages.bytes_of(fixed | forced)
        total = base + work + held + cut.least(forced | line.kept, later)
        if total > best.bytes:
            best = OrderBound(total, anchor.name, line.storages.largest(fixed | forced))
    return best


@dataclass
class Timeline:
    """Steps 1 and 2 at each anchor: which storages are held without choice, and which
    forward storages the backward reads later."""

    graph: fx.Graph
    forward: set[fx.Node]
    outputs_held: bool = True
    num_fwd_outputs: int = 0

    def __post_init__(self) -> None:
        self.storages = _Storages(
            self.graph, lambda n: n.op == "placeholder" and not _is_tangent(n)
        )
        self.runs = _Backward(self.graph, self.forward)
        names = {n.name for n in self.forward}
        self.forward_made = {s for s in self.storages.size if s[0] in names}
        steps = [n for n in self.runs.time if not is_view(n)]
        self.reads = {
            n: {s for a in n.all_input_nodes for s in self.storages.of[a.name]} for n in steps
        }
        self.first: dict[Storage, int] = {}
        self.last: dict[Storage, int] = {}
        for n in steps:
            for s in self.reads[n]:
                t = self.runs.time[n]
                self.first[s] = min(self.first.get(s, t), t)
                self.last[s] = max(self.last.get(s, t), t)
        self.made_at = {s: self.runs.time[n] for n in steps for s in self.storages.of[n.name]}
        self.returned = _returned(self.graph, self.storages) - self.forward_made
        scalars = {s for s in self.storages.size if self.scalar(s)}
        # Held through the backward: the loss's gradient, and the outputs the caller keeps
        # (`torch_graph.step_graphs`); those are free to compute from, never chosen.
        self.kept = self._kept()
        self.throughout = self.storages.bytes_of(scalars | self.kept)

    def _kept(self) -> set[Storage]:
        """The forward's storages among the outputs the caller keeps."""
        outputs = [n for n in self.graph.find_nodes(op="output")]
        leaves = [a for a in outputs[0].args[0][: self.num_fwd_outputs]] if outputs else []
        kept = [
            a for a in leaves if isinstance(a, fx.Node) and (self.outputs_held or elements(a) <= 1)
        ]
        return {s for a in kept for s in self.storages.of[a.name]} & self.forward_made

    def scalar(self, s: Storage) -> bool:
        """The loss's gradient: held by `backward()` to the end (the step's base)."""
        node = self.storages.node(s)
        return _is_tangent(node) and elements(node) == 1

    def held_at(self, k: int, anchor: fx.Node) -> tuple[set[Storage], set[Storage], set[Storage]]:
        """At anchor `k`'s step: the backward's storages held (step 1), the forward's held
        without choice (read by `anchor`, or read before its step and after it), and the
        forward's read only after it."""
        reads, mine = self.reads[anchor], set(self.storages.of[anchor.name])
        fixed = {
            s
            for s in self.storages.size
            if s not in self.forward_made
            and not self.scalar(s)
            and self.made_at.get(s, -1) <= k
            and (s in reads or s in mine or self.last.get(s, -1) > k or s in self.returned)
        }
        chosen = self.forward_made - self.kept
        forced = {s for s in chosen if s in reads or self.first.get(s, k + 1) <= k < self.last[s]}
        later = {s for s in chosen if self.first.get(s, -1) > k}
        return fixed, forced, later


class _Cut:
    """Step 2's network over the forward's storages, built once (module docstring)."""

    def __init__(
        self,
        graph: fx.Graph,
        storages: _Storages,
        may_run_again: Callable[[fx.Node], bool],
        forward_made: set[Storage],
    ) -> None:
        self.index = {s: i for i, s in enumerate(sorted(forward_made))}
        self.sizes = np.array([storages.size[s] for s in self.index], dtype=np.int64)
        self.infinite = int(self.sizes.sum()) + 1
        m = len(self.index)
        calls = [
            n
            for n in graph.nodes
            if n.op == "call_function"
            and not is_view(n)
            and storages.of[n.name]
            and storages.of[n.name][0] in self.index
        ]
        self.source, self.sink = 2 * m + len(calls), 2 * m + len(calls) + 1
        tails: list[int] = [2 * i for i in range(m)]
        heads: list[int] = [2 * i + 1 for i in range(m)]
        caps: list[int] = self.sizes.tolist()
        for j, node in enumerate(calls):
            made = [self.index[s] for s in storages.of[node.name]]
            if may_run_again(node):
                reads = {s for a in node.all_input_nodes for s in storages.of[a.name]}
                read = sorted(self.index[s] for s in reads & self.index.keys())
                tails.extend(2 * i + 1 for i in read)
                heads.extend([2 * m + j] * len(read))
                caps.extend([self.infinite] * len(read))
                tails.extend([2 * m + j] * len(made))
            else:
                tails.extend([self.source] * len(made))
            heads.extend(2 * i for i in made)
            caps.extend([self.infinite] * len(made))
        self.flow = max_flow.SimpleMaxFlow()
        self.flow.add_arcs_with_capacity(
            np.array(tails, dtype=np.int32),
            np.array(heads, dtype=np.int32),
            np.array(caps, dtype=np.int64),
        )
        outs = np.arange(m, dtype=np.int32) * 2 + 1
        zero = np.zeros(m, dtype=np.int64)
        self.source_arcs = self.flow.add_arcs_with_capacity(
            np.full(m, self.source, dtype=np.int32), outs, zero
        )
        self.sink_arcs = self.flow.add_arcs_with_capacity(
            outs, np.full(m, self.sink, dtype=np.int32), zero
        )

    def least(self, free: set[Storage], needed: set[Storage]) -> int:
        """The least bytes of forward storages, beyond `free`, from which every storage
        of `needed` is held or computed again by calls that may run again."""
        if not needed:
            return 0
        sources = self.source_arcs[[self.index[s] for s in free]] if free else self.source_arcs[:0]
        sinks = self.sink_arcs[[self.index[s] for s in needed]]
        ties = np.concatenate([sources, sinks])
        self.flow.set_arcs_capacity(ties, np.full(len(ties), self.infinite, dtype=np.int64))
        status = self.flow.solve(self.source, self.sink)
        self.flow.set_arcs_capacity(ties, np.zeros(len(ties), dtype=np.int64))
        if status != self.flow.OPTIMAL:
            raise AssertionError(f"max-flow failed: status {status}")
        return int(self.flow.optimal_flow())
