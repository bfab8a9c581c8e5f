"""The memory and compute of one training step as torch.compile partitions it.

AOTAutograd splits the joint forward+backward graph into a forward graph and a backward
graph; the step runs the forward, holds what it saves, then runs the backward. Steps:

1. Each fx graph becomes a `schedule.graph.Graph` in its own node order: one buffer per
   tensor a call makes (a tuple-valued call one per element), views and `getitem` make
   none and read their source's buffers (every item of a tuple of views reads the whole
   source), placeholders the caller owns (parameters, inputs) are not counted. A call
   whose kernel allocates more than its outputs while it runs (`torch_workspace`) makes
   one more buffer of the difference that nothing reads: it is live at its step only.
2. The forward holds its outputs to its end (`live_out`). The backward starts holding
   the saved tensors that the forward made (matched by name) and its tangents
   (`live_in`; a scalar one, the loss's gradient, is held to its end), frees each at
   its last reader, and holds its gradients to its end; the forward's outputs that
   the backward does not read (the loss, the logits) are held throughout
   (`base_bytes`) unless the caller drops them (`outputs_held=False`).
3. The step's peak is the larger of the two graphs' `peak_bytes`; `where` names the op
   at that step and the tensors held there. A graph that runs inside another's step
   (after a graph break: the model's body, then its loss) has that graph's saved
   tensors and outputs under it throughout (`base_bytes` of both).
4. Compute is counted in FLOPs by torch's own formulas (`torch.utils.flop_counter`);
   an op they do not cover costs one per output element, a view nothing. The extra
   compute of a partition is the forward's and backward's cost less the joint graph's.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import torch
from torch import fx
from torch.utils._pytree import tree_flatten, tree_map
from torch.utils.flop_counter import flop_registry

from optplan.integrations.torch_workspace import footprints
from optplan.schedule.graph import Graph, live_spans, step_bytes


@dataclass(frozen=True, slots=True)
class StepPeak:
    """`bytes` at the step's peak, in `graph` ("forward" or "backward"), while op `op`
    runs, with `held` the (name, bytes) of the largest tensors live there;
    `forward_end_bytes`: what the forward leaves held (saved tensors and outputs)."""

    bytes: int
    graph: str
    op: str
    held: tuple[tuple[str, int], ...]
    forward_end_bytes: int = 0


def tensor_bytes(value: object) -> int:
    """Bytes of a tensor value (0 for anything else)."""
    if isinstance(value, torch.Tensor):
        return int(value.numel()) * value.element_size()
    return 0


# Ops whose output shares its input's storage though their schema does not say so.
UNSAFE_VIEWS = frozenset({torch.ops.aten._unsafe_view.default})


def is_view(node: fx.Node) -> bool:
    """Whether `node` makes no storage of its own: a view, an item of a tuple."""
    if node.target is operator.getitem or node.target in UNSAFE_VIEWS:
        return True
    schema = getattr(node.target, "_schema", None)
    return schema is not None and any(r.alias_info is not None for r in schema.returns)


K = TypeVar("K")


@dataclass(frozen=True, slots=True)
class Behind(Generic[K]):
    """The storages behind one call of a graph (`storages_behind`), those it reads, and
    whether they are new (not an item of a tuple, not a view)."""

    keys: tuple[K, ...]
    read: tuple[K, ...]
    made: bool


def storages_behind(
    node: fx.Node,
    of: Mapping[str, tuple[K, ...]],
    views: set[str],
    make: Callable[[fx.Node, int, int, object], K],
) -> Behind[K]:
    """The storages behind a call, given `of` for the nodes before it: an item of a tuple
    is that item's storage, or where the tuple is of views (split, unbind) their
    source's; a view (added to `views`) is what it reads; any other call makes one
    storage per item of its value, `make(node, index, count, item)`. Nodes missing from
    `of` have none (placeholders the step does not hold). `torch_graph.graph_of` keys
    them by buffer, `torch_bound` by (node, item)."""
    read = tuple(dict.fromkeys(s for a in node.all_input_nodes for s in of.get(a.name, ())))
    if node.target is operator.getitem and isinstance(node.args[1], int):
        source, index = node.args[0], node.args[1]
        assert isinstance(source, fx.Node)
        picked = of.get(source.name, ())
        return Behind(picked if source.name in views else picked[index : index + 1], read, False)
    if is_view(node):
        views.add(node.name)
        return Behind(read, read, False)
    value = node.meta.get("val")
    parts = value if isinstance(value, list | tuple) else [value]
    return Behind(tuple(make(node, i, len(parts), p) for i, p in enumerate(parts)), read, True)


def _part(node: fx.Node, index: int, count: int) -> str:
    return f"{node.name}[{index}]" if count > 1 else node.name


@dataclass(frozen=True, slots=True)
class _Built:
    graph: Graph
    buffers_of: dict[str, tuple[int, ...]]


# What a placeholder the step holds is: the (name, bytes) of the buffers behind it.
Held = dict[str, tuple[tuple[str, int], ...]]


def graph_of(gm: fx.GraphModule, held_in: Held, base_bytes: int = 0) -> _Built:
    """Step 1 and 2 for one fx graph; `held_in` maps placeholder names that the step
    holds (saved tensors, tangents) to the buffers behind them: placeholders that are
    views of one buffer (q, k and v of one projection) share it."""
    sizes: list[int] = []
    names: list[str] = []
    bufs: dict[str, tuple[int, ...]] = {}
    creates: list[tuple[int, ...]] = []
    reads: list[tuple[int, ...]] = []
    labels: list[str] = []
    live_in: list[int] = []
    views: set[str] = set()
    behind: dict[str, int] = {}
    # Bytes each kernel takes at once while it runs (outputs included): `torch_workspace`.
    footprint = footprints(n for n in gm.graph.nodes if n.op == "call_function")

    def new(name: str, size: int) -> int:
        sizes.append(size)
        names.append(name)
        return len(sizes) - 1

    def make(node: fx.Node, index: int, count: int, item: object) -> int:
        return new(_part(node, index, count), max(tensor_bytes(item), 1))

    for node in gm.graph.nodes:
        if node.op == "placeholder":
            for key, size in held_in.get(node.name, ()):
                if key not in behind:
                    behind[key] = new(key, size)
                    live_in.append(behind[key])
            bufs[node.name] = tuple(behind[key] for key, _ in held_in.get(node.name, ()))
            continue
        if node.op != "call_function":
            continue
        found = storages_behind(node, bufs, views, make)
        bufs[node.name] = found.keys
        if not found.made:
            continue
        made, read = found.keys, found.read
        scratch = footprint.get(node, 0) - sum(sizes[b] for b in made)
        if scratch > 0:  # live only while the op runs: made, never read
            made = (*made, new(f"{node.name}(workspace)", scratch))
        creates.append(made)
        reads.append(read)
        labels.append(node.name)
    return _Built(
        _finish(gm, sizes, names, creates, reads, labels, live_in, bufs, base_bytes), bufs
    )


def _finish(
    gm: fx.GraphModule,
    sizes: list[int],
    names: list[str],
    creates: list[tuple[int, ...]],
    reads: list[tuple[int, ...]],
    labels: list[str],
    live_in: list[int],
    bufs: dict[str, tuple[int, ...]],
    base_bytes: int,
) -> Graph:
    out = set()
    for node in gm.graph.nodes:
        if node.op == "output":
            leaves, _ = tree_flatten(node.args)
            out = {
                b for leaf in leaves if isinstance(leaf, fx.Node) for b in bufs.get(leaf.name, ())
            }
    read_any = {b for r in reads for b in r}
    live_in = [b for b in live_in if b in read_any or b in out]
    # The node order is the order that runs: a chain of predecessors keeps it.
    preds = tuple((v - 1,) if v else () for v in range(len(creates)))
    return Graph(
        sizes=tuple(sizes),
        creates=tuple(creates),
        reads=tuple(reads),
        preds=preds,
        live_in=tuple(live_in),
        live_out=frozenset(out),
        base_bytes=base_bytes,
        names=tuple(names),
        labels=tuple(labels),
    )


def graph_peak(built: _Built, which: str) -> StepPeak:
    """The peak of one graph in its own order, with the op and what is held there."""
    graph = built.graph
    order = list(range(graph.ops))
    per_step = step_bytes(graph, order)
    if not per_step:
        start = sum(graph.sizes[b] for b in graph.live_in) + graph.base_bytes
        return StepPeak(start, which, "(none)", ())
    at = max(range(len(per_step)), key=lambda t: (per_step[t], -t))
    spans = live_spans(graph, order)
    live = [b for b, (s, e) in enumerate(spans) if s <= at < e]
    held = tuple(sorted(((graph.names[b], graph.sizes[b]) for b in live), key=lambda x: -x[1])[:6])
    return StepPeak(per_step[at], which, graph.labels[at], held)


def step_peak(
    fw: fx.GraphModule,
    bw: fx.GraphModule,
    users: int,
    outputs_held: bool = True,
    base_bytes: int = 0,
) -> StepPeak:
    """Steps 2 and 3: the peak of the forward, then the backward; the forward's first
    `users` outputs are the caller's (the rest are saved for the backward), and with
    `outputs_held` the caller keeps them until the backward ends; `base_bytes` are held
    by others throughout (earlier graphs of the step)."""
    fwd, bwd = step_graphs(fw, bw, users, outputs_held, base_bytes)
    peak = max(graph_peak(fwd, "forward"), graph_peak(bwd, "backward"), key=lambda p: p.bytes)
    end = sum(fwd.graph.sizes[b] for b in fwd.graph.live_out)
    return dataclasses.replace(peak, forward_end_bytes=end)


def step_graphs(
    fw: fx.GraphModule,
    bw: fx.GraphModule,
    users: int,
    outputs_held: bool = True,
    base_bytes: int = 0,
) -> tuple[_Built, _Built]:
    """Step 2: the forward's and the backward's graphs as the step runs them."""
    fwd = graph_of(fw, {}, base_bytes)

    def behind(name: str) -> tuple[tuple[str, int], ...]:
        found = fwd.buffers_of.get(name, ())
        return tuple((fwd.graph.names[b], fwd.graph.sizes[b]) for b in found)

    # The caller's outputs it keeps are held throughout, saved for the backward or not;
    # dropped or not, it keeps the loss it calls backward on (one element).
    kept = [n for n in _outputs(fw, users) if outputs_held or elements(n) <= 1]
    caller = {key for n in kept for key in behind(n.name)}
    held: Held = {}
    scalars = 0
    for n in (n for n in bw.graph.nodes if n.op == "placeholder"):
        size, saved = tensor_bytes(n.meta.get("val")), behind(n.name)
        if n.name.startswith("tangents") and elements(n) == 1:
            # The loss's gradient: `backward()` holds it until the whole backward ends.
            scalars += size
        elif n.name.startswith("tangents") and size > 0:
            held[n.name] = ((n.name, size),)
        elif saved and set(saved) - caller:
            held[n.name] = tuple(key for key in saved if key not in caller)
    throughout = sum(size for _, size in caller) + scalars + base_bytes
    return fwd, graph_of(bw, held, base_bytes=throughout)


def elements(node: fx.Node) -> int:
    """Elements of a node's tensor value (0 for anything else)."""
    value = node.meta.get("val")
    return int(value.numel()) if isinstance(value, torch.Tensor) else 0


