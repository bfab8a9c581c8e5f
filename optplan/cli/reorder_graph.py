"""`optplan reorder GRAPH.json`: a peer's computation graph (Checkmate, MOCCASIN) in the
order that needs the least memory.

Prints the order (the nodes' ids, as a JSON list) and one line with the program order's
peak, the new peak and the proven bound; `--json` prints one object instead; `-o
OUT.json` writes the input graph with the new order as `graph['order']` (the key the
random layered graphs use for their program order, so the file reads back in that
order).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from optplan.cli.files import write_text
from optplan.cli.inputs import graph_note
from optplan.errors import InputError
from optplan.frontends import Loaded
from optplan.frontends.graphs import read_graph
from optplan.schedule import Schedule, Scheduler
from optplan.schedule.graph import peak_bytes


def reorder_graph(args: argparse.Namespace, loaded: Loaded, scheduler: Scheduler) -> int:
    output = args.output or ""
    if output and not output.lower().endswith(".json"):
        raise InputError("a graph's reordered output is a .json graph", file=args.program)
    peer = read_graph(loaded.path)
    graph = peer.graph
    began = time.perf_counter()
    schedule = scheduler(graph)
    seconds = time.perf_counter() - began
    nodes = [peer.nodes[v] for v in schedule.order]
    program_peak = peak_bytes(graph, range(graph.ops))
    if output:
        data = json.loads(Path(loaded.path).read_text())
        info = data.get("graph") if isinstance(data.get("graph"), dict) else {}
        data["graph"] = {**info, "order": nodes}
        write_text(output, json.dumps(data))
    if args.json:
        print(
            json.dumps(
                _record(loaded.path, scheduler.name, program_peak, schedule, nodes, seconds),
                indent=1,
            )
        )
        return 0
    if not output:
        print(json.dumps(nodes))
    note = f"{loaded.path}: {graph_note(program_peak, schedule)}"
    print(
        note + (f"; written to {output}" if output else ""),
        file=sys.stdout if output else sys.stderr,
    )
    return 0


def _record(
    path: str, name: str, program_peak: int, schedule: Schedule, nodes: list[object], seconds: float
) -> dict[str, object]:
    return {
        "program": path,
        "reorder": name,
        "ops": len(nodes),
        "program_order_peak_bytes": program_peak,
        "peak_bytes": schedule.peak_bytes,
        "bound_bytes": schedule.bound_bytes,
        "optimal": schedule.optimal,
        "order": nodes,
        "seconds": round(seconds, 4),
    }
