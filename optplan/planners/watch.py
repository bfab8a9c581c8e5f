"""A planner's line to whoever waits for it: progress as it improves, and a request to stop.

A long planner (`cpsat`) takes a `Watch` among its options. It calls `report(arena,
bound, phase)` whenever its best arena or its proven bound improves, and reads `stopped`
between steps; another thread (the command line, on Ctrl-C) calls `stop()`, which also
stops the CP-SAT solve under way (`solve`). The planner then returns the best plan it
has, with the bound proven so far. The watch itself prints nothing: what to do with a
report is the caller's `on_progress`.

    caller thread                      planner thread
    watch = Watch(on_progress=show)
    start planner(problem) ─────────>  greedy       report(arena, bound, "greedy")
                                       search       report(...); stopped? no
    Ctrl-C: watch.stop() ───────────>  CP-SAT       solver stopped; stopped? yes
    plan <──────────────────────────── best plan so far (FEASIBLE unless proven)
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True, slots=True)
class Progress:
    """Where a planner stands: its best arena, the bound it proved, in which phase
    (`greedy`, `search`, `cp-sat`), `seconds` after the watch was made."""

    arena: int
    bound: int
    phase: str
    seconds: float

    @property
    def gap(self) -> float:
        """How far the arena is above the bound, as a fraction of the bound."""
        return (self.arena - self.bound) / self.bound if self.bound else 0.0


class _Solver(Protocol):
    """What the watch needs of a CP-SAT solver."""

    parameters: Any

    def solve(self, *args: Any) -> Any: ...

    def stop_search(self) -> None: ...


class Watch:
    """Progress reports from a planner, and a stop request to it (thread-safe)."""

    def __init__(self, on_progress: Callable[[Progress], None] | None = None) -> None:
        self._on_progress = on_progress
        self._started = time.perf_counter()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._solvers: list[_Solver] = []
        self._reported = 0.0
        self.last: Progress | None = None

    def report(self, arena: int, bound: int, phase: str) -> None:
        """Tell the caller of a better arena or bound (repeats are dropped)."""
        last = self.last
        if last is not None and (last.arena, last.bound, last.phase) == (arena, bound, phase):
            return
        self._reported = time.perf_counter()
        self.last = Progress(arena, bound, phase, self._reported - self._started)
        if self._on_progress is not None:
            self._on_progress(self.last)

    def quiet_for(self, seconds: float) -> bool:
        """Whether nothing was reported in the last `seconds`: a planner for which a
        report costs work (a sweep over its rectangles) reports only then."""
        return time.perf_counter() - self._reported >= seconds

    def stop(self) -> None:
        """Ask the planner to return its best plan now."""
        self._stop.set()
        with self._lock:
            for solver in self._solvers:
                solver.stop_search()

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def solve(self, solver: _Solver, model: object, callback: object = None) -> Any:
        """Run a CP-SAT solve that `stop()` can end. Ctrl-C is left to the watch: CP-SAT
        would otherwise take the signal itself and end this one solve alone. Returns what
        the solver returns (its status)."""
        solver.parameters.catch_sigint_signal = False
        with self._lock:
            self._solvers.append(solver)
        try:
            return solver.solve(model) if callback is None else solver.solve(model, callback)
        finally:
            with self._lock:
                self._solvers.remove(solver)
