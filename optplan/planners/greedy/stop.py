"""A stop flag the compiled greedy loops poll, raised by the time guard or a stop request.

Greedy's runs are a fixed list (`greedy.runs`), so its plan depends on the input alone.
The seconds of a time limit and a Ctrl-C are an outer guard: they cut the run under way
and the plan says so. The compiled loops (`greedy.kernel`, `greedy.buckets`) run without
the GIL and read `flag[0]` every POLL placements, so the guard answers within a second
however long one run would take. Steps:

1. `guarded(seconds, watch)` makes the flag and, when there is a guard or a watch, a
   thread that wakes every TICK seconds and raises the flag once `seconds` have passed
   (TIME_LIMIT) or the watch was stopped (STOPPED: Ctrl-C on the command line); it looks
   once before the block starts, so a watch stopped already cuts every run.
2. A loop that finds the flag raised returns how far it got; greedy drops that run, each
   part keeps its best complete run (the naive stack at least), and `cut_detail(flag)`
   is what the plan says: `"cut": True` for the time limit (the note the command line
   prints, and `cut_by_time_limit` in its JSON), `"interrupted": True` for a stop.
3. The thread ends with the `with` block.

A flag that is never raised changes no offset (`tests/test_greedy_stop.py`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from optplan.budget import Budget, Clock, work_detail
from optplan.planners.watch import Watch

TICK = 0.02  # seconds between looks at the clock and the watch: well inside a second
POLL = 64  # placements between two reads of the flag inside a loop (~1 ms at 10,000 live)
GOING, TIME_LIMIT, STOPPED = 0, 1, 2  # flag values: what raised it


def flag_of() -> np.ndarray:
    """A flag that nothing raises (int64[1], GOING)."""
    return np.zeros(1, dtype=np.int64)


@contextmanager
def guarded(seconds: float | None, watch: Watch | None) -> Iterator[np.ndarray]:
    """A flag raised `seconds` from now (None or inf: never) or when `watch` is stopped,
    for as long as the block runs."""
    flag = flag_of()
    began = time.perf_counter()
    limit = None if seconds is None or seconds == float("inf") else seconds

    def raised() -> bool:
        if watch is not None and watch.stopped:
            flag[0] = STOPPED
        elif limit is not None and time.perf_counter() - began >= limit:
            flag[0] = TIME_LIMIT
        return bool(flag[0])

    if (limit is None and watch is None) or raised():
        yield flag
        return
    done = threading.Event()

    def look() -> None:
        while not done.wait(TICK) and not raised():
            pass

    thread = threading.Thread(target=look, name="greedy-guard", daemon=True)
    thread.start()
    try:
        yield flag
    finally:
        done.set()
        thread.join()


def cut_detail(flag: np.ndarray) -> dict[str, object]:
    """What a plan whose runs `flag` (or the clock's guard) cut says of it."""
    return {"interrupted": True} if flag[0] == STOPPED else {"cut": True}


@dataclass(frozen=True, slots=True)
class Limits:
    """One greedy call's budget: its clock (work counted where the budget gives some) and
    the guard's flag."""

    clock: Clock
    stop: np.ndarray

    @property
    def deadline(self) -> float | None:
        """The reading of the clock at which runs stop: the work, where it is counted;
        seconds only ever cut through the flag."""
        return self.clock.end if self.clock.counted else None

    def detail(self, cut: bool) -> dict[str, object]:
        """What the plan says of its budget: the work spent, and whether the guard or a
        stop request cut a run (`cut`: some part dropped one)."""
        detail = work_detail(self.clock)
        if cut or self.clock.cut:
            detail.update(cut_detail(self.stop))
        return detail


def unlimited() -> Limits:
    """No work count, no guard: every run, whole."""
    return Limits(Budget().clock(), flag_of())


@contextmanager
def limited(budget: Budget, watch: Watch | None) -> Iterator[Limits]:
    """`budget`'s clock, and a flag raised at its seconds or on `watch`'s stop."""
    clock = budget.clock()
    with guarded(clock.guard_left(), watch) as flag:
        yield Limits(clock, flag)
