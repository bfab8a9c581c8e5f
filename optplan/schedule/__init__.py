"""Schedulers: the order a block's ops run in, chosen for the least peak memory.

A scheduler is a frozen dataclass of options with a `name`; calling it on a `Graph`
(`optplan.schedule.graph`) returns a `Schedule`: the order, its peak, and a proven lower
bound on the best order's peak. Like the planners, schedulers know no IR.

- `program`: the order as written (the baseline).
- `lpmf`, `bfs`, `dfs`: PyTorch Inductor's three greedy orders (`heuristics`).
- `heuristic`: the best of the program order and those three.
- `exact`: best-first search over sets of ops run (`exact`), apart between the cut ops
  every path passes through (`split`), ranked by the min-cut bounds (`bounds`); proven
  optimal within its limits, else the best order found and a proven bound.
- `beam`: beam search over sets of ops run, backwards and forwards, in widening rounds
  (`beam`).
- `cpsat`: order and placement in one CP-SAT model (`cpsat`).
- `improve`: windowed exact re-solves around the peak (`improve`), for large graphs.
- `auto`: the min-cut bound, beam, the key-order bound (`keyorder`: min cuts that agree
  on the order of a few key ops), the exact search, wider beams, then `improve` and the
  key-order bound again, each with a share of the time (and of `work`), ending as soon
  as the order meets the bound (`anytime`).

`work`, when given, is a budget of search steps (`anytime` says what a step is): the
searches stop on it, not on the clock, so the same graph gives the same order on any
machine and at any load; `time_limit` stays an outer guard. The bound is computed once,
inside the time limit, from bit sets (`tables`), so nothing grows with the square of the
op count but a few bit operations per edge.

Every schedule is at most the peak of the program order and of each heuristic: each
scheduler starts from the best of them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from optplan.schedule.anytime import anytime, beam_ready
from optplan.schedule.beam import UNLIMITED, beam_orders
from optplan.schedule.bounds import cut_bounds
from optplan.schedule.graph import Graph, is_valid_order, lower_bound, peak_bytes
from optplan.schedule.heuristics import bfs, dfs, lpmf, program_order
from optplan.schedule.improve import improve
from optplan.schedule.split import exact_split
from optplan.schedule.tables import tables

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
    work: int | None = None

    def __call__(self, graph: Graph) -> Schedule:
        if self.name not in SCHEDULERS:
            raise ValueError(
                f"unknown scheduler {self.name!r}; choose from {', '.join(SCHEDULERS)}"
            )
        if self.work is not None and self.work < 1:
            raise ValueError(f"work must be a positive number of search steps, got {self.work}")
        began = time.perf_counter()
        order, bound = _run(self, graph)
        if not is_valid_order(graph, order):
            raise AssertionError(f"scheduler {self.name} returned an invalid order {order}")
        peak = peak_bytes(graph, order)
        if bound <= 0:  # the scheduler proved nothing: the static bound, from bit sets
            bound = cut_bounds(tables(graph), budget=0, deadline=0.0).best
        return Schedule(order, peak, min(peak, bound), self.name, time.perf_counter() - began)


SCHEDULERS = (
    "auto",
    "program",
    "lpmf",
    "bfs",
    "dfs",
    "heuristic",
    "exact",
    "beam",
    "cpsat",
    "improve",
)


def best_quick(graph: Graph) -> tuple[int, ...]:
    """The program order or a heuristic's, whichever peaks lowest (earliest on ties)."""
    orders = [order(graph) for order in HEURISTICS.values()]
    return min(orders, key=lambda order: peak_bytes(graph, order))


def _run(options: Scheduler, graph: Graph) -> tuple[tuple[int, ...], int]:
    """The order and the best bound the algorithm proved (0 when none)."""
    name = options.name
    if name in HEURISTICS:
        return HEURISTICS[name](graph), 0
    began = time.perf_counter()
    start = best_quick(graph)
    if name == "heuristic":
        return start, 0
    if name == "auto":
        left = options.time_limit - (time.perf_counter() - began)
        outcome = anytime(graph, start, time_limit=max(0.0, left), work=options.work)
        return outcome.order, outcome.bound
    work = UNLIMITED if options.work is None else options.work
    if name == "exact":
        deadline = time.perf_counter() + options.time_limit
        bounds = cut_bounds(tables(graph), budget=work, deadline=deadline)
        found = exact_split(
            graph,
            start,
            time_limit=max(0.0, deadline - time.perf_counter()),
            max_states=min(work, 2_000_000),
            bounds=bounds.per_op,
        )
        return found.order, max(found.bound, bounds.best)
    if name == "beam":
        if not beam_ready(options.work):
            return start, 0
        beamed = beam_orders(
            tables(graph), start, peak_bytes(graph, start), work=work,
            deadline=time.perf_counter() + options.time_limit,
        )  # fmt: skip
        return beamed.order, 0
    if name == "cpsat":
        from optplan.schedule.cpsat import cpsat_schedule  # OR-Tools: only for this model

        order, _, _, _ = cpsat_schedule(graph, start, time_limit=options.time_limit)
        better = min((order, start), key=lambda o: peak_bytes(graph, o))
        return better, 0
    return improve(graph, start, time_limit=options.time_limit, work=options.work), 0


__all__ = [
    "SCHEDULERS",
    "Graph",
    "Schedule",
    "Scheduler",
    "best_quick",
    "lower_bound",
    "peak_bytes",
]
