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
import queue
import re
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis.errors import Flaky

from optplan.fuzz.properties import Failure
from optplan.fuzz.targets import Target, TargetSpec, make_target

ROUND = 500  # examples per hypothesis run: small enough that time limits bite quickly
SHRINK_GRACE = 60.0  # seconds a shrink may run past the campaign's deadline
SHRINK_SECONDS = 300.0  # seconds one shrink may run at most


@dataclass(frozen=True, slots=True)
class Budget:
    """How long a campaign runs: `examples` in all, or `seconds` of wall time."""

    examples: int | None = None
    seconds: float | None = None
    seed: int = 0
    workers: int = 1
    keep_going: bool = False


@dataclass(frozen=True, slots=True)
class RayCluster:
    """Run the shards as Ray tasks: on the cluster at `address` (as `ray.init` takes it:
    "auto", "HOST:6379", "ray://HOST:10001"), or with None on the one `ray.init()` finds
    (RAY_ADDRESS, or one `ray start` left on this machine), else on a local one started
    for the campaign. `Budget.workers` is then the shards run at once (0: one per CPU of
    the cluster)."""

    address: str | None = None


@dataclass(frozen=True, slots=True)
class Found:
    """A shrunk failure: what was violated, where it was written, how small it got."""

    failure: Failure
    path: Path
    size: int
    seed: int
    worker: int
    seconds: float  # from the start of the campaign to the shrunk failure


@dataclass(frozen=True, slots=True)
class Outcome:
    examples: int
    seconds: float
    workers: int
    found: tuple[Found, ...]

    def summary(self, label: str) -> str:
        rate = self.examples / self.seconds / self.workers if self.seconds else 0.0
        return (
            f"fuzz {label}: {self.examples} examples in {self.seconds:.1f} s "
            f"({self.workers} worker{'s' * (self.workers != 1)}, {rate:.1f} examples/s/worker), "
            f"{len(self.found)} failure{'s' * (len(self.found) != 1)}"
        )


class Counters:
    """Shared between the workers and the progress line."""

    def __init__(self, context: Any) -> None:
        self.examples = context.Value("q", 0)
        self.failures = context.Value("q", 0)
        self.shrink_steps = context.Value("q", 0)
        self.shrink_size = context.Value("q", -1)
        self.stop = context.Event()


def run_campaign(
    spec: TargetSpec, budget: Budget, out_dir: Path, cluster: RayCluster | None = None
) -> Outcome:
    """Run the campaign of `spec` within `budget`, writing reproducers into `out_dir`;
    on local processes, or as tasks on a Ray `cluster` (`optplan.fuzz.on_ray`)."""
    if cluster is not None:
        from optplan.fuzz.on_ray import run_on_ray

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


@dataclass(frozen=True, slots=True)
class Share:
    """One worker's part: its number, its examples (None: until the deadline), and the
    campaign's start and deadline on the system-wide monotonic clock."""

    index: int
    examples: int | None
    started: float
    deadline: float | None


def _split(budget: Budget) -> list[int | None]:
    if budget.examples is None:
        return [None] * budget.workers
    base, extra = divmod(budget.examples, budget.workers)
    return [base + (index < extra) for index in range(budget.workers)]


def _worker(
    spec: TargetSpec, budget: Budget, share: Share, counters: Counters, results: Any
) -> None:
    run_worker(make_target(spec), budget, share, counters, results)


def run_worker(
    target: Target,
    budget: Budget,
    share: Share,
    counters: Counters,
    results: Any,
    found_before: frozenset[str] = frozenset(),
) -> None:
    """Rounds of hypothesis until this worker's share or the time is spent (step 1);
    properties in `found_before` are not reported again."""
    done, number, seen = 0, 0, set(found_before)
    deadline = share.deadline
    while share.examples is None or done < share.examples:
        if counters.stop.is_set() or (deadline is not None and time.monotonic() > deadline):
            return
        size = ROUND if share.examples is None else min(ROUND, share.examples - done)
        seed = (budget.seed * 1_000_003 + share.index) * 10_007 + number
        round_ = _Round(target, counters, deadline, seen)
        found = round_.run(seed, size)
        done += max(1, round_.examples)
        number += 1
        if found is not None:
            seen.add(found[0].kind)
            suffix, text = target.reproducer(found[1], found[0])
            elapsed = time.monotonic() - share.started
            size_found = target.size(found[1])
            results.put((found[0], suffix, text, size_found, seed, share.index, elapsed))
            if not budget.keep_going:
                counters.stop.set()


