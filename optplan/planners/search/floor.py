"""The floor search: a depth-first search that keeps a floor per section and places
rectangles bottom-up, with conflict-directed backjumping and a memo of failed states
(`memo`); the kernel is compiled by numba, and `floor_runner` sets up one configuration
of it (steps 2-5 of the package's docstring).
"""

from __future__ import annotations

import numpy as np

from optplan.planners.jit import njit
from optplan.planners.search.memo import _memo, _set_floor, _toggle, hash_keys
from optplan.planners.search.parts import (
    _BIT,
    _CONFLICT_WORDS,
    _DEPTH,
    _DEPTH_CAP,
    _EXHAUSTED,
    _FEWEST,
    _FOUND,
    _INF,
    _LEFT,
    _MEMO_SLOTS,
    _NODES,
    _OVERFLOW,
    _ROOMIEST,
    _RULE,
    _RUNNING,
    _STAMP,
    _domains,
    _Part,
)
from optplan.planners.search.runner import Runner, _released_fit, geometry, new_scalars

# ---------------------------------------------------------------------------- the kernel
#
# The kernel is plain loops over int64 arrays so that numba compiles it; without numba it
# runs unchanged as Python. All state lives in arrays owned by the caller, so a call can
# stop after a budget of nodes and the next call resumes where it stopped. Sets of
# sections (the conflict sets) are bitsets of `words` int64 words.


@njit(cache=True)
def _blame_section(conflict, section, geometry, placed):
    """Add to `conflict` a section and every section of the rectangles left in it: all
    that decides what can go there."""
    rect_start, rect_sections, section_start, section_rects = (
        geometry[4],
        geometry[5],
        geometry[6],
        geometry[7],
    )
    conflict[section >> 6] |= _BIT[section & 63]
    for j in range(section_start[section], section_start[section + 1]):
        r = section_rects[j]
        if placed[r]:
            continue
        for q in range(rect_start[r], rect_start[r + 1]):
            t = rect_sections[q]
            conflict[t >> 6] |= _BIT[t & 63]


@njit(cache=True)
def _next_offset(r, low, domains):
    """The lowest offset >= `low` that rectangle r can take (_INF if none).

    Row r of `domains` holds the granule (0 when r has no domain), then the offsets /
    granule allowed, as a bitset: in a section that the capacity fills exactly, what
    lies below r fills it exactly, so r's offset is a sum of the others' sizes."""
    step = domains[r, 0]
    if step == 0:
        return low
    granule = (low + step - 1) // step
    words = domains.shape[1] - 1
    while (granule >> 6) < words:
        word = domains[r, 1 + (granule >> 6)]
        if word == 0:
            granule = ((granule >> 6) + 1) << 6
            continue
        if word & _BIT[granule & 63] != 0:
            return granule * step
        granule += 1
    return _INF


@njit(cache=True)
def _fills_run(r, run_first, run_last, geometry):
    """Whether rectangle r spans exactly the sections `run_first..run_last`."""
    rect_start, rect_sections = geometry[4], geometry[5]
    return (
        rect_sections[rect_start[r]] == run_first
        and rect_sections[rect_start[r + 1] - 1] == run_last
    )


@njit(cache=True)
def _dominates(r, geometry, placed):
    """Whether rectangle r, sitting at the floor, is as good as any other move.

    It is when r spans its sections without a hole and every rectangle left in them
    lies wholly inside that span: in any packing, r can then swap places with what lies
    below it in its column (they only shift up by r's height, inside r's own time), so
    a packing with r at the bottom exists whenever any does. Shifting could break an
    alignment, so only with alignment 1 throughout.
    """
    alignments, rect_start, rect_sections, section_start, section_rects = (
        geometry[1],
        geometry[4],
        geometry[5],
        geometry[6],
        geometry[7],
    )
    first = rect_sections[rect_start[r]]
    last = rect_sections[rect_start[r + 1] - 1]
    if last - first + 1 != rect_start[r + 1] - rect_start[r] or alignments[r] != 1:
        return False
    for s in range(first, last + 1):
        for j in range(section_start[s], section_start[s + 1]):
            y = section_rects[j]
            if placed[y] or y == r:
                continue
            if alignments[y] != 1:
                return False
            if rect_sections[rect_start[y]] < first or rect_sections[rect_start[y + 1] - 1] > last:
                return False
    return True


