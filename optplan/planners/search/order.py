"""The order search: branches on which rectangle comes next, each at the lowest offset
the placed ones leave it (the kernel, compiled by numba), and `order_runner`, which sets
up one rank order of it (step 6 of the package's docstring).
"""

from __future__ import annotations

import numpy as np

from optplan.planners.jit import njit
from optplan.planners.search.parts import (
    _DEPTH,
    _EXHAUSTED,
    _FOUND,
    _H1,
    _H2,
    _H3,
    _INF,
    _LEFT,
    _NODES,
    _RUNNING,
    _Part,
)
from optplan.planners.search.runner import Runner, _released_fit, geometry, new_scalars

# ---------------------------------------------------------------------------- order search
#
# A second kernel, the other way round: instead of a section's floor it branches on which
# rectangle comes next. Rectangles are placed in increasing order of (offset, rank), each
# at the lowest offset the ones already placed leave it (its *low*: the highest top of a
# placed rectangle sharing a section, aligned up). Every packing pushed down has such an
# order, so trying every rectangle that keeps the order increasing is complete; two
# prunings keep it small:
#
# - a rectangle goes only below the top of every other rectangle left (low + size): above
#   it, that one could have gone first, lower down, into a gap that stays empty;
# - in every section, what is left must fit above max(floor, the offset just used, the
#   lowest low left there), with those whose low is higher released at their low.
#
# The first descent is a greedy plan (lowest offset first, rank breaking ties), so on
# nearly exact packings it answers after few backtracks where floor-by-floor branching
# wanders; the two kernels take turns.


@njit(cache=True)
def _order_fits(offset, low_section, high_section, geometry, order_state, capacity, heights):
    """Whether every section's rectangles left fit above their lowest possible starts;
    in the group being placed, nothing goes below `offset` any more."""
    section_start, section_rects = geometry[6], geometry[7]
    low, placed, floors, totals = order_state[0], order_state[1], order_state[2], order_state[3]
    for s in range(floors.shape[0]):
        if totals[s] == 0:
            continue
        base = floors[s]
        if low_section <= s < high_section:
            base = max(base, offset)
        least = _INF
        most = 0
        for j in range(section_start[s], section_start[s + 1]):
            r = section_rects[j]
            if not placed[r]:
                least = min(least, low[r])
                most = max(most, low[r])
        if max(least, base) + totals[s] > capacity:
            return False
        if most + totals[s] > capacity and not _released_fit(
            s, base, geometry, order_state[0], order_state[1], capacity, heights
        ):
            return False
    return True


@njit(cache=True)
def _order_place(r, offset, geometry, neighbours, order_state, trails, undo):
    """Place rectangle r at `offset` (raising its neighbours' lows and its sections'
    floors, each change recorded on a trail), or with `undo` take it away again.
    Returns whether a rectangle left shares a section with r."""
    sizes, alignments, rect_start, rect_sections = (
        geometry[0],
        geometry[1],
        geometry[4],
        geometry[5],
    )
    neighbour_start, neighbour_rects = neighbours
    low, placed, floors, totals, offsets, scalars = order_state
    low_trail, floor_trail = trails
    size = sizes[r]
    for q in range(rect_start[r], rect_start[r + 1]):
        totals[rect_sections[q]] += size if undo else -size
    if undo:
        placed[r] = 0
        scalars[_LEFT] += 1
        return False
    placed[r] = 1
    offsets[r] = offset
    scalars[_LEFT] -= 1
    top = offset + size
    for q in range(rect_start[r], rect_start[r + 1]):
        s = rect_sections[q]
        floor_trail[scalars[_H2], 0] = s
        floor_trail[scalars[_H2], 1] = floors[s]
        scalars[_H2] += 1
        floors[s] = top
    covered = False
    for j in range(neighbour_start[r], neighbour_start[r + 1]):
        y = neighbour_rects[j]
        if placed[y]:
            continue
        covered = True
        if low[y] >= top:
            continue
        low_trail[scalars[_H1], 0] = y
        low_trail[scalars[_H1], 1] = low[y]
        scalars[_H1] += 1
        low[y] = (top + alignments[y] - 1) // alignments[y] * alignments[y]
    return covered