def _outputs(gm: fx.GraphModule, first: int | None = None) -> list[fx.Node]:
    """The graph's outputs (its `first` ones), each once."""
    for node in gm.graph.nodes:
        if node.op == "output":
            leaves, _ = tree_flatten(node.args[0][:first] if first is not None else node.args)
            return list(dict.fromkeys(x for x in leaves if isinstance(x, fx.Node)))
    return []


def node_cost(node: fx.Node) -> int:
    """Step 4 for one node: FLOPs, or one per output element."""
    if node.op != "call_function" or is_view(node):
        return 0
    value = node.meta.get("val")
    packet = getattr(node.target, "overloadpacket", None)
    if packet in flop_registry:
        args, kwargs = tree_map(_meta, (node.args, node.kwargs))
        try:
            return int(flop_registry[packet](*args, out_val=value, **kwargs))
        except (TypeError, ValueError, RuntimeError, AssertionError):
            pass  # a formula that does not take these arguments: count elements
    leaves, _ = tree_flatten(value)
    return sum(int(v.numel()) for v in leaves if isinstance(v, torch.Tensor))


def _meta(x: Any) -> Any:
    return x.meta.get("val") if isinstance(x, fx.Node) else x


def graph_cost(gm: fx.GraphModule | fx.Graph) -> int:
    """The cost of running every call of a graph once."""
    graph = gm.graph if isinstance(gm, fx.GraphModule) else gm
    return sum(node_cost(n) for n in graph.nodes)
