"""What the two searches share: the arrays every kernel reads, and `Runner`, one
configuration of a kernel on one part, resumable slice by slice.

1. `geometry(part, order)` gives a part's arrays in the tuple every kernel indexes
   (sizes, alignments, ranks in one order, twins, then the rectangle-section lists).
2. `new_scalars(rectangles)` is the kernel's scalar array (indices in `parts`), with
   every rectangle left to place.
3. A kernel takes its arrays and, last, a budget of nodes; it returns a _RUNNING /
   _FOUND / _EXHAUSTED / _OVERFLOW code and keeps all its state in the arrays, so
   `Runner.step` calls it again until it answers.
4. `_released_fit` is the one-section test both kernels prune with: rectangles released
   at given heights must fit under the capacity, highest release first.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from optplan.planners.jit import njit
from optplan.planners.search.parts import _LEFT, _NODES, _RUNNING, _Part

Geometry = tuple[np.ndarray, ...]


def geometry(part: _Part, order: int) -> Geometry:
    """The part's arrays as the kernels index them, ranked in candidate `order`."""
    return (
        part.sizes,
        part.alignments,
        part.ranks[order],
        part.twin,
        part.rect_start,
        part.rect_sections,
        part.section_start,
        part.section_rects,
    )


def new_scalars(rectangles: int) -> np.ndarray:
    """A kernel's scalar array at the root: nothing placed, no node made."""
    scalars = np.zeros(10, dtype=np.int64)
    scalars[_LEFT] = rectangles
    return scalars


@dataclass(slots=True)
class Runner:
    """A kernel and its arrays: `step(nodes)` runs `kernel(*arrays, nodes)` while it is
    running. `scalars` and `offsets` are arrays of `arrays`, read after any step."""

    kernel: Callable[..., int]
    arrays: tuple[object, ...]
    scalars: np.ndarray
    offsets: np.ndarray
    code: int

    def step(self, nodes: int) -> int:
        if self.code == _RUNNING:
            self.code = int(self.kernel(*self.arrays, nodes))
        return self.code

    @property
    def nodes(self) -> int:
        return int(self.scalars[_NODES])


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