@njit(cache=True)
def _order_restore(low_mark, floor_mark, order_state, trails):
    """Undo the trails down to the given marks."""
    low, floors, scalars = order_state[0], order_state[2], order_state[5]
    low_trail, floor_trail = trails
    while scalars[_H1] > low_mark:
        scalars[_H1] -= 1
        low[low_trail[scalars[_H1], 0]] = low_trail[scalars[_H1], 1]
    while scalars[_H2] > floor_mark:
        scalars[_H2] -= 1
        floors[floor_trail[scalars[_H2], 0]] = floor_trail[scalars[_H2], 1]


@njit(cache=True)
def _order_next(depth, geometry, order_state, frames):
    """The next rectangle to try at `depth`: the least (low, rank) above the frame's
    cursor among those left in its range, or -1 when none is left below its ceiling."""
    rank, rect_start, rect_sections = geometry[2], geometry[4], geometry[5]
    low, placed = order_state[0], order_state[1]
    cursor_offset, cursor_rank, ceiling = frames[0], frames[1], frames[2]
    range_low, range_high = frames[6], frames[7]
    best = -1
    for r in range(low.shape[0]):
        if placed[r] or low[r] >= ceiling[depth]:
            continue
        first = rect_sections[rect_start[r]]
        if first < range_low[depth] or first >= range_high[depth]:
            continue
        if low[r] < cursor_offset[depth] or (
            low[r] == cursor_offset[depth] and rank[r] <= cursor_rank[depth]
        ):
            continue  # would break the increasing order of placements
        if best < 0 or low[r] < low[best] or (low[r] == low[best] and rank[r] < rank[best]):
            best = r
    return best


@njit(cache=True)
def _first_group(low_section, high_section, geometry, placed):
    """The leftmost run of sections in [low_section, high_section) that rectangles left
    there tie together: (first, end, more), more when some are left beyond it; first is
    -1 when none is left in the range."""
    rect_start, rect_sections, section_start, section_rects = (
        geometry[4],
        geometry[5],
        geometry[6],
        geometry[7],
    )
    first = -1
    end = low_section
    for s in range(low_section, high_section):
        if first >= 0 and s >= end:
            break
        for j in range(section_start[s], section_start[s + 1]):
            r = section_rects[j]
            if not placed[r]:
                if first < 0:
                    first = s
                end = max(end, rect_sections[rect_start[r + 1] - 1] + 1)
    if first < 0:
        return -1, high_section, False
    for s in range(end, high_section):
        for j in range(section_start[s], section_start[s + 1]):
            if not placed[section_rects[j]]:
                return first, end, True
    return first, end, False


@njit(cache=True)
def _order_enter(child, offset, rank, geometry, order_state, frames, records, capacity, heights):
    """Set up the frame at `child` after the move at child - 1 placed a rectangle of
    `rank` at `offset`; False when the inference prunes it.

    Where no rectangle left crosses a section boundary, the two sides are independent:
    the child works on the leftmost group alone, in its own order from the bottom, and
    the rest waits in a record. A group that runs out of moves fails the move that split
    it (a backjump over the other group's moves, which could not help)."""
    sizes, rect_start, rect_sections = geometry[0], geometry[4], geometry[5]
    low, placed, scalars = order_state[0], order_state[1], order_state[5]
    cursor_offset, cursor_rank, ceiling, chosen, _, _, range_low, range_high = frames[:8]
    pending, jump, record_mark = frames[8], frames[9], frames[10]
    parent = child - 1
    low_section, high_section = range_low[parent], range_high[parent]
    waiting, target = pending[parent], parent
    first, end, more = _first_group(low_section, high_section, geometry, placed)
    while first < 0:  # this group is done: take up the one waiting
        low_section, high_section = records[waiting, 0], records[waiting, 1]
        target, waiting = records[waiting, 2], records[waiting, 3]
        offset, rank = -1, -1
        first, end, more = _first_group(low_section, high_section, geometry, placed)
    if more:
        record = scalars[_H3]
        records[record, 0], records[record, 1] = end, high_section
        records[record, 2], records[record, 3] = target, waiting
        scalars[_H3] = record + 1
        waiting = record
        offset, rank = -1, -1
    cursor_offset[child], cursor_rank[child] = offset, rank
    range_low[child], range_high[child] = first, end
    pending[child], jump[child] = waiting, target
    record_mark[child] = scalars[_H3]
    chosen[child] = -1
    lowest_top = _INF
    for r in range(low.shape[0]):
        if not placed[r] and first <= rect_sections[rect_start[r]] < end:
            lowest_top = min(lowest_top, low[r] + sizes[r])
    ceiling[child] = lowest_top
    return _order_fits(offset, first, end, geometry, order_state, capacity, heights)


