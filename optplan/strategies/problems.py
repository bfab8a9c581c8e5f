"""Hypothesis strategies for allocation problems: valid by construction, shrinking locally.

A problem is a list of records, one per buffer, each holding everything about that
buffer, so that deleting a record deletes the buffer with its alias and its pin and
nothing else moves. It is built in five steps, each valid by construction:

1. Buffers: `b0`, `b1`, ...; a size (zero allowed), an alignment, and a lifetime drawn as
   (start, length >= 1) followed by further intervals, each after a gap >= 1 (a tensor
   live in both branches of an If). Everything shrinks towards one short interval,
   alignment 1 and size 0.
2. Aliases: a record may make its buffer a view of an earlier buffer it is live with (a
   forest, so the equations never contradict each other). The delta is a multiple of 8,
   or with `residues=True` any small number, so that a view sits at a residue of the
   base's alignment; when the view's alignment cannot be met beside the rest of the class
   (two members with alignments a, b and deltas d, e need d = e mod gcd(a, b)), or
   when the class's alignments would repeat only past `MAX_CLASS_PERIOD` bytes, it
   becomes 1.
3. Alias classes: the union of the ties; a class is one allocation whose rectangle is the
   union of its members' lifetimes by max(delta + size).
4. Pins: a record's pin wish pins its buffer's class when it is the class's first
   member (without `pinned_aliases`, only classes of one buffer). Pinned classes are laid
   end to end from a drawn base, each at the lowest offset that meets every member's
   alignment (by the Chinese remainder theorem), so pinned rectangles never share a
   byte and every problem has a plan.
5. Capacity (with `capacities=True`): none, a roomy one (every class stacked above the
   pins: always feasible), or one below the live-bytes lower bound (never feasible).

    >>> from hypothesis import given
    >>> @given(problems(residues=True, capacities=True))
    ... def test_my_planner(problem): ...

`awkward_problems()` turns every option on; it is what `optplan fuzz` draws.
"""

from __future__ import annotations

import math
from dataclasses import replace

from hypothesis import strategies as st

from optplan.problem import Alias, Buffer, Interval, Problem, lower_bound, one_arena

ALIGNMENTS = (1, 2, 4, 8)
# Odd, coprime and large alignments: 3 against 4 or 8, two primes, and a runtime's 64.
ODD_ALIGNMENTS = (1, 2, 3, 4, 8, 64, 1009, 1013)
# An alias class whose members' alignments multiply past this (1009 x 1013 x 64 is 65 M)
# needs an arena about that big for a few bytes: such views fall back to alignment 1.
MAX_CLASS_PERIOD = 1 << 16


@st.composite
def lifetimes(
    draw: st.DrawFn, *, branches: bool = True, max_intervals: int = 2
) -> tuple[Interval, ...]:
    start = draw(st.integers(0, 10))
    intervals = [Interval(start, start + draw(st.integers(1, 6)))]
    if not branches:
        return tuple(intervals)
    for _ in range(draw(st.integers(0, max_intervals - 1))):
        gap_start = intervals[-1].end + draw(st.integers(1, 3))
        intervals.append(Interval(gap_start, gap_start + draw(st.integers(1, 4))))
    return tuple(intervals)


@st.composite
def buffers(
    draw: st.DrawFn,
    index: int,
    *,
    alignments: bool | tuple[int, ...] = True,
    branches: bool = True,
    max_intervals: int = 2,
    max_size: int = 16,
) -> Buffer:
    choices = _alignment_choices(alignments)
    return Buffer(
        f"b{index}",
        draw(st.integers(0, max_size)),
        draw(lifetimes(branches=branches, max_intervals=max_intervals)),
        draw(st.sampled_from(choices)),
    )


def _alignment_choices(alignments: bool | tuple[int, ...]) -> tuple[int, ...]:
    if alignments is True:
        return ALIGNMENTS
    return alignments or (1,)


@st.composite
def problems(
    draw: st.DrawFn,
    max_buffers: int = 8,
    *,
    min_buffers: int = 1,
    alignments: bool | tuple[int, ...] = True,
    branches: bool = True,
    max_intervals: int = 2,
    aliases: bool = True,
    residues: bool = False,
    pins: bool = True,
    pinned_aliases: bool = False,
    capacities: bool = False,
    max_size: int = 16,
) -> Problem:
    """A problem with steps 1-5 above; every option off draws plain single-interval ones."""
    never = st.none()
    delta = st.integers(0, 24) if residues else st.integers(0, 2).map(lambda k: 8 * k)
    alias = st.one_of(never, never, never, st.tuples(st.integers(0, 7), delta))
    pin = st.one_of(never, never, never, never, st.integers(0, 8))
    record = st.tuples(
        buffers(
            0,
            alignments=alignments,
            branches=branches,
            max_intervals=max_intervals,
            max_size=max_size,
        ),
        alias if aliases else never,
        pin if pins else never,
    )
    records = draw(st.lists(record, min_size=min_buffers, max_size=max_buffers))
    drawn = [replace(b, id=f"b{i}") for i, (b, _, _) in enumerate(records)]
    drawn, ties = _aliases(drawn, [a for _, a, _ in records])
    if pins:
        cursor = draw(st.integers(0, 16))
        wishes = [p for _, _, p in records]
        drawn = _pins(drawn, ties, wishes, cursor, whole_classes=pinned_aliases)
    problem = Problem(tuple(drawn), tuple(ties))
    if capacities:
        capacity = draw(_capacities(problem))
        problem = Problem(problem.buffers, problem.aliases, memories=one_arena(capacity))
    return problem


