"""One worker of a fuzzing campaign: rounds of hypothesis over a target, the counters
it shares with the campaign, failures written as reproducers, and the progress line.
`campaign` runs workers on local processes; `on_ray` runs them as Ray tasks.
"""

from __future__ import annotations

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
from optplan.fuzz.targets import Target

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


@dataclass(frozen=True, slots=True)
class Share:
    """One worker's part: its number, its examples (None: until the deadline), and the
    campaign's start and deadline on the system-wide monotonic clock."""

    index: int
    examples: int | None
    started: float
    deadline: float | None


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
