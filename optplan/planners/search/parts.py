"""The search's view of one part: rectangles as flat int64 arrays, and the constants
every kernel shares (scalar indices, result codes, the configurations that take turns).

A part comes from the planners' form (`common.Form.parts`); `Prepared` holds it in the
search's order (by time, then index: the ranks break ties by position) with its arrays,
built once and kept for every capacity the part is asked at.

Steps of `_build_part`: cut time into sections where the live set is constant, list each
rectangle's sections and each section's rectangles (flat, with start indices, as numba
wants them), rank the rectangles in six orders, mark identical twins. `_domains` limits a
rectangle's offsets in a section the capacity fills exactly to sums of the others' sizes.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from optplan.planners.common import Rect
from optplan.problem import Interval

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
# The order search scans every rectangle at every node: beyond this many in a part a
# slice takes seconds (3 ms a node at 10,000), so such parts get the floor search alone.
# Below it the scan pays: on resnet50 (one part of 1,042) the floor search alone finds
# nothing at the bound in 40,000 nodes, and the order search answers within 3,100.
_ORDER_RECTANGLES = 2048


# ---------------------------------------------------------------------------- geometry


@dataclass(frozen=True, slots=True)
class _Part:
    """The rectangles of one stretch of time that no rectangle crosses, as flat arrays.

    Rectangle r covers sections `rect_sections[rect_start[r]:rect_start[r + 1]]`; section
    s holds rectangles `section_rects[section_start[s]:section_start[s + 1]]`.
    """

    rects: tuple[Rect, ...]
    sizes: np.ndarray
    alignments: np.ndarray
    ranks: tuple[np.ndarray, ...]  # per candidate order: lower is tried first
    twin: np.ndarray  # identical rectangles share a number
    rect_start: np.ndarray
    rect_sections: np.ndarray
    section_start: np.ndarray
    section_rects: np.ndarray
    section_bytes: np.ndarray


@dataclass(frozen=True, slots=True)
class Prepared:
    """One part ready to be asked at any capacity: its rectangles in the search's order
    and their arrays, time forwards and (built on first use) mirrored."""

    rects: tuple[Rect, ...]
    seed: int
    _arrays: dict[bool, _Part] = field(default_factory=dict, repr=False, compare=False)

    def arrays(self, mirror: bool = False) -> _Part:
        if mirror not in self._arrays:
            self._arrays[mirror] = _build_part(self.rects, self.seed, mirror)
        return self._arrays[mirror]

    @property
    def incidences(self) -> int:
        """Its rectangle-section incidences (a rectangle over a section, one each): what
        a node of the search costs grows with them (`budget.node_work`)."""
        return len(self.arrays().section_rects)


def prepare_part(part: Sequence[Rect], seed: int) -> Prepared:
    """`part` in the search's order: by start, end, then index."""
    ordered = sorted(part, key=lambda rect: (rect.start, rect.end, rect.index))
    return Prepared(tuple(ordered), seed)


def _build_part(classes: Sequence[Rect], seed: int, mirror: bool = False) -> _Part:
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
    ranks = _ranks(sizes, lives, covered, holders, seed)
    shapes: dict[tuple[tuple[int, ...], int, int], int] = {}
    twin = [
        shapes.setdefault((tuple(sections), cls.size, cls.modulus), len(shapes))
        for cls, sections in zip(classes, covered)
    ]
    return _Part(
        rects=tuple(classes),
        sizes=_array(sizes),
        alignments=_array([cls.modulus for cls in classes]),
        ranks=tuple(ranks),
        twin=_array(twin),
        rect_start=_array(np.cumsum([0] + [len(c) for c in covered])),
        rect_sections=_array([s for sections in covered for s in sections]),
        section_start=_array(np.cumsum([0] + [len(h) for h in holders])),
        section_rects=_array([r for rects in holders for r in rects]),
        section_bytes=_array([sum(sizes[r] for r in rects) for rects in holders]),
    )


def _ranks(
    sizes: list[int],
    lives: list[tuple[Interval, ...]],
    covered: list[list[int]],
    holders: list[list[int]],
    seed: int,
) -> list[np.ndarray]:
    """Each rectangle's position in every order the search tries (ties broken by `seed`)."""
    widths = [live[-1].end - live[0].start for live in lives]
    areas = [size * width for size, width in zip(sizes, widths)]
    loads = [sum(sizes[r] for r in rects) for rects in holders]
    crowding = [max(loads[s] for s in sections) for sections in covered]
    tiebreak = list(range(len(sizes)))
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
        rank = [0] * len(sizes)
        for position, r in enumerate(sorted(range(len(sizes)), key=key)):
            rank[r] = position
        ranks.append(_array(rank))
    return ranks


def _array(values: object) -> np.ndarray:
    return np.asarray(values, dtype=np.int64)


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
