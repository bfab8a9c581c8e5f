"""Exact packing by a skyline search: do the buffers fit under a given capacity?

`search` decides one question, "do the alias classes fit in `capacity` bytes?", and
answers with offsets, proves that they cannot, or runs out of time. `minimise` asks it at
several capacities, the lower bound first.

Every alias class is one rectangle: its lifetime (the union of its members' intervals,
cut at every interval end into *sections*) by its height in bytes.

1. Split time where no rectangle crosses: each part is packed on its own.
2. Canonical packings. Push any packing down as far as it goes: every rectangle then sits
   at 0 or directly on a rectangle it shares a section with (aligned up). The search only
   builds such packings, bottom-up, keeping a *floor* per section: how high it is filled.
3. Branch on one section s at the lowest floor f (the one with the least room to spare,
   or the fewest choices): either some rectangle sits right at f over s - one branch per
   rectangle that covers s and whose every section is at f (identical rectangles once) -
   or nothing does, and s's floor is lifted to the lowest height the first rectangle
   over s could then take.

       bytes
         ^          +--+
         |    +-----+  |          s: lowest floor f
         |    |  b  |  |          branches: a at f, c at f, or lift s to min(top of
       f |-+  +--+--+  +--+            the smallest rectangle that could rest beside
         | |  |s |     |  |            it, reach of rectangles crossing higher floors)
         +-+--+--+-----+--+--> sections
              candidates: a = [s], c = [s, s+1]   (both only over floors at f)

4. Which rectangle first: one whose column holds only rectangles inside its own span
   is placed alone (it can swap with whatever lies below it, so nothing else needs
   trying); otherwise rectangles that cover the whole run of sections at the floor
   (no sliver left for something narrower), then a static order.
5. Inference, which prunes: a rectangle goes at or above the highest floor it covers
   (its reach). In one section the rectangles left are jobs on one machine with release
   heights and a common deadline, the capacity: for every height h, those reaching h or
   higher must fit above h. Where the capacity is filled exactly, what lies below a
   rectangle fills it exactly, so its offset is a subset sum of the others' sizes: its
   reach rounds up to the next such sum. A dead end records which sections caused it
   (a conflict set); when the move that led there changed none of them, every sibling
   fails the same way and the search jumps back (conflict-directed backjumping). Failed
   states (floors, rectangles left) are remembered by hash.
6. A second search branches the other way round: on which rectangle comes next.
   Rectangles go in increasing order of offset, each at the lowest offset those placed
   leave it, lowest first (ties by a static order: widest in time, or in the most
   crowded section, first), so its first descent is a greedy plan. It prunes a move
   that leaves a gap some rectangle left could have filled, and sections whose
   rectangles left cannot fit above them; once a rectangle nothing left shares a
   section with has failed, every other move there fails too (where it sits matters
   to nothing else). Where no rectangle left crosses a section
   boundary it packs the two sides one after the other, and a side that fails fails
   the move that split them. Where floor-by-floor branching wanders on nearly exact
   packings (MiniMalloc's instance K: no answer in 60 s), this one answers in 15,000
   nodes.
7. Such searches are heavy-tailed, so fifteen configurations take turns, a slice of
   nodes each, and any one answering answers for all: the floor search in twelve
   (order: longest, tallest or largest area first; section rule; time forwards or
   mirrored) and the order search in three static orders (only on parts of at most
   1024 rectangles: it scans them all at every node). Turns are counted in nodes, so
   the result is the same on any machine; `seed` only breaks ties between equal ones.

The inner loops are plain loops over int64 arrays compiled by numba (about 130 times
faster than the same code as Python, which is what runs when numba is missing); compiling
them takes 10-50 s once per environment (`optplan.planners.jit`, `warm_kernels`). Pinned
buffers are not supported: `search` raises ValueError and the caller should use another
planner.
"""

from __future__ import annotations

import enum
import random
import time
from dataclasses import dataclass
from math import gcd

