"""`optplan fuzz --ray`: the same campaign, its shards run as Ray tasks.

Ray (`pip install 'optplan[ray]'`) is imported only here, only when asked for. Steps:

1. Join a cluster: a Ray already initialised in this process is used as it is; else
   `ray.init(address)`, which with no address joins the cluster RAY_ADDRESS names or one
   `ray start` left on this machine, and otherwise starts a local one that is shut down
   at the end.
2. Cut the budget into shards. A shard is a number (hence its own seeds) and at most
   `SHARD` examples, fewer when the budget is small, so that every worker gets one; with
   a time budget, shards are cut until the deadline, which every shard also obeys.
3. Keep `workers` shards in flight (0: one per CPU of the cluster). Each is a Ray task
   that runs `run_worker`, the very function a local worker process runs, and returns
   the examples it ran and its shrunk failures with their reproducers' text. Deadlines
   cross machines as wall-clock times.
4. As shards finish, their examples and failures are counted (the progress line).
   Without `keep_going` the first failure ends the campaign and cancels the shards still
   running; with it, later shards are told which properties are already found. The
   reproducers are written here, by the same `write_found` as for local workers.
"""

from __future__ import annotations

import logging
import multiprocessing
import queue
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from optplan.errors import InputError
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

SHARD = 2000  # examples per Ray task: minutes of work, so that tasks cost little to start
REACH_SECONDS = 5.0  # how long a cluster's address may take to answer


def run_on_ray(spec: TargetSpec, budget: Budget, out_dir: Path, cluster: RayCluster) -> Outcome:
    """Run the campaign of `spec` as shards on Ray (steps 1-4)."""
    target = make_target(spec)  # fails early, in this process, on a bad target
    ray, started_here = _join(cluster)
    try:
        at_once = budget.workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        counters = Counters(multiprocessing.get_context("spawn"))
        progress = Progress(counters, time.monotonic(), target.label)
        progress.start()
        try:
            received = _Driver(ray, spec, budget, at_once, counters).run()
        finally:
            progress.finish()
        found = write_found(received, target, out_dir)
        seconds = time.monotonic() - progress.started
        return Outcome(counters.examples.value, seconds, at_once, found)
    finally:
        if started_here:
            ray.shutdown()


def _join(cluster: RayCluster) -> tuple[Any, bool]:
    """Ray, joined to the cluster (step 1), and whether this call started it."""
    try:
        import ray
    except ImportError:
        raise InputError("--ray needs Ray: pip install 'optplan[ray]'") from None
    if cluster.address is not None:
        _reachable(cluster.address)
    if ray.is_initialized():
        return ray, False
    try:
        ray.init(address=cluster.address, logging_level=logging.ERROR, log_to_driver=False)
    except (ConnectionError, ValueError, RuntimeError) as error:
        where = f"at {cluster.address!r}" if cluster.address else "(ray.init() found none)"
        first = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise InputError(f"cannot join a Ray cluster {where}: {first}") from None
    return ray, True


def _reachable(address: str) -> None:
    """InputError unless HOST:PORT of `address` answers: Ray itself retries an address
    that does not for minutes, printing warnings."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        return  # "auto", "local": Ray's own words, for Ray to resolve
    try:
        socket.create_connection((host, int(port)), timeout=REACH_SECONDS).close()
    except OSError as error:
        raise InputError(
            f"cannot join a Ray cluster at {address!r}: {host}:{port} does not answer "
            f"({error.strerror or error})"
        ) from None


class _Driver:
    """Submits shards, keeps `at_once` in flight, gathers what they found (steps 2-4)."""

    def __init__(
        self, ray: Any, spec: TargetSpec, budget: Budget, at_once: int, counters: Counters
    ) -> None:
        self.ray, self.spec, self.budget, self.at_once = ray, spec, budget, at_once
        self.counters = counters
        self.task = ray.remote(num_cpus=1, max_retries=0)(run_shard)
        self.started = time.time()
        self.deadline = None if budget.seconds is None else self.started + budget.seconds
        self.kinds: set[str] = set()
        self.received: list[tuple[Any, ...]] = []

    def run(self) -> list[tuple[Any, ...]]:
        shards = enumerate(_cut(self.budget, self.at_once))
        pending: list[Any] = []
        try:
            while True:
                while len(pending) < self.at_once and not self._over():
                    shard = next(shards, None)
                    if shard is None:
                        break
                    pending.append(self._submit(*shard))
                if not pending or self._stopped():
                    return self.received
                done, pending = self.ray.wait(pending, num_returns=1, timeout=0.5)
                for ref in done:
                    self._gather(ref)
        finally:
            for ref in pending:
                self.ray.cancel(ref)

    def _stopped(self) -> bool:
        return bool(self.received) and not self.budget.keep_going

    def _over(self) -> bool:
        if self._stopped():
            return True
        return self.deadline is not None and time.time() > self.deadline

    def _submit(self, number: int, examples: int) -> Any:
        found = frozenset(self.kinds)
        return self.task.remote(
            self.spec, self.budget, number, examples, self.started, self.deadline, found
        )

    def _gather(self, ref: Any) -> None:
        try:
            examples, found = self.ray.get(ref)
        except self.ray.exceptions.RayTaskError as error:
            if isinstance(error.cause, InputError):
                raise error.cause from None
            raise
        with self.counters.examples.get_lock():
            self.counters.examples.value += examples
        for item in found:
            if item[0].kind not in self.kinds:
                self.kinds.add(item[0].kind)
                self.received.append(item)
                self.counters.failures.value += 1


def _cut(budget: Budget, at_once: int) -> Iterator[int]:
    """Examples per shard (step 2): the budget in at least `at_once` near-equal pieces of
    at most SHARD, or SHARD after SHARD until the deadline stops the submitting."""
    if budget.examples is None:
        while True:
            yield SHARD
    count = min(budget.examples, max(at_once, -(-budget.examples // SHARD)))
    base, extra = divmod(budget.examples, count)
    for number in range(count):
        yield base + (number < extra)


def run_shard(
    spec: TargetSpec,
    budget: Budget,
    number: int,
    examples: int,
    started: float,
    deadline: float | None,
    found_before: frozenset[str],
) -> tuple[int, list[tuple[Any, ...]]]:
    """One shard, in a Ray worker (step 3): `started` and `deadline` are wall-clock times,
    turned into this machine's monotonic clock for `run_worker`."""
    offset = time.monotonic() - time.time()
    local_deadline = None if deadline is None else deadline + offset
    share = Share(number, examples, started + offset, local_deadline)
    counters = Counters(multiprocessing.get_context("spawn"))
    results: queue.SimpleQueue[tuple[Any, ...]] = queue.SimpleQueue()
    run_worker(make_target(spec), budget, share, counters, results, found_before)
    return counters.examples.value, drain(results)
