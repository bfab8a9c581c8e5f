"""Plans and the one independent judge of them.

A `Plan` (`outcome`) gives every buffer of a `Problem` a residence in each memory it uses
and the copies between them; a plan listing none, a byte offset in one arena.
`validate` checks a plan against its problem and shares no code with any planner: it is
short, does its own alias grouping, and compares buffers by a plain sweep over time.

Checks of one memory, in order: a status without a plan has no offsets to check; every
buffer has an offset, that offset is >= 0, a multiple of the buffer's alignment, and equal to the pin if
the buffer is pinned; the buffer ends inside the arena (and the arena inside the capacity);
every alias equation holds; no two alias classes live at the same point share a byte. A
class (buffers tied by aliases, a single buffer otherwise) is one allocation: from its
lowest member offset to its highest member end, reserved while any member is live, as
`lower_bound` counts it; its members share those bytes with each other.
"""

from __future__ import annotations

import bisect

import numpy as np

from optplan.problem.buffers import Buffer
from optplan.problem.columns import fits_int64
from optplan.problem.core import Problem, columns_of
from optplan.problem.outcome import Copy, Plan, Residence, Status, Violation
from optplan.problem.tiers import traffic_of, validate_memories

__all__ = ["Copy", "Plan", "Residence", "Status", "Violation", "traffic", "validate"]

# Problems this large (and alias-free, one interval a buffer) are judged on columns first.
COLUMNS_FROM = 1000
_CHUNK_EVENTS = 1 << 16


def validate(problem: Problem, plan: Plan) -> list[Violation]:
    """Everything wrong with `plan` as a placement of `problem`; empty when it is valid.

    Every plan is judged as residences in memories (`tiers.validate_memories`: every
    residence, every copy, every capacity, the traffic the plan claims, and each memory
    by the checks below), with one exception that is the same judgement: a plan that
    lists no residences, of a problem judged by its arena. There every buffer resides in
    the one memory all its life (`outcome.residences_of`), so the residence, copy and
    traffic checks hold by construction and the memory's checks are all that is left;
    judging its offsets directly keeps a million-buffer trace to one sweep, with no
    residence built per buffer. `tests/test_one_meaning.py` holds the two to the same
    verdicts.
    """
    if not plan.status.has_plan:
        return []
    if problem.objective == "arena" and not plan.residences and not plan.copies:
        return validate_arena(problem, plan)
    return validate_memories(problem, plan, validate_arena)


def traffic(problem: Problem, plan: Plan) -> int:
    """The plan's traffic, counted by the judge: bytes written and read in each memory
    times its cost, a read from the cheapest memory holding the buffer, and each copy's
    bytes read in one memory and written in the other (see `tiers`)."""
    return traffic_of(problem, plan)


def validate_arena(problem: Problem, plan: Plan) -> list[Violation]:
    """The checks of one memory: `plan.offsets` within `plan.arena` and its capacity."""
    if len(problem.buffers) >= COLUMNS_FROM and _valid_as_columns(problem, plan):
        return []
    faults: list[Violation] = []
    offsets = plan.offsets
    known = {b.id for b in problem.buffers}
    for name in offsets:
        if name not in known:
            faults.append(
                Violation("unknown", (name,), f"offset given for unknown buffer {name!r}")
            )
    if plan.arena < 0:
        faults.append(Violation("arena", (), f"arena {plan.arena} is negative"))
    capacity = problem.memories[0].capacity
    if capacity is not None and plan.arena > capacity:
        faults.append(Violation("capacity", (), f"arena {plan.arena} exceeds capacity {capacity}"))
    for b in problem.buffers:
        faults.extend(_buffer_faults(b, offsets.get(b.id), plan.arena))
    for alias in problem.aliases:
        base, view = offsets.get(alias.base), offsets.get(alias.view)
        if base is not None and view is not None and view != base + alias.delta:
            faults.append(
                Violation(
                    "alias",
                    (alias.base, alias.view),
                    f"view {alias.view!r} at {view} should be at {alias.base!r} + {alias.delta} = "
                    f"{base + alias.delta}",
                )
            )
    faults.extend(_overlaps(problem, offsets))
    return faults


def _buffer_faults(b: Buffer, offset: int | None, arena: int) -> list[Violation]:
    """One buffer's own faults: no offset, a negative or misaligned one, a pin moved, past
    the arena."""
    faults = []
    if offset is None:
        faults.append(Violation("missing", (b.id,), f"buffer {b.id!r} has no offset"))
    elif offset < 0:
        faults.append(
            Violation("negative", (b.id,), f"buffer {b.id!r} at negative offset {offset}")
        )
    elif offset % b.alignment:
        message = f"buffer {b.id!r} at offset {offset} is not a multiple of {b.alignment}"
        faults.append(Violation("alignment", (b.id,), message))
    if offset is not None and b.offset is not None and offset != b.offset:
        message = f"buffer {b.id!r} is pinned at {b.offset}, placed at {offset}"
        faults.append(Violation("pinned", (b.id,), message))
    if offset is not None and offset + b.size > arena:
        message = f"buffer {b.id!r} ends at byte {offset + b.size}, past the arena of {arena}"
        faults.append(Violation("arena", (b.id,), message))
    return faults


def _tied_groups(problem: Problem) -> dict[str, int]:
    """A group number per buffer; buffers tied by aliases share one."""
    neighbours: dict[str, list[str]] = {b.id: [] for b in problem.buffers}
    for alias in problem.aliases:
        neighbours[alias.base].append(alias.view)
        neighbours[alias.view].append(alias.base)
    group: dict[str, int] = {}
    for start in neighbours:
        if start in group:
            continue
        group[start] = len(group)
        number = group[start]
        stack = [start]
        while stack:
            for other in neighbours[stack.pop()]:
                if other not in group:
                    group[other] = number
                    stack.append(other)
    return group