import numpy as np

from optplan.planners.jit import njit
from optplan.problem import AliasClass, Interval, Problem, alias_classes, lower_bound

# Indices into the kernel's scalar array `scalars`.
_DEPTH, _NODES, _LEFT, _H1, _H2, _H3, _STAMP, _MEMO, _FEWEST, _RULE = range(10)
_ROOMIEST, _FEWEST_CHOICES = 0, 1  # rules for the section to branch on
_RUNNING, _FOUND, _EXHAUSTED, _OVERFLOW = range(4)
_INF = 1 << 60  # the floor of a section where nothing is left to place
_FLOOR_SEARCH, _ORDER_SEARCH = 0, 1
# (search, candidate order, section rule, mirrored) that take turns; see _solve_part.
# Orders: 0 long, 1 tall, 2 area, 3 wide, 4 crowded, 5 crowded-wide (see _build_part).
_FLOOR_CONFIGS = tuple(
    (_FLOOR_SEARCH, order, rule, mirror)
    for mirror in (0, 1)
    for rule in (_ROOMIEST, _FEWEST_CHOICES)
    for order in (0, 1, 2)
)
_CONFIGS = (
    _FLOOR_CONFIGS[:1]
    + tuple((_ORDER_SEARCH, order, 0, 0) for order in (3, 4, 5))
    + _FLOOR_CONFIGS[1:]
)
_BIT = np.array([1 << k for k in range(63)] + [-(1 << 63)], dtype=np.int64)  # bit k of a word
_PRIMES = (2147483647, 2147483629, 2147483587)  # three hashes of 31 bits each
_MEMO_SLOTS = 1 << 19  # failed states remembered (cleared when 60 % full)
_DEPTH_CAP = 200_000  # beyond this a run reports a timeout
_CONFLICT_WORDS = 1 << 21  # conflict sets kept per run, in words (16 MiB)
_DOMAIN_GRANULES = 1 << 14  # subset sums only up to this many granules...
_DOMAIN_WORK = 1 << 18  # ...and this many (rectangle, rectangle) pairs in full sections
_SLICE_NODES = 2_000  # nodes per configuration's turn
_FIRST_CHUNK = 64  # nodes per kernel call at first; then sized to take about...
_CHUNK_SECONDS = 0.01  # ...this long, so the clock is read that often
# The order search scans every rectangle at every node: beyond this many in a part a
# slice takes seconds (3 ms a node at 10,000), so such parts get the floor search alone.
_ORDER_RECTANGLES = 1024


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


# ---------------------------------------------------------------------------- geometry


@dataclass(frozen=True, slots=True)
class _Part:
    """The rectangles of one stretch of time that no rectangle crosses, as flat arrays.

    Rectangle r covers sections `rect_sections[rect_start[r]:rect_start[r + 1]]`; section
    s holds rectangles `section_rects[section_start[s]:section_start[s + 1]]`.
    """

    classes: tuple[AliasClass, ...]
    sizes: np.ndarray
    alignments: np.ndarray
    ranks: tuple[np.ndarray, ...]  # per candidate order: lower is tried first
    twin: np.ndarray  # identical rectangles share a number
    rect_start: np.ndarray
    rect_sections: np.ndarray
    section_start: np.ndarray
    section_rects: np.ndarray
    section_bytes: np.ndarray


def _split(classes: list[AliasClass]) -> list[list[AliasClass]]:
    """Group rectangles into stretches of time that no rectangle crosses."""
    spans = sorted((cls.live[0].start, cls.live[-1].end, k) for k, cls in enumerate(classes))
    parts: list[list[AliasClass]] = []
    reach = 0
    for start, end, k in spans:
        if not parts or start >= reach:
            parts.append([])
        reach = max(reach, end)
        parts[-1].append(classes[k])
    return parts