@njit(cache=True)
def _expand(depth, geometry, state, stacks, conflicts, capacity, domains):
    """Write the moves of the current state at `depth`; returns how many.

    A move is (rectangle, offset) to place a rectangle, or (-1, floor) to lift the chosen
    section's floor. `conflicts[depth]` gets the sections the moves depend on.
    """
    sizes, alignments, rank, twin, rect_start, rect_sections, section_start, section_rects = (
        geometry
    )
    floors, load, placed, _, scalars, twin_mark, candidates, keys = state
    move_rect, move_offset, move_end, chosen, pit_floor = (
        stacks[0],
        stacks[1],
        stacks[2],
        stacks[3],
        stacks[4],
    )
    sections = floors.shape[0]
    floor = _INF
    for s in range(sections):
        floor = min(floor, floors[s])
    lowest = 0
    fewest = _INF
    for s in range(sections):
        if floors[s] != floor:
            continue
        room = capacity - floor - load[s]
        if scalars[_RULE] == _ROOMIEST:
            # The least room to spare: a section with none must be covered right at the
            # floor, so it branches least.
            choices = room
        else:
            # The fewest choices: rectangles that can sit right there, plus one if the
            # section has room to waste.
            choices = 1 if room > 0 else 0
            for j in range(section_start[s], section_start[s + 1]):
                r = section_rects[j]
                if placed[r]:
                    continue
                level = True
                for q in range(rect_start[r], rect_start[r + 1]):
                    if floors[rect_sections[q]] != floor:
                        level = False
                        break
                if level:
                    choices += 1
        if choices < fewest:
            fewest = choices
            lowest = s
    chosen[depth] = lowest
    pit_floor[depth] = floor
    conflict = conflicts[depth]
    conflict[:] = 0
    _blame_section(conflict, lowest, geometry, placed)
    stamp = scalars[_STAMP] + 1
    scalars[_STAMP] = stamp
    # Candidates: rectangles in the section whose every section is at this floor. Any
    # other rectangle there reaches higher; the lowest of them bounds a lift.
    run_first = lowest
    while run_first > 0 and floors[run_first - 1] == floor:
        run_first -= 1
    run_last = lowest
    while run_last + 1 < sections and floors[run_last + 1] == floor:
        run_last += 1
    found = 0
    lift = _INF
    for j in range(section_start[lowest], section_start[lowest + 1]):
        r = section_rects[j]
        if placed[r]:
            continue
        reach = floor
        for q in range(rect_start[r], rect_start[r + 1]):
            reach = max(reach, floors[rect_sections[q]])
        if reach == floor:
            # Rectangles that cover the whole run of sections at this floor come first:
            # any other leaves a sliver that something narrower must fill exactly.
            fills = _fills_run(r, run_first, run_last, geometry)
            key = rank[r] - (rank.shape[0] if fills else 0)
            keys[r] = key
            position = found  # insertion by key: the order never depends on visiting
            while position > 0 and keys[candidates[position - 1]] > key:
                candidates[position] = candidates[position - 1]
                position -= 1
            candidates[position] = r
            found += 1
        else:
            lift = min(lift, reach)
    if found:
        # If nothing sits right at the floor here, the lowest rectangle here rests on one
        # placed later beside it: at least the floor plus the smallest rectangle left in
        # a section of a candidate.
        for c in range(found):
            r = candidates[c]
            for q in range(rect_start[r], rect_start[r + 1]):
                t = rect_sections[q]
                for i in range(section_start[t], section_start[t + 1]):
                    y = section_rects[i]
                    if not placed[y]:
                        lift = min(lift, floor + sizes[y])
    base = move_end[depth - 1] if depth > 0 else 0
    for c in range(found):
        r = candidates[c]
        if _dominates(r, geometry, placed):
            move_rect[base] = r
            move_offset[base] = floor
            move_end[depth] = base + 1
            return 1
    moves = 0
    for c in range(found):
        r = candidates[c]
        if twin_mark[twin[r]] == stamp:
            continue  # an identical rectangle is tried at this very spot already
        twin_mark[twin[r]] = stamp
        offset = (floor + alignments[r] - 1) // alignments[r] * alignments[r]
        if _next_offset(r, offset, domains) != offset:
            continue  # a full section below it could not add up to this offset
        if offset > floor:
            # Padding below the rectangle is wasted in every section it covers.
            heaviest = 0
            for q in range(rect_start[r], rect_start[r + 1]):
                heaviest = max(heaviest, load[rect_sections[q]])
            if offset + heaviest > capacity:
                continue
        move_rect[base + moves] = r
        move_offset[base + moves] = offset
        moves += 1
    if lift < _INF and lift + load[lowest] <= capacity:
        move_rect[base + moves] = -1
        move_offset[base + moves] = lift
        moves += 1
    move_end[depth] = base + moves
    return moves


