"""Hypothesis strategies for problems of several memories, valid by construction.

A problem is drawn in steps, each record holding everything about its buffer:

1. Memories: two or three, the first bounded and cheapest (cost 1); the others dearer
   (cost 2-10), the last unbounded unless `bounded_last`; alignments 1, 2 or 4.
   Capacities are small (0-48 bytes) so that they bind, overflow, or forbid a plan.
2. Buffers: a size (zero allowed), an alignment, a short lifetime (one interval, now and
   then a second after a gap), reads at some of its live points (one per consumer, so
   repeats are allowed), now and then a second write (an in-place op) and now and then
   the memories it may use (a subset, never empty).
3. Now and then a view: a buffer tied to an earlier one live with it (an alias at a delta
   that is a multiple of both alignments), or a pin.

Everything shrinks towards one buffer of size 0, live at one point, in two memories.

    >>> from hypothesis import given
    >>> @given(memory_problems())
    ... def test_my_planner(problem): ...
"""

from __future__ import annotations

from hypothesis import strategies as st

from optplan.problem import Alias, Buffer, Interval, Memory, Problem


@st.composite
def memories(draw: st.DrawFn, *, bounded_last: bool = False) -> tuple[Memory, ...]:
    count = draw(st.integers(2, 3))
    drawn = [Memory("fast", draw(st.integers(0, 48)), draw(st.sampled_from((1, 1, 2, 4))), 1)]
    for k in range(1, count):
        last = k == count - 1
        capacity = draw(st.integers(0, 64)) if not last or bounded_last else None
        cost = draw(st.integers(2, 10))
        drawn.append(
            Memory(
                ("slow", "far")[k - 1] if count == 3 else "slow",
                capacity,
                draw(st.sampled_from((1, 2))),
                cost,
            )
        )
    return tuple(drawn)


@st.composite
def _lifetime(draw: st.DrawFn, *, max_points: int) -> tuple[Interval, ...]:
    start = draw(st.integers(0, 3))
    first = Interval(start, start + draw(st.integers(1, max_points)))
    if draw(st.integers(0, 5)) or first.end - first.start >= max_points:
        return (first,)
    later = first.end + draw(st.integers(1, 2))
    return (first, Interval(later, later + 1))


@st.composite
def _buffer(draw: st.DrawFn, index: int, names: tuple[str, ...], max_points: int) -> Buffer:
    live = draw(_lifetime(max_points=max_points))
    points = [p for iv in live for p in range(iv.start, iv.end)]
    reads = tuple(sorted(draw(st.lists(st.sampled_from(points), max_size=3))))
    writes: tuple[int, ...] | None = None
    if len(points) > 1 and not draw(st.integers(0, 4)):
        writes = (points[0], draw(st.sampled_from(points[1:])))
    allowed: tuple[str, ...] = ()
    if not draw(st.integers(0, 3)):
        allowed = tuple(sorted(draw(st.sets(st.sampled_from(names), min_size=1)), key=names.index))
    return Buffer(
        f"b{index}",
        draw(st.integers(0, 16)),
        live,
        draw(st.sampled_from((1, 1, 2, 4))),
        memories=allowed,
        writes=writes,
        reads=reads,
    )


@st.composite
def memory_problems(
    draw: st.DrawFn, max_buffers: int = 3, *, max_points: int = 3, bounded_last: bool = False
) -> Problem:
    """A problem of steps 1-3 above: at most `max_buffers` buffers, each live at most
    `max_points` points in its first interval."""
    drawn_memories = draw(memories(bounded_last=bounded_last))
    names = tuple(m.name for m in drawn_memories)
    count = draw(st.integers(1, max_buffers))
    buffers = [draw(_buffer(k, names, max_points)) for k in range(count)]
    aliases: list[Alias] = []
    for k in range(1, count):
        choice = draw(st.integers(0, 9))
        if choice == 0:
            base = draw(st.integers(0, k - 1))
            if buffers[base].overlaps_in_time(buffers[k]):
                aliases.append(Alias(f"b{base}", f"b{k}", 4 * draw(st.integers(0, 2))))
        elif choice == 1 and not any(a.view == f"b{k}" or a.base == f"b{k}" for a in aliases):
            buffers[k] = Buffer(
                buffers[k].id,
                buffers[k].size,
                buffers[k].live,
                buffers[k].alignment,
                offset=buffers[k].alignment * draw(st.integers(0, 4)),
                memories=buffers[k].memories,
                writes=buffers[k].writes,
                reads=buffers[k].reads,
            )
    aliases = [
        a for a in aliases if all(buffers[int(n[1:])].offset is None for n in (a.base, a.view))
    ]
    return Problem(tuple(buffers), tuple(aliases), memories=drawn_memories)