@njit(cache=True)
def _order_unwind(depth, target, geometry, neighbours, order_state, trails, frames):
    """Take away the rectangles placed at depths above `target` up to `depth`."""
    chosen, low_mark, floor_mark = frames[3], frames[4], frames[5]
    for k in range(depth, target, -1):
        if chosen[k] >= 0:
            _order_place(chosen[k], 0, geometry, neighbours, order_state, trails, True)
            _order_restore(low_mark[k], floor_mark[k], order_state, trails)
            chosen[k] = -1


@njit(cache=True)
def _order_run(
    geometry, neighbours, order_state, trails, frames, records, capacity, heights, budget
):
    """Depth-first search over placement orders for up to `budget` more nodes; returns a
    _RUNNING/_FOUND/_EXHAUSTED code. Resumable: all state is in the arrays."""
    sizes, rank = geometry[0], geometry[2]
    low, scalars = order_state[0], order_state[5]
    cursor_offset, cursor_rank, _, chosen, low_mark, floor_mark = frames[:6]
    jump, record_mark, covered = frames[9], frames[10], frames[11]
    limit = scalars[_NODES] + budget
    while True:
        # Stop before touching the frame, so that the next call starts from exactly here.
        if scalars[_NODES] >= limit:
            return _RUNNING
        depth = scalars[_DEPTH]
        # Nothing left shares a section with a rectangle tried here: where it sits
        # cannot matter to the rest, so its failure is every other move's too.
        alone = chosen[depth] >= 0 and not covered[depth]
        _order_unwind(depth, depth - 1, geometry, neighbours, order_state, trails, frames)
        r = -1 if alone else _order_next(depth, geometry, order_state, frames)
        if r < 0:
            if depth == 0:
                return _EXHAUSTED
            _order_unwind(depth - 1, jump[depth], geometry, neighbours, order_state, trails, frames)
            scalars[_DEPTH] = jump[depth]
            continue
        offset = low[r]
        cursor_offset[depth] = offset
        cursor_rank[depth] = rank[r]
        scalars[_NODES] += 1
        scalars[_H3] = record_mark[depth]  # records of the previous move here are void
        low_mark[depth] = scalars[_H1]
        floor_mark[depth] = scalars[_H2]
        covered[depth] = _order_place(r, offset, geometry, neighbours, order_state, trails, False)
        chosen[depth] = r
        if offset + sizes[r] > capacity:
            continue
        if scalars[_LEFT] == 0:
            return _FOUND
        child = depth + 1
        if _order_enter(
            child, offset, rank[r], geometry, order_state, frames, records, capacity, heights
        ):
            scalars[_DEPTH] = child