@njit(cache=True)
def _apply(depth, move, geometry, state, stacks, mult, zobrist, undo):
    """Place a rectangle or lift the chosen section (`undo` reverses it)."""
    sizes, rect_start, rect_sections = geometry[0], geometry[4], geometry[5]
    floors, load, placed, offsets, scalars = state[0], state[1], state[2], state[3], state[4]
    move_rect, move_offset, chosen, pit_floor = stacks[0], stacks[1], stacks[3], stacks[4]
    r = move_rect[move]
    if r < 0:
        floor = pit_floor[depth] if undo else move_offset[move]
        _set_floor(chosen[depth], floor, floors, mult, scalars)
        return
    size = sizes[r]
    sign = -1 if undo else 1
    for q in range(rect_start[r], rect_start[r + 1]):
        t = rect_sections[q]
        load[t] -= sign * size
        if undo:
            floor = pit_floor[depth]  # a candidate's sections were all at the floor
        elif load[t] > 0:
            floor = move_offset[move] + size
        else:
            floor = _INF  # nothing left here: never the lowest section again
        _set_floor(t, floor, floors, mult, scalars)
    placed[r] = 0 if undo else 1
    offsets[r] = move_offset[move]
    scalars[_LEFT] -= sign
    _toggle(r, sign, zobrist, scalars)


@njit(cache=True)
def _overfull(geometry, state, reach, capacity, conflict, domains):
    """A section whose rectangles left cannot stack in it, or -1 when all can.

    Each rectangle goes at or above the highest floor it covers (its reach). In one
    section the rectangles left are jobs on one machine with release times and a common
    deadline: for every height h, those reaching h or higher must fit between h and the
    capacity. On failure `conflict` gets the sections that decided it.
    """
    rect_start, rect_sections = geometry[4], geometry[5]
    section_start, section_rects = geometry[6], geometry[7]
    floors, load, placed = state[0], state[1], state[2]
    heights, queue = reach[0], reach[1]
    for r in range(heights.shape[0]):
        if placed[r]:
            continue
        high = 0
        for q in range(rect_start[r], rect_start[r + 1]):
            high = max(high, floors[rect_sections[q]])
        heights[r] = _next_offset(r, high, domains)
    for s in range(floors.shape[0]):
        if load[s] == 0:
            continue
        low = _INF
        high = 0
        for j in range(section_start[s], section_start[s + 1]):
            r = section_rects[j]
            if not placed[r]:
                low = min(low, heights[r])
                high = max(high, heights[r])
        failed = low + load[s] > capacity
        if not failed and high + load[s] > capacity:
            failed = not _released_fit(s, 0, geometry, heights, placed, capacity, queue)
        if failed:
            conflict[:] = 0
            _blame_section(conflict, s, geometry, placed)
            return s
    return -1


@njit(cache=True)
def _touches(depth, move, geometry, stacks, conflict):
    """Whether the move made at `depth` changed a section in `conflict`."""
    rect_start, rect_sections = geometry[4], geometry[5]
    r = stacks[0][move]
    if r < 0:
        s = stacks[3][depth]
        return conflict[s >> 6] & _BIT[s & 63] != 0
    for q in range(rect_start[r], rect_start[r + 1]):
        t = rect_sections[q]
        if conflict[t >> 6] & _BIT[t & 63] != 0:
            return True
    return False


@njit(cache=True)
def _child_failed(depth, failed, geometry, stacks, control, conflicts):
    """The move at `depth` led to a failure whose reasons are `conflicts[failed]`.

    If that move changed none of those sections, every other move here fails the same
    way: the node fails at once with the same reasons (a backjump). Otherwise the
    reasons join the node's own."""
    move_next, applied = control[0], control[1]
    backjump = not _touches(depth, applied[depth], geometry, stacks, conflicts[failed])
    for w in range(conflicts.shape[1]):  # slices took numba 30x longer to compile
        conflicts[depth, w] = conflicts[failed, w] | (0 if backjump else conflicts[depth, w])
    if backjump:
        move_next[depth] = stacks[2][depth]


