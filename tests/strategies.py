"""Hypothesis strategies for planner tests: problems valid by construction.

- Lifetimes are drawn as (start, length >= 1), optionally with a second interval after a
  gap (a tensor live in both branches of an If); they shrink towards one short interval.
- Sizes are small so that a brute force can check optimality; alignments are 1, 2, 4 or 8.
- An alias ties a buffer to an earlier one it overlaps in time, with a delta that is a
  multiple of 8, so every member of a class stays alignable.
- Pins go to buffers outside any alias, laid end to end from a drawn base, so pinned
  buffers never share a byte and every problem has a plan.
"""

from __future__ import annotations

from hypothesis import strategies as st

from optplan.problem import Alias, Buffer, Interval, Problem

ALIGNMENTS = (1, 2, 4, 8)


@st.composite
def lifetimes(draw: st.DrawFn, *, branches: bool = True) -> tuple[Interval, ...]:
    start = draw(st.integers(0, 10))
    first = Interval(start, start + draw(st.integers(1, 6)))
    if not branches or not draw(st.booleans()):
        return (first,)
    gap_start = first.end + draw(st.integers(1, 3))
    return (first, Interval(gap_start, gap_start + draw(st.integers(1, 4))))


@st.composite
def buffers(
    draw: st.DrawFn,
    index: int,
    *,
    alignments: bool = True,
    branches: bool = True,
    max_size: int = 16,
) -> Buffer:
    alignment = draw(st.sampled_from(ALIGNMENTS)) if alignments else 1
    return Buffer(
        f"b{index}",
        draw(st.integers(0, max_size)),
        draw(lifetimes(branches=branches)),
        alignment,
    )


@st.composite
def problems(
    draw: st.DrawFn,
    max_buffers: int = 8,
    *,
    alignments: bool = True,
    branches: bool = True,
    aliases: bool = True,
    pins: bool = True,
    max_size: int = 16,
) -> Problem:
    count = draw(st.integers(1, max_buffers))
    drawn = [
        draw(buffers(i, alignments=alignments, branches=branches, max_size=max_size))
        for i in range(count)
    ]
    ties = draw(_aliases(drawn)) if aliases else []
    if pins:
        drawn = draw(_pins(drawn, ties))
    return Problem(tuple(drawn), tuple(ties))


@st.composite
def _aliases(draw: st.DrawFn, drawn: list[Buffer]) -> list[Alias]:
    """Each buffer may view at most one earlier buffer it is live with: a forest, so the
    aliases never contradict each other."""
    ties = []
    for j, view in enumerate(drawn):
        bases = [b for b in drawn[:j] if b.overlaps_in_time(view)]
        if bases and draw(st.integers(0, 3)) == 3:
            base = draw(st.sampled_from(bases))
            ties.append(Alias(base.id, view.id, 8 * draw(st.integers(0, 2))))
    return ties


@st.composite
def _pins(draw: st.DrawFn, drawn: list[Buffer], ties: list[Alias]) -> list[Buffer]:
    tied = {a.base for a in ties} | {a.view for a in ties}
    cursor = draw(st.integers(0, 16))
    pinned = []
    for buffer in drawn:
        if buffer.id in tied or draw(st.integers(0, 4)) != 4:
            pinned.append(buffer)
            continue
        offset = -(-cursor // buffer.alignment) * buffer.alignment
        cursor = offset + buffer.size + draw(st.integers(0, 8))
        pinned.append(Buffer(buffer.id, buffer.size, buffer.live, buffer.alignment, offset))
    return pinned


# ---------------------------------------------------------------------------- awkward problems
#
# Tiny problems where no plan need exist, for judging statuses against a brute force:
# aliases at any delta (the class offset then sits at a residue of its alignment), odd
# and coprime alignments, pins on members of alias classes (which may contradict each
# other, the alignments, or another pin), capacities, and lifetimes with a gap.

ODD_ALIGNMENTS = (1, 1, 2, 3, 4, 5, 8)


@st.composite
def awkward_problems(draw: st.DrawFn, max_buffers: int = 5) -> Problem:
    count = draw(st.integers(1, max_buffers))
    drawn = [
        Buffer(
            f"b{i}",
            draw(st.integers(0, 12)),
            draw(lifetimes()),
            draw(st.sampled_from(ODD_ALIGNMENTS)),
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
    return Problem(tuple(drawn), tuple(ties), capacity)
