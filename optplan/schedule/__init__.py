"""Schedulers: the order a block's ops run in, chosen for the least peak memory.

A scheduler is a frozen dataclass of options with a `name`; calling it on a `Graph`
(`optplan.schedule.graph`) returns a `Schedule`: the order, its peak, and a proven lower
bound on the best order's peak. Like the planners, schedulers know no IR.

- `program`: the order as written (the baseline).
- `lpmf`, `bfs`, `dfs`: PyTorch Inductor's three greedy orders (`heuristics`).
- `heuristic`: the best of the program order and those three.
- `exact`: best-first search over sets of ops run (`exact`), apart between the cut ops
  every path passes through (`split`); proven optimal within its limits, else the best
  order found and a proven bound.
- `cpsat`: order and placement in one CP-SAT model (`cpsat`).
- `improve`: windowed exact re-solves around the peak (`improve`), for large graphs.
- `auto`: `exact` (three quarters of the time up to `exact_ops` ops, half beyond), then
  `improve` from the best order found, in the time left, when the search did not finish.

Every schedule is at most the peak of the program order and of each heuristic: each
scheduler starts from the best of them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from optplan.schedule.cpsat import cpsat_schedule
from optplan.schedule.graph import Graph, is_valid_order, lower_bound, peak_bytes
from optplan.schedule.heuristics import bfs, dfs, lpmf, program_order
from optplan.schedule.improve import improve
from optplan.schedule.split import exact_split

HEURISTICS = {"program": program_order, "lpmf": lpmf, "bfs": bfs, "dfs": dfs}


@dataclass(frozen=True, slots=True)
class Schedule:
    """An order of a graph's ops and what it costs.

    `peak_bytes` is the order's peak; `bound_bytes` a proven lower bound on the peak of
    every valid order; `optimal` says the order's peak equals it.
    """

    order: tuple[int, ...]
    peak_bytes: int
    bound_bytes: int
    scheduler: str
    seconds: float = 0.0

    @property
    def optimal(self) -> bool:
        return self.peak_bytes <= self.bound_bytes


@dataclass(frozen=True, slots=True)
class Scheduler:
    """Options of a scheduler; `name` picks the algorithm (module docstring)."""

    name: str = "auto"
    time_limit: float = 10.0
    exact_ops: int = 64

    def __call__(self, graph: Graph) -> Schedule:
        if self.name not in SCHEDULERS:
            raise ValueError(f"unknown scheduler {self.name!r}; choose from {', '.join(SCHEDULERS)}")
        began = time.perf_counter()
        order, bound = _run(self, graph)
        if not is_valid_order(graph, order):
            raise AssertionError(f"scheduler {self.name} returned an invalid order {order}")
        peak = peak_bytes(graph, order)
        bound = min(peak, max(bound, lower_bound(graph)))
        return Schedule(order, peak, bound, self.name, time.perf_counter() - began)


SCHEDULERS = ("auto", "program", "lpmf", "bfs", "dfs", "heuristic", "exact", "cpsat", "improve")


def best_quick(graph: Graph) -> tuple[int, ...]:
    """The program order or a heuristic's, whichever peaks lowest (earliest on ties)."""
    orders = [order(graph) for order in HEURISTICS.values()]
    return min(orders, key=lambda order: peak_bytes(graph, order))


def _run(options: Scheduler, graph: Graph) -> tuple[tuple[int, ...], int]:
    """The order and the best bound the algorithm proved (0 when none)."""
    name = options.name
    if name in HEURISTICS:
        return HEURISTICS[name](graph), 0
    start = best_quick(graph)
    if name == "heuristic" or (name == "auto" and peak_bytes(graph, start) <= lower_bound(graph)):
        return start, 0
    if name in ("exact", "auto"):
        # `auto` keeps a share of its time for `improve` in case the search does not
        # finish: a quarter up to `exact_ops` ops, where it usually does, half beyond.
        share = 1.0 if name == "exact" else 0.75 if graph.ops <= options.exact_ops else 0.5
        began = time.perf_counter()
        order, _, proven, bound = exact_split(
            graph, start, time_limit=share * options.time_limit, max_states=1_000_000
        )
        if proven or name == "exact":
            return order, bound
        left = options.time_limit - (time.perf_counter() - began)
        return improve(graph, order, time_limit=max(0.0, left)), bound
    if name == "cpsat":
        order, _, _, _ = cpsat_schedule(graph, start, time_limit=options.time_limit)
        better = min((order, start), key=lambda o: peak_bytes(graph, o))
        return better, 0
    return improve(graph, start, time_limit=options.time_limit), 0


__all__ = ["SCHEDULERS", "Graph", "Schedule", "Scheduler", "best_quick", "lower_bound", "peak_bytes"]