def order_runner(part: _Part, capacity: int, order: int) -> Runner:
    """The order search on one part in rank `order`, at its root."""
    rectangles, sections = len(part.sizes), len(part.section_bytes)
    scalars = new_scalars(rectangles)
    order_state = (
        np.zeros(rectangles, dtype=np.int64),  # lowest offset each can take
        np.zeros(rectangles, dtype=np.int64),  # placed
        np.zeros(sections, dtype=np.int64),  # floors: top of the highest placed
        part.section_bytes.copy(),  # bytes left to place per section
        np.zeros(rectangles, dtype=np.int64),  # offsets
        scalars,
    )
    neighbours = _neighbours(part)
    changes = len(neighbours[1]) + len(part.rect_sections) + 1
    trails = (
        np.zeros((changes, 2), dtype=np.int64),  # (rectangle, old low)
        np.zeros((len(part.rect_sections) + 1, 2), dtype=np.int64),  # (section, old floor)
    )
    depth_limit = rectangles + 2
    frames = _frames(depth_limit, sections)
    # At the root every low is 0, below every rectangle's top: no ceiling yet.
    frames[2][0] = int(part.sizes.max()) + 1 if rectangles else 0
    # A group waiting: its sections (first, end), the depth that split it off, and the
    # record of the groups waiting before it.
    records = np.zeros((depth_limit, 4), dtype=np.int64)
    heights = np.zeros(rectangles, dtype=np.int64)
    shape = geometry(part, order)
    arrays = (shape, neighbours, order_state, trails, frames, records, capacity, heights)
    return Runner(_order_run, arrays, scalars, order_state[4], _RUNNING if rectangles else _FOUND)


def _frames(depth_limit: int, sections: int) -> tuple[np.ndarray, ...]:
    """Per depth: the cursor, the ceiling, the rectangle placed and the trail marks
    before it, its group of sections and what waits, where to jump on failure."""
    return (
        np.full(depth_limit, -1, dtype=np.int64),  # cursor: last offset tried
        np.full(depth_limit, -1, dtype=np.int64),  # cursor: its rank
        np.zeros(depth_limit, dtype=np.int64),  # ceiling: offsets must stay below
        np.full(depth_limit, -1, dtype=np.int64),  # rectangle placed at each depth
        np.zeros(depth_limit, dtype=np.int64),  # trail marks before it
        np.zeros(depth_limit, dtype=np.int64),
        np.zeros(depth_limit, dtype=np.int64),  # sections of its group: first...
        np.full(depth_limit, sections, dtype=np.int64),  # ...and end
        np.full(depth_limit, -1, dtype=np.int64),  # record of the groups waiting
        np.zeros(depth_limit, dtype=np.int64),  # depth to return to when it fails
        np.zeros(depth_limit, dtype=np.int64),  # records in use when it began
        np.zeros(depth_limit, dtype=np.int64),  # whether anything left is over it
    )


def _neighbours(part: _Part) -> tuple[np.ndarray, np.ndarray]:
    """Per rectangle, the others sharing a section with it (flat, as in _Part)."""
    geometry = (part.rect_start, part.rect_sections, part.section_start, part.section_rects)
    counts = np.zeros(len(part.sizes) + 1, dtype=np.int64)
    _neighbour_lists(geometry, counts, counts[:0])
    starts = np.cumsum(counts)
    rects = np.zeros(int(starts[-1]), dtype=np.int64)
    _neighbour_lists(geometry, starts, rects)
    return starts, rects


@njit(cache=True)
def _neighbour_lists(geometry, starts, rects):
    """With `rects` empty, count each rectangle's neighbours into starts[r + 1]; else
    write them at rects[starts[r]:starts[r + 1]]."""
    rect_start, rect_sections, section_start, section_rects = geometry
    count = rect_start.shape[0] - 1
    seen = np.empty(count, dtype=np.int64)
    seen[:] = -1  # np.full takes numba longer to compile
    for r in range(count):
        seen[r] = r
        found = 0
        for q in range(rect_start[r], rect_start[r + 1]):
            t = rect_sections[q]
            for j in range(section_start[t], section_start[t + 1]):
                y = section_rects[j]
                if seen[y] == r:
                    continue
                seen[y] = r
                if rects.shape[0] > 0:
                    rects[starts[r] + found] = y
                found += 1
        if rects.shape[0] == 0:
            starts[r + 1] = found
