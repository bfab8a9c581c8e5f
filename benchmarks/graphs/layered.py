"""Random layered graphs as node-link JSON (the format `optplan.frontends.graphs` reads):
the family "Neural Topological Ordering for Computation Graphs" (NeurIPS 2022, Appendix
A) benchmarks on, drawn by our own generator from its description, for sizes the
published files do not cover (3,000 ops).

1. Spread `nodes` nodes over layers of random width (about `width` x sqrt(nodes)), one
   source first and one sink last.
2. Every node reads at least one node of the layer before; each other node of that
   layer with probability `density`, and a node of any earlier layer with probability
   `skip` / (layers back), so most skips are short and a few reach far.
3. Every node without a reader feeds the sink; sizes are drawn in [80, 8000) bytes in
   steps of 10, as in the published files.

`moccasin_like` draws the published files' shape instead, read off MOCCASIN's four
random layered graphs (their names give the parameters: `n`, `w`, `nlv` 0.75, `ed` 0.2,
`scd` 0.14): layers of `2 w sqrt(n)` nodes on average, widths spread by `nlv` either
side, every node read by one of the next layer at least (in the files only the last
layer and a few others reach the sink), and a skip edge from each layer two or more
back with probability `scd` / 3 (at 250, 500 and 1,000 nodes the published files have
944, 2461 and 5875 edges; seeds 1-10 of these draws 1020-1226, 2423-2763 and
6236-7105).
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path


def layered_graph(
    nodes: int,
    *,
    width: float = 0.35,
    density: float = 0.2,
    skip: float = 0.14,
    seed: int = 0,
    moccasin_like: bool = False,
) -> dict[str, object]:
    """A random layered graph of `nodes` nodes (module docstring) as node-link data."""
    rng = random.Random(seed)
    layers: list[list[int]] = [[0]]
    count = 1
    spread = 0.75 if moccasin_like else 0.5
    typical = max(1, round((2 if moccasin_like else 1) * width * math.sqrt(nodes)))
    while count < nodes - 1:
        drawn = rng.uniform(1 - spread, 1 + spread) * typical
        size = min(nodes - 1 - count, max(1, round(drawn)))
        layers.append(list(range(count, count + size)))
        count += size
    layers.append([count])
    edges: set[tuple[int, int]] = set()
    for depth in range(1, len(layers)):
        previous = layers[depth - 1]
        if moccasin_like:  # every node is read in the next layer (the files' sink reads 1-10)
            edges.update((u, rng.choice(layers[depth])) for u in previous)
        for v in layers[depth]:
            edges.add((rng.choice(previous), v))
            edges.update((u, v) for u in previous if rng.random() < density)
            for back in range(2, depth + 1):
                earlier = layers[depth - back]
                if moccasin_like:
                    if rng.random() < skip / 3:
                        edges.add((rng.choice(earlier), v))
                    continue
                edges.update((u, v) for u in earlier if rng.random() < skip / back / len(earlier))
    sink = count
    read = {u for u, _ in edges}
    edges.update((u, sink) for u in range(sink) if u not in read)
    sizes = [10 * rng.randrange(8, 800) for _ in range(count + 1)]
    return {
        "directed": True,
        "multigraph": False,
        "graph": {"name": f"layered_{nodes}", "order": list(range(count + 1))},
        "nodes": [{"name": v, "out_cost": sizes[v], "duration": 1} for v in range(count + 1)],
        "links": [{"0": u, "1": v} for u, v in sorted(edges)],
    }


def write_layered(path: Path, nodes: int, seed: int = 0, **options: object) -> Path:
    """`layered_graph(nodes, seed=seed, **options)` written to `path`."""
    path.write_text(json.dumps(layered_graph(nodes, seed=seed, **options)))  # type: ignore[arg-type]
    return path