class _Round:
    """One hypothesis run over the target (step 2)."""

    def __init__(
        self, target: Target, counters: Counters, deadline: float | None, seen: set[str]
    ) -> None:
        self.target, self.counters, self.deadline, self.seen = target, counters, deadline, seen
        self.examples = 0
        self.last: tuple[Failure, Any] | None = None
        self.shrinking = False
        self.shrink_started = 0.0

    def run(self, seed: int, size: int) -> tuple[Failure, Any] | None:
        @settings(
            max_examples=size,
            database=None,
            deadline=None,
            phases=(Phase.generate, Phase.shrink),
            suppress_health_check=list(HealthCheck),
            verbosity=Verbosity.quiet,
            report_multiple_bugs=False,
        )
        @hypothesis_seed(seed)
        @given(self.target.strategy())
        def check(example: Any) -> None:
            self._check(example)

        try:
            check()
        except (_Violated, _Halt):
            pass
        except Flaky:
            pass  # the last failing example stands; the target is not deterministic
        if self.last is not None:
            self.counters.shrink_size.value = -1
        return self.last

    def _shrink_is_over(self) -> bool:
        now = time.monotonic()
        if self.deadline is not None and now > self.deadline + SHRINK_GRACE:
            return True
        return now > self.shrink_started + SHRINK_SECONDS

    def _check(self, example: Any) -> None:
        if not self.shrinking:
            late = self.deadline is not None and time.monotonic() > self.deadline
            if late or self.counters.stop.is_set():
                raise _Halt  # ends the run at once, where returning would draw on
            self.examples += 1
            with self.counters.examples.get_lock():
                self.counters.examples.value += 1
        else:
            if self._shrink_is_over():
                return  # out of time: the smallest failing example so far stands
            self.counters.shrink_steps.value += 1
        failure = self.target.judge(example)
        if failure is None or failure.kind in self.seen:
            return
        if not self.shrinking:
            self.shrinking = True
            self.shrink_started = time.monotonic()
            with self.counters.failures.get_lock():
                self.counters.failures.value += 1
            self.counters.shrink_steps.value = 0
        # Hypothesis replays the smallest failing example last, so the last one stands.
        self.last = (failure, example)
        self.counters.shrink_size.value = self.target.size(example)
        raise _violation(failure.kind)(str(failure))


class _Halt(BaseException):
    """Time is up or the campaign is over: not an Exception, so hypothesis neither
    counts it as a failure nor shrinks it, and lets it through at once."""


class _Violated(Exception):
    """A violated property; each property gets a subclass (see `_violation`)."""


_CLASSES: dict[str, type[_Violated]] = {}


def _violation(kind: str) -> type[_Violated]:
    """One exception class per property, so hypothesis never shrinks one property's
    failure into another's."""
    if kind not in _CLASSES:
        name = "Violated_" + re.sub(r"\W", "_", kind)
        _CLASSES[kind] = type(name, (_Violated,), {})
    return _CLASSES[kind]


def drain(results: Any) -> list[tuple[Any, ...]]:
    drained = []
    while True:
        try:
            drained.append(results.get(timeout=0.05))
        except queue.Empty:
            return drained


def write_found(
    received: list[tuple[Any, ...]], target: Target, out_dir: Path
) -> tuple[Found, ...]:
    """Write each failure's reproducer (step 3), one per property."""
    found: list[Found] = []
    kinds: set[str] = set()
    for failure, suffix, text, size, seed, worker, seconds in received:
        if failure.kind in kinds:
            continue
        kinds.add(failure.kind)
        out_dir.mkdir(parents=True, exist_ok=True)
        path = out_dir / f"{target.stem}-{failure.kind}{suffix}"
        partial = path.with_name(path.name + ".partial")
        partial.write_text(text)
        partial.replace(path)
        found.append(Found(failure, path, size, seed, worker, seconds))
    return tuple(found)


class Progress:
    """One line on stderr, redrawn twice a second, when stderr is a terminal (step 4)."""

    def __init__(self, counters: Counters, started: float, label: str) -> None:
        self.counters, self.started, self.label = counters, started, label
        self.enabled = sys.stderr.isatty()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def start(self) -> None:
        if self.enabled:
            self.thread.start()

    def _loop(self) -> None:
        while not self.done.wait(0.5):
            self._draw()

    def _draw(self) -> None:
        c = self.counters
        elapsed = time.monotonic() - self.started
        line = f"fuzz {self.label}: {c.examples.value} examples, {elapsed:.0f} s, {c.failures.value} failures"
        if c.shrink_size.value >= 0:
            line += f", shrinking: step {c.shrink_steps.value}, size {c.shrink_size.value}"
        sys.stderr.write("\r" + line[:150].ljust(100))
        sys.stderr.flush()

    def finish(self) -> None:
        if self.enabled:
            self.done.set()
            self.thread.join()
            self._draw()
            sys.stderr.write("\n")