def awkward_problems(max_buffers: int = 8, *, max_size: int = 16) -> st.SearchStrategy[Problem]:
    """Every awkward case at once: empty problems, several intervals, odd alignments,
    aliases at residues, pins inside alias classes, and capacities."""
    return problems(
        max_buffers,
        min_buffers=0,
        alignments=ODD_ALIGNMENTS,
        max_intervals=3,
        residues=True,
        pinned_aliases=True,
        capacities=True,
        max_size=max_size,
    )


def fuzz_problems() -> st.SearchStrategy[Problem]:
    """What `optplan fuzz` draws for a planner: mostly small awkward problems, where
    faults shrink well, and now and then a large one (up to 60 buffers)."""
    return st.one_of(awkward_problems(8), awkward_problems(60, max_size=256))


# ---------------------------------------------------------------------------- aliases


class _Classes:
    """Union-find over buffer positions, with each member's delta from its root."""

    def __init__(self, count: int) -> None:
        self.root = list(range(count))
        self.delta = [0] * count

    def find(self, index: int) -> tuple[int, int]:
        delta = 0
        while self.root[index] != index:
            delta += self.delta[index]
            index = self.root[index]
        return index, delta

    def members(self, index: int) -> list[tuple[int, int]]:
        """(position, delta from the root) of every member of `index`'s class."""
        root, _ = self.find(index)
        found = []
        for other in range(len(self.root)):
            other_root, delta = self.find(other)
            if other_root == root:
                found.append((other, delta))
        return found


def _aliases(
    drawn: list[Buffer], wishes: list[tuple[int, int] | None]
) -> tuple[list[Buffer], list[Alias]]:
    """Each buffer may view one earlier buffer it is live with: a forest, so the aliases
    never contradict each other (step 2). A wish is (which base, delta)."""
    classes = _Classes(len(drawn))
    drawn = list(drawn)
    ties = []
    for j, (view, wish) in enumerate(zip(drawn, wishes)):
        bases = [i for i in range(j) if drawn[i].overlaps_in_time(view)]
        if not bases or wish is None:
            continue
        i = bases[wish[0] % len(bases)]
        root, base_delta = classes.find(i)
        view_delta = base_delta + wish[1]
        members = [(drawn[k].alignment, d) for k, d in classes.members(i)]
        fits = [a for a in _alignment_choices_of(view) if _compatible(a, view_delta, members)]
        drawn[j] = replace(view, alignment=fits[0])
        classes.root[j], classes.delta[j] = root, view_delta
        ties.append(Alias(drawn[i].id, view.id, wish[1]))
    return drawn, ties


def _alignment_choices_of(view: Buffer) -> list[int]:
    """The view's own drawn alignment first (no change), then 1, which always fits."""
    return [view.alignment] + ([1] if view.alignment != 1 else [])


def _compatible(alignment: int, delta: int, members: list[tuple[int, int]]) -> bool:
    """Whether some root offset puts a member at `delta` on a multiple of `alignment`
    and every other member on a multiple of its own, with the class's alignments
    repeating within `MAX_CLASS_PERIOD` bytes."""
    period = math.lcm(alignment, *(a for a, _ in members))
    fits = all((delta - d) % math.gcd(alignment, a) == 0 for a, d in members)
    return fits and period <= MAX_CLASS_PERIOD


# ---------------------------------------------------------------------------- pins


def _class_of(drawn: list[Buffer], ties: list[Alias]) -> list[list[tuple[int, int]]]:
    """The alias classes as lists of (position, delta from the class's lowest member)."""
    position = {b.id: k for k, b in enumerate(drawn)}
    classes = _Classes(len(drawn))
    for alias in ties:
        base, view = position[alias.base], position[alias.view]
        root, base_delta = classes.find(base)
        classes.root[view], classes.delta[view] = root, base_delta + alias.delta
    groups: dict[int, list[tuple[int, int]]] = {}
    for k in range(len(drawn)):
        root, delta = classes.find(k)
        groups.setdefault(root, []).append((k, delta))
    shifted = []
    for members in groups.values():
        low = min(d for _, d in members)
        shifted.append([(k, d - low) for k, d in members])
    return shifted