def _build_part(classes: list[AliasClass], seed: int, mirror: bool = False) -> _Part:
    """The part's arrays; `mirror` numbers the sections from the end of time, which
    changes nothing but which of two equal sections the search takes first."""
    lives = [
        tuple(Interval(-iv.end, -iv.start) for iv in cls.live) if mirror else cls.live
        for cls in classes
    ]
    points = sorted({p for live in lives for iv in live for p in (iv.start, iv.end)})
    index = {point: k for k, point in enumerate(points)}
    covered = [
        sorted({s for iv in live for s in range(index[iv.start], index[iv.end])}) for live in lives
    ]
    holders: list[list[int]] = [[] for _ in range(len(points) - 1)]
    for r, sections in enumerate(covered):
        for s in sections:
            holders[s].append(r)
    sizes = [cls.size for cls in classes]
    widths = [live[-1].end - live[0].start for live in lives]
    areas = [size * width for size, width in zip(sizes, widths)]
    loads = [sum(sizes[r] for r in rects) for rects in holders]
    crowding = [max(loads[s] for s in sections) for sections in covered]
    tiebreak = list(range(len(classes)))
    if seed:
        random.Random(seed).shuffle(tiebreak)
    keys = {
        # Longest-lived first (in sections), then tallest: a rectangle that spans many
        # sections is the hardest to fit later.
        "long": lambda r: (-len(covered[r]), -sizes[r], tiebreak[r]),
        # Tallest first, then longest: the classic order of strip packing.
        "tall": lambda r: (-sizes[r], -len(covered[r]), tiebreak[r]),
        # Largest area (bytes times program points) first: the most to place.
        "area": lambda r: (-areas[r], tiebreak[r]),
        # Widest in time first, then largest area, then in the most crowded section.
        "wide": lambda r: (-widths[r], -areas[r], -crowding[r], tiebreak[r]),
        # In the most crowded section first: where the capacity is filled (nearly)
        # exactly, its rectangles decide the packing; then by area or by width.
        "crowded": lambda r: (-crowding[r], -areas[r], -widths[r], tiebreak[r]),
        "crowded-wide": lambda r: (-crowding[r], -widths[r], -areas[r], tiebreak[r]),
    }
    ranks = []
    for key in keys.values():
        rank = [0] * len(classes)
        for position, r in enumerate(sorted(range(len(classes)), key=key)):
            rank[r] = position
        ranks.append(_array(rank))
    shapes: dict[tuple[tuple[int, ...], int, int], int] = {}
    twin = [
        shapes.setdefault((tuple(sections), cls.size, cls.alignment), len(shapes))
        for cls, sections in zip(classes, covered)
    ]
    return _Part(
        classes=tuple(classes),
        sizes=_array(sizes),
        alignments=_array([cls.alignment for cls in classes]),
        ranks=tuple(ranks),
        twin=_array(twin),
        rect_start=_array(np.cumsum([0] + [len(c) for c in covered])),
        rect_sections=_array([s for sections in covered for s in sections]),
        section_start=_array(np.cumsum([0] + [len(h) for h in holders])),
        section_rects=_array([r for rects in holders for r in rects]),
        section_bytes=_array([sum(sizes[r] for r in rects) for rects in holders]),
    )


def _array(values: object) -> np.ndarray:
    return np.asarray(values, dtype=np.int64)


# ---------------------------------------------------------------------------- the kernel
#
# The kernel is plain loops over int64 arrays so that numba compiles it; without numba it
# runs unchanged as Python. All state lives in arrays owned by the caller, so a call can
# stop after a budget of nodes and the next call resumes where it stopped. Sets of
# sections (the conflict sets) are bitsets of `words` int64 words.


@njit(cache=True)
def _term(section, floor, multipliers, prime):
    return (floor % prime) * multipliers[section] % prime


