"""What the command line does while a planner works: one updating progress line on a
terminal, and Ctrl-C.

Steps of `run_planner`:
1. The planner runs in a worker thread with a `Watch`, so that the main thread stays free
   to take Ctrl-C (a CP-SAT solve holds the thread that called it until it ends).
2. The main thread waits in short steps; on a terminal it redraws one line on stderr
   (`\\r`, no newline) with the best arena, the proven bound, the gap and the time.
3. On Ctrl-C it asks the planner to stop (again at every step, so a solve that was just
   starting stops too) and waits for the best plan so far. A second Ctrl-C gives up on
   the planner and propagates (the command exits 130 with no plan).
4. The line is finished with a newline before anything else is printed.
5. The answer itself (`say`) is printed whole: a Ctrl-C pressed while it prints takes
   effect once it is out, so a JSON record is never cut in half.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TextIO

from optplan.planners.watch import Progress, Watch
from optplan.problem.plan import Plan

STEP_SECONDS = 0.1  # how often the waiting thread wakes: news, repeated stop requests
REDRAW_SECONDS = 0.5  # with no news, the line is redrawn this often (the clock moves)


@dataclass(frozen=True, slots=True)
class Outcome:
    """The planner's plan (None if it never returned one) and whether Ctrl-C cut it short."""

    plan: Plan | None
    interrupted: bool


def progress_text(name: str, progress: Progress, seconds: float) -> str:
    """`cpsat: arena 1126400 B, bound 1048576 B, gap 7.42% (search, 3.1 s)`."""
    return (
        f"{name}: arena {progress.arena} B, bound {progress.bound} B, gap {progress.gap:.2%} "
        f"({progress.phase}, {seconds:.1f} s)"
    )


def run_planner(
    call: Callable[[Watch], Plan], name: str, *, show: bool, stream: TextIO | None = None
) -> Outcome:
    """`call(watch)` in a worker thread; with `show`, one progress line on `stream`."""
    stream = sys.stderr if stream is None else stream
    watch = Watch()
    started = time.perf_counter()
    result: list[Plan] = []
    failure: list[BaseException] = []
    done = threading.Event()

    def work() -> None:
        try:
            result.append(call(watch))
        except Exception as error:  # noqa: BLE001 - raised again in the main thread
            failure.append(error)
        finally:
            done.set()

    worker = threading.Thread(target=work, name=f"optplan {name}", daemon=True)
    line = _Line(stream, name) if show else None
    interrupted = False
    worker.start()
    try:
        # An Event, not Thread.join: a join cut short by Ctrl-C can leave the thread
        # looking finished while it still runs.
        while not done.is_set():
            try:
                done.wait(STEP_SECONDS)
                if interrupted:
                    watch.stop()
            except KeyboardInterrupt:
                if interrupted:
                    raise
                interrupted = True
                watch.stop()
            if line is not None and watch.last is not None:
                line.update(watch.last, time.perf_counter() - started, interrupted)
    finally:
        if line is not None:
            line.finish()
    if failure:
        raise failure[0]
    return Outcome(result[0] if result else None, interrupted)


class _Line:
    """One line redrawn in place; padded so that a shorter text covers a longer one."""

    def __init__(self, stream: TextIO, name: str) -> None:
        self.stream, self.name, self.width, self.drawn = stream, name, 0, False
        self.shown: tuple[Progress, bool] | None = None
        self.at = 0.0

    def update(self, progress: Progress, seconds: float, interrupted: bool) -> None:
        """Draw when there is news, or when the clock has moved on enough."""
        if (progress, interrupted) != self.shown or seconds - self.at >= REDRAW_SECONDS:
            self.shown, self.at = (progress, interrupted), seconds
            self.draw(progress, seconds, interrupted)

    def draw(self, progress: Progress, seconds: float, interrupted: bool) -> None:
        text = progress_text(self.name, progress, seconds)
        if interrupted:
            text += " - stopping, Ctrl-C again to give up"
        self.width = max(self.width, len(text))
        self.stream.write("\r" + text.ljust(self.width))
        self.stream.flush()
        self.drawn = True

    def finish(self) -> None:
        if self.drawn:
            self.stream.write("\n")
            self.stream.flush()


@contextlib.contextmanager
def whole_output() -> Iterator[None]:
    """Hold Ctrl-C while the block runs and raise it (KeyboardInterrupt) once it is done.
    Only the main thread takes signals; elsewhere the block simply runs."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pressed: list[int] = []
    before = signal.signal(signal.SIGINT, lambda number, _frame: pressed.append(number))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)
    if pressed:
        raise KeyboardInterrupt


def say(text: str) -> None:
    """Print the answer (a record, a table) whole, Ctrl-C or not."""
    with whole_output():
        print(text)
        sys.stdout.flush()
