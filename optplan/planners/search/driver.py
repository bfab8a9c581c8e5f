"""Driving the kernels: configurations take turns on each part (`_solve_part`, `_turn`),
`search` answers one capacity, `minimise` bisects for the smallest peak, and
`warm_kernels` compiles everything once.
"""

from __future__ import annotations

import enum
import time
from dataclasses import dataclass
from math import gcd

from optplan.planners.search.floor import (
    _Runner,
)
from optplan.planners.search.order import (
    _OrderRunner,
)
from optplan.planners.search.parts import (
    _CONFIGS,
    _EXHAUSTED,
    _FLOOR_SEARCH,
    _FOUND,
    _ORDER_RECTANGLES,
    _ORDER_SEARCH,
    _OVERFLOW,
    _ROOMIEST,
    _RUNNING,
    _build_part,
    _split,
)
from optplan.problem import AliasClass, Interval, Problem, alias_classes, lower_bound

_SLICE_NODES = 2_000  # nodes per configuration's turn
_FIRST_CHUNK = 64  # nodes per kernel call at first; then sized to take about...
_CHUNK_SECONDS = 0.01  # ...this long, so the clock is read that often
class SearchStatus(enum.Enum):
    FOUND = "found"
    INFEASIBLE = "infeasible"  # proven: nothing fits under the capacity
    TIMEOUT = "timeout"


@dataclass(frozen=True, slots=True)
class SearchResult:
    """The answer at one capacity; `offsets` (per buffer id) only when FOUND."""

    status: SearchStatus
    capacity: int
    offsets: dict[str, int] | None
    peak: int
    nodes: int
    seconds: float


# ---------------------------------------------------------------------------- driver


@dataclass(frozen=True, slots=True)
class _Outcome:
    status: SearchStatus
    offsets: tuple[int, ...]
    nodes: int


def _solve_part(group: list[AliasClass], seed: int, capacity: int, deadline: float) -> _Outcome:
    """Run every configuration in turn, a slice of nodes each, until one answers.

    Searches of this kind are heavy-tailed: a configuration that is lost for minutes on
    one instance answers another in milliseconds. Taking turns costs at most a factor of
    the number of configurations, and the turns are counted in nodes, not seconds, so
    the answer does not depend on the machine's speed. A configuration is only set up
    when its first turn comes, so an easy part costs one.
    """
    parts = [_build_part(group, seed)]
    if int(parts[0].section_bytes.max(initial=0)) > capacity:
        return _Outcome(SearchStatus.INFEASIBLE, (), 0)
    configs = _CONFIGS
    if len(group) > _ORDER_RECTANGLES:
        configs = tuple(config for config in configs if config[0] == _FLOOR_SEARCH)
    runners: list[_Runner | _OrderRunner] = []
    nodes = 0
    while True:
        for k, (kind, order, rule, mirror) in enumerate(configs):
            if k == len(runners):
                if runners and time.perf_counter() > deadline:
                    return _Outcome(SearchStatus.TIMEOUT, (), nodes)  # set-up costs too
                if mirror and len(parts) == 1:
                    parts.append(_build_part(group, seed, mirror=True))
                if kind == _ORDER_SEARCH:
                    runners.append(_OrderRunner(parts[mirror], capacity, order))
                else:
                    runners.append(_Runner(parts[mirror], capacity, order, rule))
            runner = runners[k]
            code = _turn(runner, deadline)
            nodes = sum(r.nodes for r in runners)
            if code == _FOUND:
                offsets = tuple(int(o) for o in runner.offsets)
                return _Outcome(SearchStatus.FOUND, offsets, nodes)
            if code == _EXHAUSTED:
                return _Outcome(SearchStatus.INFEASIBLE, (), nodes)
            if time.perf_counter() > deadline:
                return _Outcome(SearchStatus.TIMEOUT, (), nodes)
        if all(r.code == _OVERFLOW for r in runners):
            return _Outcome(SearchStatus.TIMEOUT, (), nodes)