@njit(cache=True)
def _set_floor(section, floor, floors, mult, scalars):
    """Move one floor, keeping the three hashes of the state up to date."""
    old = floors[section]
    for h in range(3):
        prime = (2147483647, 2147483629, 2147483587)[h]
        value = scalars[_H1 + h] - _term(section, old, mult[h], prime)
        scalars[_H1 + h] = (value + _term(section, floor, mult[h], prime)) % prime
    floors[section] = floor


@njit(cache=True)
def _memo(table, scalars, insert):
    """Look the state's hashes up in the open-addressed table of failed states; with
    `insert`, add them. Returns True when they were already there."""
    slots = table.shape[0]
    k1, k2, k3 = scalars[_H1] + 1, scalars[_H2], scalars[_H3]  # +1: zero marks empty
    slot = (k1 * 40503 + k2) % slots
    while table[slot, 0] != 0:
        if table[slot, 0] == k1 and table[slot, 1] == k2 and table[slot, 2] == k3:
            return True
        slot = (slot + 1) % slots
    if insert:
        if scalars[_MEMO] * 10 >= slots * 6:
            table[:, :] = 0  # full enough to slow probing: forget everything
            scalars[_MEMO] = 0
            slot = (k1 * 40503 + k2) % slots
        table[slot, 0] = k1
        table[slot, 1] = k2
        table[slot, 2] = k3
        scalars[_MEMO] += 1
    return False


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
    for h in range(3):
        prime = (2147483647, 2147483629, 2147483587)[h]
        scalars[_H1 + h] = (scalars[_H1 + h] + sign * zobrist[h, r]) % prime


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
    if not _touches(depth, applied[depth], geometry, stacks, conflicts[failed]):
        conflicts[depth, :] = conflicts[failed, :]
        move_next[depth] = stacks[2][depth]
    else:
        conflicts[depth, :] |= conflicts[failed, :]


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
    budget,
    reach,
    domains,
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
            conflicts[child, :] = -1  # reasons not kept: blame everything
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
def _released_fit(s, base, geometry, release, placed, capacity, queue):
    """Whether section s's rectangles left, each released at max(`release[r]`, `base`),
    fit under the capacity: for every release, those released there or higher must fit
    above it (checked highest release first). `queue` is scratch space."""
    sizes, section_start, section_rects = geometry[0], geometry[6], geometry[7]
    count = 0
    for j in range(section_start[s], section_start[s + 1]):
        r = section_rects[j]
        if placed[r]:
            continue
        # Insertion sort: only sections near the capacity get here, and they hold few.
        position = count
        while position > 0 and release[queue[position - 1]] < release[r]:
            queue[position] = queue[position - 1]
            position -= 1
        queue[position] = r
        count += 1
    above = 0
    for k in range(count):
        r = queue[k]
        above += sizes[r]
        if max(release[r], base) + above > capacity:
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
    geometry, neighbours, order_state, trails, frames, records, capacity, budget, heights
):
    """Depth-first search over placement orders for up to `budget` more nodes; returns a
    _RUNNING/_FOUND/_EXHAUSTED code. Resumable: all state is in the arrays."""
    sizes, rank = geometry[0], geometry[2]
    low, scalars = order_state[0], order_state[5]
    cursor_offset, cursor_rank, _, chosen, low_mark, floor_mark = frames[:6]
    jump, record_mark, covered = frames[9], frames[10], frames[11]
    limit = scalars[_NODES] + budget
    while True:
        depth = scalars[_DEPTH]
        # Nothing left shares a section with a rectangle tried here: where it sits
        # cannot matter to the rest, so its failure is every other move's too.
        alone = chosen[depth] >= 0 and not covered[depth]
        _order_unwind(depth, depth - 1, geometry, neighbours, order_state, trails, frames)
        if scalars[_NODES] >= limit:
            return _RUNNING
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


# ---------------------------------------------------------------------------- driver


@dataclass(frozen=True, slots=True)
class _Outcome:
    status: SearchStatus
    offsets: tuple[int, ...]
    nodes: int


