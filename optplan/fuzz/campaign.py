"""A fuzzing campaign: hypothesis draws and shrinks, worker processes share the budget.

Steps:

1. The budget (`examples` or `seconds`) is split over `workers` local processes (one
   worker runs in this process), or cut into shards that run as Ray tasks
   (`optplan.fuzz.on_ray`, the same `run_worker` in each). Each worker runs rounds of hypothesis with its own
   seeds (`seed`, worker, round), each of at most `ROUND` examples, until its share is
   spent, the time is up, or (without `keep_going`) some worker found a failure. A
   shrink runs at most `SHRINK_SECONDS`, and at most `SHRINK_GRACE` past the deadline;
   then the smallest failing example found so far stands.
2. Each example is judged by the target; a violated property raises an exception of its
   own class, so that hypothesis shrinks the example while keeping that same property
   violated, and reports the smallest example that violates it.
3. The smallest example comes back to this process, which writes it as a reproducer
   (a CSV, a Python file or a TVMScript file) and prints one line: the file and the
   violated property. Without `keep_going` the campaign stops at the first failure;
   with it, each property is reported once per worker.
4. Progress (examples run, failures, the shrink under way) is one updating line on a
   terminal, nothing otherwise.

Counters live in shared memory (`multiprocessing.Value`); failures come back on a queue.
"""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path
from typing import Any

from optplan.fuzz.on_ray import run_on_ray
from optplan.fuzz.targets import TargetSpec, make_target
from optplan.fuzz.worker import (
    Budget,
    Counters,
    Outcome,
    Progress,
    RayCluster,
    Share,
    drain,
    run_worker,
    write_found,
)


def run_campaign(
    spec: TargetSpec, budget: Budget, out_dir: Path, cluster: RayCluster | None = None
) -> Outcome:
    """Run the campaign of `spec` within `budget`, writing reproducers into `out_dir`;
    on local processes, or as tasks on a Ray `cluster` (`optplan.fuzz.on_ray`)."""
    if cluster is not None:
        return run_on_ray(spec, budget, out_dir, cluster)
    target = make_target(spec)  # fails early, in this process, on a bad target
    context = multiprocessing.get_context("spawn")
    counters = Counters(context)
    results: Any = context.Queue()
    started = time.monotonic()
    deadline = None if budget.seconds is None else started + budget.seconds
    shares = [
        Share(index, examples, started, deadline) for index, examples in enumerate(_split(budget))
    ]
    processes = [
        context.Process(target=_worker, args=(spec, budget, shares[index], counters, results))
        for index in range(1, budget.workers)
    ]
    for process in processes:
        process.start()
    progress = Progress(counters, started, target.label)
    progress.start()
    received: list[tuple[Any, ...]] = []
    try:
        run_worker(target, budget, shares[0], counters, results)
        for process in processes:
            # Drain while waiting: a child with unread results on the queue cannot exit.
            while process.is_alive():
                received += drain(results)
                process.join(0.2)
    finally:
        for process in processes:
            if process.is_alive():
                process.terminate()
        progress.finish()
    found = write_found(received + drain(results), target, out_dir)
    return Outcome(counters.examples.value, time.monotonic() - started, budget.workers, found)


def _split(budget: Budget) -> list[int | None]:
    if budget.examples is None:
        return [None] * budget.workers
    base, extra = divmod(budget.examples, budget.workers)
    return [base + (index < extra) for index in range(budget.workers)]


def _worker(
    spec: TargetSpec, budget: Budget, share: Share, counters: Counters, results: Any
) -> None:
    run_worker(make_target(spec), budget, share, counters, results)
