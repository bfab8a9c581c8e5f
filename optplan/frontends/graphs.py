"""Peers' computation graphs: networkx node-link JSON, as Checkmate and MOCCASIN write them.

A graph is a DAG of nodes; each node runs once in the program order, makes one output of
`cost_ram` bytes and costs `cost_cpu` to run (the random layered graphs of "Neural
Topological Ordering for Computation Graphs" name them `out_cost` and `duration`). An
edge u -> v says v reads u's output.

Steps of `read_graph(path)`:

1. Parse the JSON; nodes are named by `id` (or `name` where there is no `id`), edges by
   `source`/`target` (or the keys `0`/`1` of the random layered graphs).
2. The program order is `graph["order"]` where the file gives one (the random layered
   graphs), else the order of the nodes in the file; it must run every node once, after
   its inputs.
3. Node i of the program order becomes op i of a `schedule.Graph` with one buffer, of the
   node's bytes, read by its successors' ops; `costs` are the nodes' compute costs.
   Op and buffer are named by the node's label, `label#id` where labels repeat.

The peak of an order is the graphs' own: a node's output is live from its own step to
its last consumer's step inclusive, a node no one consumes at its own step only, nothing
held before the first step or after the last. That is optplan's program points: a tensor
made at step d and last read at step u is live over `[d, u + 1)` (`schedule.graph`).

Every fault is one InputError naming the file and, where it can, the node.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from optplan.errors import InputError
from optplan.schedule.graph import Graph

# The names of the per-node facts, as Checkmate writes them and as the random layered
# graphs' generator does.
_BYTES = ("cost_ram", "out_cost")
_COST = ("cost_cpu", "duration")


@dataclass(frozen=True, slots=True)
class PeerGraph:
    """A peer's graph read into a `schedule.Graph` whose op i is the i-th node of the
    program order; `nodes[i]` is that node's id in the file."""

    name: str
    graph: Graph
    nodes: tuple[object, ...]


def read_graph(path: str | Path) -> PeerGraph:
    """The graph in `path` (module docstring)."""
    file = str(path)
    try:
        data = json.loads(Path(path).read_text())
    except OSError as error:
        raise InputError(f"cannot read: {error.strerror}", file=file) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        where = (
            {"line": error.lineno, "col": error.colno}
            if isinstance(error, json.JSONDecodeError)
            else {}
        )
        raise InputError(f"not JSON: {error}", file=file, **where) from None
    if not isinstance(data, dict) or not isinstance(data.get("nodes"), list):
        raise InputError(
            "expected networkx node-link JSON: an object with 'nodes' and 'links'", file=file
        )
    nodes = [_node(entry, file) for entry in data["nodes"]]
    ids = [node_id for node_id, _, _, _ in nodes]
    if len(set(map(_key, ids))) != len(ids):
        raise InputError("two nodes have the same id", file=file)
    links = data.get("links", data.get("edges")) or []
    if not isinstance(links, list):
        raise InputError("'links' is not a list", file=file)
    edges = [_edge(entry, file) for entry in links]
    info = data["graph"] if isinstance(data.get("graph"), dict) else {}
    order = _order(info.get("order"), ids, file)
    graph = _schedule_graph(nodes, edges, order, file)
    name = str(info.get("name") or Path(file).stem)
    return PeerGraph(name, graph, tuple(ids[i] for i in order))


def _node(entry: object, file: str) -> tuple[object, str, int, int]:
    """(id, label, bytes, cost) of one node entry."""
    if not isinstance(entry, Mapping):
        raise InputError(f"a node is not an object: {entry!r}", file=file)
    node_id = entry.get("id", entry.get("name"))
    if node_id is None:
        raise InputError(f"a node has neither 'id' nor 'name': {dict(entry)!r}", file=file)
    size = _number(entry, _BYTES, node_id, file)
    cost = _number(entry, _COST, node_id, file, default=1)
    return node_id, str(entry.get("name", node_id)), size, cost


def _number(
    entry: Mapping[str, object],
    keys: tuple[str, ...],
    node_id: object,
    file: str,
    default: int | None = None,
) -> int:
    for key in keys:
        if key in entry:
            value = entry[key]
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InputError(
                    f"node {node_id!r}: {key} is not a non-negative integer: {value!r}", file=file
                )
            return value
    if default is None:
        raise InputError(f"node {node_id!r} has no size ({' or '.join(keys)})", file=file)
    return default


def _edge(entry: object, file: str) -> tuple[object, object]:
    if not isinstance(entry, Mapping):
        raise InputError(f"a link is not an object: {entry!r}", file=file)
    for source, target in (("source", "target"), ("0", "1")):
        if source in entry and target in entry:
            return entry[source], entry[target]
    raise InputError(f"a link names no 'source' and 'target': {dict(entry)!r}", file=file)


def _key(node_id: object) -> object:
    """Ids as JSON gives them may be lists (networkx writes tuples so): hashable keys."""
    return tuple(node_id) if isinstance(node_id, list) else node_id


def _order(given: object, ids: list[object], file: str) -> list[int]:
    """Positions (in the file) of the nodes in program order."""
    if given is None:
        return list(range(len(ids)))
    position = {_key(node_id): k for k, node_id in enumerate(ids)}
    if not isinstance(given, list) or sorted(map(str, given)) != sorted(map(str, ids)):
        raise InputError("graph['order'] does not list every node once", file=file)
    return [position[_key(node_id)] for node_id in given]


def _schedule_graph(
    nodes: list[tuple[object, str, int, int]],
    edges: list[tuple[object, object]],
    order: list[int],
    file: str,
) -> Graph:
    """Op i (buffer i) is node `order[i]`; checks that every edge runs forwards."""
    op_of = {_key(nodes[k][0]): i for i, k in enumerate(order)}
    preds: list[set[int]] = [set() for _ in order]
    for source, target in edges:
        if _key(source) not in op_of or _key(target) not in op_of:
            raise InputError(f"link {source!r} -> {target!r} names an unknown node", file=file)
        u, v = op_of[_key(source)], op_of[_key(target)]
        if u >= v:
            raise InputError(
                f"link {source!r} -> {target!r} runs against the program order (or is a loop)",
                file=file,
            )
        preds[v].add(u)
    ordered = [nodes[k] for k in order]
    reads = tuple(tuple(sorted(p)) for p in preds)
    labels = [label for _, label, _, _ in ordered]
    twice = (
        {label for label in labels if labels.count(label) > 1}
        if len(set(labels)) < len(labels)
        else set()
    )
    names = [f"{label}#{node_id}" if label in twice else label for node_id, label, _, _ in ordered]
    return Graph(
        sizes=tuple(size for _, _, size, _ in ordered),
        creates=tuple((i,) for i in range(len(order))),
        reads=reads,
        preds=reads,
        names=tuple(names),
        # Every step, reason and offset names a node the same way, one name per node.
        labels=tuple(names),
        costs=tuple(cost for _, _, _, cost in ordered),
    )