def _domains(part: _Part, capacity: int) -> np.ndarray:
    """Offsets allowed by exactly filled sections, for _next_offset (see there).

    Skipped (no rectangle limited) when the bitsets would be large: many granules under
    the capacity, or many rectangles per exactly filled section."""
    rectangles = len(part.sizes)
    step = int(np.gcd.reduce(part.sizes)) if rectangles else 1
    granules = capacity // step + 1
    words = (granules + 63) // 64
    tight = [s for s, filled in enumerate(part.section_bytes) if filled == capacity]
    work = sum((part.section_start[s + 1] - part.section_start[s]) ** 2 for s in tight)
    if not tight or granules > _DOMAIN_GRANULES or work > _DOMAIN_WORK or any(part.alignments > 1):
        return np.zeros((rectangles, 1), dtype=np.int64)
    full = (1 << granules) - 1
    allowed = [full] * rectangles
    limited = [False] * rectangles
    for s in tight:
        rects = [
            int(r) for r in part.section_rects[part.section_start[s] : part.section_start[s + 1]]
        ]
        for r in rects:
            sums = 1  # bit k: some of the others add up to k granules
            for other in rects:
                if other != r:
                    sums |= sums << int(part.sizes[other]) // step
            allowed[r] &= sums & full
            limited[r] = True
    table = np.zeros((rectangles, words + 1), dtype=np.int64)
    for r in range(rectangles):
        if not limited[r]:
            continue
        table[r, 0] = step
        for w in range(words):
            word = (allowed[r] >> (64 * w)) & ((1 << 64) - 1)
            table[r, w + 1] = word - (1 << 64) if word >= 1 << 63 else word
    return table