def _turn(runner: _Runner | _OrderRunner, deadline: float) -> int:
    """One turn of `_SLICE_NODES` nodes, in chunks short enough to read the clock often
    (a node costs milliseconds on large parts, so a whole turn could overrun the time
    limit by seconds). The kernels stop after exactly the nodes asked and resume where
    they stopped, so the chunks change when the clock is read and nothing else."""
    target = runner.nodes + _SLICE_NODES
    chunk = _FIRST_CHUNK
    while True:
        began = time.perf_counter()
        before = runner.nodes
        code = runner.step(min(chunk, target - before))
        if code != _RUNNING or runner.nodes >= target or runner.nodes == before:
            return code
        now = time.perf_counter()
        if now > deadline:
            return code
        spent = now - began
        if spent < _CHUNK_SECONDS / 2:
            chunk *= 2
        elif spent > _CHUNK_SECONDS * 2:
            chunk = max(1, chunk // 2)


def warm_kernels() -> None:
    """Compile every kernel (numba compiles a kernel with all it calls): one step of each
    kind of run on a small part that does not solve at once."""
    classes = [
        AliasClass(f"r{k}", ((f"r{k}", 0),), size, (Interval(k % 2, 3),), 1, ())
        for k, size in enumerate((3, 2, 2, 1, 1))
    ]
    part = _build_part(classes, 0)
    _Runner(part, 5, 0, _ROOMIEST).step(1)
    _OrderRunner(part, 5, 3).step(1)


def search(problem: Problem, capacity: int, *, time_limit: float, seed: int = 0) -> SearchResult:
    """Offsets for every buffer within `capacity` bytes, or a proof that none exist, or
    TIMEOUT after `time_limit` seconds. Raises ValueError on pinned buffers."""
    started = time.perf_counter()
    deadline = started + time_limit
    classes = alias_classes(problem)
    if any(cls.offset is not None for cls in classes):
        raise ValueError("the skyline search does not place pinned buffers; use cpsat")
    class_offsets = {cls.root: 0 for cls in classes if cls.size == 0}
    status, nodes = SearchStatus.FOUND, 0
    for group in _split([cls for cls in classes if cls.size > 0]):
        if status is SearchStatus.TIMEOUT and time.perf_counter() > deadline:
            break
        outcome = _solve_part(group, seed, capacity, deadline)
        nodes += outcome.nodes
        if outcome.status is SearchStatus.INFEASIBLE:
            status = outcome.status
            break  # one part that cannot fit settles the whole
        if outcome.status is SearchStatus.TIMEOUT:
            status = outcome.status
            continue  # a later part may still prove the whole infeasible
        for cls, offset in zip(group, outcome.offsets):
            class_offsets[cls.root] = offset
    seconds = time.perf_counter() - started
    if status is not SearchStatus.FOUND:
        return SearchResult(status, capacity, None, 0, nodes, seconds)
    offsets = {
        name: class_offsets[cls.root] + delta for cls in classes for name, delta in cls.members
    }
    peak = max((offsets[b.id] + b.size for b in problem.buffers), default=0)
    return SearchResult(status, capacity, offsets, peak, nodes, seconds)


# ---------------------------------------------------------------------------- minimising


@dataclass(frozen=True, slots=True)
class MinimiseResult:
    """The lowest peak found, the best lower bound proven, and every probe made."""

    offsets: dict[str, int] | None
    peak: int  # 0 when nothing was found
    bound: int  # no packing has a smaller peak
    probes: tuple[SearchResult, ...]
    seconds: float

    @property
    def optimal(self) -> bool:
        return self.offsets is not None and self.peak <= self.bound


def granularity(problem: Problem) -> int:
    """A step every packing's peak is a multiple of (when it sits on the search's
    canonical form): the gcd of all sizes and of every alignment above 1."""
    step = 0
    for cls in alias_classes(problem):
        step = gcd(step, cls.size)
        if cls.alignment > 1:
            step = gcd(step, cls.alignment)
    return max(step, 1)


def minimise(
    problem: Problem,
    *,
    time_limit: float,
    seed: int = 0,
    upper: int | None = None,
    first_share: float = 0.4,
) -> MinimiseResult:
    """The smallest peak the search reaches within `time_limit` seconds.

    1. Ask at the lower bound first (with `first_share` of the time): on these problems
       the optimum is usually there, and a yes proves it.
    2. Else find any packing (at `upper`, e.g. a greedy plan's arena, or with no cap).
    3. Then bisect between the best bound and the best peak; a probe that proves "no"
       raises the bound, one that times out only moves the bisection up (and the
       bisection starts again from the bound, with longer probes, while time lasts).
    """
    started = time.perf_counter()
    deadline = started + time_limit
    step = granularity(problem)
    bound = _round_up(lower_bound(problem), step)
    probes: list[SearchResult] = []
    best: SearchResult | None = None

    def probe(capacity: int, seconds: float) -> SearchResult:
        result = search(problem, capacity, time_limit=max(seconds, 0.0), seed=seed)
        probes.append(result)
        return result

    first = probe(bound, time_limit * first_share)
    if first.status is SearchStatus.FOUND:
        best = first
    else:
        if first.status is SearchStatus.INFEASIBLE:
            bound += step
        # Any packing will do now; a ceiling no higher than the bound just asked adds
        # nothing, and the naive stack always fits, so it is the last resort.
        ceilings = [problem.naive_bytes]
        if upper is not None and upper > first.capacity:
            ceilings.insert(0, upper)
        for k, ceiling in enumerate(ceilings):
            share = (deadline - time.perf_counter()) / (len(ceilings) - k)
            dive = probe(max(ceiling, bound), share)
            if dive.status is SearchStatus.FOUND:
                best = dive
                break
    low = bound  # below this nothing was found (proven only up to `bound`)
    while best is not None and best.peak > bound:
        left = deadline - time.perf_counter()
        high = best.peak - step
        if left <= 0.05:
            break
        if low > high:
            if low == bound:
                break
            low = bound  # timeouts moved it up: try again, now with longer probes
            continue
        capacity = _round_up((low + high) // 2, step)
        steps = max(1, (high - low) // step).bit_length()
        result = probe(capacity, max(left / steps, min(left, 0.5)))
        if result.status is SearchStatus.FOUND:
            best = result
        elif result.status is SearchStatus.INFEASIBLE:
            bound = max(bound, capacity + step)
            low = max(low, bound)
        else:
            low = capacity + step
    seconds = time.perf_counter() - started
    if best is None:
        return MinimiseResult(None, 0, bound, tuple(probes), seconds)
    return MinimiseResult(best.offsets, best.peak, bound, tuple(probes), seconds)


def _round_up(value: int, step: int) -> int:
    return -(-value // step) * step
