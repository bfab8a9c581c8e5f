"""A small hypothesis strategy for problems, for tests of the problem and the validator.

Valid by construction: intervals are drawn as (start, length >= 1), sizes >= 0.
"""

from __future__ import annotations

from hypothesis import strategies as st

from optplan.problem import Buffer, Interval, Problem


@st.composite
def buffers(draw: st.DrawFn, index: int) -> Buffer:
    start = draw(st.integers(0, 12))
    length = draw(st.integers(1, 6))
    size = draw(st.integers(0, 48))
    alignment = draw(st.sampled_from([1, 1, 2, 4, 8]))
    return Buffer(f"b{index}", size, (Interval(start, start + length),), alignment)


@st.composite
def problems(draw: st.DrawFn, max_buffers: int = 8) -> Problem:
    count = draw(st.integers(1, max_buffers))
    return Problem(tuple(draw(buffers(i)) for i in range(count)))
