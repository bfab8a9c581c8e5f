"""Exact packing by a skyline search: do the buffers fit under a given capacity?

`search` decides one question, "do the alias classes fit in `capacity` bytes?", and
answers with offsets, proves that they cannot, or runs out of time. `minimise` asks it at
several capacities, the lower bound first.

Every alias class is one rectangle: its lifetime (the union of its members' intervals,
cut at every interval end into *sections*) by its height in bytes.

1. Take the form's parts (time split where nothing is live across): each is packed alone.
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
   2048 rectangles: it scans them all at every node). Turns are counted in nodes, so
   the result is the same on any machine; `seed` only breaks ties between equal ones.

The inner loops are plain loops over int64 arrays compiled by numba (about 130 times
faster than the same code as Python, which is what runs when numba is missing); compiling
them takes numba about 20 s of CPU, which pip's install of optplan spends
(`optplan.planners.jit`, `warm_kernels`). Pinned
buffers, and alias classes whose offsets must sit off a multiple of their alignment, are
not supported: `prepare` raises ValueError and the caller should use another planner.

The search takes the planners' form (`optplan.planners.common.Form`): `prepare(rects,
parts)` builds each part's arrays once, `ask(packing, capacity)` answers one capacity and
`lowest(packing)` bisects, reusing them; `search(problem, capacity)` and
`minimise(problem)` do the same from a `Problem`.

Modules: `parts` (a part as arrays, and the shared constants), `floor` (the floor search),
`order` (the order search), `memo` (the floor search's failed states), `runner` (what both
searches share: the arrays' tuple, a kernel resumable in slices), `driver` (turns,
`prepare`, `ask`, `lowest`).
"""

from __future__ import annotations

from optplan.planners.search.driver import (
    MinimiseResult,
    Packing,
    SearchResult,
    SearchStatus,
    ask,
    granularity,
    lowest,
    minimise,
    prepare,
    search,
    warm_kernels,
)

__all__ = [
    "MinimiseResult",
    "Packing",
    "SearchResult",
    "SearchStatus",
    "ask",
    "granularity",
    "lowest",
    "minimise",
    "prepare",
    "search",
    "warm_kernels",
]