class _Runner:
    """One configuration of the kernel on one part: its arrays, resumable slice by slice."""

    def __init__(self, part: _Part, capacity: int, order: int, rule: int) -> None:
        rectangles, sections = len(part.sizes), len(part.section_bytes)
        rng = np.random.default_rng(0x5EED)  # fixed: hashes must not change the search
        primes = np.array(_PRIMES, dtype=np.int64)
        self.mult = rng.integers(1, primes[:, None], size=(3, sections), dtype=np.int64)
        self.zobrist = rng.integers(0, primes[:, None], size=(3, rectangles), dtype=np.int64)
        floors = np.where(part.section_bytes > 0, 0, _INF).astype(np.int64)
        scalars = np.zeros(10, dtype=np.int64)
        scalars[_LEFT] = rectangles
        scalars[_FEWEST] = rectangles
        scalars[_RULE] = rule
        for h, prime in enumerate(_PRIMES):
            terms = (int(f) % prime * int(m) % prime for f, m in zip(floors, self.mult[h]))
            scalars[_H1 + h] = sum(terms) % prime
        self.scalars = scalars
        self.state = (
            floors,
            part.section_bytes.copy(),
            np.zeros(rectangles, dtype=np.int64),  # placed
            np.zeros(rectangles, dtype=np.int64),  # offsets
            scalars,
            np.zeros(rectangles, dtype=np.int64),  # twin marks
            np.zeros(rectangles, dtype=np.int64),  # candidates
            np.zeros(rectangles, dtype=np.int64),  # candidate keys
        )
        # Every move places a rectangle or lifts a floor by at least the granularity.
        step = int(np.gcd.reduce(part.sizes)) if rectangles else 1
        lifts = sections * (capacity // max(step, 1) + 1)
        depth_limit = min(rectangles + lifts, _DEPTH_CAP) + 16
        words = (sections + 63) // 64
        depth_limit = min(depth_limit, _CONFLICT_WORDS // words)
        move_room = depth_limit * 4 + min(rectangles, 4096) * 64
        self.stacks = (
            np.zeros(move_room, dtype=np.int64),  # move rectangle
            np.zeros(move_room, dtype=np.int64),  # move offset
            np.zeros(depth_limit, dtype=np.int64),  # end of each depth's moves
            np.zeros(depth_limit, dtype=np.int64),  # each depth's chosen section
            np.zeros(depth_limit, dtype=np.int64),  # the floor there
        )
        self.conflicts = np.zeros((depth_limit, words), dtype=np.int64)
        self.control = (
            np.zeros(depth_limit, dtype=np.int64),  # next move at each depth
            np.full(depth_limit, -1, dtype=np.int64),  # move applied at each depth
        )
        self.geometry = (
            part.sizes,
            part.alignments,
            part.ranks[order],
            part.twin,
            part.rect_start,
            part.rect_sections,
            part.section_start,
            part.section_rects,
        )
        self.domains = _domains(part, capacity)
        self.table = np.zeros((_MEMO_SLOTS, 3), dtype=np.int64)
        self.reach = np.zeros((2, rectangles), dtype=np.int64)  # reach, and a queue
        self.capacity = capacity
        moves = _expand(
            0, self.geometry, self.state, self.stacks, self.conflicts, capacity, self.domains
        )
        self.code = _RUNNING if moves else _EXHAUSTED

    def step(self, nodes: int) -> int:
        if self.code == _RUNNING:
            self.code = _run(
                self.geometry,
                self.state,
                self.stacks,
                self.control,
                self.conflicts,
                self.mult,
                self.zobrist,
                self.table,
                self.capacity,
                nodes,
                self.reach,
                self.domains,
            )
        return self.code

    @property
    def offsets(self) -> np.ndarray:
        return self.state[3]

    @property
    def nodes(self) -> int:
        return int(self.scalars[_NODES])


class _OrderRunner:
    """The order search on one part in one rank order, resumable slice by slice."""

    def __init__(self, part: _Part, capacity: int, order: int) -> None:
        rectangles, sections = len(part.sizes), len(part.section_bytes)
        self.scalars = np.zeros(10, dtype=np.int64)
        self.scalars[_LEFT] = rectangles
        self.order_state = (
            np.zeros(rectangles, dtype=np.int64),  # lowest offset each can take
            np.zeros(rectangles, dtype=np.int64),  # placed
            np.zeros(sections, dtype=np.int64),  # floors: top of the highest placed
            part.section_bytes.copy(),  # bytes left to place per section
            np.zeros(rectangles, dtype=np.int64),  # offsets
            self.scalars,
        )
        self.neighbours = _neighbours(part)
        changes = len(self.neighbours[1]) + len(part.rect_sections) + 1
        self.trails = (
            np.zeros((changes, 2), dtype=np.int64),  # (rectangle, old low)
            np.zeros((len(part.rect_sections) + 1, 2), dtype=np.int64),  # (section, old floor)
        )
        depth_limit = rectangles + 2
        self.frames = (
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
        # A group waiting: its sections (first, end), the depth that split it off, and
        # the record of the groups waiting before it.
        self.records = np.zeros((depth_limit, 4), dtype=np.int64)
        # At the root every low is 0, below every rectangle's top: no ceiling yet.
        self.frames[2][0] = int(part.sizes.max()) + 1 if rectangles else 0
        self.geometry = (
            part.sizes,
            part.alignments,
            part.ranks[order],
            part.twin,
            part.rect_start,
            part.rect_sections,
            part.section_start,
            part.section_rects,
        )
        self.heights = np.zeros(rectangles, dtype=np.int64)
        self.capacity = capacity
        self.code = _RUNNING if rectangles else _FOUND

    def step(self, nodes: int) -> int:
        if self.code == _RUNNING:
            self.code = _order_run(
                self.geometry,
                self.neighbours,
                self.order_state,
                self.trails,
                self.frames,
                self.records,
                self.capacity,
                nodes,
                self.heights,
            )
        return self.code

    @property
    def offsets(self) -> np.ndarray:
        return self.order_state[4]

    @property
    def nodes(self) -> int:
        return int(self.scalars[_NODES])


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
    seen = np.full(count, -1, dtype=np.int64)
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