def _overlaps(problem: Problem, offsets: dict[str, int]) -> list[Violation]:
    """Pairs of alias classes live at one point whose bytes intersect.

    A class (buffers tied by aliases) is one allocation: it reserves the bytes from its
    lowest member offset to its highest member end at every point where any member is
    live. Sweep over time, ends before starts at equal points (half-open intervals), with
    the reserved byte ranges of the live classes kept sorted by offset. While no overlap
    has been seen those ranges are disjoint, so a new range can only meet its neighbours;
    after the first overlap every live range is compared.
    """
    group = _tied_groups(problem)
    low: dict[int, int] = {}
    high: dict[int, int] = {}
    lives: dict[int, list[tuple[int, int]]] = {}
    names: dict[int, str] = {}
    for b in problem.buffers:
        if b.id not in offsets:
            continue
        number = group[b.id]
        names.setdefault(number, b.id)
        low[number] = min(low.get(number, offsets[b.id]), offsets[b.id])
        high[number] = max(high.get(number, offsets[b.id] + b.size), offsets[b.id] + b.size)
        lives.setdefault(number, []).extend((iv.start, iv.end) for iv in b.live)
    events: list[tuple[int, int, int]] = []
    for number, intervals in lives.items():
        if high[number] > low[number]:
            for start, end in _union(intervals):
                events.append((start, 1, number))
                events.append((end, 0, number))
    events.sort()
    active: list[tuple[int, int, int]] = []
    reported: set[tuple[int, int]] = set()
    faults: list[Violation] = []
    for _, is_start, number in events:
        entry = (low[number], high[number], number)
        at = bisect.bisect_left(active, entry)
        if not is_start:
            del active[at]
            continue
        neighbours = active if faults else active[max(at - 1, 0) : at + 1]
        for other_low, other_high, other in neighbours:
            pair = (min(number, other), max(number, other))
            if entry[0] < other_high and other_low < entry[1] and pair not in reported:
                reported.add(pair)
                faults.append(
                    _overlap(names[pair[0]], names[pair[1]], entry, (other_low, other_high))
                )
        active.insert(at, entry)
    return faults


def _union(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Intervals merged where they overlap or touch."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _overlap(first: str, second: str, a: tuple[int, ...], b: tuple[int, ...]) -> Violation:
    pair = (min(first, second), max(first, second))
    return Violation(
        "overlap",
        pair,
        f"buffers {pair[0]!r} and {pair[1]!r} are live at the same time and share bytes "
        f"[{max(a[0], b[0])}, {min(a[1], b[1])})",
    )


# ---------------------------------------------------------------------------- columns


def _valid_as_columns(problem: Problem, plan: Plan) -> bool:
    """Whether every check above passes, judged on columns (`optplan.problem.columns`) for an
    alias-free problem of one interval per buffer; False when anything fails or the
    problem does not fit columns, and the checks above then say what.

    At 1,000,000 buffers the checks above took 10 s, most of it in dictionaries built per
    buffer; here each check is one NumPy expression and the overlap sweep is a loop over
    the sorted events with two plain lists.
    """
    columns = columns_of(problem)
    if columns is None or not 0 <= plan.arena < 2**62 or len(plan.offsets) != len(columns):
        return False
    capacity = problem.memories[0].capacity
    if capacity is not None and plan.arena > capacity:
        return False
    try:
        offset = np.fromiter((plan.offsets.get(i, -1) for i in columns.ids), np.int64, len(columns))
    except (OverflowError, TypeError):
        return False
    if offset.max(initial=0) >= 2**62 or not fits_int64(columns):
        return False  # sums below might wrap around
    end = offset + columns.size
    pinned = columns.pin >= 0
    if (offset < 0).any() or (offset % columns.alignment).any() or (end > plan.arena).any():
        return False
    if (offset[pinned] != columns.pin[pinned]).any():
        return False
    return _disjoint_while_live(columns.start, columns.end, offset, end)


def _disjoint_while_live(
    start: np.ndarray, stop: np.ndarray, low: np.ndarray, high: np.ndarray
) -> bool:
    """Whether no two buffers live at one point share a byte: a sweep over time, ends
    before starts at equal points, with the live byte ranges sorted by offset. While they
    are disjoint a new range can only meet its two neighbours."""
    sized = np.flatnonzero(high > low)
    points = np.concatenate((stop[sized], start[sized]))
    starting = np.concatenate((np.zeros(len(sized), bool), np.ones(len(sized), bool)))
    order = np.lexsort((starting, points))
    who = np.concatenate((sized, sized))[order]
    lows: list[int] = []
    highs: list[int] = []
    for first in range(0, len(order), _CHUNK_EVENTS):  # Python integers a chunk at a time
        chunk = who[first : first + _CHUNK_EVENTS]
        events = zip(
            starting[order[first : first + _CHUNK_EVENTS]].tolist(),
            low[chunk].tolist(),
            high[chunk].tolist(),
        )
        for is_start, a, b in events:
            if is_start:
                at = bisect.bisect_right(lows, a)
                if (at and highs[at - 1] > a) or (at < len(lows) and lows[at] < b):
                    return False
                lows.insert(at, a)
                highs.insert(at, b)
            else:
                at = bisect.bisect_left(lows, a)
                del lows[at], highs[at]
    return True