@njit(cache=True)
def _run(
    geometry,
    state,
    stacks,
    control,
    conflicts,
    mult,
    zobrist,
    table,
    capacity,
    reach,
    domains,
    budget,
):
    """Depth-first search for up to `budget` more nodes; returns a _RUNNING/_FOUND/
    _EXHAUSTED/_OVERFLOW code. Resumable: all state is in the arrays."""
    move_end = stacks[2]
    move_next, applied = control[0], control[1]
    scalars = state[4]
    rectangles = geometry[0].shape[0]
    limit = scalars[_NODES] + budget
    while True:
        depth = scalars[_DEPTH]
        if move_next[depth] == move_end[depth]:
            if applied[depth] >= 0:
                _apply(depth, applied[depth], geometry, state, stacks, mult, zobrist, True)
                applied[depth] = -1
            _memo(table, scalars, True)
            if depth == 0:
                return _EXHAUSTED
            scalars[_DEPTH] = depth - 1
            _child_failed(depth - 1, depth, geometry, stacks, control, conflicts)
            continue
        if applied[depth] >= 0:
            _apply(depth, applied[depth], geometry, state, stacks, mult, zobrist, True)
            applied[depth] = -1
        if scalars[_NODES] >= limit:
            return _RUNNING
        move = move_next[depth]
        move_next[depth] += 1
        _apply(depth, move, geometry, state, stacks, mult, zobrist, False)
        applied[depth] = move
        scalars[_NODES] += 1
        scalars[_FEWEST] = min(scalars[_FEWEST], scalars[_LEFT])
        if scalars[_LEFT] == 0:
            return _FOUND
        child = depth + 1
        if child + 1 >= move_next.shape[0] or move_end[depth] + rectangles + 1 > stacks[0].shape[0]:
            return _OVERFLOW
        if _memo(table, scalars, False):
            for w in range(conflicts.shape[1]):  # reasons not kept: blame everything
                conflicts[child, w] = -1
            _child_failed(depth, child, geometry, stacks, control, conflicts)
            continue
        if _overfull(geometry, state, reach, capacity, conflicts[child], domains) >= 0:
            _memo(table, scalars, True)
            _child_failed(depth, child, geometry, stacks, control, conflicts)
            continue
        if _expand(child, geometry, state, stacks, conflicts, capacity, domains) == 0:
            _memo(table, scalars, True)
            _child_failed(depth, child, geometry, stacks, control, conflicts)
            continue
        move_next[child] = move_end[depth]
        applied[child] = -1
        scalars[_DEPTH] = child


def floor_runner(part: _Part, capacity: int, order: int, rule: int) -> Runner:
    """The floor search on one part, in candidate `order` with section `rule`, at its
    root: the first moves are written (none: nothing fits, and it is _EXHAUSTED)."""
    rectangles, sections = len(part.sizes), len(part.section_bytes)
    floors = np.where(part.section_bytes > 0, 0, _INF).astype(np.int64)
    scalars = new_scalars(rectangles)
    scalars[_FEWEST] = rectangles
    scalars[_RULE] = rule
    mult, zobrist = hash_keys(sections, rectangles, floors, scalars)
    state = (
        floors,
        part.section_bytes.copy(),
        np.zeros(rectangles, dtype=np.int64),  # placed
        np.zeros(rectangles, dtype=np.int64),  # offsets
        scalars,
        np.zeros(rectangles, dtype=np.int64),  # twin marks
        np.zeros(rectangles, dtype=np.int64),  # candidates
        np.zeros(rectangles, dtype=np.int64),  # candidate keys
    )
    depth_limit = _depth_limit(part, capacity)
    stacks = _stacks(depth_limit, rectangles)
    conflicts = np.zeros((depth_limit, (sections + 63) // 64), dtype=np.int64)
    control = (
        np.zeros(depth_limit, dtype=np.int64),  # next move at each depth
        np.full(depth_limit, -1, dtype=np.int64),  # move applied at each depth
    )
    shape = geometry(part, order)
    domains = _domains(part, capacity)
    table = np.zeros((_MEMO_SLOTS, 3), dtype=np.int64)
    reach = np.zeros((2, rectangles), dtype=np.int64)  # reach, and a queue
    moves = _expand(0, shape, state, stacks, conflicts, capacity, domains)
    arrays = (
        shape,
        state,
        stacks,
        control,
        conflicts,
        mult,
        zobrist,
        table,
        capacity,
        reach,
        domains,
    )
    return Runner(_run, arrays, scalars, state[3], _RUNNING if moves else _EXHAUSTED)


def _depth_limit(part: _Part, capacity: int) -> int:
    """How deep a run may go: every move places a rectangle or lifts a floor by at least
    the granularity; capped, and so that the conflict sets fit their budget of words."""
    rectangles, sections = len(part.sizes), len(part.section_bytes)
    step = int(np.gcd.reduce(part.sizes)) if rectangles else 1
    lifts = sections * (capacity // max(step, 1) + 1)
    depth_limit = min(rectangles + lifts, _DEPTH_CAP) + 16
    return min(depth_limit, _CONFLICT_WORDS // ((sections + 63) // 64))


def _stacks(depth_limit: int, rectangles: int) -> tuple[np.ndarray, ...]:
    """The moves of every depth, one after another, and per depth where they end, the
    section chosen and its floor."""
    move_room = depth_limit * 4 + min(rectangles, 4096) * 64
    return (
        np.zeros(move_room, dtype=np.int64),  # move rectangle
        np.zeros(move_room, dtype=np.int64),  # move offset
        np.zeros(depth_limit, dtype=np.int64),  # end of each depth's moves
        np.zeros(depth_limit, dtype=np.int64),  # each depth's chosen section
        np.zeros(depth_limit, dtype=np.int64),  # the floor there
    )