def first_offset(at_least: int, members: list[tuple[int, int]]) -> int:
    """The lowest root offset >= `at_least` that puts every member (alignment, delta) on
    a multiple of its alignment; members must be compatible (see `_compatible`)."""
    residue, modulus = 0, 1
    for alignment, delta in members:
        residue, modulus = _crt(residue, modulus, -delta % alignment, alignment)
    return at_least + (residue - at_least) % modulus


def _crt(r1: int, m1: int, r2: int, m2: int) -> tuple[int, int]:
    """x = r1 mod m1 and x = r2 mod m2, as one congruence (they must agree mod gcd)."""
    g = math.gcd(m1, m2)
    assert (r2 - r1) % g == 0, "incompatible alignments"
    lcm = m1 // g * m2
    step = ((r2 - r1) // g * pow(m1 // g, -1, m2 // g)) % (m2 // g) if m2 // g > 1 else 0
    return (r1 + m1 * step) % lcm, lcm


def _pins(
    drawn: list[Buffer],
    ties: list[Alias],
    wishes: list[int | None],
    cursor: int,
    *,
    whole_classes: bool,
) -> list[Buffer]:
    """Pin the classes whose first member wishes it, end to end from `cursor` (step 4);
    that member carries the pin (the others follow through the aliases). A wish is the
    gap left above the pinned class."""
    pinned = list(drawn)
    for members in _class_of(drawn, ties):
        first, _ = min(members)
        gap = wishes[first]
        if gap is None or (len(members) > 1 and not whole_classes):
            continue
        root = first_offset(cursor, [(drawn[k].alignment, d) for k, d in members])
        cursor = root + _height(drawn, members) + gap
        delta = dict(members)[first]
        pinned[first] = replace(drawn[first], offset=root + delta)
    return pinned


# ---------------------------------------------------------------------------- capacity


def roomy_offsets(problem: Problem) -> tuple[dict[str, int], int]:
    """A layout that always fits, and its arena: every pinned class where its pin says,
    every unpinned class stacked above them in turn at its lowest aligned offset."""
    drawn = list(problem.buffers)
    classes = _class_of(drawn, list(problem.aliases))
    roots: dict[int, int] = {}
    for number, members in enumerate(classes):
        pins = [pin - d for k, d in members if (pin := drawn[k].offset) is not None]
        if pins:
            roots[number] = pins[0]
    top = max((roots[n] + _height(drawn, classes[n]) for n in roots), default=0)
    for number, members in enumerate(classes):
        if number not in roots:
            roots[number] = first_offset(top, [(drawn[k].alignment, d) for k, d in members])
            top = roots[number] + _height(drawn, members)
    offsets = {drawn[k].id: roots[n] + d for n, members in enumerate(classes) for k, d in members}
    return offsets, top


def _height(drawn: list[Buffer], members: list[tuple[int, int]]) -> int:
    return max(d + drawn[k].size for k, d in members)


def roomy_capacity(problem: Problem) -> int:
    """The arena of `roomy_offsets`: a capacity every problem drawn here fits in."""
    return roomy_offsets(problem)[1]


@st.composite
def _capacities(draw: st.DrawFn, problem: Problem) -> int | None:
    kind = draw(st.sampled_from(("none", "roomy", "tight")))
    if kind == "none":
        return None
    if kind == "roomy":
        return roomy_capacity(problem) + draw(st.integers(0, 16))
    bound = lower_bound(problem)
    return max(0, bound - draw(st.integers(1, 8))) if bound > 0 else 0


# ---------------------------------------------------------------------------- tiny awkward problems
#
# Tiny problems where no plan need exist, for judging statuses against a brute force:
# aliases at any delta (the class offset then sits at a residue of its alignment), odd
# and coprime alignments, pins on members of alias classes (which may contradict each
# other, the alignments, or another pin), capacities, and lifetimes with a gap.

TINY_ALIGNMENTS = (1, 1, 2, 3, 4, 5, 8)


@st.composite
def tiny_awkward_problems(draw: st.DrawFn, max_buffers: int = 5) -> Problem:
    """Unlike `awkward_problems`, not valid by construction: some have no plan at all."""
    count = draw(st.integers(1, max_buffers))
    drawn = [
        Buffer(
            f"b{i}",
            draw(st.integers(0, 12)),
            draw(lifetimes()),
            draw(st.sampled_from(TINY_ALIGNMENTS)),
            draw(st.none() | st.integers(0, 24)) if draw(st.integers(0, 5)) == 5 else None,
        )
        for i in range(count)
    ]
    ties = []
    for j, view in enumerate(drawn):
        if j and draw(st.integers(0, 2)) == 2:
            base = draw(st.sampled_from(drawn[:j]))
            ties.append(Alias(base.id, view.id, draw(st.integers(0, 12))))
    capacity = draw(st.none() | st.integers(0, 60))
    return Problem(tuple(drawn), tuple(ties), memories=one_arena(capacity))
